//! Functions compiled once (`docs/cache.md`, "Function records"): kernels
//! sharing one long call chain compile each function of it once, in one
//! process and across processes through the cache (local and remote); a
//! damaged function record is caught and compiled afresh; an error inside
//! a called function is still located at its statement.

mod common;

use common::redis_server::RedisServer;
use serde_json::Value;
use std::path::{Path, PathBuf};

const RUN: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-run");
const COMPILE: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-compile");
const INSPECT: &str = env!("CARGO_BIN_EXE_kiln-cache-inspect");

/// `k` kernels, each calling the head of one chain of `n` one-call
/// functions (`scripts/gen-shared-chain.py`'s shape).
fn shared_chain(k: usize, n: usize) -> String {
    let mut out = format!("field @out : i32[{k}]\n");
    for i in 0..n {
        if i + 1 == n {
            out += &format!("func @f{i}(%x: i32) -> i32 {{\n  ret %x\n}}\n");
        } else {
            out += &format!("func @f{i}(%x: i32) -> i32 {{\n  %r = call @f{}(%x)\n  ret %r\n}}\n", i + 1);
        }
    }
    for j in 0..k {
        out += &format!("kernel @k{j}() {{\n  %j = const {j} : i32\n  %v = call @f0(%j)\n  store @out[%j], %v\n}}\n");
    }
    out
}

/// The chain of 100 functions makes 68 records: `@f0` … `@f67` (each 64
/// statements or more with its callees inlined), the rest copied.
const KERNELS: usize = 12;
const RECORDS: u64 = 68;

fn input(dir: &Path) -> PathBuf {
    let p = dir.join("chain.kir");
    std::fs::write(&p, shared_chain(KERNELS, 100)).unwrap();
    p
}

/// `kiln-run FILE --stats=json --print out` with `extra`; the printed
/// field and the counters.
fn run(home: &Path, file: &Path, extra: &[&str]) -> (String, Value) {
    let mut c = common::tool(RUN, home);
    c.env_remove("KILN_REMOTE").arg(file).args(["--stats=json", "--print", "out", "-O1"]).args(extra);
    let out = common::ok(c);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no stats in:\n{stderr}"));
    (String::from_utf8_lossy(&out.stdout).into_owned(), serde_json::from_str(line).unwrap())
}

fn n(stats: &Value, name: &str) -> u64 {
    stats[name].as_u64().unwrap_or_else(|| panic!("no counter {name} in {stats}"))
}

fn expected() -> String {
    let values: Vec<String> = (0..KERNELS).map(|j| j.to_string()).collect();
    format!("@out : i32[{KERNELS}] = [{}]\n", values.join(", "))
}

#[test]
fn each_function_is_compiled_once_and_loaded_from_the_cache_after() {
    let dir = tempfile::tempdir().unwrap();
    let file = input(dir.path());
    let cache = dir.path().join("cache");
    let cache = cache.to_str().unwrap();
    let (out, cold) = run(dir.path(), &file, &["--cache-dir", cache]);
    assert_eq!(out, expected());
    assert_eq!((n(&cold, "compiled"), n(&cold, "functions_compiled")), (KERNELS as u64, RECORDS), "{cold}");
    assert_eq!(n(&cold, "stored"), KERNELS as u64 + RECORDS, "{cold}");
    let (out, warm) = run(dir.path(), &file, &["--cache-dir", cache]);
    assert_eq!(out, expected());
    assert_eq!((n(&warm, "hits"), n(&warm, "compiled")), (KERNELS as u64, 0), "{warm}");
    assert_eq!((n(&warm, "function_hits"), n(&warm, "functions_compiled")), (RECORDS, 0), "{warm}");
    // kiln-cache-inspect lists them by kind and verifies them as records.
    let mut c = common::tool(INSPECT, dir.path());
    c.args(["list", "--cache-dir", cache]);
    let list = String::from_utf8(common::ok(c).stdout).unwrap();
    let kinds = |k: &str| list.lines().filter(|l| l.split_whitespace().nth(2) == Some(k)).count();
    assert_eq!((kinds("function") as u64, kinds("serial")), (RECORDS, KERNELS), "{list}");
    let mut c = common::tool(INSPECT, dir.path());
    c.args(["verify", "--cache-dir", cache]);
    common::ok(c);
}

#[test]
fn kiln_compile_fills_the_records_that_kiln_run_then_loads() {
    let dir = tempfile::tempdir().unwrap();
    let file = input(dir.path());
    let cache = dir.path().join("cache");
    let cache = cache.to_str().unwrap();
    let mut c = common::tool(COMPILE, dir.path());
    c.arg(&file).args(["-O1", "--cache-dir", cache, "--stats=json"]);
    let out = common::ok(c);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let filled: Value = serde_json::from_str(stderr.lines().rev().find(|l| l.starts_with('{')).unwrap()).unwrap();
    assert_eq!(n(&filled, "functions_compiled"), RECORDS, "{filled}");
    let (out, warm) = run(dir.path(), &file, &["--cache-dir", cache]);
    assert_eq!(out, expected());
    assert_eq!((n(&warm, "function_hits"), n(&warm, "functions_compiled"), n(&warm, "compiled")), (RECORDS, 0, 0));
}

#[test]
fn kiln_compile_writes_each_record_once_beside_the_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let file = input(dir.path());
    let objs = dir.path().join("objs");
    let mut c = common::tool(COMPILE, dir.path());
    c.arg(&file).arg("-o").arg(format!("{}/", objs.display()));
    common::ok(c);
    let names: Vec<String> =
        std::fs::read_dir(&objs).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    let records = names.iter().filter(|n| n.starts_with("fn.") && n.ends_with(".o")).count();
    assert_eq!((names.len() - records, records as u64), (KERNELS, RECORDS), "{names:?}");
}

/// The keys of the function records of `file`, from `kiln-compile -o`'s
/// file names.
fn record_keys(home: &Path, file: &Path) -> Vec<String> {
    let objs = home.join("keys-objs");
    let mut c = common::tool(COMPILE, home);
    c.arg(file).args(["-O1", "-o"]).arg(format!("{}/", objs.display()));
    common::ok(c);
    let mut keys: Vec<String> = std::fs::read_dir(&objs)
        .unwrap()
        .filter_map(|e| {
            e.unwrap().file_name().to_string_lossy().strip_prefix("fn.")?.strip_suffix(".o").map(str::to_string)
        })
        .collect();
    keys.sort();
    keys
}

/// The record file of `key` under `root`.
fn record_file(root: &Path, key: &str) -> PathBuf {
    let mut pending = vec![root.to_path_buf()];
    while let Some(d) = pending.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                pending.push(p);
            } else if p.file_name().unwrap().to_string_lossy().starts_with(&key[2..])
                && p.extension().is_some_and(|x| x != "lock")
            {
                return p;
            }
        }
    }
    panic!("no record of {key} under {}", root.display())
}

#[test]
fn a_damaged_function_record_is_caught_and_compiled_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let file = input(dir.path());
    let cache = dir.path().join("cache");
    let cache_s = cache.to_str().unwrap();
    run(dir.path(), &file, &["--cache-dir", cache_s]);
    let keys = record_keys(dir.path(), &file);
    assert_eq!(keys.len() as u64, RECORDS);
    let victim = record_file(&cache, &keys[7]);
    let mut bytes = std::fs::read(&victim).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&victim, bytes).unwrap();
    let (out, again) = run(dir.path(), &file, &["--cache-dir", cache_s]);
    assert_eq!(out, expected());
    assert_eq!(n(&again, "corrupt_replaced"), 1, "{again}");
    assert_eq!((n(&again, "function_hits"), n(&again, "functions_compiled")), (RECORDS - 1, 1), "{again}");
    let (_, third) = run(dir.path(), &file, &["--cache-dir", cache_s]);
    assert_eq!((n(&third, "function_hits"), n(&third, "functions_compiled")), (RECORDS, 0), "{third}");
}

#[test]
fn a_machine_loads_the_function_records_another_stored_in_the_remote() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = input(dir.path());
    let url = server.url();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let (_, first) = run(dir.path(), &file, &["--cache-dir", a.to_str().unwrap(), "--remote", &url]);
    assert_eq!(n(&first, "functions_compiled"), RECORDS, "{first}");
    let (out, second) = run(dir.path(), &file, &["--cache-dir", b.to_str().unwrap(), "--remote", &url]);
    assert_eq!(out, expected());
    assert_eq!((n(&second, "function_hits"), n(&second, "functions_compiled")), (RECORDS, 0), "{second}");
    assert_eq!(n(&second, "compiled"), 0, "{second}");
}

#[test]
fn an_error_in_a_function_is_located_at_its_statement_beside_records() {
    let dir = tempfile::tempdir().unwrap();
    // @bad reads past @out and is copied into the task (it touches a
    // field); the task also calls the chain's records.
    let src = shared_chain(1, 100).replace(
        "kernel @k0() {\n  %j = const 0 : i32\n",
        "func @bad(%i: i32) -> i32 {\n  %v = load @out[%i]\n  ret %v\n}\nkernel @k0() {\n  %j = const 0 : i32\n  %far = const 7 : i32\n  %b = call @bad(%far)\n",
    );
    let file = dir.path().join("bad.kir");
    std::fs::write(&file, &src).unwrap();
    let line = src.lines().position(|l| l.contains("load @out[%i]")).unwrap() + 1;
    for engine in [vec!["--engine", "interp"], vec!["--cache-dir", dir.path().join("c").to_str().unwrap()]] {
        let mut c = common::tool(RUN, dir.path());
        c.env_remove("KILN_REMOTE").arg(&file).args(&engine);
        let out = c.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{engine:?}: {stderr}");
        assert!(stderr.contains(&format!("bad.kir:{line}:")), "{engine:?}: {stderr}");
    }
}

/// Starts `kiln-run` on `file` once per cache directory of `caches`
/// together (each compile batch slowed, so the first holders are still
/// compiling when the others look), with `extra`; each run's counters.
fn together(home: &Path, file: &Path, caches: &[PathBuf], extra: &[&str]) -> Vec<Value> {
    let children: Vec<std::process::Child> = caches
        .iter()
        .map(|cache| {
            let mut c = common::tool(RUN, home);
            c.env_remove("KILN_REMOTE").env_remove("KILN_COMPILE_WAIT").env("KILN_TEST_COMPILE_DELAY", "300ms");
            c.arg(file).args(["--stats=json", "--print", "out", "-O1", "--cache-dir"]).arg(cache).args(extra);
            c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "kiln-run failed:\n{stderr}");
            assert_eq!(String::from_utf8_lossy(&out.stdout), expected());
            assert!(!stderr.contains("warning"), "{stderr}");
            let line = stderr.lines().rev().find(|l| l.starts_with('{')).unwrap();
            serde_json::from_str(line).unwrap()
        })
        .collect()
}

fn total(runs: &[Value], name: &str) -> u64 {
    runs.iter().map(|r| n(r, name)).sum()
}

#[test]
fn processes_on_one_cold_cache_compile_each_function_record_once_in_all() {
    let dir = tempfile::tempdir().unwrap();
    let file = input(dir.path());
    let cache = dir.path().join("cache");
    let runs = together(dir.path(), &file, &[cache.clone(), cache.clone(), cache], &[]);
    assert_eq!(total(&runs, "functions_compiled"), RECORDS, "{runs:?}");
    assert_eq!(total(&runs, "compiled"), KERNELS as u64, "{runs:?}");
    assert_eq!(common::lock_files(dir.path()), 0, "every lock file goes with its record");
}

#[test]
fn machines_on_one_redis_compile_each_function_record_once_in_all() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = input(dir.path());
    let caches: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("m{i}"))).collect();
    let runs = together(dir.path(), &file, &caches, &["--remote", &server.url()]);
    assert_eq!(total(&runs, "functions_compiled"), RECORDS, "{runs:?}");
    assert_eq!(total(&runs, "compiled"), KERNELS as u64, "{runs:?}");
}
