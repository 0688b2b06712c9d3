//! Generates the KIR parser from `src/grammar.lalrpop` (lalrpop), records
//! the version of the LLVM that codegen links, and the build identity
//! (`src/build_id.rs`), so that LLVM-free tools (`kiln-key`) compute the
//! same keys as the JIT.
use std::process::Command;

#[path = "src/build_id.rs"]
#[allow(dead_code)]
mod build_id;

fn main() {
    lalrpop::Configuration::new()
        .set_in_dir("src")
        .emit_rerun_directives(true)
        .process()
        .expect("lalrpop grammar failed to generate");

    let prefix = std::env::var("LLVM_SYS_221_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    let version = Command::new(format!("{prefix}/bin/llvm-config"))
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "none".into());
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
    for input in build_id::BUILD_INPUTS {
        // A directory is scanned whole by cargo (files added or removed too).
        println!("cargo:rerun-if-changed={input}");
    }
    println!("cargo:rerun-if-env-changed=LLVM_SYS_221_PREFIX");
    println!("cargo:rerun-if-changed={prefix}/bin/llvm-config");
}
