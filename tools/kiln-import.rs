//! `kiln-import`: reads a captured Quadrants log and its field table and
//! writes verified, task-form KIR. A thin `main` over `kiln::import`; see
//! `docs/tools/kiln-import.md`.

use clap::Parser;
use kiln::diag::{Diagnostics, SourceFile};
use kiln::import::{self, ImportError};
use kiln::tool::{self, ToolError};
use std::process::ExitCode;

const ABOUT: &str = "Import the kernels of a Quadrants log as task-form KIR";

const LONG_ABOUT: &str = "\
Reads a log of a Quadrants 1.3.3 program run with print_ir=True and \
print_ir_dbg_info=True (standard output and standard error in one file) and \
the field table its capture wrote, and prints one KIR kernel per Quadrants \
kernel, one task per offloaded task, in the canonical form, after the \
verifier. Fields come from the table, ndarray arguments become fields of \
the shape they had at the call, global temporaries become 0-D fields and \
scalar arguments kernel parameters. What KIR cannot express (sparse SNodes, \
matrices held as one value, autodiff stacks, meshes, print, assert, ...) is \
refused by name, with its line in the log and its Python location.";

#[derive(Parser, Debug)]
#[command(name = "kiln-import", version = kiln::VERSION, about = ABOUT, long_about = LONG_ABOUT)]
struct Cli {
    /// The captured log; `-` reads standard input (named `<stdin>` in errors)
    #[arg(value_name = "LOG", default_value = "-")]
    input: String,

    /// The field table (JSON) written with the log: fields, their SNode ids, kernel arguments
    #[arg(long, value_name = "FIELDS.json")]
    fields: String,

    /// The printed stage to import: a pass label of the log, with or without its `Start ` prefix
    #[arg(long, value_name = "NAME", default_value = import::DEFAULT_STAGE)]
    stage: String,

    /// Write the output to FILE (only if everything succeeds) instead of standard output
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<String>,

    #[command(flatten)]
    diag: kiln::cli::DiagArgs,

    #[command(flatten)]
    common: kiln::cli::Common,
}

/// `kiln-import`'s manual: `--help` after the options, and the man page.
const MANUAL: kiln::manual::Manual = kiln::manual::Manual {
    examples: &[
        ("A captured Quadrants log and its field table to KIR", "kiln-import testdata/quadrants/captured/saxpy/calls/001-saxpy.offload.log --fields testdata/quadrants/captured/saxpy/fields.json -o saxpy.kir"),
        ("Import, then key the kernels' tasks, as the cache would", "kiln-import testdata/quadrants/captured/saxpy/calls/001-saxpy.offload.log --fields testdata/quadrants/captured/saxpy/fields.json | kiln-key -"),
    ],
    exit_status: &[
        (0, "Success."),
        (1, "The log or the table is bad, or holds something KIR cannot express (named, with its log line and Python location)."),
        (2, "Bad usage."),
    ],
    settings: kiln::manual::SettingsShown::Only(&["max_input_size"]),
    files: kiln::manual::CONFIG_FILES,
    see_also: &["kiln-opt(1)", "kiln-key(1)", "kiln-compile(1)", "kiln-run(1)", "kiln-cache-inspect(1)", "kiln-reduce(1)", "kiln-quadrants (tools/kiln-quadrants)", "docs/tools/kiln-import.md", "docs/quadrants.md", "docs/quadrants-ir.md"],
};

const SPEC: tool::ToolSpec =
    tool::ToolSpec { name: "kiln-import", version: || kiln::version::text("kiln-import", None), manual: &MANUAL };

fn main() -> ExitCode {
    tool::run_tool(&SPEC, |cli: Cli| run(&cli))
}

fn run(cli: &Cli) -> Result<(), ToolError> {
    if cli.input == "-" && cli.fields == "-" {
        return Err(ToolError::Usage("the log and the field table cannot both be standard input".into()));
    }
    let log = tool::read_source(&cli.input)?;
    let table = tool::read_source(&cli.fields)?;
    // An error about a whole file (no span) is located by the file's name.
    let located = |src: &SourceFile, d: kiln::diag::Diagnostic| match d.span {
        None => ToolError::at(src.name(), d.message),
        Some(_) => ToolError::diags(src, &Diagnostics(vec![d])),
    };
    let imported = import::import(log.text(), table.text(), &cli.stage).map_err(|e| match e {
        ImportError::Log(d) => located(&log, d),
        ImportError::Table(d) => located(&table, d),
        ImportError::Invalid { text, diags } => ToolError::msg_diags(
            "the KIR written does not verify (a bug in kiln-import)",
            &SourceFile::new("<kiln-import output>", text),
            &diags,
        ),
    })?;
    if !imported.left_out.is_empty() {
        tool::warn_process(
            "kiln-import",
            &format!("left out the kernels the field table does not name: {}", imported.left_out.join(", ")),
        );
    }
    tool::write_output_with(cli.output.as_deref(), |w| write!(w, "{}", imported.stream))
}
