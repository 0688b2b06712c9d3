//! Golden outputs of every registered pass over every `testdata/` file
//! that it changes: one insta snapshot per file per pass
//! (`pass_snapshots__PASS@FILE.snap`). Where a pass changes nothing
//! ([`NO_OP`]), the output must equal the input; those cases are lit tests
//! (`lit-tests/passes/PASS-no-op.test`) that check what the pass must not
//! touch. The verifier runs on the input and on every pass's output.

use kiln::passes::{self, Pass};

/// Passes that must run before `pass` for it to apply.
fn prerequisites(pass: &str) -> &'static [&'static str] {
    match pass {
        "split-tasks" | "demote-atomics" => &["offload"],
        _ => &[],
    }
}

/// The testdata files each pass leaves exactly as its input, as
/// `lit-tests/passes/PASS-no-op.test` lists them.
const NO_OP: &[(&str, &[&str])] = &[
    (
        "demote-atomics",
        &[
            "bitcast",
            "f16",
            "fold_edges",
            "heat2d",
            "histogram",
            "mandelbrot",
            "nbody",
            "prologue",
            "reduce_sum",
            "saxpy",
            "shared_helper",
            "ten_tasks",
        ],
    ),
    (
        "cse",
        &[
            "bitcast",
            "f16",
            "heat2d",
            "histogram",
            "mandelbrot",
            "nbody",
            "offload_shapes",
            "prologue",
            "reduce_sum",
            "saxpy",
            "shared_helper",
        ],
    ),
    (
        "dce",
        &[
            "bitcast",
            "f16",
            "fold_edges",
            "heat2d",
            "histogram",
            "mandelbrot",
            "nbody",
            "offload_shapes",
            "prologue",
            "reduce_sum",
            "saxpy",
            "shared_helper",
            "ten_tasks",
        ],
    ),
    (
        "simplify",
        &[
            "bitcast",
            "heat2d",
            "histogram",
            "mandelbrot",
            "nbody",
            "prologue",
            "reduce_sum",
            "saxpy",
            "shared_helper",
            "ten_tasks",
        ],
    ),
];

fn is_no_op(pass: &str, path: &std::path::Path) -> bool {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    NO_OP.iter().any(|(p, files)| *p == pass && files.contains(&stem))
}

fn run(stream: &mut kiln::ir::Stream, pass: &dyn Pass) {
    pass.run(stream).unwrap_or_else(|d| panic!("pass {} failed: {d}", pass.name()));
    kiln::verifier::verify(stream).unwrap_or_else(|d| panic!("invalid IR after {}: {d}\n{stream}", pass.name()));
}

#[test]
fn every_pass_over_testdata() {
    insta::glob!("../testdata", "*.kir", |path| {
        let text = std::fs::read_to_string(path).expect("read a testdata file");
        let input = kiln::parser::parse(&text).unwrap_or_else(|d| panic!("{}: {d}", path.display()));
        kiln::verifier::verify(&input).unwrap_or_else(|d| panic!("{}: {d}", path.display()));
        for &pass in passes::REGISTRY.iter().filter(|p| p.name() != "verify") {
            let mut stream = input.clone();
            for name in prerequisites(pass.name()) {
                run(&mut stream, passes::lookup(name).expect("registered"));
            }
            let before = stream.to_string();
            run(&mut stream, pass);
            let output = stream.to_string();
            let again =
                kiln::parser::parse(&output).unwrap_or_else(|d| panic!("{} output does not parse: {d}", pass.name()));
            assert!(again.same_as(&stream), "{} on {}: parse(print(m)) != m", pass.name(), path.display());
            if is_no_op(pass.name(), path) {
                assert_eq!(
                    output,
                    before,
                    "{} now changes {}: give it a snapshot (remove it from NO_OP)",
                    pass.name(),
                    path.display()
                );
            } else {
                assert_ne!(
                    output,
                    before,
                    "{} changes nothing in {}: list it in NO_OP and lit-tests/passes",
                    pass.name(),
                    path.display()
                );
                insta::assert_snapshot!(pass.name(), output);
            }
        }
    });
}

#[test]
fn every_pass_is_idempotent_on_testdata() {
    insta::glob!("../testdata", "*.kir", |path| {
        let text = std::fs::read_to_string(path).expect("read a testdata file");
        let mut stream = kiln::parser::parse(&text).expect("parses");
        for &pass in passes::REGISTRY {
            run(&mut stream, pass);
            let once = stream.to_string();
            run(&mut stream, pass);
            assert_eq!(stream.to_string(), once, "{} is not idempotent on {}", pass.name(), path.display());
        }
    });
}

#[test]
fn the_default_pipeline_is_the_o2_preset_then_split_tasks() {
    let names: Vec<&str> = passes::default_pipeline().iter().map(|p| p.name()).collect();
    let mut want = passes::preset(passes::OptPreset::O2);
    want.push("split-tasks");
    assert_eq!(names, want);
}
