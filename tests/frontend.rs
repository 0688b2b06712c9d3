//! The streaming front end (`kiln::frontend::parse_verify_print`, what
//! `kiln-opt` runs without passes) against the whole-module path (`parse`,
//! `verify`, `Display for Stream`): the same bytes out, or the same
//! diagnostics, on every `.kir` file in the repository, on multi-module
//! streams made from them, on broken variants of them, and on generated
//! inputs large enough to be parsed in parallel.

use kiln::diag::Diagnostic;
use kiln::passes::{self, NoObserver, PipelineOptions};
mod common;

use common::kir_files;

/// What the whole-module path gives: the text, or the diagnostics.
fn whole(text: &str) -> Result<String, Vec<Diagnostic>> {
    let stream = kiln::parser::parse(text).map_err(|d| d.0)?;
    kiln::verifier::verify(&stream).map_err(|d| d.0)?;
    Ok(stream.to_string())
}

fn streamed(text: &str) -> Result<String, Vec<Diagnostic>> {
    kiln::frontend::parse_verify_print(text).map(|c| c.to_string()).map_err(|d| d.0)
}

/// Checks that both paths agree on `text`; returns whether it was valid.
fn agree(what: &str, text: &str) -> bool {
    let w = whole(text);
    let s = streamed(text);
    if w != s {
        let show = |r: &Result<String, Vec<Diagnostic>>| match r {
            Ok(t) => format!("Ok({} bytes)", t.len()),
            Err(ds) => format!("Err({:#?})", &ds[..ds.len().min(5)]),
        };
        panic!("{what}: the streaming front end differs\nwhole:    {}\nstreamed: {}", show(&w), show(&s));
    }
    w.is_ok()
}

/// Every file, valid or not, gives the same result both ways.
#[test]
fn every_kir_file_agrees() {
    let files = kir_files();
    assert!(files.len() >= 9, "expected the testdata kernels, found {files:?}");
    let (mut valid, mut invalid) = (0, 0);
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if agree(&path.display().to_string(), &text) {
            valid += 1;
        } else {
            invalid += 1;
        }
    }
    assert!(valid >= 9 && invalid >= 9, "{valid} valid, {invalid} invalid files");
}

/// The valid files (the printed text, so that it is canonical).
fn valid_texts() -> Vec<(String, String)> {
    kir_files()
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).ok()?;
            whole(&text).ok().map(|t| (p.display().to_string(), t))
        })
        .collect()
}

/// `offload` then `split-tasks` turns a module into a stream of modules.
fn split(text: &str) -> Option<String> {
    let mut stream = kiln::parser::parse(text).ok()?;
    let pipeline = passes::resolve(&["offload", "split-tasks"]).ok()?;
    passes::run_pipeline(&mut stream, &pipeline, &PipelineOptions::default(), &mut NoObserver).ok()?;
    Some(stream.to_string())
}

#[test]
fn multi_module_streams_agree() {
    let mut streams = 0;
    for (name, text) in valid_texts() {
        let Some(s) = split(&text) else { continue };
        if s.contains("module @") && agree(&format!("{name} after split-tasks"), &s) {
            streams += 1;
        }
    }
    assert!(streams >= 5, "only {streams} files split into valid streams");
}

/// Every line of every valid file (and of its split stream) deleted in
/// turn, and every item doubled: syntax errors, undefined values, missing
/// returns, duplicates, dangling launches — the same diagnostics both ways.
#[test]
fn broken_variants_agree() {
    let mut broken = 0;
    for (name, text) in valid_texts() {
        let mut sources = vec![text.clone()];
        sources.extend(split(&text).filter(|s| s.contains("module @")));
        for src in &sources {
            let lines: Vec<&str> = src.lines().collect();
            for i in 0..lines.len() {
                let mut v = lines.clone();
                v.remove(i);
                broken += usize::from(!agree(&format!("{name} without line {}", i + 1), &(v.join("\n") + "\n")));
            }
            // An item written twice: each blank-line-separated paragraph.
            for (i, para) in src.split("\n\n").enumerate() {
                let doubled = format!("{src}\n{para}\n");
                broken += usize::from(!agree(&format!("{name} with paragraph {i} twice"), &doubled));
            }
        }
    }
    assert!(broken > 500, "only {broken} variants were invalid");
}

/// A copy of `text` with every global name suffixed by `tag`, so that
/// copies can share a module.
fn renamed(text: &str, tag: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut chars = text.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        out.push(c);
        if c == '@' {
            while let Some(&(_, n)) = chars.peek() {
                if !(n.is_ascii_alphanumeric() || n == '_' || n == '.') {
                    break;
                }
                out.push(n);
                chars.next();
            }
            out.push_str(tag);
        }
    }
    out
}

/// Inputs over the 1 MB parallel threshold: copies of every valid bare
/// file, renamed, and copies of every split stream; then the same with an
/// error near the end and with a cross-item error (a duplicate item).
#[test]
fn large_generated_inputs_agree() {
    let texts = valid_texts();
    let bare: Vec<&String> = texts.iter().map(|(_, t)| t).filter(|t| !t.contains("module @")).collect();
    let streams: Vec<String> = texts.iter().filter_map(|(_, t)| split(t)).filter(|s| s.contains("module @")).collect();

    let mut big = String::new();
    let mut copy = 0;
    while big.len() < 1_200_000 {
        for (i, t) in bare.iter().enumerate() {
            big.push_str(&renamed(t, &format!("_c{copy}_{i}")));
            big.push('\n');
        }
        copy += 1;
    }
    assert!(agree("bare copies", &big));
    let canonical = whole(&big).expect("valid");
    assert!(agree("bare copies, canonical", &canonical));

    let mut big_stream = String::new();
    let mut copy = 0;
    while big_stream.len() < 1_200_000 {
        for (i, s) in streams.iter().enumerate() {
            big_stream.push_str(&renamed(s, &format!("_s{copy}_{i}")));
            big_stream.push('\n');
        }
        copy += 1;
    }
    assert!(agree("stream copies", &big_stream));

    for (what, input) in [("bare", &canonical), ("stream", &big_stream)] {
        // A use of an undefined value deep in the input.
        let at = input.len() * 9 / 10;
        let line = at + input[at..].find(" = add ").expect("a statement");
        let line = input[..line].rfind('\n').expect("a line") + 1;
        let mut bad = input.clone();
        bad.insert_str(line, "%zz = add %nowhere, %nowhere\n");
        assert!(!agree(&format!("{what} with an undefined value"), &bad));
        // The first kernel twice in a row.
        let first_item = input.find("kernel @").expect("a kernel");
        let close = if what == "stream" { "\n  }\n" } else { "\n}\n" };
        let end = input[first_item..].find(close).expect("its end") + first_item + close.len();
        let mut dup = input.clone();
        dup.insert_str(end, &format!("\n{}", &input[first_item..end]));
        assert!(!agree(&format!("{what} with a duplicate item"), &dup));
    }
}
