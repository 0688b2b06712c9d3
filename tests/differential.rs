//! Differential tests: passes must not change what a kernel computes.
//!
//! For every `testdata/*.kir` file and for a fixed set of generated kernels
//! (`common::kernelgen`, fixed seeds), the reference interpreter's field
//! digests on the original module must equal those after each registered
//! pass alone and after the whole `passes::default_pipeline()`. The verifier runs on
//! the input and after every pass.
//!
//! Some passes need another first: `split-tasks` works on offloaded
//! kernels, so `offload` runs before it (see [`prerequisites`]). Fields a
//! pass adds (the kernel-scoped temporaries of `offload`) are not compared;
//! every field of the original module is.

mod common;

use common::kernelgen::{generate, GenConfig};
use kiln::interp::Interpreter;
use kiln::ir::Stream;
use kiln::passes::{self, Pass};
use std::collections::BTreeMap;

/// Passes that must run before `pass` for it to apply.
fn prerequisites(pass: &str) -> &'static [&'static str] {
    match pass {
        "split-tasks" | "demote-atomics" => &["offload"],
        _ => &[],
    }
}

/// Runs every kernel of the stream on the interpreter, in order, with
/// default arguments, and returns the digest of each field.
fn run_all(stream: &Stream) -> Result<BTreeMap<String, String>, String> {
    let fields = common::run_all(&mut Interpreter::new(), stream)?;
    Ok(fields.map.iter().map(|(n, d)| (n.to_string(), d.digest())).collect())
}

fn apply(stream: &mut Stream, pipeline: &[&dyn Pass]) -> Result<(), String> {
    for p in pipeline {
        p.run(stream).map_err(|d| format!("pass {} failed: {d:?}", p.name()))?;
        kiln::verifier::verify(stream).map_err(|d| format!("invalid IR after pass {}: {d:?}\n{stream}", p.name()))?;
    }
    Ok(())
}

/// Checks one module; the error says which pipeline changed which field.
fn check(text: &str) -> Result<usize, String> {
    let original = kiln::parser::parse(text).map_err(|d| format!("parse error: {d:?}"))?;
    kiln::verifier::verify(&original).map_err(|d| format!("verifier rejects the input: {d:?}"))?;
    if original.modules.iter().all(|m| m.kernels().next().is_none()) {
        return Err("the module has no kernel".into());
    }
    let want = run_all(&original).map_err(|e| format!("original: {e}"))?;
    let mut pipelines: Vec<(String, Vec<&dyn Pass>)> = Vec::new();
    for &p in passes::REGISTRY {
        let mut pl: Vec<&dyn Pass> = prerequisites(p.name()).iter().filter_map(|n| passes::lookup(n)).collect();
        pl.push(p);
        pipelines.push((p.name().to_string(), pl));
    }
    pipelines.push(("the default pipeline".into(), passes::default_pipeline().to_vec()));
    for (label, pl) in &pipelines {
        let mut s = original.clone();
        apply(&mut s, pl).map_err(|e| format!("{label}: {e}"))?;
        let got = run_all(&s).map_err(|e| format!("after {label}: {e}"))?;
        for (name, digest) in &want {
            if got.get(name) != Some(digest) {
                return Err(format!("after {label}: field @{name} differs\n--- transformed:\n{s}"));
            }
        }
    }
    Ok(pipelines.len())
}

#[test]
fn testdata_digests_survive_every_pass() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "kir")).collect()
        })
        .unwrap_or_default();
    files.sort();
    assert!(!files.is_empty(), "no testdata/*.kir files");
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable testdata");
        if let Err(e) = check(&text) {
            failures.push(format!("{}: {e}", f.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// How many generated modules the test checks, and from which seed on.
const GENERATED: u64 = 1000;
const FIRST_SEED: u64 = 0x6b69_6c6e;

#[test]
fn generated_kernels_digests_survive_every_pass() {
    let cfg = GenConfig::default();
    let mut failures = Vec::new();
    for seed in FIRST_SEED..FIRST_SEED + GENERATED {
        let text = generate(seed, &cfg);
        if let Err(e) = check(&text) {
            failures.push(format!("seed {seed}: {e}\n--- input:\n{text}"));
        }
    }
    // One full report is enough to debug; count the rest.
    assert!(
        failures.is_empty(),
        "{} of {GENERATED} generated modules failed; the first:\n{}",
        failures.len(),
        failures[0]
    );
}

#[test]
fn the_generator_is_deterministic_and_uses_every_statement_kind() {
    let cfg = GenConfig::default();
    assert_eq!(generate(7, &cfg), generate(7, &cfg));
    assert_ne!(generate(7, &cfg), generate(8, &cfg));
    let all: String = (FIRST_SEED..FIRST_SEED + 200).map(|s| generate(s, &cfg)).collect();
    for kw in [
        "const ",
        " add ",
        " sub ",
        " mul ",
        " div ",
        " rem ",
        " min ",
        " max ",
        " and ",
        " or ",
        " xor ",
        " shl ",
        " shr ",
        " ushr ",
        " pow ",
        " atan2 ",
        " neg ",
        " not ",
        " abs ",
        " sqrt ",
        " sin ",
        " cos ",
        " tan ",
        " exp ",
        " log ",
        " floor ",
        " ceil ",
        " round ",
        "cmp lt",
        "cmp le",
        "cmp gt",
        "cmp ge",
        "cmp eq",
        "cmp ne",
        " cast ",
        " select ",
        "= load @",
        "store @",
        "atomic add",
        "atomic min",
        "atomic max",
        "atomic and",
        "atomic or",
        "atomic xor",
        "alloca",
        "store %",
        "= load %",
        "call @",
        "ret %",
        "ret\n",
        "if %",
        "} else {",
        "for %",
        "while {",
        "break",
        "continue",
        ": i64 in",
        "const nan",
        "const inf",
        "const -0.0",
        "-2147483648",
        "-9223372036854775808",
    ] {
        assert!(all.contains(kw), "no generated module uses `{kw}`");
    }
}
