//! Tiered compilation on the per-task path (`docs/runtime.md`, "Tiers"): a
//! task whose optimised object no cache tier holds starts on its quick
//! tier, compiled in a fraction of the time, while a background process
//! compiles the optimised tier into the cache; at a launch boundary the
//! engine replaces the task with it.
//!
//! Owns: [`Tiers`], the quick tier's backend and provider, the tasks
//! running their quick tier, and the background compile of their
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

/// A task running its quick tier.
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
}

impl Tiers {
    /// Tiers that compile the quick tier with `backend` and get it from
    /// `provider`, and start the optimised tier's compiles with
    /// `start_fill`.
    pub fn new(backend: Box<dyn Backend>, provider: Box<dyn TaskProvider>, start_fill: StartFill) -> Tiers {
        Tiers { backend: backend.into(), provider, start_fill, waiting: Vec::new(), running: None, failed: false }
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
