//! The build identity: one digest of everything that decides a compiled
//! task object's bytes or its calling convention.
//!
//! Owns: the list of those inputs ([`BUILD_INPUTS`], [`LOCKED_CRATES`]) and
//! [`digest`], which hashes them in a source tree. `build.rs` includes this
//! file (`#[path]`) to stamp the digest into the build (as
//! `config::BUILD_ID`, a field of every `CompileConfig` and so of every
//! key); the tests call the same function over a copy of the tree.
//!
//! Must never: use anything of the crate (build.rs compiles this file on
//! its own), hash a file outside the listed inputs (a doc or a tool's help
//! text must not change a key), or depend on the order a directory lists
//! its entries in.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The files and directories (relative to the crate root) whose contents
/// decide an object's bytes or how it is called, and nothing else: codegen's
/// lowering and pipeline, the runtime ABI a task is called with
/// (`codegen/abi.rs`: `TaskContext`, `ErrorSlot`, the entry signature; `jit/runtime.rs`: the parameter slots and the launch), the
/// IR with its printer, the lexer, grammar and parser (a `kiln-compile`
/// process re-parses the task text it is sent), the key code, the compile
/// configuration and the record format. A directory stands for every file
/// below it.
///
/// Left out on purpose, because they change no object: the cache
/// provider (`cached.rs`), the run's counters (`stats.rs`), the JIT's loading and
/// launching (`jit/mod.rs`, `jit/engine.rs`, `jit/orc_session.cpp`),
/// spawning the compiler process (`codegen/backend.rs`), the cache store's
/// policy, the passes (a task is keyed by its text after them), the
/// tools and the docs.
pub const BUILD_INPUTS: &[&str] = &[
    "src/codegen/mod.rs",
    "src/codegen/abi.rs",
    "src/codegen/bounds.rs",
    "src/codegen/lower.rs",
    "src/codegen/lower",
    "src/codegen/sites.rs",
    "src/jit/runtime.rs",
    "src/ir",
    "src/printer.rs",
    "src/lexer.rs",
    "src/grammar.lalrpop",
    "src/parser.rs",
    "src/parser/ast.rs",
    "src/key.rs",
    "src/key",
    "src/config.rs",
    "src/cache/record.rs",
];

/// The crates from `Cargo.lock` whose versions are part of the identity:
/// the LLVM bindings.
pub const LOCKED_CRATES: &[&str] = &["inkwell", "inkwell_internals", "llvm-sys"];

/// The lock file, relative to the crate root.
pub const LOCK_FILE: &str = "Cargo.lock";

/// Every file of [`BUILD_INPUTS`] under `root`, relative to it, sorted.
pub fn input_files(root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in BUILD_INPUTS {
        collect(root, Path::new(input), &mut files)?;
    }
    files.sort();
    Ok(files)
}

fn collect(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    let meta = fs::metadata(root.join(rel))?;
    if !meta.is_dir() {
        out.push(rel.to_path_buf());
        return Ok(());
    }
    for entry in fs::read_dir(root.join(rel))? {
        collect(root, &rel.join(entry?.file_name()), out)?;
    }
    Ok(())
}

/// `name version` of each of [`LOCKED_CRATES`] found in a `Cargo.lock`'s
/// text, sorted (absent crates are left out: a build without LLVM has
/// none).
pub fn locked_versions(lock: &str) -> Result<Vec<String>, String> {
    let table: toml::Table = toml::from_str(lock).map_err(|e| format!("{LOCK_FILE}: {e}"))?;
    let packages = table.get("package").and_then(|p| p.as_array()).map(Vec::as_slice).unwrap_or_default();
    let mut found: Vec<String> = packages
        .iter()
        .filter_map(|p| Some((p.get("name")?.as_str()?, p.get("version")?.as_str()?)))
        .filter(|(name, _)| LOCKED_CRATES.contains(name))
        .map(|(name, version)| format!("{name} {version}"))
        .collect();
    found.sort();
    Ok(found)
}

/// The build identity of the tree at `root` built against LLVM
/// `llvm_version`: blake3 over each input file's path and bytes, the locked
/// versions of the LLVM bindings and the LLVM version; the first 32 hex
/// digits.
pub fn digest(root: &Path, llvm_version: &str) -> Result<String, String> {
    let mut h = blake3::Hasher::new();
    h.update(b"kiln build identity\0");
    let files = input_files(root).map_err(|e| format!("{}: {e}", root.display()))?;
    for rel in &files {
        let bytes = fs::read(root.join(rel)).map_err(|e| format!("{}: {e}", rel.display()))?;
        let name = rel.to_string_lossy().replace('\\', "/");
        for part in [name.as_bytes(), &bytes] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part);
        }
    }
    let lock = fs::read_to_string(root.join(LOCK_FILE)).map_err(|e| format!("{LOCK_FILE}: {e}"))?;
    for line in locked_versions(&lock)? {
        h.update(line.as_bytes());
        h.update(b"\n");
    }
    h.update(b"llvm ");
    h.update(llvm_version.as_bytes());
    Ok(h.finalize().to_hex()[..32].to_string())
}
