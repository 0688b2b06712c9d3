//! The cached per-task path with real processes: the built `kiln-run`,
//! `kiln-compile`, `kiln-key` and `kiln-cache-inspect` binaries on a cache
//! directory of each test's own.
//!
//! Every run compiles at -O0 (the point here is caching, not code
//! quality) and is checked against the interpreter's field digests, so a
//! run that loaded a wrong object fails even when the counters look right.

#[path = "../../../tests/common/mod.rs"]
mod common;

use common::{kiln_key_tasks, ok, tool};
use kiln::cache::{Key, Lookup};
use kiln::config::LaunchMeta;
use kiln_llvm::session;
use kiln_llvm::HostTarget;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;

const RUN: &str = env!("CARGO_BIN_EXE_kiln-run");
const COMPILE: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-compile");
const INSPECT: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-cache-inspect");

fn testdata(name: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("testdata").join(name)
}

/// The result of one `kiln-run --digest --stats=json`.
struct Run {
    digests: String,
    stats: Value,
}

impl Run {
    fn count(&self, name: &str) -> u64 {
        self.stats[name].as_u64().unwrap_or_else(|| panic!("no counter {name} in {}", self.stats))
    }

    /// (hits, misses, corrupt replaced, compiled).
    fn outcome(&self) -> (u64, u64, u64, u64) {
        (self.count("hits"), self.count("misses"), self.count("corrupt_replaced"), self.count("compiled"))
    }
}

fn stats_json(stderr: &[u8]) -> Value {
    let text = String::from_utf8_lossy(stderr);
    let line = text.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no JSON stats in:\n{text}"));
    serde_json::from_str(line).expect("stats JSON")
}

fn run_with(home: &Path, file: &Path, extra: &[&str]) -> Run {
    let mut c = tool(RUN, home);
    c.arg(file).args(["--digest", "--stats=json", "-O0", "--threads", "1"]).args(extra);
    let out = ok(c);
    Run { digests: String::from_utf8(out.stdout).unwrap(), stats: stats_json(&out.stderr) }
}

fn run_cached(home: &Path, cache: &Path, file: &Path) -> Run {
    run_with(home, file, &["--cache-dir", cache.to_str().unwrap()])
}

fn interp_digests(home: &Path, file: &Path) -> String {
    let mut c = tool(RUN, home);
    c.arg(file).args(["--digest", "--engine", "interp"]);
    String::from_utf8(ok(c).stdout).unwrap()
}

fn key_of(home: &Path, file: &Path, task: &str) -> Key {
    kiln_key_tasks(home, file).into_iter().find(|(t, _)| t == task).unwrap_or_else(|| panic!("no task @{task}")).1
}

/// `kiln-cache-inspect verify` must succeed and report nothing bad.
fn verify_clean(home: &Path, cache: &Path) {
    let mut c = tool(INSPECT, home);
    c.args(["--cache-dir", cache.to_str().unwrap(), "--json", "verify"]);
    let out = ok(c);
    let report: Value = serde_json::from_slice(&out.stdout).expect("verify JSON");
    assert_eq!(report["bad"].as_array().map(Vec::len), Some(0), "{report}");
}

/// Every record file under a scope directory: shard + name → key.
fn record_keys(scope_dir: &Path) -> BTreeSet<Key> {
    let mut out = BTreeSet::new();
    for shard in std::fs::read_dir(scope_dir).unwrap().flatten() {
        if !shard.file_type().unwrap().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(shard.path()).unwrap().flatten() {
            let name = f.file_name().into_string().unwrap();
            if let Some(stem) = name.strip_suffix(".kobj") {
                out.insert(format!("{}{stem}", shard.file_name().to_str().unwrap()).parse().unwrap());
            }
        }
    }
    out
}

/// The scope directories under a cache root.
fn scope_dirs(cache: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(cache)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && p.join("host.json").is_file())
        .collect();
    v.sort();
    v
}

fn this_host_scope_dir(cache: &Path) -> PathBuf {
    cache.join(session::host_scope(&HostTarget::detect().unwrap()).name())
}

/// `ten_tasks.kir` with the constant of its loop 7 changed.
fn edited_ten_tasks(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(testdata("ten_tasks.kir")).unwrap();
    let edited = text.replace("%k7 = const 1000.0 : f32", "%k7 = const 999.0 : f32");
    assert_ne!(text, edited);
    let p = dir.join("ten_tasks_edited.kir");
    std::fs::write(&p, edited).unwrap();
    p
}

#[test]
fn second_process_loads_everything_and_matches_both_other_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, cache) = (tmp.path(), tmp.path().join("c"));
    let file = testdata("ten_tasks.kir");
    let cold = run_cached(home, &cache, &file);
    assert_eq!(cold.outcome(), (0, 10, 0, 10));
    assert_eq!((cold.count("tasks"), cold.count("stored"), cold.count("whole_kernel_tasks")), (10, 10, 0));
    assert!(cold.count("bytes_written") > 0);

    let warm = run_cached(home, &cache, &file);
    assert_eq!(warm.outcome(), (10, 0, 0, 0), "{}", warm.stats);
    assert_eq!((warm.count("stored"), warm.count("bytes_written")), (0, 0));
    assert_eq!(warm.count("bytes_read"), cold.count("bytes_written"));

    let interp = interp_digests(home, &file);
    let whole = run_with(home, &file, &["--no-cache"]);
    assert_eq!(whole.count("whole_kernel_tasks"), 10);
    assert_eq!(whole.stats["cache_dir"], Value::Null);
    assert!(!interp.is_empty());
    assert_eq!(cold.digests, interp);
    assert_eq!(warm.digests, interp);
    assert_eq!(whole.digests, interp);

    // The records are exactly the keys kiln-key prints.
    let expected: BTreeSet<Key> = kiln_key_tasks(home, &file).into_iter().map(|(_, k)| k).collect();
    assert_eq!(expected.len(), 10);
    assert_eq!(scope_dirs(&cache), vec![this_host_scope_dir(&cache)]);
    assert_eq!(record_keys(&this_host_scope_dir(&cache)), expected);
    verify_clean(home, &cache);
}

#[test]
fn editing_one_loop_recompiles_one_task() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, cache) = (tmp.path(), tmp.path().join("c"));
    let edited = edited_ten_tasks(tmp.path());
    run_cached(home, &cache, &testdata("ten_tasks.kir"));
    let r = run_cached(home, &cache, &edited);
    assert_eq!(r.outcome(), (9, 1, 0, 1), "{}", r.stats);
    assert_eq!(r.digests, interp_digests(home, &edited));
    assert_ne!(r.digests, interp_digests(home, &testdata("ten_tasks.kir")));
}

/// Two kernels whose loops are the same computation under other names
/// (kernel, task, values, parameter): one key, one record.
const TWINS: &str = "\
field @a : f32[64]
field @total : f32

kernel @first(%s: f32 = 2.0) {
  for %i in 0 .. 64 {
    %f = cast %i to f32
    %v = mul %f, %s
    store @a[%i], %v
  }
}

kernel @second(%unused: i32 = 7, %t: f32 = 3.0) {
  for %j in 0 .. 64 {
    %g = cast %j to f32
    %w = mul %g, %t
    store @a[%j], %w
  }
}
";

#[test]
fn identical_tasks_of_two_kernels_compile_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, cache) = (tmp.path(), tmp.path().join("c"));
    let file = tmp.path().join("twins.kir");
    std::fs::write(&file, TWINS).unwrap();
    let ks = kiln_key_tasks(home, &file);
    assert_eq!(ks.len(), 2);
    assert_eq!(ks[0].1, ks[1].1, "the twins should share a key: {ks:?}");

    // One process: the first kernel compiles, the second hits (and binds
    // its own parameter %t, not the stored record's %s).
    let both = run_cached(home, &cache, &file);
    assert_eq!(both.outcome(), (1, 1, 0, 1), "{}", both.stats);
    assert_eq!(both.digests, interp_digests(home, &file));

    // Two processes on a fresh cache: one compile, then a hit.
    let cache2 = tmp.path().join("c2");
    let first = run_with(home, &file, &["--cache-dir", cache2.to_str().unwrap(), "--kernel", "@first"]);
    let second = run_with(home, &file, &["--cache-dir", cache2.to_str().unwrap(), "--kernel", "@second"]);
    assert_eq!(first.outcome(), (0, 1, 0, 1));
    assert_eq!(second.outcome(), (1, 0, 0, 0));
    let mut c = tool(RUN, home);
    c.arg(&file).args(["--digest", "--engine", "interp", "--kernel", "@second"]);
    assert_eq!(second.digests, String::from_utf8(ok(c).stdout).unwrap());
    assert_eq!(record_keys(&this_host_scope_dir(&cache2)).len(), 1);
}

/// A way to damage a record file in place.
type Damage = fn(&mut Vec<u8>);
/// A way to change a record's object before storing it again.
type Patch = fn(Vec<u8>) -> Vec<u8>;

/// Re-stores the record of `key` with its object replaced by
/// `patch(object)`, through the store's own `put`, so the checksum is
/// right and only loading can find the problem.
fn restore_with_object(cache: &Path, key: &Key, patch: impl FnOnce(Vec<u8>) -> Vec<u8>) {
    restore_with(cache, key, |meta, object| (meta, patch(object)));
}

/// Re-stores the record of `key` with its metadata and object replaced,
/// through the store's own `put`.
fn restore_with(cache: &Path, key: &Key, patch: impl FnOnce(LaunchMeta, Vec<u8>) -> (LaunchMeta, Vec<u8>)) {
    let store = session::open_store(cache, &HostTarget::detect().unwrap(), Default::default()).unwrap();
    let Lookup::Hit(record) = store.get(key).unwrap() else { panic!("no record for {key}") };
    let (meta, object) = patch(record.meta, record.object);
    store.put(key, &meta, &object).unwrap();
}

/// Metadata that launches differently from the task (a field one element
/// longer than the object's bounds checks assume).
fn mismatched_meta(mut meta: LaunchMeta, object: Vec<u8>) -> (LaunchMeta, Vec<u8>) {
    meta.fields[0].shape[0] += 1;
    (meta, object)
}

/// Renames the undefined symbol `_GLOBAL_OFFSET_TABLE_` (every x86-64
/// object of the large code model references it) to `_GLOBAL_OFFSET_TABLQ_`,
/// a symbol no process has: the object still parses and adds, but cannot
/// link.
fn unlinkable(mut object: Vec<u8>) -> Vec<u8> {
    let name = b"_GLOBAL_OFFSET_TABLE_\0";
    let at = object.windows(name.len()).position(|w| w == name).expect("the object references the GOT");
    object[at + 19] = b'Q';
    object
}

#[test]
fn every_kind_of_damage_is_replaced_and_the_run_is_correct() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let file = testdata("ten_tasks.kir");
    let expected = interp_digests(home, &file);
    // Task 1 computes `sin` (Kiln's own, inline: no libm call).
    let key = key_of(home, &file, "ten_tasks.1");

    let in_file: [(&str, Damage); 8] = [
        ("truncated", |b| b.truncate(b.len() * 2 / 3)),
        ("zero length", |b| b.clear()),
        ("wrong magic", |b| b[0] ^= 0x20),
        ("wrong version", |b| b[8] = b[8].wrapping_add(1)),
        ("flipped header byte", |b| b[40] ^= 0x01),
        ("flipped metadata byte", |b| b[64] ^= 0x04),
        ("flipped object byte", |b| {
            let n = b.len() - 32 - 64;
            b[n] ^= 0x80
        }),
        ("flipped checksum byte", |b| {
            let n = b.len() - 1;
            b[n] ^= 0x10
        }),
    ];
    let through_put: [(&str, Patch); 2] = [
        ("object that does not link", unlinkable),
        ("object that does not add", |o| o.iter().map(|b| b.wrapping_mul(31).wrapping_add(7)).collect()),
    ];
    let cases = in_file.len() + through_put.len() + 1;
    for case in 0..cases {
        let cache = tmp.path().join(format!("c{case}"));
        let cold = run_cached(home, &cache, &file);
        assert_eq!(cold.count("stored"), 10);
        let record = this_host_scope_dir(&cache).join(key.shard()).join(key.file_name());
        let what = if case < in_file.len() {
            let (what, damage) = in_file[case];
            let mut bytes = std::fs::read(&record).unwrap();
            damage(&mut bytes);
            std::fs::write(&record, &bytes).unwrap();
            what
        } else if case < in_file.len() + through_put.len() {
            let (what, patch) = through_put[case - in_file.len()];
            restore_with_object(&cache, &key, patch);
            what
        } else {
            restore_with(&cache, &key, mismatched_meta);
            "metadata that does not match the task"
        };
        let r = run_cached(home, &cache, &file);
        assert_eq!(r.outcome(), (9, 0, 1, 1), "{what}: {}", r.stats);
        assert_eq!(r.count("stored"), 1, "{what}");
        assert_eq!(r.digests, expected, "{what}");
        verify_clean(home, &cache);
        // The replacement is healthy: the next process loads everything.
        let again = run_cached(home, &cache, &file);
        assert_eq!(again.outcome(), (10, 0, 0, 0), "{what}: {}", again.stats);
        assert_eq!(again.digests, expected, "{what}");
    }
}

#[test]
fn eight_processes_on_a_cold_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, cache) = (tmp.path(), tmp.path().join("c"));
    let files = [testdata("ten_tasks.kir"), edited_ten_tasks(tmp.path())];
    let expected: Vec<String> = files.iter().map(|f| interp_digests(home, f)).collect();
    let children: Vec<_> = (0..8)
        .map(|i| {
            let mut c = tool(RUN, home);
            c.arg(&files[i % 2])
                .args(["--digest", "--stats=json", "-O0", "--threads", "1", "--cache-dir"])
                .arg(&cache)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            (i, c.spawn().expect("spawn"))
        })
        .collect();
    let mut compiled = 0;
    for (i, child) in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "process {i}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected[i % 2], "process {i}");
        let stats = stats_json(&out.stderr);
        assert_eq!(stats["corrupt_replaced"], 0, "process {i}: {stats}");
        compiled += stats["compiled"].as_u64().unwrap();
    }
    // 11 distinct tasks; racing processes may each compile one.
    assert!((11..=80).contains(&compiled), "{compiled}");
    assert_eq!(record_keys(&this_host_scope_dir(&cache)).len(), 11);
    verify_clean(home, &cache);
    let warm = run_cached(home, &cache, &files[1]);
    assert_eq!(warm.outcome(), (10, 0, 0, 0));
}

/// Two simulated hosts (CPU names whose code this machine can run: the
/// features stay the detected ones) share one cache directory: each gets
/// its own scope, and neither ever loads the other's objects although
/// their keys are the same.
#[cfg(target_arch = "x86_64")]
#[test]
fn simulated_hosts_never_share_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, cache) = (tmp.path(), tmp.path().join("c"));
    let file = testdata("ten_tasks.kir");
    let expected = interp_digests(home, &file);
    let cache_arg = cache.to_str().unwrap();
    let on = |cpu: &str| run_with(home, &file, &["--cache-dir", cache_arg, "--target-cpu", cpu]);
    let (a, b) = ("x86-64", "x86-64-v2");
    assert_eq!(on(a).outcome(), (0, 10, 0, 10));
    let b_cold = on(b);
    assert_eq!(b_cold.outcome(), (0, 10, 0, 10), "host B loaded host A's objects: {}", b_cold.stats);
    let (a_warm, b_warm) = (on(a), on(b));
    assert_eq!(a_warm.outcome(), (10, 0, 0, 0));
    assert_eq!(b_warm.outcome(), (10, 0, 0, 0));
    assert_ne!(a_warm.stats["scope"], b_warm.stats["scope"]);
    for r in [&b_cold, &a_warm, &b_warm] {
        assert_eq!(r.digests, expected);
    }
    let scopes = scope_dirs(&cache);
    assert_eq!(scopes.len(), 2, "{scopes:?}");
    let keys0 = record_keys(&scopes[0]);
    assert_eq!(keys0.len(), 10);
    assert_eq!(keys0, record_keys(&scopes[1]));
    // The environment selects a simulated host too.
    let mut c = tool(RUN, home);
    c.arg(&file).args(["--digest", "--stats=json", "-O0", "--cache-dir", cache_arg]).env("KILN_TARGET_CPU", "x86-64");
    let out = ok(c);
    let s = stats_json(&out.stderr);
    assert_eq!((s["scope"].clone(), s["hits"].as_u64()), (a_warm.stats["scope"].clone(), Some(10)));

    // A host this machine may not be able to run (AVX-512 everywhere) is
    // kiln-compile's to fill; this host's kiln-run never loads from it.
    let mut c = tool(COMPILE, home);
    c.arg(&file).args([
        "-O0",
        "--cache-dir",
        cache_arg,
        "--target-cpu",
        "sapphirerapids",
        "--target-features=+avx512f",
    ]);
    let out = ok(c);
    assert!(String::from_utf8_lossy(&out.stderr).contains("10 tasks: 0 hits, 10 misses"), "{out:?}");
    let native = run_cached(home, &cache, &file);
    assert_eq!(native.outcome(), (0, 10, 0, 10));
    assert_eq!(native.digests, expected);
    assert_eq!(scope_dirs(&cache).len(), 4);
    verify_clean(home, &cache);
}

/// A run takes this host from the cache's `hosts/` entry when a process
/// of this build wrote it in this boot, and detects it otherwise. The
/// entry is planted naming another CPU (one this machine can run the
/// code of), so which one a run took shows in the scope it used.
#[cfg(target_arch = "x86_64")]
#[test]
fn a_run_takes_this_host_from_this_boots_entry_only() {
    use kiln::cache::host::{boot_id, machine_tag, NativeFile};
    // Without a boot id (no /proc) nothing is recalled: runs detect, as
    // the store's tests check.
    if boot_id().is_none() || machine_tag().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (home, cache) = (tmp.path(), tmp.path().join("c"));
    let file = testdata("ten_tasks.kir");
    let expected = interp_digests(home, &file);
    let detected_run = run_cached(home, &cache, &file);
    let detected_scope = detected_run.stats["scope"].clone();
    let entry_path = cache.join("hosts").join(format!("{}.json", machine_tag().unwrap()));
    let entry: NativeFile = serde_json::from_slice(&std::fs::read(&entry_path).unwrap()).unwrap();
    let memo = entry.detected.clone().expect("the entry keeps what was detected");
    assert_eq!(
        (memo.build.as_str(), memo.host.clone().into()),
        (kiln::config::BUILD_ID, HostTarget::detect().unwrap())
    );
    assert_eq!(entry.recall(), Some(memo.host.clone()));

    let plant = |boot: &str, build: &str| {
        let mut planted = entry.clone();
        let memo = planted.detected.as_mut().unwrap();
        (memo.boot, memo.build, memo.host.cpu) = (boot.into(), build.into(), "x86-64".into());
        planted.scope = memo.host.scope().name();
        std::fs::write(&entry_path, serde_json::to_vec(&planted).unwrap()).unwrap();
        planted.scope
    };
    // This boot, this build: the entry's host is taken, not detected.
    let simulated_scope = plant(&memo.boot, &memo.build);
    let recalled = run_cached(home, &cache, &file);
    assert_eq!(recalled.stats["scope"], simulated_scope.as_str(), "{}", recalled.stats);
    assert_eq!((recalled.outcome(), recalled.digests.as_str()), ((0, 10, 0, 10), expected.as_str()));
    // Another boot, or another build: detected again, and the entry made
    // this boot's again.
    for (boot, build) in [("00000000-0000-4000-8000-000000000000", memo.build.as_str()), (&memo.boot, "0123abcd")] {
        plant(boot, build);
        let detected = run_cached(home, &cache, &file);
        assert_eq!(detected.stats["scope"], detected_scope, "{boot} {build}: {}", detected.stats);
        assert_eq!((detected.outcome(), detected.digests.as_str()), ((10, 0, 0, 0), expected.as_str()));
        let rewritten: NativeFile = serde_json::from_slice(&std::fs::read(&entry_path).unwrap()).unwrap();
        assert_eq!(rewritten, entry);
    }
}

#[test]
fn kiln_compile_fills_the_cache_kiln_run_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, cache) = (tmp.path(), tmp.path().join("c"));
    let file = testdata("ten_tasks.kir");
    let fill = || {
        let mut c = tool(COMPILE, home);
        c.arg(&file).args(["-O0", "--stats=json", "--cache-dir"]).arg(&cache).current_dir(tmp.path());
        let out = ok(c);
        assert!(out.stdout.is_empty());
        stats_json(&out.stderr)
    };
    let first = fill();
    assert_eq!(
        (first["tasks"].as_u64(), first["misses"].as_u64(), first["stored"].as_u64()),
        (Some(10), Some(10), Some(10))
    );
    // No object files beside the cache without -o.
    assert!(!std::fs::read_dir(tmp.path()).unwrap().flatten().any(|e| e.path().extension().is_some_and(|x| x == "o")));
    let second = fill();
    assert_eq!((second["hits"].as_u64(), second["compiled"].as_u64()), (Some(10), Some(0)));
    let run = run_cached(home, &cache, &file);
    assert_eq!(run.outcome(), (10, 0, 0, 0));
    assert_eq!(run.digests, interp_digests(home, &file));
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files_under(&p));
                out.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn no_cache_touches_no_file_and_the_default_root_is_the_environments() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("h");
    std::fs::create_dir(&home).unwrap();
    // The store reports its root canonicalised.
    let home = home.canonicalize().unwrap();
    let file = testdata("ten_tasks.kir");
    let whole = run_with(&home, &file, &["--no-cache"]);
    assert_eq!(whole.count("whole_kernel_tasks"), 10);
    assert_eq!(files_under(&home), Vec::<PathBuf>::new(), "--no-cache created files");

    // Without --cache-dir: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln,
    // else $HOME/.cache/kiln.
    let cached = run_with(&home, &file, &[]);
    assert_eq!(cached.count("misses"), 10);
    assert_eq!(cached.stats["cache_dir"].as_str(), Some(home.join("env-cache").to_str().unwrap()));
    let mut c = tool(RUN, &home);
    c.arg(&file).args(["--stats=json", "-O0"]).env_remove("KILN_CACHE_DIR");
    let s = stats_json(&ok(c).stderr);
    assert_eq!(s["cache_dir"].as_str(), Some(home.join("xdg/kiln").to_str().unwrap()));
    let mut c = tool(RUN, &home);
    c.arg(&file).args(["--stats=json", "-O0"]).env_remove("KILN_CACHE_DIR").env_remove("XDG_CACHE_HOME");
    let s = stats_json(&ok(c).stderr);
    assert_eq!(s["cache_dir"].as_str(), Some(home.join("home/.cache/kiln").to_str().unwrap()));
    assert_eq!(s["hits"], 0);
}

/// `kiln-run` compiles in the `kiln-compile` beside it: copied alone into
/// a directory of its own it still runs a warm cache (a hit needs no
/// compiler), a miss is one clear error naming the program it looked for,
/// and a failing compiler's message, exit status and the build it was
/// asked to be reach the user.
#[test]
fn kiln_run_compiles_in_the_kiln_compile_beside_it() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let (home, cache) = (tmp.path(), tmp.path().join("c"));
    let file = testdata("ten_tasks.kir");
    let lone = tmp.path().join("bin");
    std::fs::create_dir(&lone).unwrap();
    let lone_run = lone.join("kiln-run");
    std::fs::copy(RUN, &lone_run).unwrap();
    let run_lone = |extra: &[&str]| {
        let mut c = tool(lone_run.to_str().unwrap(), home);
        c.arg(&file).args(["--digest", "-O0"]).args(extra);
        c.output().unwrap()
    };
    let with_cache = ["--cache-dir", cache.to_str().unwrap()];

    let out = run_lone(&with_cache);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let missing = lone.join("kiln-compile");
    assert!(err.contains(&format!("cannot run the compiler {}", missing.display())), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    // Filled by the pair, the cache serves the lone kiln-run.
    run_cached(home, &cache, &file);
    let out = run_lone(&[&with_cache[..], &["--stats=json"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stats_json(&out.stderr)["hits"].as_u64(), Some(10));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), interp_digests(home, &file));

    // A compiler that fails: what it said, and how it ended.
    let args = tmp.path().join("args");
    let script =
        format!("#!/bin/sh\necho \"$@\" > {}\necho 'kiln-compile: error: out of luck' >&2\nexit 3\n", args.display());
    std::fs::write(&missing, script).unwrap();
    std::fs::set_permissions(&missing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = run_lone(&["--no-cache"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("failed (exit status 3): error: out of luck"), "{err}");
    let args = std::fs::read_to_string(&args).unwrap();
    // The configuration goes whole, as the key hashes it: the build
    // identity and the -O level with it.
    let wire = kiln::key::config_json(&kiln::config::CompileConfig {
        opt_level: kiln::config::OptLevel::O0,
        ..Default::default()
    });
    assert!(args.contains(&format!("--compile-config={wire}")), "{args}");
    assert!(args.contains(&format!("\"build_id\":\"{}\"", kiln::config::BUILD_ID)), "{args}");
    assert!(args.contains("--kernel ten_tasks"), "{args}");
}

/// The configuration crosses the process boundary whole: every field of
/// a non-default configuration reaches the `kiln-compile` child (its
/// objects are byte for byte the in-process compiler's under that
/// configuration, and not the default's), and a configuration with a
/// field the child does not know, or of another build, is refused rather
/// than compiled with the field dropped.
#[test]
fn the_compile_configuration_reaches_the_child_whole() {
    use kiln::config::{CodeModel, CompileConfig, OptLevel};
    use kiln_codegen::Compiler;
    use kiln_llvm::{Backend, CompileProcess};
    let text = std::fs::read_to_string(testdata("ten_tasks.kir")).unwrap();
    let stream = kiln::passes::to_task_stream(kiln::parser::parse(&text).unwrap()).unwrap();
    let modules: Vec<&kiln::ir::Module> = kiln::plan::task_modules(&stream).map(|(m, _)| m).take(3).collect();
    let target = HostTarget::detect().unwrap();
    let config = CompileConfig {
        opt_level: OptLevel::O3,
        fast_math: true,
        bounds_checks: false,
        code_model: CodeModel::Small,
        ..CompileConfig::default()
    };
    let objects = |b: &dyn Backend| -> Vec<Vec<u8>> {
        b.compile_tasks(&modules).into_iter().map(|r| r.unwrap().object).collect()
    };
    let child = CompileProcess::new(config.clone(), target.clone(), COMPILE.into()).unwrap();
    let here = Compiler::new(config, target.clone()).unwrap();
    let default = Compiler::new(CompileConfig::default(), target).unwrap();
    let from_child = objects(&child);
    assert_eq!(from_child, objects(&here), "the child compiled another configuration");
    assert_ne!(from_child, objects(&default), "the configuration made no difference: the test shows nothing");

    // A field added to a copy of the configuration is received, and
    // refused by a build that cannot honour it.
    let tmp = tempfile::tempdir().unwrap();
    let mut added: Value = serde_json::from_str(&kiln::key::config_json(&CompileConfig::default())).unwrap();
    added["vector_width"] = Value::from(4);
    let other_build = kiln::key::config_json(&CompileConfig { build_id: "0123".into(), ..CompileConfig::default() });
    for (wire, says) in
        [(added.to_string(), "unknown field `vector_width`"), (other_build, "build_id is 0123, but this build's is")]
    {
        let mut c = tool(COMPILE, tmp.path());
        c.arg(testdata("ten_tasks.kir")).arg(format!("--compile-config={wire}")).arg("-o").arg(tmp.path().join("out/"));
        let out = c.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("cannot honour the compile configuration") && err.contains(says), "{err}");
        assert!(!tmp.path().join("out").exists());
    }
    // The configuration comes whole or from flags, never both.
    let wire = kiln::key::config_json(&CompileConfig::default());
    for flag in ["-O3", "--fast-math", "--no-bounds-checks", "--code-model=small"] {
        let mut c = tool(COMPILE, tmp.path());
        c.arg(testdata("ten_tasks.kir")).arg(format!("--compile-config={wire}")).arg(flag);
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// `kiln-compile --build-id` refuses to be another build than the one
/// asked for (`kiln-run` asks for its own).
#[test]
fn kiln_compile_refuses_another_build() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = tool(COMPILE, tmp.path());
    c.arg(testdata("ten_tasks.kir")).args(["--build-id=0123", "-o"]).arg(tmp.path().join("out/"));
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("this is build {}, but build 0123 was asked for", kiln::config::BUILD_ID)), "{err}");
    assert!(!tmp.path().join("out").exists());
    let mut c = tool(COMPILE, tmp.path());
    c.arg(testdata("ten_tasks.kir"))
        .arg(format!("--build-id={}", kiln::config::BUILD_ID))
        .arg("-o")
        .arg(tmp.path().join("out/"));
    ok(c);
    assert_eq!(std::fs::read_dir(tmp.path().join("out")).unwrap().count(), 10);
}
