//! Generates the KIR parser from `src/grammar.lalrpop` (lalrpop), records
//! the version of the LLVM that codegen links and the build identity
//! (`src/build_id.rs`), so that LLVM-free tools (`kiln-key`) compute the
//! same keys as the JIT, and links LLVM (with the `llvm` feature):
//! statically, and only the components Kiln calls, in release builds; the
//! shared `libLLVM` in debug builds. `KILN_LLVM_LINK` (`static` or
//! `dynamic`) overrides the choice. See `docs/performance.md`, "Warm
//! start", for why and for the figures.
use std::path::Path;
use std::process::Command;

#[path = "src/build_id.rs"]
#[allow(dead_code)]
mod build_id;

/// The LLVM components Kiln calls (llvm-config names; it adds what they
/// depend on): ORC (the JIT), the new pass manager's pipelines, and the
/// X86 back end (target machine, code generation, object and assembly
/// emission). A static link pulls in only these.
const LLVM_COMPONENTS: &[&str] = &["orcjit", "passes", "x86codegen"];

fn main() {
    lalrpop::Configuration::new()
        .set_in_dir("src")
        .emit_rerun_directives(true)
        .process()
        .expect("lalrpop grammar failed to generate");

    let prefix = std::env::var("LLVM_SYS_221_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into());
    let config = format!("{prefix}/bin/llvm-config");
    let version = llvm_config(&config, &["--version"]).unwrap_or_else(|| "none".into());
    println!("cargo:rustc-env=KILN_LLVM_VERSION={version}");
    let root = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let id = build_id::digest(&root, &version).unwrap_or_else(|e| panic!("cannot compute the build identity: {e}"));
    println!("cargo:rustc-env=KILN_BUILD_ID={id}");
    if std::env::var_os("CARGO_FEATURE_LLVM").is_some() {
        compile_shims(&config);
        link_llvm(&config);
    }
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
    println!("cargo:rerun-if-env-changed=LLVM_SYS_221_PREFIX");
    println!("cargo:rerun-if-env-changed=KILN_LLVM_LINK");
    println!("cargo:rerun-if-changed={config}");
}

/// The C++ files, for what LLVM's C API lacks: `src/target_tables.cpp`,
/// LLVM's tables of CPUs and features (`MCSubtargetInfo`), for validating
/// `--target-cpu` / `--target-features`; `src/jit/orc_session.cpp`, an ORC
/// session and object layer without LLJIT (whose target machines a warm
/// run never uses), for `jit`; `src/codegen/emitter.cpp`, a code
/// generator's pass pipeline built once and run over many modules.
const SHIMS: &[&str] = &["src/target_tables.cpp", "src/jit/orc_session.cpp", "src/codegen/emitter.cpp"];

/// Compiles [`SHIMS`] (with the `cc` crate, LLVM's own `--cxxflags`).
fn compile_shims(config: &str) {
    let flags = llvm_config(config, &["--cxxflags"]).unwrap_or_else(|| {
        panic!("`{config} --cxxflags` failed: LLVM 22 is needed for the `llvm` feature (run `make deps`)")
    });
    let mut build = cc::Build::new();
    // Hidden symbols: the template instances a shim makes (the typeinfo
    // of ORC's layers) are also named by the shared libLLVM, and a
    // default-visibility copy would be kept, as exported, in every binary
    // linked against it, with its references to libLLVM: the LLVM-free
    // tools would load libLLVM (lit-tests/tools/llvm-wall.test). Rust
    // calls the shims within the same link, so they need no export.
    build.cpp(true).files(SHIMS).warnings(false).flag("-fvisibility=hidden");
    if link_static() {
        // `link_llvm` links the C++ runtime statically instead.
        build.cpp_link_stdlib(None);
    }
    for flag in flags.split_whitespace() {
        build.flag(flag);
    }
    build.compile("kiln_llvm_shims");
    for shim in SHIMS {
        println!("cargo:rerun-if-changed={shim}");
    }
}

/// `llvm-config ARGS`'s output, trimmed; `None` if it cannot run or fails.
fn llvm_config(config: &str, args: &[&str]) -> Option<String> {
    Command::new(config)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Whether LLVM is linked statically: `KILN_LLVM_LINK`, else release
/// builds (cargo's `PROFILE`) static and debug builds dynamic.
fn link_static() -> bool {
    match std::env::var("KILN_LLVM_LINK").as_deref() {
        Ok("static") => true,
        Ok("dynamic") => false,
        Ok(other) => panic!("KILN_LLVM_LINK must be `static` or `dynamic`, not `{other}`"),
        Err(_) => std::env::var("PROFILE").as_deref() == Ok("release"),
    }
}

/// The binaries that call LLVM (a static link gives LLVM to these only).
const LLVM_BINS: &[&str] = &["kiln-run", "kiln-compile"];

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

/// Tells rustc what to link for LLVM (llvm-sys is built with
/// `no-llvm-linking`, so this is the only place that decides).
fn link_llvm(config: &str) {
    let run = |args: &[&str]| {
        llvm_config(config, args).unwrap_or_else(|| {
            panic!("`{config} {}` failed: LLVM 22 is needed for the `llvm` feature (run `make deps`)", args.join(" "))
        })
    };
    println!("cargo:rustc-link-search=native={}", run(&["--libdir"]));
    if !link_static() {
        // The shared library; binaries that call none of it do not load it
        // (rustc links with --as-needed).
        for name in run(&["--link-shared", "--libs"]).split_whitespace().filter_map(|l| l.strip_prefix("-l")) {
            println!("cargo:rustc-link-lib=dylib={name}");
        }
        return;
    }
    let mut args = vec!["--link-static", "--libs"];
    args.extend(LLVM_COMPONENTS);
    // Static archives go on the link lines of the binaries that call LLVM
    // (and of tests and examples), not into the library: an
    // archive on the line of a binary that never calls LLVM (`kiln-opt`)
    // would still be pulled in, with its static constructors, through
    // library code that binary does not run.
    let mut flags = vec!["-Wl,-Bstatic".to_string()];
    flags.extend(run(&args).split_whitespace().map(str::to_string));
    flags.push("-Wl,-Bdynamic".into());
    // System libraries come as `-lNAME` or as a path to a shared library;
    // then the C++ runtime (the shared libLLVM brings its own).
    for word in run(&["--link-static", "--system-libs"]).split_whitespace() {
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
        for bin in LLVM_BINS {
            println!("cargo:rustc-link-arg-bin={bin}={flag}");
        }
        for kind in ["tests", "examples"] {
            println!("cargo:rustc-link-arg-{kind}={flag}");
        }
    }
}

/// `z3` for `/usr/lib/x86_64-linux-gnu/libz3.so`.
fn shared_lib_name(path: &Path) -> Option<&str> {
    let file = path.file_name()?.to_str()?;
    file.strip_prefix("lib")?.strip_suffix(".so")
}
