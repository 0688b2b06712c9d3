//! `kiln-opt`: reads KIR, verifies it, runs passes, prints the result in
//! canonical form. A thin `main` over `kiln::{parser, verifier, passes,
//! tool}`; see `docs/tools/kiln-opt.md`.

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::Parser;
use kiln::config::OptLevel;
use kiln::diag::{Diagnostic, Diagnostics};
use kiln::ir::{Span, Stream};
use kiln::passes::{self, OptPreset, Pass, PassTiming, PipelineError, PipelineObserver, PipelineOptions};
use kiln::tool::{self, ToolError};
use kiln::trace;
use std::io::{self, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const ABOUT: &str = "Parse, verify, transform and print KIR";

const LONG_ABOUT: &str = "\
Reads a KIR file (or standard input), checks that it is well formed, runs \
the requested passes over it and prints the result in canonical form. With \
no passes it parses, verifies and prints. The input is always verified \
before any pass runs; errors are printed as FILE:LINE:COL: error: MESSAGE \
with the source line and a caret, and the exit code is 1.";

#[derive(Parser, Debug)]
#[command(name = "kiln-opt", version = kiln::VERSION, about = ABOUT, long_about = LONG_ABOUT)]
struct Cli {
    /// Input KIR file; `-` reads standard input (named `<stdin>` in errors)
    #[arg(value_name = "INPUT", default_value = "-")]
    input: String,

    /// Write the output to FILE (only if everything succeeds) instead of standard output
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<String>,

    /// Run these passes, in order (comma-separated names from --print-passes, or a preset as default<O0> .. default<O3>); -p is opt's spelling
    #[arg(long, short = 'p', value_name = "PASS,...", value_delimiter = ',', value_parser = pipeline_element, conflicts_with = "opt")]
    passes: Vec<String>,

    /// Run a preset pipeline: -O0 (no pass), -O1, -O2 (see --print-passes); -O3 is accepted, as LLVM's opt does, and runs -O2's passes (KIR has no higher preset)
    #[arg(short = 'O', value_name = "LEVEL", value_parser = kiln::cli::parse_opt_level)]
    opt: Option<OptLevel>,

    /// List the registered passes and the presets, then exit
    #[arg(long)]
    print_passes: bool,

    /// Run the verifier after every pass; an invalid result stops with an error
    #[arg(long)]
    verify_each: bool,

    /// Print the IR to standard error after every pass
    #[arg(long)]
    print_after_all: bool,

    /// Print the IR to standard error at the start and after each pass that changed it
    #[arg(long)]
    print_changed: bool,

    /// Print the IR to standard error before each run of PASS (repeatable, or comma-separated)
    #[arg(long, value_name = "PASS", value_delimiter = ',', value_parser = pass_names())]
    print_before: Vec<String>,

    /// Print the IR to standard error after each run of PASS (repeatable, or comma-separated)
    #[arg(long, value_name = "PASS", value_delimiter = ',', value_parser = pass_names())]
    print_after: Vec<String>,

    /// Print the time spent in parsing, verifying, each pass and printing to standard error
    #[arg(long)]
    time_passes: bool,

    #[command(flatten)]
    tool: kiln::cli::TracedToolArgs,
}

/// `--print-before=` and `--print-after=` accept exactly the registered
/// names, so clap's usage error (exit code 2) lists them.
fn pass_names() -> PossibleValuesParser {
    PossibleValuesParser::new(passes::REGISTRY.iter().map(|p| PossibleValue::new(p.name()).help(p.description())))
}

/// One element of `--passes=`: a registered pass, or a preset's pipeline
/// text (`default<O2>`); anything else is a usage error naming them.
fn pipeline_element(s: &str) -> Result<String, String> {
    if passes::lookup(s).is_some() || passes::default_text(s).is_some() {
        return Ok(s.to_string());
    }
    let names: Vec<&str> = passes::REGISTRY.iter().map(|p| p.name()).collect();
    let hint =
        kiln::cli::nearest(s, names.iter().copied()).map(|n| format!("; did you mean '{n}'?")).unwrap_or_default();
    Err(format!(
        "not a pass or a pipeline text{hint} (passes: {}; presets: default<O0> .. default<O3>)",
        names.join(", ")
    ))
}

/// `kiln-opt`'s manual: `--help` after the options, and the man page.
const MANUAL: kiln::manual::Manual = kiln::manual::Manual {
    examples: &[
        ("Parse, verify and print a kernel file's canonical form", "kiln-opt testdata/saxpy.kir"),
        ("Split kernels into offloaded tasks", "kiln-opt --passes=offload testdata/saxpy.kir"),
        (
            "The -O2 pipeline, then one task module per task, in LLVM's spellings",
            "kiln-opt -O2 testdata/ten_tasks.kir | kiln-opt -passes=split-tasks -S -",
        ),
        ("What one pass changed", "kiln-opt -O2 -print-after=offload testdata/saxpy.kir -o /dev/null"),
        ("The passes and the presets", "kiln-opt --print-passes"),
    ],
    exit_status: &[
        (0, "Success (also when standard output is closed early, as by head)."),
        (1, "Bad input: a syntax or verifier error, a failing pass, a file that cannot be read or written."),
        (2, "Bad usage, such as an unknown pass or flag."),
    ],
    settings: kiln::manual::SettingsShown::Only(&["max_input_size"]),
    files: kiln::manual::CONFIG_FILES,
    see_also: &[
        "kiln-key(1)",
        "kiln-compile(1)",
        "kiln-run(1)",
        "kiln-cache-inspect(1)",
        "kiln-import(1)",
        "kiln-reduce(1)",
        "docs/tools/kiln-opt.md",
        "docs/passes.md",
        "docs/language.md",
    ],
};

const SPEC: tool::ToolSpec =
    tool::ToolSpec { name: "kiln-opt", version: || kiln::version::text("kiln-opt", None), manual: &MANUAL };

fn main() -> ExitCode {
    tool::run_tool(&SPEC, |cli: Cli| tool::with_time_trace("kiln-opt", cli.tool.trace.path(&cli.input), || run(&cli)))
}

fn run(cli: &Cli) -> Result<(), ToolError> {
    if cli.print_passes {
        return tool::write_output_with(None, |w| print_passes(w));
    }
    let mut timings: Vec<PassTiming> = Vec::new();
    let phase = |name: &'static str, since: Instant, timings: &mut Vec<PassTiming>| {
        timings.push(PassTiming { name, pass: since.elapsed(), verify: Duration::ZERO })
    };

    let names: Vec<&str> = match cli.opt {
        Some(level) => passes::preset(OptPreset::of(level)),
        None => cli
            .passes
            .iter()
            .flat_map(|n| match passes::default_text(n) {
                Some(level) => passes::preset(level),
                None => vec![n.as_str()],
            })
            .collect(),
    };
    // clap already rejected unknown names; this cannot fail, but a usage
    // error is the honest answer if it ever did.
    let pipeline = passes::resolve(&names).map_err(|n| ToolError::Usage(format!("unknown pass '{n}'")))?;

    let start = Instant::now();
    let src = tool::read_source(&cli.input)?;
    let dumps_asked =
        cli.print_after_all || cli.print_changed || !cli.print_after.is_empty() || !cli.print_before.is_empty();
    if pipeline.is_empty() && !(dumps_asked || cli.time_passes || trace::on()) {
        // Nothing needs the whole IR: the streaming front end holds only
        // the items in flight (same output, same diagnostics).
        let text = kiln::frontend::parse_verify_print(src.text()).map_err(|ds| ToolError::diags(&src, &ds))?;
        return tool::write_output_with(cli.output.as_deref(), |w| text.write_to(w));
    }
    let parsed = trace::span("phase", "parse", trace::WHOLE_INPUT);
    let mut stream = kiln::parser::parse(src.text()).map_err(|ds| ToolError::diags(&src, &ds))?;
    drop(parsed);
    phase("(parse)", start, &mut timings);

    let start = Instant::now();
    let verified = trace::span("phase", "verify", trace::WHOLE_INPUT);
    kiln::verifier::verify(&stream).map_err(|ds| ToolError::diags(&src, &ds))?;
    drop(verified);
    phase("(verify input)", start, &mut timings);

    let set = |names: &[String]| {
        passes::PassSet::of(names.iter().map(String::as_str))
            .map_err(|n| ToolError::Usage(format!("unknown pass '{n}'")))
    };
    let opts = PipelineOptions {
        verify_each: cli.verify_each,
        print_after_all: cli.print_after_all,
        print_changed: cli.print_changed,
        print_before: set(&cli.print_before)?,
        print_after: set(&cli.print_after)?,
    };
    let mut dumps = StderrDumps;
    match passes::run_pipeline(&mut stream, &pipeline, &opts, &mut dumps) {
        Ok(t) => timings.extend(t),
        Err(PipelineError::Pass { pass, diags }) => {
            return Err(ToolError::msg_diags(format!("pass '{pass}' failed"), &src, &diags))
        }
        Err(PipelineError::Invalid { pass, diags }) => {
            let why = format!("the IR is invalid after pass '{pass}' (a bug in that pass)");
            return Err(ToolError::msg_diags(why, &src, &without_dummy_spans(diags)));
        }
        Err(PipelineError::Observer(e)) => return Err(ToolError::stdout(e)),
    }

    let start = Instant::now();
    let printed = trace::span("phase", "print", trace::WHOLE_INPUT);
    tool::write_output_with(cli.output.as_deref(), |w| write!(w, "{stream}"))?;
    drop(printed);
    phase("(print)", start, &mut timings);

    if cli.time_passes {
        let _ = io::stderr().lock().write_all(passes::format_timings(&timings).as_bytes());
    }
    Ok(())
}

fn print_passes(w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "Passes:")?;
    for p in passes::REGISTRY {
        writeln!(w, "  {:<14} {}", p.name(), p.description())?;
    }
    writeln!(w, "Presets:")?;
    for (flag, level) in [("-O0", OptPreset::O0), ("-O1", OptPreset::O1), ("-O2, -O3", OptPreset::O2)] {
        let names = passes::preset(level);
        let list = if names.is_empty() { "(no pass)".to_string() } else { names.join(",") };
        writeln!(w, "  {flag:<14} {list}")?;
    }
    Ok(())
}

/// Nodes a pass made have no source text; their dummy spans would point at
/// the first character of the input, so such errors are shown unlocated.
fn without_dummy_spans(ds: Diagnostics) -> Diagnostics {
    Diagnostics(
        ds.0.into_iter()
            .map(|d| match d.span {
                Some(Span { start: 0, end: 0 }) => Diagnostic { span: None, ..d },
                _ => d,
            })
            .collect(),
    )
}

/// Shows `--print-after-all` / `--print-changed` / `--print-after=` /
/// `--print-before=` dumps on standard error,
/// each headed by a KIR comment so that a dump is itself valid KIR.
struct StderrDumps;

impl PipelineObserver for StderrDumps {
    fn initial(&mut self, stream: &Stream) -> io::Result<()> {
        dump("; *** IR Dump At Start ***", Some(stream))
    }
    fn after_pass(&mut self, pass: &dyn Pass, stream: &Stream, changed: Option<bool>) -> io::Result<()> {
        match changed {
            Some(false) => dump(&format!("; *** IR Dump After {} omitted because no change ***", pass.name()), None),
            _ => dump(&format!("; *** IR Dump After {} ***", pass.name()), Some(stream)),
        }
    }
    fn before_pass(&mut self, pass: &dyn Pass, stream: &Stream) -> io::Result<()> {
        dump(&format!("; *** IR Dump Before {} ***", pass.name()), Some(stream))
    }
}

fn dump(header: &str, stream: Option<&Stream>) -> io::Result<()> {
    let mut err = io::BufWriter::new(io::stderr().lock());
    writeln!(err, "{header}")?;
    if let Some(s) = stream {
        write!(err, "{s}")?;
    }
    err.flush()
}
