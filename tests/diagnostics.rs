//! Bounded diagnostics (issue 28): generated inputs with thousands of
//! errors, some on one long line, end after the error limit with a few
//! kilobytes of standard error, under a memory cap, from every tool that
//! reads KIR; `-ferror-limit=N` (and `--error-limit N`) sets the limit and
//! 0 lifts it.

mod common;

use common::tool;
use std::path::Path;
use std::process::Output;

const OPT: &str = env!("CARGO_BIN_EXE_kiln-opt");
const KEY: &str = env!("CARGO_BIN_EXE_kiln-key");
const COMPILE: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-compile");
const RUN: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-run");

const STOP: &str = "error: too many errors emitted, stopping now [-ferror-limit=]";

/// One kernel that defines `%b` `n` times, `per_line` definitions a line.
fn duplicates(n: usize, per_line: usize) -> String {
    let mut s = String::from("kernel @k() {\n");
    for i in 0..n {
        s.push_str("%b = const 1 : i32");
        s.push(if (i + 1) % per_line == 0 { '\n' } else { ' ' });
    }
    s.push_str("\n}\n");
    s
}

/// Runs `bin` on `text` (written to a file) with `args`, its address space
/// capped at 2 GiB.
fn run(bin: &str, dir: &Path, text: &str, args: &[&str]) -> Output {
    let file = dir.join("in.kir");
    std::fs::write(&file, text).unwrap();
    let mut c = tool(bin, dir);
    c.arg(&file).args(args);
    common::cap_memory(&mut c, 2 << 30);
    c.output().unwrap()
}

fn errors(stderr: &str) -> usize {
    stderr.lines().filter(|l| l.contains(": error: ") && !l.ends_with(STOP)).count()
}

#[test]
fn many_errors_stop_at_the_limit_with_bounded_output() {
    let dir = tempfile::tempdir().unwrap();
    // 20,000 one per line; 2,000 on one line; 100,000 on one line (1.9 MB).
    for (n, per_line) in [(20_000, 1), (2_000, 2_000), (100_000, 100_000)] {
        let out = run(OPT, dir.path(), &duplicates(n, per_line), &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{n}x{per_line}: {}", &err[..err.len().min(2000)]);
        assert!(out.stderr.len() < 16 * 1024, "{n}x{per_line}: {} bytes of stderr", out.stderr.len());
        assert!(err.trim_end().ends_with(STOP), "{n}x{per_line}: {err}");
        assert_eq!(errors(&err), 20, "{n}x{per_line}: {err}");
        // Every excerpt is a window: no line much over its width.
        let widest = err.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest < 300, "{n}x{per_line}: a line of {widest} characters");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn the_limit_is_a_flag_of_every_tool_that_reads_kir() {
    let dir = tempfile::tempdir().unwrap();
    let text = duplicates(50, 1);
    for bin in [OPT, KEY, COMPILE, RUN] {
        for (args, want) in
            [(&["-ferror-limit=3"][..], 3), (&["--error-limit", "5"][..], 5), (&["-ferror-limit", "0"][..], 49)]
        {
            let out = run(bin, dir.path(), &text, args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{bin} {args:?}: {err}");
            assert_eq!(errors(&err), want, "{bin} {args:?}: {err}");
            assert_eq!(err.contains(STOP), want != 49, "{bin} {args:?}: {err}");
        }
        let out = run(bin, dir.path(), &text, &["-ferror-limit=x"]);
        assert_eq!(out.status.code(), Some(2), "{bin}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
