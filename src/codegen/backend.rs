//! Where compiled objects come from: this process ([`Compiler`]) or a
//! `kiln-compile` process started for the purpose ([`CompileProcess`]).
//!
//! Owns: the [`Backend`] trait the JIT engine and the cache's providers
//! compile through, its in-process implementation, and
//! [`CompileProcess`], which `kiln-run` uses so that LLVM's code
//! generator is neither linked into it nor initialised by a run whose
//! tasks all come from the cache (`docs/performance.md`, "Warm start").
//! The process's request is KIR text on its standard input and
//! `kiln-compile`'s own flags; its answer is object files, whose launch
//! metadata this side derives from the same IR ([`task_meta`],
//! [`KernelPlan`]).
//!
//! Must never: run a `kiln-compile` of another build than this one (its
//! objects would be stored under keys that name this build: the process
//! is sent the whole configuration, build identity included, and refuses
//! a mismatch), leave its temporary directory behind, or tell the process
//! the configuration any other way than whole, in the form the key hashes
//! (`--compile-config`).

use super::{task_meta, CodegenError, CompiledKernel, CompiledTask, Compiler, HostTarget, KernelPlan};
use crate::config::{CompileConfig, LaunchMeta};
use crate::ir::{Module, Stream};
use crate::key::functions::NeededRecord;
use crate::key::Key;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

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

    /// Compiles function records (`crate::key::functions`), each a record
    /// of a per-task module by key; one result per record, in order, with
    /// the record's own metadata.
    fn compile_functions(&self, records: &[NeededRecord<'_>]) -> Vec<Result<CompiledTask, CodegenError>>;

    /// Compiles one per-task module.
    fn compile_task(&self, module: &Module) -> Result<CompiledTask, CodegenError> {
        let result = self.compile_tasks(&[module]).into_iter().next();
        result.unwrap_or_else(|| Err(CodegenError::new("the code generator returned no object")))
    }
}

impl Backend for Compiler {
    fn config(&self) -> &CompileConfig {
        &self.config
    }

    fn target(&self) -> &HostTarget {
        &self.target
    }

    fn compile_tasks(&self, modules: &[&Module]) -> Vec<Result<CompiledTask, CodegenError>> {
        modules.iter().map(|m| Compiler::compile_task(self, m)).collect()
    }

    fn compile_kernel(&self, stream: &Stream, kernel: &str) -> Result<CompiledKernel, CodegenError> {
        Compiler::compile_kernel(self, stream, kernel)
    }

    fn compile_functions(&self, records: &[NeededRecord<'_>]) -> Vec<Result<CompiledTask, CodegenError>> {
        records.iter().map(|r| self.compile_function(r.module, &r.key)).collect()
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

/// The line a `kiln-compile --report-progress` writes on standard output
/// for each task it has compiled.
pub const DONE_LINE: &str = "done";

/// The program's name.
pub const COMPILE_PROGRAM: &str = "kiln-compile";

impl CompileProcess {
    /// A backend running `kiln-compile` from the running executable's
    /// directory. Fails when the running executable cannot be found; a missing
    /// `kiln-compile` is found at the first compile, naming the path.
    pub fn beside_this_program(config: CompileConfig, target: HostTarget) -> Result<CompileProcess, CodegenError> {
        let exe = std::env::current_exe().map_err(|e| {
            CodegenError::new(format!("cannot find the running program (to run {COMPILE_PROGRAM} beside it): {e}"))
        })?;
        CompileProcess::new(config, target, exe.with_file_name(COMPILE_PROGRAM))
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

    /// The flags that make `kiln-compile` compile exactly as this backend
    /// is configured: the configuration whole, in the form the key hashes
    /// (the process refuses one it cannot honour, another build's
    /// included), and the target.
    fn flags(&self) -> Vec<String> {
        vec![
            format!("--compile-config={}", crate::key::config_json(&self.config)),
            format!("--target-cpu={}", self.target.cpu),
            format!("--target-features={}", self.target.features),
            "--color=never".to_string(),
        ]
    }

    /// Runs the program with `args` and these flags, `input` on its
    /// standard input; its standard output, or why it failed. With
    /// `report`, the output is the process's progress lines, each passed
    /// to the hook as it comes.
    fn run(&self, args: &[&str], input: &str, report: Option<&ProgressHook>) -> Result<Vec<u8>, CodegenError> {
        let program = self.program.display();
        // Interrupted: no compiler is started after it.
        if let Some(sig) = crate::interrupt::requested() {
            return Err(CodegenError::new(format!("interrupted by signal {sig}")));
        }
        let mut child = Command::new(&self.program)
            .args(args)
            .args(report.map(|_| "--report-progress"))
            .args(self.flags())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                CodegenError::new(format!(
                    "cannot run the compiler {program}: {e} (tasks are compiled by the {COMPILE_PROGRAM} installed beside this program)"
                ))
            })?;
        // The process reads all of its input before it writes: no
        // deadlock on full pipes. A write error shows in its exit status.
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(input.as_bytes());
        }
        let out = match report {
            None => child.wait_with_output(),
            Some(hook) => wait_reporting(child, hook),
        }
        .map_err(|e| CodegenError::new(format!("the compiler {program} failed: {e}")))?;
        if out.status.success() {
            return Ok(out.stdout);
        }
        let said = String::from_utf8_lossy(&out.stderr);
        let said =
            said.trim().lines().map(|l| l.strip_prefix("kiln-compile: ").unwrap_or(l)).collect::<Vec<_>>().join("; ");
        let status = match out.status.code() {
            Some(c) => format!("exit status {c}"),
            None => "killed by a signal".to_string(),
        };
        Err(CodegenError::new(format!("the compiler {program} failed ({status}): {said}")))
    }

    /// Runs the program once on `modules` with `extra` flags, writing its
    /// files to a fresh directory (returned); traced as `what`.
    fn run_in_dir(
        &self,
        modules: &[&Module],
        extra: &[String],
        what: &str,
        report: Option<&ProgressHook>,
    ) -> Result<tempfile::TempDir, CodegenError> {
        let dir = tempfile::Builder::new()
            .prefix("kiln-compile.")
            .tempdir()
            .map_err(|e| CodegenError::new(format!("cannot make a directory for the compiler's objects: {e}")))?;
        let input = Stream { modules: modules.iter().map(|m| (*m).clone()).collect() }.to_string();
        let out = format!("{}/", dir.path().display());
        // Traced: the process traces itself, and its spans join this
        // process's trace on a track of their own.
        let trace = crate::trace::on().then(|| dir.path().join("trace.json"));
        let trace_flag = trace.as_ref().map(|p| format!("--time-trace={}", p.display()));
        let mut args = vec!["-", "-o", &out];
        args.extend(trace_flag.as_deref());
        args.extend(extra.iter().map(String::as_str));
        let span = crate::trace::span("compile", COMPILE_PROGRAM, what);
        let started = crate::trace::now_us();
        self.run(&args, &input, report)?;
        drop(span);
        if let Some(text) = trace.and_then(|p| std::fs::read_to_string(p).ok()) {
            crate::trace::merge(&text, started);
        }
        Ok(dir)
    }

    /// Compiles `modules` (distinct task names) in one process run; the
    /// objects in order.
    fn compile_batch(&self, modules: &[&Module]) -> Result<Vec<Vec<u8>>, CodegenError> {
        if let Some(hook) = &self.progress {
            (hook.0)(Progress::Started(modules.len()));
        }
        let names: Vec<String> =
            modules.iter().filter_map(|m| super::single_task(m).ok()).map(|t| t.name.to_string()).collect();
        // The records the tasks call are compiled by their own request.
        let none = vec![format!("--function-records={NO_RECORDS}")];
        let dir = self.run_in_dir(modules, &none, &names.join(","), self.progress.as_ref())?;
        let read = |m: &Module| {
            let name = &super::single_task(m)?.name;
            let path = dir.path().join(format!("{}.o", file_stem(name)));
            std::fs::read(&path).map_err(|e| {
                CodegenError::new(format!("the compiler wrote no object for task @{name} ({}): {e}", path.display()))
            })
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
        let list = tempfile::NamedTempFile::new()
            .and_then(|mut f| {
                let keys: String = records.iter().map(|r| format!("{}\n", r.key)).collect();
                f.write_all(keys.as_bytes()).map(|_| f)
            })
            .map_err(|e| CodegenError::new(format!("cannot write the list of function records to compile: {e}")))?;
        let flag = vec![format!("--function-records={}", list.path().display())];
        let dir = self.run_in_dir(&modules, &flag, "function records", None)?;
        let read = |key: &Key| {
            let path = dir.path().join(format!("{}.o", record_file_stem(key)));
            std::fs::read(&path).map_err(|e| {
                CodegenError::new(format!(
                    "the compiler wrote no object for function record {key} ({}): {e}",
                    path.display()
                ))
            })
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
        let metas: Vec<_> = modules.iter().map(|m| task_meta(m)).collect();
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
        let object = self.run(&["-", "--kernel", kernel, "-o", "-"], &stream.to_string(), None)?;
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
/// The longest file stem [`file_stem`] keeps as it is, in bytes (file
/// systems allow 255 a name, with room left for an extension).
pub const MAX_FILE_STEM: usize = 200;

/// The file stem of the output of task `name` (`kiln-compile -o DIR/`,
/// and the objects a [`CompileProcess`] reads back): the name itself
/// up to [`MAX_FILE_STEM`] bytes, else its first 160 bytes, `-` and 16 hex
/// digits of its blake3 hash, so a name of any length the verifier accepts
/// makes a file name the system takes, and two long names stay apart.
pub fn file_stem(name: &str) -> String {
    if name.len() <= MAX_FILE_STEM {
        return name.to_string();
    }
    let mut cut = 160;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let hash = blake3::hash(name.as_bytes()).to_hex();
    format!("{}-{}", &name[..cut], &hash[..16])
}

/// The value of `kiln-compile --function-records` that asks for none (the
/// tasks alone).
pub const NO_RECORDS: &str = "none";

/// The file stem of function record `key`'s output (`kiln-compile -o
/// DIR/`): `fn.KEY`.
pub fn record_file_stem(key: &Key) -> String {
    format!("fn.{key}")
}

fn same_task_name(a: &Module, b: &Module) -> bool {
    matches!((super::single_task(a), super::single_task(b)), (Ok(x), Ok(y)) if x.name == y.name)
}

/// Waits for `child`, passing each progress line of its standard output to
/// `hook` as it comes; its standard error is read on a thread of its own
/// meanwhile, so that neither pipe can fill and stall the process.
fn wait_reporting(mut child: std::process::Child, hook: &ProgressHook) -> std::io::Result<std::process::Output> {
    use std::io::{BufRead as _, Read as _};
    let stderr = child.stderr.take();
    let errors = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut e) = stderr {
            let _ = e.read_to_end(&mut bytes);
        }
        bytes
    });
    let mut stdout = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines() {
            match line {
                Ok(l) if l == DONE_LINE => (hook.0)(Progress::Done),
                Ok(l) => stdout.extend_from_slice(format!("{l}\n").as_bytes()),
                Err(_) => break,
            }
        }
    }
    let status = child.wait()?;
    let stderr = errors.join().unwrap_or_default();
    Ok(std::process::Output { status, stdout, stderr })
}
