//! `kiln-run`: runs the kernels of a KIR file (or a split stream) over
//! zero-initialised fields and shows or saves the fields. A `main` over
//! `kiln::{parser, verifier, exec, interp, codegen, jit, tool}`, not yet
//! thin: it still sets up its engine and cache, selects kernels, binds
//! arguments and reads and writes fields. See `docs/tools/kiln-run.md`.

use clap::{Parser, ValueEnum};
use kiln::exec::{self, Engine, Fields};
use kiln::ir::{Const, Kernel, Stream};
use kiln::settings::{self, Settings};
use kiln::stats::{RunReport, RunStats};
use kiln::tool::{self, ToolError};
use kiln::trace;
use kiln_llvm::target::Override;
use kiln_llvm::HostTarget;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const ABOUT: &str = "Run KIR kernels and show or save their fields";

const LONG_ABOUT: &str = "\
Reads a KIR file (or standard input), verifies it, and runs its kernels in \
order, or the ones named with --kernel, over fields that start zeroed \
(unless loaded with --input). Kernel parameters take their default values \
unless set with --arg. A split stream (the output of split-tasks) runs the \
kernels of its launch module. What the kernels' `print` statements write \
goes to standard output, in order (a parallel task's lines in iteration \
order), even when a kernel then fails. Afterwards it prints the fields asked for \
with --print/--print-all and their digests with --digest, and writes the \
--output files. The jit engine compiles tasks the cache lacks in the \
kiln-compile installed beside kiln-run, one process per kernel.";

/// How `--stats` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum StatsFormat {
    /// Aligned text
    Text,
    /// One JSON object on one line
    Json,
}

/// The engine that runs kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum EngineKind {
    /// LLVM-compiled code in an ORC JIT, one dylib per task
    Jit,
    /// The reference interpreter (the semantics oracle)
    Interp,
}

#[derive(Parser, Debug)]
#[command(name = "kiln-run", version = kiln::VERSION, about = ABOUT, long_about = LONG_ABOUT)]
struct Cli {
    /// Input KIR file; `-` reads standard input (named `<stdin>` in errors)
    #[arg(value_name = "INPUT", default_value = "-")]
    input: String,

    /// Run this kernel (repeatable, run in the order given); default: every kernel in file order
    #[arg(long = "kernel", value_name = "@KERNEL", value_parser = kiln::cli::parse_kernel_name)]
    kernels: Vec<String>,

    /// Set kernel parameter NAME (with or without `%`) to VALUE, parsed as the parameter's type
    #[arg(long = "arg", value_name = "NAME=VALUE", value_parser = parse_pair)]
    args: Vec<(String, String)>,

    /// The engine that runs the kernels
    #[arg(long, value_enum, default_value = "jit")]
    engine: EngineKind,

    /// Run the iterations of parallel tasks in this order: ascending, descending, shuffle or shuffle:SEED (interp engine; default: ascending)
    #[arg(long, value_name = "ORDER", value_parser = parse_order)]
    iteration_order: Option<kiln::races::IterationOrder>,

    /// Report data races between the iterations of parallel tasks as run-time errors (interp engine)
    #[arg(long)]
    check_races: bool,

    /// Run parallel tasks on N threads, 1 to 256 (jit engine; default: all cores, for the launches worth them)
    #[arg(long, value_name = "N", value_parser = kiln::cli::threads_parser())]
    threads: Option<u32>,

    /// The seed of the `random` statements' numbers, 0 to 2^64-1 (default 0)
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = kiln::cli::parse_seed)]
    seed: u64,

    /// Compile each kernel whole (in a kiln-compile process) into one object and one JIT dylib; read and write no cache
    #[arg(long, conflicts_with = "cache_dir")]
    no_cache: bool,

    /// The per-task cache root [default: $KILN_CACHE_DIR, else cache_dir in the user's kiln.toml, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln]
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,

    /// Accept a cache directory that another user owns or that is group- or world-writable (env KILN_ALLOW_INSECURE_CACHE=1, or allow_insecure in kiln.toml)
    #[arg(long)]
    allow_insecure_cache: bool,

    /// Share tasks through a remote cache behind the local one: redis://HOST:PORT or redis+cluster://HOST:PORT,... [env: KILN_REMOTE]
    #[arg(long, value_name = "URL", conflicts_with = "no_cache")]
    remote: Option<String>,

    /// Read the remote cache, never write it [env: KILN_REMOTE_READ_ONLY]
    #[arg(long)]
    remote_read_only: bool,

    /// Print where the tasks came from and where the time went, on standard error (`--stats=json`: one JSON object)
    #[arg(long, value_enum, value_name = "FORMAT", num_args = 0..=1, require_equals = true, default_missing_value = "text")]
    stats: Option<StatsFormat>,

    #[command(flatten)]
    config: kiln::cli::ConfigArgs,

    /// Show no progress bar (one is shown on a terminal while 16 or more tasks are compiled)
    #[arg(short = 'q', long)]
    quiet: bool,

    /// Compile for this CPU instead of the detected one (a simulated host; env KILN_TARGET_CPU); checked against LLVM's list, `help` lists CPUs and features
    #[arg(long, value_name = "NAME")]
    target_cpu: Option<String>,

    /// Compile for these CPU features (`+sse2,-avx,...`) instead of the detected ones (env KILN_TARGET_FEATURES); checked against LLVM's list
    #[arg(long, value_name = "FEATURES", allow_hyphen_values = true)]
    target_features: Option<String>,

    /// Which tiers to compile: auto (start on a quickly compiled tier, or a small kernel in the interpreter, replaced by the optimised one when its background compile is done), quick, or opt (env KILN_TIER, or tier in kiln.toml; default auto)
    #[arg(long, value_name = "TIER", value_parser = parse_tier)]
    tier: Option<String>,

    /// Load field @X from a numpy .npy file before running (dtype and shape must match)
    #[arg(long = "input", value_name = "@X=FILE", value_parser = parse_pair)]
    inputs: Vec<(String, String)>,

    /// Write field @Y to a numpy .npy file after a successful run
    #[arg(long = "output", value_name = "@Y=FILE", value_parser = parse_pair)]
    outputs: Vec<(String, String)>,

    /// Print the values of field @Y after the run (repeatable); one of more than 1000 elements is summarised as numpy does (three values at each end of every dimension)
    #[arg(long = "print", value_name = "@Y")]
    prints: Vec<String>,

    /// Print the values of every field after the run, sorted by name (summarised as --print does)
    #[arg(long)]
    print_all: bool,

    /// With --print or --print-all: print every value, however large the field
    #[arg(long)]
    print_full: bool,

    /// Print one line per field after the run, sorted by name: `@y f32[1024] blake3:HEX`
    #[arg(long)]
    digest: bool,

    #[command(flatten)]
    tool: kiln::cli::TracedToolArgs,
}

/// `--tier`'s value, checked here so that a bad one is a usage error
/// with clap's message (the settings table then reads it).
fn parse_tier(s: &str) -> Result<String, String> {
    kiln::config::TierPolicy::from_keyword(s)
        .map(|_| s.to_string())
        .ok_or_else(|| "expected auto, quick or opt".to_string())
}

/// `--iteration-order`'s value.
fn parse_order(s: &str) -> Result<kiln::races::IterationOrder, String> {
    s.parse()
}

/// `A=B` with a non-empty `A`.
fn parse_pair(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((a, b)) if !a.is_empty() => Ok((a.to_string(), b.to_string())),
        _ => Err(format!("expected NAME=VALUE, got '{s}'")),
    }
}

/// `kiln-run`'s manual: `--help` after the options, and the man page.
const MANUAL: kiln::manual::Manual = kiln::manual::Manual {
    examples: &[
        ("Run every kernel through the cache, and say where the tasks came from", "kiln-run --stats testdata/ten_tasks.kir"),
        ("The reference interpreter's field digests (the JIT's are the same)", "kiln-run --engine interp --digest testdata/ten_tasks.kir"),
        ("Set an argument, print a field and save it as .npy", "kiln-run --arg n=1024 --print @y --output @y=y.npy testdata/saxpy.kir"),
        ("Without the cache: the whole kernel compiled for this run", "kiln-run --no-cache --digest testdata/saxpy.kir"),
        ("Look for data races between parallel iterations", "kiln-run --engine interp --check-races testdata/histogram.kir"),
    ],
    exit_status: &[
        (0, "Success."),
        (1, "The input is invalid, an argument or input file does not fit the kernel, or a kernel fails at run time (an out-of-bounds index, a data race found by --check-races)."),
        (2, "Bad usage."),
        (130, "Interrupted by SIGINT (143: SIGTERM); tasks compiled before it are kept in the cache."),
    ],
    settings: kiln::manual::SettingsShown::All,
    files: &[kiln::manual::CONFIG_FILES[0], kiln::manual::CACHE_FILES[0], kiln::manual::CACHE_FILES[1]],
    see_also: &["kiln-opt(1)", "kiln-key(1)", "kiln-compile(1)", "kiln-cache-inspect(1)", "kiln-import(1)", "kiln-reduce(1)", "docs/tools/kiln-run.md", "docs/cache.md", "docs/runtime.md"],
};

const SPEC: tool::ToolSpec = tool::ToolSpec {
    name: "kiln-run",
    version: || kiln::version::text("kiln-run", Some(kiln_llvm::target::host_facts())),
    manual: &MANUAL,
};

fn main() -> ExitCode {
    tool::run_tool(&SPEC, |cli: Cli| tool::with_time_trace("kiln-run", cli.tool.trace.path(&cli.input), || run(&cli)))
}

/// The engine of a run: the JIT keeps its store for the counters.
enum Runner {
    Interp(kiln::interp::Interpreter),
    /// The engine, and the cache root and scope it uses (if any).
    Jit(Box<kiln_jit::engine::JitEngine>, Option<(String, String)>),
}

/// Whether the settings simulate another host (`target_cpu` /
/// `target_features`: `--target-cpu`, `KILN_TARGET_CPU`, ...).
fn simulates_target(settings: &Settings) -> bool {
    settings.target_cpu.value.is_some() || settings.target_features.value.is_some()
}

/// The target of the jit engine when the settings simulate another host:
/// the CPU and features of the `target_cpu` / `target_features` settings,
/// checked against LLVM's lists by the `kiln-compile` beside this program
/// (this one does not link them).
fn simulated_target(settings: &Settings) -> Result<HostTarget, ToolError> {
    let (cpu, features) = (&settings.target_cpu, &settings.target_features);
    let (cpu_at, features_at) = (cpu.source.location("target_cpu"), features.source.location("target_features"));
    let cpu = Override { value: cpu.value.as_deref(), source: &cpu_at };
    let features = Override { value: features.value.as_deref(), source: &features_at };
    kiln_llvm::CompileProcess::resolve_target(cpu, features).or_else(kiln_llvm::target::tool_error)
}

/// The engine for `cli` (the jit's for the `simulated` target, else for
/// this host), and a warning to show (no cache directory could be
/// derived).
fn make_engine(
    cli: &Cli,
    settings: &Settings,
    simulated: Option<HostTarget>,
    progress: &std::sync::Arc<tool::TaskProgress>,
) -> Result<(Runner, Option<String>), ToolError> {
    use kiln_jit::engine::{JitEngine, JitPath};
    use kiln_llvm::CompileProcess;
    if cli.engine == EngineKind::Interp {
        let interp = kiln::interp::Interpreter {
            order: cli.iteration_order.unwrap_or_default(),
            check_races: cli.check_races,
            denormals: cli.config.denormals,
            seed: cli.seed,
            printed: Vec::new(),
        };
        return Ok((Runner::Interp(interp), None));
    }
    // The remote tier's settings are checked before anything is made (a
    // bad one is a usage error); then the cache's root is opened: this
    // host is recalled from it when a process of this build detected it
    // in this boot.
    let remote = if cli.no_cache { None } else { remote_settings(settings)? };
    let mut cache_root = (!cli.no_cache)
        .then(|| settings.cache_root().and_then(|dir| kiln_llvm::session::open_root(&dir, settings.store_options())));
    let target = match simulated {
        Some(target) => target,
        None => {
            if let Some(Ok(root)) = &mut cache_root {
                HostTarget::recall(root);
            }
            HostTarget::detect().map_err(ToolError::msg)?
        }
    };
    let config = match settings.tier.value {
        kiln::config::TierPolicy::Quick => cli.config.config().quick(),
        _ => cli.config.config(),
    };
    // Tasks are compiled by a kiln-compile process, so that this one never
    // links or initialises LLVM's code generator (docs/performance.md,
    // "Warm start").
    let compiler = CompileProcess::beside_this_program(config, target.clone()).map_err(ToolError::msg)?;
    // The compiler process reports each task it compiles: the same
    // progress as kiln-compile's, on a terminal.
    let compiler = compiler.with_progress(progress_hook(progress));
    let path = if cli.no_cache { JitPath::WholeKernel } else { JitPath::PerTask };
    // This process's one engine runs its kernels from this thread, which
    // can then be one of the pool's threads; without --threads the engine
    // chooses them, and spreads only a launch worth it.
    let threads = cli.threads.map(|n| n as usize);
    let mut engine = JitEngine::new(compiler, path, 1)
        .map_err(|e| ToolError::msg(e.message))?
        .with_threads(threads)
        .with_calling_thread();
    engine.set_seed(cli.seed);
    let Some(cache_root) = cache_root else {
        return Ok((Runner::Jit(Box::new(engine), None), None));
    };
    let (store_root, warning) = attach_cache(&mut engine, cache_root, settings, &target, remote, progress);
    Ok((Runner::Jit(Box::new(engine), store_root), warning))
}

/// The compiler process's progress, reported to the tool's bar.
fn progress_hook(progress: &std::sync::Arc<tool::TaskProgress>) -> kiln_llvm::ProgressHook {
    let p = std::sync::Arc::clone(progress);
    kiln_llvm::ProgressHook(std::sync::Arc::new(move |event| match event {
        kiln_llvm::Progress::Started(n) => p.add(n),
        kiln_llvm::Progress::Done => p.done(),
    }))
}

/// The tiers of a run with the `auto` policy (`docs/runtime.md`, "Tiers")
/// over the cache `provider` reads: none when the policy is another, when
/// the configuration has no quick tier (`-O0`), or when the cache is only
/// read (the background compile could not store the optimised tier).
fn tiers_for(
    provider: &kiln_jit::cached::CachedTasks,
    config: &kiln::config::CompileConfig,
    settings: &Settings,
    target: &HostTarget,
    progress: &std::sync::Arc<tool::TaskProgress>,
) -> Option<kiln_jit::tiers::Tiers> {
    use kiln_llvm::CompileProcess;
    let auto = settings.tier.value == kiln::config::TierPolicy::Auto;
    if !auto || !config.has_quick_tier() || provider.read_only() {
        return None;
    }
    let quick = CompileProcess::beside_this_program(config.quick(), target.clone()).ok()?;
    let quick = quick.with_progress(progress_hook(progress));
    let opt = CompileProcess::beside_this_program(config.clone(), target.clone()).ok()?;
    let remote =
        kiln::remote::RemoteFlags { url: settings.remote.value.clone(), read_only: settings.remote_read_only.value };
    let flags = settings::cache_flags(Some(provider.root()), settings.allow_insecure.value);
    let cache_args: Vec<String> = flags.iter().chain(&remote.settings_flags()).map(settings::Flag::to_arg).collect();
    let start_fill: kiln_jit::tiers::StartFill =
        Box::new(move |modules| opt.start_fill(modules, &cache_args).map_err(|e| e.to_string()));
    let tiers = kiln_jit::tiers::Tiers::new(Box::new(quick), Box::new(provider.sibling()), start_fill);
    Some(tiers.interpreting(kiln_jit::tiers::InterpretBudget::default()))
}

/// Gives `engine` the per-task cache (and the remote tier behind it);
/// returns the cache root and scope, or the warning for a cache that cannot
/// be used (nowhere to keep one, permission denied, a full disk, a
/// read-only file system, a directory that is not a cache): such a cache
/// never fails a run, which goes on without it and says so once.
fn attach_cache(
    engine: &mut kiln_jit::engine::JitEngine,
    root: Result<kiln::cache::CacheRoot, kiln::cache::CacheError>,
    settings: &Settings,
    target: &HostTarget,
    remote: Option<kiln::remote::RemoteSettings>,
    progress: &std::sync::Arc<tool::TaskProgress>,
) -> (Option<(String, String)>, Option<String>) {
    use kiln_jit::cached::CachedTasks;
    use kiln_llvm::session::Session;
    let opened = root.and_then(|root| Session::on_root(root, target, settings, remote));
    match opened {
        Ok(session) => {
            let root = (session.store.root().display().to_string(), session.store.scope_name().to_string());
            let provider = CachedTasks::of_session(session);
            if let Some(tiers) = tiers_for(&provider, engine.backend.config(), settings, target, progress) {
                engine.set_tiers(tiers);
            }
            engine.set_provider(Box::new(provider));
            (Some(root), None)
        }
        Err(e) => {
            engine.path = kiln_jit::engine::JitPath::WholeKernel;
            (None, Some(format!("{e}; running without a cache")))
        }
    }
}

/// The remote tier's settings (the `remote*` rows of the settings, which
/// hold `--remote` and `--remote-read-only`); a setting that cannot be
/// used is a usage error.
fn remote_settings(settings: &Settings) -> Result<Option<kiln::remote::RemoteSettings>, ToolError> {
    kiln::remote::RemoteSettings::from_settings(settings).map_err(|e| ToolError::Usage(e.to_string()))
}

fn strip(s: &str, sigil: char) -> &str {
    s.strip_prefix(sigil).unwrap_or(s)
}

/// The run's phases: check the flags, read the settings and the target,
/// read and check the input, bind fields and arguments, run, report, and
/// only after a successful run print and write the results.
fn run(cli: &Cli) -> Result<(), ToolError> {
    check_engine_flags(cli)?;
    // The JIT compiles in processes of its own and stores what they make:
    // Ctrl-C (or SIGTERM) stops it at the next compile or kernel, keeps
    // what was compiled and removes its temporary files (a second one
    // ends the process at once). The interpreter has nothing to keep.
    if cli.engine == EngineKind::Jit {
        kiln::interrupt::install().map_err(ToolError::msg)?;
    }
    let span = |name| trace::span("phase", name, trace::WHOLE_INPUT);
    let setup = span("settings");
    // Settings are read first: a bad one is an error even when the run
    // would not use the cache.
    let mut flags = settings::cache_flags(cli.cache_dir.as_deref(), cli.allow_insecure_cache);
    flags.extend(
        kiln::remote::RemoteFlags { url: cli.remote.clone(), read_only: cli.remote_read_only }.settings_flags(),
    );
    let target_flags =
        [("target_cpu", &cli.target_cpu), ("target_features", &cli.target_features), ("tier", &cli.tier)];
    flags.extend(target_flags.into_iter().filter_map(|(name, v)| Some(settings::Flag::new(name, v.clone()?))));
    // The cache's own kiln.toml in error never fails a run: one warning,
    // and the cache is only read.
    let (settings, config_problem) = Settings::load_for_run(&flags)?;
    tool::warn_ignored_config(&settings);
    // A simulated target is checked against LLVM's lists before anything
    // is read, compiled or written; this host is found with the engine.
    let simulated = if cli.engine == EngineKind::Jit && simulates_target(&settings) {
        Some(simulated_target(&settings)?)
    } else {
        None
    };
    drop(setup);
    let src = tool::read_source_capped(&cli.input, settings.max_input_size.value.0)?;
    let parsed = span("parse");
    let stream = kiln::parser::parse(src.text()).map_err(|ds| ToolError::diags(&src, &ds))?;
    drop(parsed);
    let verified = span("verify");
    kiln::verifier::verify(&stream).map_err(|ds| ToolError::diags(&src, &ds))?;
    drop(verified);
    let inputs = span("fields");
    let kernels = select_kernels(&stream, &cli.kernels, src.name())?;
    let args = bind_args(&kernels, &cli.args)?;
    let mut fields = Fields::try_zeroed(&stream).map_err(ToolError::msg)?;
    let io = FieldIo::of(cli, &fields)?;
    io.load_inputs(&mut fields)?;

    drop(inputs);
    let progress = std::sync::Arc::new(tool::TaskProgress::new(cli.quiet));
    let engine = span("engine");
    let (mut runner, warning) = make_engine(cli, &settings, simulated, &progress)?;
    drop(engine);
    // A cache whose own kiln.toml is in error and that then cannot be
    // opened either (a directory that cannot be reached) is one problem:
    // the config's warning says it.
    let config_warning = config_problem.map(|e| format!("{e}; running without writing to the cache"));
    if let Some(w) = config_warning.or(warning) {
        tool::warn_process("kiln-run", &w);
    }
    let running = span("run");
    let result = run_kernels(&mut runner, &stream, &kernels, &args, &mut fields);
    drop(running);
    progress.finish();
    let output = span("output");
    // The kernels' `print` output, before anything else on stdout and
    // whether or not the run failed (what it printed before is true).
    let printed = match &mut runner {
        Runner::Interp(i) => i.take_printed(),
        Runner::Jit(j, _) => j.take_printed(),
    };
    if !printed.is_empty() {
        tool::write_output(None, printed.concat().as_bytes())?;
    }
    report(cli, &runner, result.1);
    if let Some(signal) = kiln::interrupt::requested() {
        let kept = match &runner {
            Runner::Jit(j, Some(_)) => j.stats.run.stored,
            _ => 0,
        };
        let s = if kept == 1 { "" } else { "s" };
        return Err(ToolError::Interrupted {
            signal,
            text: format!("interrupted: {kept} compiled task{s} kept in the cache"),
        });
    }
    // Data races are shown at their accesses, and an error of one
    // statement at it (`FILE:LINE:COL: error: ...`).
    // A statement imported from another program (`loc(...)`) is shown at
    // its place there too.
    let outcome = result
        .0
        .map_err(|e| {
            if e.races.is_none() && e.at.is_none() {
                return ToolError::msg(e.message);
            }
            let locs = stream.locs();
            let origin = |span| locs.get(&span).map(|l| kiln::diag::Elsewhere::read(&l.file, l.line, l.col));
            ToolError::diags(&src, &e.diagnostics(&src, &origin))
        })
        .and_then(|()| io.write_results(cli, &fields));
    drop(output);
    // What the engine holds ends before the tool's span does; the JIT's
    // session is left to the exit.
    let _teardown = span("teardown");
    if let Runner::Jit(engine, _) = runner {
        engine.end_for_exit();
    }
    outcome
}

/// Flags of the jit engine would be silently ignored by the interpreter.
fn check_engine_flags(cli: &Cli) -> Result<(), ToolError> {
    if cli.engine == EngineKind::Interp {
        for (given, flag) in [(cli.threads.is_some(), "--threads"), (cli.no_cache, "--no-cache")] {
            if given {
                return Err(ToolError::Usage(format!("{flag} applies only to --engine jit")));
            }
        }
    } else {
        // And those of the interpreter by the jit engine.
        for (given, flag) in [(cli.iteration_order.is_some(), "--iteration-order"), (cli.check_races, "--check-races")]
        {
            if given {
                return Err(ToolError::Usage(format!("{flag} applies only to --engine interp")));
            }
        }
    }
    Ok(())
}

/// Which fields are loaded, saved and printed, by name checked against
/// the program's fields.
struct FieldIo {
    loads: Vec<(String, String)>,
    saves: Vec<(String, String)>,
    prints: Vec<String>,
}

impl FieldIo {
    fn of(cli: &Cli, fields: &Fields) -> Result<FieldIo, ToolError> {
        let known = |name: &str, what: &str| -> Result<String, ToolError> {
            let n = strip(name, '@');
            match fields.get(n) {
                Some(_) => Ok(n.to_string()),
                None => Err(ToolError::msg(format!(
                    "{what} names unknown field @{n}{}",
                    kiln::cli::suggest(n, &kiln::cli::Names::FIELDS, fields.names())
                ))),
            }
        };
        let pairs = |list: &[(String, String)], what: &str| -> Result<Vec<(String, String)>, ToolError> {
            list.iter().map(|(name, file)| Ok((known(name, what)?, file.clone()))).collect()
        };
        let saves = pairs(&cli.outputs, "--output")?;
        // Two fields into one file: the last would win, silently.
        for (i, (name, file)) in saves.iter().enumerate() {
            if let Some((first, _)) = saves[..i].iter().find(|(_, f)| f == file) {
                return Err(ToolError::msg(format!("--output names {file} twice (@{first} and @{name})")));
            }
        }
        Ok(FieldIo {
            loads: pairs(&cli.inputs, "--input")?,
            saves,
            prints: cli.prints.iter().map(|n| known(n, "--print")).collect::<Result<_, _>>()?,
        })
    }

    /// `--input`: each file into its field (dtype and shape checked).
    fn load_inputs(&self, fields: &mut Fields) -> Result<(), ToolError> {
        for (name, file) in &self.loads {
            let data = fields.get_mut(name).ok_or_else(|| ToolError::msg(format!("unknown field @{name}")))?;
            data.load_npy_file(name, std::path::Path::new(file)).map_err(|e| match e {
                kiln::npy::ReadError::Io(e) => ToolError::at(file, tool::io_reason(&e)),
                kiln::npy::ReadError::Invalid(m) => ToolError::at(file, m),
            })?;
        }
        Ok(())
    }

    /// After a successful run: `--print`/`--print-all`, `--digest` on
    /// standard output, and the `--output` files, all of them or none.
    fn write_results(&self, cli: &Cli, fields: &Fields) -> Result<(), ToolError> {
        let show = |d: &kiln::exec::FieldData| if cli.print_full { d.format_values() } else { d.format_for_print() };
        let mut out = String::new();
        let printed = self.prints.iter().filter_map(|n| Some((n.as_str(), fields.get(n)?)));
        let all = fields.map.iter().filter(|_| cli.print_all).map(|(n, d)| (n.as_str(), d));
        for (name, d) in printed.chain(all) {
            let _ = writeln!(out, "@{name} : {} = {}", d.type_string(), show(d));
        }
        if cli.digest {
            out.push_str(&fields.digest_lines());
        }
        let mut npys = Vec::new();
        for (name, file) in &self.saves {
            let Some(d) = fields.get(name) else { continue };
            npys.push((std::path::Path::new(file.as_str()), d.to_npy().map_err(|m| ToolError::at(file, m))?));
        }
        let files: Vec<(&std::path::Path, &[u8])> = npys.iter().map(|(p, b)| (*p, b.as_slice())).collect();
        tool::write_files_atomic(&files).map_err(|(p, e)| ToolError::output(p.display(), &e))?;
        tool::write_output(None, out.as_bytes())
    }
}

/// Runs the kernels in order, stopping at the first failure; the JIT
/// finishes (and counts) the records still being written. Returns the
/// result and the interpreter's run time.
fn run_kernels(
    runner: &mut Runner,
    stream: &Stream,
    kernels: &[&Kernel],
    args: &[Vec<Const>],
    fields: &mut Fields,
) -> (Result<(), exec::RunError>, Duration) {
    let t0 = std::time::Instant::now();
    let engine: &mut dyn Engine = match runner {
        Runner::Interp(i) => i,
        Runner::Jit(j, _) => &mut **j,
    };
    let runs: Vec<(&str, &[Const])> = kernels.iter().zip(args).map(|(k, a)| (k.name.as_str(), a.as_slice())).collect();
    let result = engine.run_kernels(stream, &runs, fields);
    if let Runner::Jit(j, _) = runner {
        j.finish();
    }
    (result, t0.elapsed())
}

/// The JIT's warnings, and `--stats` (shown whether or not the run
/// succeeded).
fn report(cli: &Cli, runner: &Runner, run_time: Duration) {
    let counters = match runner {
        Runner::Interp(_) => RunReport { run: RunStats { run_time, ..RunStats::default() }, ..RunReport::default() },
        Runner::Jit(j, cache) => {
            for w in &j.stats.warnings {
                tool::warn_process("kiln-run", w);
            }
            j.stats.report(cache.clone())
        }
    };
    let text = match cli.stats {
        Some(StatsFormat::Text) => counters.to_text("kiln-run"),
        Some(StatsFormat::Json) => format!("{}\n", counters.to_json()),
        None => return,
    };
    // A closed standard error is not worth failing for.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// The kernels to run: those named (in the given order), or every kernel
/// of every module in file order.
fn select_kernels<'s>(stream: &'s Stream, names: &[String], file: &str) -> Result<Vec<&'s Kernel>, ToolError> {
    let all: Vec<&Kernel> = stream.modules.iter().flat_map(|m| m.kernels()).collect();
    if all.is_empty() {
        return Err(ToolError::at(file, "no kernel to run: the input has none"));
    }
    if names.is_empty() {
        return Ok(all);
    }
    let by_name: std::collections::HashMap<&str, &Kernel> = all.iter().map(|k| (k.name.as_str(), *k)).collect();
    names
        .iter()
        .map(|n| {
            by_name
                .get(n.as_str())
                .copied()
                .ok_or_else(|| ToolError::msg(kiln::cli::no_such_kernel(n, file, all.iter().map(|k| k.name.as_str()))))
        })
        .collect()
}

/// Each kernel's arguments: `--arg` values where given, else defaults.
/// An `--arg` that no selected kernel takes is an error, as is a parameter
/// with neither.
fn bind_args(kernels: &[&Kernel], given: &[(String, String)]) -> Result<Vec<Vec<Const>>, ToolError> {
    for (name, _) in given {
        let n = strip(name, '%');
        if !kernels.iter().any(|k| k.body.params.iter().any(|v| k.body.name(*v) == n)) {
            let names: Vec<String> = kernels.iter().map(|k| format!("@{}", k.name)).collect();
            return Err(ToolError::msg(format!("--arg {n}: no parameter %{n} in kernel {}", names.join(", "))));
        }
    }
    kernels
        .iter()
        .map(|k| {
            k.params
                .iter()
                .zip(&k.body.params)
                .map(|(p, v)| {
                    let pname = k.body.name(*v);
                    // The last --arg for a name wins, like most tools' flags.
                    match given.iter().rev().find(|(n, _)| strip(n, '%') == pname) {
                        Some((_, text)) => exec::parse_value(text, p.ty).map_err(|m| {
                            ToolError::msg(format!(
                                "--arg {pname}: {m} (parameter %{pname} of @{} is {})",
                                k.name, p.ty
                            ))
                        }),
                        None => p.default.ok_or_else(|| {
                            ToolError::msg(format!(
                                "kernel @{}: parameter %{pname} has no default value; set it with --arg {pname}=VALUE",
                                k.name
                            ))
                        }),
                    }
                })
                .collect()
        })
        .collect()
}
