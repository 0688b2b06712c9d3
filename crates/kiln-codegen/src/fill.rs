//! Filling a cache ahead of runs: what `kiln-compile --cache-dir` (and
//! `--remote`) does for a stream's tasks and function records.
//!
//! Owns: [`fill`] and [`fill_records`], which make sure the store (and the
//! remote, when given and writable) holds a good record for each per-task
//! module and each function record, sharing the compiles with other
//! processes and machines as a run does ([`kiln::flight`]: a record
//! another is compiling is waited for, within the `compile_wait` bound,
//! and taken); [`Filled`], what it did for one record, and
//! [`Filled::count`] / [`Filled::count_record`], its part of the `--stats`
//! report.
//!
//! Must never: load an object (the objects may be for another host: a
//! record is checked, checksum, key, metadata and the remote's signature,
//! never run); compute a key any other way than
//! [`kiln::plan::key_and_meta`]; keep a compile lock or lease past the
//! write of its record (or its failure); print or exit.

use kiln::cache::record::{self, Producer};
use kiln::cache::{CacheError, Key, Lookup, Record, Store};
use kiln::config::{LaunchMeta, LLVM_VERSION};
use kiln::flight::{Flight, FlightOptions, Held, Waited};
use kiln::ir::Module;
use kiln::key::functions::NeededRecord;
use kiln::plan::key_and_meta;
use kiln::remote::{Fetched, RemoteTier};
use kiln::stats::RunReport;
use kiln_llvm::session::same_launch;
use kiln_llvm::{Backend, CodegenError, CompiledTask};
use rayon::prelude::*;
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// What [`fill`] did for one task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filled {
    /// A good record was already there (or another process stored it
    /// while this one waited).
    Hit,
    /// No local record; the remote's was verified and stored locally.
    Remote,
    /// No record: compiled and stored.
    Stored,
    /// A damaged record: removed, compiled and stored afresh.
    Replaced,
}

/// What [`fill`] measured for one task.
#[derive(Clone, Copy, Debug, Default)]
pub struct FillTimes {
    pub key: Duration,
    pub read: Duration,
    pub compile: Duration,
}

/// What [`fill`] did for one task, or why it could not.
/// Why a task could not be filled: its compile failed, or the cache did.
#[derive(Debug)]
pub enum FillError {
    Codegen(CodegenError),
    Cache(String),
}

impl std::fmt::Display for FillError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FillError::Codegen(e) => write!(f, "{e}"),
            FillError::Cache(e) => f.write_str(e),
        }
    }
}

pub type Outcome = Result<(Filled, FillTimes), FillError>;

/// What [`fill`] did: each task's outcome, in order, and the waits.
pub struct Fill {
    pub tasks: Vec<Outcome>,
    /// Tasks another process or machine compiled, waited for and taken.
    pub waited: u64,
    pub wait_time: Duration,
    /// The one line about waits that ran out, if any did
    /// ([`Flight::ran_out_warning`]).
    pub warning: Option<String>,
}

/// What a record is compiled from.
enum Source<'m> {
    /// A per-task module.
    Task(&'m Module),
    /// A function record of a per-task module.
    Function(&'m NeededRecord<'m>),
}

/// One task or function record on its way through [`fill`].
struct Task<'m> {
    source: Source<'m>,
    name: String,
    key: Key,
    meta: LaunchMeta,
    times: FillTimes,
    /// `Stored` or `Replaced` until a record is found.
    outcome: Filled,
    local: Option<Record>,
    remote: Option<Record>,
}

/// Tasks to finish together: each with its place among the modules and
/// what this process holds for it.
type Batch<'m> = Vec<(usize, Task<'m>, Option<Held>)>;

impl Task<'_> {
    /// Whether a record of this key with metadata `meta` is this one's: a
    /// task's launches the same way under any names, a function record's
    /// metadata is equal.
    fn fits(&self, meta: &LaunchMeta) -> bool {
        match &self.source {
            Source::Task(_) => same_launch(meta, &self.meta),
            Source::Function(r) => *meta == r.meta,
        }
    }

    fn compile(&self, compiler: &dyn Backend) -> Result<CompiledTask, CodegenError> {
        match &self.source {
            Source::Task(m) => compiler.compile_task(m),
            Source::Function(r) => {
                let c = compiler.compile_functions(std::slice::from_ref(r)).pop();
                c.unwrap_or_else(|| Err(CodegenError::new("the compiler returned no object")))
            }
        }
    }
}

/// Makes sure the store (and the remote, when given and writable) holds a
/// good record for each of `modules` (per-task modules): a record found is
/// checked but not loaded, a missing or damaged one is compiled (in
/// parallel, on the current rayon pool) and stored, unless another process
/// or machine is compiling it (see [`kiln::flight`]): that one is waited
/// for, and its record taken. `done` is called once per task finished.
pub fn fill(
    store: &Store,
    remote: Option<&RemoteTier>,
    compiler: &dyn Backend,
    modules: &[&Module],
    options: FlightOptions,
    done: &(dyn Fn() + Sync),
) -> Fill {
    let looked: Vec<Result<Task, FillError>> = modules.par_iter().map(|m| look_up(store, compiler, m)).collect();
    fill_looked(store, remote, compiler, looked, options, done)
}

/// [`fill`] for function records (`kiln::key::functions`), each checked
/// and stored as a task's.
pub fn fill_records(
    store: &Store,
    remote: Option<&RemoteTier>,
    compiler: &dyn Backend,
    records: &[NeededRecord<'_>],
    options: FlightOptions,
    done: &(dyn Fn() + Sync),
) -> Fill {
    let looked: Vec<Result<Task, FillError>> = records.par_iter().map(|r| look_up_record(store, r)).collect();
    fill_looked(store, remote, compiler, looked, options, done)
}

/// [`fill`] of what has been looked up in the store.
fn fill_looked(
    store: &Store,
    remote: Option<&RemoteTier>,
    compiler: &dyn Backend,
    looked: Vec<Result<Task, FillError>>,
    options: FlightOptions,
    done: &(dyn Fn() + Sync),
) -> Fill {
    let remote = remote.filter(|r| r.is_on());
    let mut out: Vec<(usize, Outcome)> = Vec::new();
    let mut tasks = Vec::new();
    for (i, t) in looked.into_iter().enumerate() {
        match t {
            Ok(t) => tasks.push((i, t)),
            Err(e) => {
                done();
                out.push((i, Err(e)));
            }
        }
    }
    if let Some(r) = remote {
        ask_remote(r, &mut tasks);
    }
    // Identical tasks (of two kernels) share a key: it is claimed once.
    let mut seen = HashSet::new();
    let missing: Vec<Key> = tasks
        .iter()
        .filter(|(_, t)| t.local.is_none() && t.remote.is_none() && seen.insert(t.key))
        .map(|(_, t)| t.key)
        .collect();
    let mut flight = Flight::new(options);
    let mine = flight.claim(store, remote, &missing);
    // First what has a record somewhere and what this process holds; then
    // the others, compiled elsewhere: waited for one by one, and what is
    // still this process's to compile after that, together.
    let (now, later): (Vec<_>, Vec<_>) =
        tasks.into_iter().partition(|(_, t)| t.local.is_some() || t.remote.is_some() || mine.contains(&t.key));
    let now: Batch = now
        .into_iter()
        .map(|(i, t)| {
            let held = flight.take(&t.key);
            (i, t, held)
        })
        .collect();
    out.extend(finish_all(&flight, store, remote, compiler, now, done));
    // Waited for together: a dead holder's tasks are all taken over at
    // once and compiled below as one batch (`Flight::wait_all`).
    let keys: Vec<Key> = later.iter().map(|(_, t)| t.key).collect();
    let waits = flight.wait_all(store, remote, &keys);
    let mut rest: Batch = Vec::new();
    for ((i, mut t), waited) in later.into_iter().zip(waits) {
        match waited {
            Waited::Appeared => match store.get(&t.key) {
                Ok(Lookup::Hit(r)) if t.fits(&r.meta) => t.local = Some(r),
                _ => {}
            },
            Waited::Fetched(r) if t.fits(&r.meta) => t.remote = Some(r),
            _ => {}
        }
        if t.local.is_some() || t.remote.is_some() {
            flight.waited += 1;
        }
        let held = flight.take(&t.key);
        rest.push((i, t, held));
    }
    out.extend(finish_all(&flight, store, remote, compiler, rest, done));
    out.sort_by_key(|(i, _)| *i);
    Fill {
        tasks: out.into_iter().map(|(_, r)| r).collect(),
        waited: flight.waited,
        wait_time: flight.wait_time,
        warning: flight.ran_out_warning(),
    }
}

/// A task's key, launch metadata and local record (a damaged one, or one
/// that launches another way, is removed).
fn look_up<'m>(store: &Store, compiler: &dyn Backend, module: &'m Module) -> Result<Task<'m>, FillError> {
    let t0 = Instant::now();
    let (key, meta) = key_and_meta(module, compiler.config()).map_err(|e| FillError::Codegen(e.into()))?;
    let mut times = FillTimes { key: t0.elapsed(), ..FillTimes::default() };
    let name = kiln::plan::single_task(module).map(|t| t.name.to_string()).unwrap_or_default();
    let t1 = Instant::now();
    let _lookup = kiln::trace::span("cache", "cache lookup", &name);
    let (local, outcome) = local_record(store, &key, |m| same_launch(m, &meta))?;
    times.read = t1.elapsed();
    Ok(Task { source: Source::Task(module), name, key, meta, times, outcome, local, remote: None })
}

/// A function record's local record (one that is not the record's is
/// removed).
fn look_up_record<'m>(store: &Store, r: &'m NeededRecord<'m>) -> Result<Task<'m>, FillError> {
    let t0 = Instant::now();
    let (local, outcome) = local_record(store, &r.key, |m| *m == r.meta)?;
    let times = FillTimes { read: t0.elapsed(), ..FillTimes::default() };
    let (name, key, meta) = (format!("function @{}", r.name), r.key, r.meta.clone());
    Ok(Task { source: Source::Function(r), name, key, meta, times, outcome, local, remote: None })
}

/// The store's record of `key` if it is good and `fits`, with what filling
/// it means: a record that does not fit is removed (`Replaced`, as a
/// damaged one), no record is `Stored`.
fn local_record(
    store: &Store,
    key: &Key,
    fits: impl Fn(&LaunchMeta) -> bool,
) -> Result<(Option<Record>, Filled), FillError> {
    Ok(match store.get(key).map_err(other)? {
        Lookup::Hit(r) if fits(&r.meta) => (Some(r), Filled::Hit),
        Lookup::Hit(_) => {
            store.discard(key).map_err(other)?;
            (None, Filled::Replaced)
        }
        Lookup::Corrupt(_) => (None, Filled::Replaced),
        Lookup::Miss => (None, Filled::Stored),
    })
}

fn other(e: CacheError) -> FillError {
    FillError::Cache(e.to_string())
}

/// Asks the remote for every task's record in one round trip (for the
/// local hits too: the remote may lack them); the time counts as the
/// first task's read.
fn ask_remote(remote: &RemoteTier, tasks: &mut [(usize, Task)]) {
    let keys: Vec<Key> = tasks.iter().map(|(_, t)| t.key).collect();
    let _fetch = kiln::trace::span("remote", "remote fetch", &format!("({} tasks)", keys.len()));
    let t0 = Instant::now();
    for ((_, t), found) in tasks.iter_mut().zip(remote.get_many(&keys)) {
        match found {
            Fetched::Hit(r) if t.fits(&r.meta) => t.remote = Some(r),
            Fetched::Hit(_) => remote.refused(),
            _ => {}
        }
    }
    if let Some((_, t)) = tasks.first_mut() {
        t.times.read += t0.elapsed();
    }
}

/// Finishes `batch` in parallel, renewing this process's leases of it
/// while it runs; each task's lock and lease go once its record is
/// written (or could not be).
fn finish_all(
    flight: &Flight,
    store: &Store,
    remote: Option<&RemoteTier>,
    compiler: &dyn Backend,
    batch: Batch,
    done: &(dyn Fn() + Sync),
) -> Vec<(usize, Outcome)> {
    let leased: Vec<Key> =
        batch.iter().filter(|(_, _, h)| h.as_ref().is_some_and(Held::leased)).map(|(_, t, _)| t.key).collect();
    flight.renewing_keys(remote, leased, || {
        batch
            .into_par_iter()
            .map(|(i, t, held)| {
                let key = t.key;
                let outcome = store_record(store, remote, compiler, t);
                if let Some(h) = held {
                    h.finish(&key, remote);
                }
                done();
                (i, outcome)
            })
            .collect()
    })
}

/// Stores `t`'s record where it is missing: the local one to the remote,
/// the remote's locally, or a new one (compiled now) to both.
fn store_record(store: &Store, remote: Option<&RemoteTier>, compiler: &dyn Backend, mut t: Task) -> Outcome {
    let (meta, object, compile) = match (t.local.take(), t.remote.take()) {
        (Some(_), Some(_)) => return Ok((Filled::Hit, t.times)),
        // The remote lacks (or holds a bad copy of) what this store has.
        (Some(r), None) => {
            if let Some(remote) = remote {
                put_remote(remote, &t.key, &r.meta, &r.producer, &r.object)?;
            }
            return Ok((Filled::Hit, t.times));
        }
        (None, Some(r)) => {
            t.outcome = Filled::Remote;
            (r.meta, r.object, Duration::from_millis(r.producer.compile_ms))
        }
        (None, None) => {
            let compiling = kiln::trace::span("compile", "compile", &t.name);
            let c = t.compile(compiler).map_err(FillError::Codegen)?;
            drop(compiling);
            t.times.compile = c.compile_time;
            if let Some(remote) = remote {
                let compile_ms = c.compile_time.as_millis().try_into().unwrap_or(u64::MAX);
                put_remote(
                    remote,
                    &t.key,
                    &c.meta,
                    &Producer { compile_ms, ..Producer::now(LLVM_VERSION) },
                    &c.object,
                )?;
            }
            (c.meta, c.object, c.compile_time)
        }
    };
    store.put_compiled(&t.key, &meta, &object, compile).map_err(other)?;
    Ok((t.outcome, t.times))
}

fn put_remote(
    remote: &RemoteTier,
    key: &Key,
    meta: &LaunchMeta,
    producer: &Producer,
    object: &[u8],
) -> Result<(), FillError> {
    let bytes = record::encode(key, meta, producer, object).map_err(|e| other(CacheError::Encode(e)))?;
    remote.put(key, &bytes);
    Ok(())
}

impl Filled {
    /// Counts one function record's outcome and times into `report`.
    pub fn count_record(self, times: FillTimes, report: &mut RunReport) {
        let run = &mut report.run;
        match self {
            Filled::Hit => run.function_hits += 1,
            Filled::Remote => {
                run.function_hits += 1;
                run.stored += 1
            }
            Filled::Stored | Filled::Replaced => {
                run.functions_compiled += 1;
                run.stored += 1;
            }
        }
        if self == Filled::Replaced {
            run.corrupt_replaced += 1;
        }
        run.load_time += times.read;
        run.compile_time += times.compile;
    }

    /// Counts one task's outcome and times into `report`.
    pub fn count(self, times: FillTimes, report: &mut RunReport) {
        let run = &mut report.run;
        report.tasks += 1;
        match self {
            Filled::Hit => run.hits += 1,
            Filled::Remote => run.stored += 1,
            Filled::Stored => run.misses += 1,
            Filled::Replaced => run.corrupt_replaced += 1,
        }
        if matches!(self, Filled::Stored | Filled::Replaced) {
            run.compiled += 1;
            run.stored += 1;
        }
        run.key_time += times.key;
        run.load_time += times.read;
        run.compile_time += times.compile;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_add_up() {
        let mut c = RunReport::default();
        let t = FillTimes {
            key: Duration::from_micros(10),
            read: Duration::from_micros(20),
            compile: Duration::from_millis(3),
        };
        for f in [Filled::Hit, Filled::Stored, Filled::Replaced, Filled::Stored] {
            f.count(t, &mut c);
        }
        let r = &c.run;
        assert_eq!((c.tasks, r.hits, r.misses, r.corrupt_replaced, r.compiled, r.stored), (4, 1, 2, 1, 3, 3));
        assert_eq!((r.compile_time, r.key_time), (Duration::from_millis(12), Duration::from_micros(40)));
        let text = c.to_text("kiln-compile");
        assert!(text.starts_with("kiln-compile: stats\n  cache              off\n  tasks              4\n"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&c.to_json()).unwrap();
        assert_eq!((json["misses"].as_u64(), json["cache_dir"].is_null()), (Some(2), true));
    }
}
