//! `make fuzz-smoke`: every kept fuzz input — the seeds in `fuzz/seeds/`,
//! and in `fuzz/regressions/` each input that once broke a target — run
//! through the fuzz targets' own checks (`fuzz/checks.rs`, included here),
//! plus a fixed number of seeded mutations of each. It needs no fuzzing
//! toolchain: the real campaigns (cargo-fuzz and libFuzzer, see
//! `docs/fuzzing.md`) are run by hand.

#[path = "../fuzz/checks.rs"]
mod checks;
mod common;

use common::kernelgen::Rng;
use std::path::Path;

/// Mutations per kept input: enough to shake each check in a second or
/// two in a debug build, not a campaign.
const MUTATIONS: usize = 1000;

fn kept(target: &str) -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut out = Vec::new();
    for dir in ["seeds", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else { continue };
        for e in entries {
            let path = e.unwrap().path();
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
    out.sort();
    assert!(!out.is_empty(), "no kept inputs for {target}");
    out
}

/// Flips, overwrites with interesting bytes, truncates or duplicates a run.
fn mutate(rng: &mut Rng, b: &mut Vec<u8>) {
    const BYTES: &[u8] = b"{}()[],:'\"0123456789 \n\x00\xff";
    if b.is_empty() {
        b.push(BYTES[rng.below(BYTES.len())]);
        return;
    }
    let i = rng.below(b.len());
    match rng.below(4) {
        0 => b[i] ^= 1 << rng.below(8),
        1 => b[i] = BYTES[rng.below(BYTES.len())],
        2 => b.truncate(i),
        _ => {
            let end = (i + 1 + rng.below(16)).min(b.len());
            let run: Vec<u8> = b[i..end].to_vec();
            b.splice(i..i, run);
        }
    }
}

fn replay(target: &str, check: fn(&[u8])) {
    let mut rng = Rng::new(0x6b69_6c6e);
    for (name, input) in kept(target) {
        let run = |bytes: &[u8]| {
            if std::panic::catch_unwind(|| check(bytes)).is_err() {
                panic!("{target}: a mutation of {name} breaks the check: {bytes:?}");
            }
        };
        run(&input);
        let mut b = input.clone();
        for _ in 0..MUTATIONS {
            mutate(&mut rng, &mut b);
            run(&b);
            if rng.below(8) == 0 {
                b = input.clone();
            }
        }
    }
}

#[test]
fn parse_corpus() {
    replay("parse", checks::parse);
}

#[test]
fn record_corpus() {
    replay("record", checks::record);
}

#[test]
fn npy_corpus() {
    replay("npy", checks::npy);
}

#[test]
fn config_corpus() {
    replay("config", checks::config);
}

#[test]
fn import_corpus() {
    replay("import", checks::import);
}
