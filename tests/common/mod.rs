//! Helpers shared by the integration tests (`mod common;`). Each test crate
//! uses some of them, so the others are dead code there.
#![allow(dead_code)]

pub mod kernelgen;
pub mod racegen;
pub mod redis_server;

use kiln::exec::{Engine, Fields};
use kiln::ir::Stream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use walkdir::WalkDir;

/// The workspace's root (where `Cargo.lock` is): the tests of the LLVM
/// crates include this module too, from their own package's directory.
pub fn repo() -> &'static Path {
    let package = Path::new(env!("CARGO_MANIFEST_DIR"));
    package.ancestors().find(|d| d.join("Cargo.lock").is_file()).expect("the package is in the workspace")
}

/// Every `.kir` file under `testdata/` and `lit-tests/`, sorted by path,
/// leaving out lit's scratch directories (copies and outputs, not tests).
pub fn kir_files() -> Vec<PathBuf> {
    let root = repo();
    let mut files = Vec::new();
    for dir in ["testdata", "lit-tests"] {
        for entry in WalkDir::new(root.join(dir)).sort_by_file_name() {
            let entry = entry.expect("walk the test directories");
            let p = entry.path();
            if p.components().any(|c| c.as_os_str() == "Output") {
                continue;
            }
            if p.extension().is_some_and(|e| e == "kir") {
                files.push(p.to_path_buf());
            }
        }
    }
    files
}

/// Runs every kernel of the stream in order, with its parameters' default
/// values, on zeroed fields, as one batch (`Engine::run_kernels`, as
/// `kiln-run` does), and returns the fields.
pub fn run_all(engine: &mut dyn Engine, stream: &Stream) -> Result<Fields, String> {
    let mut fields = Fields::zeroed(stream);
    let mut runs = Vec::new();
    for k in stream.modules.iter().flat_map(|m| m.kernels()) {
        let args: Vec<_> = k
            .params
            .iter()
            .map(|p| p.default.ok_or_else(|| format!("kernel @{}: a parameter has no default", k.name)))
            .collect::<Result<_, _>>()?;
        runs.push((k.name.as_str(), args));
    }
    let runs: Vec<(&str, &[kiln::ir::Const])> = runs.iter().map(|(k, a)| (*k, a.as_slice())).collect();
    engine.run_kernels(stream, &runs, &mut fields).map_err(|e| e.message)?;
    Ok(fields)
}

/// A command with an environment that points every default cache
/// location into `home` (so nothing can reach the user's cache).
pub fn tool(bin: &str, home: &Path) -> Command {
    let mut c = Command::new(bin);
    c.env("HOME", home.join("home"))
        .env("KILN_CACHE_DIR", home.join("env-cache"))
        .env("XDG_CACHE_HOME", home.join("xdg"))
        .env_remove("KILN_TARGET_CPU")
        .env_remove("KILN_TARGET_FEATURES")
        .stdin(Stdio::null());
    c
}

/// Runs `c`, which must succeed; its output.
pub fn ok(mut c: Command) -> Output {
    let out = c.output().expect("spawn");
    assert!(out.status.success(), "{c:?} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    out
}

/// `kiln-key -O0 FILE` run with `tool`: every task's name (without `@`)
/// and key, in stream order.
pub fn kiln_key_tasks(home: &Path, file: &Path) -> Vec<(String, kiln::cache::record::Key)> {
    let mut c = tool(concat!(env!("KILN_BINARIES_DIR"), "/kiln-key"), home);
    c.arg(file).arg("-O0");
    String::from_utf8(ok(c).stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (task, key) = l.split_once(' ').expect("@TASK KEY");
            (task.trim_start_matches('@').to_string(), key.parse().expect("key"))
        })
        .collect()
}

/// Caps the address space of the process `c` starts (`RLIMIT_AS`), so a
/// test of a large input fails on memory that grows with it instead of
/// taking the machine.
pub fn cap_memory(c: &mut Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child.
    unsafe {
        c.pre_exec(move || {
            let cap = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
            if libc::setrlimit(libc::RLIMIT_AS, &cap) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The text `scripts/gen-scale.py DIMENSION N` writes: the scaling
/// benchmark's inputs, which the scaling tests run too.
pub fn gen_scale(dimension: &str, n: usize) -> String {
    let script = repo().join("scripts/gen-scale.py");
    let out = Command::new("python3").arg(script).arg(dimension).arg(n.to_string()).output().expect("python3");
    assert!(out.status.success(), "gen-scale.py {dimension} {n}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The compile lock files (`*.lock`, `docs/cache.md`) below `dir`.
pub fn lock_files(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                lock_files(&p)
            } else {
                usize::from(p.extension().is_some_and(|x| x == "lock"))
            }
        })
        .sum()
}

/// The directory of the freshly built tools.
pub fn bin_dir() -> PathBuf {
    Path::new(concat!(env!("KILN_BINARIES_DIR"), "/kiln-opt"))
        .parent()
        .expect("binaries have a directory")
        .to_path_buf()
}

/// Runs `cmd` with bash (`pipefail` on) in `dir`, as a user would after the
/// README's set-up: the freshly built tools and LLVM's first on `PATH`, no
/// `KILN_*` setting or `NO_COLOR` of the caller's, `HOME` and the XDG
/// directories in `dir`, and the default cache `dir/cache`.
pub fn user_shell(dir: &Path, cmd: &str) -> Output {
    let path = format!("{}:/usr/lib/llvm-22/bin:{}", bin_dir().display(), std::env::var("PATH").unwrap_or_default());
    let mut c = Command::new("bash");
    c.arg("-o").arg("pipefail").arg("-c").arg(cmd).current_dir(dir);
    for (k, _) in std::env::vars() {
        if k.starts_with("KILN_") || k == "NO_COLOR" {
            c.env_remove(k);
        }
    }
    c.env("PATH", &path)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("xdg-cache"))
        .env("KILN_CACHE_DIR", dir.join("cache"));
    c.output().expect("bash runs")
}
