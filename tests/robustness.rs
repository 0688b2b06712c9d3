//! Bounded robustness test: random bytes and random mutations of every
//! `testdata/` kernel never panic the parser or the verifier, and whatever
//! parses still round-trips through the printer.
//!
//! Fixed seed and fixed count, so a failure reproduces; for longer runs use
//! the cargo-fuzz target in `fuzz/`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

mod common;

use common::kernelgen::Rng;

/// Bytes that make interesting KIR when sprinkled in.
const ALPHABET: &[u8] = b"{}()[],:=%@;.-0123456789abcdefxinf \n\t";

/// Token boundaries, roughly: runs of non-blank bytes.
fn token_spans(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let s = i;
        while i < b.len() && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        out.push((s, i));
    }
    out
}

fn mutate(rng: &mut Rng, src: &[u8]) -> Vec<u8> {
    let mut b = src.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let toks = token_spans(&b);
        match rng.below(6) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            1 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = ALPHABET[rng.below(ALPHABET.len())];
            }
            2 if !toks.is_empty() => {
                let (s, e) = toks[rng.below(toks.len())];
                b.drain(s..e);
            }
            3 if !toks.is_empty() => {
                let (s, e) = toks[rng.below(toks.len())];
                let t: Vec<u8> = b[s..e].to_vec();
                let at = toks[rng.below(toks.len())].0;
                b.splice(at..at, t.into_iter().chain([b' ']));
            }
            4 => {
                let n = rng.below(b.len() + 1);
                b.truncate(n);
            }
            _ if !toks.is_empty() => {
                // Swap two tokens.
                let (a, c) = (toks[rng.below(toks.len())], toks[rng.below(toks.len())]);
                let (first, second) = if a.0 <= c.0 { (a, c) } else { (c, a) };
                if first.1 <= second.0 {
                    let x = b[first.0..first.1].to_vec();
                    let y = b[second.0..second.1].to_vec();
                    b.splice(second.0..second.1, x);
                    b.splice(first.0..first.1, y);
                }
            }
            _ => {}
        }
    }
    b
}

/// Parses, verifies, and checks the round trip of whatever parses.
fn check(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    let result = catch_unwind(AssertUnwindSafe(|| {
        if let Ok(stream) = kiln::parser::parse(&text) {
            let _ = kiln::verifier::verify(&stream);
            let printed = stream.to_string();
            match kiln::parser::parse(&printed) {
                Ok(again) => {
                    assert!(again.same_as(&stream), "parse(print(m)) != m");
                    assert_eq!(again.to_string(), printed, "printing is not idempotent");
                }
                Err(ds) => panic!("printed form does not parse: {ds}\n{printed}"),
            }
        }
    }));
    if let Err(e) = result {
        let msg = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
        panic!("panic on input:\n-----\n{text}\n-----\n{}", msg.unwrap_or_default());
    }
}

fn testdata() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("testdata/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "kir"))
        .collect();
    files.sort();
    files.iter().map(|p| std::fs::read(p).expect("read testdata")).collect()
}

#[test]
fn mutated_testdata_never_panics() {
    let files = testdata();
    assert!(files.len() >= 9);
    let mut rng = Rng(0x005e_ed0f_4b17);
    for src in &files {
        check(src);
        for _ in 0..300 {
            check(&mutate(&mut rng, src));
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(42);
    for i in 0..3000 {
        let len = rng.below(200);
        let bytes: Vec<u8> =
            (0..len).map(|_| if i % 2 == 0 { rng.next() as u8 } else { ALPHABET[rng.below(ALPHABET.len())] }).collect();
        check(&bytes);
    }
}
