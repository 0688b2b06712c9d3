//! Compiles `src/orc_session.cpp` (an ORC session and object layer
//! without LLJIT, whose target machines a warm run never uses) and links
//! LLVM into `kiln-run` and this crate's tests.
#[path = "../kiln-llvm/build/config.rs"]
mod config;
#[path = "../kiln-llvm/build/llvm.rs"]
mod llvm;

fn main() {
    let config = config::config();
    config::tell_tests_the_binaries();
    llvm::compile_shims(&config, &["src/orc_session.cpp"], "kiln_jit_orc_session");
    llvm::link_static_here(&config);
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../kiln-llvm/build/config.rs");
    println!("cargo:rerun-if-changed=../kiln-llvm/build/llvm.rs");
}
