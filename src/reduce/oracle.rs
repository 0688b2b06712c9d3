//! The interestingness test of `kiln-reduce`: a script run on a candidate
//! file, interesting when it exits 0 (as `llvm-reduce`'s `--test`).
//!
//! Owns: finding and checking the script (a path, or a name on `PATH`;
//! present, a regular file, executable), the candidate files (one
//! temporary directory, removed at the end), one try (`SCRIPT [ARG...]
//! CANDIDATE`, its output discarded, in a process group of its own so that
//! a timeout or an interruption kills it and everything it started).
//!
//! Must never: print; leave a script running after a try returns; write
//! outside its temporary directory.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What one try of the script said.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// It exited 0.
    Interesting,
    /// It exited otherwise (with this status's text).
    Boring(String),
    /// It ran longer than the timeout, and was killed.
    TimedOut,
    /// The reduction was interrupted while it ran; it was killed.
    Cancelled,
}

/// The script and how to run it.
pub struct Oracle<'a> {
    script: PathBuf,
    args: Vec<String>,
    timeout: Duration,
    cancel: &'a AtomicBool,
    dir: tempfile::TempDir,
    next: AtomicU64,
}

/// Why the script cannot be used: its message (the tool adds the script's
/// name as the location).
#[derive(Debug)]
pub struct ScriptError(pub String);

/// The script named `name`: a path when it has a `/`, else looked up on
/// `PATH` as a shell would; it must be an executable regular file.
pub fn find_script(name: &str) -> Result<PathBuf, ScriptError> {
    let candidates: Vec<PathBuf> = if name.contains('/') {
        vec![PathBuf::from(name)]
    } else {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path).map(|d| d.join(name)).collect()
    };
    let found = candidates.into_iter().find(|p| p.exists());
    let Some(path) = found else {
        return Err(ScriptError("test script not found".into()));
    };
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(&path).map_err(|e| ScriptError(crate::diag::io_reason(&e)))?;
    if !meta.is_file() {
        return Err(ScriptError("test script is not a regular file".into()));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(ScriptError("test script is not executable (chmod +x it)".into()));
    }
    Ok(path)
}

impl<'a> Oracle<'a> {
    /// An oracle running `script` (from [`find_script`]) with `args` before
    /// the candidate's path, each try killed after `timeout` or when
    /// `cancel` is set.
    pub fn new(script: PathBuf, args: Vec<String>, timeout: Duration, cancel: &'a AtomicBool) -> io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("kiln-reduce-").tempdir()?;
        Ok(Oracle { script, args, timeout, cancel, dir, next: AtomicU64::new(0) })
    }

    /// The per-try timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether the reduction was asked to stop.
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Runs the script on `text` (written to a candidate file of its own,
    /// removed afterwards).
    pub fn judge(&self, text: &str) -> io::Result<Verdict> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.path().join(format!("candidate-{n}.kir"));
        std::fs::write(&path, text)?;
        let verdict = self.run(&path);
        let _ = std::fs::remove_file(&path);
        verdict
    }

    fn run(&self, candidate: &Path) -> io::Result<Verdict> {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new(&self.script)
            .args(&self.args)
            .arg(candidate)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(verdict_of(status));
            }
            if self.cancelled() {
                kill_group(&mut child)?;
                return Ok(Verdict::Cancelled);
            }
            if Instant::now() >= deadline {
                kill_group(&mut child)?;
                return Ok(Verdict::TimedOut);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn verdict_of(status: ExitStatus) -> Verdict {
    if status.success() {
        Verdict::Interesting
    } else {
        Verdict::Boring(status.to_string())
    }
}

/// Kills the script and everything it started (its process group), and
/// reaps it.
fn kill_group(child: &mut Child) -> io::Result<()> {
    // SAFETY: kill(2) with a negative pid signals the process group the
    // child leads (it was spawned with process_group(0)); no memory is
    // involved.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
    child.wait().map(|_| ())
}
