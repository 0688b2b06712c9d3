//! `kiln-run`: runs the kernels of a KIR file (or a split stream) over
//! zero-initialised fields and shows or saves the fields. A thin `main` over
//! `kiln::{parser, verifier, exec, interp, codegen, jit, tool}`; see
//! `docs/tools/kiln-run.md`.

use clap::{Parser, ValueEnum};
use kiln::exec::{self, Engine, Fields};
use kiln::ir::{Const, Kernel, Stream};
use kiln::tool::{self, ToolError};
use std::fmt::Write as _;
use std::process::ExitCode;

const ABOUT: &str = "Run KIR kernels and show or save their fields";

const LONG_ABOUT: &str = "\
Reads a KIR file (or standard input), verifies it, and runs its kernels in \
order, or the ones named with --kernel, over fields that start zeroed \
(unless loaded with --input). Kernel parameters take their default values \
unless set with --arg. A split stream (the output of split-tasks) runs the \
kernels of its launch module. Afterwards it prints the fields asked for \
with --print/--print-all and their digests with --digest, and writes the \
--output files.";

const AFTER_HELP: &str = "\
Exit status: 0 on success; 1 when the input is invalid, an argument or \
input file does not fit the kernel, or a kernel fails at run time (such as \
an out-of-bounds index); 2 on bad usage.";

/// The engine that runs kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum EngineKind {
    /// LLVM-compiled code in an ORC JIT, one dylib per task
    Jit,
    /// The reference interpreter (the semantics oracle)
    Interp,
}

#[derive(Parser, Debug)]
#[command(name = "kiln-run", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
struct Cli {
    /// Input KIR file; `-` reads standard input (named `<stdin>` in errors)
    #[arg(value_name = "INPUT", default_value = "-")]
    input: String,

    /// Run this kernel (repeatable, run in the order given); default: every kernel in file order
    #[arg(long = "kernel", value_name = "@KERNEL")]
    kernels: Vec<String>,

    /// Set kernel parameter NAME (with or without `%`) to VALUE, parsed as the parameter's type
    #[arg(long = "arg", value_name = "NAME=VALUE", value_parser = parse_pair)]
    args: Vec<(String, String)>,

    /// The engine that runs the kernels
    #[arg(long, value_enum, default_value = "jit")]
    engine: EngineKind,

    /// Run parallel tasks on N threads (jit engine; default: all cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    threads: Option<u32>,

    /// Compile each kernel whole, in-process, into one module and one JIT dylib; read and write no cache
    #[arg(long)]
    no_cache: bool,

    /// Load field @X from a numpy .npy file before running (dtype and shape must match)
    #[arg(long = "input", value_name = "@X=FILE", value_parser = parse_pair)]
    inputs: Vec<(String, String)>,

    /// Write field @Y to a numpy .npy file after a successful run
    #[arg(long = "output", value_name = "@Y=FILE", value_parser = parse_pair)]
    outputs: Vec<(String, String)>,

    /// Print the values of field @Y after the run (repeatable)
    #[arg(long = "print", value_name = "@Y")]
    prints: Vec<String>,

    /// Print the values of every field after the run, sorted by name
    #[arg(long)]
    print_all: bool,

    /// Print one line per field after the run, sorted by name: `@y f32[1024] blake3:HEX`
    #[arg(long)]
    digest: bool,
}

/// `A=B` with a non-empty `A`.
fn parse_pair(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((a, b)) if !a.is_empty() => Ok((a.to_string(), b.to_string())),
        _ => Err(format!("expected NAME=VALUE, got '{s}'")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tool::main_with("kiln-run", || run(&cli))
}

fn make_engine(cli: &Cli) -> Result<Box<dyn Engine>, ToolError> {
    Ok(match cli.engine {
        EngineKind::Interp => Box::new(kiln::interp::Interpreter::new()),
        EngineKind::Jit => {
            use kiln::jit::engine::{JitEngine, JitPath};
            let compiler = kiln::codegen::Compiler::host(kiln::config::CompileConfig::default()).map_err(ToolError::msg)?;
            let path = if cli.no_cache { JitPath::WholeKernel } else { JitPath::PerTask };
            let threads = cli
                .threads
                .map(|n| n as usize)
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            Box::new(JitEngine::new(compiler, path, threads).map_err(|e| ToolError::msg(e.message))?)
        }
    })
}

fn strip(s: &str, sigil: char) -> &str {
    s.strip_prefix(sigil).unwrap_or(s)
}

fn run(cli: &Cli) -> Result<(), ToolError> {
    // Flags of the jit engine would be silently ignored by the interpreter.
    if cli.engine == EngineKind::Interp {
        for (given, flag) in [(cli.threads.is_some(), "--threads"), (cli.no_cache, "--no-cache")] {
            if given {
                return Err(ToolError::Usage(format!("{flag} applies only to --engine jit")));
            }
        }
    }
    let src = tool::read_source(&cli.input)?;
    let stream = kiln::parser::parse(src.text()).map_err(|ds| ToolError::diags(&src, &ds))?;
    kiln::verifier::verify(&stream).map_err(|ds| ToolError::diags(&src, &ds))?;

    let kernels = select_kernels(&stream, &cli.kernels, src.name())?;
    let args = bind_args(&kernels, &cli.args)?;

    let mut fields = Fields::try_zeroed(&stream).map_err(ToolError::msg)?;
    let known = |name: &str, what: &str| -> Result<String, ToolError> {
        let n = strip(name, '@');
        if fields.get(n).is_some() {
            Ok(n.to_string())
        } else {
            Err(ToolError::msg(format!("{what} names unknown field @{n}")))
        }
    };
    let mut loads = Vec::new();
    for (name, file) in &cli.inputs {
        loads.push((known(name, "--input")?, file.clone()));
    }
    let mut saves = Vec::new();
    for (name, file) in &cli.outputs {
        saves.push((known(name, "--output")?, file.clone()));
    }
    let mut prints = Vec::new();
    for name in &cli.prints {
        prints.push(known(name, "--print")?);
    }
    for (name, file) in loads {
        let bytes = std::fs::read(&file).map_err(|e| ToolError::at(&file, tool::io_reason(&e)))?;
        let data = fields.get_mut(&name).ok_or_else(|| ToolError::msg(format!("unknown field @{name}")))?;
        data.load_npy(&name, &bytes).map_err(|m| ToolError::at(&file, m))?;
    }

    let mut engine = make_engine(cli)?;
    for (k, a) in kernels.iter().zip(&args) {
        engine.run_kernel(&stream, &k.name, a, &mut fields).map_err(|e| ToolError::msg(e.message))?;
    }

    // Everything below happens only after every kernel succeeded.
    let mut out = String::new();
    for name in &prints {
        if let Some(d) = fields.get(name) {
            let _ = writeln!(out, "@{name} : {} = {}", d.type_string(), d.format_values());
        }
    }
    if cli.print_all {
        for (name, d) in &fields.map {
            let _ = writeln!(out, "@{name} : {} = {}", d.type_string(), d.format_values());
        }
    }
    if cli.digest {
        out.push_str(&fields.digest_lines());
    }
    // All --output files or none: a failing one leaves no others behind.
    let mut npys = Vec::new();
    for (name, file) in &saves {
        let Some(d) = fields.get(name) else { continue };
        npys.push((std::path::Path::new(file.as_str()), d.to_npy().map_err(|m| ToolError::at(file, m))?));
    }
    let files: Vec<(&std::path::Path, &[u8])> = npys.iter().map(|(p, b)| (*p, b.as_slice())).collect();
    tool::write_files_atomic(&files).map_err(|(p, e)| ToolError::at(p.display(), tool::io_reason(&e)))?;
    tool::write_output(None, out.as_bytes())
}

/// The kernels to run: those named (in the given order), or every kernel
/// of every module in file order.
fn select_kernels<'s>(stream: &'s Stream, names: &[String], file: &str) -> Result<Vec<&'s Kernel>, ToolError> {
    let all: Vec<&Kernel> = stream.modules.iter().flat_map(|m| m.kernels()).collect();
    if names.is_empty() {
        return Ok(all);
    }
    names
        .iter()
        .map(|n| {
            let n = strip(n, '@');
            all.iter().copied().find(|k| k.name == n).ok_or_else(|| ToolError::msg(format!("no kernel named @{n} in {file}")))
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
                        Some((_, text)) => exec::parse_value(text, p.ty)
                            .map_err(|m| ToolError::msg(format!("--arg {pname}: {m} (parameter %{pname} of @{} is {})", k.name, p.ty))),
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
