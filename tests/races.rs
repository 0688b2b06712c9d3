//! The interpreter's race detector and iteration orders (`kiln-run
//! --engine interp --check-races`, `--iteration-order`) on kernels racy and
//! race-free by construction (`common::racegen`): the detector flags every
//! racy kernel, in the kernel that races and nowhere else, and no
//! race-free one; a race-free module gives one digest in all three orders,
//! the digest of the plain interpreter.

mod common;

use common::racegen;
use kiln::exec::{Engine, Fields, RunError};
use kiln::interp::Interpreter;
use kiln::ir::Stream;
use kiln::races::IterationOrder;
use std::collections::BTreeMap;

/// How many modules of each kind, and the first seed.
const GENERATED: u64 = 1000;
const FIRST_SEED: u64 = 0x7261_6365;

fn parse(text: &str) -> Stream {
    let s = kiln::parser::parse(text).unwrap_or_else(|d| panic!("parse: {d:?}\n{text}"));
    kiln::verifier::verify(&s).unwrap_or_else(|d| panic!("verify: {d:?}\n{text}"));
    s
}

/// Runs every kernel in order with default arguments; the digests, or the
/// first error and the kernel it came from.
fn run(engine: Interpreter, stream: &Stream) -> Result<BTreeMap<String, String>, (String, RunError)> {
    let mut fields = Fields::zeroed(stream);
    let mut engine = engine;
    for k in stream.modules.iter().flat_map(|m| m.kernels()) {
        let args: Vec<_> = k.params.iter().map(|p| p.default.expect("generated parameters have defaults")).collect();
        engine.run_kernel(stream, &k.name, &args, &mut fields).map_err(|e| (k.name.to_string(), e))?;
    }
    Ok(fields.map.iter().map(|(n, d)| (n.to_string(), d.digest())).collect())
}

fn orders(seed: u64) -> [IterationOrder; 3] {
    [IterationOrder::Ascending, IterationOrder::Descending, IterationOrder::Shuffle(seed)]
}

#[test]
fn every_racy_kernel_is_flagged_in_every_order() {
    let mut failures = Vec::new();
    for seed in FIRST_SEED..FIRST_SEED + GENERATED {
        let (text, pattern) = racegen::generate(seed, true);
        let stream = parse(&text);
        let order = orders(seed)[(seed % 3) as usize];
        match run(Interpreter { order, check_races: true, ..Interpreter::default() }, &stream) {
            Err((k, e)) if k == "race" && e.races.as_ref().is_some_and(|r| !r.races.is_empty()) => {
                let r = &e.races.as_ref().expect("checked").races[0];
                if r.kernel != "race" || r.span == r.other_span && r.iteration == r.other_iteration {
                    failures.push(format!("seed {seed} ({pattern:?}, {order}): a wrong report: {r:?}"));
                }
            }
            Err((k, e)) => failures.push(format!("seed {seed} ({pattern:?}, {order}): kernel @{k}: {}", e.message)),
            Ok(_) => failures.push(format!("seed {seed} ({pattern:?}, {order}): no race found\n{text}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {GENERATED} racy modules:\n{}",
        failures.len(),
        failures[..failures.len().min(3)].join("\n")
    );
}

/// Whether a run in `order` gave the plain run's digests. kernelgen's
/// `@cnt` and `@acc` take integer atomics of different operators (an `add`
/// and a `max` of one element): no two of them race, but their result
/// depends on the order all the same (docs/language.md §8), so only the
/// ascending run must match them.
fn same(d: &BTreeMap<String, String>, plain: &BTreeMap<String, String>, order: IterationOrder) -> bool {
    let mixed_atomics = |k: &String| matches!(k.as_str(), "cnt" | "acc");
    match order {
        IterationOrder::Ascending => d == plain,
        _ => d.len() == plain.len() && d.iter().all(|(k, v)| mixed_atomics(k) || plain.get(k) == Some(v)),
    }
}

#[test]
fn race_free_kernels_pass_and_give_one_digest_in_every_order() {
    let mut failures = Vec::new();
    for seed in FIRST_SEED..FIRST_SEED + GENERATED {
        let (text, pattern) = racegen::generate(seed, false);
        let stream = parse(&text);
        let plain = match run(Interpreter::new(), &stream) {
            Ok(d) => d,
            Err((k, e)) => {
                failures.push(format!("seed {seed} ({pattern:?}): plain run, kernel @{k}: {}", e.message));
                continue;
            }
        };
        for order in orders(seed) {
            match run(Interpreter { order, check_races: true, ..Interpreter::default() }, &stream) {
                Ok(d) if same(&d, &plain, order) => {}
                Ok(d) => {
                    let differ: Vec<&String> = d.keys().filter(|k| d.get(*k) != plain.get(*k)).collect();
                    failures.push(format!("seed {seed} ({pattern:?}, {order}): other digests of {differ:?}\n{text}"))
                }
                Err((k, e)) => {
                    failures.push(format!("seed {seed} ({pattern:?}, {order}): kernel @{k}: {}\n{text}", e.message))
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures[..failures.len().min(3)].join("\n"));
}

#[test]
fn the_generator_writes_every_pattern_and_through_helpers() {
    let mut seen = std::collections::BTreeSet::new();
    let (mut helper, mut nest) = (0, 0);
    for seed in FIRST_SEED..FIRST_SEED + 200 {
        for racy in [true, false] {
            let (text, pattern) = racegen::generate(seed, racy);
            seen.insert(pattern);
            helper += text.contains("call @rf(") as u32;
            nest += text.contains("for %j in") as u32;
        }
    }
    assert_eq!(seen.len(), racegen::RACY.len() + racegen::RACE_FREE.len(), "{seen:?}");
    assert!(helper > 50 && nest > 50, "helpers {helper}, nests {nest}");
}

/// The prefix sum of docs/language.md §7: the report names both accesses
/// with their iterations, in the run order's terms.
#[test]
fn a_prefix_sum_races_and_its_serial_form_does_not() {
    let text = "field @a : i32[8]\nfield @s : i32[8]\nkernel @scan() {\n  for %i in 1 .. 8 {\n    %one = const 1 : i32\n    %j = sub %i, %one\n    %prev = load @s[%j]\n    %x = load @a[%i]\n    %sum = add %prev, %x\n    store @s[%i], %sum\n  }\n}\n";
    let stream = parse(text);
    let Err((_, e)) =
        run(Interpreter { order: IterationOrder::Ascending, check_races: true, ..Interpreter::default() }, &stream)
    else {
        panic!("no race found")
    };
    assert_eq!(
        e.message,
        "data race in task @scan.0 of kernel @scan: iteration 2 reads @s[1], which iteration 1 writes; \
         data race in task @scan.0 of kernel @scan: iteration 3 reads @s[2], which iteration 2 writes; \
         data race in task @scan.0 of kernel @scan: iteration 4 reads @s[3], which iteration 3 writes; \
         data race in task @scan.0 of kernel @scan: iteration 5 reads @s[4], which iteration 4 writes; \
         data race in task @scan.0 of kernel @scan: iteration 6 reads @s[5], which iteration 5 writes; \
         data race in task @scan.0 of kernel @scan: iteration 7 reads @s[6], which iteration 6 writes"
    );
    let Err((_, e)) =
        run(Interpreter { order: IterationOrder::Descending, check_races: true, ..Interpreter::default() }, &stream)
    else {
        panic!("no race found")
    };
    assert!(
        e.message.starts_with(
            "data race in task @scan.0 of kernel @scan: iteration 6 writes @s[6], which iteration 7 reads"
        ),
        "{}",
        e.message
    );
    let serial = parse(&text.replace("1 .. 8 {", "1 .. 8 serial {"));
    for order in orders(1) {
        assert!(run(Interpreter { order, check_races: true, ..Interpreter::default() }, &serial).is_ok());
    }
}
