//! The cached per-task path: each task's object comes from the per-task
//! artifact cache when a good record is there, and is compiled, loaded and
//! stored when not.
//!
//! Owns: [`CachedTasks`] (the [`TaskProvider`] `kiln-run` uses whenever a
//! cache is enabled, over a [`Session`] from `kiln_llvm::session`, which
//! `kiln_codegen::fill`, what `kiln-compile --cache-dir` does, shares;
//! both look tasks up by [`kiln::plan::key_and_meta`]). With a remote tier ([`kiln::remote`]) a local miss asks the remote (a
//! kernel's tasks together, see [`TaskProvider::prefetch`]); a remote hit
//! is loaded and written into the local store once the kernel is ready
//! (see [`FetchedWrites`]), and what is compiled is written to both. A
//! later kernel's misses may be compiled ahead, on a thread of their own
//! ([`TaskProvider::compile_ahead`]), their locks claimed first as any
//! compile's.
//!
//! Must never: compute a key any other way than [`kiln::key::task_key`]
//! (through [`kiln::plan::key_and_meta`])
//! (what `kiln-key` prints), load an object from a scope other than the
//! target's, store a task's object that failed to load (a function record
//! is stored once compiled, for single flight, and replaced if it then
//! fails to load: see its [`RecordSource`]), reuse a failed dylib
//! (every load is a fresh one, see [`Jit::load_task`]), print, or fail a
//! run because of anything found in the cache: a damaged or unloadable
//! record is erased, counted, compiled afresh and stored again; ask the
//! remote for a key the local store holds.

use crate::provide::{ready_functions, JitStats, Prefetched, ProvideError, RecordSource, TaskProvider};
use crate::{Jit, LoadedFunction, LoadedTask};
use kiln::cache::record::{self, Producer};
use kiln::cache::{CacheError, Key, Lookup, Store};
use kiln::config::{LaunchMeta, LLVM_VERSION};
use kiln::flight::{Flight, FlightOptions, Waited};
use kiln::ir::Module;
use kiln::key::functions::NeededRecord;
use kiln::plan::key_and_meta;
use kiln::remote::{Fetched, RemoteTier};
use kiln_llvm::session::{same_launch, Session};
use kiln_llvm::{Backend, CodegenError, CompiledTask};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a lookup ended before any compile.
enum Found {
    /// A record whose object loaded.
    Loaded(LoadedTask),
    /// A record that decoded but whose metadata or object was rejected
    /// (the record has been erased).
    Rejected,
    /// A damaged record (the store erased it).
    Damaged,
    Missing,
    /// A record from the remote tier, loaded.
    Remote(LoadedTask),
}

/// Record writes running in the background, and what each wrote.
type Writer = JoinHandle<Written>;

/// What a background write did locally: the records it stored, those it
/// could not, and the first reason why.
#[derive(Default)]
struct Written {
    stored: u64,
    failed: u64,
    error: Option<CacheError>,
}

impl Written {
    /// `n` records written as one batch (one error fails them all), or
    /// none when `put` is `None` (nothing was written locally).
    fn of(n: usize, put: Option<Result<usize, CacheError>>) -> Written {
        match put {
            None => Written::default(),
            Some(Ok(stored)) => Written { stored: stored as u64, ..Written::default() },
            Some(Err(e)) => Written { failed: n as u64, error: Some(e), ..Written::default() },
        }
    }
}

/// When the local copies of the records the remote returned are written.
/// They are not needed for the kernel to be ready, and on a warm remote a
/// kernel's loads would otherwise share the CPU with its writes (and wait
/// for them past [`MAX_WRITES_IN_FLIGHT`]); `docs/performance.md`,
/// "Remote tier", measures both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FetchedWrites {
    /// Held back, and written in order by one background thread started
    /// when the kernel is ready ([`TaskProvider::ready`]); at the latest by
    /// [`TaskProvider::finish`] or when the provider is dropped.
    #[default]
    AfterReady,
    /// Each started at once on a thread of its own, as a compiled
    /// record's write is.
    AtOnce,
}

/// The cache's [`TaskProvider`]: key, look up, load; or compile, load and
/// store. A record is written by a thread of its own while the run goes
/// on (the task is ready to launch once it is loaded; the write, with its
/// `fsync`, need not delay it); records the remote returned wait until the
/// kernel is ready (see [`FetchedWrites`]). [`TaskProvider::finish`] and
/// dropping the provider write what is held back and wait for every write.
pub struct CachedTasks {
    store: Arc<Store>,
    /// Record writes in flight: what they write (for a warning) and the
    /// writer.
    writes: VecDeque<(String, Writer)>,
    /// What this process compiled and stored, or fetched, by key: a task
    /// met again (an identical task of another kernel) is a hit even while
    /// its record is still being written or held back.
    compiled: HashMap<Key, Arc<Job>>,
    /// When fetched records are written locally.
    fetched_writes: FetchedWrites,
    /// Fetched records whose local write waits for the kernel to be ready.
    held: Vec<Arc<Job>>,
    /// The remote tier, if one is configured.
    remote: Option<Arc<RemoteTier>>,
    /// Verified records the remote returned for a kernel's lookup, not
    /// yet used.
    fetched: HashMap<Key, kiln::cache::Record>,
    /// Keys already asked of the remote (found or not).
    asked: HashSet<Key>,
    /// The keys and launch metadata the last [`TaskProvider::prefetch`]
    /// computed, for `provide` to take instead of keying a module again.
    keyed: Prefetched<(Key, LaunchMeta)>,
    /// What the last prefetch compiled (the tasks neither tier held), not
    /// loaded yet.
    precompiled: HashMap<Key, Result<CompiledTask, CodegenError>>,
    /// Batches of a later kernel's tasks compiling on threads of their own
    /// ([`TaskProvider::compile_ahead`]), taken into `precompiled` when a
    /// prefetch or a provide needs one of their keys.
    ahead: Vec<Ahead>,
    /// The modules of tasks others were compiling when claimed, by key,
    /// until their wait ends ([`CachedTasks::compile_taken`]).
    awaited: HashMap<Key, Module>,
    /// Records not written: a read-only cache's, or every one after the
    /// first write failed (a full disk, a read-only file system). One
    /// summary line says so at the end, not one per task.
    not_stored: u64,
    /// Why the first write failed, if one did.
    store_error: Option<String>,
    /// Per-task warnings, by cause.
    repeats: Repeats,
    /// The keys this process compiles (their locks and leases) and those
    /// it waits for others to compile.
    flight: Flight,
    /// Function records fetched from the remote and not loaded yet:
    /// stored locally once they load.
    records_pending: HashMap<Key, Job>,
    /// The function records the task being provided links to.
    deps: Vec<LoadedFunction>,
}

/// Modules with their keys.
type Keyed<'m> = Vec<(&'m Module, Key)>;

/// Tasks compiled ahead, on a thread of their own, while the run prepares
/// and launches the kernels before theirs: their keys (whose locks this
/// process holds), and the thread that returns one result a key, in order.
struct Ahead {
    keys: Vec<Key>,
    thread: JoinHandle<Vec<Result<CompiledTask, CodegenError>>>,
}

/// A record to write: key, metadata, object, and its compile time.
type Job = (Key, LaunchMeta, Vec<u8>, Duration);

/// At most this many record writes run at once; the next waits for the
/// oldest.
const MAX_WRITES_IN_FLIGHT: usize = 8;

/// The run's per-task cache warnings by cause (the message without its
/// task): one line per cause, naming the first task, with a count when
/// the cause repeats; said once the run is finished.
#[derive(Default)]
struct Repeats(Vec<(String, String, u64)>);

impl Repeats {
    fn add(&mut self, cause: String, task: &str) {
        match self.0.iter_mut().find(|(c, _, _)| *c == cause) {
            Some(seen) => seen.2 += 1,
            None => self.0.push((cause, task.to_string(), 1)),
        }
    }

    /// Each cause as one warning of `stats`.
    fn flush(&mut self, stats: &mut JitStats) {
        for (cause, task, n) in self.0.drain(..) {
            let more = if n > 1 { format!(", and {} more tasks", n - 1) } else { String::new() };
            stats.warn(format!("{cause} (task @{task}{more})"));
        }
    }
}

impl CachedTasks {
    /// A provider over an open store (see [`open_store`]).
    pub fn new(store: Store) -> CachedTasks {
        CachedTasks::over(Arc::new(store))
    }

    /// A provider of the same cache (store, remote tier, sharing of
    /// compiles, when fetched records are written) with state of its own:
    /// a run's quick tier ([`crate::tiers`]), whose keys are not the
    /// optimised tier's.
    pub fn sibling(&self) -> CachedTasks {
        let mut sibling = CachedTasks::over(self.store.clone());
        sibling.remote = self.remote.clone();
        sibling.flight = Flight::new(self.flight.options());
        sibling.fetched_writes = self.fetched_writes;
        sibling
    }

    /// Whether the store is only read (nothing compiled is stored).
    pub fn read_only(&self) -> bool {
        self.store.read_only()
    }

    /// The cache root.
    pub fn root(&self) -> &std::path::Path {
        self.store.root()
    }

    fn over(store: Arc<Store>) -> CachedTasks {
        CachedTasks {
            store,
            writes: VecDeque::new(),
            compiled: HashMap::new(),
            fetched_writes: FetchedWrites::default(),
            held: Vec::new(),
            remote: None,
            fetched: HashMap::new(),
            asked: HashSet::new(),
            keyed: Prefetched::default(),
            precompiled: HashMap::new(),
            ahead: Vec::new(),
            awaited: HashMap::new(),
            not_stored: 0,
            store_error: None,
            repeats: Repeats::default(),
            flight: Flight::new(FlightOptions::default()),
            records_pending: HashMap::new(),
            deps: Vec::new(),
        }
    }

    /// The provider of a session: its store, sharing compiles as its
    /// flight options say, with its remote tier behind the store.
    pub fn of_session(session: Session) -> CachedTasks {
        let provider = CachedTasks::new(session.store).with_flight(session.flight);
        match session.remote {
            Some(remote) => provider.with_remote(remote),
            None => provider,
        }
    }

    /// The same provider with a remote tier behind the local store.
    pub fn with_remote(mut self, remote: RemoteTier) -> CachedTasks {
        self.remote = Some(Arc::new(remote));
        self
    }

    /// The same provider sharing compiles with other processes and
    /// machines as `options` say (see [`kiln::flight`]).
    pub fn with_flight(mut self, options: FlightOptions) -> CachedTasks {
        self.flight = Flight::new(options);
        self
    }

    /// The same provider writing fetched records `when` (the default:
    /// after the kernel is ready).
    pub fn with_fetched_writes(mut self, when: FetchedWrites) -> CachedTasks {
        self.fetched_writes = when;
        self
    }

    /// Whether records are written to the local store (not read-only, and
    /// no write has failed yet).
    fn writes_locally(&self) -> bool {
        !self.store.read_only() && self.store_error.is_none()
    }

    /// Starts writing a record in the background: to the local store
    /// (unless it cannot be written: counted as not stored), and to the
    /// remote too when `to_remote` (a record compiled here).
    fn store_later(&mut self, job: Job, to_remote: bool, task: &str, stats: &mut JitStats) {
        let job = Arc::new(job);
        self.compiled.insert(job.0, job.clone());
        let local = self.writes_locally();
        if !local && to_remote {
            self.not_stored += 1;
        }
        let held = self.flight.take(&job.0);
        let remote = match self.remote.clone().filter(|_| to_remote) {
            Some(r) if !r.writes() => {
                r.skip();
                None
            }
            r => r,
        };
        if !local && remote.is_none() {
            if let Some(h) = held {
                h.finish(&job.0, self.remote.as_deref());
            }
            return;
        }
        let held = Arc::new(std::sync::Mutex::new(held));
        let (store, j, lease_tier) = (self.store.clone(), job, self.remote.clone());
        let write = move || {
            let put = local.then(|| store.put_compiled(&j.0, &j.1, &j.2, j.3));
            if let Some(r) = remote {
                let compile_ms = j.3.as_millis().try_into().unwrap_or(u64::MAX);
                let producer = Producer { compile_ms, ..Producer::now(LLVM_VERSION) };
                // Encoding cannot fail for a record the compiler just made.
                if let Ok(bytes) = record::encode(&j.0, &j.1, &producer, &j.2) {
                    r.put(&j.0, &bytes);
                }
            }
            // The lock and lease go once the record is out (a write run
            // twice, when no thread could start, releases them once).
            if let Some(h) = held.lock().ok().and_then(|mut h| h.take()) {
                h.finish(&j.0, lease_tier.as_deref());
            }
            Written::of(1, put.map(|r| r.map(|()| 1)))
        };
        self.spawn_write(format!("task @{task}"), write, stats);
    }

    /// Runs `write` on a thread of its own (at most
    /// [`MAX_WRITES_IN_FLIGHT`] at once), or now when no thread can start.
    fn spawn_write<W>(&mut self, what: String, write: W, stats: &mut JitStats)
    where
        W: FnOnce() -> Written + Clone + Send + 'static,
    {
        while self.writes.len() >= MAX_WRITES_IN_FLIGHT {
            self.join_oldest(stats);
        }
        match std::thread::Builder::new().name("kiln-cache-write".into()).spawn(write.clone()) {
            Ok(h) => self.writes.push_back((what, h)),
            // No thread to spare: write it now.
            Err(_) => self.count_write(write(), stats),
        }
    }

    /// Keeps a record the remote returned (and this process loaded) for
    /// the local store: held back until the kernel is ready, or written at
    /// once (see [`FetchedWrites`]).
    fn store_fetched(&mut self, job: Job, task: &str, stats: &mut JitStats) {
        if self.fetched_writes == FetchedWrites::AtOnce {
            return self.store_later(job, false, task, stats);
        }
        let job = Arc::new(job);
        self.compiled.insert(job.0, job.clone());
        if self.writes_locally() {
            self.held.push(job);
        }
    }

    /// Starts writing the held-back fetched records on one thread, as
    /// packs (`Store::put_fetched_all`: one inode for them all, not one
    /// file and shard directory each); a failure ends later writes.
    fn write_held(&mut self, stats: &mut JitStats) {
        let jobs = std::mem::take(&mut self.held);
        if jobs.is_empty() || !self.writes_locally() {
            return;
        }
        let (n, store) = (jobs.len(), self.store.clone());
        let write = move || {
            let records = jobs.iter().map(|j| (&j.0, &j.1, j.2.as_slice(), j.3));
            // A failed batch counts each of its records as not stored
            // (the warning said "1 record" for ten).
            Written::of(n, Some(store.put_fetched_all(records)))
        };
        self.spawn_write(format!("{n} records fetched from the remote"), write, stats);
    }

    /// Counts a finished write; the first failure stops further writes.
    fn count_write(&mut self, written: Written, stats: &mut JitStats) {
        stats.run.stored += written.stored;
        self.not_stored += written.failed;
        if let Some(e) = written.error {
            self.store_error.get_or_insert_with(|| e.to_string());
        }
    }

    /// A remote hit for `key` (asking the remote now if the kernel's
    /// lookup did not), loaded; `None` when the remote has no usable
    /// record (a refused one is counted as rejected).
    fn remote_lookup(
        &mut self,
        jit: &Jit,
        key: &Key,
        meta: &LaunchMeta,
        hint: &str,
        stats: &mut JitStats,
    ) -> Option<LoadedTask> {
        let remote = self.remote.clone()?;
        let _span = kiln::trace::span("remote", "remote fetch", hint);
        if !self.asked.contains(key) {
            self.ask_remote(&remote, &[*key]);
        }
        let record = self.fetched.remove(key)?;
        let t0 = Instant::now();
        // The record passed every check of the remote tier before it got
        // here; only now do its bytes reach LLVM.
        let loaded = if same_launch(&record.meta, meta) {
            jit.load_task_with(hint, &record.object, meta, &self.deps).ok()
        } else {
            None
        };
        stats.run.load_time += t0.elapsed();
        match loaded {
            Some(t) => {
                let compile = Duration::from_millis(record.producer.compile_ms);
                self.store_fetched((*key, record.meta, record.object, compile), hint, stats);
                Some(t)
            }
            None => {
                remote.refused();
                None
            }
        }
    }

    /// Asks the remote for `keys` at once and keeps the verified records.
    fn ask_remote(&mut self, remote: &RemoteTier, keys: &[Key]) {
        let _span = kiln::trace::span("remote", "remote fetch", &format!("({} tasks)", keys.len()));
        self.asked.extend(keys.iter().copied());
        for (key, found) in keys.iter().zip(remote.get_many(keys)) {
            if let Fetched::Hit(r) = found {
                self.fetched.insert(*key, r);
            }
        }
    }

    /// Keys `modules` (kept for `provide`), and looks each key up: in
    /// what this process made, in the local store, and (for the keys
    /// neither holds, at once) in the remote. Every module that keys, with
    /// its key; and those of them no tier holds.
    fn look_up_all<'m>(
        &mut self,
        backend: &dyn Backend,
        modules: &[&'m Module],
        stats: &mut JitStats,
    ) -> (Keyed<'m>, Keyed<'m>) {
        let t0 = Instant::now();
        // A module that does not key fails in `provide`, with its error.
        let keyed: Vec<(&Module, (Key, LaunchMeta))> =
            modules.iter().map_while(|m| key_and_meta(m, backend.config()).ok().map(|k| (*m, k))).collect();
        // Local first: a key the local store holds (or this process made)
        // is neither asked of the remote nor compiled here.
        let mut absent: Vec<(&Module, Key)> = Vec::new();
        let mut seen = HashSet::new();
        for (m, (key, _)) in &keyed {
            if !self.compiled.contains_key(key) && seen.insert(*key) && !self.store.holds(key) {
                absent.push((m, *key));
            }
        }
        let all: Vec<(&Module, Key)> = keyed.iter().map(|(m, (k, _))| (*m, *k)).collect();
        self.keyed.clear();
        for (m, k) in keyed {
            self.keyed.push(m, k);
        }
        stats.run.key_time += t0.elapsed();
        if let Some(remote) = self.remote.clone().filter(|r| r.is_on()) {
            let keys: Vec<Key> = absent.iter().map(|(_, k)| *k).filter(|k| !self.asked.contains(k)).collect();
            if !keys.is_empty() {
                self.ask_remote(&remote, &keys);
            }
        }
        absent.retain(|(_, k)| !self.fetched.contains_key(k) && !self.precompiled.contains_key(k));
        (all, absent)
    }

    /// Waits for the oldest write in flight and counts it.
    fn join_oldest(&mut self, stats: &mut JitStats) {
        let Some((what, h)) = self.writes.pop_front() else { return };
        match h.join() {
            Ok(done) => self.count_write(done, stats),
            Err(_) => stats.warn(format!("the cache write of {what} failed")),
        }
    }

    /// The one line that sums up the records not written, if any.
    fn summary(&self) -> Option<String> {
        let n = self.not_stored;
        let records = if n == 1 { "record" } else { "records" };
        match (&self.store_error, self.store.read_only()) {
            (_, true) if n > 0 => Some(format!("read-only cache: {n} compiled task {records} not stored")),
            (Some(e), _) if n > 0 => Some(format!("cannot write to the cache, {n} {records} not stored: {e}")),
            _ => None,
        }
    }

    /// The store's byte counters and the remote's counters (and its
    /// warning, once), as the run's.
    fn count_bytes(&self, stats: &mut JitStats) {
        let s = self.store.stats();
        (stats.run.bytes_read, stats.run.bytes_written) = (s.bytes_read, s.bytes_written);
        if let Some(r) = &self.remote {
            if let Some(w) = r.take_warning() {
                stats.warnings.push(w);
            }
            stats.remote = Some((r.settings().display.clone(), r.stats()));
        }
    }

    /// The store it reads and writes.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// `module`'s key and launch metadata: the ones the last prefetch
    /// computed, when `module` is the next it keyed, else computed now.
    fn key_of(&mut self, module: &Module, backend: &dyn Backend) -> Result<(Key, LaunchMeta), CodegenError> {
        self.keyed.take(module).map_or_else(|| Ok(key_and_meta(module, backend.config())?), Ok)
    }

    /// Keeps a copy of the modules of the tasks others were compiling
    /// when this process claimed them: a wait that takes one over may
    /// take over others of the same holder, compiled then as one batch.
    fn note_awaited(&mut self, modules: &[(&Module, Key)]) {
        for (m, k) in modules {
            if self.flight.is_waiting(k) {
                self.awaited.entry(*k).or_insert_with(|| (*m).clone());
            }
        }
    }

    /// Takes the objects of every batch compiled ahead that holds a key
    /// `wanted` accepts into `precompiled`, waiting for its thread. A
    /// thread that panicked leaves its keys to be compiled again here.
    fn join_ahead(&mut self, wanted: impl Fn(&Key) -> bool) {
        let (join, keep) = std::mem::take(&mut self.ahead).into_iter().partition(|a| a.keys.iter().any(&wanted));
        self.ahead = keep;
        for Ahead { keys, thread } in join {
            let _span = kiln::trace::span("compile", "wait for the compile ahead", &format!("({} tasks)", keys.len()));
            if let Ok(results) = thread.join() {
                self.precompiled.extend(keys.into_iter().zip(results));
            }
        }
    }

    /// Whether a batch compiled ahead holds `key`.
    fn compiling_ahead(&self, key: &Key) -> bool {
        self.ahead.iter().any(|a| a.keys.contains(key))
    }

    /// Compiles, as one batch, the tasks a wait took over besides the one
    /// it waited for (and that one, `this`, when it was taken over too).
    fn compile_taken(&mut self, backend: &dyn Backend, this: Option<(&Module, Key)>, taken: Vec<Key>) {
        let others: Vec<(Key, Module)> = taken.iter().filter_map(|k| Some((*k, self.awaited.remove(k)?))).collect();
        let mut batch: Vec<(&Module, Key)> = others.iter().map(|(k, m)| (m, *k)).collect();
        batch.extend(this);
        if batch.len() < 2 {
            return;
        }
        let modules: Vec<&Module> = batch.iter().map(|(m, _)| *m).collect();
        let remote = self.remote.clone().filter(|r| r.is_on());
        let compiled = self.flight.renewing(remote.as_deref(), || backend.compile_tasks(&modules));
        self.precompiled.extend(batch.iter().map(|(_, k)| *k).zip(compiled));
    }

    /// Waits for `key`, which another process or machine is compiling,
    /// and looks it up again; `None` when there is still nothing to load
    /// (this process compiles it).
    fn wait_for(
        &mut self,
        jit: &Jit,
        key: &Key,
        meta: &LaunchMeta,
        task: &str,
        stats: &mut JitStats,
    ) -> (Option<Found>, Vec<Key>) {
        let _span = kiln::trace::span("cache", "wait for another compile", task);
        let (waited, taken) = self.flight.wait_one(&self.store, self.remote.as_deref(), key);
        self.awaited.remove(key);
        stats.run.wait_time = self.flight.wait_time;
        for k in &taken {
            self.asked.remove(k);
        }
        let found = match waited {
            Waited::Appeared => self.lookup(jit, key, meta, task, stats),
            Waited::Fetched(r) => {
                self.fetched.insert(*key, r);
                match self.remote_lookup(jit, key, meta, task, stats) {
                    Some(t) => Found::Remote(t),
                    None => return (None, taken),
                }
            }
            Waited::Compile => {
                // A holder of this machine that got it from the remote
                // stores it after its kernel is ready: ask the remote again.
                self.asked.remove(key);
                return (None, taken);
            }
        };
        if matches!(found, Found::Loaded(_) | Found::Remote(_)) {
            stats.run.waited += 1;
        }
        (Some(found), taken)
    }

    fn lookup(&mut self, jit: &Jit, key: &Key, meta: &LaunchMeta, hint: &str, stats: &mut JitStats) -> Found {
        let _span = kiln::trace::span("cache", "cache lookup", hint);
        let t0 = Instant::now();
        if let Some(job) = self.compiled.get(key).filter(|j| same_launch(&j.1, meta)) {
            if let Ok(t) = jit.load_task_with(hint, &job.2, meta, &self.deps) {
                stats.run.load_time += t0.elapsed();
                return Found::Loaded(t);
            }
        }
        let got = self.store.get(key);
        stats.run.load_time += t0.elapsed();
        let record = match got {
            Ok(Lookup::Hit(r)) => r,
            Ok(Lookup::Miss) => return Found::Missing,
            Ok(Lookup::Corrupt(_)) => return Found::Damaged,
            Err(e) => {
                // Neither a record nor damage (a shard the process may not
                // read): compile, and say so.
                self.repeats.add(format!("cache lookup failed, compiling the task: {e}"), hint);
                return Found::Missing;
            }
        };
        if same_launch(&record.meta, meta) {
            // A fresh dylib per attempt: a failed one's name is never
            // reused, and the add or link error is an ordinary value.
            if let Ok(t) = jit.load_task_with(hint, &record.object, meta, &self.deps) {
                stats.run.load_time += t.times.add + t.times.link;
                return Found::Loaded(t);
            }
        }
        if let Err(e) = self.store.discard(key) {
            self.repeats.add(format!("cannot remove a rejected record: {e}"), hint);
        }
        Found::Rejected
    }
}

impl TaskProvider for CachedTasks {
    fn provide(
        &mut self,
        jit: &Jit,
        backend: &dyn Backend,
        module: &Module,
        task: &str,
        stats: &mut JitStats,
    ) -> Result<LoadedTask, ProvideError> {
        let t0 = Instant::now();
        let (key, meta) = self.key_of(module, backend).map_err(ProvideError::Codegen)?;
        stats.run.key_time += t0.elapsed();
        self.deps = ready_functions(jit, backend, module, self, stats)?;
        let mut found = self.lookup(jit, &key, &meta, task, stats);
        if !matches!(found, Found::Loaded(_)) && self.flight.is_waiting(&key) {
            found = match self.wait_for(jit, &key, &meta, task, stats) {
                (Some(f), taken) => {
                    self.compile_taken(backend, None, taken);
                    f
                }
                (None, taken) => {
                    self.compile_taken(backend, Some((module, key)), taken);
                    found
                }
            };
        }
        if !matches!(found, Found::Loaded(_) | Found::Remote(_)) {
            if let Some(t) = self.remote_lookup(jit, &key, &meta, task, stats) {
                found = Found::Remote(t);
            }
        }
        if matches!(found, Found::Loaded(_) | Found::Remote(_)) {
            // Taken over from a holder that stored it just then: nothing
            // to compile, so the lock and lease go now.
            if let Some(held) = self.flight.take(&key) {
                held.finish(&key, self.remote.as_deref());
            }
        }
        let result = match found {
            Found::Loaded(t) => {
                stats.run.hits += 1;
                stats.tasks_loaded += 1;
                Ok(t)
            }
            Found::Remote(t) => {
                stats.tasks_loaded += 1;
                Ok(t)
            }
            other => {
                match other {
                    Found::Missing => stats.run.misses += 1,
                    _ => stats.run.corrupt_replaced += 1,
                }
                self.join_ahead(|k| *k == key);
                let compiled = self.precompiled.remove(&key);
                let remote = self.remote.as_deref();
                let c = compiled
                    .unwrap_or_else(|| self.flight.renewing(remote, || backend.compile_task(module)))
                    .map_err(ProvideError::Codegen)?;
                stats.run.compiled += 1;
                stats.run.compile_time += c.compile_time;
                let t1 = Instant::now();
                // Loaded before it is stored: a failed artifact is never stored.
                let loaded = jit.load_task_with(task, &c.object, &meta, &self.deps).map_err(ProvideError::Jit)?;
                stats.run.load_time += t1.elapsed();
                stats.tasks_loaded += 1;
                self.store_later((key, c.meta, c.object, c.compile_time), true, task, stats);
                Ok(loaded)
            }
        };
        self.count_bytes(stats);
        result
    }

    fn prefetch(&mut self, backend: &dyn Backend, modules: &[&Module], stats: &mut JitStats) {
        let (all, mut absent) = self.look_up_all(backend, modules, stats);
        let keys: HashSet<Key> = absent.iter().map(|(_, k)| *k).collect();
        self.join_ahead(|k| keys.contains(k));
        absent.retain(|(_, k)| !self.precompiled.contains_key(k));
        // What neither tier holds and no other process or machine is
        // compiling is compiled together.
        let remote = self.remote.clone().filter(|r| r.is_on());
        if !absent.is_empty() {
            let keys: Vec<Key> = absent.iter().map(|(_, k)| *k).collect();
            let mine = self.flight.claim(&self.store, remote.as_deref(), &keys);
            absent.retain(|(_, k)| mine.contains(k));
        }
        if !absent.is_empty() {
            let batch: Vec<&Module> = absent.iter().map(|(m, _)| *m).collect();
            let compiled = self.flight.renewing(remote.as_deref(), || backend.compile_tasks(&batch));
            self.precompiled.extend(absent.iter().map(|(_, k)| *k).zip(compiled));
        }
        self.note_awaited(&all);
        self.count_bytes(stats);
    }

    fn can_compile_ahead(&self) -> bool {
        // A remote's leases are renewed by a compile on the run's own
        // thread (`Flight::renewing`), and a read-only cache keeps nothing.
        self.remote.is_none() && !self.store.read_only()
    }

    fn compile_ahead(&mut self, backend: Arc<dyn Backend>, modules: &[&Module], stats: &mut JitStats) {
        if !self.can_compile_ahead() {
            return;
        }
        let (_, mut absent) = self.look_up_all(&*backend, modules, stats);
        self.keyed.clear();
        absent.retain(|(_, k)| !self.compiling_ahead(k));
        if absent.is_empty() {
            return;
        }
        let keys: Vec<Key> = absent.iter().map(|(_, k)| *k).collect();
        let mine = self.flight.claim(&self.store, None, &keys);
        let batch: Vec<(Module, Key)> =
            absent.into_iter().filter(|(_, k)| mine.contains(k)).map(|(m, k)| (m.clone(), k)).collect();
        if batch.is_empty() {
            return;
        }
        let keys = batch.iter().map(|(_, k)| *k).collect();
        let compile = move || {
            let modules: Vec<&Module> = batch.iter().map(|(m, _)| m).collect();
            backend.compile_tasks(&modules)
        };
        // A thread that cannot be started leaves the claimed keys to the
        // kernel's own prefetch, which compiles what this process holds.
        if let Ok(thread) = std::thread::Builder::new().name("kiln-ahead".into()).spawn(compile) {
            self.ahead.push(Ahead { keys, thread });
        }
    }

    fn lookup(&mut self, backend: &dyn Backend, modules: &[&Module], stats: &mut JitStats) -> Vec<bool> {
        let (all, absent) = self.look_up_all(backend, modules, stats);
        self.count_bytes(stats);
        // `all` is the modules that key, in order, up to the first that
        // does not (which `provide` then reports).
        let absent: HashSet<Key> = absent.into_iter().map(|(_, k)| k).collect();
        let mut present: Vec<bool> = all.iter().map(|(_, k)| !absent.contains(k)).collect();
        present.resize(modules.len(), false);
        present
    }

    fn ready(&mut self, stats: &mut JitStats) {
        self.keyed.clear();
        self.write_held(stats);
    }

    fn finish(&mut self, stats: &mut JitStats) {
        // A batch compiled ahead for a kernel that never ran (the run
        // failed or was interrupted first) is waited for, so that its
        // compiler process and temporary directory are gone, and dropped:
        // only a task that loaded is stored.
        for Ahead { thread, .. } in std::mem::take(&mut self.ahead) {
            let _ = thread.join();
        }
        self.write_held(stats);
        while !self.writes.is_empty() {
            self.join_oldest(stats);
        }
        self.flight.release_all(self.remote.as_deref());
        self.flight.end_run();
        self.repeats.flush(stats);
        if let Some(line) = self.flight.ran_out_warning() {
            stats.warn(line);
            self.flight.ran_out = 0;
        }
        if let Some(line) = self.summary() {
            stats.warn(line);
            // Said once, however often the run is finished.
            self.not_stored = 0;
        }
        if let Some(line) = self.store.take_counter_problem() {
            stats.warn(line);
        }
        self.count_bytes(stats);
        // Statistics inform: one that cannot be added up (a read-only file
        // system, a full disk) is skipped without a warning.
        let _ = self.store.flush_stats();
    }
}

/// Function records come from the store, then the remote, then the
/// compiler, as tasks do, with single flight as tasks have it
/// ([`kiln::flight`]): of the records no tier holds, this process
/// compiles those no other process or machine is compiling, and waits
/// for the others. A record compiled here is stored as soon as it is
/// compiled (which releases its lock and lease), not once it loads as a
/// task is: a process waits for records while it holds the locks of its
/// own tasks, and holding a record's lock while waiting for another's
/// could make two processes wait for each other until the bound. An
/// object that then fails to load is replaced as a damaged one is.
impl RecordSource for CachedTasks {
    fn objects(
        &mut self,
        backend: &dyn Backend,
        wanted: &[NeededRecord<'_>],
        fresh: bool,
        stats: &mut JitStats,
    ) -> Vec<Result<Vec<u8>, ProvideError>> {
        let mut out: Vec<Option<Result<Vec<u8>, ProvideError>>> = wanted.iter().map(|_| None).collect();
        for (r, slot) in wanted.iter().zip(out.iter_mut()) {
            if fresh {
                let _ = self.store.discard(&r.key);
                continue;
            }
            if let Some(job) = self.compiled.get(&r.key).filter(|j| j.1 == r.meta) {
                *slot = Some(Ok(job.2.clone()));
                continue;
            }
            *slot = self.local_function(r, stats).map(Ok);
        }
        self.fetch_records(wanted, &mut out, fresh, stats);
        self.compile_records(backend, wanted, &mut out, fresh, stats);
        out.into_iter().map(|o| o.unwrap_or_else(|| Err(ProvideError::Other("no object".into())))).collect()
    }

    fn loaded(&mut self, key: &Key, stats: &mut JitStats) {
        if let Some(job) = self.records_pending.remove(key) {
            let name = format!("function {}", job.1.task);
            self.store_fetched(job, &name, stats);
        }
    }
}

impl CachedTasks {
    /// The object of record `r` in the local store, if it holds a usable
    /// one (a damaged one is counted, and replaced when compiled).
    fn local_function(&mut self, r: &NeededRecord<'_>, stats: &mut JitStats) -> Option<Vec<u8>> {
        match self.store.get(&r.key) {
            Ok(Lookup::Hit(rec)) if rec.meta == r.meta => {
                stats.run.function_hits += 1;
                Some(rec.object)
            }
            Ok(Lookup::Hit(_)) => {
                let _ = self.store.discard(&r.key);
                stats.run.corrupt_replaced += 1;
                None
            }
            Ok(Lookup::Corrupt(_)) => {
                stats.run.corrupt_replaced += 1;
                None
            }
            Ok(Lookup::Miss) | Err(_) => None,
        }
    }

    /// Fills what `out` lacks: the records this process claims (all of
    /// them when `fresh`) are compiled in one batch and stored; then each
    /// record another is compiling is waited for, and what a wait does
    /// not bring is compiled in a second batch.
    fn compile_records(
        &mut self,
        backend: &dyn Backend,
        wanted: &[NeededRecord<'_>],
        out: &mut [Option<Result<Vec<u8>, ProvideError>>],
        fresh: bool,
        stats: &mut JitStats,
    ) {
        let missing: Vec<usize> = (0..wanted.len()).filter(|&i| out[i].is_none()).collect();
        if missing.is_empty() {
            return;
        }
        let remote = self.remote.clone().filter(|r| r.is_on() && !fresh);
        let keys: Vec<Key> = missing.iter().map(|&i| wanted[i].key).collect();
        let mine = if fresh { keys } else { self.flight.claim(&self.store, remote.as_deref(), &keys) };
        let (now, others): (Vec<usize>, Vec<usize>) = missing.into_iter().partition(|&i| mine.contains(&wanted[i].key));
        self.compile_and_store(backend, wanted, &now, out, stats);
        let mut again = Vec::new();
        for i in others {
            out[i] = self.wait_for_record(&wanted[i], stats).map(Ok);
            if out[i].is_none() {
                again.push(i);
            }
        }
        self.compile_and_store(backend, wanted, &again, out, stats);
    }

    /// Compiles records `batch` of `wanted` together, fills their slots
    /// of `out`, and starts storing each (its lock and lease released
    /// once it is written).
    fn compile_and_store(
        &mut self,
        backend: &dyn Backend,
        wanted: &[NeededRecord<'_>],
        batch: &[usize],
        out: &mut [Option<Result<Vec<u8>, ProvideError>>],
        stats: &mut JitStats,
    ) {
        if batch.is_empty() {
            return;
        }
        let todo: Vec<NeededRecord> = batch.iter().map(|&i| wanted[i].clone()).collect();
        let remote = self.remote.clone().filter(|r| r.is_on());
        let compiled =
            self.flight.renewing(remote.as_deref(), || crate::provide::compile_records(backend, &todo, stats));
        let mut compiled = compiled.into_iter();
        for &i in batch {
            let c = compiled
                .next()
                .unwrap_or_else(|| Err(ProvideError::Other("the compiler returned too few objects".into())));
            out[i] = Some(c.map(|c| {
                let name = format!("function {}", c.meta.task);
                let object = c.object.clone();
                self.store_later((wanted[i].key, c.meta, c.object, c.compile_time), true, &name, stats);
                object
            }));
        }
    }

    /// Waits for record `r`, which another process or machine is
    /// compiling (or whose record appeared since the claim), and looks it
    /// up again; `None` when this process compiles it after all.
    fn wait_for_record(&mut self, r: &NeededRecord<'_>, stats: &mut JitStats) -> Option<Vec<u8>> {
        let remote = self.remote.clone().filter(|r| r.is_on());
        let waiting = self.flight.is_waiting(&r.key);
        let waited = self.flight.wait(&self.store, remote.as_deref(), &r.key);
        stats.run.wait_time = self.flight.wait_time;
        let object = match waited {
            Waited::Appeared => self.local_function(r, stats),
            Waited::Fetched(rec) if rec.meta == r.meta => {
                stats.run.function_hits += 1;
                let compile = Duration::from_millis(rec.producer.compile_ms);
                self.records_pending.insert(r.key, (r.key, rec.meta, rec.object.clone(), compile));
                Some(rec.object)
            }
            // Not awaited: its record appeared after the lookup, before
            // the claim.
            Waited::Compile if !waiting => self.local_function(r, stats),
            Waited::Fetched(_) => {
                remote.inspect(|t| t.refused());
                None
            }
            Waited::Compile => None,
        };
        if object.is_some() {
            stats.run.waited += u64::from(waiting);
            // Nothing to compile: what the wait left this process holding
            // goes now.
            if let Some(held) = self.flight.take(&r.key) {
                held.finish(&r.key, self.remote.as_deref());
            }
        }
        object
    }

    /// Fills the records of `wanted` that `out` lacks from the remote,
    /// asked once for all of them.
    fn fetch_records(
        &mut self,
        wanted: &[NeededRecord<'_>],
        out: &mut [Option<Result<Vec<u8>, ProvideError>>],
        fresh: bool,
        stats: &mut JitStats,
    ) {
        let Some(remote) = self.remote.clone().filter(|r| r.is_on() && !fresh) else { return };
        let ask: Vec<usize> = (0..wanted.len()).filter(|&i| out[i].is_none()).collect();
        if ask.is_empty() {
            return;
        }
        let keys: Vec<Key> = ask.iter().map(|&i| wanted[i].key).collect();
        let _span = kiln::trace::span("remote", "remote fetch", &format!("({} function records)", keys.len()));
        for (&i, found) in ask.iter().zip(remote.get_many(&keys)) {
            let r = &wanted[i];
            match found {
                Fetched::Hit(rec) if rec.meta == r.meta => {
                    stats.run.function_hits += 1;
                    let compile = Duration::from_millis(rec.producer.compile_ms);
                    out[i] = Some(Ok(rec.object.clone()));
                    self.records_pending.insert(r.key, (r.key, rec.meta, rec.object, compile));
                }
                Fetched::Hit(_) => remote.refused(),
                _ => {}
            }
        }
    }
}

impl Drop for CachedTasks {
    /// A record held back or being written is written before the process
    /// can exit.
    fn drop(&mut self) {
        self.write_held(&mut JitStats::default());
        for (_, h) in self.writes.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln::config::{MetaBound, MetaField, MetaKind, MetaParam};
    use kiln::ir::Scalar;

    fn meta(task: &str, param: &str) -> LaunchMeta {
        LaunchMeta {
            task: task.into(),
            entry_symbol: kiln::plan::ENTRY_SYMBOL.into(),
            kind: MetaKind::RangeFor { lo: MetaBound::Const(0), hi: MetaBound::Param(0), block_dim: 64 },
            params: vec![MetaParam { name: param.into(), ty: Scalar::I32 }],
            fields: vec![MetaField { name: "x".into(), elem: Scalar::F32, shape: vec![64] }],
        }
    }

    #[test]
    fn a_record_launches_the_same_way_under_other_names_only() {
        let stored = meta("k1.0", "n");
        assert!(same_launch(&stored, &meta("k2.3", "m")));
        let mut other = meta("k1.0", "n");
        other.params[0].ty = Scalar::I64;
        assert!(!same_launch(&stored, &other));
        let mut other = meta("k1.0", "n");
        other.fields[0].shape = vec![65];
        assert!(!same_launch(&stored, &other));
        let mut other = meta("k1.0", "n");
        other.kind = MetaKind::Serial;
        assert!(!same_launch(&stored, &other));
        let mut other = meta("k1.0", "n");
        other.entry_symbol = "kiln_task.1".into();
        assert!(!same_launch(&stored, &other));
    }

    #[test]
    fn a_cause_is_one_warning_with_its_count() {
        let mut r = Repeats::default();
        r.add("cache lookup failed, compiling the task: denied".into(), "k.0");
        r.add("cannot remove a rejected record: busy".into(), "k.1");
        r.add("cache lookup failed, compiling the task: denied".into(), "k.2");
        r.add("cache lookup failed, compiling the task: denied".into(), "k.3");
        let mut stats = JitStats::default();
        r.flush(&mut stats);
        r.flush(&mut stats);
        assert_eq!(
            stats.warnings,
            [
                "cache lookup failed, compiling the task: denied (task @k.0, and 2 more tasks)",
                "cannot remove a rejected record: busy (task @k.1)"
            ]
        );
    }
}
