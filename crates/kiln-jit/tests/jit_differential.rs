//! Differential tests of the JIT against the reference interpreter: every
//! `testdata/*.kir` kernel and 1,000 generated kernels
//! (`common::kernelgen`, fixed seeds) must leave every field with the same
//! digest under the JIT — on the per-task path and the whole-kernel path,
//! each with 1 and with 2 threads — as under the interpreter.
//!
//! Tolerance: a float field that is the target of an `atomic` is summed in
//! an order that depends on the scheduling of parallel chunks, so with 2
//! threads its elements are compared with a relative tolerance of 1e-5
//! (f32) / 1e-12 (f64) instead of by digest. With 1 thread chunks run in
//! iteration order, as in the interpreter, and every field must match bit
//! for bit. Integer atomics are exact in any order.
//!
//! The generated kernels are compiled at -O1 on the per-task path and -O0
//! on the whole-kernel path, and share one JIT session per path (batches of
//! 100 kernels), to keep the test's time reasonable on two cores; testdata
//! kernels are compiled at the default -O2.
//!
//! A generated module the verifier rejects is a bug of the generator and
//! fails the test like a disagreement does.
//!
//! What the kernels `print` must be the same text, line for line, on every
//! path and thread count: a parallel task's lines come in iteration order
//! (`docs/runtime.md`, "Printing"), never in the order threads ran.

#[path = "../../../tests/common/mod.rs"]
mod common;

use common::kernelgen::{generate, GenConfig};
use common::run_all;
use kiln::config::{CompileConfig, OptLevel};
use kiln::exec::{Engine, FieldData, Fields};
use kiln::interp::Interpreter;
use kiln::ir::{Body, Scalar, SecondaryMap, StmtKind, Stream, Value};
use kiln_codegen::Compiler;
use kiln_jit::engine::{JitEngine, JitPath};
use std::collections::BTreeSet;

/// Float fields whose values depend on the order in which threads ran:
/// those a float `atomic` writes (a sum's rounding depends on the order),
/// and those stored from anything computed from such a field or from an
/// atomic's result (which is the order itself). With threads they are
/// compared as close, not equal.
fn order_dependent_fields(stream: &Stream) -> BTreeSet<String> {
    let is_float = |name: &str| stream.modules.iter().find_map(|m| m.field(name)).is_some_and(|f| f.elem.is_float());
    let mut fields = BTreeSet::new();
    loop {
        let before = fields.len();
        for m in &stream.modules {
            let bodies =
                m.kernels().map(|k| &k.body).chain(m.funcs().map(|f| &f.body)).chain(m.tasks().map(|t| &t.body));
            for body in bodies {
                spread_order_dependence(body, &mut fields, &is_float);
            }
        }
        if fields.len() == before {
            break;
        }
    }
    fields.retain(|f| is_float(f));
    fields
}

/// Marks what `body` computes from order-dependent fields or atomics
/// (through values and slots, to a fixed point) and adds the fields it
/// stores such values to.
fn spread_order_dependence(body: &Body, fields: &mut BTreeSet<String>, is_float: &impl Fn(&str) -> bool) {
    let mut tainted = SecondaryMap::for_arena(body.values(), false);
    let mut changed = true;
    while changed {
        changed = false;
        let mut mark = |v: Value, tainted: &mut SecondaryMap<Value, bool>| {
            changed |= !std::mem::replace(&mut tainted[v], true);
        };
        for s in body.stmts().iter() {
            let mut t = false;
            s.kind.for_each_operand(|v| t |= tainted[v]);
            match &s.kind {
                StmtKind::Atomic(_, r, _) => {
                    if is_float(&r.field) {
                        fields.insert(r.field.to_string());
                    }
                    t = true;
                }
                StmtKind::Load(r) => t |= fields.contains(r.field.as_str()),
                StmtKind::Store(r, _) if t => {
                    fields.insert(r.field.to_string());
                }
                StmtKind::StoreSlot(p, _) if t => mark(*p, &mut tainted),
                _ => {}
            }
            if let (true, Some(r)) = (t, s.result) {
                mark(r, &mut tainted);
            }
        }
    }
}

fn close(want: &FieldData, got: &FieldData) -> bool {
    let (w, g) = (&want.bytes, &got.bytes);
    if w.len() != g.len() {
        return false;
    }
    match want.elem {
        Scalar::F32 => w.chunks(4).zip(g.chunks(4)).all(|(a, b)| {
            let (a, b) = (f32::from_le_bytes(a.try_into().unwrap()), f32::from_le_bytes(b.try_into().unwrap()));
            a == b || (a - b).abs() <= 1e-5 * a.abs().max(b.abs()).max(1.0)
        }),
        Scalar::F64 => w.chunks(8).zip(g.chunks(8)).all(|(a, b)| {
            let (a, b) = (f64::from_le_bytes(a.try_into().unwrap()), f64::from_le_bytes(b.try_into().unwrap()));
            a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
        }),
        _ => w == g,
    }
}

/// Compares the JIT's fields with the interpreter's.
fn compare(
    label: &str,
    want: &Fields,
    got: &Fields,
    tolerant: &BTreeSet<String>,
    threads: usize,
) -> Result<(), String> {
    for (name, w) in &want.map {
        let g = got.get(name).ok_or_else(|| format!("{label}: field @{name} is missing"))?;
        let same = if threads > 1 && tolerant.contains(name.as_str()) { close(w, g) } else { w.digest() == g.digest() };
        if !same {
            return Err(format!(
                "{label}: field @{name} differs\n  interp: {}\n  jit:    {}",
                w.format_values(),
                g.format_values()
            ));
        }
    }
    if got.map.len() != want.map.len() {
        return Err(format!("{label}: the JIT left {} fields, the interpreter {}", got.map.len(), want.map.len()));
    }
    Ok(())
}

/// Parses and verifies a module.
fn load(text: &str) -> Result<Stream, String> {
    let stream = kiln::parser::parse(text).map_err(|d| format!("parse error: {d:?}"))?;
    kiln::verifier::verify(&stream).map_err(|d| format!("verifier rejects the input: {d:?}"))?;
    Ok(stream)
}

/// Checks one module's text on both paths of the given engines.
fn check(text: &str, engines: &mut [(JitPath, JitEngine)]) -> Result<(), String> {
    let stream = load(text)?;
    let mut interp = Interpreter::new();
    let want = run_all(&mut interp, &stream).map_err(|e| format!("interpreter: {e}"))?;
    let want_printed = interp.take_printed();
    let tolerant = order_dependent_fields(&stream);
    for (path, engine) in engines.iter_mut() {
        for threads in [1, 2] {
            engine.set_threads(threads).map_err(|e| e.message)?;
            let label = format!("{path:?} path, {threads} thread(s)");
            let got = run_all(engine, &stream).map_err(|e| format!("{label}: {e}"))?;
            compare(&label, &want, &got, &tolerant, threads)?;
            let printed = engine.take_printed();
            if printed != want_printed {
                let at = printed.iter().zip(&want_printed).position(|(a, b)| a != b).unwrap_or(printed.len());
                return Err(format!(
                    "{label}: printed {} lines, the interpreter {}; first difference at line {at}: {:?} vs {:?}",
                    printed.len(),
                    want_printed.len(),
                    printed.get(at),
                    want_printed.get(at)
                ));
            }
        }
    }
    Ok(())
}

fn engines(per_task: OptLevel, whole_kernel: OptLevel) -> Vec<(JitPath, JitEngine)> {
    [(JitPath::PerTask, per_task), (JitPath::WholeKernel, whole_kernel)]
        .into_iter()
        .map(|(p, opt)| {
            let cfg = CompileConfig { opt_level: opt, ..Default::default() };
            (p, JitEngine::new(Compiler::host(cfg).unwrap(), p, 1).unwrap())
        })
        .collect()
}

#[test]
fn testdata_kernels_agree_with_the_interpreter() {
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("testdata");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "kir"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "testdata/ has too few kernels");
    let mut es = engines(OptLevel::O2, OptLevel::O2);
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        if let Err(e) = check(&text, &mut es) {
            failures.push(format!("{}: {e}", f.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// How many generated modules, from which seed, in batches of how many per
/// JIT session. The seeds start where the passes' differential test
/// (`tests/differential.rs`) starts.
const GENERATED: usize = 1000;
const FIRST_SEED: u64 = 0x6b69_6c6e;
const BATCH: usize = 100;

#[test]
fn generated_kernels_agree_with_the_interpreter() {
    let cfg = GenConfig::default();
    let mut failures = Vec::new();
    let mut es = engines(OptLevel::O1, OptLevel::O0);
    for (n, seed) in (FIRST_SEED..FIRST_SEED + GENERATED as u64).enumerate() {
        let text = generate(seed, &cfg);
        if let Err(e) = check(&text, &mut es) {
            failures.push(format!("seed {seed}: {e}\n--- input:\n{text}"));
        }
        if (n + 1) % BATCH == 0 {
            es = engines(OptLevel::O1, OptLevel::O0);
        }
    }
    let heads: Vec<&str> = failures.iter().map(|f| f.lines().next().unwrap_or("")).collect();
    assert!(
        failures.is_empty(),
        "{} of {GENERATED} generated modules failed:\n{}\nthe first in full:\n{}",
        failures.len(),
        heads.join("\n"),
        failures[0]
    );
}

/// Kernels written for what the generator leaves out: float atomics
/// (`min`/`max` are order-independent, so exact even with 2 threads; the
/// `add` is exact too, on small integers), `i1` fields, `struct_for` over a
/// 2-D field, and a bound read from a 0-D field at launch.
const HANDWRITTEN: &str = "\
field @lo : f32
field @hi : f64
field @sum : f32
field @flags : i1[100]
field @g : i32[6, 7]
field @n : i32

kernel @fill(%k: i32 = 37) {
  store @n[], %k
  for %i in 0 .. 100 {
    %f = cast %i to f32
    %s = sin %f
    %old = atomic min @lo[], %s
    %d = cast %s to f64
    %c = cos %d
    %old2 = atomic max @hi[], %c
    %one = const 1.0 : f32
    %old3 = atomic add @sum[], %one
    %z = const 0.0 : f32
    %p = cmp gt %s, %z
    store @flags[%i], %p
  }
  for %a in 0 .. 6 {
    for %b in 0 .. 7 {
      %m = mul %a, %b
      store @g[%a, %b], %m
    }
  }
}

kernel @use() {
  %n = load @n[]
  for %i in 0 .. %n {
    %f = load @flags[%i]
    %nf = not %f
    store @flags[%i], %nf
  }
}
";

#[test]
fn handwritten_kernels_agree_with_the_interpreter() {
    let mut es = engines(OptLevel::O2, OptLevel::O0);
    check(HANDWRITTEN, &mut es).unwrap();
}

/// Functions and calls, as `kiln-import` makes them of `qd.real_func`s:
/// called from parallel loops and from serial code, a chain of calls, a
/// callee with callers in two kernels and two tasks, an early `ret` under a
/// condition, a loop in a callee, a callee that writes a field (atomically)
/// and returns nothing, and parameters of narrow, unsigned and float types.
const CALLS: &str = "\
field @x : f32[200]
field @y : f64[200]
field @hits : i32[16]
field @total : i64

func @collatz(%start: i32) -> i32 {
  %n = alloca i32
  store %n, %start
  %steps = alloca i32
  %zero = const 0 : i32
  store %steps, %zero
  while {
    %v = load %n
    %one = const 1 : i32
    %done = cmp le %v, %one
    if %done {
      break
    }
    %two = const 2 : i32
    %r = rem %v, %two
    %even = cmp eq %r, %zero
    if %even {
      %h = div %v, %two
      store %n, %h
    } else {
      %three = const 3 : i32
      %t = mul %v, %three
      %u = add %t, %one
      store %n, %u
    }
    %s = load %steps
    %s1 = add %s, %one
    store %steps, %s1
  }
  %out = load %steps
  ret %out
}

func @clamp(%v: f32, %lo: f32, %hi: f32) -> f32 {
  %under = cmp lt %v, %lo
  if %under {
    ret %lo
  }
  %m = min %v, %hi
  ret %m
}

func @weigh(%v: f32, %k: i32, %b: u8) -> f64 {
  %c = call @clamp(%v, %v, %v)
  %steps = call @collatz(%k)
  %sf = cast %steps to f64
  %cf = cast %c to f64
  %bf = cast %b to f64
  %p = mul %cf, %sf
  %q = div %p, %bf
  %w = sqrt %q
  ret %w
}

func @mark(%i: i32, %by: i32) {
  %sixteen = const 16 : i32
  %slot = rem %i, %sixteen
  %old = atomic add @hits[%slot], %by
}

kernel @fill(%scale: f32 = 0.37, %b: u8 = 250) {
  for %i in 0 .. 200 {
    %f = cast %i to f32
    %g = mul %f, %scale
    %lo = const 3.0 : f32
    %hi = const 40.0 : f32
    %c = call @clamp(%g, %lo, %hi)
    store @x[%i], %c
    %w = call @weigh(%c, %i, %b)
    store @y[%i], %w
    %one = const 1 : i32
    call @mark(%i, %one)
  }
  %k27 = const 27 : i32
  %s = call @collatz(%k27)
  %sl = cast %s to i64
  store @total[], %sl
}

kernel @count() {
  %acc = alloca i64
  %z = const 0 : i64
  store %acc, %z
  for %i in 1 .. 50 serial {
    %n = call @collatz(%i)
    %l = cast %n to i64
    %a = load %acc
    %a1 = add %a, %l
    store %acc, %a1
  }
  %t = load %acc
  store @total[], %t
  for %j in 0 .. 16 {
    %two = const 2 : i32
    call @mark(%j, %two)
  }
}
";

#[test]
fn calls_agree_with_the_interpreter() {
    let mut es = engines(OptLevel::O2, OptLevel::O0);
    check(CALLS, &mut es).unwrap();
    let mut es = engines(OptLevel::O0, OptLevel::O2);
    check(CALLS, &mut es).unwrap();
}

/// Kernels that print: parallel tasks of many chunks (a small block, so
/// two threads split them), prints in a function, in a nested loop, under
/// a condition, in serial code between parallel loops, of every type.
const PRINTING: &str = "\
field @x : f64[3000]
func @twice(%i: i32) -> f64 {
  %f = cast %i to f64
  %two = const 2.0 : f64
  %v = mul %f, %two
  print \"  twice \", %v, \"\\0A\"
  ret %v
}
kernel @k(%n: i32 = 3000, %b: u8 = 200, %c: i16 = -7, %w: u64 = 18446744073709551615) {
  print \"start \", %n, \" \", %b, \" \", %c, \" \", %w, \"\\0A\"
  for %i in 0 .. %n {
    %seven = const 7 : i32
    %r = rem %i, %seven
    %z = const 0 : i32
    %hit = cmp eq %r, %z
    if %hit {
      %v = call @twice(%i)
      store @x[%i], %v
    }
    %f = cast %i to f32
    %s = sqrt %f
    print \"i=\", %i, \" sqrt=\", %s, \"\\0A\"
    for %j in 0 .. 2 {
      print \"  j=\", %j
    }
    print \"\\0A\"
  }
  print \"between\\0A\"
  for %m in 0 .. 100 {
    %l = cast %m to i64
    %t = cmp lt %m, %n
    print %l, \" \", %t, \"\\0A\"
  }
}
";

#[test]
fn printed_lines_agree_with_the_interpreter() {
    let mut es = engines(OptLevel::O2, OptLevel::O0);
    check(PRINTING, &mut es).unwrap();
}

/// A run that prints more than the bound fails the same way on every
/// engine, and prints nothing from the launch that went over.
#[test]
fn a_run_that_prints_too_much_fails_alike() {
    let text = format!(
        "kernel @k(%n: i32 = {}) {{\n  print \"first\"\n  for %i in 0 .. %n {{\n    print %i\n  }}\n}}\n",
        kiln::exec::MAX_PRINT_LINES
    );
    let stream = load(&text).unwrap();
    let mut interp = Interpreter::new();
    let want = run_all(&mut interp, &stream).unwrap_err();
    assert!(want.contains("printed more than 1048576 lines in one run"), "{want}");
    let want_printed = interp.take_printed();
    for (path, engine) in engines(OptLevel::O1, OptLevel::O1).iter_mut() {
        engine.set_threads(2).unwrap();
        let got = run_all(engine, &stream).unwrap_err();
        assert_eq!(got, want, "{path:?}");
        let printed = engine.take_printed();
        assert_eq!(printed, want_printed, "{path:?}");
    }
}

/// `f16` in loops LLVM vectorises (`<32 x half>` on this host), with
/// Kiln's own `sin` and a libm `pow`: every operation is rounded to `f16`,
/// so the JIT writes the interpreter's bits at -O2. In fast-math mode the
/// `f16` values between operations are still `f16`, but fast math allows
/// contraction: on a host with `f16` fused multiply-add (AVX512-FP16, an
/// Intel Sapphire Rapids class host) LLVM fuses `mul` and `sub` and drops
/// that one rounding, so arithmetic comes within one `f16` ulp (on hosts
/// without it, such as AMD Zen 4, it writes the same bits), and the math
/// functions (libmvec's `f32` ones there) within one ulp of the
/// interpreter's on the same inputs. (What fast math may rewrite, it
/// does: `((v * v + v) * t) / t - v` became `v * v`.)
const F16_LOOPS: &str = "\
field @x : f16[4099]
field @arith : f16[4099]
field @math : f16[4099]
field @sum : f16

kernel @f16_loops() {
  for %i in 0 .. 4099 {
    %f = cast %i to f16
    %c = const 0.0123 : f16
    %a = mul %f, %c
    %b = sub %a, %c
    store @x[%i], %b
  }
  for %j in 0 .. 4099 {
    %v = load @x[%j]
    %t = const 0.3 : f16
    %m = mul %v, %v
    %p = add %m, %v
    %q = mul %p, %t
    %d = div %q, %v
    %h = max %d, %v
    store @arith[%j], %h
    %s = sin %v
    %w = pow %v, %t
    %e = add %s, %w
    store @math[%j], %e
  }
  for %k in 0 .. 4099 serial {
    %u = load @arith[%k]
    %o = load @sum[]
    %n = add %o, %u
    store @sum[], %n
  }
}
";

#[test]
fn f16_vector_loops_round_every_operation_in_default_and_fast_math_mode() {
    let stream = load(F16_LOOPS).unwrap();
    let want = run_all(&mut Interpreter::new(), &stream).unwrap();
    let ulps = |name: &str, got: &Fields| -> u32 {
        let (w, g) = (&want.get(name).unwrap().bytes, &got.get(name).unwrap().bytes);
        w.chunks(2).zip(g.chunks(2)).map(|(a, b)| f16_ulps(a, b)).max().unwrap_or(0)
    };
    for fast_math in [false, true] {
        let cfg = CompileConfig { fast_math, ..Default::default() };
        let mut jit = JitEngine::new(Compiler::host(cfg).unwrap(), JitPath::PerTask, 2).unwrap();
        let got = run_all(&mut jit, &stream).unwrap();
        let most = if fast_math { 1 } else { 0 };
        for name in ["x", "arith", "sum"] {
            assert!(ulps(name, &got) <= most, "fast math {fast_math}: @{name} is {} ulps off", ulps(name, &got));
        }
        // The math functions on the inputs both engines had: `pow(v, 0.3)`
        // near 0 turns an ulp of `v` into many.
        let (want_x, got_x) = (&want.get("x").unwrap().bytes, &got.get("x").unwrap().bytes);
        let same_input = |i: &usize| want_x[2 * i..2 * i + 2] == got_x[2 * i..2 * i + 2];
        let (want_m, got_m) = (&want.get("math").unwrap().bytes, &got.get("math").unwrap().bytes);
        let math_ulps = (0..want_m.len() / 2)
            .filter(same_input)
            .map(|i| f16_ulps(&want_m[2 * i..2 * i + 2], &got_m[2 * i..2 * i + 2]))
            .max()
            .unwrap_or(0);
        assert!(math_ulps <= most, "fast math {fast_math}: @math is {math_ulps} ulps off");
    }
}

/// How many `f16` ulps apart two little-endian `f16`s are, across zero.
fn f16_ulps(a: &[u8], b: &[u8]) -> u32 {
    // Sign-magnitude bits to a line on which neighbouring values of one
    // sign are 1 apart.
    let line = |c: &[u8]| {
        let bits = u16::from_le_bytes([c[0], c[1]]) as i32;
        if bits & 0x8000 != 0 {
            -(bits & 0x7fff)
        } else {
            bits
        }
    };
    line(a).abs_diff(line(b))
}
