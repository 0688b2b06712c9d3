//! Single-flight compiles with real processes (`docs/cache.md`,
//! "Single-flight compiles"): `kiln-run` processes on one cache directory,
//! and "machines" (a cache directory each) on one `redis-server` started
//! on 127.0.0.1 by the test. A holder is slowed by the test-only
//! `KILN_TEST_COMPILE_DELAY` so that it can be killed (SIGKILL) while it
//! holds its locks or leases. Every run's digests are checked against the
//! interpreter's.

mod common;

use common::redis_server::{RedisCluster, RedisServer};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const RUN: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-run");

fn ten_tasks() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/ten_tasks.kir")
}

/// `kiln-run ten_tasks.kir` on the machine `home` (its cache is
/// `home/env-cache`), with `remote` and `env`, standard streams piped.
fn kiln_run(home: &Path, remote: Option<&str>, env: &[(&str, &str)]) -> Command {
    let mut c = common::tool(RUN, home);
    c.arg(ten_tasks()).args(["--digest", "--stats=json", "-O0", "--threads", "1"]);
    for var in ["KILN_REMOTE", "KILN_COMPILE_WAIT", "KILN_TEST_COMPILE_DELAY", "KILN_REMOTE_LEASE_TTL"] {
        c.env_remove(var);
    }
    if let Some(url) = remote {
        c.args(["--remote", url]);
    }
    c.envs(env.iter().copied()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// `kiln-compile ten_tasks.kir --cache-dir` into the cache of `home` (as
/// [`kiln_run`]'s), with `env`, standard streams piped.
fn kiln_compile(home: &Path, env: &[(&str, &str)]) -> Command {
    let mut c = common::tool(concat!(env!("KILN_BINARIES_DIR"), "/kiln-compile"), home);
    c.arg(ten_tasks()).arg("--cache-dir").arg(home.join("env-cache")).args(["--stats=json", "-O0"]);
    for var in ["KILN_REMOTE", "KILN_COMPILE_WAIT", "KILN_TEST_COMPILE_DELAY", "KILN_REMOTE_LEASE_TTL"] {
        c.env_remove(var);
    }
    c.envs(env.iter().copied()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// A finished run: digests, counters, standard error.
struct Run {
    digests: String,
    stats: Value,
    stderr: String,
}

impl Run {
    fn n(&self, name: &str) -> u64 {
        self.stats[name].as_u64().unwrap_or_else(|| panic!("no counter {name} in {}", self.stats))
    }

    fn ms(&self, name: &str) -> f64 {
        self.stats[name].as_f64().unwrap_or_else(|| panic!("no time {name} in {}", self.stats))
    }
}

/// Waits for `child`, which must succeed.
fn finish(child: Child) -> Run {
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "kiln-run failed ({}):\n{stderr}", out.status);
    let line = stderr.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no stats in:\n{stderr}"));
    Run { digests: String::from_utf8(out.stdout).unwrap(), stats: serde_json::from_str(line).unwrap(), stderr }
}

fn interp_digests(home: &Path) -> String {
    let mut c = common::tool(RUN, home);
    c.arg(ten_tasks()).args(["--digest", "--engine", "interp"]);
    String::from_utf8(common::ok(c).stdout).unwrap()
}

/// Polls `ready` until it holds (a guard against a hung test, not a
/// timing check: a minute is far more than any step here takes).
fn wait_until(what: &str, ready: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !ready() {
        assert!(t0.elapsed() < Duration::from_secs(60), "never happened: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Starts a holder that claims every task and then sleeps a minute before
/// compiling: it holds the locks (and leases) until it is killed.
fn slow_holder(home: &Path, remote: Option<&str>, extra: &[(&str, &str)]) -> Child {
    let mut env = vec![("KILN_TEST_COMPILE_DELAY", "60s")];
    env.extend_from_slice(extra);
    kiln_run(home, remote, &env).spawn().expect("spawn the holder")
}

/// Starts one cold `kiln-run` per home together (each compile slowed so
/// the first holders are still busy when the others start) and waits for
/// them all.
fn together(homes: impl Iterator<Item = PathBuf>, remote: Option<&str>) -> Vec<Run> {
    let runs: Vec<Child> =
        homes.map(|home| kiln_run(&home, remote, &[("KILN_TEST_COMPILE_DELAY", "2s")]).spawn().unwrap()).collect();
    runs.into_iter().map(finish).collect()
}

/// `n` machines (a cache directory each under `lab`) on the remote at
/// `url`: each gets the interpreter's results without a warning, and the
/// ten tasks are compiled once in all.
fn machines_compile_once(lab: &Path, url: &str, n: usize) -> Vec<Run> {
    let want = interp_digests(lab);
    let runs = together((0..n).map(|i| lab.join(format!("m{i}"))), Some(url));
    for r in &runs {
        assert_eq!(r.digests, want);
        assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    }
    assert_eq!(runs.iter().map(|r| r.n("compiled")).sum::<u64>(), 10, "each task compiled once in all");
    runs
}

#[test]
fn processes_on_one_cold_cache_compile_each_task_once() {
    let lab = tempfile::tempdir().unwrap();
    let want = interp_digests(lab.path());
    // One machine: every process's cache is the same directory. The
    // delay keeps the first holder busy while the others start.
    let runs = together((0..4).map(|_| lab.path().to_path_buf()), None);
    for r in &runs {
        assert_eq!(r.digests, want);
        assert_eq!(r.n("hits") + r.n("misses") + r.n("corrupt_replaced"), 10, "{}", r.stats);
    }
    let compiled: u64 = runs.iter().map(|r| r.n("compiled")).sum();
    assert_eq!(compiled, 10, "each task compiled once in all");
    assert!(runs.iter().map(|r| r.n("waited")).sum::<u64>() >= 1);
    assert_eq!(common::lock_files(lab.path()), 0, "every lock file goes with its record");
}

#[test]
fn a_waiter_compiles_itself_past_the_bound() {
    let lab = tempfile::tempdir().unwrap();
    let mut holder = slow_holder(lab.path(), None, &[]);
    let cache = lab.path().join("env-cache");
    wait_until("the holder's locks", || common::lock_files(&cache) == 10);
    let r = finish(kiln_run(lab.path(), None, &[("KILN_COMPILE_WAIT", "500ms")]).spawn().unwrap());
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(r.digests, interp_digests(lab.path()));
    assert_eq!((r.n("compiled"), r.n("waited")), (10, 0), "{}", r.stats);
    assert!(r.ms("wait_ms") >= 500.0, "it waited the bound first: {}", r.stats);
    // The wait that ran out is said, once (issue 44: it was hidden).
    let said: Vec<&str> = r.stderr.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(said.len(), 1, "{}", r.stderr);
    assert!(
        said[0].contains("no task another process was compiling finished within compile_wait (500ms)")
            && said[0].contains("compiled 10 of them here"),
        "{}",
        r.stderr
    );
}

/// The compiler processes `kiln-run` started, from its time trace at
/// `path` (its own `kiln-compile` spans, not those merged from them).
fn compiler_processes(path: &Path) -> usize {
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let pid = events.iter().find(|e| e["name"] == "process_name").map(|e| e["pid"].clone()).unwrap();
    events.iter().filter(|e| e["pid"] == pid && e["cat"] == "compile" && e["name"] == "kiln-compile").count()
}

#[test]
fn a_dead_holders_tasks_are_taken_over_together_in_one_batch() {
    // Issue 44: a process that took over compiled one task per compiler
    // process, one after another, as it came to each.
    let lab = tempfile::tempdir().unwrap();
    let mut holder = slow_holder(lab.path(), None, &[]);
    let cache = lab.path().join("env-cache");
    wait_until("the holder's locks", || common::lock_files(&cache) == 10);
    let trace = lab.path().join("waiter.trace.json");
    let mut waiter = kiln_run(lab.path(), None, &[("KILN_COMPILE_WAIT", "10min")]);
    waiter.arg(format!("--time-trace={}", trace.display()));
    let waiter = waiter.spawn().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    holder.kill().unwrap();
    holder.wait().unwrap();
    let r = finish(waiter);
    assert_eq!(r.digests, interp_digests(lab.path()));
    assert_eq!((r.n("compiled"), r.n("waited")), (10, 0), "{}", r.stats);
    assert_eq!(compiler_processes(&trace), 1, "the ten tasks taken over are one batch");
    assert!(!r.stderr.contains("warning"), "a takeover is no wait that ran out: {}", r.stderr);
}

#[test]
fn a_lock_holder_killed_mid_compile_is_taken_over() {
    let lab = tempfile::tempdir().unwrap();
    let mut holder = slow_holder(lab.path(), None, &[]);
    let cache = lab.path().join("env-cache");
    wait_until("the holder's locks", || common::lock_files(&cache) == 10);
    let waiter = kiln_run(lab.path(), None, &[("KILN_COMPILE_WAIT", "10min")]).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    holder.kill().unwrap();
    holder.wait().unwrap();
    let r = finish(waiter);
    assert_eq!(r.digests, interp_digests(lab.path()));
    assert_eq!(r.n("compiled"), 10, "{}", r.stats);
    // Taken over when the holder died, long before the bound.
    assert!(r.ms("wait_ms") < 600_000.0, "{}", r.stats);
    assert_eq!(common::lock_files(lab.path()), 0, "the dead holder's lock files went with the records");
}

/// The compile leases on `server`.
fn leases(server: &RedisServer) -> usize {
    server.cli(&["--scan", "--pattern", "kiln-lease:*"]).lines().filter(|l| !l.is_empty()).count()
}

#[test]
fn machines_on_one_redis_compile_each_task_once() {
    let server = RedisServer::start();
    let lab = tempfile::tempdir().unwrap();
    let runs = machines_compile_once(lab.path(), &server.url(), 4);
    assert_eq!(runs.iter().map(|r| r.n("remote_stored")).sum::<u64>(), 10);
    assert_eq!(leases(&server), 0, "every lease is deleted once its record is stored");
}

#[test]
fn a_lease_holder_killed_mid_compile_expires_and_is_taken_over() {
    let server = RedisServer::start();
    let lab = tempfile::tempdir().unwrap();
    let url = server.url();
    let ttl = [("KILN_REMOTE_LEASE_TTL", "1s")];
    let mut holder = slow_holder(&lab.path().join("a"), Some(&url), &ttl);
    wait_until("the holder's leases", || leases(&server) == 10);
    let wait = [("KILN_REMOTE_LEASE_TTL", "1s"), ("KILN_COMPILE_WAIT", "10min")];
    let mut waiter = kiln_run(&lab.path().join("b"), Some(&url), &wait).spawn().unwrap();
    // Three times the ttl: a living holder renews its leases, so the
    // waiter is still waiting.
    std::thread::sleep(Duration::from_secs(3));
    assert!(waiter.try_wait().unwrap().is_none(), "the waiter took over a living holder's leases");
    holder.kill().unwrap();
    holder.wait().unwrap();
    let r = finish(waiter);
    assert_eq!(r.digests, interp_digests(lab.path()));
    assert_eq!((r.n("compiled"), r.n("remote_stored")), (10, 10), "{}", r.stats);
    assert!(r.ms("wait_ms") < 600_000.0, "{}", r.stats);
    assert_eq!(leases(&server), 0);
}

#[test]
fn a_foreign_lease_is_waited_for_at_most_the_bound() {
    let server = RedisServer::start();
    let lab = tempfile::tempdir().unwrap();
    let scope = kiln_scope(lab.path());
    for (_, key) in common::kiln_key_tasks(lab.path(), &ten_tasks()) {
        let name = kiln::remote::envelope::lease_name(&scope, &key);
        server.cli(&["SET", &name, "not a kiln lease \u{1}", "PX", "600000"]);
    }
    let wait = [("KILN_COMPILE_WAIT", "1s")];
    let r = finish(kiln_run(lab.path(), Some(&server.url()), &wait).spawn().unwrap());
    assert_eq!(r.digests, interp_digests(lab.path()));
    assert_eq!((r.n("compiled"), r.n("waited"), r.n("remote_errors")), (10, 0, 0), "{}", r.stats);
    // The wait that ran out is said once, and nothing else.
    let said: Vec<&str> = r.stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(said.len(), 1, "{}", r.stderr);
    assert!(said[0].contains("within compile_wait (1s); compiled 10 of them here"), "{}", r.stderr);
    // Not its lease: left for its owner.
    assert_eq!(leases(&server), 10);
}

/// This host's cache scope, as `kiln-run --version` names it.
fn kiln_scope(home: &Path) -> String {
    let mut c = common::tool(RUN, home);
    c.arg("--version");
    let out = String::from_utf8(common::ok(c).stdout).unwrap();
    let line = out.lines().find_map(|l| l.trim().strip_prefix("Cache scope: ")).expect("a cache scope line");
    line.to_string()
}

#[test]
fn machines_on_a_redis_cluster_compile_each_task_once_with_leases_in_their_records_slots() {
    let cluster = RedisCluster::start();
    let lab = tempfile::tempdir().unwrap();
    machines_compile_once(lab.path(), &cluster.url(), 3);
    assert_eq!(cluster.nodes.iter().map(leases).sum::<usize>(), 0, "every lease deleted");
    // A lease hashes to its record's slot.
    let scope = kiln_scope(lab.path());
    let node = &cluster.nodes[0];
    for (_, key) in common::kiln_key_tasks(lab.path(), &ten_tasks()) {
        let slot = |name: &str| node.cli(&["CLUSTER", "KEYSLOT", name]);
        let record = kiln::remote::envelope::key_name(&scope, &key);
        assert_eq!(slot(&kiln::remote::envelope::lease_name(&scope, &key)), slot(&record));
    }
}

/// A tier of this process on `url`, for the records of `scope`.
fn tier(url: &str, scope: &str) -> kiln::remote::RemoteTier {
    kiln::remote::RemoteTier::new(common::redis_server::test_settings(url), scope)
}

#[test]
fn a_waiters_look_is_one_round_trip_and_never_leases_beside_a_record() {
    use kiln::remote::{envelope, Fetched, Lease};
    let server = RedisServer::start();
    let lab = tempfile::tempdir().unwrap();
    // A machine fills the remote with the ten records.
    let filled = finish(kiln_run(&lab.path().join("a"), Some(&server.url()), &[]).spawn().unwrap());
    assert_eq!(filled.n("remote_stored"), 10, "{}", filled.stats);
    let scope = kiln_scope(lab.path());
    let keys: Vec<_> = common::kiln_key_tasks(lab.path(), &ten_tasks()).into_iter().map(|(_, k)| k).collect();
    let remote = tier(&server.url(), &scope);
    let hits = |fetched: &[Fetched]| fetched.iter().filter(|f| matches!(f, Fetched::Hit(_))).count();
    // The record is there: it is returned, with the others, and no lease
    // is taken.
    let (found, others) = remote.look(&keys[0], &keys[1..]).unwrap();
    assert!(matches!(found, Ok(Fetched::Hit(_))));
    assert_eq!(hits(&others), 9);
    assert_eq!(leases(&server), 0);
    // No record, and another's lease: held; the others come all the same.
    let (record, lease) = (envelope::key_name(&scope, &keys[0]), envelope::lease_name(&scope, &keys[0]));
    server.cli(&["DEL", &record]);
    server.cli(&["SET", &lease, "another machine", "PX", "600000"]);
    let (found, others) = remote.look(&keys[0], &keys[1..]).unwrap();
    assert!(matches!(found, Err(Lease::Held)));
    assert_eq!(hits(&others), 9);
    assert_eq!(server.cli(&["GET", &lease]).trim(), "another machine");
    // No record and no lease (its holder died): the lease is taken.
    server.cli(&["DEL", &lease]);
    let (found, others) = remote.look(&keys[0], &[]).unwrap();
    assert!(matches!(found, Err(Lease::Mine)) && others.is_empty());
    assert!(server.cli(&["GET", &lease]).starts_with("kiln-lease "));
    // One round trip per look.
    assert_eq!((remote.stats().requests, remote.stats().errors), (3, 0));
    assert!(remote.take_warning().is_none());
}

#[test]
fn kiln_compile_fills_share_the_compiles_with_each_other_and_with_runs() {
    let lab = tempfile::tempdir().unwrap();
    let delay = [("KILN_TEST_COMPILE_DELAY", "2s")];
    // Two fills and two runs start cold together on one cache.
    let fills: Vec<Child> = (0..2).map(|_| kiln_compile(lab.path(), &delay).spawn().unwrap()).collect();
    let runs: Vec<Child> = (0..2).map(|_| kiln_run(lab.path(), None, &delay).spawn().unwrap()).collect();
    let all: Vec<Run> = fills.into_iter().chain(runs).map(finish).collect();
    let want = interp_digests(lab.path());
    assert_eq!((all[2].digests.as_str(), all[3].digests.as_str()), (want.as_str(), want.as_str()));
    for r in &all {
        assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    }
    assert_eq!(all.iter().map(|r| r.n("compiled")).sum::<u64>(), 10, "each task compiled once in all");
    assert!(all[..2].iter().map(|r| r.n("waited")).sum::<u64>() >= 1, "a fill waited for another's compile");
    assert_eq!(common::lock_files(lab.path()), 0, "every lock file goes with its record");
    // A later fill finds every record.
    let again = finish(kiln_compile(lab.path(), &[]).spawn().unwrap());
    assert_eq!((again.n("hits"), again.n("compiled")), (10, 0), "{}", again.stats);
}

#[test]
fn a_fill_takes_over_from_a_holder_killed_mid_compile() {
    let lab = tempfile::tempdir().unwrap();
    let mut holder = kiln_compile(lab.path(), &[("KILN_TEST_COMPILE_DELAY", "60s")]).spawn().unwrap();
    let cache = lab.path().join("env-cache");
    wait_until("the holder's locks", || common::lock_files(&cache) == 10);
    let waiter = kiln_compile(lab.path(), &[("KILN_COMPILE_WAIT", "10min")]).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    holder.kill().unwrap();
    holder.wait().unwrap();
    let r = finish(waiter);
    assert_eq!((r.n("compiled"), r.n("stored"), r.n("waited")), (10, 10, 0), "{}", r.stats);
    assert!(r.ms("wait_ms") < 600_000.0, "{}", r.stats);
    assert_eq!(common::lock_files(lab.path()), 0);
    // What it stored serves a run.
    let run = finish(kiln_run(lab.path(), None, &[]).spawn().unwrap());
    assert_eq!((run.n("hits"), run.digests), (10, interp_digests(lab.path())));
}
