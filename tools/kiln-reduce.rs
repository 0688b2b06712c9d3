//! `kiln-reduce`: shrinks a KIR file to a smaller one that a test script
//! still finds interesting, as `llvm-reduce` does. A thin `main` over
//! `kiln::reduce`; see `docs/tools/kiln-reduce.md`.

use clap::Parser;
use kiln::reduce::{self, Observer, Progress, ReduceError, Size};
use kiln::tool::{self, ToolError};
use std::io::{self, IsTerminal};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const ABOUT: &str = "Shrink a KIR file to what a test script still finds interesting";

const LONG_ABOUT: &str = "\
Reduces a verified KIR file, as llvm-reduce does: it runs the test script on \
smaller candidates (SCRIPT [--test-arg ARG...] CANDIDATE.kir) and keeps those it \
calls interesting (exit status 0). Only candidates that verify are tried. Passes \
remove items, statements and whole loops, unwrap loops and ifs, shrink loop \
bounds, replace results by constants and operands by earlier values, simplify \
constants, shrink field shapes and make kernel parameters constants, until none \
finds anything more. Candidates are tried in parallel (-j); the result does not \
depend on -j. The best result so far is always in -o, which is written whole \
each time it improves; the input is never overwritten.";

#[derive(Parser, Debug)]
#[command(name = "kiln-reduce", version = kiln::VERSION, about = ABOUT, long_about = LONG_ABOUT)]
struct Cli {
    /// Input KIR file (it must verify); `-` reads standard input
    #[arg(value_name = "INPUT")]
    input: String,

    /// Where the reduced file goes (never the input); it holds the best result so far
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: String,

    /// The interestingness test: run as SCRIPT [ARG...] CANDIDATE.kir; exit status 0 means interesting
    #[arg(long = "test", value_name = "SCRIPT")]
    test: String,

    /// An argument passed to the script before the candidate's path (repeatable)
    #[arg(long = "test-arg", value_name = "ARG", allow_hyphen_values = true)]
    test_args: Vec<String>,

    /// Run up to N tries of the script at once (default: the number of cores)
    #[arg(short = 'j', long = "jobs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    jobs: Option<u32>,

    /// Kill a try after this long (and count it uninteresting): 30s, 500ms, 2m
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout)]
    timeout: Duration,

    /// Show no progress (it is shown only on a terminal)
    #[arg(short = 'q', long)]
    quiet: bool,

    #[command(flatten)]
    diag: kiln::cli::DiagArgs,

    #[command(flatten)]
    common: kiln::cli::Common,
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    match humantime::parse_duration(s) {
        Ok(d) if d.is_zero() => Err("the timeout must be more than zero".into()),
        Ok(d) => Ok(d),
        Err(e) => Err(e.to_string()),
    }
}

/// `kiln-reduce`'s manual: `--help` after the options, and the man page.
const MANUAL: kiln::manual::Manual = kiln::manual::Manual {
    examples: &[
        ("The smallest kernel that still holds an atomic add (the script gets the candidate file as its last argument)", "printf '#!/bin/sh\\ngrep -q \"atomic add\" $1\\n' > t.sh && chmod +x t.sh && kiln-reduce -q --test ./t.sh testdata/histogram.kir -o small.kir"),
    ],
    exit_status: &[
        (0, "Success: -o holds the reduced file."),
        (1, "The input does not parse or verify, or the test script cannot be used (missing, not executable, not interested in the input, or not finishing within --timeout on it)."),
        (2, "Bad usage."),
        (130, "Interrupted (Ctrl-C): -o holds the best result found."),
    ],
    settings: kiln::manual::SettingsShown::Only(&["max_input_size"]),
    files: kiln::manual::CONFIG_FILES,
    see_also: &["kiln-opt(1)", "kiln-key(1)", "kiln-compile(1)", "kiln-run(1)", "kiln-cache-inspect(1)", "kiln-import(1)", "llvm-reduce(1)", "docs/tools/kiln-reduce.md", "docs/testing.md"],
};

const SPEC: tool::ToolSpec =
    tool::ToolSpec { name: "kiln-reduce", version: || kiln::version::text("kiln-reduce", None), manual: &MANUAL };

/// Set by SIGINT: the reduction stops, -o keeps the best result.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

fn main() -> ExitCode {
    let code = tool::run_tool(&SPEC, |cli: Cli| run(&cli));
    if INTERRUPTED.load(Ordering::Relaxed) && code == ExitCode::SUCCESS {
        return ExitCode::from(130);
    }
    code
}

fn run(cli: &Cli) -> Result<(), ToolError> {
    if cli.input != "-" && same_file(Path::new(&cli.input), Path::new(&cli.output)) {
        return Err(ToolError::Usage(format!(
            "-o {} is the input: kiln-reduce never overwrites its input",
            cli.output
        )));
    }
    let script = reduce::find_script(&cli.test).map_err(|e| ToolError::at(&cli.test, e.0))?;
    let src = tool::read_source(&cli.input)?;
    let stream = kiln::parser::parse(src.text()).map_err(|ds| ToolError::diags(&src, &ds))?;
    kiln::verifier::verify(&stream).map_err(|ds| ToolError::diags(&src, &ds))?;

    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
    }
    let oracle = reduce::Oracle::new(script, cli.test_args.clone(), cli.timeout, &INTERRUPTED)
        .map_err(|e| ToolError::msg(format!("cannot make a temporary directory: {}", tool::io_reason(&e))))?;
    let jobs = cli.jobs.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |j| j as usize);
    let mut keeper = Keeper::new(&cli.output, cli.quiet);
    let started = Instant::now();
    let outcome = reduce::reduce(&stream, &oracle, jobs, &mut keeper);
    keeper.finish();
    let outcome = outcome.map_err(|e| reduce_error(cli, &oracle, e))?;
    let summary = summary(&outcome, started.elapsed());
    let _ = io::Write::write_all(&mut io::stderr().lock(), format!("kiln-reduce: {summary}\n").as_bytes());
    Ok(())
}

fn reduce_error(cli: &Cli, oracle: &reduce::Oracle, e: ReduceError) -> ToolError {
    match e {
        ReduceError::NotInteresting(status) => ToolError::at(
            &cli.test,
            format!("the input is not interesting: the test script {status} on it (interesting means exit status 0)"),
        ),
        ReduceError::Hangs => ToolError::at(
            &cli.test,
            format!(
                "the test script did not finish on the input within {} (--timeout)",
                humantime::format_duration(oracle.timeout())
            ),
        ),
        ReduceError::Run(e) => ToolError::at(&cli.test, format!("cannot run the test script: {}", tool::io_reason(&e))),
        ReduceError::Keep(e) => ToolError::output(&cli.output, &e),
    }
}

/// Whether two paths name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// `500 -> 7 statements (1.4%), 15234 -> 312 bytes (2.0%), 341 tries in 42.1s`.
fn summary(o: &reduce::Outcome, elapsed: Duration) -> String {
    let pct = |a: u64, b: u64| if b == 0 { 100.0 } else { 100.0 * a as f64 / b as f64 };
    let (s0, s1) = (o.before.statements, o.after.statements);
    let (b0, b1) = (o.bytes_before as u64, o.text.len() as u64);
    let how = if o.interrupted { "interrupted: " } else { "" };
    format!(
        "{how}{s0} -> {s1} statements ({:.1}%), {b0} -> {b1} bytes ({:.1}%), {} tries in {:.1}s",
        pct(s1, s0),
        pct(b1, b0),
        o.tries,
        elapsed.as_secs_f64()
    )
}

/// Keeps each better result in -o (whole, through a temporary) and shows
/// progress on a terminal.
struct Keeper<'a> {
    output: &'a str,
    bar: Option<indicatif::ProgressBar>,
}

impl<'a> Keeper<'a> {
    fn new(output: &'a str, quiet: bool) -> Self {
        let bar = (!quiet && io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} reducing {elapsed} {msg}") {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Keeper { output, bar }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Observer for Keeper<'_> {
    fn progress(&mut self, p: &Progress) {
        if let Some(bar) = &self.bar {
            let Size { statements, items, .. } = p.size;
            bar.set_message(format!("{statements} statements, {items} items left, {} tries ({})", p.tries, p.pass));
        }
    }
    fn better(&mut self, text: &str) -> io::Result<()> {
        tool::write_file_atomic(Path::new(self.output), text.as_bytes())
    }
}
