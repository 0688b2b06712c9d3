//! Subnormal numbers in both modes (`--denormals`, `config::Denormals`):
//! every float operator, comparison and cast, at f16, f32 and f64, over inputs
//! that are subnormal or make subnormal results, computes the same bits
//! under the JIT (1 and 2 threads, so on pool threads too) as under the
//! interpreter; in `flush` mode no result is subnormal, and in `preserve`
//! mode some are (so the test sees the difference it claims). An `f16`
//! is never flushed (its conversions ignore the mode, as in Quadrants):
//! its results are the same in both modes, subnormals included. The mode
//! is part of every key.

use kiln::config::{CompileConfig, Denormals, OptLevel};
use kiln::exec::{Engine, FieldData, Fields};
use kiln::interp::Interpreter;
use kiln::ir::{BinOp, CmpOp, Scalar, UnOp};
use kiln_codegen::Compiler;
use kiln_jit::engine::{JitEngine, JitPath};

/// The inputs, as f64 (each also taken as f32): zeros, the smallest and
/// other subnormals of both widths, the smallest normals, tiny normals
/// whose products and quotients are subnormal, ordinary values, the
/// largest, infinities and NaN.
fn values(ty: Scalar) -> Vec<f64> {
    let (min, sub) = match ty {
        Scalar::F16 => (2f64.powi(-14), 2f64.powi(-24)),
        Scalar::F32 => (f32::MIN_POSITIVE as f64, f32::from_bits(1) as f64),
        _ => (f64::MIN_POSITIVE, f64::from_bits(1)),
    };
    vec![
        0.0,
        -0.0,
        sub,
        -sub,
        sub * 1000.0,
        -min / 3.0,
        min,
        -min,
        min * 1.5,
        1e-30,
        -1e-20,
        1e-10,
        0.75,
        -2.0,
        3e30,
        f64::INFINITY,
        f64::NAN,
    ]
}

/// One kernel per operator over every pair of inputs (`@a`, `@b`), each
/// result in a field of its own.
fn program(ty: Scalar) -> (String, Vec<String>) {
    let n = values(ty).len().pow(2);
    let mut text = format!("field @a : {ty}[{n}]\nfield @b : {ty}[{n}]\n");
    let mut results = Vec::new();
    let mut kernel = |name: String, rty: Scalar, stmt: String| {
        text += &format!(
            "field @{name} : {rty}[{n}]\nkernel @k_{name}() {{\n  for %i in 0 .. {n} {{\n    %a = load @a[%i]\n    %b = load @b[%i]\n    %r = {stmt}\n    store @{name}[%i], %r\n  }}\n}}\n"
        );
        results.push(name);
    };
    for op in BinOp::ALL.into_iter().filter(|op| op.accepts(ty)) {
        kernel(format!("{}_{ty}", op.keyword()), ty, format!("{} %a, %b", op.keyword()));
    }
    for op in UnOp::ALL.into_iter().filter(|op| op.accepts(ty)) {
        kernel(format!("{}_{ty}", op.keyword()), ty, format!("{} %a", op.keyword()));
    }
    for op in CmpOp::ALL {
        kernel(format!("cmp_{}_{ty}", op.keyword()), Scalar::I1, format!("cmp {} %a, %b", op.keyword()));
    }
    for to in [Scalar::F16, Scalar::F32, Scalar::F64, Scalar::I32, Scalar::I64, Scalar::I1] {
        kernel(format!("cast_{ty}_to_{to}"), to, format!("cast %a to {to}"));
    }
    (text, results)
}

/// Fields with every pair of inputs in `@a` and `@b`.
fn inputs(stream: &kiln::ir::Stream, ty: Scalar) -> Fields {
    let mut fields = Fields::zeroed(stream);
    let vs = values(ty);
    let pairs: Vec<(f64, f64)> = vs.iter().flat_map(|&a| vs.iter().map(move |&b| (a, b))).collect();
    for (name, pick) in [("a", 0), ("b", 1)] {
        let d = fields.get_mut(name).expect("declared");
        let mut bytes = Vec::new();
        for p in &pairs {
            let x = if pick == 0 { p.0 } else { p.1 };
            match ty {
                Scalar::F16 => bytes.extend((cast(x, ty).bits as u16).to_le_bytes()),
                Scalar::F32 => bytes.extend((x as f32).to_le_bytes()),
                _ => bytes.extend(x.to_le_bytes()),
            }
        }
        d.bytes = bytes.into();
    }
    fields
}

/// `x` cast to `ty` with KIR's semantics.
fn cast(x: f64, ty: Scalar) -> kiln::ir::Const {
    kiln::semantics::eval_cast(kiln::ir::Const::f64(x), ty)
}

/// A field's elements as bits.
fn bits(d: &FieldData) -> Vec<u64> {
    let size = d.elem.size_bytes();
    d.bytes
        .chunks(size)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect()
}

/// Whether a float field holds a subnormal.
fn has_subnormal(d: &FieldData) -> bool {
    match d.elem {
        Scalar::F16 => bits(d).iter().any(|&b| b & 0x7c00 == 0 && b & 0x3ff != 0),
        Scalar::F32 => bits(d).iter().any(|&b| f32::from_bits(b as u32).is_subnormal()),
        Scalar::F64 => bits(d).iter().any(|&b| f64::from_bits(b).is_subnormal()),
        _ => false,
    }
}

fn run(engine: &mut dyn Engine, stream: &kiln::ir::Stream, ty: Scalar, kernels: &[String]) -> Fields {
    let mut fields = inputs(stream, ty);
    let names: Vec<String> = kernels.iter().map(|k| format!("k_{k}")).collect();
    let runs: Vec<(&str, &[kiln::ir::Const])> = names.iter().map(|k| (k.as_str(), &[][..])).collect();
    engine.run_kernels(stream, &runs, &mut fields).expect("runs");
    fields
}

#[test]
fn every_float_operator_agrees_in_both_modes_and_flush_leaves_no_subnormal() {
    for ty in [Scalar::F16, Scalar::F32, Scalar::F64] {
        let (text, results) = program(ty);
        let stream = kiln::parser::parse(&text).expect("parses");
        kiln::verifier::verify(&stream).expect("verifies");
        for mode in Denormals::ALL {
            let mut interp = Interpreter { denormals: mode, ..Interpreter::default() };
            let want = run(&mut interp, &stream, ty, &results);
            let subnormal: Vec<&String> = results.iter().filter(|r| has_subnormal(want.get(r).unwrap())).collect();
            match mode {
                Denormals::Flush if ty == Scalar::F16 => {
                    let mut preserve = Interpreter { denormals: Denormals::Preserve, ..Interpreter::default() };
                    let kept = run(&mut preserve, &stream, ty, &results);
                    let moved: Vec<&String> =
                        results.iter().filter(|r| bits(want.get(r).unwrap()) != bits(kept.get(r).unwrap())).collect();
                    assert!(moved.is_empty(), "f16: flush mode changed {moved:?}");
                    assert!(subnormal.len() >= 5, "f16: only {subnormal:?} are subnormal");
                }
                // Only what can return an operand's bits keeps one, as the
                // hardware does in Quadrants: `neg`, `abs`, a cast to the
                // same type, `min`/`max` of a NaN and a number, `rem` of a
                // smaller dividend (glibc's fmod), and libm's functions
                // that return a tiny argument as it is.
                Denormals::Flush => {
                    let moved = ["neg", "abs", "rem", "min", "max", "asin", "atan", "sin", "tan"]
                        .map(|op| format!("{op}_{ty}"));
                    let kept: Vec<&&String> = subnormal
                        .iter()
                        .filter(|r| !moved.contains(r) && **r != &format!("cast_{ty}_to_{ty}"))
                        .collect();
                    assert!(kept.is_empty(), "{ty}: flush mode left subnormals in {kept:?}");
                    assert!(!subnormal.is_empty(), "{ty}: neg and abs keep a subnormal's bits");
                }
                Denormals::Preserve => assert!(subnormal.len() >= 5, "{ty}: only {subnormal:?} are subnormal"),
            }
            // -O0 calls the runtime's copy of Kiln's math, which must
            // flush as the inline code does.
            for (threads, opt_level) in [(1, OptLevel::O2), (2, OptLevel::O2), (1, OptLevel::O0)] {
                let config = CompileConfig { opt_level, denormals: mode, ..CompileConfig::default() };
                let compiler = Compiler::host(config).expect("host compiler");
                let mut jit = JitEngine::new(compiler, JitPath::PerTask, threads).expect("jit");
                let got = run(&mut jit, &stream, ty, &results);
                for r in &results {
                    let (w, g) = (bits(want.get(r).unwrap()), bits(got.get(r).unwrap()));
                    let differ: Vec<usize> = (0..w.len()).filter(|&i| w[i] != g[i]).collect();
                    let vs = values(ty);
                    let show: Vec<String> = differ
                        .iter()
                        .take(4)
                        .map(|&i| format!("({:e}, {:e}): {:x} vs {:x}", vs[i / vs.len()], vs[i % vs.len()], w[i], g[i]))
                        .collect();
                    assert!(
                        differ.is_empty(),
                        "{ty} {mode} {threads} threads {opt_level:?}: @{r} differs at {} places: {show:?}",
                        differ.len()
                    );
                }
            }
        }
    }
}

#[test]
fn the_mode_is_part_of_every_key() {
    let text = "field @x : f32[4]\nkernel @k() {\n  for %i in 0 .. 4 {\n    %v = load @x[%i]\n    %w = mul %v, %v\n    store @x[%i], %w\n  }\n}\n";
    let stream = kiln::parser::parse(text).unwrap();
    let split = kiln::passes::task_form::to_task_stream(stream).unwrap();
    let key = |denormals| {
        let config = CompileConfig { denormals, ..CompileConfig::default() };
        kiln::key::stream_keys(&split, &config).into_iter().map(|k| k.key).collect::<Vec<_>>()
    };
    let (kept, flushed) = (key(Denormals::Preserve), key(Denormals::Flush));
    assert!(!kept.is_empty());
    assert!(kept.iter().zip(&flushed).all(|(a, b)| a != b));
}
