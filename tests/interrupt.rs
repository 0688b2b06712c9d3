//! Ctrl-C and `kill` keep what is done (issue 44): a cold `kiln-run`
//! interrupted between its kernels' compiles stores every task compiled
//! and loaded before the signal, leaves no temporary directory behind,
//! prints one line saying how many tasks it kept, writes no output, and
//! exits with `128 + signal`. Before, it kept nothing and left an empty
//! `kiln-compile.XXXX` directory every time.
//!
//! The run compiles each next kernel ahead, while the one before it is
//! compiled and run: the signal is sent once the first two kernels'
//! records are in the cache, while the third kernel's compile (started
//! ahead when the second began) waits out `KILN_TEST_COMPILE_DELAY`, so
//! the moment does not depend on the machine's speed. That compile is
//! waited for and dropped: the third kernel never ran.

mod common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const RUN: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-run");

/// Three kernels: two tasks, one task and one task.
const KERNELS: &str = "\
field @a : f32[64]
field @b : f32[64]
kernel @first() {
  for %i in 0 .. 64 {
    %v = cast %i to f32
    store @a[%i], %v
  }
  for %j in 0 .. 64 {
    %u = load @a[%j]
    %x = mul %u, %u
    store @b[%j], %x
  }
}
kernel @second() {
  for %i in 0 .. 64 {
    %v = load @b[%i]
    %w = add %v, %v
    store @a[%i], %w
  }
}
kernel @third() {
  for %i in 0 .. 64 {
    %v = load @a[%i]
    %w = sub %v, %v
    store @b[%i], %w
  }
}
";

fn records(cache: &Path) -> usize {
    walkdir::WalkDir::new(cache)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "kobj"))
        .count()
}

/// A cold run of [`KERNELS`] in `lab`, its own process group (so a
/// signal to the group reaches its compiler too, as Ctrl-C does).
fn start(lab: &Path) -> Child {
    std::fs::write(lab.join("three.kir"), KERNELS).unwrap();
    std::fs::create_dir_all(lab.join("tmp")).unwrap();
    let mut c = common::tool(RUN, lab);
    c.arg(lab.join("three.kir"))
        .args(["--print", "@a", "--cache-dir"])
        .arg(lab.join("cache"))
        .env("TMPDIR", lab.join("tmp"))
        .env("KILN_TEST_COMPILE_DELAY", "2s")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    c.spawn().expect("kiln-run starts")
}

/// Waits until the first two kernels' records are stored.
fn two_kernels_stored(lab: &Path) {
    let t0 = Instant::now();
    while records(&lab.join("cache")) < 3 {
        assert!(t0.elapsed() < Duration::from_secs(120), "the first two kernels were never stored");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn interrupted(signal: i32, to_group: bool, status: i32) {
    let lab = tempfile::tempdir().unwrap();
    let child = start(lab.path());
    two_kernels_stored(lab.path());
    let pid = child.id() as i32;
    // SAFETY: kill(2) of the child this test started (or of its own
    // process group, which holds only it and its compiler).
    let r = unsafe { libc::kill(if to_group { -pid } else { pid }, signal) };
    assert_eq!(r, 0);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(status), "{err}");
    assert_eq!(err.trim_end(), "kiln-run: note: interrupted: 3 compiled tasks kept in the cache");
    assert!(out.stdout.is_empty(), "no output after an interrupted run");
    assert_eq!(records(&lab.path().join("cache")), 3, "the first two kernels' tasks, stored");
    let left: Vec<_> = std::fs::read_dir(lab.path().join("tmp")).unwrap().collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    assert_eq!(common::lock_files(&lab.path().join("cache")), 0);
}

#[test]
fn ctrl_c_keeps_the_compiled_tasks_and_removes_temporaries() {
    interrupted(libc::SIGINT, true, 130);
}

#[test]
fn sigterm_keeps_them_too() {
    interrupted(libc::SIGTERM, false, 143);
}
