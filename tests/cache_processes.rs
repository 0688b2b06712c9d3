//! The cache store under real concurrent processes: many readers and
//! writers on shared keys while a pruner deletes under them, writers
//! killed with SIGKILL mid-write, and writers far over the size bound.
//! Afterwards `kiln-cache-inspect verify` must find every record healthy
//! and every size counter equal to a recount, and the lasting statistics
//! must add up what the processes did.
//!
//! This test has its own `main` (`harness = false`): it re-executes its own
//! binary as the worker processes, selected by `KILN_CACHE_TEST_ROLE`, so
//! every process runs the real store code and nothing but it. Arguments
//! that do not start with `-` filter the scenarios by name.

use kiln::cache::inspect::{Cache, InspectOptions};
use kiln::cache::{HostScope, Key, Lookup, Store, StoreOptions};
use kiln::config::{LaunchMeta, MetaKind};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime};

const ROLE: &str = "KILN_CACHE_TEST_ROLE";
const INSPECT: &str = env!("CARGO_BIN_EXE_kiln-cache-inspect");
const WORKERS: u32 = 8;
const OPS_PER_WORKER: u32 = 1500;
const SHARED_KEYS: u32 = 48;

fn scope() -> HostScope {
    HostScope::new("x86_64-unknown-linux-gnu", "proc-test", ["+x"])
}

fn key(k: u32) -> Key {
    Key::from(blake3::hash(format!("shared key {k}").as_bytes()))
}

fn meta(k: u32) -> LaunchMeta {
    LaunchMeta {
        task: format!("@k{k}"),
        entry_symbol: format!("kiln_k{k}"),
        kind: MetaKind::Serial,
        params: vec![],
        fields: vec![],
    }
}

/// An object that says who wrote it: key, writer and round in its first
/// 12 bytes, then bytes derived from those three, of a size that varies
/// with them (so racing writers of one key write different lengths).
fn object(k: u32, writer: u32, round: u32) -> Vec<u8> {
    let len = 12 + 2000 + ((k * 7919 + writer * 104_729 + round * 31) % 30_000) as usize;
    let mut out = vec![0u8; len];
    out[..4].copy_from_slice(&k.to_le_bytes());
    out[4..8].copy_from_slice(&writer.to_le_bytes());
    out[8..12].copy_from_slice(&round.to_le_bytes());
    blake3::Hasher::new().update(&out[..12]).finalize_xof().fill(&mut out[12..]);
    out
}

/// Whether a record read back for key `k` is exactly what some writer
/// wrote for it.
fn check_object(k: u32, bytes: &[u8]) -> Result<(), String> {
    if bytes.len() < 12 {
        return Err(format!("key {k}: object of {} bytes", bytes.len()));
    }
    let field = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
    let (kk, writer, round) = (field(0), field(4), field(8));
    if kk != k || object(k, writer, round) != bytes {
        return Err(format!("key {k}: object is not what writer {writer} wrote in round {round}"));
    }
    Ok(())
}

fn open(root: &Path) -> Result<Store, String> {
    Store::open(root, scope(), StoreOptions::default()).map_err(|e| e.to_string())
}

/// The size bound of the `bounded` scenario: a small fraction of what its
/// writers store.
const BOUND: u64 = 1 << 20;
/// Keys of the `bounded` scenario: about 6.5 MB of records.
const BOUNDED_KEYS: u32 = 400;

/// A worker: `OPS_PER_WORKER` mixed gets (60%), puts (25% one record,
/// 10% a fetched batch of three in one pack) and erases on
/// `keys` shared keys; every hit is checked byte for byte; any corrupt
/// record or error fails it. Prints its counters.
fn mixed_worker(store: Store, id: u32, keys: u32) -> Result<(), String> {
    let mut state = 0x2545_f491_4f6c_dd1du64 ^ (id as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..OPS_PER_WORKER {
        let r = next();
        let k = (r % keys as u64) as u32;
        match (r >> 32) % 100 {
            0..=59 => match store.get(&key(k)).map_err(|e| format!("get: {e}"))? {
                Lookup::Hit(rec) => {
                    if rec.meta != meta(k) {
                        return Err(format!("key {k}: metadata of another record"));
                    }
                    check_object(k, &rec.object)?;
                }
                Lookup::Miss => {}
                Lookup::Corrupt(c) => return Err(format!("key {k}: a reader saw a corrupt record: {c}")),
            },
            60..=84 => store.put(&key(k), &meta(k), &object(k, id, round)).map_err(|e| format!("put: {e}"))?,
            // A fetched batch: three keys in one pack.
            85..=94 => {
                let ks: Vec<u32> = (0..3).map(|i| (k + i) % keys).collect();
                let (keys_, metas): (Vec<Key>, Vec<_>) = ks.iter().map(|&k| (key(k), meta(k))).unzip();
                let objects: Vec<Vec<u8>> = ks.iter().map(|&k| object(k, id, round)).collect();
                let batch = (0..ks.len()).map(|i| (&keys_[i], &metas[i], objects[i].as_slice(), Duration::ZERO));
                store.put_fetched_all(batch).map_err(|e| format!("put_fetched_all: {e}"))?;
            }
            _ => {
                store.erase(&key(k)).map_err(|e| format!("erase: {e}"))?;
            }
        }
    }
    let s = store.stats();
    println!("{} {} {} {}", s.hits, s.misses, s.puts, s.corrupt);
    // Dropping the store adds its counters to the lasting statistics.
    Ok(())
}

/// A writer that stages one record and waits to be killed before the
/// rename.
fn paused_writer(root: &Path) -> Result<(), String> {
    let store = open(root)?;
    let staged = store.stage(&key(1000), &meta(1000), &object(1000, 0, 0)).map_err(|e| e.to_string())?;
    println!("staged {}", staged.temp_path().display());
    std::thread::sleep(Duration::from_secs(120));
    staged.commit().map_err(|e| e.to_string())
}

/// A writer that writes large records as fast as it can until killed.
fn busy_writer(root: &Path) -> Result<(), String> {
    let store = open(root)?;
    println!("started");
    let big = vec![0x5au8; 24 << 20];
    for round in 0.. {
        let k = 2000 + round % 4;
        store.put(&key(k), &meta(k), &big).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn id() -> u32 {
    std::env::var("KILN_CACHE_TEST_ID").unwrap().parse().unwrap()
}

fn worker(role: &str) -> ExitCode {
    let root = PathBuf::from(std::env::var_os("KILN_CACHE_TEST_ROOT").expect("KILN_CACHE_TEST_ROOT"));
    let result = match role {
        "mixed" => open(&root).and_then(|s| mixed_worker(s, id(), SHARED_KEYS)),
        "bounded" => Store::open(&root, scope(), StoreOptions { max_size: BOUND, ..Default::default() })
            .map_err(|e| e.to_string())
            .and_then(|s| mixed_worker(s, id(), BOUNDED_KEYS)),
        "paused" => paused_writer(&root),
        "busy" => busy_writer(&root),
        other => Err(format!("unknown role {other}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("worker {role}: {e}");
            ExitCode::from(1)
        }
    }
}

fn spawn(root: &Path, role: &str, id: u32) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .env(ROLE, role)
        .env("KILN_CACHE_TEST_ROOT", root)
        .env("KILN_CACHE_TEST_ID", id.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs `kiln-cache-inspect` on `root`; (exit code, stdout, stderr).
fn inspect(root: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(INSPECT).arg("--cache-dir").arg(root).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn verify_clean(root: &Path) -> Result<u64, String> {
    let (code, out, err) = inspect(root, &["verify"]);
    if code != 0 || !out.contains(" 0 damaged") {
        return Err(format!("verify is not clean (exit {code}):\n{out}{err}"));
    }
    let report = Cache::open(root, &InspectOptions::default()).unwrap().verify(false).map_err(|e| e.to_string())?;
    if !report.bad.is_empty() {
        return Err(format!("damaged records: {:?}", report.bad));
    }
    Ok(report.checked)
}

fn ensure(cond: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(what())
    }
}

/// Eight processes start together on a cold cache (racing to create it)
/// and do thousands of mixed operations on shared keys while
/// `kiln-cache-inspect prune --max-size` deletes records under them.
fn many_processes_on_shared_keys() -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    let children: Vec<Child> = (0..WORKERS).map(|id| spawn(&root, "mixed", id)).collect();
    // Prune while they work: readers must take vanished records as misses.
    let start = Instant::now();
    let mut prunes = 0;
    while start.elapsed() < Duration::from_secs(60) && prunes < 40 {
        if root.join(".kiln-cache").exists() {
            let (code, _, err) = inspect(&root, &["prune", "--max-size", "300K"]);
            ensure(code == 0, || format!("concurrent prune failed: {err}"))?;
            prunes += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let [hits, _, puts, _] = wait_for_mixed(children)?;
    ensure(prunes > 0, || "the pruner never ran".into())?;
    ensure(hits > 500 && puts > 500, || format!("too little contention: {hits} hits, {puts} puts"))?;
    let checked = verify_clean(&root)?;
    ensure(checked > 0, || "no records left to verify".into())?;
    // The pruner removed records behind the stores' backs and recounted;
    // the stores' own updates are exact: the counters match the records.
    let (_, out, _) = inspect(&root, &["verify"]);
    ensure(!out.contains("size counter"), || format!("size counters drifted:\n{out}"))?;
    let stats = Cache::open(&root, &InspectOptions::default()).unwrap().stats().unwrap();
    ensure(stats.total.temp_files == 0, || format!("{} temporary files left by clean exits", stats.total.temp_files))?;
    println!(
        "    {WORKERS} workers, {} ops, {hits} hits, {puts} puts, {prunes} prunes, {checked} records verified",
        WORKERS * OPS_PER_WORKER
    );
    Ok(())
}

/// Waits for mixed workers; the sums of their counters (hits, misses,
/// puts, corrupt: always 0).
fn wait_for_mixed(children: Vec<Child>) -> Result<[u64; 4], String> {
    let mut sums = [0u64; 4];
    for (id, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        ensure(out.status.success(), || {
            format!("worker {id} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr))
        })?;
        let n: Vec<u64> = stdout.split_whitespace().map(|w| w.parse().unwrap()).collect();
        ensure(n.len() == 4 && n[3] == 0, || format!("worker {id}: counters {stdout}"))?;
        for (sum, x) in sums.iter_mut().zip(n) {
            *sum += x;
        }
    }
    Ok(sums)
}

/// Eight processes store about six times the size bound (and read and
/// erase) at once: afterwards the records fit the bound, every size
/// counter equals a recount, and the lasting statistics are the sums of
/// what each process counted.
fn bound_holds_under_many_processes() -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    let children: Vec<Child> = (0..WORKERS).map(|id| spawn(&root, "bounded", id)).collect();
    let [hits, misses, puts, _] = wait_for_mixed(children)?;
    let (code, out, err) = inspect(&root, &["verify"]);
    ensure(code == 0 && out.contains(" 0 damaged") && !out.contains("size counter"), || {
        format!("verify is not clean (exit {code}):\n{out}{err}")
    })?;
    let stats = Cache::open(&root, &InspectOptions::default()).unwrap().stats().map_err(|e| e.to_string())?;
    ensure(stats.total.bytes <= BOUND, || format!("{} bytes of records over the bound of {BOUND}", stats.total.bytes))?;
    ensure(stats.counted.bytes == stats.total.bytes && stats.counted.records == stats.total.records, || {
        format!("counters {:?}, records on disk {:?}", stats.counted, stats.total)
    })?;
    let l = stats.lasting;
    ensure((l.hits, l.misses, l.puts, l.corrupt) == (hits, misses, puts, 0), || {
        format!("lasting {l:?}, workers counted {hits} hits, {misses} misses, {puts} puts")
    })?;
    ensure(l.evicted > 0 && puts * 20_000 > 4 * BOUND, || format!("no eviction: {l:?}"))?;
    println!(
        "    {WORKERS} workers, {puts} puts, {} evicted, {} records ({} bytes) left under a bound of {BOUND}",
        l.evicted, stats.total.records, stats.total.bytes
    );
    Ok(())
}

/// A writer killed between writing its record and renaming it leaves a
/// temporary file that readers ignore, `verify` does not count, and only
/// `prune --temp` removes once it is stale.
fn writer_killed_before_rename() -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    let mut child = spawn(&root, "paused", 0);
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let staged = line.trim().strip_prefix("staged ").map(PathBuf::from);
    let there = staged.as_ref().is_some_and(|t| t.is_file());
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let tmp = staged.ok_or_else(|| format!("worker said {line:?}"))?;
    ensure(there, || format!("{} was not there", tmp.display()))?;

    let store = open(&root)?;
    ensure(matches!(store.get(&key(1000)), Ok(Lookup::Miss)), || {
        "a reader took the temporary file for a record".into()
    })?;
    ensure(tmp.is_file(), || "the temporary file vanished".into())?;
    verify_clean(&root)?;
    // Young: a live writer's file is never pruned.
    let (code, out, _) = inspect(&root, &["prune", "--temp"]);
    ensure(code == 0 && tmp.is_file(), || format!("prune --temp removed a young temporary file:\n{out}"))?;
    std::fs::File::options()
        .write(true)
        .open(&tmp)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(7200))
        .unwrap();
    let (code, out, _) = inspect(&root, &["prune", "--temp", "--dry-run"]);
    ensure(code == 0 && tmp.is_file() && out.contains("would remove temp"), || format!("dry run:\n{out}"))?;
    let (code, out, _) = inspect(&root, &["prune", "--temp"]);
    ensure(code == 0 && !tmp.exists() && out.contains("removed temp"), || format!("prune --temp:\n{out}"))?;
    // The key is writable again.
    store.put(&key(1000), &meta(1000), &object(1000, 1, 1)).map_err(|e| e.to_string())?;
    ensure(matches!(store.get(&key(1000)), Ok(Lookup::Hit(_))), || "no hit after a fresh put".into())?;
    Ok(())
}

/// Writers of 24 MB records killed at arbitrary moments (mid-write, mid-
/// sync, or between records): whatever they leave, every record is whole.
fn writers_killed_at_random_moments() -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    for (i, delay_ms) in [5u64, 37, 90, 160, 250, 410].into_iter().enumerate() {
        let mut child = spawn(&root, "busy", i as u32);
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        if line.trim() == "started" {
            std::thread::sleep(Duration::from_millis(delay_ms));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        ensure(line.trim() == "started", || format!("busy writer said {line:?}"))?;
    }
    verify_clean(&root)?;
    let store = open(&root)?;
    for k in 2000..2004 {
        match store.get(&key(k)).map_err(|e| e.to_string())? {
            Lookup::Hit(r) => {
                ensure(r.object.len() == 24 << 20 && r.object.iter().all(|&b| b == 0x5a), || "bad object".into())?
            }
            Lookup::Miss => {}
            Lookup::Corrupt(c) => return Err(format!("key {k}: corrupt after kills: {c}")),
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    if let Ok(role) = std::env::var(ROLE) {
        return worker(&role);
    }
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    type Test = fn() -> Result<(), String>;
    let tests: [(&str, Test); 4] = [
        ("many_processes_on_shared_keys", many_processes_on_shared_keys),
        ("bound_holds_under_many_processes", bound_holds_under_many_processes),
        ("writer_killed_before_rename", writer_killed_before_rename),
        ("writers_killed_at_random_moments", writers_killed_at_random_moments),
    ];
    let mut failed = 0;
    let mut ran = 0;
    for (name, test) in tests {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        ran += 1;
        println!("test {name} ...");
        match test() {
            Ok(()) => println!("test {name} ... ok"),
            Err(e) => {
                println!("test {name} ... FAILED\n{e}");
                failed += 1;
            }
        }
    }
    println!("\ntest result: {}. {} passed; {failed} failed", if failed == 0 { "ok" } else { "FAILED" }, ran - failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
