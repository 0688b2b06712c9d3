//! Golden outputs of every registered pass over every `testdata/` file: one
//! insta snapshot per file per pass (`pass_snapshots__PASS@FILE.snap`).
//! The verifier runs on the input and on every pass's output.

use kiln::passes::{self, Pass};

/// Passes that must run before `pass` for it to apply.
fn prerequisites(pass: &str) -> &'static [&'static str] {
    match pass {
        "split-tasks" => &["offload"],
        _ => &[],
    }
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
            run(&mut stream, pass);
            insta::assert_snapshot!(pass.name(), stream.to_string());
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
