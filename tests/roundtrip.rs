//! Round trip and idempotence over every `.kir` file in the repository:
//! `parse(print(m)) == m`, and printing what was parsed from printed text
//! gives the same text.
//!
//! Files that are meant not to parse (a `; XFAIL-PARSE` comment, or a lit
//! `RUN:` line that expects a tool to fail with `not kiln-...`) are skipped
//! when they do not parse; when they do, the round trip must still hold.

mod common;

use common::kir_files;

fn may_fail_to_parse(text: &str) -> bool {
    text.contains("XFAIL-PARSE") || text.lines().any(|l| l.contains("RUN:") && l.contains("not kiln-"))
}

#[test]
fn every_kir_file_round_trips() {
    let files = kir_files();
    assert!(files.len() >= 9, "expected the testdata kernels, found {files:?}");
    let mut checked = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let first = match kiln::parser::parse(&text) {
            Ok(s) => s,
            Err(_) if may_fail_to_parse(&text) => continue,
            Err(ds) => panic!("{}: does not parse:\n{ds}", path.display()),
        };
        let printed = first.to_string();
        let second = kiln::parser::parse(&printed)
            .unwrap_or_else(|ds| panic!("{}: printed form does not parse:\n{ds}\n{printed}", path.display()));
        assert!(second.same_as(&first), "{}: parse(print(m)) != m", path.display());
        let reprinted = second.to_string();
        assert_eq!(printed, reprinted, "{}: printing is not idempotent", path.display());
        checked += 1;
    }
    assert!(checked >= 9);
}

/// `same_as` is the round trip's equality: it ignores layout (spans,
/// statements a pass left unreachable in the arenas, creation order) and
/// nothing else.
#[test]
fn same_as_ignores_layout_and_nothing_else() {
    let parse = |t: &str| kiln::parser::parse(t).expect("parses");
    let base =
        "kernel @k(%n: i32) {\n  %a = const 1 : i32\n  %b = add %a, %n\n  store @x[%a], %b\n}\nfield @x : i32[4]\n";
    let m = parse(base);
    // Other spans (blank lines, comments, indentation): the same.
    assert!(parse(&format!("; c\n\n{}", base.replace("  ", "      "))).same_as(&m));
    // A dead statement left in the arena by a pass: the same.
    let mut dead = m.clone();
    let kiln::ir::Item::Kernel(k) = &mut dead.modules[0].items[0] else { panic!("kernel first") };
    k.body.new_stmt_with_result(
        kiln::ir::StmtKind::Const(kiln::ir::Const::i32(7)),
        "unused",
        kiln::ir::Type::Scalar(kiln::ir::Scalar::I32),
        kiln::ir::Span::DUMMY,
    );
    assert!(dead.same_as(&m));
    assert_ne!(dead, m, "the structural equality sees the arena");
    // Anything the text says: different.
    for (from, to) in [("const 1", "const 2"), ("add", "sub"), ("%b", "%c"), ("i32[4]", "i32[5]"), ("@x[%a]", "@x[%n]")]
    {
        assert!(!parse(&base.replace(from, to)).same_as(&m), "{from} -> {to} must differ");
    }
}
