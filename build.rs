//! Generates the KIR parser from `src/grammar.lalrpop` (lalrpop), and
//! records the version of the LLVM that the code generator links and the
//! build identity (`src/build_id.rs`), so that LLVM-free tools (`kiln-key`)
//! compute the same keys as the JIT. It links nothing: LLVM is linked by
//! the LLVM crates' build scripts (`crates/kiln-llvm/build/llvm.rs`).
#[path = "crates/kiln-llvm/build/config.rs"]
mod config;

#[path = "src/build_id.rs"]
#[allow(dead_code)]
mod build_id;

fn main() {
    lalrpop::Configuration::new()
        .set_in_dir("src")
        .emit_rerun_directives(true)
        .process()
        .expect("lalrpop grammar failed to generate");

    let config = config::config();
    config::tell_tests_the_binaries();
    let version = config::llvm_config(&config, &["--version"]).unwrap_or_else(|| "none".into());
    println!("cargo:rustc-env=KILN_LLVM_VERSION={version}");
    let root = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let id = build_id::digest(&root, &version).unwrap_or_else(|e| panic!("cannot compute the build identity: {e}"));
    println!("cargo:rustc-env=KILN_BUILD_ID={id}");
    // Explicit rerun directives replace cargo's default (any file of the
    // package), so name every input.
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/grammar.lalrpop");
    println!("cargo:rerun-if-changed=src/build_id.rs");
    println!("cargo:rerun-if-changed={}", build_id::LOCK_FILE);
    // Every input file: a new input is reached through a `mod` line or a
    // path in a file that is one already, so it reruns the script too.
    for input in build_id::input_files(&root).unwrap_or_else(|e| panic!("cannot list the build identity's inputs: {e}"))
    {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    println!("cargo:rerun-if-changed=crates/kiln-llvm/build/config.rs");
}
