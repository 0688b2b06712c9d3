//! The build identity: one digest of everything that decides a compiled
//! task object's bytes or its calling convention.
//!
//! Owns: which sources those are, by construction: the closure of the
//! modules that make or call an object ([`ROOTS`]) under their `mod`
//! declarations and their `crate::` and `super::` paths and the paths
//! into the workspace's other crates ([`CRATES`]), with the
//! non-Rust sources that live beside a module reached (`emitter.cpp` beside
//! `emitter.rs`, the grammar beside the parser), less the modules where the
//! walk stops on purpose ([`BOUNDARIES`], each with its reason); the locked
//! crates that count ([`LOCKED_CRATES`]); and [`digest`], which hashes them
//! in a source tree. `build.rs` includes this file (`#[path]`) to stamp the
//! digest into the build (as `config::BUILD_ID`, a field of every
//! `CompileConfig` and so of every key); the tests call the same function
//! over a copy of the tree.
//!
//! Must never: use anything of the crate (build.rs compiles this file on
//! its own), leave out a module a root reaches unless [`BOUNDARIES`] names
//! it with a reason, hash a doc or a tool's help text, or depend on the
//! order a directory lists its entries in.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The workspace's crates whose paths the walk follows: each crate's name
/// in paths and its source directory (relative to the workspace root).
pub const CRATES: &[(&str, &str)] = &[
    ("kiln", "src"),
    ("kiln_llvm", "crates/kiln-llvm/src"),
    ("kiln_codegen", "crates/kiln-codegen/src"),
    ("kiln_jit", "crates/kiln-jit/src"),
];

/// Where the walk starts (relative to the workspace root): the code
/// generator (`kiln-codegen`'s root and every module it declares: the
/// lowering, the back end's pipeline), what it shares with the JIT
/// (`kiln-llvm`'s root: the loaded LLVM's check, the host target, and the
/// runtime ABI a task is called with), the JIT's launch of a task
/// (`runtime.rs`: the parameter slots), the key and the configuration it
/// hashes, the record format, and the printer and parser (a
/// `kiln-compile` process re-parses the task text it is sent).
pub const ROOTS: &[&str] = &[
    "crates/kiln-codegen/src/lib.rs",
    "crates/kiln-llvm/src/lib.rs",
    "crates/kiln-jit/src/runtime.rs",
    "src/key.rs",
    "src/config.rs",
    "src/cache/record.rs",
    "src/printer.rs",
    "src/parser.rs",
];

/// The modules the walk reaches but does not enter, each with why it
/// decides no object's bytes. A module below one of them is left out too,
/// unless something else reaches it (`cache/record.rs` is a root).
pub const BOUNDARIES: &[(&str, &str)] = &[
    ("src/passes.rs", "the passes decide a task's text, which the key hashes itself"),
    ("src/frontend.rs", "reads and batches input text; the key hashes the text it yields"),
    ("src/verifier/mod.rs", "accepts or rejects a module, never changes one"),
    ("src/races.rs", "the race detector's reports: it checks runs, it compiles nothing"),
    ("src/npy.rs", "reads and writes field values as .npy files"),
    ("src/cache/mod.rs", "the store's policy: where records live and when they go, never what they hold"),
    ("crates/kiln-llvm/src/backend.rs", "spawns and talks to the compiler process; the bytes are the lowering's"),
    (
        "crates/kiln-llvm/src/session.rs",
        "assembles the store, the remote tier and single flight: where objects are kept",
    ),
    (
        "crates/kiln-llvm/src/target.rs",
        "checks CPU and feature names against LLVM's tables; the target is in the scope",
    ),
    ("crates/kiln-llvm/src/target_tables.cpp", "LLVM's CPU and feature tables, for the names' check"),
    ("crates/kiln-codegen/src/fill.rs", "stores objects the compiler made into a cache; it makes none"),
    ("src/diag.rs", "renders diagnostics"),
    ("src/trace.rs", "the time trace's spans"),
    ("crates/kiln-jit/src/orc_session.cpp", "the JIT session loads and links objects, it makes none"),
];

/// The non-Rust sources a module's directory may hold beside it.
const COMPANION_EXTENSIONS: &[&str] = &["cpp", "h", "lalrpop"];

/// The crates from `Cargo.lock` whose versions are part of the identity:
/// the LLVM bindings.
pub const LOCKED_CRATES: &[&str] = &["inkwell", "inkwell_internals", "llvm-sys"];

/// The lock file, relative to the crate root.
pub const LOCK_FILE: &str = "Cargo.lock";

/// Every input file under `root`, relative to it, sorted: the Rust
/// modules [`ROOTS`] reach and their companions (see the module's doc).
pub fn input_files(root: &Path) -> io::Result<Vec<PathBuf>> {
    let stops: BTreeSet<PathBuf> = BOUNDARIES.iter().map(|(p, _)| PathBuf::from(p)).collect();
    let (reached, _) = walk(root)?;
    let mut files: BTreeSet<PathBuf> = reached.clone();
    for dir in reached.iter().filter_map(|f| f.parent()).collect::<BTreeSet<_>>() {
        for entry in fs::read_dir(root.join(dir))? {
            let rel = dir.join(entry?.file_name());
            let companion = rel.extension().is_some_and(|e| COMPANION_EXTENSIONS.iter().any(|c| e == *c));
            if companion && !stops.contains(&rel) {
                files.insert(rel);
            }
        }
    }
    Ok(files.into_iter().collect())
}

/// The Rust modules [`ROOTS`] reach, and the [`BOUNDARIES`] the walk met
/// and did not enter (a boundary never met is stale: the tests say so).
pub fn walk(root: &Path) -> io::Result<(BTreeSet<PathBuf>, BTreeSet<PathBuf>)> {
    let stops: BTreeSet<PathBuf> = BOUNDARIES.iter().map(|(p, _)| PathBuf::from(p)).collect();
    let (mut reached, mut stopped) = (BTreeSet::new(), BTreeSet::new());
    let mut todo: Vec<PathBuf> = ROOTS.iter().map(PathBuf::from).collect();
    while let Some(rel) = todo.pop() {
        if stops.contains(&rel) {
            stopped.insert(rel);
            continue;
        }
        if is_test_module(&rel) || !reached.insert(rel.clone()) {
            continue;
        }
        let text = fs::read_to_string(root.join(&rel))?;
        todo.extend(references(root, &rel, &code_of(&text)));
    }
    Ok((reached, stopped))
}

/// A module of tests (`tests.rs`, compiled only under `cfg(test)`): never
/// in a build that makes objects.
fn is_test_module(rel: &Path) -> bool {
    rel.file_name().is_some_and(|n| n == "tests.rs")
}

/// A module's text without its comments (a doc comment naming a module
/// does not make it an input): each line up to `//`.
fn code_of(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The module files that module `rel`'s code refers to: its `mod NAME;`
/// children, and the module each `crate::a::b`, `super::a` and
/// `other_crate::a` path names (the longest prefix that is a module file;
/// a crate's root only through a `mod` line or [`ROOTS`]).
fn references(root: &Path, rel: &Path, code: &str) -> Vec<PathBuf> {
    let (src, path) = module_path(rel);
    let mut out = Vec::new();
    let words: Vec<&str> = code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).collect();
    for (i, w) in words.iter().enumerate() {
        if *w == "mod" {
            if let Some(name) = words[i + 1..].iter().find(|w| !w.is_empty()) {
                let mut child = path.clone();
                child.push(name.to_string());
                out.extend(module_file(root, src, &child, child.len()));
            }
            continue;
        }
        let mut parts: Vec<&str> = w.split("::").filter(|p| !p.is_empty()).collect();
        // `crate::` and another crate's name name a module below a crate's
        // root; `super::` the parent itself too (`use super::{item}`).
        let first = parts.first().copied().unwrap_or_default();
        let (src, base, min): (&str, Vec<String>, usize) = match CRATES.iter().find(|(name, _)| *name == first) {
            _ if first == "crate" => {
                parts.remove(0);
                (src, Vec::new(), 1)
            }
            Some((_, other)) => {
                parts.remove(0);
                (other, Vec::new(), 1)
            }
            None if first == "super" => {
                let ups = parts.iter().take_while(|p| **p == "super").count();
                parts.drain(..ups);
                let base = path[..path.len().saturating_sub(ups)].to_vec();
                let min = base.len();
                (src, base, min)
            }
            None => continue,
        };
        let full: Vec<String> = base.into_iter().chain(parts.iter().map(|p| p.to_string())).collect();
        out.extend(module_file(root, src, &full, min));
    }
    out
}

/// The source directory of a file's crate ([`CRATES`]) and its module
/// path there (`crates/kiln-codegen/src/lower.rs` is `lower` of
/// `crates/kiln-codegen/src`, `src/ir/mod.rs` is `ir` of `src`).
fn module_path(rel: &Path) -> (&'static str, Vec<String>) {
    let (_, src) = CRATES.iter().find(|(_, src)| rel.starts_with(src)).unwrap_or(&CRATES[0]);
    let rel = rel.strip_prefix(src).unwrap_or(rel).with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
        parts.pop();
    }
    (src, parts)
}

/// The file of the longest prefix of `path`, at least `min` long, that is
/// a module of the crate whose sources are in `src`: `SRC/a/b.rs` or
/// `SRC/a/b/mod.rs`.
fn module_file(root: &Path, src: &str, path: &[String], min: usize) -> Option<PathBuf> {
    (min.max(1)..=path.len()).rev().find_map(|n| {
        let stem: PathBuf = std::iter::once(src.to_string()).chain(path[..n].iter().cloned()).collect();
        [stem.with_extension("rs"), stem.join("mod.rs")].into_iter().find(|f| root.join(f).is_file())
    })
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
