//! Compiles `src/emitter.cpp` (a code generator's pass pipeline built once
//! and run over many modules, which the C API lacks) and links LLVM into
//! `kiln-compile` and this crate's tests.
#[path = "../kiln-llvm/build/config.rs"]
mod config;
#[path = "../kiln-llvm/build/llvm.rs"]
mod llvm;

fn main() {
    let config = config::config();
    llvm::compile_shims(&config, &["src/emitter.cpp"], "kiln_codegen_emitter");
    llvm::link_static_here(&config);
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../kiln-llvm/build/config.rs");
    println!("cargo:rerun-if-changed=../kiln-llvm/build/llvm.rs");
}
