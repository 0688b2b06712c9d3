//! The key's invariants, one test each: what must leave a task's key alone
//! and what must change it.

mod common;

use kiln::config::CompileConfig;
use kiln::key::{self, Key, KeySet};
use std::collections::BTreeMap;

const BASE: &str = "\
field @x : f32[1024]
field @y : f32[1024]

func @twice(%v: f32) -> f32 {
  %r = add %v, %v
  ret %r
}

kernel @k(%a: f32 = 2.0, %n: i32 = 1024) {
  for %i in 0 .. %n {
    %xi = load @x[%i]
    %t = mul %a, %xi
    %u = call @twice(%t)
    store @y[%i], %u
  }
  for %j in 0 .. 1024 {
    %yj = load @y[%j]
    %c = const 3.0 : f32
    %s = add %yj, %c
    store @x[%j], %s
  }
}
";

fn keys_with(text: &str, cfg: &CompileConfig) -> BTreeMap<String, Key> {
    let stream = kiln::parser::parse(text).unwrap_or_else(|d| panic!("parse: {d}\n{text}"));
    kiln::verifier::verify(&stream).unwrap_or_else(|d| panic!("verify: {d}\n{text}"));
    let stream = kiln::passes::to_task_stream(stream).unwrap_or_else(|d| panic!("pipeline: {d}\n{text}"));
    KeySet::of_stream(&stream, cfg).tasks.into_iter().map(|t| (t.task, t.key)).collect()
}

fn keys(text: &str) -> BTreeMap<String, Key> {
    keys_with(text, &CompileConfig::default())
}

/// The base has two tasks, and the keys of all variants below are compared
/// task by task.
fn base() -> BTreeMap<String, Key> {
    let k = keys(BASE);
    assert_eq!(k.keys().collect::<Vec<_>>(), ["k.0", "k.1"]);
    assert_ne!(k["k.0"], k["k.1"]);
    k
}

#[test]
fn renaming_values_leaves_keys_unchanged() {
    let renamed = BASE
        .replace("%xi", "%load_x")
        .replace("%t ", "%prod ")
        .replace("%t)", "%prod)")
        .replace("%v", "%value")
        .replace("%r", "%res")
        .replace("%a", "%alpha")
        .replace("%j", "%jj");
    assert_ne!(renamed, BASE);
    assert_eq!(keys(&renamed), base());
}

#[test]
fn reformatting_leaves_keys_unchanged() {
    let reformatted = BASE.replace("  ", "      ").replace(", ", " ,  ").replace("{\n", "{\n\n");
    assert_ne!(reformatted, BASE);
    assert_eq!(keys(&reformatted), base());
}

#[test]
fn comments_leave_keys_unchanged() {
    let commented = BASE
        .replace("field @y", "; the output\nfield @y")
        .replace("store @y[%i], %u", "store @y[%i], %u ; write back")
        .replace("kernel @k", "; a kernel\n; of two loops\nkernel @k");
    assert_ne!(commented, BASE);
    assert_eq!(keys(&commented), base());
}

#[test]
fn reordering_unrelated_items_leaves_keys_unchanged() {
    let func = "func @twice(%v: f32) -> f32 {\n  %r = add %v, %v\n  ret %r\n}\n\n";
    let reordered = format!(
        "field @y : f32[1024]\n\n{}field @x : f32[1024]\n\n{}",
        func,
        BASE.split_once("kernel @k").map(|(_, k)| format!("kernel @k{k}")).expect("base has a kernel")
    );
    assert_ne!(reordered, BASE);
    assert_eq!(keys(&reordered), base());
}

#[test]
fn adding_an_unused_field_or_function_leaves_keys_unchanged() {
    let more = format!("field @unused : i64[7]\nfunc @other() {{\n  ret\n}}\n\n{BASE}");
    assert_eq!(keys(&more), base());
}

#[test]
fn editing_a_different_task_leaves_its_key_unchanged() {
    let edited = keys(&BASE.replace("const 3.0 : f32", "const 4.0 : f32"));
    let base = base();
    assert_eq!(edited["k.0"], base["k.0"]);
    assert_ne!(edited["k.1"], base["k.1"]);
}

#[test]
fn changing_a_constant_changes_the_key() {
    let edited = keys(&BASE.replace("0 .. 1024", "0 .. 1000"));
    assert_ne!(edited["k.1"], base()["k.1"]);
    let edited = keys(&BASE.replace("%r = add %v, %v", "%r = mul %v, %v"));
    assert_ne!(edited["k.0"], base()["k.0"], "a called function is part of the task");
    assert_eq!(edited["k.1"], base()["k.1"], "a function the task does not call is not");
}

/// Tasks that call through chains of functions: `k.0` reaches `@inner`
/// through `@outer`, `k.1` calls `@other`, `k.2` calls nothing.
const CHAINS: &str = "\
field @x : f32[64]

func @inner(%v: f32) -> f32 {
  %r = add %v, %v
  ret %r
}

func @outer(%v: f32) -> f32 {
  %r = call @inner(%v)
  ret %r
}

func @other(%v: f32) -> f32 {
  %r = mul %v, %v
  ret %r
}

kernel @k() {
  for %i in 0 .. 64 {
    %xi = load @x[%i]
    %u = call @outer(%xi)
    store @x[%i], %u
  }
  for %j in 0 .. 64 {
    %xj = load @x[%j]
    %w = call @other(%xj)
    store @x[%j], %w
  }
  for %l in 0 .. 64 {
    %c = const 1.0 : f32
    store @x[%l], %c
  }
}
";

#[test]
fn editing_a_callee_changes_exactly_the_keys_of_the_tasks_that_reach_it() {
    let base = keys(CHAINS);
    assert_eq!(base.keys().collect::<Vec<_>>(), ["k.0", "k.1", "k.2"]);
    // A callee's callee, two calls down.
    let edited = keys(&CHAINS.replacen("%r = add %v, %v", "%r = sub %v, %v", 1));
    assert_ne!(edited["k.0"], base["k.0"], "k.0 reaches @inner through @outer");
    assert_eq!(edited["k.1"], base["k.1"]);
    assert_eq!(edited["k.2"], base["k.2"]);
    // A function called directly by another task.
    let edited = keys(&CHAINS.replace("%r = mul %v, %v", "%r = add %v, %v"));
    assert_eq!(edited["k.0"], base["k.0"]);
    assert_ne!(edited["k.1"], base["k.1"], "k.1 calls @other");
    assert_eq!(edited["k.2"], base["k.2"]);
}

#[test]
fn changing_a_type_changes_the_key() {
    let edited = keys(&BASE.replace("%n: i32 = 1024", "%n: i64 = 1024"));
    assert_ne!(edited["k.0"], base()["k.0"]);
    assert_eq!(edited["k.1"], base()["k.1"]);
    let half = keys(&BASE.replace("f32", "f16"));
    assert!(half["k.0"] != base()["k.0"] && half["k.1"] != base()["k.1"], "f16 is a type of its own");
    // Neighbouring f16 constants (3.0 and the next, 3.00195...) differ in
    // the canonical text, as their shortest decimals.
    let next = keys(&BASE.replace("f32", "f16").replace("const 3.0 : f16", "const 3.002 : f16"));
    assert_ne!(next["k.1"], half["k.1"]);
    assert_eq!(next["k.0"], half["k.0"]);
}

#[test]
fn changing_a_used_fields_shape_changes_the_key() {
    let edited = keys(&BASE.replace("field @x : f32[1024]", "field @x : f32[2048]"));
    let base = base();
    assert_ne!(edited["k.0"], base["k.0"]);
    assert_ne!(edited["k.1"], base["k.1"]);
}

#[test]
fn changing_any_configuration_field_changes_every_key() {
    let base = base();
    let default = serde_json::to_value(CompileConfig::default()).expect("serialises");
    let fields = default.as_object().expect("a struct").clone();
    assert!(fields.len() >= 7, "every field of CompileConfig is covered: {fields:?}");
    for (name, value) in fields {
        // Another value of the same type, found generically so that a field
        // added to CompileConfig is covered without editing this test.
        let candidates: Vec<serde_json::Value> = match &value {
            serde_json::Value::Bool(b) => vec![(!b).into()],
            serde_json::Value::Number(n) => vec![(n.as_u64().unwrap_or(0) + 1).into()],
            serde_json::Value::String(s) => {
                ["O0", "O1", "O2", "O3", "Default", "Small", "Large", "Preserve", "Flush", "other"]
                    .iter()
                    .map(|c| (*c).into())
                    .chain([format!("{s}x").into()])
                    .collect()
            }
            other => panic!("configuration field {name} has an unexpected JSON form {other}"),
        };
        let changed = candidates
            .into_iter()
            .filter(|c| *c != value)
            .find_map(|c| {
                let mut v = default.clone();
                v[&name] = c;
                serde_json::from_value::<CompileConfig>(v).ok()
            })
            .unwrap_or_else(|| panic!("no other value for {name}"));
        assert_ne!(changed, CompileConfig::default());
        let k = keys_with(BASE, &changed);
        for task in ["k.0", "k.1"] {
            assert_ne!(k[task], base[task], "changing {name} must change the key of {task}");
        }
    }
}

#[test]
fn identical_tasks_in_different_kernels_share_a_key() {
    let text = "\
field @x : f32[64]
field @y : f32[64]

kernel @first(%a: f32 = 1.0) {
  for %i in 0 .. 64 {
    %v = load @x[%i]
    %w = mul %v, %a
    store @y[%i], %w
  }
}

kernel @second(%scale: f32 = 3.0, %unused: i32 = 0) {
  %z = const 0 : i32
  store @x[%z], %scale
  for %q in 0 .. 64 {
    %vv = load @x[%q]
    %ww = mul %vv, %scale
    store @y[%q], %ww
  }
}
";
    let k = keys(text);
    assert_eq!(k["first.0"], k["second.1"], "same loop, other kernel, names and parameter position");
    assert_ne!(k["second.0"], k["second.1"]);
}

#[test]
fn an_already_split_stream_is_keyed_as_it_is() {
    let stream = kiln::passes::to_task_stream(kiln::parser::parse(BASE).expect("parses")).expect("splits");
    let printed = stream.to_string();
    assert_eq!(keys(&printed), base(), "keying the split text gives the same keys");
}

#[test]
fn explain_shows_exactly_what_was_hashed() {
    let stream = kiln::passes::to_task_stream(kiln::parser::parse(BASE).expect("parses")).expect("splits");
    let (m, t) = stream.find_task("k.0").expect("task k.0");
    let cfg = CompileConfig::default();
    let e = key::explain(m, t, &cfg);
    assert_eq!(e.key, key::task_key(m, t, &cfg));
    assert_eq!(e.key, key::key_of_text(&e.text, &cfg));
    assert_eq!(e.config_json, serde_json::to_string(&cfg).expect("serialises"));
    let names: Vec<&str> = e.config_fields.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "opt_level",
            "fast_math",
            "bounds_checks",
            "code_model",
            "denormals",
            "record_version",
            "kiln_version",
            "llvm_version",
            "build_id"
        ],
        "each field, in declared order"
    );
    assert!(e.text.contains("task @task of @kernel(%0: f32, %1: i32) range_for %2 in 0 .. %1"), "{}", e.text);
    assert!(e.text.contains("func @twice(%0: f32) -> f32"), "{}", e.text);
    // The canonical text is KIR that reads back to itself.
    let again = kiln::parser::parse(&e.text).expect("canonical text parses");
    assert_eq!(again.to_string(), e.text);
}

#[test]
fn diff_names_the_changed_task_and_why() {
    let cfg = CompileConfig::default();
    let set = |text: &str, cfg: &CompileConfig| {
        KeySet::of_stream(
            &kiln::passes::to_task_stream(kiln::parser::parse(text).expect("parses")).expect("splits"),
            cfg,
        )
    };
    let old = set(BASE, &cfg);
    let new = set(&BASE.replace("const 3.0 : f32", "const 4.0 : f32"), &cfg);
    let d = key::diff(&old, &new);
    assert_eq!(d[0], ("k.0".to_string(), key::Change::Unchanged));
    match &d[1] {
        (t, key::Change::Changed { text: Some(Some((_, a, b))), config, format: false }) => {
            assert_eq!(t, "k.1");
            assert!(a.contains("3.0") && b.contains("4.0"), "{a} -> {b}");
            assert!(config.is_empty());
        }
        other => panic!("unexpected {other:?}"),
    }
    let o3 = CompileConfig { opt_level: kiln::config::OptLevel::O3, ..cfg.clone() };
    let d = key::diff(&old, &set(BASE, &o3));
    assert!(d.iter().all(|(_, c)| matches!(c, key::Change::Changed { text: None, config, .. } if config.len() == 1)));
}

/// The canonical text is the printer's, through the renumbering namer: on
/// every testdata file and on generated kernels it parses and verifies,
/// is its own canonical text (numbering in definition order is what the
/// parser reads back), and does not see the values' names.
#[test]
fn canonical_text_is_a_fixed_point_and_ignores_value_names() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut inputs: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("testdata")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "kir"))
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).expect("readable")))
        .collect();
    let cfg = common::kernelgen::GenConfig::default();
    inputs.extend((0..300u64).map(|seed| (format!("generated seed {seed}"), common::kernelgen::generate(seed, &cfg))));
    let mut tasks = 0;
    for (name, text) in &inputs {
        let Ok(stream) = kiln::parser::parse(text) else { continue };
        if kiln::verifier::verify(&stream).is_err() {
            continue;
        }
        let stream = kiln::passes::to_task_stream(stream).unwrap_or_else(|d| panic!("{name}: {d}"));
        for m in &stream.modules {
            for t in m.tasks() {
                let canon = key::canonical_text(m, t);
                let again = kiln::parser::parse(&canon).unwrap_or_else(|d| panic!("{name}: {d}\n{canon}"));
                kiln::verifier::verify(&again).unwrap_or_else(|d| panic!("{name}: {d}\n{canon}"));
                let m2 = &again.modules[0];
                let t2 = m2.tasks().next().expect("the task");
                assert_eq!(key::canonical_text(m2, t2), canon, "{name}: task @{} is not a fixed point", t.name);
                let mut renamed = m.clone();
                for it in &mut renamed.items {
                    let body = match it {
                        kiln::ir::Item::Func(f) => &mut std::sync::Arc::make_mut(f).body,
                        kiln::ir::Item::Task(t) => &mut t.body,
                        _ => continue,
                    };
                    for v in body.values_mut() {
                        v.name = format!("renamed_{}", v.name).into();
                    }
                }
                let t3 = renamed.task(&t.name).expect("the task");
                assert_eq!(key::canonical_text(&renamed, t3), canon, "{name}: task @{} sees value names", t.name);
                tasks += 1;
            }
        }
    }
    assert!(tasks > 300, "only {tasks} tasks compared");
}

/// A task module of a split stream is keyed as codegen compiles it: its
/// fields, in order, are the object's field arguments, so an extra field
/// there is another object (a kernel file never gets one: split-tasks gives
/// each task module exactly the fields it touches).
#[test]
fn a_split_task_modules_own_fields_are_part_of_its_key() {
    let split = kiln::passes::to_task_stream(kiln::parser::parse(BASE).expect("parses")).expect("splits").to_string();
    let extra = split.replacen("module @k.0 {\n", "module @k.0 {\n  field @zzz : i32\n", 1);
    assert_ne!(extra, split);
    let (k, base) = (keys(&extra), base());
    assert_ne!(k["k.0"], base["k.0"]);
    assert_eq!(k["k.1"], base["k.1"]);
}
