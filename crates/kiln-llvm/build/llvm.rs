//! What the build scripts of the LLVM crates (kiln-llvm, kiln-codegen,
//! kiln-jit) share, included by each with `#[path]` (beside `config.rs`,
//! as `mod config`): compiling a crate's C++ shims, and linking LLVM:
//! statically, and only the components Kiln calls, in release builds; the
//! shared `libLLVM` in debug builds. `KILN_LLVM_LINK` (`static` or
//! `dynamic`) overrides the choice. See `docs/performance.md`, "Warm
//! start", for why and for the figures.
#![allow(dead_code)]

use crate::config::llvm_config;
use std::path::Path;

/// The LLVM components Kiln calls (llvm-config names; it adds what they
/// depend on): ORC (the JIT), the new pass manager's pipelines, and the
/// X86 back end (target machine, code generation, object and assembly
/// emission). A static link pulls in only these.
const LLVM_COMPONENTS: &[&str] = &["orcjit", "passes", "x86codegen"];

/// Compiles a crate's C++ shims (for what LLVM's C API lacks) into the
/// static library `name` (with the `cc` crate, LLVM's own `--cxxflags`).
pub fn compile_shims(config: &str, shims: &[&str], name: &str) {
    let flags = llvm_config(config, &["--cxxflags"])
        .unwrap_or_else(|| panic!("`{config} --cxxflags` failed: LLVM 22 is needed (run `make deps`)"));
    let mut build = cc::Build::new();
    // Hidden symbols: the template instances a shim makes (the typeinfo
    // of ORC's layers) are also named by the shared libLLVM, and a
    // default-visibility copy would be kept, as exported, in every binary
    // linked against it, with its references to libLLVM: the LLVM-free
    // tools would load libLLVM (lit-tests/tools/llvm-wall.test). Rust
    // calls the shims within the same link, so they need no export.
    build.cpp(true).files(shims).warnings(false).flag("-fvisibility=hidden");
    if link_static() {
        // `link_llvm` links the C++ runtime statically instead.
        build.cpp_link_stdlib(None);
        build.define("KILN_STATIC_LLVM", None);
    }
    for flag in flags.split_whitespace() {
        build.flag(flag);
    }
    build.compile(name);
    for shim in shims {
        println!("cargo:rerun-if-changed={shim}");
    }
}

/// Whether LLVM is linked statically: `KILN_LLVM_LINK`, else release
/// builds (cargo's `PROFILE`) static and debug builds dynamic.
pub fn link_static() -> bool {
    match std::env::var("KILN_LLVM_LINK").as_deref() {
        Ok("static") => true,
        Ok("dynamic") => false,
        Ok(other) => panic!("KILN_LLVM_LINK must be `static` or `dynamic`, not `{other}`"),
        Err(_) => std::env::var("PROFILE").as_deref() == Ok("release"),
    }
}

/// The system libraries of a static LLVM link that are linked statically
/// too (their archives come with `zlib1g-dev` and `libzstd-dev`, which
/// `make deps-static` installs): each shared library a warm start loads
/// costs it a map, relocations and symbol bindings. The others stay
/// shared (`--as-needed` drops those nothing calls, such as `libz3`).
const STATIC_SYSTEM_LIBS: &[&str] = &["z", "zstd"];

/// The end of a static link's line: the C++ runtime linked statically
/// (the shared `libstdc++` costs a warm start its loading and thousands of
/// symbol bindings, as LLVM's code calls it), and relative relocations
/// packed (`DT_RELR`, glibc 2.36: the dynamic loader applies the ~50,000
/// of a PIE that holds LLVM from a table of a few kilobytes instead of
/// 1.2 MB). See `docs/performance.md`, "Warm start".
const STATIC_LINK_FLAGS: &[&str] = &["-Wl,-Bstatic", "-lstdc++", "-Wl,-Bdynamic", "-Wl,-z,pack-relative-relocs"];

/// `llvm-config ARGS`'s output, or a panic saying LLVM 22 is needed.
fn run(config: &str, args: &[&str]) -> String {
    llvm_config(config, args)
        .unwrap_or_else(|| panic!("`{config} {}` failed: LLVM 22 is needed (run `make deps`)", args.join(" ")))
}

/// In a dynamic link, the shared libLLVM (llvm-sys is built with
/// `no-llvm-linking`, so these two functions are the only place that
/// decides), stated once by the lowest LLVM crate: the directive reaches
/// every crate above it, and binaries that call none of it do not load it
/// (rustc links with --as-needed). Nothing in a static link.
pub fn link_shared(config: &str) {
    println!("cargo:rerun-if-env-changed=KILN_LLVM_LINK");
    if link_static() {
        return;
    }
    println!("cargo:rustc-link-search=native={}", run(config, &["--libdir"]));
    for name in run(config, &["--link-shared", "--libs"]).split_whitespace().filter_map(|l| l.strip_prefix("-l")) {
        println!("cargo:rustc-link-lib=dylib={name}");
    }
}

/// In a static link, the archives of the components Kiln calls on the link
/// lines of this package's own binaries, tests and examples (every one of
/// which calls LLVM: the LLVM-free tools are another package's). Nothing
/// in a dynamic link.
pub fn link_static_here(config: &str) {
    println!("cargo:rerun-if-env-changed=KILN_LLVM_LINK");
    if !link_static() {
        return;
    }
    println!("cargo:rustc-link-search=native={}", run(config, &["--libdir"]));
    let mut args = vec!["--link-static", "--libs"];
    args.extend(LLVM_COMPONENTS);
    // Static archives go on link lines, not into the library.
    let mut flags = vec!["-Wl,-Bstatic".to_string()];
    flags.extend(run(config, &args).split_whitespace().map(str::to_string));
    flags.push("-Wl,-Bdynamic".into());
    // System libraries come as `-lNAME` or as a path to a shared library;
    // then the C++ runtime (the shared libLLVM brings its own).
    for word in run(config, &["--link-static", "--system-libs"]).split_whitespace() {
        if word.strip_prefix("-l").is_some_and(|name| STATIC_SYSTEM_LIBS.contains(&name)) {
            flags.extend(["-Wl,-Bstatic", word, "-Wl,-Bdynamic"].map(str::to_string));
        } else if word.starts_with("-l") {
            flags.push(word.to_string());
        } else if let (Some(name), Some(dir)) = (shared_lib_name(Path::new(word)), Path::new(word).parent()) {
            flags.push(format!("-L{}", dir.display()));
            flags.push(format!("-l{name}"));
        }
    }
    flags.extend(STATIC_LINK_FLAGS.iter().map(|f| f.to_string()));
    for flag in &flags {
        println!("cargo:rustc-link-arg={flag}");
    }
}

/// `z3` for `/usr/lib/x86_64-linux-gnu/libz3.so`.
fn shared_lib_name(path: &Path) -> Option<&str> {
    let file = path.file_name()?.to_str()?;
    file.strip_prefix("lib")?.strip_suffix(".so")
}
