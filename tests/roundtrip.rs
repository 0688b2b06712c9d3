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
        assert_eq!(first, second, "{}: parse(print(m)) != m", path.display());
        let reprinted = second.to_string();
        assert_eq!(printed, reprinted, "{}: printing is not idempotent", path.display());
        checked += 1;
    }
    assert!(checked >= 9);
}
