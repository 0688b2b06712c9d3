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

use crate::diag::{Diagnostics, SourceFile};
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::ExitCode;

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
}

impl From<crate::settings::SettingsError> for ToolError {
    /// A bad setting from a flag or the environment is a usage error; one
    /// in a config file is bad input.
    fn from(e: crate::settings::SettingsError) -> ToolError {
        if e.usage {
            ToolError::Usage(e.to_string())
        } else {
            ToolError::Input(format!("{}: error: {}\n", e.location, e.message))
        }
    }
}

impl ToolError {
    /// An input error with one line of text; `error: ` is prefixed.
    pub fn msg(text: impl std::fmt::Display) -> ToolError {
        ToolError::Input(format!("error: {text}\n"))
    }
    /// An input error located at a path: `PATH: error: TEXT`.
    pub fn at(path: impl std::fmt::Display, text: impl std::fmt::Display) -> ToolError {
        ToolError::Input(format!("{path}: error: {text}\n"))
    }
    /// Diagnostics rendered against their source.
    pub fn diags(src: &SourceFile, ds: &Diagnostics) -> ToolError {
        ToolError::Input(src.render_all(ds))
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
        Err(ToolError::BrokenPipe) => ExitCode::SUCCESS,
        Err(ToolError::Input(text)) => {
            let mut err = io::stderr().lock();
            let _ = if text.starts_with("error:") {
                write!(err, "{tool}: {text}")
            } else {
                err.write_all(text.as_bytes())
            };
            ExitCode::from(1)
        }
        Err(ToolError::Usage(text)) => {
            let _ = writeln!(io::stderr().lock(), "{tool}: error: {text}");
            ExitCode::from(2)
        }
    }
}

/// Reads a whole input: a path, or `-` for stdin (named `<stdin>`).
pub fn read_source(path: &str) -> Result<SourceFile, ToolError> {
    let mut bytes = Vec::new();
    let name = if path == "-" {
        io::stdin().lock().read_to_end(&mut bytes).map_err(|e| ToolError::at("<stdin>", e))?;
        "<stdin>".to_string()
    } else {
        bytes = std::fs::read(path).map_err(|e| ToolError::at(path, io_reason(&e)))?;
        path.to_string()
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        ToolError::at(&name, format!("input is not valid UTF-8 (at byte {})", e.utf8_error().valid_up_to()))
    })?;
    Ok(SourceFile::new(name, text))
}

pub use crate::diag::io_reason;

/// Writes a tool's output: to stdout when `path` is `None` or `-`, else to
/// the file, through a temporary in the same directory renamed into place,
/// so the file appears only whole and only when the tool succeeds.
pub fn write_output(path: Option<&str>, bytes: &[u8]) -> Result<(), ToolError> {
    match path {
        None | Some("-") => {
            let mut out = io::stdout().lock();
            out.write_all(bytes).and_then(|_| out.flush()).map_err(ToolError::stdout)
        }
        Some(p) => write_file_atomic(Path::new(p), bytes).map_err(|e| ToolError::at(p, io_reason(&e))),
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
                    let mut out = io::BufWriter::with_capacity(1 << 16, std::fs::OpenOptions::new().write(true).open(path)?);
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
            done.map_err(|e: io::Error| ToolError::at(p, io_reason(&e)))
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
        Target::Direct(path) => std::fs::OpenOptions::new().write(true).open(path)?.write_all(bytes),
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
/// and only when all of them (and the opening of every non-regular target,
/// such as a FIFO) succeeded are they renamed into place. An error names
/// its path.
pub fn write_files_atomic(files: &[(&Path, &[u8])]) -> Result<(), (std::path::PathBuf, io::Error)> {
    let mut direct = Vec::new();
    let mut staged = Vec::new();
    for &(path, bytes) in files {
        let fail = |e| (path.to_path_buf(), e);
        match output_target(path).map_err(fail)? {
            Target::Direct(p) => {
                direct.push((std::fs::OpenOptions::new().write(true).open(&p).map_err(fail)?, bytes, path));
            }
            Target::Replace { path: real, mode } => {
                let mut tmp = temp_beside(&real, mode).map_err(fail)?;
                tmp.write_all(bytes).map_err(fail)?;
                staged.push((tmp, real, path));
            }
        }
    }
    for (tmp, real, path) in staged {
        tmp.persist(&real).map_err(|e| (path.to_path_buf(), e.error))?;
    }
    for (mut f, bytes, path) in direct {
        f.write_all(bytes).map_err(|e| (path.to_path_buf(), e))?;
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

fn output_target(path: &Path) -> io::Result<Target> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(io::Error::from(io::ErrorKind::IsADirectory)),
        Ok(m) if !m.is_file() => Ok(Target::Direct(path.to_path_buf())),
        Ok(m) => Ok(Target::Replace { path: std::fs::canonicalize(path)?, mode: Some(m.permissions().mode() & 0o7777) }),
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
        .tempfile_in(dir)?;
    if let Some(m) = mode {
        // open(2) applied the umask; an existing file's mode is kept whole.
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(m))?;
    }
    Ok(tmp)
}
