//! What a per-task engine asks of the place its tasks' objects come
//! from, below the engine, the cache's provider and the tiers alike: the
//! [`TaskProvider`] contract, the counters a run keeps ([`JitStats`],
//! with its warnings), the compiled-but-not-loaded queue ([`Prefetched`]),
//! the function records a task needs ([`RecordSource`],
//! [`ready_functions`]) and the provider that compiles without a cache
//! ([`CompileAndLoad`]).
//!
//! Owns: those types and functions.
//!
//! Must never: touch the cache, launch a task, or print.

use crate::{Jit, JitError, LoadedFunction, LoadedTask};
use kiln::ir::Module;
use kiln::key::functions::{FuncPlan, NeededRecord};
use kiln::key::Key;
use kiln_llvm::{self, Backend, CodegenError, CompiledTask};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// Counters of one engine (for `kiln-run --stats`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JitStats {
    /// Task launches seen.
    pub launches: u64,
    /// Task objects loaded (per-task path).
    pub tasks_loaded: u64,
    /// The counters `--stats` reports.
    pub run: kiln::stats::RunStats,
    /// Cache problems the run survived (a record that could not be
    /// written, a shard that could not be read): the tool shows them.
    pub warnings: Vec<String>,
    /// The remote tier's URL (password redacted) and counters, when one
    /// is configured.
    pub remote: Option<(String, kiln::remote::RemoteStats)>,
}

/// At most this many warnings are kept per run (the first ones explain).
const MAX_WARNINGS: usize = 16;

impl JitStats {
    /// Adds a warning of the run (the first [`MAX_WARNINGS`] are kept).
    pub(crate) fn warn(&mut self, text: String) {
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(text);
        }
    }

    /// Tasks made ready to launch, on either path.
    pub fn tasks(&self) -> u64 {
        self.tasks_loaded + self.run.whole_kernel_tasks
    }

    /// The `--stats` report of this engine's run; `cache` is the root and
    /// scope of its store, if it had one.
    pub fn report(&self, cache: Option<(String, String)>) -> kiln::stats::RunReport {
        kiln::stats::RunReport { cache, tasks: self.tasks(), run: self.run.clone(), remote: self.remote.clone() }
    }
}

/// Where the per-task path gets a loaded task from. The default,
/// [`CompileAndLoad`], compiles every task; the cache supplies another
/// that looks the object up first.
pub trait TaskProvider: Send {
    /// A loaded task for the per-task module `module` (whose task item is
    /// named `task`), updating `stats`.
    fn provide(
        &mut self,
        jit: &Jit,
        backend: &dyn Backend,
        module: &Module,
        task: &str,
        stats: &mut JitStats,
    ) -> Result<LoadedTask, ProvideError>;

    /// Called with a kernel's task modules not loaded yet, before the
    /// first [`TaskProvider::provide`] of them: a provider may look them
    /// up together (the remote tier's one round trip per kernel) and
    /// compile the ones it lacks together (one `kiln-compile` process per
    /// kernel, see [`kiln_llvm::CompileProcess`]).
    fn prefetch(&mut self, _backend: &dyn Backend, _modules: &[&Module], _stats: &mut JitStats) {}

    /// Whether [`TaskProvider::compile_ahead`] compiles anything.
    fn can_compile_ahead(&self) -> bool {
        false
    }

    /// Starts compiling, on a thread of its own, the task modules of a
    /// kernel the run launches later that no tier holds and no other
    /// process is compiling, while this thread prepares and launches the
    /// kernels before it. That kernel's [`TaskProvider::prefetch`] and
    /// [`TaskProvider::provide`] then take the objects, waiting for the
    /// thread if need be. A provider without a cache compiles nothing
    /// ahead.
    fn compile_ahead(&mut self, _backend: Arc<dyn Backend>, _modules: &[&Module], _stats: &mut JitStats) {}

    /// Looks `modules` up as [`TaskProvider::prefetch`] does, compiling
    /// none of them: which of them [`TaskProvider::provide`] can now make
    /// ready without compiling (a tiered run's optimised tier,
    /// [`crate::tiers`]). A provider without a cache has none.
    fn lookup(&mut self, _backend: &dyn Backend, modules: &[&Module], _stats: &mut JitStats) -> Vec<bool> {
        vec![false; modules.len()]
    }

    /// Called when [`JitEngine::prepare`] has made a kernel's tasks ready:
    /// a provider may start work it held back until then (the cache's
    /// local writes of records the remote returned).
    fn ready(&mut self, _stats: &mut JitStats) {}

    /// Completes work left running in the background (the cache's record
    /// writes) and counts it in `stats`.
    fn finish(&mut self, _stats: &mut JitStats) {}
}

/// Why a task could not be made ready.
#[derive(Debug)]
pub enum ProvideError {
    Codegen(CodegenError),
    Jit(JitError),
    Other(String),
}

impl std::fmt::Display for ProvideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProvideError::Codegen(e) => write!(f, "{e}"),
            ProvideError::Jit(e) => write!(f, "{e}"),
            ProvideError::Other(e) => f.write_str(e),
        }
    }
}

/// What a provider's [`TaskProvider::prefetch`] made for each of its
/// modules, for the [`TaskProvider::provide`] calls that follow. The
/// engine provides the prefetched modules in prefetch's order while the
/// kernel's stream is borrowed, so a module is found by its address (at
/// the front, unless a tiered run provided the ones before it from the
/// other tier), and nothing is printed or hashed again; a module not found
/// there is worked out afresh by the provider.
#[derive(Debug)]
pub struct Prefetched<T> {
    queue: VecDeque<(usize, T)>,
}

impl<T> Default for Prefetched<T> {
    fn default() -> Self {
        Prefetched { queue: VecDeque::new() }
    }
}

impl<T> Prefetched<T> {
    /// Forgets everything (a new prefetch, or the kernel is ready).
    pub fn clear(&mut self) {
        self.queue.clear();
    }

    /// Keeps `value` for `module`, after the ones kept before.
    pub fn push(&mut self, module: &Module, value: T) {
        self.queue.push_back((address(module), value));
    }

    /// The value kept for `module`, when it is kept: the values kept
    /// before it are dropped (their modules were not provided: a tiered
    /// run provides some of a lookup's modules from the other tier).
    pub fn take(&mut self, module: &Module) -> Option<T> {
        let at = self.queue.iter().position(|(a, _)| *a == address(module))?;
        self.queue.drain(..at);
        self.queue.pop_front().map(|(_, v)| v)
    }
}

/// What names a value while it is borrowed: its address (only compared,
/// never followed).
pub(crate) fn address<T>(x: &T) -> usize {
    x as *const T as usize
}

/// Where a provider gets the objects of the function records
/// (`kiln::key::functions`) a task needs and the session has not loaded.
pub trait RecordSource {
    /// One object per record of `wanted` (records of one per-task module,
    /// callees first). With `fresh`, compiled whatever a store holds: the
    /// copy given before failed to load.
    fn objects(
        &mut self,
        backend: &dyn Backend,
        wanted: &[NeededRecord<'_>],
        fresh: bool,
        stats: &mut JitStats,
    ) -> Vec<Result<Vec<u8>, ProvideError>>;

    /// The object given for `key` loaded: a source may now store it.
    fn loaded(&mut self, _key: &Key, _stats: &mut JitStats) {}
}

/// Compiles every record asked for.
struct CompileRecords;

impl RecordSource for CompileRecords {
    fn objects(
        &mut self,
        backend: &dyn Backend,
        wanted: &[NeededRecord<'_>],
        _fresh: bool,
        stats: &mut JitStats,
    ) -> Vec<Result<Vec<u8>, ProvideError>> {
        compile_records(backend, wanted, stats).into_iter().map(|r| r.map(|c| c.object)).collect()
    }
}

/// Compiles records, counting them.
pub fn compile_records(
    backend: &dyn Backend,
    wanted: &[NeededRecord<'_>],
    stats: &mut JitStats,
) -> Vec<Result<CompiledTask, ProvideError>> {
    let compiled = backend.compile_functions(wanted);
    for c in compiled.iter().flatten() {
        stats.run.functions_compiled += 1;
        stats.run.compile_time += c.compile_time;
    }
    compiled.into_iter().map(|r| r.map_err(ProvideError::Codegen)).collect()
}

/// Loads into `jit` the function records the task of `module` needs, each
/// once per session (callees first, each linked to the records it calls),
/// and returns the ones the task's object declares, to link it to.
pub fn ready_functions(
    jit: &Jit,
    backend: &dyn Backend,
    module: &Module,
    source: &mut dyn RecordSource,
    stats: &mut JitStats,
) -> Result<Vec<LoadedFunction>, ProvideError> {
    let Some(task) = module.tasks().next() else { return Ok(Vec::new()) };
    let plan = FuncPlan::of(module, backend.config());
    let needed = plan.records_needed(&task.body);
    let missing: Vec<NeededRecord> = needed
        .iter()
        .map(|&i| &plan.funcs[i])
        .filter(|f| jit.function(&f.key).is_none())
        .map(|f| NeededRecord::of(module, f))
        .collect();
    if !missing.is_empty() {
        let objects = source.objects(backend, &missing, false, stats);
        for (r, object) in missing.iter().zip(objects) {
            load_record(jit, backend, &plan, r, object?, source, stats)?;
        }
    }
    let declared = plan.task_object(&task.body).declared;
    linked(jit, &plan, &declared)
}

/// The loaded records of `indices` of `plan`.
fn linked(jit: &Jit, plan: &FuncPlan<'_>, indices: &[usize]) -> Result<Vec<LoadedFunction>, ProvideError> {
    let find = |&i: &usize| {
        let f = &plan.funcs[i];
        jit.function(&f.key)
            .ok_or_else(|| ProvideError::Other(format!("function record @{} is not loaded", f.func.name)))
    };
    indices.iter().map(find).collect()
}

/// Loads record `r` from `object`; an object that does not load is asked
/// for afresh once.
fn load_record(
    jit: &Jit,
    backend: &dyn Backend,
    plan: &FuncPlan<'_>,
    r: &NeededRecord<'_>,
    object: Vec<u8>,
    source: &mut dyn RecordSource,
    stats: &mut JitStats,
) -> Result<(), ProvideError> {
    let i = plan.index(&r.name).ok_or_else(|| ProvideError::Other(format!("no function @{}", r.name)))?;
    let deps = linked(jit, plan, &plan.record_object(i).declared)?;
    let meta = &r.meta;
    let t0 = Instant::now();
    if jit.load_function(&r.key, &r.name, &object, meta, &deps).is_err() {
        // A damaged or unloadable record: compiled afresh, once.
        stats.run.corrupt_replaced += 1;
        let again = source.objects(backend, std::slice::from_ref(r), true, stats).pop();
        let object = again.unwrap_or_else(|| Err(ProvideError::Other("the compiler returned no object".into())))?;
        jit.load_function(&r.key, &r.name, &object, meta, &deps).map_err(ProvideError::Jit)?;
    }
    stats.run.load_time += t0.elapsed();
    source.loaded(&r.key, stats);
    Ok(())
}

/// Compiles each task and loads it (no cache): a kernel's tasks are
/// compiled together when it is prepared.
#[derive(Debug, Default)]
pub struct CompileAndLoad {
    /// Compiled by [`TaskProvider::prefetch`], not loaded yet.
    compiled: Prefetched<Result<CompiledTask, CodegenError>>,
}

impl TaskProvider for CompileAndLoad {
    fn provide(
        &mut self,
        jit: &Jit,
        backend: &dyn Backend,
        module: &Module,
        task: &str,
        stats: &mut JitStats,
    ) -> Result<LoadedTask, ProvideError> {
        let compiled = self.compiled.take(module);
        let c = compiled.unwrap_or_else(|| backend.compile_task(module)).map_err(ProvideError::Codegen)?;
        stats.run.compiled += 1;
        stats.run.compile_time += c.compile_time;
        let deps = ready_functions(jit, backend, module, &mut CompileRecords, stats)?;
        let t0 = Instant::now();
        let t = jit.load_task_with(task, &c.object, &c.meta, &deps).map_err(ProvideError::Jit)?;
        stats.tasks_loaded += 1;
        stats.run.load_time += t0.elapsed();
        Ok(t)
    }

    fn prefetch(&mut self, backend: &dyn Backend, modules: &[&Module], _stats: &mut JitStats) {
        self.compiled.clear();
        for (m, c) in modules.iter().zip(backend.compile_tasks(modules)) {
            self.compiled.push(m, c);
        }
    }
}
