//! Unit tests of the reduction loop with small shell scripts as oracles.

use super::*;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

static NEVER: AtomicBool = AtomicBool::new(false);

/// An executable `sh` script with `body` in a fresh directory.
fn script(dir: &tempfile::TempDir, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.path().join("test.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn parse(text: &str) -> Stream {
    let s = crate::parser::parse(text).unwrap();
    crate::verifier::verify(&s).unwrap();
    s
}

#[derive(Default)]
struct Kept(Vec<String>);

impl Observer for Kept {
    fn progress(&mut self, _: &Progress) {}
    fn better(&mut self, text: &str) -> io::Result<()> {
        self.0.push(text.to_string());
        Ok(())
    }
}

const INPUT: &str = "\
field @x : f32[64]
field @y : i32[8, 8]

func @twice(%a: f32) -> f32 {
  %r = add %a, %a
  ret %r
}

kernel @k(%n: i32 = 64, %s: f32 = 2.5) {
  for %i in 0 .. %n {
    %f = cast %i to f32
    %g = call @twice(%f)
    %h = mul %g, %s
    store @x[%i], %h
  }
  %c = const 7 : i32
  %z = const 3 : i32
  store @y[%z, %z], %c
  %b = cmp lt %z, %c
  if %b {
    %w = const 1.5 : f32
    store @x[%c], %w
  }
}
";

fn run(body: &str, jobs: usize) -> (Result<Outcome, ReduceError>, Kept) {
    let dir = tempfile::tempdir().unwrap();
    let oracle = Oracle::new(script(&dir, body), vec![], Duration::from_secs(20), &NEVER).unwrap();
    let mut kept = Kept::default();
    let out = reduce(&parse(INPUT), &oracle, jobs, &mut kept);
    (out, kept)
}

#[test]
fn keeps_what_the_script_looks_for_and_drops_the_rest() {
    let (out, kept) = run("grep -q 'store @y' \"$1\"", 2);
    let out = out.unwrap();
    assert!(out.text.contains("store @y"), "{}", out.text);
    assert!(!out.text.contains("@twice") && !out.text.contains("for "), "{}", out.text);
    assert!(out.after.statements <= 2, "{}", out.text);
    assert!(out.after < out.before);
    // Every better result was kept, the last one is the outcome.
    assert_eq!(kept.0.last(), Some(&out.text));
    parse(&out.text);
}

#[test]
fn the_result_does_not_depend_on_jobs() {
    let test = "grep -q 'call @twice' \"$1\" && grep -q 'mul' \"$1\"";
    let one = run(test, 1).0.unwrap().text;
    let three = run(test, 3).0.unwrap().text;
    assert_eq!(one, three);
    assert!(one.contains("call @twice") && one.contains("mul"), "{one}");
}

#[test]
fn loop_bounds_and_constants_and_shapes_shrink() {
    // Interesting as long as a loop is left: everything else may go.
    let out = run("grep -q 'for ' \"$1\"", 2).0.unwrap();
    assert!(out.text.contains("for %i in 0 .. 1 {"), "{}", out.text);
    assert!(!out.text.contains("%n") && !out.text.contains("@y"), "{}", out.text);
}

#[test]
fn a_script_not_interested_in_the_input_is_an_error() {
    match run("exit 3", 1).0 {
        Err(ReduceError::NotInteresting(status)) => assert!(status.contains('3'), "{status}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_script_that_hangs_on_the_input_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let oracle = Oracle::new(script(&dir, "sleep 30"), vec![], Duration::from_millis(200), &NEVER).unwrap();
    let out = reduce(&parse(INPUT), &oracle, 1, &mut Kept::default());
    assert!(matches!(out, Err(ReduceError::Hangs)), "{out:?}");
}

#[test]
fn scripts_that_cannot_run_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert!(find_script(dir.path().join("nope").to_str().unwrap()).unwrap_err().0.contains("not found"));
    let plain = dir.path().join("plain.sh");
    std::fs::write(&plain, "#!/bin/sh\n").unwrap();
    assert!(find_script(plain.to_str().unwrap()).unwrap_err().0.contains("not executable"));
    assert!(find_script(dir.path().to_str().unwrap()).unwrap_err().0.contains("regular file"));
    assert!(find_script("sh").is_ok());
}

#[test]
fn the_size_orders_what_the_passes_change() {
    let before = Size::of(&parse(INPUT));
    for shrink in SHRINKS {
        let s = parse(INPUT);
        let targets = shrink.targets(&s);
        assert!(!targets.is_empty(), "{} finds nothing to change", shrink.name);
        // Each target alone, when it verifies, makes the stream smaller.
        let mut valid = 0;
        for t in &targets {
            let text = shrink.apply(&s, std::slice::from_ref(t)).to_string();
            let Ok(c) = crate::parser::parse(&text) else { continue };
            if crate::verifier::verify(&c).is_ok() {
                valid += 1;
                assert!(Size::of(&c) < before, "{}: {text}", shrink.name);
            }
        }
        assert!(valid > 0, "{} never gives a valid candidate", shrink.name);
    }
}
