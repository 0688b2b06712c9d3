//! `kiln-reduce` end to end, as the issue asks: a generated kernel of 500
//! statements whose result differs between the JIT and the interpreter
//! because of one planted statement shrinks to at most 10 statements, and
//! a reproducer of an error message (a script that greps for it) shrinks;
//! the result verifies and is still interesting; the input is untouched.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const REDUCE: &str = env!("CARGO_BIN_EXE_kiln-reduce");
const OPT: &str = env!("CARGO_BIN_EXE_kiln-opt");

fn bin_dir() -> &'static Path {
    Path::new(REDUCE).parent().expect("binaries have a directory")
}

/// A kernel of 4 loops of 31 groups of 4 statements (a constant, a
/// multiply, an add, a store to the loop's own element: no two iterations
/// touch the same element), plus `planted`, a few statements inside the
/// third loop: 500 statements and more.
fn generated(planted: &str) -> String {
    let mut t = String::from("field @a : i32[64]\nfield @b : i32[64]\nfield @out : i32[4]\n\n");
    t.push_str("kernel @gen(%n: i32 = 64, %k: i32 = 5) {\n");
    for l in 0..4 {
        let _ = writeln!(t, "  for %i{l} in 0 .. %n {{");
        for g in 0..31 {
            let field = if g % 2 == 0 { "@a" } else { "@b" };
            let _ = writeln!(t, "    %c{l}_{g} = const {} : i32", g + 3);
            let _ = writeln!(t, "    %m{l}_{g} = mul %i{l}, %c{l}_{g}");
            let _ = writeln!(t, "    %s{l}_{g} = add %m{l}_{g}, %k");
            let _ = writeln!(t, "    store {field}[%i{l}], %s{l}_{g}");
            if l == 2 && g == 15 {
                t.push_str(&planted.replace("%i", "%i2"));
            }
        }
        t.push_str("  }\n");
    }
    t.push_str("}\n");
    t
}

/// Writes an executable `sh` script.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn reduce(dir: &Path, test: &Path, input: &Path, jobs: &str) -> (Output, String) {
    let out = dir.join("reduced.kir");
    let run = Command::new(REDUCE)
        .arg("--test")
        .arg(test)
        .arg("--test-arg")
        .arg(bin_dir())
        .args(["-j", jobs, "--timeout", "60s"])
        .arg(input)
        .arg("-o")
        .arg(&out)
        .env("KILN_CACHE_DIR", dir.join("cache"))
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    (run, text)
}

/// Statements in canonical text: every line of a body but braces.
fn statements(text: &str) -> usize {
    text.lines().filter(|l| l.starts_with("  ") && l.trim() != "}" && !l.trim().starts_with("} else")).count()
}

/// Whether `test` finds `text` interesting, run as kiln-reduce runs it.
fn interesting(dir: &Path, test: &Path, text: &str) -> bool {
    let path = dir.join("check.kir");
    std::fs::write(&path, text).unwrap();
    let status = Command::new(test).arg(bin_dir()).arg(&path).env("KILN_CACHE_DIR", dir.join("cache")).status();
    status.unwrap().success()
}

fn verifies(text: &str, dir: &Path) -> bool {
    let path = dir.join("verify.kir");
    std::fs::write(&path, text).unwrap();
    Command::new(OPT).arg(&path).output().unwrap().status.success()
}

#[test]
fn a_planted_jit_interpreter_disagreement_shrinks_to_a_few_statements() {
    let dir = tempfile::tempdir().unwrap();
    // The planted statement: every iteration stores to @out[0], so which
    // one is last differs between the JIT (one thread, ascending) and the
    // interpreter asked to run iterations in descending order.
    let input_text = generated("    %z = const 0 : i32\n    store @out[%z], %i\n");
    let input = dir.path().join("gen.kir");
    std::fs::write(&input, &input_text).unwrap();
    let canonical = Command::new(OPT).arg(&input).output().unwrap().stdout;
    let before = statements(&String::from_utf8(canonical).unwrap());
    assert!(before >= 500, "the generated kernel has {before} statements");
    let test = script(
        dir.path(),
        "disagree.sh",
        r#"jit=$("$1/kiln-run" --no-cache --threads 1 --print @out "$2") || exit 1
interp=$("$1/kiln-run" --engine interp --iteration-order descending --print @out "$2") || exit 1
[ "$jit" != "$interp" ]"#,
    );
    assert!(interesting(dir.path(), &test, &input_text), "the planted disagreement is not there");
    assert!(!interesting(dir.path(), &test, &generated("")), "the kernel disagrees without the planted statement");

    let (run, reduced) = reduce(dir.path(), &test, &input, "2");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(statements(&reduced) <= 10, "{reduced}\n{stderr}");
    assert!(reduced.contains("store @out["), "{reduced}");
    assert!(verifies(&reduced, dir.path()), "{reduced}");
    assert!(interesting(dir.path(), &test, &reduced), "{reduced}");
    assert!(stderr.contains(&format!("{before} -> {} statements", statements(&reduced))), "{stderr}");
    assert_eq!(std::fs::read_to_string(&input).unwrap(), input_text, "the input was changed");
}

#[test]
fn an_error_message_reproducer_shrinks_the_same_whatever_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let input_text = generated("    %big = const 100 : i32\n    store @b[%big], %i\n");
    let input = dir.path().join("gen.kir");
    std::fs::write(&input, &input_text).unwrap();
    let test = script(
        dir.path(),
        "crash.sh",
        r#""$1/kiln-run" --engine interp "$2" 2>&1 | grep -q "out of bounds for field @b""#,
    );
    let (run, one) = reduce(dir.path(), &test, &input, "1");
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let (run, three) = reduce(dir.path(), &test, &input, "3");
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(one, three, "the output depends on -j");
    assert!(statements(&one) <= 4, "{one}");
    assert!(verifies(&one, dir.path()) && interesting(dir.path(), &test, &one), "{one}");
}

#[test]
fn ctrl_c_leaves_the_best_result_so_far_in_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let input_text = generated("    %z = const 0 : i32\n    store @out[%z], %i\n");
    let input = dir.path().join("gen.kir");
    std::fs::write(&input, &input_text).unwrap();
    // Slow enough that the reduction is still going when interrupted.
    let test = script(dir.path(), "slow.sh", r#"sleep 0.2; grep -q "store @out" "$2""#);
    let out = dir.path().join("reduced.kir");
    let mut child = Command::new(REDUCE)
        .arg("--test")
        .arg(&test)
        .arg("--test-arg")
        .arg(bin_dir())
        .args(["-j", "2"])
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first better result is written once the input was found
    // interesting and a first candidate accepted.
    while std::fs::read_to_string(&out).ok().is_none_or(|t| statements(&t) >= 500) {
        assert!(child.try_wait().unwrap().is_none(), "kiln-reduce ended before it was interrupted");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: signals the child this test started, by its pid.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let run = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted: "), "{stderr}");
    let kept = std::fs::read_to_string(&out).unwrap();
    assert!(statements(&kept) < 500 && verifies(&kept, dir.path()), "{kept}");
    assert!(kept.contains("store @out"), "{kept}");
}
