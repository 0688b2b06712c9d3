//! The JIT engine of `kiln-run`: runs a kernel of a split stream by
//! loading its tasks, one dylib per task (the per-task path, where a
//! [`TaskProvider`] decides where a task's object comes from: compiled
//! now, or read from the cache), or all of them in one dylib (the
//! whole-kernel path).
//!
//! Owns: [`JitEngine`]: splitting, preparing and launching a kernel's
//! tasks, on either path, which kernel of a batch is compiled ahead, and
//! the tiers' swap at a launch boundary (the
//! provider contract, [`TaskProvider`] and [`JitStats`], is
//! `crate::provide`'s; they are named here too, where users find them).
//!
//! Must never: touch the cache directly (a provider does), or print.

use super::runtime::{self, LaunchNames};
use super::{Jit, LoadedTask};
use crate::provide::address;
pub use crate::provide::{
    compile_records, ready_functions, CompileAndLoad, JitStats, Prefetched, ProvideError, RecordSource, TaskProvider,
};
use crate::tiers::{Quick, Tier, Tiers};
use kiln::exec::{Engine, Fields, RunError};
use kiln::ir::{Const, Item, Kernel, Module, Scalar, Stream, TaskItem};
use kiln_llvm::{self, Backend};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

/// Which compiled form a kernel runs from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JitPath {
    /// Each task its own object and dylib (the cacheable form).
    PerTask,
    /// All tasks of a kernel in one module, one object, one dylib.
    WholeKernel,
}

/// A kernel file split by the default pipeline: its text, its statements'
/// spans (the split stream's spans locate run-time errors, so a file that
/// prints the same but is laid out otherwise is split again) and the split
/// stream.
struct Split {
    text: String,
    spans: Vec<(u32, u32)>,
    stream: Arc<Stream>,
    /// Every kernel's launches in `stream`, indexed once.
    launches: kiln::plan::LaunchTable,
}

/// Runs kernels through the JIT.
pub struct JitEngine {
    pub jit: Jit,
    pub backend: Arc<dyn Backend>,
    pub path: JitPath,
    pub stats: JitStats,
    provider: Box<dyn TaskProvider>,
    /// The threads for parallel tasks, started with the first launch that
    /// runs on them.
    pool: Pool,
    /// The seed of the `random` streams (a launch input, not compiled in).
    seed: u64,
    /// Loaded tasks by the digest of their module's canonical text
    /// (per-task path): a digest, not the text, so that what the session
    /// keeps is a few bytes per task however many functions its module
    /// holds a copy of.
    tasks: HashMap<TextDigest, LoadedTask>,
    /// Loaded kernels by the digest of their launched modules' texts and
    /// launch order (whole-kernel path).
    kernels: HashMap<TextDigest, Vec<LoadedTask>>,
    /// The last kernel file split by the default pipeline.
    split: Option<Split>,
    /// While [`Engine::run_kernels`] runs, the one stream it was given
    /// (borrowed for the whole batch, so its address names it there):
    /// `split` known to be its split, and its own launch table once asked.
    batch: Option<Batch>,
    /// What the `print`s of its runs wrote, until [`Engine::take_printed`].
    printed: Vec<String>,
    /// The quick tier and the background compiles of the optimised one,
    /// when tasks may start on their quick tier (per-task path).
    tiers: Option<Tiers>,
}

/// What a batch of runs of one stream works out once, not once per run.
struct Batch {
    /// The stream's address: what names it while the batch runs (only
    /// compared, never followed).
    stream: usize,
    split_checked: bool,
    launches: Option<kiln::plan::LaunchTable>,
}

impl JitEngine {
    /// An engine running parallel tasks on `threads` threads (1: all on
    /// the calling thread); the threads start with the first parallel task.
    pub fn new(backend: impl Backend + 'static, path: JitPath, threads: usize) -> Result<JitEngine, RunError> {
        let jit = Jit::new().map_err(|e| RunError::new(e.to_string()))?;
        Ok(JitEngine {
            jit,
            backend: Arc::new(backend),
            path,
            stats: JitStats::default(),
            provider: Box::<CompileAndLoad>::default(),
            pool: Pool::new(Some(threads), false),
            seed: 0,
            tasks: HashMap::new(),
            kernels: HashMap::new(),
            split: None,
            batch: None,
            printed: Vec::new(),
            tiers: None,
        })
    }

    /// This engine, whose pool makes the calling thread one of its
    /// `threads` instead of leaving it waiting while they run: one thread
    /// fewer to start, and no hand-off of each kernel to a worker and
    /// back. For a process whose one engine runs its kernels from one
    /// thread (`kiln-run`): a thread belongs to one pool for good (rayon
    /// keeps that pool's threads until the process ends), so a later pool
    /// ([`JitEngine::set_threads`]) is an ordinary one. The calling
    /// thread keeps its own stack, on which `--threads 1` runs everything.
    pub fn with_calling_thread(mut self) -> JitEngine {
        self.pool.join = true;
        self
    }

    /// This engine, on the threads a user's optional setting says
    /// (`kiln-run --threads`, `import kiln`'s `threads`): `Some(n)`, every
    /// parallel launch on `n` threads, as [`JitEngine::new`]'s; `None`,
    /// threads chosen for it: as many as this machine has
    /// ([`kiln::cli::thread_count`], asked when the pool starts), and a
    /// parallel launch runs on them only when its estimated work is worth
    /// them ([`runtime::worth_spreading`]), a smaller one on the calling
    /// thread. A run whose launches are all small then never starts the
    /// pool.
    pub fn with_threads(mut self, threads: Option<usize>) -> JitEngine {
        self.pool = Pool { threads, ..self.pool };
        self
    }

    /// Runs parallel tasks on `threads` threads from now on (loaded tasks
    /// stay loaded).
    pub fn set_threads(&mut self, threads: usize) -> Result<(), RunError> {
        self.pool = Pool::new(Some(threads), false);
        Ok(())
    }

    /// Draws `random` numbers from `seed`'s streams from now on (nothing
    /// is recompiled: the seed is a launch input).
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }

    /// Starts compiling `next`'s tasks ahead (per-task path): those not
    /// loaded, that `current` does not launch and that no tier holds, each
    /// in the tier it will start on, on a thread of the provider's, while
    /// this one prepares and launches `current`. One `kiln-compile`
    /// process then runs beside the other, not after it (the first calls
    /// of a two-kernel run: docs/performance.md, "Tiered compilation").
    /// Anything wrong with `next` (a split or a lookup that fails) is left
    /// for its own run to report; a `next` small enough to be interpreted
    /// (with `args`, see [`Tiers`]) compiles nothing ahead.
    fn compile_ahead(&mut self, stream: &Stream, current: &str, next: &str, args: &[Const]) {
        // The provider of the tier `next`'s missing tasks start on.
        let can = match &self.tiers {
            Some(t) => t.provider.can_compile_ahead(),
            None => self.provider.can_compile_ahead(),
        };
        if self.path != JitPath::PerTask || !can {
            return;
        }
        let Ok(split) = self.split(stream, next) else { return };
        let stream = split.as_deref().unwrap_or(stream);
        let (Ok(now), Ok(later)) = (self.launched(stream, current), self.launched(stream, next)) else { return };
        let (now, _) = module_digests(&now);
        let (digests, text_of) = module_digests(&later);
        let fresh = self.unloaded(&later, &digests, &text_of, |d| now.contains(d));
        if fresh.is_empty() {
            return;
        }
        if self.tiers.is_none() {
            self.provider.compile_ahead(self.backend.clone(), &fresh, &mut self.stats);
            return;
        }
        let quick = self.lacking_opt(&fresh);
        let Ok((_, k)) = self.find_kernel(stream, next) else { return };
        // The fields are those before `current` runs: no 0-D field's
        // value is taken from them.
        let bound = || kiln::interp::cost::statements_bound(&later, &named_args(k, args), &|_| None);
        if let Some(tiers) = self.tiers.as_mut().filter(|_| !quick.is_empty()) {
            if tiers.interprets(bound).is_none() {
                tiers.provider.compile_ahead(tiers.backend.clone(), &quick, &mut self.stats);
            }
        }
    }

    /// The modules of `launched` not loaded yet, each once (a kernel may
    /// launch a task twice), less those `skip` names by their digest
    /// (`digests` and `text_of` are `module_digests(launched)`).
    fn unloaded<'s>(
        &self,
        launched: &[(&'s Module, &TaskItem)],
        digests: &[TextDigest],
        text_of: &[usize],
        skip: impl Fn(&TextDigest) -> bool,
    ) -> Vec<&'s Module> {
        let mut seen = HashSet::new();
        launched
            .iter()
            .zip(text_of)
            .filter(|(_, &i)| seen.insert(i) && !self.tasks.contains_key(&digests[i]) && !skip(&digests[i]))
            .map(|((m, _), _)| *m)
            .collect()
    }

    /// Those of `modules` no cache tier holds in their optimised tier (the
    /// lookup keys them all for `provide`): the ones a tiered run starts
    /// on their quick tier.
    fn lacking_opt<'m>(&mut self, modules: &[&'m Module]) -> Vec<&'m Module> {
        let present = self.provider.lookup(&*self.backend, modules, &mut self.stats);
        modules.iter().zip(present).filter(|(_, here)| !here).map(|(m, _)| *m).collect()
    }

    /// The per-task form of `stream` for `kernel`: `None` when the kernel
    /// is already split (a sequence of launches), else
    /// [`kiln::passes::to_task_stream`]'s result (cached for the last
    /// stream seen).
    pub fn split(&mut self, stream: &Stream, kernel: &str) -> Result<Option<Arc<Stream>>, RunError> {
        let (_, k) = self.find_kernel(stream, kernel)?;
        if !kiln::passes::task_form::is_unsplit(k) {
            return Ok(None);
        }
        if let (Some(b), Some(s)) = (&self.batch, &self.split) {
            if b.split_checked && b.stream == address(stream) {
                return Ok(Some(s.stream.clone()));
            }
        }
        let split = self.split_anew(stream)?;
        if let Some(b) = self.batch.as_mut().filter(|b| b.stream == address(stream)) {
            b.split_checked = true;
        }
        Ok(Some(split))
    }

    /// The split of `stream`: the cached one if its text and spans are the
    /// same, else a new one.
    fn split_anew(&mut self, stream: &Stream) -> Result<Arc<Stream>, RunError> {
        let text = stream.to_string();
        let spans = stmt_spans(stream);
        if let Some(s) = &self.split {
            if s.text == text && s.spans == spans {
                return Ok(s.stream.clone());
            }
        }
        let s = kiln::passes::to_task_stream(stream.clone()).map_err(|ds| {
            let msgs: Vec<String> = ds.0.iter().map(|d| d.message.clone()).collect();
            RunError::new(format!("cannot split the kernels into tasks: {}", msgs.join("; ")))
        })?;
        let s = Arc::new(s);
        let launches = kiln::plan::LaunchTable::new(&s);
        self.split = Some(Split { text, spans, stream: s.clone(), launches });
        Ok(s)
    }

    /// Replaces where the per-task path gets its tasks from (the cache).
    pub fn set_provider(&mut self, p: Box<dyn TaskProvider>) {
        self.provider = p;
    }

    /// Lets tasks the provider lacks in their optimised tier start on
    /// their quick tier, from `tiers` (per-task path).
    pub fn set_tiers(&mut self, tiers: Tiers) {
        self.tiers = Some(tiers);
    }

    /// Waits for the providers' background work (records being written)
    /// and completes the counters; call it before reading `stats` at the
    /// end of a run. A background compile of the optimised tier is not
    /// waited for: it stores its records on its own.
    pub fn finish(&mut self) {
        if let Some(t) = self.tiers.as_mut() {
            t.finish(&mut self.stats);
            t.provider.finish(&mut self.stats);
        }
        self.provider.finish(&mut self.stats);
    }

    /// At a launch boundary: replaces each task whose optimised tier the
    /// finished background compile stored (a task is replaced whole,
    /// before its kernel's launches are looked up), and starts the next
    /// background compile.
    fn upgrade(&mut self) {
        let Some(tiers) = self.tiers.as_mut() else { return };
        if let Some(tasks) = tiers.poll(&mut self.stats) {
            let modules: Vec<&Module> = tasks.iter().map(|q| &q.module).collect();
            let present = self.provider.lookup(&*self.backend, &modules, &mut self.stats);
            for (q, _) in tasks.iter().zip(present).filter(|(_, here)| *here) {
                // A record that will not load leaves the quick tier running.
                if let Ok(l) = self.provide(&q.module, &q.task, false) {
                    self.tasks.insert(q.digest, l);
                    self.stats.run.upgraded += 1;
                }
            }
            self.provider.ready(&mut self.stats);
        }
        if let Some(tiers) = self.tiers.as_mut() {
            tiers.start_waiting(&mut self.stats);
        }
    }

    /// Looks up or compiles, together, the modules of a kernel not loaded
    /// yet, each in the tier it starts on: the optimised tier when a cache
    /// tier holds it (or no quick tier is set), else the quick tier,
    /// compiled, or interpreted with the whole kernel when the kernel is
    /// small enough (`statements`, its launches' bound, is asked only
    /// then).
    fn prefetch_tiers<'m>(&mut self, fresh: &[&'m Module], statements: impl FnOnce() -> Option<u64>) -> Start<'m> {
        if self.tiers.is_none() {
            self.provider.prefetch(&*self.backend, fresh, &mut self.stats);
            return Start::Compiled(HashSet::new());
        }
        let quick = self.lacking_opt(fresh);
        let Some(tiers) = self.tiers.as_mut().filter(|_| !quick.is_empty()) else {
            return Start::Compiled(HashSet::new());
        };
        if let Some(n) = tiers.interprets(statements) {
            tiers.charge(n);
            return Start::Interpreted(quick);
        }
        tiers.provider.prefetch(&*tiers.backend, &quick, &mut self.stats);
        Start::Compiled(quick.into_iter().map(|m| m as *const Module).collect())
    }

    /// A kernel to be interpreted whose tasks in `quick` lack their
    /// optimised tier: each not already waiting for the background compile
    /// is given to it, as a task started on its quick tier is.
    fn start_interpreted(
        &mut self,
        launched: &[(&Module, &TaskItem)],
        digests: &[TextDigest],
        text_of: &[usize],
        quick: &[&Module],
    ) {
        self.provider.ready(&mut self.stats);
        let Some(tiers) = self.tiers.as_mut() else { return };
        let mut seen = HashSet::new();
        for (&(m, t), &i) in launched.iter().zip(text_of) {
            let asked = quick.iter().any(|q| std::ptr::eq(*q, m));
            if asked && seen.insert(i) && !tiers.pending(&digests[i]) {
                tiers.started_quick(Quick { digest: digests[i], module: m.clone(), task: t.name.to_string() });
            }
        }
        tiers.start_waiting(&mut self.stats);
    }

    /// Runs `kernel` (found in its module) in the interpreter, on the
    /// fields its launches use (the kernel-scoped temporaries made for the
    /// run), counting its launches as interpreted.
    fn interpret(
        &mut self,
        kernel: (&Module, &Kernel),
        args: &[Const],
        launched: &[(&Module, &TaskItem)],
        fields: &mut Fields,
    ) -> Result<(), RunError> {
        let name = kernel.1.name.clone();
        let own = kernel_stream(kernel, launched);
        let used = launched.iter().flat_map(|(m, _)| m.fields());
        let temps = fields.add_temporaries(used.map(|f| (f.name.as_str(), f.elem, f.shape.as_slice())))?;
        let config = self.backend.config();
        let mut interp =
            kiln::interp::Interpreter { denormals: config.denormals, seed: self.seed, ..Default::default() };
        let t0 = Instant::now();
        let result = {
            let _span = kiln::trace::span("launch", "interpreted", &name);
            interp.run_kernel(&own, &name, args, fields)
        };
        self.stats.run.run_time += t0.elapsed();
        self.stats.launches += launched.len() as u64;
        self.stats.run.interp_launches += launched.len() as u64;
        self.printed.extend(interp.take_printed());
        fields.drop_temporaries(temps);
        result
    }

    /// A loaded task for `module`, from the tier `prefetch_tiers` chose:
    /// a quick tier that cannot be made ready (an LLVM error, a killed
    /// compiler) leaves the task to the optimised one, with a warning.
    fn provide_tiered(&mut self, module: &Module, task: &str, quick: bool) -> Result<LoadedTask, ProvideError> {
        match self.provide(module, task, quick) {
            Err(e) if quick => {
                let warning = format!("task @{task}: the quick tier failed ({e}); it runs its optimised tier");
                self.stats.warn(warning);
                self.provide(module, task, false)
            }
            done => done,
        }
    }

    /// A loaded task for `module`, from the tier `prefetch_tiers` chose,
    /// with its tier and its work an iteration.
    fn provide(&mut self, module: &Module, task: &str, quick: bool) -> Result<LoadedTask, ProvideError> {
        let (jit, stats) = (&self.jit, &mut self.stats);
        let work = module.tasks().next().and_then(|t| runtime::iteration_work(&t.body));
        match self.tiers.as_mut().filter(|_| quick) {
            Some(t) => t.provider.provide(jit, &*t.backend, module, task, stats).map(|l| LoadedTask {
                tier: Tier::Quick,
                work,
                ..l
            }),
            None => {
                let l = self.provider.provide(jit, &*self.backend, module, task, stats)?;
                Ok(LoadedTask { tier: Tier::of(self.backend.config()), work, ..l })
            }
        }
    }

    /// Ends the engine of a process about to exit, leaving the JIT's
    /// session and its loaded code to the exit: clearing each dylib and
    /// ending the session only give back memory the exit gives back anyway
    /// (a quarter of a millisecond of a warm `kiln-run`). The rest (the
    /// compiler process, the cache provider, the pool) ends as a drop ends
    /// it; call [`JitEngine::finish`] first.
    pub fn end_for_exit(self) {
        let JitEngine { jit, tasks, kernels, .. } = self;
        std::mem::forget((jit, tasks, kernels));
    }

    /// The table of `stream`'s kernels and launches: the split's when
    /// `stream` is the split this engine made, the batch's (made at the
    /// first ask) when it is the batch's stream; `None` for any other
    /// stream, which a lookup then scans.
    fn table(&mut self, stream: &Stream) -> Option<&kiln::plan::LaunchTable> {
        match (&self.split, self.batch.as_mut()) {
            (Some(s), _) if std::ptr::eq(stream, &*s.stream) => Some(&s.launches),
            (_, Some(b)) if b.stream == address(stream) => {
                Some(b.launches.get_or_insert_with(|| kiln::plan::LaunchTable::new(stream)))
            }
            _ => None,
        }
    }

    /// The launched task items of `kernel`, in order.
    fn launched<'s>(&mut self, stream: &'s Stream, kernel: &str) -> Result<Vec<(&'s Module, &'s TaskItem)>, RunError> {
        let found = match self.table(stream) {
            Some(t) => t.launched(stream, kernel),
            None => kiln::plan::launched_tasks(stream, kernel),
        };
        found.map_err(|e| RunError::new(e.message))
    }

    /// The first kernel named `kernel` in `stream`, with its module.
    fn find_kernel<'s>(&mut self, stream: &'s Stream, kernel: &str) -> Result<(&'s Module, &'s Kernel), RunError> {
        let found = match self.table(stream) {
            Some(t) => t.kernel(stream, kernel),
            None => stream.modules.iter().find_map(|m| Some((m, m.kernel(kernel)?))),
        };
        found.ok_or_else(|| RunError::new(format!("no kernel @{kernel}")))
    }

    /// The loaded tasks of a kernel's launches, in order (loading what is
    /// not loaded yet).
    pub fn prepare(&mut self, stream: &Stream, kernel: &str) -> Result<Vec<LoadedTask>, RunError> {
        let launched = self.launched(stream, kernel)?;
        match self.prepare_launched(stream, kernel, &launched, None)? {
            Prepared::Tasks(tasks) => Ok(tasks),
            // Only a kernel with its arguments is interpreted.
            Prepared::Interpret => {
                Err(RunError::new(format!("kernel @{kernel} cannot be prepared without its arguments")))
            }
        }
    }

    /// [`JitEngine::prepare`] of the task items `kernel` launches, already
    /// looked up; with `args` (the kernel's arguments by parameter name,
    /// and the fields it runs on), a kernel small enough may be
    /// interpreted instead (see [`Tiers`]).
    fn prepare_launched(
        &mut self,
        stream: &Stream,
        kernel: &str,
        launched: &[(&Module, &TaskItem)],
        args: Option<(&[(&str, Const)], &Fields)>,
    ) -> Result<Prepared, RunError> {
        match self.path {
            JitPath::PerTask => {
                let (digests, text_of) = module_digests(launched);
                let fresh = self.unloaded(launched, &digests, &text_of, |_| false);
                let bound = || {
                    let (args, fields) = args?;
                    let scalar = |f: &str| fields.scalar(f).and_then(Const::as_i64);
                    kiln::interp::cost::statements_bound(launched, args, &scalar)
                };
                let quick = match fresh.is_empty() {
                    true => HashSet::new(),
                    false => match self.prefetch_tiers(&fresh, bound) {
                        Start::Compiled(quick) => quick,
                        Start::Interpreted(quick) => {
                            self.start_interpreted(launched, &digests, &text_of, &quick);
                            return Ok(Prepared::Interpret);
                        }
                    },
                };
                // Interrupted while they compiled (here or ahead): the run
                // stops before loading any, so what it keeps is what was
                // loaded before the signal, whatever the compile's timing.
                kiln::interrupt::check().map_err(RunError::new)?;
                // Each distinct module looked up (its text hashed) once.
                let mut ready: Vec<Option<LoadedTask>> = digests.iter().map(|d| self.tasks.get(d).cloned()).collect();
                let mut out = Vec::with_capacity(launched.len());
                for (&(m, t), &i) in launched.iter().zip(&text_of) {
                    if let Some(l) = &ready[i] {
                        out.push(l.clone());
                        continue;
                    }
                    let l = self
                        .provide_tiered(m, &t.name, quick.contains(&(m as *const Module)))
                        .map_err(|e| RunError::new(format!("kernel @{kernel}, task @{}: {e}", t.name)))?;
                    self.tasks.insert(digests[i], l.clone());
                    if let Some(tiers) = self.tiers.as_mut().filter(|_| l.tier == Tier::Quick) {
                        tiers.started_quick(Quick { digest: digests[i], module: m.clone(), task: t.name.to_string() });
                    }
                    ready[i] = Some(l.clone());
                    out.push(l);
                }
                self.provider.ready(&mut self.stats);
                if let Some(tiers) = self.tiers.as_mut() {
                    tiers.provider.ready(&mut self.stats);
                    tiers.start_waiting(&mut self.stats);
                }
                Ok(Prepared::Tasks(out))
            }
            JitPath::WholeKernel => {
                // The distinct modules' texts and the order they are
                // launched in: a task launched n times is in it once.
                let (digests, text_of) = module_digests(launched);
                let mut h = blake3::Hasher::new();
                for d in &digests {
                    h.update(d.as_bytes());
                }
                for &i in &text_of {
                    h.update(&(i as u64).to_le_bytes());
                }
                let key = h.finalize();
                if let Some(ls) = self.kernels.get(&key) {
                    return Ok(Prepared::Tasks(ls.clone()));
                }
                let ls = if launched.is_empty() {
                    Vec::new()
                } else {
                    let own = kernel_stream(self.find_kernel(stream, kernel)?, launched);
                    let c = self
                        .backend
                        .compile_kernel(&own, kernel)
                        .map_err(|e| RunError::new(format!("kernel @{kernel}: {e}")))?;
                    self.stats.run.compile_time += c.compile_time;
                    let t0 = Instant::now();
                    let ls = self
                        .jit
                        .load_kernel(kernel, &c.object, &c.launches)
                        .map_err(|e| RunError::new(format!("kernel @{kernel}: {e}")))?;
                    self.stats.run.load_time += t0.elapsed();
                    self.stats.run.whole_kernel_tasks += ls.len() as u64;
                    let tier = Tier::of(self.backend.config());
                    let work = launched.iter().map(|(_, t)| runtime::iteration_work(&t.body));
                    ls.into_iter().zip(work).map(|(l, work)| LoadedTask { tier, work, ..l }).collect()
                };
                self.kernels.insert(key, ls.clone());
                Ok(Prepared::Tasks(ls))
            }
        }
    }
}

/// Where a kernel's tasks not loaded yet start (`prefetch_tiers`).
enum Start<'m> {
    /// Loaded from a cache tier or compiled; those on their quick tier.
    Compiled(HashSet<*const Module>),
    /// Interpreted with their kernel: these lack their optimised tier.
    Interpreted(Vec<&'m Module>),
}

/// A kernel's launches made ready ([`JitEngine::prepare_launched`]).
enum Prepared {
    /// Each launch's loaded task, in order.
    Tasks(Vec<LoadedTask>),
    /// The kernel runs in the interpreter this time.
    Interpret,
}

/// A kernel's arguments by its parameters' names.
fn named_args<'k>(kernel: &'k Kernel, args: &[Const]) -> Vec<(&'k str, Const)> {
    kernel.body.params.iter().map(|&v| kernel.body.name(v)).zip(args.iter().copied()).collect()
}

/// The stream of one kernel of a split stream: the modules of the tasks
/// it launches, each once, in order of first launch, then its own module
/// holding the kernel alone. A whole-kernel compile is given this, not the
/// stream, so a program of many kernels costs what its kernels cost: a
/// compiler process is sent, and parses, the kernel's own text.
fn kernel_stream((module, kernel): (&Module, &Kernel), launched: &[(&Module, &TaskItem)]) -> Stream {
    let mut seen = std::collections::HashSet::new();
    let mut modules: Vec<Module> =
        launched.iter().filter(|(m, _)| seen.insert(*m as *const Module)).map(|(m, _)| (*m).clone()).collect();
    let items = vec![Item::Kernel(kernel.clone())];
    modules.push(Module { name: module.name.clone(), items, span: module.span });
    Stream { modules }
}

/// What names a loaded module in a session: the digest of its canonical
/// text.
use crate::tiers::TextDigest;

/// The digest of the canonical text of each distinct module of a kernel's
/// launches, in order of first launch, and for each launch the index of
/// its module's digest: a task launched many times is printed once, not
/// once per launch (a 9,000-statement task launched 9,000 times was
/// printed 9,000 times).
fn module_digests(launched: &[(&Module, &kiln::ir::TaskItem)]) -> (Vec<TextDigest>, Vec<usize>) {
    let mut digests = Vec::new();
    let mut index: HashMap<*const Module, usize> = HashMap::new();
    let text_of = launched
        .iter()
        .map(|&(m, _)| {
            *index.entry(m as *const Module).or_insert_with(|| {
                digests.push(blake3::hash(m.to_string().as_bytes()));
                digests.len() - 1
            })
        })
        .collect();
    (digests, text_of)
}

/// The span of every statement of every body of `stream`, in order.
fn stmt_spans(stream: &Stream) -> Vec<(u32, u32)> {
    let bodies = stream.modules.iter().flat_map(|m| &m.items).filter_map(|item| match item {
        Item::Func(f) => Some(&f.body),
        Item::Kernel(k) => Some(&k.body),
        Item::Task(t) => Some(&t.body),
        Item::Field(_) => None,
    });
    bodies.flat_map(|b| b.stmts().iter().map(|s| (s.span.start, s.span.end))).collect()
}

/// The stack of each worker thread: 64 MiB, eight times a main thread's
/// usual 8 MiB, so that what runs on the calling thread with `--threads 1`
/// also runs on a worker: a call chain as deep as the verifier allows
/// (`MAX_CALL_DEPTH`, 512) of functions with hundreds of parameters, at any
/// `-O` (at `-O 0` every value has a stack slot). It is address space, not
/// memory: pages are touched only as deep as the calls go.
pub const WORKER_STACK: usize = 64 << 20;

/// The threads parallel launches run on, started by the first launch that
/// runs on them ([`Pool::get`]).
struct Pool {
    /// `None`: chosen by the engine ([`JitEngine::with_threads`]):
    /// as many as the machine has, for the launches worth them.
    threads: Option<usize>,
    /// Whether the pool takes the calling thread as one of its threads
    /// ([`JitEngine::with_calling_thread`]).
    join: bool,
    started: std::sync::OnceLock<Option<rayon::ThreadPool>>,
}

impl Pool {
    fn new(threads: Option<usize>, join: bool) -> Pool {
        Pool { threads, join, started: std::sync::OnceLock::new() }
    }

    /// Whether a parallel launch of `count` iterations of `work` each runs
    /// on the pool: always when its threads were given, else when it is
    /// worth them.
    fn spreads(&self, work: Option<u64>, count: i64) -> bool {
        self.threads.is_some() || runtime::worth_spreading(work, count)
    }

    /// The pool if it has been started (none for one thread).
    fn started(&self) -> Option<&rayon::ThreadPool> {
        self.started.get().and_then(Option::as_ref)
    }

    /// The pool, started now if it has not been (none for one thread).
    fn get(&self) -> Result<Option<&rayon::ThreadPool>, RunError> {
        if self.started.get().is_none() {
            let threads = self.threads.unwrap_or_else(|| kiln::cli::thread_count(None));
            let _ = self.started.set(make_pool(threads, self.join)?);
        }
        Ok(self.started())
    }
}

/// The threads of one launch of a task whose iteration costs `work`: the
/// engine's pool when the launch [`Pool::spreads`], else the calling thread.
struct Spread<'a> {
    pool: &'a Pool,
    work: Option<u64>,
}

impl runtime::LaunchThreads for Spread<'_> {
    fn pool(&self, count: i64) -> Result<Option<&rayon::ThreadPool>, RunError> {
        match self.pool.spreads(self.work, count) {
            true => self.pool.get(),
            false => Ok(None),
        }
    }
}

/// A pool of `threads` threads of [`WORKER_STACK`] each; none for one
/// thread (chunks then run on the calling thread). With `join`, the
/// calling thread is the first of them, where it may be (a thread that
/// already belongs to a pool gets an ordinary one).
fn make_pool(threads: usize, join: bool) -> Result<Option<rayon::ThreadPool>, RunError> {
    if threads <= 1 {
        return Ok(None);
    }
    let builder = || {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("kiln-worker-{i}"))
            .stack_size(WORKER_STACK)
    };
    let joined = if join { builder().use_current_thread().build().ok() } else { None };
    match joined {
        Some(pool) => Ok(Some(pool)),
        None => builder().build().map(Some).map_err(|e| RunError::new(format!("cannot start {threads} threads: {e}"))),
    }
}

impl Engine for JitEngine {
    /// The runs of one stream: the stream is split (or its split checked)
    /// once, and its kernels' launches indexed once, for all of them.
    fn run_kernels(&mut self, stream: &Stream, runs: &[(&str, &[Const])], fields: &mut Fields) -> Result<(), RunError> {
        self.batch = Some(Batch { stream: address(stream), split_checked: false, launches: None });
        let mut ahead: HashSet<&str> = HashSet::new();
        let result = runs.iter().enumerate().try_for_each(|(i, (kernel, args))| {
            // The next other kernel of the batch compiles while this one
            // is prepared and run (each kernel once a batch).
            if let Some((next, next_args)) = runs[i + 1..].iter().find(|(k, _)| k != kernel) {
                if ahead.insert(next) && kiln::interrupt::requested().is_none() {
                    self.compile_ahead(stream, kernel, next, next_args);
                }
            }
            self.run_kernel(stream, kernel, args, fields)
        });
        self.batch = None;
        result
    }

    fn run_kernel(
        &mut self,
        stream: &Stream,
        kernel: &str,
        args: &[Const],
        fields: &mut Fields,
    ) -> Result<(), RunError> {
        // Interrupted: no kernel is prepared or launched after it (its
        // tool stores what was compiled and exits).
        kiln::interrupt::check().map_err(RunError::new)?;
        self.upgrade();
        let split = self.split(stream, kernel)?;
        let stream = split.as_deref().unwrap_or(stream);
        let (module, k) = self.find_kernel(stream, kernel)?;
        if args.len() != k.params.len() {
            return Err(RunError::new(format!(
                "kernel @{kernel} takes {} arguments, {} given",
                k.params.len(),
                args.len()
            )));
        }
        let kparams: Vec<(&str, Scalar)> =
            k.params.iter().zip(&k.body.params).map(|(p, v)| (k.body.name(*v), p.ty)).collect();
        // The launched task items, looked up once: what `tasks` loads, in
        // its order, and their names (a record may come from a task of
        // another name) and where their statements are.
        let launched = self.launched(stream, kernel)?;
        let named = named_args(k, args);
        let tasks = match self.prepare_launched(stream, kernel, &launched, Some((&named, fields)))? {
            Prepared::Tasks(tasks) => tasks,
            Prepared::Interpret => return self.interpret((module, k), args, &launched, fields),
        };
        // The kernel-scoped temporaries offload made exist for this run.
        let used = tasks.iter().flat_map(|t| &t.meta.fields).map(|f| (f.name.as_str(), f.elem, f.shape.as_slice()));
        let temps = fields.add_temporaries(used)?;
        let path = self.path;
        let fp = self.backend.config().denormals;
        let seed = self.seed;
        let t0 = Instant::now();
        let pool = &self.pool;
        let stats = &mut self.stats;
        let mut out = runtime::PrintOut::new(&mut self.printed);
        let mut run = || -> Result<(), RunError> {
            for (ordinal, (t, &(m, item))) in tasks.iter().zip(&launched).enumerate() {
                let names = LaunchNames { kernel, task: &item.name };
                let slots = runtime::param_slots(&t.meta, &kparams, args, names)?;
                // The statement numbers of the object: one task module's,
                // or the whole kernel's.
                let locate = |n: u32| match path {
                    JitPath::PerTask => kiln_llvm::sites::locate(&[(m, item)], n),
                    JitPath::WholeKernel => kiln_llvm::sites::locate(&launched, n),
                };
                stats.launches += 1;
                match t.tier {
                    Tier::Quick => stats.run.quick_launches += 1,
                    Tier::Opt => stats.run.opt_launches += 1,
                }
                let _span = kiln::trace::span("launch", "launch", &item.name);
                let threads = Spread { pool, work: t.work };
                let on = runtime::RunOn { threads: &threads, denormals: fp, seed, task: ordinal as u32 };
                runtime::launch(t.entry, &t.meta, names, &slots, fields, on, &locate, &mut out)?;
            }
            Ok(())
        };
        // The kernel's launches are made from one of the pool's threads,
        // which works on each launch's chunks too, so the pool stays awake
        // between launches; made from this thread, each launch woke a
        // sleeping worker and then this thread again.
        let result = match self.pool.started() {
            Some(p) => p.install(run),
            None => run(),
        };
        self.stats.run.run_time += t0.elapsed();
        fields.drop_temporaries(temps);
        result
    }

    fn take_printed(&mut self) -> Vec<String> {
        std::mem::take(&mut self.printed)
    }
}
