//! The four consumers of `passes::to_task_stream` agree: `kiln-key`,
//! `kiln-compile --cache-dir` and `kiln-run --engine jit --cache-dir`
//! report the same task names and keys for a split, an unsplit and a mixed
//! stream (one split kernel, one unsplit), and `kiln-run --engine interp`
//! (which runs the stream as written) computes the same fields as the JIT.
//! Before `to_task_stream`, the mixed stream got four behaviours:
//! `kiln-key` failed, `kiln-compile` compiled the split task only, the
//! interpreter ran both kernels and the JIT failed at run time.

mod common;

use common::{kiln_key_tasks, ok, tool};
use kiln::cache::inspect::{Cache, InspectOptions};
use kiln::cache::Key;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const RUN: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-run");
const COMPILE: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-compile");

/// A kernel file: `@fill` is a loop, `@count` a serial store.
const UNSPLIT: &str = "\
field @n : i32
field @x : i32[4]

kernel @fill(%c: i32 = 7) {
  for %i in 0 .. 4 {
    store @x[%i], %c
  }
}

kernel @count() {
  %three = const 3 : i32
  store @n[], %three
}
";

/// `@count` already split (its task module and its launch), `@fill` not.
const MIXED: &str = "\
module @count.0 {
  field @n : i32

  task @count.0 of @count() serial {
    %three = const 3 : i32
    store @n[], %three
  }
}

module @main {
  field @n : i32
  field @x : i32[4]

  kernel @fill(%c: i32 = 7) {
    for %i in 0 .. 4 {
      store @x[%i], %c
    }
  }

  kernel @count() {
    launch @count.0
  }
}
";

type Tasks = BTreeSet<(String, Key)>;

/// `kiln-key -O0`: (task, key) of every task.
fn key_tasks(home: &Path, file: &Path) -> Tasks {
    kiln_key_tasks(home, file).into_iter().collect()
}

/// (task, key) of every record in a cache, as its launch metadata names
/// the task.
fn cached_tasks(cache: &Path) -> Tasks {
    let listing = Cache::open(cache, &InspectOptions::default()).expect("a cache").list().expect("list");
    listing.scopes.iter().flat_map(|s| &s.records).map(|r| (r.task.clone().expect("a sound record"), r.key)).collect()
}

fn compile_tasks(home: &Path, file: &Path) -> Tasks {
    let cache = home.join("compiled");
    let mut c = tool(COMPILE, home);
    c.arg(file).args(["-O0", "--cache-dir"]).arg(&cache);
    ok(c);
    cached_tasks(&cache)
}

/// The JIT's tasks (from the records it stored) and its printed fields.
fn jit_run(home: &Path, file: &Path) -> (Tasks, String) {
    let cache = home.join("jit");
    let mut c = tool(RUN, home);
    c.arg(file).args(["-O0", "--threads", "1", "--print", "@x", "--print", "@n", "--cache-dir"]).arg(&cache);
    let printed = String::from_utf8(ok(c).stdout).unwrap();
    (cached_tasks(&cache), printed)
}

fn interp_run(home: &Path, file: &Path) -> String {
    let mut c = tool(RUN, home);
    c.arg(file).args(["--engine", "interp", "--print", "@x", "--print", "@n"]);
    String::from_utf8(ok(c).stdout).unwrap()
}

/// Runs the four consumers on `text`; checks that they agree and returns
/// the tasks.
fn agree(name: &str, text: &str) -> Tasks {
    let tmp = tempfile::tempdir().unwrap();
    let file: PathBuf = tmp.path().join(format!("{name}.kir"));
    std::fs::write(&file, text).unwrap();
    let keyed = key_tasks(tmp.path(), &file);
    assert_eq!(compile_tasks(tmp.path(), &file), keyed, "{name}: kiln-compile and kiln-key");
    let (jit, printed) = jit_run(tmp.path(), &file);
    assert_eq!(jit, keyed, "{name}: the JIT and kiln-key");
    assert_eq!(printed, "@x : i32[4] = [7, 7, 7, 7]\n@n : i32 = 3\n", "{name}: the JIT's fields");
    assert_eq!(interp_run(tmp.path(), &file), printed, "{name}: the interpreter and the JIT");
    keyed
}

fn names(tasks: &Tasks) -> Vec<&str> {
    tasks.iter().map(|(t, _)| t.as_str()).collect()
}

#[test]
fn split_unsplit_and_mixed_streams_get_the_same_tasks_everywhere() {
    let unsplit = agree("unsplit", UNSPLIT);
    assert_eq!(names(&unsplit), ["count.0", "fill.0"]);
    // The unsplit file's own per-task form, printed, is the split input.
    let stream = kiln::parser::parse(UNSPLIT).unwrap();
    let split_text = kiln::passes::to_task_stream(stream).unwrap().to_string();
    assert_eq!(agree("split", &split_text), unsplit);
    // The mixed stream's split task keeps its key, and its unsplit kernel
    // gets the task (and key) it gets in the kernel file.
    assert_eq!(agree("mixed", MIXED), unsplit);
}

#[test]
fn a_task_made_from_a_mixed_stream_may_not_take_an_existing_name() {
    // `@fill`'s first task would be `@fill.0`, which a module already is.
    let clash = MIXED.replace("@count.0", "@fill.0");
    let stream = kiln::parser::parse(&clash).unwrap();
    kiln::verifier::verify(&stream).unwrap();
    let err = kiln::passes::to_task_stream(stream).expect_err("two modules @fill.0").to_string();
    assert!(err.contains("fill.0"), "{err}");
}
