//! `--time-trace` of kiln-opt, kiln-key, kiln-compile and kiln-run, read
//! back as the Trace Event JSON it is: every span a complete event naming
//! its task; spans on one track nest; the tool's whole-run span is covered
//! by the phases under it to within 5%; a cold run has one compile span
//! per missed task (on the compiler process's own track), a warm one none;
//! a trace that cannot be written is one error, exit 1, and the results
//! are still printed.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tool(name: &str) -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_kiln-opt")).with_file_name(name)
}

fn testdata(name: &str) -> String {
    format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `ten_tasks.kir` with its kernel written `copies` times under new names,
/// in `dir`: an input whose phases take long enough (tens of ms) that the
/// scheduler's gaps between them on a loaded machine stay well under the
/// 5% the coverage check allows (ten_tasks alone runs in about 2 ms).
fn ten_tasks_times(dir: &Path, copies: usize) -> String {
    let text = std::fs::read_to_string(testdata("ten_tasks.kir")).unwrap();
    let at = text.find("kernel @ten_tasks(").expect("ten_tasks' kernel");
    let (fields, kernel) = text.split_at(at);
    let mut out = fields.to_string();
    for i in 0..copies {
        out.push_str(&kernel.replace("kernel @ten_tasks(", &format!("kernel @ten_tasks_{i}(")));
        out.push('\n');
    }
    let path = dir.join("ten_tasks_times.kir");
    std::fs::write(&path, out).unwrap();
    path.display().to_string()
}

/// Runs `name` with `args` and `--time-trace=FILE` (a fresh cache under
/// `dir`); its output and the trace's complete events.
fn traced(dir: &Path, name: &str, args: &[&str]) -> (Output, Vec<Value>) {
    let file = dir.join(format!("{name}.json"));
    let out = Command::new(tool(name))
        .args(args)
        .arg(format!("--time-trace={}", file.display()))
        .env("KILN_CACHE_DIR", dir.join("cache"))
        .env("XDG_CONFIG_HOME", dir.join("no-config"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap().clone();
    let complete: Vec<Value> = events.into_iter().filter(|e| e["ph"] == "X").collect();
    check_spans(name, &complete);
    (out, complete)
}

fn start(e: &Value) -> u64 {
    e["ts"].as_u64().unwrap()
}

fn end(e: &Value) -> u64 {
    start(e) + e["dur"].as_u64().unwrap()
}

/// Time between a tool's phases a loaded scheduler alone can account for.
const UNCOVERED_NOISE_US: u64 = 10_000;

/// Every span names its task; spans of one track (process and thread)
/// nest or are apart; the tool's span is covered by the spans directly
/// under it to within 5% (or to within [`UNCOVERED_NOISE_US`]).
fn check_spans(tool: &str, events: &[Value]) {
    let mut tracks: BTreeMap<(u64, u64), Vec<&Value>> = BTreeMap::new();
    for e in events {
        let task = e["args"]["task"].as_str().unwrap_or_default();
        assert!(!task.is_empty(), "{tool}: a span without its task: {e}");
        tracks.entry((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())).or_default().push(e);
    }
    for spans in tracks.values() {
        for a in spans {
            for b in spans {
                let apart = end(a) <= start(b) || end(b) <= start(a);
                let nested = (start(a) <= start(b) && end(b) <= end(a)) || (start(b) <= start(a) && end(a) <= end(b));
                assert!(apart || nested, "{tool}: spans overlap without nesting: {a} and {b}");
            }
        }
    }
    let root = events.iter().find(|e| e["name"] == tool).expect("the tool's own span");
    let track = (root["pid"].as_u64(), root["tid"].as_u64());
    let under: Vec<&Value> =
        events.iter().filter(|e| (e["pid"].as_u64(), e["tid"].as_u64()) == track && !std::ptr::eq(*e, root)).collect();
    let direct = under.iter().filter(|e| {
        !under
            .iter()
            .any(|o| !std::ptr::eq(*o, **e) && start(o) <= start(e) && end(e) <= end(o) && o["dur"] != e["dur"])
    });
    let covered: u64 = direct.map(|e| e["dur"].as_u64().unwrap()).sum();
    let whole = root["dur"].as_u64().unwrap();
    // A run of a few milliseconds on a loaded machine can lose several to
    // one preemption between two phases (CI saw 4.8 of 14.5 ms): what is
    // left uncovered must be under 5% or under that noise floor.
    assert!(
        covered * 100 >= whole * 95 || whole - covered <= UNCOVERED_NOISE_US,
        "{tool}: the phases cover {covered} of {whole} microseconds"
    );
}

fn named<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["name"] == name).collect()
}

fn tasks_of(events: &[&Value]) -> Vec<String> {
    let mut t: Vec<String> = events.iter().map(|e| e["args"]["task"].as_str().unwrap().to_string()).collect();
    t.sort();
    t
}

#[test]
fn kiln_opt_traces_read_parse_verify_each_pass_and_print() {
    let dir = tempfile::tempdir().unwrap();
    let input = ten_tasks_times(dir.path(), 40);
    let (_, events) = traced(dir.path(), "kiln-opt", &["-O2", &input]);
    for phase in ["read", "parse", "verify", "print"] {
        assert_eq!(named(&events, phase).len(), 1, "{phase}");
    }
    let presets = Command::new(tool("kiln-opt")).arg("--print-passes").output().unwrap().stdout;
    let o2 = String::from_utf8(presets).unwrap();
    let o2 = o2.lines().find(|l| l.trim_start().starts_with("-O2")).unwrap().split_whitespace().last().unwrap();
    for pass in o2.split(',') {
        assert!(!named(&events, pass).is_empty(), "no span for pass {pass}");
    }
}

#[test]
fn kiln_key_traces_the_key_of_each_task() {
    let dir = tempfile::tempdir().unwrap();
    let input = ten_tasks_times(dir.path(), 40);
    let (out, events) = traced(dir.path(), "kiln-key", &[&input]);
    let printed: Vec<String> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| l.split(' ').next().unwrap().to_string()).collect();
    let mut printed: Vec<String> = printed.into_iter().map(|t| t.trim_start_matches('@').to_string()).collect();
    printed.sort();
    assert_eq!(tasks_of(&named(&events, "key")), printed);
    assert_eq!(named(&events, "split").len(), 1);
}

#[test]
fn kiln_compile_traces_each_task_compile() {
    let dir = tempfile::tempdir().unwrap();
    let objs = format!("{}/", dir.path().join("objs").display());
    let (_, events) = traced(dir.path(), "kiln-compile", &[&testdata("saxpy.kir"), "-o", &objs]);
    assert_eq!(tasks_of(&named(&events, "compile")), ["saxpy.0", "saxpy.1"]);
}

/// `--stats=json`'s counters.
fn stats(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stderr);
    serde_json::from_str(text.lines().find(|l| l.starts_with('{')).unwrap()).unwrap()
}

#[test]
fn a_cold_run_has_one_compile_span_per_missed_task_on_the_compilers_track() {
    let dir = tempfile::tempdir().unwrap();
    let input = testdata("ten_tasks.kir");
    let (out, events) = traced(dir.path(), "kiln-run", &["--stats=json", &input]);
    let misses = stats(&out)["misses"].as_u64().unwrap();
    assert!(misses > 0);
    let compiles = named(&events, "compile");
    assert_eq!(compiles.len() as u64, misses, "{compiles:?}");
    let mut distinct = tasks_of(&compiles);
    distinct.dedup();
    assert_eq!(distinct.len() as u64, misses);
    let root = named(&events, "kiln-run")[0];
    assert!(compiles.iter().all(|c| c["pid"] != root["pid"]), "compile spans are on the compiler process's track");
    assert!(!named(&events, "kiln-compile").is_empty());
    let tasks = stats(&out)["tasks"].as_u64().unwrap();
    for phase in ["key", "cache lookup", "load", "launch"] {
        assert!(named(&events, phase).len() as u64 >= tasks, "{phase}");
    }

    let (out, events) = traced(dir.path(), "kiln-run", &["--stats=json", &input]);
    assert_eq!(stats(&out)["misses"], 0);
    assert!(named(&events, "compile").is_empty());
}

#[test]
fn a_trace_that_cannot_be_written_is_one_error_and_the_results_stay() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("no-such-dir").join("t.json");
    let out = Command::new(tool("kiln-key"))
        .arg(format!("--time-trace={}", bad.display()))
        .arg(testdata("saxpy.kir"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("t.json: error: cannot write output: no such file or directory"), "{stderr}");
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 2, "the keys are printed");
}

#[test]
fn without_a_file_the_trace_is_named_after_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(tool("kiln-opt"))
        .args(["--time-trace", &testdata("saxpy.kir")])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = std::fs::read_to_string(dir.path().join("saxpy.time-trace.json")).unwrap();
    assert!(serde_json::from_str::<Value>(&text).is_ok());
}
