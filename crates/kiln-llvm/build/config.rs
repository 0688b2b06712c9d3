//! Finding the LLVM the build uses: its `llvm-config`. Included with
//! `#[path]` by the root build script (which records LLVM's version in
//! the build identity) and by the LLVM crates' (with `llvm.rs`).
#![allow(dead_code)]

use std::process::Command;

/// `llvm-config` of the LLVM the build uses (`LLVM_SYS_221_PREFIX`, else
/// Debian's LLVM 22), with the rerun directives for it.
pub fn config() -> String {
    let prefix = std::env::var("LLVM_SYS_221_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    let config = format!("{prefix}/bin/llvm-config");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_221_PREFIX");
    println!("cargo:rerun-if-changed={config}");
    config
}

/// `llvm-config ARGS`'s output, trimmed; `None` if it cannot run or fails.
pub fn llvm_config(config: &str, args: &[&str]) -> Option<String> {
    Command::new(config)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Tells the package's tests where cargo puts the workspace's binaries
/// (`KILN_BINARIES_DIR`, the profile's directory: `OUT_DIR` is
/// `<target>/<profile>/build/<package>-<hash>/out`). Cargo's
/// `CARGO_BIN_EXE_*` names only the package's own binaries, and the tools
/// of the workspace are in three packages (the LLVM wall is a crate
/// boundary). `cargo test` builds a package's binaries only for its own
/// integration tests, so build them all first (`cargo build --bins`, as
/// `make test-cargo` does); a stale `kiln-compile` is refused by
/// `kiln-run` (it belongs to another build).
pub fn tell_tests_the_binaries() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dir = out.ancestors().nth(3).expect("OUT_DIR is <target>/<profile>/build/<package>-<hash>/out");
    println!("cargo:rustc-env=KILN_BINARIES_DIR={}", dir.display());
}
