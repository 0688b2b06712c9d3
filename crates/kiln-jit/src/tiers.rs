//! Tiered compilation on the per-task path (`docs/runtime.md`, "Tiers"): a
//! task whose optimised object no cache tier holds starts on its quick
//! tier, compiled in a fraction of the time, while a background process
//! compiles the optimised tier into the cache; at a launch boundary the
//! engine replaces the task with it.
//!
//! A kernel small enough ([`Tiers::interpreting`]) starts in the
//! interpreter instead of compiling its quick tier: no compile stands
//! before its first launch.
//!
//! Owns: [`Tiers`], the quick tier's backend and provider, the tasks
//! running their quick tier (compiled or interpreted), which kernels are
//! small enough to interpret, and the background compile of their
//! optimised tier (a cache fill, started by the tool's [`StartFill`]) and
//! its state.
//!
//! Must never: let a launch see part of a tier (a task is replaced whole,
//! before a kernel's launches are looked up); wait for the background
//! compile, or kill it at the end of a run (it stores the optimised tier
//! for the next process: a run shorter than an optimised compile would
//! otherwise never get one); fail a run because of it (a failed one is one
//! warning, and the quick tier runs on); or print.

use crate::provide::{JitStats, TaskProvider};
use kiln::compile_protocol::Started;
use kiln::ir::Module;
use kiln_llvm::Backend;

/// Which of a task's two compiled forms a loaded task is (`docs/runtime.md`,
/// "Tiers"): the quick one a process starts on, or the optimised one that
/// replaces it. Both compute the same results bit for bit (default mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Compiled at `-O0` ([`kiln::config::CompileConfig::quick`]).
    Quick,
    /// Compiled at the run's `-O` level: what `kiln-compile` and a cache
    /// fill make, and what a process runs once it is ready.
    #[default]
    Opt,
}

impl Tier {
    /// The tier of objects compiled with `config`: quick at `-O0`.
    pub fn of(config: &kiln::config::CompileConfig) -> Tier {
        if config.has_quick_tier() {
            Tier::Opt
        } else {
            Tier::Quick
        }
    }
}

/// What names a loaded module in a session: the digest of its canonical
/// text (as the engine's table of loaded tasks has it).
pub type TextDigest = blake3::Hash;

/// Starts the background compile of the optimised tier of `modules` into
/// the cache the run's optimised provider reads (the tool's
/// `kiln-compile --cache-dir` process).
pub type StartFill = Box<dyn Fn(&[&Module]) -> Result<Started, String> + Send>;

/// How much a tiered run interprets instead of compiling quick tiers,
/// in statements executed ([`kiln::interp::cost::statements_bound`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InterpretBudget {
    /// The most a kernel's launches may execute to be interpreted.
    pub kernel: u64,
    /// The most all the interpreted launches of a run may execute: past
    /// it, kernels compile their quick tier (a kernel called many times
    /// before its optimised tier is ready costs the run at most this much
    /// interpreting).
    pub run: u64,
}

impl Default for InterpretBudget {
    /// `kiln-run`'s: the interpreter runs 100 to 130 statements a
    /// microsecond, so a kernel at most about 5 ms and a run at most
    /// about 15 ms, where a quick compile costs 8 to 9 ms more than
    /// interpreting a small kernel, and more for a larger one (a
    /// `kiln-compile` process; docs/performance.md, "Tiered compilation").
    fn default() -> InterpretBudget {
        InterpretBudget { kernel: 600_000, run: 2_000_000 }
    }
}

/// A task running its quick tier (compiled, or interpreted with its
/// kernel).
pub(crate) struct Quick {
    pub digest: TextDigest,
    pub module: Module,
    pub task: String,
}

/// The background compile running, and the tasks it compiles.
struct Running {
    process: Started,
    tasks: Vec<Quick>,
    /// Its time, for `--time-trace`: from its start to the launch boundary
    /// that sees it ended (or to the end of the run).
    _span: kiln::trace::Span,
}

/// The quick tier of a run and the background compiles of its optimised
/// tier.
pub struct Tiers {
    /// The quick tier's code generator (the run's configuration,
    /// [`kiln::config::CompileConfig::quick`]).
    pub(crate) backend: std::sync::Arc<dyn Backend>,
    /// Where the quick tier's tasks come from.
    pub(crate) provider: Box<dyn TaskProvider>,
    start_fill: StartFill,
    /// Tasks on their quick tier that no background compile has been
    /// asked for yet.
    waiting: Vec<Quick>,
    running: Option<Running>,
    /// A background compile failed: no other is started (its warning said
    /// so once).
    failed: bool,
    /// How much kernels run in the interpreter until their optimised
    /// tier is ready; `None`: every kernel compiles its quick tier.
    interpret: Option<InterpretBudget>,
    /// The statements the run's interpreted launches executed at most.
    interpreted: u64,
}

impl Tiers {
    /// Tiers that compile the quick tier with `backend` and get it from
    /// `provider`, and start the optimised tier's compiles with
    /// `start_fill`.
    pub fn new(backend: Box<dyn Backend>, provider: Box<dyn TaskProvider>, start_fill: StartFill) -> Tiers {
        Tiers {
            backend: backend.into(),
            provider,
            start_fill,
            waiting: Vec::new(),
            running: None,
            failed: false,
            interpret: None,
            interpreted: 0,
        }
    }

    /// These tiers, which run a kernel small enough for `budget`
    /// (the default's for `kiln-run`) in the interpreter
    /// instead of compiling its quick tier, until the background compile
    /// has stored its optimised tier; only where the interpreter computes
    /// what the compiled code would
    /// ([`kiln::config::CompileConfig::interpreter_agrees`]).
    pub fn interpreting(mut self, budget: InterpretBudget) -> Tiers {
        self.interpret = Some(budget);
        self
    }

    /// The bound of a kernel whose launches execute at most `statements`
    /// (`None`: not known before they run) when it is to be interpreted:
    /// within the budget, where the interpreter agrees with the compiled
    /// code, and not after a background compile failed (its optimised
    /// tier would then never come). [`Tiers::charge`] it when
    /// it is.
    pub(crate) fn interprets(&self, statements: impl FnOnce() -> Option<u64>) -> Option<u64> {
        let agrees = self.backend.config().interpreter_agrees();
        let budget = self.interpret.filter(|_| agrees && !self.failed)?;
        let n = statements()?;
        (n <= budget.kernel && self.interpreted.saturating_add(n) <= budget.run).then_some(n)
    }

    /// Counts an interpreted kernel's bound against the run's budget.
    pub(crate) fn charge(&mut self, statements: u64) {
        self.interpreted = self.interpreted.saturating_add(statements);
    }

    /// Whether the task of `digest` waits for, or is in, a background
    /// compile.
    pub(crate) fn pending(&self, digest: &TextDigest) -> bool {
        let running = self.running.iter().flat_map(|r| &r.tasks);
        self.waiting.iter().chain(running).any(|q| q.digest == *digest)
    }

    /// Notes that a task runs its quick tier: its optimised tier is
    /// compiled by the next background compile.
    pub(crate) fn started_quick(&mut self, quick: Quick) {
        if !self.failed {
            self.waiting.push(quick);
        }
    }

    /// Starts a background compile of the waiting tasks, unless one is
    /// running (they wait for the next launch boundary after it) or the
    /// run was interrupted (nothing new is started after a Ctrl-C).
    pub(crate) fn start_waiting(&mut self, stats: &mut JitStats) {
        let interrupted = kiln::interrupt::requested().is_some();
        if self.running.is_some() || self.waiting.is_empty() || self.failed || interrupted {
            return;
        }
        let tasks = std::mem::take(&mut self.waiting);
        let modules: Vec<&Module> = tasks.iter().map(|q| &q.module).collect();
        match (self.start_fill)(&modules) {
            Ok(process) => {
                let what = format!("({} tasks)", tasks.len());
                let _span = kiln::trace::span("compile", "optimised tier, in the background", &what);
                self.running = Some(Running { process, tasks, _span });
            }
            Err(e) => self.fail(&e, stats),
        }
    }

    /// At a launch boundary: the tasks whose optimised tier the
    /// background compile has stored, once it has ended well.
    pub(crate) fn poll(&mut self, stats: &mut JitStats) -> Option<Vec<Quick>> {
        let ended = self.running.as_mut()?.process.poll()?;
        let done = self.running.take()?;
        match ended {
            Ok(()) => Some(done.tasks),
            Err(e) => {
                self.fail(&e, stats);
                None
            }
        }
    }

    /// The background compile failed: one warning, and the quick tier
    /// runs on.
    fn fail(&mut self, why: &str, stats: &mut JitStats) {
        self.failed = true;
        self.waiting.clear();
        let warning = format!("the optimised tier could not be compiled in the background ({why}); the quick tier ran");
        stats.warn(warning);
    }

    /// At the end of a run: the tasks that waited for the running
    /// compile get one of their own, and every task whose optimised tier
    /// is still being compiled (or, after an interrupt, was never asked
    /// for) is counted. The compiles are left running
    /// (dropping a [`Started`] leaves its process be): they store what
    /// they compile for the next process.
    pub(crate) fn finish(&mut self, stats: &mut JitStats) {
        let running = self.running.take().map_or(0, |r| r.tasks.len());
        self.start_waiting(stats);
        let started = self.running.take().map_or(0, |r| r.tasks.len());
        let never = std::mem::take(&mut self.waiting).len();
        stats.run.opt_pending += (running + started + never) as u64;
    }
}
