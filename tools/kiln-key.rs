//! `kiln-key`: prints the cache key of every task of a KIR file. A thin
//! `main` over `kiln::key`; see `docs/tools/kiln-key.md`.

use clap::Parser;
use kiln::config::CompileConfig;
use kiln::diag::SourceFile;
use kiln::key::{self, Change, KeySet};
use kiln::tool::{self, ToolError};
use kiln::trace;
use std::process::ExitCode;

const ABOUT: &str = "Print the cache key of every task of a KIR file";

const LONG_ABOUT: &str = "\
Reads a KIR file (or standard input). A kernel file is offloaded and split \
into per-task modules with the default pipeline (the -O2 passes, then \
split-tasks), as kiln-run and kiln-compile do; an already split stream is \
keyed as it is. Prints one line per task, `@TASK KEY`, in stream order. A \
key is blake3 over the key format version, the task's canonical text \
(values renumbered, placeholder task and kernel names, only the fields and \
functions it uses) and the compile configuration. --explain shows exactly \
what was hashed.";

#[derive(Parser, Debug)]
#[command(name = "kiln-key", version = kiln::VERSION, about = ABOUT, long_about = LONG_ABOUT)]
struct Cli {
    /// Input KIR file; `-` reads standard input (named `<stdin>` in errors)
    #[arg(value_name = "INPUT", default_value = "-", conflicts_with = "diff")]
    input: String,

    /// Print JSON: the format version, the configuration and each task's key and text digest
    #[arg(long, conflicts_with = "diff")]
    json: bool,

    /// Print what was hashed for TASK (`@name`): the canonical text and each configuration field
    #[arg(long, value_name = "@TASK", conflicts_with_all = ["json", "diff"])]
    explain: Option<String>,

    /// Say which tasks' keys differ between OLD and NEW (KIR files, or `kiln-key --json` outputs) and why
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"])]
    diff: Option<Vec<String>>,

    #[command(flatten)]
    config: kiln::cli::ConfigArgs,

    #[command(flatten)]
    tool: kiln::cli::TracedToolArgs,
}

/// `kiln-key`'s manual: `--help` after the options, and the man page.
const MANUAL: kiln::manual::Manual = kiln::manual::Manual {
    examples: &[
        ("One cache key per task", "kiln-key testdata/ten_tasks.kir"),
        ("What was hashed for one task", "kiln-key --explain @ten_tasks.3 testdata/ten_tasks.kir"),
        ("Keys as JSON, to keep as a golden file", "kiln-key --json testdata/saxpy.kir > keys.json"),
        ("Which tasks an edit recompiles (exit 1 when any key changed, as diff)", "kiln-key --diff testdata/saxpy.kir testdata/edited/saxpy.kir || echo changed"),
    ],
    exit_status: &[
        (0, "Success; with --diff, every key is the same."),
        (1, "With --diff, a task was added, removed or changed. Otherwise an input that cannot be read, parsed or verified, or an --explain that names no task."),
        (2, "Bad usage; with --diff, an input that cannot be used."),
    ],
    settings: kiln::manual::SettingsShown::Only(&["max_input_size"]),
    files: kiln::manual::CONFIG_FILES,
    see_also: &["kiln-opt(1)", "kiln-compile(1)", "kiln-run(1)", "kiln-cache-inspect(1)", "kiln-import(1)", "kiln-reduce(1)", "docs/tools/kiln-key.md", "docs/cache.md"],
};

const SPEC: tool::ToolSpec =
    tool::ToolSpec { name: "kiln-key", version: || kiln::version::text("kiln-key", None), manual: &MANUAL };

fn main() -> ExitCode {
    tool::run_tool(&SPEC, |cli: Cli| tool::with_time_trace("kiln-key", cli.tool.trace.path(&cli.input), || run(&cli)))
}

/// Reads, parses, verifies and splits one KIR input.
fn load(path: &str) -> Result<(SourceFile, kiln::ir::Stream), ToolError> {
    let src = tool::read_source(path)?;
    let stream = split(&src)?;
    Ok((src, stream))
}

/// Parses, verifies and splits KIR text already read.
fn split(src: &SourceFile) -> Result<kiln::ir::Stream, ToolError> {
    let span = |name| trace::span("phase", name, trace::WHOLE_INPUT);
    let parsed = span("parse");
    let stream = kiln::parser::parse(src.text()).map_err(|ds| ToolError::diags(src, &ds))?;
    drop(parsed);
    let verified = span("verify");
    kiln::verifier::verify(&stream).map_err(|ds| ToolError::diags(src, &ds))?;
    drop(verified);
    kiln::passes::to_task_stream(stream).map_err(|ds| ToolError::diags(src, &ds))
}

/// A key set from a KIR file or from a `kiln-key --json` output. The input
/// is read once: `-` (standard input) cannot be read a second time.
fn key_set(path: &str, cfg: &CompileConfig) -> Result<KeySet, ToolError> {
    let src = tool::read_source(path)?;
    if src.text().trim_start().starts_with('{') {
        return serde_json::from_str(src.text())
            .map_err(|e| ToolError::at(src.name(), format!("not a kiln-key --json output: {e}")));
    }
    Ok(KeySet::of_stream(&split(&src)?, cfg))
}

fn run(cli: &Cli) -> Result<(), ToolError> {
    let cfg = cli.config.config();
    if let Some(paths) = &cli.diff {
        if paths[0] == "-" && paths[1] == "-" {
            return Err(ToolError::Usage(
                "--diff can read standard input (`-`) for only one of OLD and NEW".to_string(),
            ));
        }
        // As `diff`: 0 when every key is the same, 1 when one differs, 2
        // on trouble (an input that does not read, parse or verify).
        let trouble = |e: ToolError| match e {
            ToolError::Input(text) => ToolError::InputWith(2, text),
            e => e,
        };
        let (old, new) = (key_set(&paths[0], &cfg).map_err(trouble)?, key_set(&paths[1], &cfg).map_err(trouble)?);
        let changes = key::diff(&old, &new);
        tool::write_output(None, render_diff(&changes).as_bytes()).map_err(trouble)?;
        let differ = changes.iter().any(|(_, c)| !matches!(c, Change::Unchanged));
        return if differ { Err(ToolError::Status(1)) } else { Ok(()) };
    }
    let Some(name) = &cli.explain else {
        let src = tool::read_source(&cli.input)?;
        let set = if trace::on() {
            // Traced: phase by phase (the same keys as the streaming path).
            let stream = split(&src)?;
            let _keys = trace::span("phase", "keys", trace::WHOLE_INPUT);
            KeySet::of_stream(&stream, &cfg)
        } else {
            KeySet::of_text(src.text(), &cfg).map_err(|ds| ToolError::diags(&src, &ds))?
        };
        if set.tasks.is_empty() {
            tool::warn(src.name(), "no task to key: the input has no kernel");
        }
        drop(src);
        let _print = trace::span("phase", "print", trace::WHOLE_INPUT);
        return print_keys(cli, &set);
    };
    let (src, stream) = load(&cli.input)?;
    let name = name.strip_prefix('@').unwrap_or(name);
    let Some((m, t)) = stream.find_task(name) else {
        let tasks = stream.modules.iter().flat_map(|m| m.tasks()).map(|t| t.name.as_str());
        let hint = kiln::cli::suggest(name, &kiln::cli::Names::TASKS, tasks);
        return Err(ToolError::at(src.name(), format!("no task @{name} in the input{hint}")));
    };
    let e = key::explain(m, t, &cfg);
    let mut out = String::new();
    out.push_str(&format!("task @{name}\nkey {}\n", e.key));
    out.push_str(&format!("hashed: blake3(\"kiln task key\\0\", format version {} as u32 LE, ", e.format_version));
    out.push_str("config length as u64 LE, config JSON, text length as u64 LE, text)\n");
    out.push_str(&format!("config JSON ({} bytes): {}\n", e.config_json.len(), e.config_json));
    for (k, v) in &e.config_fields {
        out.push_str(&format!("  {k} = {v}\n"));
    }
    out.push_str(&format!("canonical text ({} bytes):\n{}", e.text.len(), e.text));
    tool::write_output(None, out.as_bytes())
}

/// Prints a key set: JSON with --json, else one `@TASK KEY` line per task.
fn print_keys(cli: &Cli, set: &KeySet) -> Result<(), ToolError> {
    if cli.json {
        let mut text = serde_json::to_string_pretty(set).map_err(ToolError::msg)?;
        text.push('\n');
        return tool::write_output(None, text.as_bytes());
    }
    tool::write_output_with(None, |w| {
        for t in &set.tasks {
            writeln!(w, "@{} {}", t.task, t.key)?;
        }
        Ok(())
    })
}

fn render_diff(changes: &[(String, Change)]) -> String {
    let mut out = String::new();
    let mut unchanged = 0;
    for (task, c) in changes {
        match c {
            Change::Unchanged => unchanged += 1,
            Change::Added => out.push_str(&format!("@{task}: added\n")),
            Change::Removed => out.push_str(&format!("@{task}: removed\n")),
            Change::Changed { text, config, format } => {
                let mut why = Vec::new();
                match text {
                    Some(Some((line, a, b))) => {
                        why.push(format!("task text (line {line}: `{}` -> `{}`)", a.trim(), b.trim()))
                    }
                    Some(None) => why.push("task text".to_string()),
                    None => {}
                }
                for (k, a, b) in config {
                    why.push(format!("configuration {k}: {a} -> {b}"));
                }
                if *format {
                    why.push("key format version".to_string());
                }
                out.push_str(&format!("@{task}: changed: {}\n", why.join("; ")));
            }
        }
    }
    out.push_str(&format!("{unchanged} unchanged\n"));
    out
}
