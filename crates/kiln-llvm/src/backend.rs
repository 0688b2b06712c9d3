//! Where compiled objects come from: this process (`kiln_codegen`'s
//! `Compiler`) or a `kiln-compile` process started for the purpose
//! ([`CompileProcess`]).
//!
//! Owns: the [`Backend`] trait the JIT engine and the cache's providers
//! compile through, and
//! [`CompileProcess`], which `kiln-run` uses so that LLVM's code
//! generator is neither linked into it nor initialised by a run whose
//! tasks all come from the cache (`docs/performance.md`, "Warm start").
//! The process is asked and answers by the compile protocol
//! ([`kiln::compile_protocol`], which owns both halves); the launch
//! metadata of the objects it returns this side derives from the same IR
//! ([`task_meta`], [`KernelPlan`]).
//!
//! Must never: run a `kiln-compile` of another build than this one (its
//! objects would be stored under keys that name this build: the process
//! is sent the whole configuration, build identity included, and refuses
//! a mismatch), or read or write a file itself (the protocol's
//! [`kiln::compile_protocol::Answer`] holds the process's outputs).

use crate::target::{Override, TargetError};
use crate::{CodegenError, CompiledKernel, CompiledTask, HostTarget};
use kiln::compile_protocol::{self as protocol, Wanted, COMPILE_PROGRAM};
use kiln::config::{CompileConfig, LaunchMeta};
use kiln::ir::{Module, Stream};
use kiln::key::functions::NeededRecord;
use kiln::key::Key;
use kiln::plan::{single_task, task_meta, KernelPlan};
use std::path::PathBuf;
use std::time::Instant;

/// The `kiln-compile` beside the running executable (found once a
/// process: a run asks for up to three, the compiler and each tier's).
fn program_beside_this_one() -> Result<PathBuf, CodegenError> {
    static EXE: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    let exe = EXE.get_or_init(|| std::env::current_exe().map_err(|e| e.to_string())).as_ref().map_err(|e| {
        CodegenError::new(format!("cannot find the running program (to run {COMPILE_PROGRAM} beside it): {e}"))
    })?;
    Ok(exe.with_file_name(COMPILE_PROGRAM))
}

/// A code generator for one target and configuration.
pub trait Backend: Send + Sync {
    /// The configuration objects are compiled with (part of every key).
    fn config(&self) -> &CompileConfig;

    /// The machine objects are compiled for.
    fn target(&self) -> &HostTarget;

    /// Compiles per-task modules, each to its own object; one result per
    /// module, in order.
    fn compile_tasks(&self, modules: &[&Module]) -> Vec<Result<CompiledTask, CodegenError>>;

    /// Compiles every task `kernel` of the split stream `stream` launches
    /// into one object (the whole-kernel path).
    fn compile_kernel(&self, stream: &Stream, kernel: &str) -> Result<CompiledKernel, CodegenError>;

    /// Compiles function records (`kiln::key::functions`), each a record
    /// of a per-task module by key; one result per record, in order, with
    /// the record's own metadata.
    fn compile_functions(&self, records: &[NeededRecord<'_>]) -> Vec<Result<CompiledTask, CodegenError>>;

    /// Compiles one per-task module.
    fn compile_task(&self, module: &Module) -> Result<CompiledTask, CodegenError> {
        let result = self.compile_tasks(&[module]).into_iter().next();
        result.unwrap_or_else(|| Err(CodegenError::new("the code generator returned no object")))
    }
}

/// Compiles in a `kiln-compile` process: the program `kiln-compile` beside
/// the running executable (as installed, and as cargo builds them), run
/// once per batch of tasks (a kernel's misses) with every task compiled in
/// parallel there. A batch's compile time is the process's wall time,
/// shared equally among its tasks.
#[derive(Clone, Debug)]
pub struct CompileProcess {
    config: CompileConfig,
    target: HostTarget,
    program: PathBuf,
    progress: Option<ProgressHook>,
}

/// What a compiler process reports while it works, for a tool's progress
/// bar: a batch of tasks started, one task of it done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    Started(usize),
    Done,
}

/// The tool's callback for [`Progress`] (the library never draws it).
#[derive(Clone)]
pub struct ProgressHook(pub std::sync::Arc<dyn Fn(Progress) + Send + Sync>);

impl std::fmt::Debug for ProgressHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressHook")
    }
}

impl CompileProcess {
    /// A backend running `kiln-compile` from the running executable's
    /// directory. Fails when the running executable cannot be found; a missing
    /// `kiln-compile` is found at the first compile, naming the path.
    pub fn beside_this_program(config: CompileConfig, target: HostTarget) -> Result<CompileProcess, CodegenError> {
        CompileProcess::new(config, target, program_beside_this_one()?)
    }

    /// The target a simulated host's `cpu` and `features` settings name
    /// (the rest detected), checked against LLVM's lists by the
    /// `kiln-compile` beside the running executable, as
    /// [`crate::target::resolve`] checks them in a program that links those
    /// lists: a program that only loads objects (`kiln-run`) then links
    /// neither them nor LLVM's machine-code layer (docs/performance.md,
    /// "Warm start").
    pub fn resolve_target(cpu: Override, features: Override) -> Result<HostTarget, TargetError> {
        let program = program_beside_this_one().map_err(TargetError::Llvm)?;
        let cpu = cpu.value.map(|value| protocol::TargetSetting { value, from: cpu.source });
        let features = features.value.map(|value| protocol::TargetSetting { value, from: features.source });
        match protocol::check_target(&program, cpu, features) {
            protocol::TargetCheck::Target { triple, cpu, features } => Ok(HostTarget { triple, cpu, features }),
            protocol::TargetCheck::Help(text) => Err(TargetError::Help(text)),
            protocol::TargetCheck::Unknown(message) => Err(TargetError::Unknown(message)),
            protocol::TargetCheck::Failed(message) => Err(TargetError::Llvm(CodegenError::new(message))),
        }
    }

    /// A backend running `program` (a `kiln-compile`).
    pub fn new(config: CompileConfig, target: HostTarget, program: PathBuf) -> Result<CompileProcess, CodegenError> {
        Ok(CompileProcess { config, target, program, progress: None })
    }

    /// This backend, calling `hook` as each batch starts and each of its
    /// tasks is compiled (the process reports each with a line).
    pub fn with_progress(mut self, hook: ProgressHook) -> CompileProcess {
        self.progress = Some(hook);
        self
    }

    /// Starts a `kiln-compile --cache-dir` fill of `modules` (per-task
    /// modules) in the background (see [`protocol::start`]): it compiles
    /// and stores their tasks and the function records they call, with
    /// this backend's configuration and target, into the cache that
    /// `cache_args` name (`--cache-dir DIR` and the flags of the settings
    /// given on the command line; the rest it reads as any run does).
    pub fn start_fill(&self, modules: &[&Module], cache_args: &[String]) -> Result<protocol::Started, CodegenError> {
        let input = Stream { modules: modules.iter().map(|m| (*m).clone()).collect() }.to_string();
        let mut args = vec!["-".to_string(), "--quiet".to_string()];
        args.extend(cache_args.iter().cloned());
        args.extend(protocol::request_flags(&self.config, &self.target.cpu, &self.target.features));
        protocol::start(&self.program, &args, &input).map_err(CodegenError::new)
    }

    /// The flags of a request for `wanted` ([`protocol::request_flags`]).
    fn flags(&self, wanted: &Wanted) -> Vec<String> {
        let mut flags = protocol::request_flags(&self.config, &self.target.cpu, &self.target.features);
        flags.extend(wanted.flag());
        flags
    }

    /// Asks the program for `wanted` of `modules`; traced as `what`. With
    /// `report`, each task the process reports done is passed to the hook
    /// as it comes.
    fn ask(
        &self,
        modules: &[&Module],
        wanted: &Wanted,
        what: &str,
        report: Option<&ProgressHook>,
    ) -> Result<protocol::Answer, CodegenError> {
        let input = Stream { modules: modules.iter().map(|m| (*m).clone()).collect() }.to_string();
        let done = report.map(|hook| move || (hook.0)(Progress::Done));
        let done = done.as_ref().map(|d| d as &dyn Fn());
        protocol::ask(&self.program, &input, &self.flags(wanted), what, done).map_err(CodegenError::new)
    }

    /// Compiles `modules` (distinct task names) in one process run; the
    /// objects in order.
    fn compile_batch(&self, modules: &[&Module]) -> Result<Vec<Vec<u8>>, CodegenError> {
        if let Some(hook) = &self.progress {
            (hook.0)(Progress::Started(modules.len()));
        }
        let names: Vec<String> =
            modules.iter().filter_map(|m| single_task(m).ok()).map(|t| t.name.to_string()).collect();
        // The records the tasks call are compiled by their own request.
        let answer = self.ask(modules, &Wanted::Tasks, &names.join(","), self.progress.as_ref())?;
        let read = |m: &Module| {
            let name = &single_task(m)?.name;
            answer.object(&protocol::file_stem(name), &format!("task @{name}")).map_err(CodegenError::new)
        };
        modules.iter().map(|m| read(m)).collect()
    }

    /// Compiles function records in one process run: the distinct modules
    /// that hold them are sent, with the list of keys to compile.
    fn records_batch(&self, records: &[NeededRecord<'_>]) -> Result<Vec<Vec<u8>>, CodegenError> {
        let mut modules: Vec<&Module> = Vec::new();
        let mut sent = std::collections::HashSet::new();
        for r in records {
            if sent.insert(r.module as *const Module) {
                modules.push(r.module);
            }
        }
        let keys: Vec<Key> = records.iter().map(|r| r.key).collect();
        let list = protocol::write_record_list(&keys)
            .map_err(|e| CodegenError::new(format!("cannot write the list of function records to compile: {e}")))?;
        let answer = self.ask(&modules, &Wanted::Records(list.path().to_path_buf()), "function records", None)?;
        let read = |key: &Key| {
            let what = format!("function record {key}");
            answer.object(&protocol::record_file_stem(key), &what).map_err(CodegenError::new)
        };
        records.iter().map(|r| read(&r.key)).collect()
    }
}

impl Backend for CompileProcess {
    fn config(&self) -> &CompileConfig {
        &self.config
    }

    fn target(&self) -> &HostTarget {
        &self.target
    }

    fn compile_tasks(&self, modules: &[&Module]) -> Vec<Result<CompiledTask, CodegenError>> {
        // Metadata first: a module that has none is its own error, and is
        // not sent.
        let metas: Vec<_> = modules.iter().map(|m| task_meta(m).map_err(CodegenError::from)).collect();
        let mut batch: Vec<&Module> = Vec::new();
        for (m, meta) in modules.iter().zip(&metas) {
            // One file per task name: a name met again is the same task
            // (a kernel's launches name their tasks uniquely).
            if meta.is_ok() && !batch.iter().any(|b| same_task_name(b, m)) {
                batch.push(m);
            }
        }
        let at = |i: usize| batch.iter().position(|b| same_task_name(b, modules[i])).unwrap_or(0);
        batch_results(metas, batch.len(), || self.compile_batch(&batch), at)
    }

    fn compile_functions(&self, records: &[NeededRecord<'_>]) -> Vec<Result<CompiledTask, CodegenError>> {
        let metas: Vec<Result<LaunchMeta, CodegenError>> = records.iter().map(|r| Ok(r.meta.clone())).collect();
        batch_results(metas, records.len(), || self.records_batch(records), |i| i)
    }

    fn compile_kernel(&self, stream: &Stream, kernel: &str) -> Result<CompiledKernel, CodegenError> {
        let plan = KernelPlan::of(stream, kernel)?;
        let t0 = Instant::now();
        let mut args: Vec<String> = ["-", "--kernel", kernel, "-o", "-"].map(String::from).into();
        args.extend(self.flags(&Wanted::Everything));
        let object = protocol::run(&self.program, &args, &stream.to_string(), None).map_err(CodegenError::new)?;
        Ok(CompiledKernel { object, launches: plan.launches, compile_time: t0.elapsed() })
    }
}

/// Runs a batch of `n` objects (none: no process) and pairs each
/// metadata with its object (`at(i)`: the index of the `i`-th's object),
/// each charged an equal share of the batch's time.
fn batch_results(
    metas: Vec<Result<LaunchMeta, CodegenError>>,
    n: usize,
    run: impl FnOnce() -> Result<Vec<Vec<u8>>, CodegenError>,
    at: impl Fn(usize) -> usize,
) -> Vec<Result<CompiledTask, CodegenError>> {
    let t0 = Instant::now();
    let objects = if n == 0 { Ok(Vec::new()) } else { run() };
    let share = t0.elapsed() / u32::try_from(n.max(1)).unwrap_or(u32::MAX);
    let pair = |i: usize, meta: Result<LaunchMeta, CodegenError>| {
        let meta = meta?;
        let objects = objects.as_ref().map_err(Clone::clone)?;
        let object =
            objects.get(at(i)).cloned().ok_or_else(|| CodegenError::new("the compiler returned too few objects"))?;
        Ok(CompiledTask { object, meta, compile_time: share })
    };
    metas.into_iter().enumerate().map(|(i, meta)| pair(i, meta)).collect()
}

/// Whether two per-task modules hold tasks of one name.
fn same_task_name(a: &Module, b: &Module) -> bool {
    matches!((single_task(a), single_task(b)), (Ok(x), Ok(y)) if x.name == y.name)
}
