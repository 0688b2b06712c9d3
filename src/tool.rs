//! What every tool's `main` shares: reading input (`-` is stdin), writing
//! output only on success, rendering errors, and exit codes.
//!
//! Owns: the process-facing conventions of the binaries in `tools/`. Exit
//! codes: 0 success, 1 bad input or failed verification, 2 bad usage
//! (clap's own exit code for argument errors); anything else is a bug. A
//! closed pipe ends a tool quietly with 0.
//!
//! Must never: be used by the library's other modules; they return errors,
//! this module turns them into process behaviour.

use crate::diag::{self, Diagnostics, Severity, SourceFile};
use std::io::{self, IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Whether this process colours what it prints on standard error, decided
/// once by [`run_tool`] from `--color`, `NO_COLOR` and the terminal.
static COLOR: AtomicBool = AtomicBool::new(false);

/// Whether diagnostics are coloured in this process.
pub fn color() -> bool {
    COLOR.load(Ordering::Relaxed)
}

/// How many errors this process reports before it stops (0: all), set once
/// by [`run_tool`] from `--error-limit` (`-ferror-limit=`) where the tool
/// has it ([`crate::cli::DiagArgs`]).
static ERROR_LIMIT: AtomicUsize = AtomicUsize::new(crate::cli::DEFAULT_ERROR_LIMIT);

/// The error limit of this process's diagnostics.
pub fn error_limit() -> usize {
    ERROR_LIMIT.load(Ordering::Relaxed)
}

/// Whether this process writes its diagnostics as JSON lines, set once by
/// [`run_tool`] from `--diagnostics-format` where the tool has it.
static JSON: AtomicBool = AtomicBool::new(false);

fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// One line about bad input, or a warning, as this process writes them:
/// LLVM's `LOCATION: error: MESSAGE`, or a line of JSON.
fn line(location: Option<&str>, severity: Severity, message: &str) -> String {
    if json() {
        diag::json_line(location, severity, message)
    } else {
        diag::header(location, severity, message, color())
    }
}

/// One line about the process itself, which has no file: `TOOL: error:
/// MESSAGE`, or a line of JSON whose `file` is null (the tool's name is no
/// file a consumer could open).
fn process_line(tool: &str, severity: Severity, message: &str) -> String {
    if json() {
        diag::json_line(None, severity, message)
    } else {
        diag::header(Some(tool), severity, message, color())
    }
}

/// Diagnostics against their source, up to the error limit, as this
/// process writes them.
fn render(src: &SourceFile, ds: &Diagnostics) -> String {
    if json() {
        src.render_json(ds, error_limit())
    } else {
        src.render_limited(ds, color(), error_limit())
    }
}

/// Why a tool stops without success.
#[derive(Debug)]
pub enum ToolError {
    /// Bad input: the text is already rendered (diagnostics with source
    /// excerpts, or `FILE: error: ...`). Exit code 1.
    Input(String),
    /// Bad usage that clap cannot see (flags that contradict each other).
    /// Exit code 2.
    Usage(String),
    /// A closed stdout: the reader went away; exit quietly with 0.
    BrokenPipe,
    /// Nothing more to do (what was asked for, such as `--target-cpu=help`,
    /// is printed): exit with 0.
    Done,
    /// Interrupted by a signal (`crate::interrupt`): the line saying what
    /// was kept; exit status `128 + signal`.
    Interrupted { signal: i32, text: String },
    /// The output says it all; exit with this status, printing nothing
    /// more (`kiln-key --diff`'s 1 when keys differ, as `diff`'s).
    Status(u8),
    /// An error that exits with another status than 1 (`--diff`'s
    /// trouble is 2, as `diff`'s): already rendered.
    InputWith(u8, String),
}

impl From<crate::settings::SettingsError> for ToolError {
    /// A bad setting from a flag or the environment is a usage error; one
    /// in a config file is bad input.
    fn from(e: crate::settings::SettingsError) -> ToolError {
        if e.usage {
            ToolError::Usage(e.to_string())
        } else {
            ToolError::Input(line(Some(&e.location), Severity::Error, &e.message))
        }
    }
}

impl ToolError {
    /// An input error with one line of text; `error: ` is prefixed (and
    /// the tool's name, by [`main_with`]).
    pub fn msg(text: impl std::fmt::Display) -> ToolError {
        ToolError::Input(line(None, Severity::Error, &text.to_string()))
    }
    /// An input error located at a path: `PATH: error: TEXT`.
    pub fn at(path: impl std::fmt::Display, text: impl std::fmt::Display) -> ToolError {
        ToolError::Input(line(Some(&path.to_string()), Severity::Error, &text.to_string()))
    }
    /// An error writing the output `path`: `PATH: error: cannot write
    /// output: REASON`, so that it never reads like a missing input.
    pub fn output(path: impl std::fmt::Display, e: &io::Error) -> ToolError {
        // Ctrl-C while an output waited (for a FIFO's reader): the
        // interrupt's status and note, not an error.
        if let Some(signal) = crate::interrupt::requested().filter(|_| e.kind() == io::ErrorKind::Interrupted) {
            return ToolError::Interrupted { signal, text: format!("interrupted: {path} not written") };
        }
        ToolError::at(path, format!("cannot write output: {}", io_reason(e)))
    }
    /// An unlocated error line, then diagnostics rendered against their
    /// source (`error: pass 'cse' failed` and why).
    pub fn msg_diags(text: impl std::fmt::Display, src: &SourceFile, ds: &Diagnostics) -> ToolError {
        ToolError::Input(line(None, Severity::Error, &text.to_string()) + &render(src, ds))
    }
    /// Diagnostics rendered against their source, up to the error limit.
    pub fn diags(src: &SourceFile, ds: &Diagnostics) -> ToolError {
        ToolError::Input(render(src, ds))
    }
    /// An I/O error on writing to stdout: a closed pipe is quiet.
    pub fn stdout(e: io::Error) -> ToolError {
        if e.kind() == io::ErrorKind::BrokenPipe {
            ToolError::BrokenPipe
        } else {
            ToolError::msg(format!("cannot write to standard output: {}", io_reason(&e)))
        }
    }
}

/// Runs a tool's body and maps its result to an exit code, printing the
/// error (if any) on stderr prefixed by the tool's name where it has no
/// location of its own.
pub fn main_with(tool: &str, body: impl FnOnce() -> Result<(), ToolError>) -> ExitCode {
    // A panic is a bug: keep Rust's message, but make sure the exit code is
    // not mistaken for a user error.
    match body() {
        Ok(()) => ExitCode::SUCCESS,
        Err(ToolError::BrokenPipe | ToolError::Done) => ExitCode::SUCCESS,
        Err(ToolError::Status(code)) => ExitCode::from(code),
        Err(ToolError::InputWith(code, text)) => {
            print_input(tool, &text);
            ExitCode::from(code)
        }
        Err(ToolError::Interrupted { signal, text }) => {
            let _ = io::stderr().lock().write_all(process_line(tool, Severity::Note, &text).as_bytes());
            ExitCode::from(crate::interrupt::exit_status(signal))
        }
        Err(ToolError::Input(text)) => {
            print_input(tool, &text);
            ExitCode::from(1)
        }
        Err(ToolError::Usage(text)) => {
            let _ = io::stderr().lock().write_all(process_line(tool, Severity::Error, &text).as_bytes());
            ExitCode::from(2)
        }
    }
}

/// One `LOCATION: error: TEXT` line, coloured as this process's
/// diagnostics are (for a tool that gathers several errors).
pub fn error_line(location: &str, text: &str) -> String {
    line(Some(location), Severity::Error, text)
}

/// Prints `LOCATION: warning: TEXT` on standard error (coloured as the
/// process's diagnostics are), for a warning about a file; a closed
/// standard error is not worth failing for.
pub fn warn(location: &str, text: &str) {
    let _ = io::stderr().lock().write_all(line(Some(location), Severity::Warning, text).as_bytes());
}

/// Prints `TOOL: warning: TEXT`, a warning about the run itself (in JSON,
/// its `file` is null).
pub fn warn_process(tool: &str, text: &str) {
    let _ = io::stderr().lock().write_all(process_line(tool, Severity::Warning, text).as_bytes());
}

/// One warning for each config file the settings did not read (not a
/// regular file, larger than the bound), once in a process however often
/// it loads its settings.
pub fn warn_ignored_config(settings: &crate::settings::Settings) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if settings.ignored.is_empty() || WARNED.swap(true, Ordering::Relaxed) {
        return;
    }
    for e in &settings.ignored {
        warn(&e.location, &format!("{}; its settings are ignored", e.message));
    }
}

/// Prints rendered bad-input text on standard error; an unlocated error
/// (`error: ...`) is located by the tool's name.
fn print_input(tool: &str, text: &str) {
    let mut err = io::stderr().lock();
    let unlocated = diag::header(None, Severity::Error, "", color());
    let label = &unlocated[..unlocated.find(' ').unwrap_or(0)];
    let _ = if text.starts_with(label) {
        let b = diag::Palette::new(color()).bold;
        write!(err, "{b}{tool}:{b:#} {text}")
    } else {
        err.write_all(text.as_bytes())
    };
}

/// What a tool gives [`run_tool`] besides its clap definition.
pub struct ToolSpec {
    /// The tool's name (`kiln-opt`), the location of its own errors.
    pub name: &'static str,
    /// What `--version` prints (called only for `--version`, so a tool may
    /// detect the host there and nowhere else).
    pub version: fn() -> String,
    /// Examples, exit status, environment, files and related pages: after
    /// the options in `--help`, and in the man page.
    pub manual: &'static crate::manual::Manual,
}

/// The whole life of a tool: LLVM spellings rewritten
/// ([`crate::cli::rewrite_llvm_spellings`]), the colour decided
/// (`--color`, `NO_COLOR`, whether standard error is a terminal),
/// `--version`, the hidden `--generate-man` / `--generate-completion
/// SHELL` (for `make install`), clap's parse (a usage error is `TOOL:
/// error: ...`, exit 2), then `body` through [`main_with`].
pub fn run_tool<C: clap::Parser>(spec: &ToolSpec, body: impl FnOnce(C) -> Result<(), ToolError>) -> ExitCode {
    let args: Vec<String> = match std::env::args_os().map(|a| a.into_string()).collect() {
        Ok(a) => a,
        Err(bad) => {
            let text = format!("argument is not valid UTF-8: {}", bad.to_string_lossy());
            return main_with(spec.name, || Err(ToolError::Usage(text)));
        }
    };
    let args = crate::cli::rewrite_llvm_spellings(spec.name, args);
    let when = crate::cli::color_flag(&args);
    let no_color = std::env::var("NO_COLOR").ok();
    COLOR.store(crate::cli::color_choice(when, io::stderr().is_terminal(), no_color.as_deref()), Ordering::Relaxed);
    let cmd = command::<C>(spec, color());
    let args = match crate::cli::single_dash_longs(args, &flag_names(&cmd)) {
        Ok(a) => a,
        Err(text) => return main_with(spec.name, || Err(ToolError::Usage(text))),
    };
    if let Some(generated) = generate(&args, &cmd, spec.manual) {
        return main_with(spec.name, || generated);
    }
    if args.iter().skip(1).take_while(|a| *a != "--").any(|a| a == "--version" || a == "-V") {
        return main_with(spec.name, || write_output(None, (spec.version)().as_bytes()));
    }
    let parsed = cmd.try_get_matches_from(&args).and_then(|m| C::from_arg_matches(&m).map(|c| (m, c)));
    let parsed = parsed.map(|(matches, cli)| {
        if let Ok(Some(&limit)) = matches.try_get_one::<usize>(crate::cli::DiagArgs::ERROR_LIMIT_ID) {
            ERROR_LIMIT.store(limit, Ordering::Relaxed);
        }
        if let Ok(Some(&format)) = matches.try_get_one::<crate::cli::DiagnosticsFormat>(crate::cli::DiagArgs::FORMAT_ID)
        {
            JSON.store(format == crate::cli::DiagnosticsFormat::Json, Ordering::Relaxed);
        }
        cli
    });
    match parsed {
        Ok(cli) => main_with(spec.name, || body(cli)),
        Err(e) => clap_error(spec.name, e),
    }
}

/// The flags of `cmd` and of its subcommands, and whether each takes a
/// value ([`crate::cli::single_dash_longs`]).
fn flag_names(cmd: &clap::Command) -> crate::cli::FlagNames {
    let mut names = crate::cli::FlagNames::default();
    for a in cmd.get_arguments() {
        // A value given as the next argument (not one that must be
        // joined with `=`, as `--stats[=FORMAT]`'s).
        let takes = a.get_action().takes_values() && !a.is_require_equals_set();
        names.longs.extend(a.get_long().map(|l| (l.to_string(), takes)));
        names.shorts.extend(a.get_short().map(|s| (s, takes)));
    }
    for sub in cmd.get_subcommands() {
        let more = flag_names(sub);
        names.longs.extend(more.longs);
        names.shorts.extend(more.shorts);
    }
    names
}

/// A tool's clap command as every tool shows it: its definition, the LLVM
/// spellings it accepts after its help, its manual after `--help`'s
/// options (`-h` stays short), and clap's colour as ours.
fn command<C: clap::CommandFactory>(spec: &ToolSpec, color: bool) -> clap::Command {
    let mut cmd = C::command().color(if color { clap::ColorChoice::Always } else { clap::ColorChoice::Never });
    let spellings = crate::cli::spellings_help(spec.name);
    if !spellings.is_empty() {
        let after = cmd.get_after_help().map(|h| format!("{h}\n\n{spellings}")).unwrap_or(spellings);
        cmd = cmd.after_help(after);
    }
    let long = match cmd.get_after_help() {
        Some(short) => format!("{short}\n\n{}", spec.manual.help_text()),
        None => spec.manual.help_text(),
    };
    cmd.after_long_help(long)
}

/// Shows clap's error: help and `--version` on standard output (exit 0);
/// a usage error on standard error as `TOOL: error: ...` (exit 2).
fn clap_error(tool: &str, e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let text = e.render();
        let text = if color() { text.ansi().to_string() } else { text.to_string() };
        let mut out = io::stdout().lock();
        let code = if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { 2 } else { 0 };
        let _ = if code == 0 { out.write_all(text.as_bytes()) } else { io::stderr().lock().write_all(text.as_bytes()) };
        return ExitCode::from(code);
    }
    let text = e.render();
    let text = if color() { text.ansi().to_string() } else { text.to_string() };
    let b = diag::Palette::new(color()).bold;
    let _ = write!(io::stderr().lock(), "{b}{tool}:{b:#} {text}");
    ExitCode::from(2)
}

/// `--generate-man DIR` (the tool's man page, and one per subcommand, as
/// roff files in DIR) or `--generate-completion SHELL` (bash, zsh, fish; on
/// standard output) as the first argument, made from the same clap
/// definition the tool parses with. Hidden: for `make install`
/// (`scripts/install.sh`), not for users.
/// The definition is copied only then: a run that parses it does not pay
/// for a copy.
fn generate(args: &[String], cmd: &clap::Command, manual: &crate::manual::Manual) -> Option<Result<(), ToolError>> {
    let copy = || cmd.clone().color(clap::ColorChoice::Never);
    let operand = args.get(2).map(String::as_str);
    match args.get(1).map(String::as_str)? {
        "--generate-man" => {
            let Some(dir) = operand else {
                return Some(Err(ToolError::Usage("--generate-man takes a directory".into())));
            };
            let write = |(name, page): (String, Vec<u8>)| {
                let path = Path::new(dir).join(name);
                std::fs::write(&path, page).map_err(|e| ToolError::output(path.display(), &e))
            };
            Some(crate::manual::man_pages(&copy(), manual).into_iter().try_for_each(write))
        }
        "--generate-completion" => {
            use clap_complete::Shell;
            let shell = match operand {
                Some("bash") => Shell::Bash,
                Some("zsh") => Shell::Zsh,
                Some("fish") => Shell::Fish,
                other => {
                    let got = other.unwrap_or("nothing");
                    return Some(Err(ToolError::Usage(format!(
                        "--generate-completion takes bash, zsh or fish, not {got}"
                    ))));
                }
            };
            let (mut cmd, mut out) = (copy(), Vec::new());
            let name = cmd.get_name().to_string();
            clap_complete::generate(shell, &mut cmd, name, &mut out);
            Some(write_output(None, &out))
        }
        _ => None,
    }
}

/// Runs a tool's body with `--time-trace` ([`crate::cli::TraceArgs`]):
/// when asked, the recorder is started, the whole body is one span named
/// after the tool, and the trace is written to `path` afterwards (also
/// when the body failed). The tool's own output is written first, so a
/// trace that cannot be written is one error (exit 1) and nothing else is
/// lost.
pub fn with_time_trace(
    tool: &str,
    path: Option<String>,
    body: impl FnOnce() -> Result<(), ToolError>,
) -> Result<(), ToolError> {
    let Some(path) = path else { return body() };
    crate::trace::start();
    let result = {
        let _whole = crate::trace::span("tool", tool, crate::trace::WHOLE_INPUT);
        body()
    };
    let written = write_file_atomic(Path::new(&path), crate::trace::to_json(tool).as_bytes());
    match (result, written) {
        (Ok(()), Err(e)) => Err(ToolError::output(&path, &e)),
        (result, _) => result,
    }
}

/// Reads a whole input: a path, or `-` for stdin (named `<stdin>`), of at
/// most the `max_input_size` setting's bytes (a longer one, `/dev/zero`
/// included, is an error once the limit is passed, never read whole). For
/// the tools that hold no [`crate::settings::Settings`] of their own.
pub fn read_source(path: &str) -> Result<SourceFile, ToolError> {
    // The cap is a setting, but reading an input must not fail because a
    // config file is damaged: the tools that use the cache report that
    // themselves; here the default cap then holds.
    let settings = crate::settings::Settings::load(&[]).unwrap_or_else(|_| crate::settings::Settings::defaults());
    warn_ignored_config(&settings);
    read_source_capped(path, settings.max_input_size.value.0)
}

/// [`read_source`] with the cap (`max_input_size`, 0 for none) from
/// settings the caller already loaded.
pub fn read_source_capped(path: &str, limit: u64) -> Result<SourceFile, ToolError> {
    let _read = crate::trace::span("phase", "read", crate::trace::WHOLE_INPUT);
    let (name, bytes) = if path == "-" {
        ("<stdin>".to_string(), read_capped(io::stdin().lock(), limit).map_err(|e| ToolError::at("<stdin>", e))?)
    } else {
        let file = std::fs::File::open(path).map_err(|e| ToolError::at(path, io_reason(&e)))?;
        // A regular file says its size: one too large is not read at all.
        if file.metadata().is_ok_and(|m| m.is_file() && limit != 0 && m.len() > limit) {
            return Err(ToolError::at(path, too_large(limit)));
        }
        (path.to_string(), read_capped(file, limit).map_err(|e| ToolError::at(path, e))?)
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        ToolError::at(&name, format!("input is not valid UTF-8 (at byte {})", e.utf8_error().valid_up_to()))
    })?;
    Ok(SourceFile::new(name, text))
}

pub use crate::diag::io_reason;

/// Reads `r` to its end, or fails once more than `limit` bytes (0: no
/// limit) came: what an input too large reads as.
fn read_capped(r: impl Read, limit: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    let cap = if limit == 0 { u64::MAX } else { limit.saturating_add(1) };
    r.take(cap).read_to_end(&mut bytes).map_err(|e| io_reason(&e))?;
    if limit != 0 && bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

fn too_large(limit: u64) -> String {
    format!(
        "input is larger than {} (the max_input_size setting, KILN_MAX_INPUT_SIZE)",
        crate::cache::size::format_size(limit)
    )
}

/// Writes a tool's output: to stdout when `path` is `None` or `-`, else to
/// the file, through a temporary in the same directory renamed into place,
/// so the file appears only whole and only when the tool succeeds.
pub fn write_output(path: Option<&str>, bytes: &[u8]) -> Result<(), ToolError> {
    match path {
        None | Some("-") => {
            let mut out = io::stdout().lock();
            out.write_all(bytes).and_then(|_| out.flush()).map_err(ToolError::stdout)
        }
        Some(p) => write_file_atomic(Path::new(p), bytes).map_err(|e| ToolError::output(p, &e)),
    }
}

/// Writes a tool's output as it is produced, through a buffer: to stdout
/// when `path` is `None` or `-`, else to a temporary in the target's
/// directory that is renamed over `path` only when `write` succeeds. Large
/// outputs never need to exist whole in memory.
pub fn write_output_with(
    path: Option<&str>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), ToolError> {
    match path {
        None | Some("-") => {
            let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
            write(&mut out).and_then(|_| out.flush()).map_err(ToolError::stdout)
        }
        Some(p) => {
            let done = (|| match output_target(Path::new(p))? {
                Target::Direct(path) => {
                    let mut out = io::BufWriter::with_capacity(1 << 16, open_direct(&path)?);
                    write(&mut out)?;
                    out.flush()
                }
                Target::Replace { path, mode } => {
                    let tmp = temp_beside(&path, mode)?;
                    let mut out = io::BufWriter::with_capacity(1 << 16, tmp);
                    write(&mut out)?;
                    let tmp = out.into_inner().map_err(|e| e.into_error())?;
                    tmp.persist(&path).map_err(|e| e.error)?;
                    Ok(())
                }
            })();
            done.map_err(|e: io::Error| ToolError::output(p, &e))
        }
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory, renamed over the target, so a reader sees the old file or the
/// whole new one. A target that is not a regular file (a device such as
/// `/dev/null`, a FIFO) is written in place instead, and a symlink's target
/// is replaced, not the link. Like LLVM's `ToolOutputFile` no output is
/// `fsync`ed: a tool's output is reproducible (the cache store, whose
/// records cost a compile, does sync).
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    match output_target(path)? {
        Target::Direct(path) => open_direct(&path)?.write_all(bytes),
        Target::Replace { path, mode } => {
            let mut tmp = temp_beside(&path, mode)?;
            tmp.write_all(bytes)?;
            tmp.persist(&path).map_err(|e| e.error)?;
            Ok(())
        }
    }
}

/// Writes several files all or none, as far as the file system allows:
/// every regular target is first written whole to a temporary beside it,
/// then every non-regular target (a device, a FIFO) is written, and only
/// when all of that succeeded are the temporaries renamed into place. An
/// error names its path.
pub fn write_files_atomic(files: &[(&Path, &[u8])]) -> Result<(), (std::path::PathBuf, io::Error)> {
    let mut direct = Vec::new();
    let mut staged = Vec::new();
    for &(path, bytes) in files {
        let fail = |e| (path.to_path_buf(), e);
        match output_target(path).map_err(fail)? {
            Target::Direct(p) => {
                direct.push((open_direct(&p).map_err(fail)?, bytes, path));
            }
            Target::Replace { path: real, mode } => {
                let mut tmp = temp_beside(&real, mode).map_err(fail)?;
                tmp.write_all(bytes).map_err(fail)?;
                staged.push((tmp, real, path));
            }
        }
    }
    // What cannot be taken back (a device, a FIFO) is written first: if
    // it fails, no regular file has been replaced yet (the temporaries go
    // when dropped).
    for (mut f, bytes, path) in direct {
        f.write_all(bytes).map_err(|e| (path.to_path_buf(), e))?;
    }
    for (tmp, real, path) in staged {
        tmp.persist(&real).map_err(|e| (path.to_path_buf(), e.error))?;
    }
    Ok(())
}

/// How an output path is written.
enum Target {
    /// Not a regular file (a device, a FIFO): opened and written as it is;
    /// renaming a temporary over it would replace `/dev/null` with a file.
    Direct(std::path::PathBuf),
    /// A regular file, or nothing yet: a temporary renamed over `path` (a
    /// symlink already resolved, so the link survives), with the mode of
    /// the file it replaces (`None`: new, 0666 less the umask).
    Replace { path: std::path::PathBuf, mode: Option<u32> },
}

/// How long an output waits for a FIFO's reader before it says so.
const FIFO_WAIT_NOTE: std::time::Duration = std::time::Duration::from_millis(200);

/// Opens an output that is not a regular file (a device, a FIFO) for
/// writing. A FIFO is opened once a process opens it for reading, as a
/// blocking open would, but looking without blocking: a blocking open
/// restarts after the signal handler and could not be ended by Ctrl-C,
/// where this wait ends at the interrupt (`kiln::interrupt`). A wait
/// longer than [`FIFO_WAIT_NOTE`] is said once on standard error (`PATH:
/// note: waiting ...`). Once open, the writes block as usual.
fn open_direct(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let no_reader = |e: &io::Error| {
        e.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error())
            && std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
    };
    let mut pause = std::time::Duration::from_millis(1);
    let started = std::time::Instant::now();
    let mut said = false;
    let file = loop {
        let nonblocking = rustix::fs::OFlags::NONBLOCK.bits() as i32;
        match std::fs::OpenOptions::new().write(true).custom_flags(nonblocking).open(path) {
            Err(e) if no_reader(&e) => {
                if crate::interrupt::requested().is_some() {
                    return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted waiting for a reader"));
                }
                // A wait longer than a reader started beside the tool
                // takes is said once: a run that seems to hang says why.
                if !said && started.elapsed() >= FIFO_WAIT_NOTE {
                    said = true;
                    let text = "waiting for a process to read this FIFO (Ctrl-C stops)";
                    let _ = io::stderr()
                        .lock()
                        .write_all(line(Some(&path.display().to_string()), Severity::Note, text).as_bytes());
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            other => break other?,
        }
    };
    let flags = rustix::fs::fcntl_getfl(&file)?;
    rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)?;
    Ok(file)
}

fn output_target(path: &Path) -> io::Result<Target> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(io::Error::from(io::ErrorKind::IsADirectory)),
        Ok(m) if !m.is_file() => Ok(Target::Direct(path.to_path_buf())),
        Ok(m) => {
            Ok(Target::Replace { path: std::fs::canonicalize(path)?, mode: Some(m.permissions().mode() & 0o7777) })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Target::Replace { path: path.to_path_buf(), mode: None }),
        Err(e) => Err(e),
    }
}

/// A temporary file in `path`'s directory, created with `mode` (or 0666,
/// which open(2) masks with the umask, as for any new file; the default of
/// a temporary, 0600, would make every output private).
fn temp_beside(path: &Path, mode: Option<u32>) -> io::Result<tempfile::NamedTempFile> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".kiln-out-")
        .permissions(std::fs::Permissions::from_mode(mode.unwrap_or(0o666)))
        .tempfile_in(dir)
        .map_err(|e| match e.kind() {
            // The directory is there, but takes no new file (as /proc):
            // "no such file" would name the wrong thing.
            io::ErrorKind::NotFound if dir.is_dir() => io::Error::other(format!(
                "cannot create a file in {} (an output is written beside its path, then renamed)",
                dir.display()
            )),
            _ => e,
        })?;
    if let Some(m) = mode {
        // open(2) applied the umask; an existing file's mode is kept whole.
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(m))?;
    }
    Ok(tmp)
}

/// The one progress display of the tools that compile tasks (`kiln-compile`,
/// and `kiln-run` through its compiler process): `compiling [====>    ]
/// 12/40 tasks 3s` on standard error. Shown only when standard error is a
/// terminal, the tool was not told to be quiet (`-q`), and the work is long
/// enough to want it (16 tasks or more); never on a pipe. Tasks may be added
/// as the work is found (one batch per kernel).
pub struct TaskProgress {
    state: std::sync::Mutex<ProgressState>,
    enabled: bool,
}

#[derive(Default)]
struct ProgressState {
    total: u64,
    done: u64,
    bar: Option<indicatif::ProgressBar>,
}

impl TaskProgress {
    /// The fewest tasks worth a bar.
    const MIN_TASKS: u64 = 16;

    pub fn new(quiet: bool) -> TaskProgress {
        let enabled = !quiet && io::stderr().is_terminal();
        TaskProgress { state: std::sync::Mutex::new(ProgressState::default()), enabled }
    }

    /// `n` more tasks to compile.
    pub fn add(&self, n: usize) {
        let Ok(mut s) = self.state.lock() else { return };
        s.total += n as u64;
        if let Some(bar) = &s.bar {
            bar.set_length(s.total);
        } else if self.enabled && s.total >= Self::MIN_TASKS {
            let bar = indicatif::ProgressBar::new(s.total);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{spinner} compiling [{bar:30}] {pos}/{len} tasks {elapsed}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_position(s.done);
            s.bar = Some(bar);
        }
    }

    /// One task compiled.
    pub fn done(&self) {
        let Ok(mut s) = self.state.lock() else { return };
        s.done += 1;
        if let Some(bar) = &s.bar {
            bar.inc(1);
        }
    }

    /// The work is over: the bar is cleared away.
    pub fn finish(&self) {
        if let Ok(mut s) = self.state.lock() {
            if let Some(bar) = s.bar.take() {
                bar.finish_and_clear();
            }
        }
    }
}
