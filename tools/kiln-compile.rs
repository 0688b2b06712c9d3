//! `kiln-compile`: compiles every task of a KIR file (or split stream) to a
//! host object, LLVM IR or assembly, tasks in parallel. A `main` over
//! `kiln::{parser, verifier, codegen, tool}`, not yet thin: it still checks
//! the build it is asked to be, sets up a cache fill and writes its
//! outputs. See `docs/tools/kiln-compile.md`.

use clap::Parser;
use kiln::compile_protocol::{self as protocol, Requested, Wanted};
use kiln::config::CompileConfig;
use kiln::ir::Module;
use kiln::settings::{self, Settings};
use kiln::stats::RunReport;
use kiln::tool::{self, ToolError};
use kiln::trace;
use kiln_codegen::fill;
use kiln_codegen::{Compiler, Emit};
use kiln_llvm::session;
use kiln_llvm::target::Override;
use rayon::prelude::*;
use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const ABOUT: &str = "Compile the tasks of a KIR file to host objects";

const LONG_ABOUT: &str = "\
Reads a KIR kernel file or a split stream, verifies it, and compiles every task's \
module to a relocatable object for this host (or to LLVM IR / assembly with --emit), \
tasks in parallel. A kernel file goes through the default pipeline (which ends with \
split-tasks) first, as kiln-key and kiln-run run it. Objects use the host's detected CPU features, PIC, \
and on x86-64 the large code model.";

const AFTER_HELP: &str = "\
Output: -o FILE for a single task, -o DIR/ (or an existing directory) for many, \
one file per task named <task>.o, <task>.ll or <task>.s; -o - writes text to \
standard output. Without -o the files go to the current directory. \
A function of 64 statements or more (its callees inlined) that touches no field is \
compiled once, as a function record fn.<key>.o beside the tasks in a directory \
(with -o FILE or -o -, only the task is written): a task's object declares the records it calls, \
and links with them.";

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum EmitArg {
    /// A relocatable object file
    Obj,
    /// Optimised LLVM IR text
    Llvm,
    /// Assembly text
    Asm,
}

#[derive(Parser, Debug)]
#[command(name = "kiln-compile", version = kiln::VERSION, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
struct Cli {
    /// Input KIR file; `-` reads standard input
    #[arg(value_name = "INPUT", default_value = "-")]
    input: String,

    /// Output file (one task), directory (ending in `/`, or existing), or `-`
    #[arg(short = 'o', value_name = "PATH")]
    output: Option<String>,

    /// What to write for each task
    #[arg(long, value_enum, default_value = "obj")]
    emit: EmitArg,

    /// Write an object to standard output even when it is a terminal (as llc's -f)
    #[arg(short = 'f', long)]
    force: bool,

    #[command(flatten)]
    config: kiln::cli::ConfigArgs,

    /// Show no progress bar (one is shown on a terminal when 16 or more tasks are compiled)
    #[arg(short = 'q', long)]
    quiet: bool,

    /// Write a line `done` on standard output as each task is compiled (what kiln-run reads for its progress)
    #[arg(long, hide = true)]
    report_progress: bool,

    /// The whole compile configuration as one JSON object, exactly as keyed (what `kiln-run` sends; a field this build does not know, or another build's identity, is refused)
    #[arg(long, value_name = "JSON", hide = true, conflicts_with = "ConfigArgs")]
    compile_config: Option<String>,

    /// Compile for this CPU instead of the detected host CPU (checked against LLVM's list; `help` lists CPUs and features)
    #[arg(long, value_name = "NAME")]
    target_cpu: Option<String>,

    /// Compile for these CPU features (`+avx2,-fma,...`) instead of the detected ones (checked against LLVM's list)
    #[arg(long, value_name = "FEATURES", allow_hyphen_values = true)]
    target_features: Option<String>,

    /// Compile on N threads, 1 to 256 (default: all cores)
    #[arg(long, value_name = "N", value_parser = kiln::cli::threads_parser())]
    threads: Option<u32>,

    /// Print the target (triple, CPU, features) and exit
    #[arg(long)]
    print_target: bool,

    /// Where --target-cpu came from, for messages (a kiln-run checking its setting: `KILN_TARGET_CPU`, ...)
    #[arg(long, value_name = "WHERE", hide = true, requires = "target_cpu")]
    target_cpu_from: Option<String>,

    /// Where --target-features came from, for messages (as --target-cpu-from)
    #[arg(long, value_name = "WHERE", hide = true, requires = "target_features")]
    target_features_from: Option<String>,

    /// Compile the tasks kernel NAME launches into one object (the whole-kernel form `kiln-run --no-cache` runs; entries kiln_task.0, kiln_task.1, ...)
    #[arg(long, value_name = "@NAME", conflicts_with = "cache_dir", value_parser = kiln::cli::parse_kernel_name)]
    kernel: Option<String>,

    /// Refuse to compile unless this is build ID (`kiln-run` passes its own: an object is keyed by the build that made it)
    #[arg(long, value_name = "ID")]
    build_id: Option<String>,

    /// Compile only the function records whose keys FILE lists (one a line), or with `none` the tasks only (what kiln-run sends)
    #[arg(long, value_name = "FILE", hide = true, conflicts_with_all = ["kernel", "cache_dir"])]
    function_records: Option<String>,

    /// Fill this per-task cache with the objects (in the target's scope); write files only with -o
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,

    /// Accept a cache directory that another user owns or that is group- or world-writable
    #[arg(long, requires = "cache_dir")]
    allow_insecure_cache: bool,

    /// With --cache-dir: fill this remote cache too (redis://HOST:PORT or redis+cluster://HOST:PORT,...) [env: KILN_REMOTE]
    #[arg(long, value_name = "URL", requires = "cache_dir")]
    remote: Option<String>,

    /// With --cache-dir: read the remote cache, never write it [env: KILN_REMOTE_READ_ONLY]
    #[arg(long, requires = "cache_dir")]
    remote_read_only: bool,

    /// With --cache-dir: print the cache counters on standard error (`--stats=json`: one JSON object)
    #[arg(long, value_enum, value_name = "FORMAT", num_args = 0..=1, require_equals = true,
          default_missing_value = "text", requires = "cache_dir")]
    stats: Option<StatsFormat>,

    #[command(flatten)]
    tool: kiln::cli::TracedToolArgs,
}

/// How `--stats` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum StatsFormat {
    /// Aligned text
    Text,
    /// One JSON object on one line
    Json,
}

/// `kiln-compile`'s manual: `--help` after the options, and the man page.
const MANUAL: kiln::manual::Manual = kiln::manual::Manual {
    examples: &[
        ("One object per task, into a directory", "kiln-compile -o objs/ testdata/ten_tasks.kir"),
        (
            "Every task's LLVM IR on standard output, each module headed by its task",
            "kiln-compile --emit=llvm -o - testdata/saxpy.kir",
        ),
        ("Fill a cache, as a CI job would", "kiln-compile --cache-dir ci-cache --stats testdata/ten_tasks.kir"),
        ("Objects for another CPU", "kiln-compile -mcpu=znver3 -o objs-znver3/ testdata/saxpy.kir"),
        ("The CPUs LLVM knows", "kiln-compile -mcpu=help"),
    ],
    exit_status: &[
        (0, "Success."),
        (1, "The input is invalid, or a task fails to compile (every failing task is reported)."),
        (2, "Bad usage, such as -o FILE with several tasks."),
        (130, "Interrupted by SIGINT (143: SIGTERM); tasks compiled before it are kept in the cache."),
    ],
    settings: kiln::manual::SettingsShown::All,
    files: &[kiln::manual::CONFIG_FILES[0], kiln::manual::CACHE_FILES[0], kiln::manual::CACHE_FILES[1]],
    see_also: &[
        "kiln-opt(1)",
        "kiln-key(1)",
        "kiln-run(1)",
        "kiln-cache-inspect(1)",
        "kiln-import(1)",
        "kiln-reduce(1)",
        "llc(1)",
        "docs/tools/kiln-compile.md",
        "docs/cache.md",
        "docs/remote.md",
    ],
};

const SPEC: tool::ToolSpec = tool::ToolSpec {
    name: "kiln-compile",
    version: || kiln::version::text("kiln-compile", Some(kiln_llvm::target::host_facts())),
    manual: &MANUAL,
};

fn main() -> ExitCode {
    tool::run_tool(&SPEC, |cli: Cli| {
        tool::with_time_trace("kiln-compile", cli.tool.trace.path(&cli.input), || run(&cli))
    })
}

fn run(cli: &Cli) -> Result<(), ToolError> {
    check_build(cli.build_id.as_deref())?;
    let setup = trace::span("phase", "setup", trace::WHOLE_INPUT);
    let cpu_from = cli.target_cpu_from.as_deref().unwrap_or("--target-cpu");
    let features_from = cli.target_features_from.as_deref().unwrap_or("--target-features");
    let cpu = Override { value: cli.target_cpu.as_deref(), source: cpu_from };
    let features = Override { value: cli.target_features.as_deref(), source: features_from };
    let target = match kiln_llvm::target::resolve(cpu, features) {
        Ok(t) => t,
        Err(e) => return kiln_llvm::target::tool_error(e),
    };
    if cli.print_target {
        let text = kiln::compile_protocol::print_target(&target.triple, &target.cpu, &target.features);
        return tool::write_output(None, text.as_bytes());
    }
    let config = match &cli.compile_config {
        Some(wire) => CompileConfig::from_wire(wire).map_err(ToolError::msg)?,
        None => cli.config.config(),
    };
    let compiler = Compiler::new(config, target).map_err(ToolError::msg)?;
    drop(setup);

    let src = tool::read_source(&cli.input)?;
    let parsed = trace::span("phase", "parse", trace::WHOLE_INPUT);
    let stream = kiln::parser::parse(src.text()).map_err(|ds| ToolError::diags(&src, &ds))?;
    drop(parsed);
    let verified = trace::span("phase", "verify", trace::WHOLE_INPUT);
    kiln::verifier::verify(&stream).map_err(|ds| ToolError::diags(&src, &ds))?;
    drop(verified);
    let stream = kiln::passes::to_task_stream(stream).map_err(|ds| ToolError::diags(&src, &ds))?;

    let tasks: Vec<(&Module, String)> =
        kiln::plan::task_modules(&stream).map(|(m, t)| (m, t.name.to_string())).collect();
    let emit = match cli.emit {
        EmitArg::Obj => Emit::Object,
        EmitArg::Llvm => Emit::LlvmIr,
        EmitArg::Asm => Emit::Assembly,
    };
    // An object is not for a terminal (llc refuses too).
    if emit == Emit::Object && cli.output.as_deref() == Some("-") && !cli.force && std::io::stdout().is_terminal() {
        return Err(ToolError::Usage(
            "refusing to write an object to a terminal: redirect standard output, write it with -o FILE, or pass --force".into(),
        ));
    }
    if let Some(kernel) = &cli.kernel {
        let kernels = || stream.modules.iter().flat_map(|m| m.kernels()).map(|k| k.name.as_str());
        if !kernels().any(|k| k == kernel) {
            return Err(ToolError::msg(kiln::cli::no_such_kernel(kernel, src.name(), kernels())));
        }
        let (bytes, _) = compiler
            .emit_kernel(&stream, kernel, emit)
            .map_err(|e| ToolError::Input(tool::error_line(src.name(), &e.to_string())))?;
        let dest = destination(cli.output.as_deref(), 1, emit)?;
        return write_all(&dest, emit, &[(protocol::file_stem(kernel), bytes)]);
    }
    if tasks.is_empty() {
        // As llc compiles an empty module: nothing is written, and it is said.
        tool::warn(src.name(), "no task to compile: the input has no kernel");
        return Ok(());
    }
    if let Some(dir) = &cli.cache_dir {
        if emit != Emit::Object {
            return Err(ToolError::Usage(
                "--cache-dir stores objects; it cannot be combined with --emit llvm or asm".into(),
            ));
        }
        let filling = trace::span("phase", "fill cache", trace::WHOLE_INPUT);
        fill_cache(cli, dir, &compiler, &tasks, src.name())?;
        drop(filling);
        if cli.output.is_none() {
            return Ok(());
        }
    }
    let compiling = trace::span("phase", "compile tasks", trace::WHOLE_INPUT);
    let wanted = Wanted::from_flag(cli.function_records.as_deref());
    let units = protocol::outputs(&tasks, &compiler.config, &wanted).map_err(ToolError::msg)?;
    let dest = match wanted {
        Wanted::Records(_) => {
            let dest = destination(cli.output.as_deref(), units.len(), emit)?;
            if !matches!(dest, Dest::Dir(_)) {
                return Err(ToolError::Usage("--function-records writes to a directory: use -o DIR/".into()));
            }
            dest
        }
        _ => destination(cli.output.as_deref(), tasks.len(), emit)?,
    };
    // With one file to write, only the task goes there.
    let units = if matches!(dest, Dest::Dir(_)) { units } else { units.into_iter().filter(|u| u.is_task()).collect() };
    let pool = thread_pool(cli)?;
    let progress = task_progress(cli, tasks.len());
    let results: Vec<Result<Vec<u8>, String>> = pool.install(|| {
        units
            .par_iter()
            .map(|u| {
                let _span = trace::span("compile", "compile", &u.traced);
                let r = emit_output(u, &compiler, emit).map_err(|e| format!("{}: {e}", u.what));
                if u.is_task() {
                    task_done(cli, &progress);
                }
                r
            })
            .collect()
    });
    progress.finish();
    drop(compiling);
    let _write = trace::span("phase", "write", trace::WHOLE_INPUT);
    let mut outputs = Vec::with_capacity(units.len());
    let mut errors = String::new();
    for (u, r) in units.iter().zip(results) {
        match r {
            Ok(bytes) => outputs.push((u.stem.clone(), bytes)),
            Err(e) => errors.push_str(&tool::error_line(src.name(), &e)),
        }
    }
    if !errors.is_empty() {
        return Err(ToolError::Input(errors));
    }
    write_all(&dest, emit, &outputs)
}

/// Compiles one output of the request: a task's object, or a function
/// record's.
fn emit_output(u: &Requested, compiler: &Compiler, emit: Emit) -> Result<Vec<u8>, kiln_llvm::CodegenError> {
    match &u.record {
        Some(key) => compiler.emit_function(u.module, key, emit).map(|(b, _)| b),
        None => compiler.emit_task(u.module, emit).map(|(b, _)| b),
    }
}

/// Fills the cache under `dir` with every task's object (in parallel):
/// a good record is kept, a missing or damaged one is compiled and stored.
/// Prints one summary line (and `--stats`) on standard error.
fn fill_cache(
    cli: &Cli,
    dir: &Path,
    compiler: &Compiler,
    tasks: &[(&Module, String)],
    file: &str,
) -> Result<(), ToolError> {
    // The other settings (shared_group, read_only, ...) come from the
    // config files and the environment, as for kiln-run.
    let mut flags = settings::cache_flags(Some(dir), cli.allow_insecure_cache);
    flags.extend(
        kiln::remote::RemoteFlags { url: cli.remote.clone(), read_only: cli.remote_read_only }.settings_flags(),
    );
    let settings = Settings::load(&flags)?;
    tool::warn_ignored_config(&settings);
    let remote = kiln::remote::RemoteSettings::from_settings(&settings).map_err(|e| ToolError::Usage(e.to_string()))?;
    let session = session::Session::open(dir, &compiler.target, &settings, remote).map_err(ToolError::msg)?;
    let (store, remote, flight) = (&session.store, session.remote.as_ref(), session.flight);
    let pool = thread_pool(cli)?;
    let progress = task_progress(cli, tasks.len());
    let modules: Vec<&Module> = tasks.iter().map(|(m, _)| *m).collect();
    let done = || task_done(cli, &progress);
    let filled = pool.install(|| fill::fill(store, remote, compiler, &modules, flight, &done));
    let records = kiln::key::functions::needed_records(modules.iter().copied(), &compiler.config);
    let filled_records = pool.install(|| fill::fill_records(store, remote, compiler, &records, flight, &|| {}));
    progress.finish();
    let mut counters = RunReport {
        cache: Some((store.root().display().to_string(), store.scope_name().to_string())),
        ..RunReport::default()
    };
    counters.run.waited = filled.waited + filled_records.waited;
    counters.run.wait_time = filled.wait_time + filled_records.wait_time;
    let mut errors = String::new();
    for ((_, name), r) in tasks.iter().zip(filled.tasks) {
        match r {
            Ok((filled, times)) => filled.count(times, &mut counters),
            Err(e) => errors.push_str(&tool::error_line(file, &format!("task @{name}: {e}"))),
        }
    }
    for (r, outcome) in records.iter().zip(filled_records.tasks) {
        match outcome {
            Ok((filled, times)) => filled.count_record(times, &mut counters),
            Err(e) => errors.push_str(&tool::error_line(file, &format!("function @{}: {e}", r.name))),
        }
    }
    let s = store.stats();
    (counters.run.bytes_read, counters.run.bytes_written) = (s.bytes_read, s.bytes_written);
    for w in [&filled.warning, &filled_records.warning].into_iter().flatten() {
        tool::warn_process("kiln-compile", w);
    }
    let mut err = std::io::stderr().lock();
    if let Some(r) = remote {
        if let Some(w) = r.take_warning() {
            tool::warn_process("kiln-compile", &w);
        }
        counters.remote = Some((r.settings().display.clone(), r.stats()));
    }
    // Statistics inform: one that cannot be added up is skipped quietly.
    let _ = store.flush_stats();
    let _ = writeln!(
        err,
        "kiln-compile: {} tasks: {} hits, {} misses, {} corrupt replaced ({} in {})",
        counters.tasks,
        counters.run.hits,
        counters.run.misses,
        counters.run.corrupt_replaced,
        store.scope_name(),
        store.root().display()
    );
    match cli.stats {
        Some(StatsFormat::Text) => {
            let _ = write!(err, "{}", counters.to_text("kiln-compile"));
        }
        Some(StatsFormat::Json) => {
            let _ = writeln!(err, "{}", counters.to_json());
        }
        None => {}
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ToolError::Input(errors))
    }
}

/// `--build-id`: this must be the build asked for.
fn check_build(wanted: Option<&str>) -> Result<(), ToolError> {
    match wanted {
        Some(id) if id != kiln::config::BUILD_ID => Err(ToolError::msg(format!(
            "this is build {}, but build {id} was asked for (--build-id): an object must be made by the build that keys it; \
             install kiln-run and kiln-compile together",
            kiln::config::BUILD_ID
        ))),
        _ => Ok(()),
    }
}

fn thread_pool(cli: &Cli) -> Result<rayon::ThreadPool, ToolError> {
    let threads = kiln::cli::thread_count(cli.threads);
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| ToolError::msg(format!("cannot start {threads} threads: {e}")))
}

/// Where the outputs go.
enum Dest {
    Stdout,
    File(String),
    Dir(PathBuf),
}

fn destination(output: Option<&str>, ntasks: usize, emit: Emit) -> Result<Dest, ToolError> {
    Ok(match output {
        Some("-") => {
            if emit == Emit::Object && ntasks != 1 {
                return Err(ToolError::Usage(format!(
                    "-o - writes one object, but the input has {ntasks} tasks; use -o DIR/"
                )));
            }
            Dest::Stdout
        }
        Some(p) if p.ends_with('/') || Path::new(p).is_dir() => Dest::Dir(PathBuf::from(p)),
        Some(p) => {
            if ntasks != 1 {
                return Err(ToolError::Usage(format!(
                    "-o {p} names one file, but the input has {ntasks} tasks; use -o DIR/ for one file per task"
                )));
            }
            Dest::File(p.to_string())
        }
        None => Dest::Dir(PathBuf::from(".")),
    })
}

fn write_all(dest: &Dest, emit: Emit, outputs: &[(String, Vec<u8>)]) -> Result<(), ToolError> {
    match dest {
        Dest::Stdout => {
            // Text outputs one after another: each starts with a comment
            // naming its task, so they can be told apart.
            let mut all = Vec::new();
            for (stem, bytes) in outputs {
                if let Some(c) = emit.comment() {
                    all.extend_from_slice(format!("{c} kiln-compile: @{stem}\n").as_bytes());
                }
                all.extend_from_slice(bytes);
            }
            tool::write_output(None, &all)
        }
        Dest::File(p) => tool::write_output(Some(p), &outputs[0].1),
        Dest::Dir(d) => {
            std::fs::create_dir_all(d).map_err(|e| ToolError::output(d.display(), &e))?;
            let paths: Vec<PathBuf> =
                outputs.iter().map(|(stem, _)| d.join(format!("{stem}.{}", emit.extension()))).collect();
            let files: Vec<(&std::path::Path, &[u8])> =
                paths.iter().zip(outputs).map(|(p, (_, b))| (p.as_path(), b.as_slice())).collect();
            tool::write_files_atomic(&files).map_err(|(p, e)| ToolError::output(p.display(), &e))
        }
    }
}

/// The progress display of `tasks` tasks (`tool::TaskProgress`: on a
/// terminal, unless `-q`; never when a kiln-run reads the progress lines).
fn task_progress(cli: &Cli, tasks: usize) -> tool::TaskProgress {
    let p = tool::TaskProgress::new(cli.quiet || cli.report_progress);
    p.add(tasks);
    p
}

/// One task compiled: the bar moves, and with `--report-progress` the
/// process says so on standard output (one line, for the kiln-run that
/// started it).
fn task_done(cli: &Cli, progress: &tool::TaskProgress) {
    progress.done();
    if cli.report_progress {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", protocol::DONE_LINE).and_then(|_| out.flush());
    }
}
