//! The compile protocol: how a program that links no code generator
//! (`kiln-run`, through `codegen::CompileProcess`) has tasks compiled by a
//! `kiln-compile` process it starts, both halves in one place.
//!
//! A request is one run of the program: the task modules as KIR text on
//! its standard input, `-o DIR/`, the configuration whole as the key
//! hashes it (`--compile-config`), the target (`--target-cpu`,
//! `--target-features`), and which outputs it wants (`--function-records`:
//! the tasks alone, or the function records a file lists, one key a
//! line). The answer ([`ask`], [`Answer`]) is one object per output in DIR, named by
//! [`file_stem`] (a task) or [`record_file_stem`] (a record), and, with
//! `--report-progress`, one line [`DONE_LINE`] on standard output per task
//! compiled; a failure is the exit status and what the program wrote on
//! its standard error.
//!
//! A target check ([`check_target`]) is a run too: a simulated host's
//! `--target-cpu` / `--target-features`, each with where it came from
//! (`--target-cpu-from`, `--target-features-from`), and `--print-target`;
//! the answer is the target printed ([`print_target`]), LLVM's lists for
//! `help`, or a usage error naming the nearest names.
//!
//! Owns: the program's name, the flags of a request ([`request_flags`],
//! [`Wanted`]) and the record list's format (written by
//! [`write_record_list`], read by [`read_record_list`]), the outputs a
//! request asks for ([`outputs`]) and their file names, the progress line,
//! running the program ([`run`]; in the background, [`start`]) and the
//! directory it answers in ([`ask`]).
//!
//! Must never: depend on LLVM (the client side links no code generator),
//! tell the process the configuration any other way than whole, start a
//! process after an interrupt was asked for, or leave an answer's
//! directory behind.

use crate::config::CompileConfig;
use crate::ir::Module;
use crate::key::Key;
use std::io::{BufRead as _, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The program's name (installed beside `kiln-run`).
pub const COMPILE_PROGRAM: &str = "kiln-compile";

/// The line a `kiln-compile --report-progress` writes on standard output
/// for each task it has compiled.
pub const DONE_LINE: &str = "done";

/// The value of `--function-records` that asks for the tasks alone.
pub const NO_RECORDS: &str = "none";

/// The longest file stem [`file_stem`] keeps as it is, in bytes (file
/// systems allow 255 a name, with room left for an extension).
pub const MAX_FILE_STEM: usize = 200;

/// The file stem of the output of task `name` (`kiln-compile -o DIR/`, and
/// the objects the client reads back): the name itself up to
/// [`MAX_FILE_STEM`] bytes, else its first 160 bytes, `-` and 16 hex digits
/// of its blake3 hash, so a name of any length the verifier accepts makes
/// a file name the system takes, and two long names stay apart.
pub fn file_stem(name: &str) -> String {
    if name.len() <= MAX_FILE_STEM {
        return name.to_string();
    }
    let mut cut = 160;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let hash = blake3::hash(name.as_bytes()).to_hex();
    format!("{}-{}", &name[..cut], &hash[..16])
}

/// The file stem of function record `key`'s output: `fn.KEY`.
pub fn record_file_stem(key: &Key) -> String {
    format!("fn.{key}")
}

/// The flags that make `kiln-compile` compile as the client is
/// configured: the configuration whole, in the form the key hashes (the
/// process refuses one it cannot honour, another build's included), and
/// the target.
pub fn request_flags(config: &CompileConfig, cpu: &str, features: &str) -> Vec<String> {
    vec![
        format!("--compile-config={}", crate::key::config_json(config)),
        format!("--target-cpu={cpu}"),
        format!("--target-features={features}"),
        "--color=never".to_string(),
    ]
}

/// Which outputs a request wants (`--function-records`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wanted {
    /// No flag: every task and every function record the tasks call (a
    /// user's `kiln-compile -o DIR/`).
    Everything,
    /// `none`: the tasks alone (the client asks for the records a task
    /// calls by a request of their own).
    Tasks,
    /// The function records whose keys the file lists, alone.
    Records(PathBuf),
}

impl Wanted {
    /// What the flag's value asks for.
    pub fn from_flag(value: Option<&str>) -> Wanted {
        match value {
            None => Wanted::Everything,
            Some(NO_RECORDS) => Wanted::Tasks,
            Some(file) => Wanted::Records(PathBuf::from(file)),
        }
    }

    /// The flag that asks for it (none for [`Wanted::Everything`]).
    pub fn flag(&self) -> Option<String> {
        match self {
            Wanted::Everything => None,
            Wanted::Tasks => Some(format!("--function-records={NO_RECORDS}")),
            Wanted::Records(file) => Some(format!("--function-records={}", file.display())),
        }
    }
}

/// Writes the list of function records a request wants: a temporary file,
/// one key a line, removed when dropped.
pub fn write_record_list(keys: &[Key]) -> std::io::Result<tempfile::NamedTempFile> {
    let mut f = tempfile::NamedTempFile::new()?;
    let text: String = keys.iter().map(|k| format!("{k}\n")).collect();
    f.write_all(text.as_bytes())?;
    Ok(f)
}

/// The keys a record list holds (blank lines ignored); why not, naming
/// the file and the line.
pub fn read_record_list(path: &Path) -> Result<Vec<Key>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {}", path.display(), crate::diag::io_reason(&e)))?;
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| l.parse::<Key>().map_err(|_| format!("{}: `{l}` is not a function record's key", path.display())))
        .collect()
}

/// One output of a request: a task's object, or a function record's.
#[derive(Clone, Debug)]
pub struct Requested<'s> {
    /// The module it is compiled from: the task's, or the task module
    /// that holds the record.
    pub module: &'s Module,
    /// The record's key; `None` for the task.
    pub record: Option<Key>,
    /// Its file stem ([`file_stem`], [`record_file_stem`]).
    pub stem: String,
    /// What it is, for errors: `task @NAME`, `function @NAME`.
    pub what: String,
    /// Its name in a time trace: the task's, or `function @NAME`.
    pub traced: String,
}

impl Requested<'_> {
    /// Whether it is a task's object.
    pub fn is_task(&self) -> bool {
        self.record.is_none()
    }
}

/// The outputs `wanted` asks for of `tasks` (each task module with its
/// task's name): the tasks, then the function records they call, each
/// once. A record list that names a record the tasks do not call is an
/// error.
pub fn outputs<'s>(
    tasks: &[(&'s Module, String)],
    config: &CompileConfig,
    wanted: &Wanted,
) -> Result<Vec<Requested<'s>>, String> {
    let listed = match wanted {
        Wanted::Records(file) => Some(read_record_list(file)?),
        _ => None,
    };
    let mut out: Vec<Requested> = Vec::new();
    if listed.is_none() {
        out.extend(tasks.iter().map(|(m, name)| Requested {
            module: m,
            record: None,
            stem: file_stem(name),
            what: format!("task @{name}"),
            traced: name.clone(),
        }));
    }
    if *wanted == Wanted::Tasks {
        return Ok(out);
    }
    let only: Option<std::collections::HashSet<&Key>> = listed.as_ref().map(|k| k.iter().collect());
    let records = crate::key::functions::needed_records(tasks.iter().map(|(m, _)| *m), config);
    let records = records.into_iter().filter(|r| only.as_ref().is_none_or(|w| w.contains(&r.key)));
    out.extend(records.map(|r| Requested {
        module: r.module,
        record: Some(r.key),
        stem: record_file_stem(&r.key),
        what: format!("function @{}", r.name),
        traced: format!("function @{}", r.name),
    }));
    if let (Some(keys), Wanted::Records(file)) = (&listed, wanted) {
        if out.len() < keys.len() {
            return Err(format!("{} lists function records the input does not have", file.display()));
        }
    }
    Ok(out)
}

/// The answer to a request made by [`ask`]: the directory the process
/// wrote its outputs in, removed when dropped.
pub struct Answer {
    dir: tempfile::TempDir,
}

impl Answer {
    /// The object the process wrote under `stem`; `what` names it in the
    /// error when there is none.
    pub fn object(&self, stem: &str, what: &str) -> Result<Vec<u8>, String> {
        let path = self.dir.path().join(format!("{stem}.o"));
        std::fs::read(&path).map_err(|e| format!("the compiler wrote no object for {what} ({}): {e}", path.display()))
    }
}

/// Asks `program` to compile the task modules `input` (KIR text) with
/// `flags` ([`request_flags`] and [`Wanted::flag`]), its outputs written
/// to a fresh directory; traced as `what` (the process traces itself, and
/// its spans join this process's trace on a track of their own).
pub fn ask(
    program: &Path,
    input: &str,
    flags: &[String],
    what: &str,
    on_done: Option<&dyn Fn()>,
) -> Result<Answer, String> {
    let dir = tempfile::Builder::new()
        .prefix("kiln-compile.")
        .tempdir()
        .map_err(|e| format!("cannot make a directory for the compiler's objects: {e}"))?;
    let trace = crate::trace::on().then(|| dir.path().join("trace.json"));
    let mut args = vec!["-".to_string(), "-o".to_string(), format!("{}/", dir.path().display())];
    args.extend(trace.as_ref().map(|p| format!("--time-trace={}", p.display())));
    args.extend(flags.iter().cloned());
    let span = crate::trace::span("compile", COMPILE_PROGRAM, what);
    let started = crate::trace::now_us();
    run(program, &args, input, on_done)?;
    drop(span);
    if let Some(text) = trace.and_then(|p| std::fs::read_to_string(p).ok()) {
        crate::trace::merge(&text, started);
    }
    Ok(Answer { dir })
}

/// Runs `program` with `args`, `input` on its standard input: its standard
/// output, or why it failed (its exit status and what it wrote on
/// standard error, each line without the program's prefix). With
/// `on_done`, `--report-progress` is passed and each [`DONE_LINE`] the
/// process writes calls it as it comes (and is not part of the output).
pub fn run(program: &Path, args: &[String], input: &str, on_done: Option<&dyn Fn()>) -> Result<Vec<u8>, String> {
    let shown = program.display();
    crate::interrupt::check()?;
    let mut child = Command::new(program)
        .args(args)
        .args(on_done.map(|_| "--report-progress"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!(
                "cannot run the compiler {shown}: {e} (tasks are compiled by the {COMPILE_PROGRAM} installed beside this program)"
            )
        })?;
    // The process reads all of its input before it writes: no deadlock on
    // full pipes. A write error shows in its exit status.
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input.as_bytes());
    }
    let out = match on_done {
        None => child.wait_with_output(),
        Some(done) => wait_reporting(child, done),
    }
    .map_err(|e| format!("the compiler {shown} failed: {e}"))?;
    if out.status.success() {
        return Ok(out.stdout);
    }
    Err(failure(program, out.status, &out.stderr))
}

/// Why a compiler process failed: its exit status and what it wrote on
/// standard error, each line without the program's prefix.
fn failure(program: &Path, status: std::process::ExitStatus, stderr: &[u8]) -> String {
    let prefix = format!("{COMPILE_PROGRAM}: ");
    let said = String::from_utf8_lossy(stderr);
    let said = said.trim().lines().map(|l| l.strip_prefix(&prefix).unwrap_or(l)).collect::<Vec<_>>().join("; ");
    let status = match status.code() {
        Some(c) => format!("exit status {c}"),
        None => "killed by a signal".to_string(),
    };
    let said = if said.is_empty() { String::new() } else { format!(": {said}") };
    format!("the compiler {} failed ({status}){said}", program.display())
}

/// What one target setting of a simulated host names, and where it came
/// from for messages (`--target-cpu`, `KILN_TARGET_CPU`, `target_cpu in
/// user file F`).
#[derive(Clone, Copy, Debug)]
pub struct TargetSetting<'a> {
    pub value: &'a str,
    pub from: &'a str,
}

/// What a target check answered ([`check_target`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetCheck {
    /// The target, resolved: triple, CPU and features as LLVM spells them.
    Target { triple: String, cpu: String, features: String },
    /// `help` was asked for: LLVM's lists, to print.
    Help(String),
    /// A name LLVM does not know: the message, naming the nearest.
    Unknown(String),
    /// The check could not be made (no program, another build, a crash).
    Failed(String),
}

/// The flags of a target check: the settings, each with where it came
/// from, and `--print-target`.
fn target_check_flags(cpu: Option<TargetSetting>, features: Option<TargetSetting>) -> Vec<String> {
    let mut flags = vec![format!("--build-id={}", crate::config::BUILD_ID), "--color=never".to_string()];
    for (name, setting) in [("cpu", cpu), ("features", features)] {
        if let Some(s) = setting {
            flags.push(format!("--target-{name}={}", s.value));
            flags.push(format!("--target-{name}-from={}", s.from));
        }
    }
    flags.push("--print-target".to_string());
    flags
}

/// What `--print-target` writes: the target, one `name: value` line each.
pub fn print_target(triple: &str, cpu: &str, features: &str) -> String {
    format!("triple: {triple}\ncpu: {cpu}\nfeatures: {features}\n")
}

/// The target [`print_target`] wrote.
fn read_target(text: &str) -> Option<TargetCheck> {
    let mut lines = text.lines();
    let mut field = |name: &str| lines.next()?.strip_prefix(name)?.strip_prefix(": ").map(str::to_string);
    let (triple, cpu, features) = (field("triple")?, field("cpu")?, field("features")?);
    Some(TargetCheck::Target { triple, cpu, features })
}

/// Has `program` check a simulated host's CPU and features against LLVM's
/// lists, which a program that links no code generator does not have:
/// the answer is the target resolved, LLVM's lists for `help`, or the
/// message of a name it does not know (a usage error there, exit status
/// 2), in the words of the setting it came from.
pub fn check_target(program: &Path, cpu: Option<TargetSetting>, features: Option<TargetSetting>) -> TargetCheck {
    let help = [cpu, features].iter().flatten().any(|s| s.value == "help");
    let shown = program.display();
    if let Err(stopped) = crate::interrupt::check() {
        return TargetCheck::Failed(stopped);
    }
    let out = match Command::new(program).args(target_check_flags(cpu, features)).stdin(Stdio::null()).output() {
        Ok(out) => out,
        Err(e) => {
            return TargetCheck::Failed(format!(
                "cannot run {shown} to check the target: {e} (simulated hosts are checked by the {COMPILE_PROGRAM} installed beside this program)"
            ))
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) if help => TargetCheck::Help(stdout.into_owned()),
        Some(0) => read_target(&stdout)
            .unwrap_or_else(|| TargetCheck::Failed(format!("{shown} did not print the target it checked"))),
        Some(2) => {
            let prefix = format!("{COMPILE_PROGRAM}: error: ");
            let said = String::from_utf8_lossy(&out.stderr);
            let said = said.trim();
            TargetCheck::Unknown(said.strip_prefix(&prefix).unwrap_or(said).to_string())
        }
        _ => TargetCheck::Failed(failure(program, out.status, &out.stderr)),
    }
}

/// A compiler process working in the background ([`start`]): nobody waits
/// for it. Dropped while it runs, it is left to finish on its own (a cache
/// fill stores what it compiles whether or not its starter is still
/// there); [`Started::kill`] ends it instead.
#[derive(Debug)]
pub struct Started {
    child: Child,
    program: PathBuf,
    /// Its standard error: a temporary file without a name (nothing is
    /// left behind however the processes end), read once it has ended.
    stderr: std::fs::File,
}

/// How much lower than its starter's a background process's scheduling
/// priority is (a `nice` value): it must not slow the run it serves.
pub const BACKGROUND_NICENESS: i32 = 10;

/// Starts `program` with `args` in the background, `input` on its standard
/// input and its standard output discarded, at a scheduling priority
/// [`BACKGROUND_NICENESS`] lower than this process's.
pub fn start(program: &Path, args: &[String], input: &str) -> Result<Started, String> {
    crate::interrupt::check()?;
    let shown = program.display();
    let stderr = tempfile::tempfile().map_err(|e| format!("cannot make a file for the compiler's messages: {e}"))?;
    let to_child = stderr.try_clone().map_err(|e| format!("cannot make a file for the compiler's messages: {e}"))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(to_child)
        .spawn()
        .map_err(|e| format!("cannot run the compiler {shown}: {e}"))?;
    // Before it reads its input, so before it starts its threads (which
    // inherit the priority). Only a preference: a system that refuses it
    // runs the process at the usual priority.
    let pid = rustix::process::Pid::from_child(&child);
    let ours = rustix::process::getpriority_process(None).unwrap_or(0);
    let _ = rustix::process::setpriority_process(Some(pid), ours + BACKGROUND_NICENESS);
    if let Some(mut stdin) = child.stdin.take() {
        // A write error shows in its exit status.
        let _ = stdin.write_all(input.as_bytes());
    }
    Ok(Started { child, program: program.to_path_buf(), stderr })
}

impl Started {
    /// The process's id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// `None` while the process runs; once it has ended, whether it
    /// succeeded (or why not, as [`run`] says it).
    pub fn poll(&mut self) -> Option<Result<(), String>> {
        let status = match self.child.try_wait() {
            Ok(None) => return None,
            Ok(Some(status)) => status,
            Err(e) => return Some(Err(format!("cannot wait for the compiler {}: {e}", self.program.display()))),
        };
        if status.success() {
            return Some(Ok(()));
        }
        let mut said = Vec::new();
        let _ = std::io::Seek::rewind(&mut self.stderr).and_then(|()| self.stderr.read_to_end(&mut said));
        Some(Err(failure(&self.program, status, &said)))
    }

    /// Ends the process now and reaps it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits for `child`, calling `done` for each progress line of its
/// standard output as it comes; its standard error is read on a thread of
/// its own meanwhile, so that neither pipe can fill and stall the process.
fn wait_reporting(mut child: Child, done: &dyn Fn()) -> std::io::Result<Output> {
    let stderr = child.stderr.take();
    let errors = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut e) = stderr {
            let _ = e.read_to_end(&mut bytes);
        }
        bytes
    });
    let mut stdout = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines() {
            match line {
                Ok(l) if l == DONE_LINE => done(),
                Ok(l) => stdout.extend_from_slice(format!("{l}\n").as_bytes()),
                Err(_) => break,
            }
        }
    }
    let status = child.wait()?;
    let stderr = errors.join().unwrap_or_default();
    Ok(Output { status, stdout, stderr })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_check_asks_with_each_setting_and_reads_the_printed_target() {
        let cpu = TargetSetting { value: "x86-64", from: "KILN_TARGET_CPU" };
        let flags = target_check_flags(Some(cpu), None);
        assert!(flags.contains(&"--target-cpu=x86-64".to_string()), "{flags:?}");
        assert!(flags.contains(&"--target-cpu-from=KILN_TARGET_CPU".to_string()), "{flags:?}");
        assert!(!flags.iter().any(|f| f.starts_with("--target-features")), "{flags:?}");
        assert_eq!(flags.last().map(String::as_str), Some("--print-target"));
        assert!(flags.contains(&format!("--build-id={}", crate::config::BUILD_ID)));
        let printed = print_target("x86_64-pc-linux-gnu", "x86-64", "+sse2,-avx");
        let target =
            |t: &str, c: &str, f: &str| TargetCheck::Target { triple: t.into(), cpu: c.into(), features: f.into() };
        assert_eq!(read_target(&printed), Some(target("x86_64-pc-linux-gnu", "x86-64", "+sse2,-avx")));
        assert_eq!(read_target("triple: t\ncpu: c\n"), None);
        assert_eq!(read_target("cpu: c\ntriple: t\nfeatures: f\n"), None);
    }

    #[test]
    fn file_stems_fit_a_file_name_and_keep_long_names_apart() {
        assert_eq!(file_stem("k.0"), "k.0");
        let long = "é".repeat(150);
        let stem = file_stem(&long);
        assert!(stem.len() <= MAX_FILE_STEM && stem.is_char_boundary(stem.len() - 17), "{stem}");
        assert_ne!(file_stem(&format!("{long}a")), file_stem(&format!("{long}b")));
    }

    #[test]
    fn wanted_round_trips_through_its_flag() {
        for w in [Wanted::Everything, Wanted::Tasks, Wanted::Records(PathBuf::from("/tmp/list"))] {
            let flag = w.flag();
            let value = flag.as_deref().map(|f| f.strip_prefix("--function-records=").unwrap());
            assert_eq!(Wanted::from_flag(value), w);
        }
    }

    #[test]
    fn a_record_list_reads_back_what_was_written() {
        let keys = [Key::from(blake3::hash(b"a")), Key::from(blake3::hash(b"b"))];
        let list = write_record_list(&keys).unwrap();
        assert_eq!(read_record_list(list.path()).unwrap(), keys);
        std::fs::write(list.path(), "\nnot a key\n").unwrap();
        let e = read_record_list(list.path()).unwrap_err();
        assert!(e.ends_with("`not a key` is not a function record's key"), "{e}");
    }
}
