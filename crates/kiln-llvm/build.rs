//! Compiles `src/target_tables.cpp` (LLVM's tables of CPUs and features,
//! `MCSubtargetInfo`, which the C API lacks, for validating `--target-cpu`
//! and `--target-features`) and `src/host.cpp` (the host's detection) and
//! links LLVM for this crate's tests; the
//! shared `libLLVM` of a dynamic link reaches every crate above this one.
#[path = "build/config.rs"]
mod config;
#[path = "build/llvm.rs"]
mod llvm;

fn main() {
    let config = config::config();
    llvm::compile_shims(&config, &["src/target_tables.cpp", "src/host.cpp"], "kiln_llvm_target_tables");
    llvm::link_shared(&config);
    llvm::link_static_here(&config);
    println!("cargo:rerun-if-changed=src/shim_string.h");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/config.rs");
    println!("cargo:rerun-if-changed=build/llvm.rs");
}
