//! The remote tier with real servers: Debian's `redis-server` started by
//! each test on 127.0.0.1 (one server, or a three-master cluster), and
//! the built tools as separate processes. A "machine" is a local cache
//! directory of its own; every run is checked against the interpreter's
//! field digests, so a run that loaded a wrong object fails even when the
//! counters look right.

#[path = "../../../tests/common/mod.rs"]
mod common;

use common::redis_server::{RedisCluster, RedisServer};
use kiln::cache::record::{self, Key, Producer};
use kiln::remote::envelope;
use kiln::remote::settings::{MacKey, MAC_CONTEXT};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const RUN: &str = env!("CARGO_BIN_EXE_kiln-run");
const COMPILE: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-compile");
const INSPECT: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-cache-inspect");

fn testdata(name: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("testdata").join(name)
}

/// A test's directory: machines are subdirectories of it.
struct Lab {
    dir: tempfile::TempDir,
}

impl Lab {
    fn new() -> Lab {
        Lab { dir: tempfile::tempdir().unwrap() }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A tool with every default cache location inside the lab and no
    /// remote setting from the outside.
    fn tool(&self, bin: &str, machine: &str) -> Command {
        let home = self.path().join(machine);
        let mut c = Command::new(bin);
        c.env("HOME", home.join("home"))
            .env("KILN_CACHE_DIR", home.join("cache"))
            .env_remove("XDG_CACHE_HOME")
            .env_remove("KILN_TARGET_CPU")
            .env_remove("KILN_TARGET_FEATURES")
            .stdin(Stdio::null());
        for var in ["KILN_REMOTE", "KILN_REMOTE_READ_ONLY", "KILN_REMOTE_CONNECT_TIMEOUT", "KILN_REMOTE_TIMEOUT"] {
            c.env_remove(var);
        }
        c.env_remove("KILN_REMOTE_TTL").env_remove("KILN_REMOTE_SECRET_FILE").env_remove("KILN_REMOTE_MAX_RECORD_SIZE");
        c
    }

    /// `kiln-run FILE --digest --stats=json -O0` on `machine` with `remote`.
    fn run(&self, machine: &str, file: &Path, remote: &str, extra: &[&str], env: &[(&str, &str)]) -> Run {
        let mut c = self.tool(RUN, machine);
        c.arg(file).args(["--digest", "--stats=json", "-O0", "--threads", "1", "--remote", remote]).args(extra);
        for (k, v) in env {
            c.env(k, v);
        }
        Run::of(ok(c))
    }

    /// The interpreter's digests of `file`.
    fn interp(&self, file: &Path) -> String {
        let mut c = self.tool(RUN, "interp");
        c.arg(file).args(["--digest", "--engine", "interp"]);
        String::from_utf8(ok(c).stdout).unwrap()
    }

    /// A secret file of `byte` repeated, mode 600.
    fn secret(&self, name: &str, byte: u8) -> (PathBuf, MacKey) {
        let p = self.path().join(name);
        std::fs::write(&p, [byte; 40]).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        (p, MacKey(blake3::derive_key(MAC_CONTEXT, &[byte; 40])))
    }

    /// `kiln-cache-inspect --remote URL --json ARGS`: its exit code and JSON.
    fn inspect(&self, remote: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, Value) {
        let mut c = self.tool(INSPECT, "a");
        c.args(["--remote", remote, "--json"]).args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        let json = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{c:?}: no JSON:\n{}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code().unwrap(), json)
    }
}

fn ok(mut c: Command) -> Output {
    let out = c.output().expect("spawn");
    assert!(out.status.success(), "{c:?} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    out
}

/// One run's digests, counters and warnings.
struct Run {
    digests: String,
    stats: Value,
    stderr: String,
}

impl Run {
    fn of(out: Output) -> Run {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let line =
            stderr.lines().rev().find(|l| l.starts_with('{')).unwrap_or_else(|| panic!("no JSON stats in:\n{stderr}"));
        let stats = serde_json::from_str(line).expect("stats JSON");
        Run { digests: String::from_utf8(out.stdout).unwrap(), stats, stderr }
    }

    fn n(&self, name: &str) -> u64 {
        self.stats[name].as_u64().unwrap_or_else(|| panic!("no counter {name} in {}", self.stats))
    }

    /// (local hits, remote hits, compiled, remote stored, remote rejected, remote errors).
    fn outcome(&self) -> (u64, u64, u64, u64, u64, u64) {
        let n = |s| self.n(s);
        (n("hits"), n("remote_hits"), n("compiled"), n("remote_stored"), n("remote_rejected"), n("remote_errors"))
    }

    fn warnings(&self) -> usize {
        self.stderr.lines().filter(|l| l.contains("warning: remote cache")).count()
    }
}

/// The scope of records on a server: every Kiln key's scope part.
fn names(server: &RedisServer) -> Vec<String> {
    let mut v: Vec<String> = server.cli(&["--scan", "--pattern", "kiln:*"]).lines().map(String::from).collect();
    v.sort();
    v
}

#[test]
fn a_second_machine_compiles_nothing_and_then_reads_locally() {
    let (lab, server) = (Lab::new(), RedisServer::start());
    let file = testdata("ten_tasks.kir");
    let interp = lab.interp(&file);
    let a = lab.run("a", &file, &server.url(), &[], &[]);
    assert_eq!(a.outcome(), (0, 0, 10, 10, 0, 0), "{}", a.stats);
    assert_eq!(server.dbsize(), 10);
    let b = lab.run("b", &file, &server.url(), &[], &[]);
    assert_eq!(b.outcome(), (0, 10, 0, 0, 0, 0), "{}", b.stats);
    // Written locally after the kernel was ready, and counted by then.
    assert_eq!(b.n("stored"), 10, "{}", b.stats);
    assert_eq!(b.n("remote_bytes_read"), a.n("remote_bytes_written"));
    // The remote's records were written into b's local store.
    let b2 = lab.run("b", &file, &server.url(), &[], &[]);
    assert_eq!(b2.outcome(), (10, 0, 0, 0, 0, 0), "{}", b2.stats);
    for r in [&a, &b, &b2] {
        assert_eq!(r.digests, interp);
        assert_eq!(r.warnings(), 0, "{}", r.stderr);
    }
    // Keys carry the scope and the key.
    let scope = a.stats["scope"].as_str().unwrap();
    assert!(names(&server).iter().all(|n| n.starts_with(&format!("kiln:r{}:{scope}:", kiln::config::RECORD_VERSION))));
}

/// A scope whose `packed/` is a file: the records fetched from the remote
/// cannot be written locally. The run is right, and its one warning counts
/// every record not stored (it said "1 record" for ten: the batch's one
/// failure was counted once).
#[test]
fn fetched_records_that_cannot_be_written_are_each_counted() {
    let (lab, server) = (Lab::new(), RedisServer::start());
    let file = testdata("ten_tasks.kir");
    lab.run("a", &file, &server.url(), &[], &[]);
    // b's cache and scope, made by a run of another kernel.
    let other = lab.run("b", &testdata("saxpy.kir"), &server.url(), &[], &[]);
    let scope = lab.path().join("b/cache").join(other.stats["scope"].as_str().unwrap());
    std::fs::write(scope.join("packed"), "not a directory").unwrap();
    let b = lab.run("b", &file, &server.url(), &[], &[]);
    assert_eq!(b.digests, lab.interp(&file));
    assert_eq!(b.n("remote_hits"), 10, "{}", b.stats);
    let said: Vec<&str> = b.stderr.lines().filter(|l| l.contains("not stored")).collect();
    assert_eq!(said.len(), 1, "{}", b.stderr);
    assert!(said[0].contains("cannot write to the cache, 10 records not stored"), "{}", b.stderr);
}

/// `rediss://`: the same two machines over TLS, the server's certificate
/// checked against the authorities the system trusts (here the test's own,
/// through `SSL_CERT_FILE`, which rustls-native-certs reads); with an
/// authority that did not sign it, the first lookup fails in the TLS
/// handshake: one warning that says why, a correct run, nothing stored.
#[test]
fn tls_with_a_verified_certificate_and_not_without() {
    let (lab, server) = (Lab::new(), RedisServer::start_tls());
    let file = testdata("ten_tasks.kir");
    let interp = lab.interp(&file);
    let ca = server.ca_file().display().to_string();
    let trusted = [("SSL_CERT_FILE", ca.as_str())];
    let a = lab.run("a", &file, &server.tls_url(), &[], &trusted);
    assert_eq!(a.outcome(), (0, 0, 10, 10, 0, 0), "{}", a.stats);
    assert_eq!(server.dbsize(), 10);
    let b = lab.run("b", &file, &server.tls_url(), &[], &trusted);
    assert_eq!(b.outcome(), (0, 10, 0, 0, 0, 0), "{}", b.stats);
    for r in [&a, &b] {
        assert_eq!(r.digests, interp);
        assert_eq!(r.warnings(), 0, "{}", r.stderr);
    }
    // Another authority (an empty bundle: none) does not vouch for it.
    let none = lab.path().join("no-authorities.pem");
    std::fs::write(&none, "").unwrap();
    let untrusted = [("SSL_CERT_FILE", none.to_str().unwrap())];
    let c = lab.run("c", &file, &server.tls_url(), &[], &untrusted);
    assert_eq!(c.outcome(), (0, 0, 10, 0, 0, 1), "{}", c.stats);
    assert_eq!(c.warnings(), 1, "{}", c.stderr);
    assert!(c.stderr.contains("invalid peer certificate: UnknownIssuer"), "{}", c.stderr);
    assert_eq!(c.digests, interp);
}

/// A JIT engine over the store in `dir`, with the remote at `url` if given.
fn engine(dir: &Path, url: Option<&str>) -> kiln_jit::engine::JitEngine {
    use kiln::config::{CompileConfig, OptLevel};
    use kiln::remote::RemoteTier;
    use kiln_codegen::Compiler;
    use kiln_jit::cached::CachedTasks;
    use kiln_llvm::session;
    use kiln_llvm::HostTarget;
    let target = HostTarget::detect().unwrap();
    let compiler =
        Compiler::new(CompileConfig { opt_level: OptLevel::O0, ..Default::default() }, target.clone()).unwrap();
    let mut engine = kiln_jit::engine::JitEngine::new(compiler, kiln_jit::engine::JitPath::PerTask, 1).unwrap();
    let mut provider = CachedTasks::new(session::open_store(dir, &target, Default::default()).unwrap());
    if let Some(url) = url {
        let settings = common::redis_server::test_settings(url);
        let scope = provider.store().scope_name().to_string();
        provider = provider.with_remote(RemoteTier::new(settings, &scope));
    }
    engine.set_provider(Box::new(provider));
    engine
}

/// Makes every kernel of `file` ready on `engine`; its counters after.
fn prepare_all(engine: &mut kiln_jit::engine::JitEngine, file: &Path) -> kiln_jit::engine::JitStats {
    let stream = kiln::parser::parse(&std::fs::read_to_string(file).unwrap()).unwrap();
    let kernels: Vec<String> = stream.modules.iter().flat_map(|m| m.kernels()).map(|k| k.name.to_string()).collect();
    for k in &kernels {
        let split = engine.split(&stream, k).unwrap();
        engine.prepare(split.as_deref().unwrap_or(&stream), k).unwrap();
    }
    engine.stats.clone()
}

/// The local copies of records the remote returned are held back until
/// the kernel is ready, and still written when the engine is dropped
/// without `finish` (a program that never calls it): a later process
/// finds every one locally.
#[test]
fn fetched_records_are_written_locally_even_without_finish() {
    let (lab, server) = (Lab::new(), RedisServer::start());
    let file = testdata("ten_tasks.kir");
    let mut filler = engine(&lab.path().join("a"), Some(&server.url()));
    assert_eq!(prepare_all(&mut filler, &file).run.compiled, 10);
    filler.finish();
    assert_eq!(filler.stats.remote.as_ref().unwrap().1.stored, 10);
    let mut b = engine(&lab.path().join("b"), Some(&server.url()));
    let st = prepare_all(&mut b, &file);
    assert_eq!((st.remote.unwrap().1.hits, st.run.compiled, st.run.stored), (10, 0, 0));
    drop(b);
    let mut again = engine(&lab.path().join("b"), None);
    let st = prepare_all(&mut again, &file);
    assert_eq!((st.run.hits, st.run.compiled), (10, 0), "{st:?}");
}

/// Every file below `dir` whose name contains `part`.
fn files_named(dir: &Path, part: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            out.extend(files_named(&path, part));
        } else if entry.file_name().to_string_lossy().contains(part) {
            out.push(path);
        }
    }
    out
}

/// The copies a remote-warm run writes in the background are all there and
/// whole once the process has exited, with no temporary left: one pack
/// (one inode) linked under each record's name. A copy is not synced, so
/// a power cut may leave the pack torn: cut short in its last record, that
/// record fails its checksum on the next run, which fetches it again and
/// copies it anew (a pack of its own); the others stay, and the run after
/// that finds every record locally.
#[test]
fn fetched_copies_land_whole_and_a_torn_one_is_replaced() {
    use std::os::unix::fs::MetadataExt;
    let (lab, server) = (Lab::new(), RedisServer::start());
    let file = testdata("ten_tasks.kir");
    let interp = lab.interp(&file);
    assert_eq!(lab.run("a", &file, &server.url(), &[], &[]).n("compiled"), 10);
    let b = lab.run("b", &file, &server.url(), &[], &[]);
    assert_eq!(b.outcome(), (0, 10, 0, 0, 0, 0), "{}", b.stats);
    assert_eq!(b.n("stored"), 10, "{}", b.stats);
    let cache = lab.path().join("b/cache");
    let links = files_named(&cache, ".kpack");
    assert_eq!(links.len(), 10, "{links:?}");
    assert!(files_named(&cache, ".kobj").is_empty());
    let inodes: std::collections::BTreeSet<u64> = links.iter().map(|l| std::fs::metadata(l).unwrap().ino()).collect();
    assert_eq!(inodes.len(), 1, "one pack: {inodes:?}");
    assert!(files_named(&cache, ".tmp-").is_empty());
    let len = std::fs::metadata(&links[0]).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&links[0]).unwrap().set_len(len - 40).unwrap();
    let again = lab.run("b", &file, &server.url(), &[], &[]);
    assert_eq!(again.outcome(), (9, 1, 0, 0, 0, 0), "{}", again.stats);
    assert_eq!(again.n("stored"), 1, "{}", again.stats);
    assert_eq!(files_named(&cache, ".kpack").len(), 10, "copied anew");
    let last = lab.run("b", &file, &server.url(), &[], &[]);
    assert_eq!(last.outcome(), (10, 0, 0, 0, 0, 0), "{}", last.stats);
    for r in [&b, &again, &last] {
        assert_eq!(r.digests, interp);
        assert_eq!(r.warnings(), 0, "{}", r.stderr);
    }
}

#[test]
fn a_cluster_spreads_the_records_and_serves_a_second_machine() {
    let (lab, cluster) = (Lab::new(), RedisCluster::start());
    let file = testdata("ten_tasks.kir");
    let a = lab.run("a", &file, &cluster.url(), &[], &[]);
    assert_eq!(a.outcome(), (0, 0, 10, 10, 0, 0), "{}", a.stats);
    let sizes = cluster.dbsizes();
    assert_eq!(sizes.iter().sum::<u64>(), 10);
    assert!(sizes.iter().filter(|&&n| n > 0).count() >= 2, "keys on one node only: {sizes:?}");
    let b = lab.run("b", &file, &cluster.url(), &[], &[]);
    assert_eq!(b.outcome(), (0, 10, 0, 0, 0, 0), "{}", b.stats);
    assert_eq!(b.digests, lab.interp(&file));
    let (code, report) = lab.inspect(&cluster.url(), &["verify"], &[]);
    assert_eq!((code, report["checked"].as_u64(), report["healthy"].as_u64()), (0, Some(10), Some(10)), "{report}");
    let (_, stats) = lab.inspect(&cluster.url(), &["stats"], &[]);
    assert_eq!((stats["nodes"].as_u64(), stats["total"]["records"].as_u64()), (Some(3), Some(10)), "{stats}");
}

/// Waits until a client other than the watcher is connected to `server`.
fn wait_for_client(server: &RedisServer) {
    let client = redis::Client::open(server.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let t0 = Instant::now();
    loop {
        let info: String = redis::cmd("INFO").arg("clients").query(&mut con).unwrap();
        if info
            .lines()
            .any(|l| l.trim().strip_prefix("connected_clients:").is_some_and(|n| n.parse::<u32>().unwrap() >= 2))
        {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "kiln-run never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A server killed or paused while a run uses it: the run finishes,
/// right, with one warning and one error, and the client's own clock shows
/// it waited for the server at most the connect timeout and one operation
/// timeout (the request that failed; requests go one at a time).
/// Not the run's wall time: on a shared machine that is mostly waiting
/// for a CPU (`docs/performance.md` measures it).
fn server_fails_mid_run(signal: libc::c_int) {
    let (lab, server) = (Lab::new(), RedisServer::start());
    let file = testdata("offload_shapes.kir");
    let mut c = lab.tool(RUN, "a");
    c.arg(&file).args(["--digest", "--stats=json", "-O0", "--threads", "1", "--remote", &server.url()]);
    c.env("KILN_REMOTE_TIMEOUT", "300ms").env("KILN_REMOTE_CONNECT_TIMEOUT", "300ms");
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    wait_for_client(&server);
    server.signal(signal);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = Run::of(out);
    assert_eq!(run.digests, lab.interp(&file));
    assert_eq!((run.warnings(), run.n("remote_errors")), (1, 1), "{}", run.stderr);
    // The error is counted by its kind: a stopped server is a timeout.
    let kinds = ["remote_connect_errors", "remote_timeouts", "remote_other_errors"].map(|k| run.n(k));
    assert_eq!(kinds.iter().sum::<u64>(), 1, "{}", run.stats);
    if signal == libc::SIGSTOP {
        assert_eq!(kinds[1], 1, "{}", run.stats);
    }
    // Two timeouts, and a generous second for the successful requests.
    let waited = run.stats["remote_ms"].as_f64().unwrap();
    assert!(waited < 2.0 * 300.0 + 1000.0, "{}", run.stats);
}

#[test]
fn a_server_killed_mid_run_costs_one_warning() {
    server_fails_mid_run(libc::SIGKILL);
}

#[test]
fn a_server_paused_mid_run_costs_one_warning() {
    server_fails_mid_run(libc::SIGSTOP);
}

/// A server paused before the run (the kernel accepts connections, nobody
/// answers): one request (the kernel's lookup, waited for within the
/// connect timeout), then nothing more is sent for the rest of the
/// process, though every task is compiled and, with a working remote,
/// would have been written to it.
#[test]
fn a_server_paused_before_a_cold_run_is_asked_once() {
    let (lab, server) = (Lab::new(), RedisServer::start());
    server.signal(libc::SIGSTOP);
    let file = testdata("ten_tasks.kir");
    let r = lab.run("a", &file, &server.url(), &[], &[("KILN_REMOTE_CONNECT_TIMEOUT", "200ms")]);
    assert_eq!(r.digests, lab.interp(&file));
    assert!(r.n("tasks") >= 10 && r.n("compiled") == r.n("tasks"), "{}", r.stats);
    let remote = ["remote_requests", "remote_errors", "remote_stored", "remote_hits", "remote_misses"].map(|n| r.n(n));
    assert_eq!((r.warnings(), remote), (1, [1, 1, 0, 0, 0]), "{}", r.stderr);
    assert!(r.stderr.contains("lookup failed"), "{}", r.stderr);
    // The client's own clock: it waited for the server (the connect
    // timeout), not nothing.
    assert!(r.stats["remote_ms"].as_f64().unwrap() > 0.0, "{}", r.stats);
}

#[test]
fn a_remote_that_is_down_costs_one_warning() {
    let lab = Lab::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let file = testdata("saxpy.kir");
    let r = lab.run("a", &file, &format!("redis://127.0.0.1:{port}"), &[], &[]);
    let counts = (r.warnings(), r.n("remote_errors"), r.n("remote_requests"), r.n("compiled"));
    assert_eq!(counts, (1, 1, 0, r.n("tasks")), "{}", r.stderr);
    // A refused connection, and every compiled record not sent.
    assert_eq!((r.n("remote_connect_errors"), r.n("remote_skipped")), (1, r.n("tasks")), "{}", r.stats);
    assert_eq!(r.digests, lab.interp(&file));
}

/// Sets the server key `name` to `value`.
fn plant(server: &RedisServer, lab: &Lab, name: &str, value: &[u8]) {
    let p = lab.path().join("planted");
    std::fs::write(&p, value).unwrap();
    server.set_from_file(name, &p);
}

/// A record for `key` with `object`, sealed as a writer with `mac` would.
fn sealed(scope: &str, key: &Key, good: &[u8], object: &[u8], mac: Option<&MacKey>) -> Vec<u8> {
    let r = record::decode(&good[envelope::ENVELOPE_LEN..]).unwrap();
    let producer = Producer { kiln_version: "x".into(), llvm_version: "x".into(), created_unix: 1, compile_ms: 0 };
    let bytes = record::encode(key, &r.meta, &producer, object).unwrap();
    envelope::seal(&envelope::key_name(scope, key), &bytes, mac)
}

/// Every kind of bad value, planted by hand, is rejected and never
/// loaded; a writer replaces it, a read-only client leaves it.
#[test]
fn bad_values_are_rejected_and_replaced_unless_read_only() {
    let (lab, server) = (Lab::new(), RedisServer::start());
    let file = testdata("ten_tasks.kir");
    let interp = lab.interp(&file);
    lab.run("a", &file, &server.url(), &[], &[]);
    let (all, keys, good) = contents(&server);
    let rec = |i: usize| good[i][envelope::ENVELOPE_LEN..].to_vec();
    let mut bad_checksum = rec(5);
    let n = bad_checksum.len();
    bad_checksum[n - 40] ^= 0xff;
    let largest = good.iter().map(Vec::len).max().unwrap();
    let planted: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", b"not a record at all".to_vec()),
        ("truncated", good[1][..good[1].len() / 2].to_vec()),
        ("another scope's name", envelope::seal(&envelope::key_name("x86_64-other-cpu-0000", &keys[2]), &rec(2), None)),
        ("another key's name", good[4].clone()),
        ("oversized", [good[4].clone(), vec![0u8; largest + 1]].concat()),
        ("bad record checksum", envelope::seal(&all[5], &bad_checksum, None)),
        ("another key's record", envelope::seal(&all[6], &rec(7), None)),
    ];
    let limit = (largest * 2).to_string();
    let limit = [("KILN_REMOTE_MAX_RECORD_SIZE", limit.as_str())];
    for round in ["read-only", "writer"] {
        for (i, (_, v)) in planted.iter().enumerate() {
            plant(&server, &lab, &all[i], v);
        }
        let ro: &[&str] = if round == "read-only" { &["--remote-read-only"] } else { &[] };
        let r = lab.run(round, &file, &server.url(), ro, &limit);
        assert_eq!(r.digests, interp, "{round}");
        let n = planted.len() as u64;
        let counts = (r.n("remote_hits"), r.n("remote_rejected"), r.n("compiled"), r.n("remote_errors"));
        assert_eq!(counts, (10 - n, n, n, 0), "{round}: {}", r.stats);
        let (code, report) = lab.inspect(&server.url(), &["verify"], &limit);
        if round == "read-only" {
            assert_eq!(r.n("remote_stored"), 0);
            assert_eq!((code, report["bad"].as_array().unwrap().len()), (1, planted.len()), "{report}");
        } else {
            assert_eq!(r.n("remote_stored"), n);
            assert_eq!((code, report["healthy"].as_u64()), (0, Some(10)), "{report}");
        }
    }
}

/// The server's Kiln keys (sorted), their record keys and their values.
fn contents(server: &RedisServer) -> (Vec<String>, Vec<Key>, Vec<Vec<u8>>) {
    let all = names(server);
    let mut con = redis::Client::open(server.url()).unwrap().get_connection().unwrap();
    let values = all.iter().map(|n| redis::cmd("GET").arg(n).query(&mut con).unwrap()).collect();
    let keys = all.iter().map(|n| envelope::parse_key_name(n.as_bytes()).unwrap().1).collect();
    (all, keys, values)
}

/// With a secret, an unsigned record and one signed with another secret
/// are rejected, even when the record inside is well formed and holds an
/// object that would run the wrong code.
#[test]
fn signed_records_only_with_a_secret() {
    let (lab, server) = (Lab::new(), RedisServer::start());
    let file = testdata("ten_tasks.kir");
    let interp = lab.interp(&file);
    let (s1, _) = lab.secret("s1", 1);
    let (s2, k2) = lab.secret("s2", 2);
    let with = |p: &Path| vec![("KILN_REMOTE_SECRET_FILE", p.to_str().unwrap().to_string())];
    let env1 = with(&s1);
    let env1: Vec<(&str, &str)> = env1.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let a = lab.run("a", &file, &server.url(), &[], &env1);
    assert_eq!(a.outcome(), (0, 0, 10, 10, 0, 0));
    let scope = a.stats["scope"].as_str().unwrap().to_string();
    let (all, keys, good) = contents(&server);
    // Task 1's object under task 0's key, well formed but unsigned: loaded,
    // it would run the wrong code and the digests would differ.
    let object = |i: usize| record::decode(&good[i][envelope::ENVELOPE_LEN..]).unwrap().object;
    plant(&server, &lab, &all[0], &sealed(&scope, &keys[0], &good[0], &object(1), None));
    // Task 2's own record, signed with the other secret.
    plant(&server, &lab, &all[2], &sealed(&scope, &keys[2], &good[2], &object(2), Some(&k2)));
    let b = lab.run("b", &file, &server.url(), &["--remote-read-only"], &env1);
    assert_eq!((b.n("remote_hits"), b.n("remote_rejected"), b.n("compiled")), (8, 2, 2), "{}", b.stats);
    assert_eq!(b.digests, interp);
    // A client with the other secret rejects all of s1's records and the
    // unsigned one, and takes the one signed with its secret.
    let env2 = with(&s2);
    let env2: Vec<(&str, &str)> = env2.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let c = lab.run("c", &file, &server.url(), &["--remote-read-only"], &env2);
    assert_eq!((c.n("remote_hits"), c.n("remote_rejected"), c.n("compiled")), (1, 9, 9), "{}", c.stats);
    assert_eq!(c.digests, interp);
    let (_, report) = lab.inspect(&server.url(), &["verify"], &[("KILN_REMOTE_SECRET_FILE", s1.to_str().unwrap())]);
    assert_eq!(report["bad"].as_array().unwrap().len(), 2, "{report}");
}

/// `object` with every byte of its code sections replaced by `ud2` (an
/// instruction that always traps): the record stays well formed, but
/// running any of its code kills the process.
fn trapping(object: &[u8]) -> Vec<u8> {
    use object::{Object, ObjectSection, SectionKind};
    let file = object::File::parse(object).expect("an object file");
    let mut out = object.to_vec();
    let mut patched = 0;
    for section in file.sections().filter(|s| s.kind() == SectionKind::Text) {
        let Some((start, len)) = section.file_range() else { continue };
        for (i, b) in out[start as usize..(start + len) as usize].iter_mut().enumerate() {
            *b = [0x0f, 0x0b][i % 2];
        }
        patched += len;
    }
    assert!(patched > 0, "no code in the object");
    out
}

/// The signature is checked before LLVM sees a byte. Every remote record is
/// replaced by an unsigned one whose object traps as soon as it runs: a
/// client without a secret loads it and is killed (the record is as good
/// as the check makes it), while a client with a secret rejects each one,
/// compiles, runs correctly and puts signed records in their place.
#[test]
fn a_trapping_unsigned_object_never_reaches_a_client_with_a_secret() {
    use std::os::unix::process::ExitStatusExt;
    let (lab, server) = (Lab::new(), RedisServer::start());
    let file = testdata("saxpy.kir");
    let interp = lab.interp(&file);
    let a = lab.run("a", &file, &server.url(), &[], &[]);
    let scope = a.stats["scope"].as_str().unwrap().to_string();
    let (all, keys, good) = contents(&server);
    for (i, name) in all.iter().enumerate() {
        let object = record::decode(&good[i][envelope::ENVELOPE_LEN..]).unwrap().object;
        plant(&server, &lab, name, &sealed(&scope, &keys[i], &good[i], &trapping(&object), None));
    }
    let mut unsigned = lab.tool(RUN, "no-secret");
    unsigned.arg(&file).args(["--digest", "-O0", "--threads", "1", "--remote", &server.url(), "--remote-read-only"]);
    let out = unsigned.output().expect("spawn");
    assert_eq!(out.status.signal(), Some(libc_sigill()), "{:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    let (secret, _) = lab.secret("s", 3);
    let secret = secret.to_str().unwrap();
    let b = lab.run("b", &file, &server.url(), &[], &[("KILN_REMOTE_SECRET_FILE", secret)]);
    let n = all.len() as u64;
    assert_eq!(
        (b.n("remote_hits"), b.n("remote_rejected"), b.n("compiled"), b.n("remote_stored")),
        (0, n, n, n),
        "{}",
        b.stats
    );
    assert_eq!(b.digests, interp);
    let (code, report) = lab.inspect(&server.url(), &["verify"], &[("KILN_REMOTE_SECRET_FILE", secret)]);
    assert_eq!((code, report["healthy"].as_u64()), (0, Some(n)), "{report}");
}

/// SIGILL, what `ud2` raises on x86-64 Linux.
fn libc_sigill() -> i32 {
    4
}

#[test]
fn a_read_only_client_never_writes() {
    let (lab, server) = (Lab::new(), RedisServer::start());
    let file = testdata("saxpy.kir");
    let r = lab.run("a", &file, &server.url(), &[], &[("KILN_REMOTE_READ_ONLY", "1")]);
    assert_eq!((r.n("remote_misses"), r.n("remote_stored"), r.n("remote_errors")), (r.n("tasks"), 0, 0), "{}", r.stats);
    let r = lab.run("b", &file, &server.url(), &["--remote-read-only"], &[]);
    assert_eq!((r.n("remote_stored"), r.n("remote_skipped")), (0, r.n("compiled")), "{}", r.stats);
    assert_eq!(server.dbsize(), 0);
    let stats = server.cli(&["INFO", "commandstats"]);
    assert!(stats.contains("cmdstat_mget"), "{stats}");
    for write in ["cmdstat_set:", "cmdstat_del:", "cmdstat_setex:", "cmdstat_mset:"] {
        assert!(!stats.contains(write), "{write} in {stats}");
    }
}

#[test]
fn eight_processes_as_four_machines_on_a_cold_remote() {
    let (lab, server) = (Lab::new(), RedisServer::start());
    let file = testdata("ten_tasks.kir");
    let interp = lab.interp(&file);
    let children: Vec<_> = (0..8)
        .map(|i| {
            let mut c = lab.tool(RUN, &format!("m{}", i / 2));
            c.arg(&file).args(["--digest", "-O0", "--threads", "1", "--remote", &server.url()]);
            c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), interp);
    }
    assert_eq!(server.dbsize(), 10);
    let (code, report) = lab.inspect(&server.url(), &["verify"], &[]);
    assert_eq!((code, report["healthy"].as_u64()), (0, Some(10)), "{report}");
}

#[test]
fn kiln_compile_fills_the_remote_for_a_fleet() {
    let (lab, server) = (Lab::new(), RedisServer::start());
    let file = testdata("ten_tasks.kir");
    let mut c = lab.tool(COMPILE, "ci");
    c.arg(&file).args(["-O0", "--cache-dir"]).arg(lab.path().join("ci-cache")).args([
        "--remote",
        &server.url(),
        "--stats=json",
    ]);
    let out = ok(c);
    let stats = Run::of(Output { stdout: Vec::new(), ..out }).stats;
    assert_eq!((stats["remote_stored"].as_u64(), stats["misses"].as_u64()), (Some(10), Some(10)), "{stats}");
    let r = lab.run("dev", &file, &server.url(), &[], &[]);
    assert_eq!(r.outcome(), (0, 10, 0, 0, 0, 0), "{}", r.stats);
    assert_eq!(r.digests, lab.interp(&file));
}

#[test]
fn unusable_settings_are_usage_errors_naming_their_source() {
    let lab = Lab::new();
    let (secret, _) = lab.secret("open", 3);
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    // Flags, environment, and what the message must say.
    type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, &'a str);
    let cases: Vec<Case> = vec![
        (vec!["--remote", "ftp://h:1"], vec![], "--remote: unknown scheme 'ftp'"),
        (vec![], vec![("KILN_REMOTE", "redis://h:notaport")], "error: KILN_REMOTE: "),
        (
            vec!["--remote", "redis://127.0.0.1:1"],
            vec![("KILN_REMOTE_SECRET_FILE", secret.to_str().unwrap())],
            "chmod 600",
        ),
        (
            vec!["--remote", "redis://127.0.0.1:1"],
            vec![("KILN_REMOTE_TIMEOUT", "later")],
            "error: KILN_REMOTE_TIMEOUT: 'later'",
        ),
    ];
    for (args, env, want) in cases {
        let mut c = lab.tool(RUN, "a");
        c.arg(testdata("saxpy.kir")).args(&args).envs(env.iter().copied());
        let out = c.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?} {env:?}: {err}");
        assert!(err.contains(want), "{err}");
    }
}

#[test]
fn inspect_lists_verifies_and_prunes_a_remote() {
    let (lab, server) = (Lab::new(), RedisServer::start());
    let file = testdata("ten_tasks.kir");
    let a = lab.run("a", &file, &server.url(), &[], &[]);
    let scope = a.stats["scope"].as_str().unwrap().to_string();
    lab.run("a", &testdata("saxpy.kir"), &server.url(), &["--target-cpu", "x86-64"], &[]);
    let (code, list) = lab.inspect(&server.url(), &["list"], &[]);
    assert_eq!(code, 0);
    assert_eq!(list["scopes"].as_array().unwrap().len(), 2, "{list}");
    let ours = list["scopes"].as_array().unwrap().iter().find(|s| s["name"] == scope.as_str()).unwrap();
    assert_eq!((ours["this_host"].as_bool(), ours["records"].as_array().unwrap().len()), (Some(true), 10));
    // One bad record: verify finds it, --fix removes it.
    let victim = names(&server).into_iter().find(|n| n.contains(&scope)).unwrap();
    plant(&server, &lab, &victim, b"garbage");
    assert_eq!(lab.inspect(&server.url(), &["verify"], &[]).0, 1);
    let (code, fixed) = lab.inspect(&server.url(), &["verify", "--fix"], &[]);
    assert_eq!((code, fixed["bad"][0]["removed"].as_bool()), (0, Some(true)), "{fixed}");
    // Foreign scopes: a dry run removes nothing, then the prune does.
    let before = server.dbsize();
    let (_, dry) = lab.inspect(&server.url(), &["prune", "--foreign-scopes", "--dry-run"], &[]);
    let foreign = dry["removed"].as_array().unwrap().len() as u64;
    assert!(foreign >= 1, "{dry}");
    assert_eq!(server.dbsize(), before);
    lab.inspect(&server.url(), &["prune", "--foreign-scopes"], &[]);
    assert_eq!(server.dbsize(), before - foreign);
    // Everything was created just now: nothing is older than a day.
    let (_, old) = lab.inspect(&server.url(), &["prune", "--older-than", "1d"], &[]);
    assert_eq!(old["removed"].as_array().unwrap().len(), 0);
    // A KEYS command is never sent.
    assert!(!server.cli(&["INFO", "commandstats"]).contains("cmdstat_keys"));
}

#[test]
fn the_url_may_come_from_the_caches_config_file() {
    let (lab, server) = (Lab::new(), RedisServer::start());
    let file = testdata("saxpy.kir");
    lab.run("a", &file, &server.url(), &[], &[]);
    // Machine b names the remote only in its cache's kiln.toml.
    let root = lab.path().join("b").join("cache");
    std::fs::create_dir_all(&root).unwrap();
    let mut c = lab.tool(RUN, "b");
    c.arg(&file).args(["--digest", "-O0"]);
    ok(c);
    std::fs::write(root.join("kiln.toml"), format!("remote = \"{}\"\n", server.url())).unwrap();
    // Its local records go, so the run must ask the remote.
    let scope =
        std::fs::read_dir(&root).unwrap().flatten().map(|e| e.path()).find(|p| p.join("host.json").is_file()).unwrap();
    std::fs::remove_dir_all(scope).unwrap();
    let mut c = lab.tool(RUN, "b");
    c.arg(&file).args(["--digest", "--stats=json", "-O0", "--threads", "1"]);
    let r = Run::of(ok(c));
    assert_eq!((r.n("remote_hits"), r.n("compiled")), (r.n("tasks"), 0), "{}", r.stats);
    assert_eq!(r.digests, lab.interp(&file));
}
