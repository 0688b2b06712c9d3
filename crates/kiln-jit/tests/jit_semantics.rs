//! Every operator of the JIT against the semantics of docs/language.md,
//! written out in Rust, on inputs chosen for their edge cases (zero
//! divisors, MIN / -1, shift amounts past the width, NaN, infinities,
//! signed zeros, halves). Inputs are loaded from fields so LLVM cannot fold
//! them away. IR is built by hand; no parser is needed.

use kiln::config::{CompileConfig, OptLevel};
use kiln::exec::{Engine, Fields};
use kiln::ir::*;
use kiln::math::MathFunc;
use kiln_codegen::Compiler;
use kiln_jit::engine::{JitEngine, JitPath};

fn field(name: &str, elem: Scalar) -> Item {
    Item::Field(Field { name: name.into(), elem, shape: vec![], span: Span::DUMMY })
}

/// A split stream whose kernel @k runs one serial task:
/// `%a = load @a[]; %b = load @b[]; %r = <op>; store @r[], %r`.
fn one_op(a_ty: Scalar, r_ty: Scalar, op: impl Fn(Value, Value) -> StmtKind) -> Stream {
    let mut body = Body::new();
    let e = body.entry;
    let load = |body: &mut Body, f: &str, n: &str| {
        let (s, v) = body.new_stmt_with_result(
            StmtKind::Load(FieldRef { field: f.into(), indices: vec![], span: Span::DUMMY }),
            n,
            Type::Scalar(a_ty),
            Span::DUMMY,
        );
        body.push(e, s);
        v
    };
    let a = load(&mut body, "a", "a");
    let b = load(&mut body, "b", "b");
    let (s, r) = body.new_stmt_with_result(op(a, b), "r", Type::Scalar(r_ty), Span::DUMMY);
    body.push(e, s);
    let s = body
        .new_stmt(StmtKind::Store(FieldRef { field: "r".into(), indices: vec![], span: Span::DUMMY }, r), Span::DUMMY);
    body.push(e, s);
    let task = TaskItem {
        name: "k.0".into(),
        kernel: "k".into(),
        params: vec![],
        kind: TaskKind::Serial,
        body,
        span: Span::DUMMY,
    };
    let fields = vec![field("a", a_ty), field("b", a_ty), field("r", r_ty)];
    let mut items = fields.clone();
    items.push(Item::Task(task));
    let mut kb = Body::new();
    let s = kb.new_stmt(StmtKind::Launch("k.0".into()), Span::DUMMY);
    let ke = kb.entry;
    kb.push(ke, s);
    let mut main = fields;
    main.push(Item::Kernel(Kernel { name: "k".into(), params: vec![], body: kb, span: Span::DUMMY }));
    Stream {
        modules: vec![
            Module { name: Some("k.0".into()), items, span: Span::DUMMY },
            Module { name: Some("main".into()), items: main, span: Span::DUMMY },
        ],
    }
}

fn set(fields: &mut Fields, name: &str, bits: u64) {
    let d = fields.get_mut(name).unwrap();
    let n = d.bytes.len();
    d.bytes.copy_from_slice(&bits.to_le_bytes()[..n]);
}

fn get(fields: &Fields, name: &str) -> u64 {
    let d = fields.get(name).unwrap();
    let mut b = [0u8; 8];
    b[..d.bytes.len()].copy_from_slice(&d.bytes);
    u64::from_le_bytes(b)
}

/// Runs `stream` on every input pair and compares with `want` (bits).
fn check(name: &str, stream: &Stream, inputs: &[(u64, u64)], want: impl Fn(u64, u64) -> u64) {
    for opt in [OptLevel::O0, OptLevel::O2] {
        let cfg = CompileConfig { opt_level: opt, ..Default::default() };
        let mut e = JitEngine::new(Compiler::host(cfg).unwrap(), JitPath::PerTask, 1).unwrap();
        for &(a, b) in inputs {
            let mut fields = Fields::zeroed(stream);
            set(&mut fields, "a", a);
            set(&mut fields, "b", b);
            e.run_kernel(stream, "k", &[], &mut fields).unwrap();
            let got = get(&fields, "r");
            let w = want(a, b);
            assert_eq!(got, w, "{name} {opt:?}: a={a:#x} b={b:#x}: got {got:#x}, want {w:#x}");
        }
    }
}

const I32S: [i32; 9] = [0, 1, -1, 2, -7, 31, 33, i32::MIN, i32::MAX];
const I64S: [i64; 8] = [0, 1, -1, 3, -9, 65, i64::MIN, i64::MAX];
const F32S: [f32; 12] = [0.0, -0.0, 1.0, -1.5, 2.5, -2.5, 0.5, 1e30, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 3.0e9];
const F64S: [f64; 11] = [0.0, -0.0, 1.0, -1.5, 2.5, -0.5, 1e300, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -9.3e18];

fn pairs<T: Copy>(xs: &[T], bits: impl Fn(T) -> u64) -> Vec<(u64, u64)> {
    xs.iter().flat_map(|&a| xs.iter().map(move |&b| (a, b))).map(|(a, b)| (bits(a), bits(b))).collect()
}

/// Results compare by bits, NaN payloads included: the Rust expression
/// runs on the same hardware as the JIT's code, as the interpreter does.
fn f32b(x: f32) -> u64 {
    x.to_bits() as u64
}
fn f64b(x: f64) -> u64 {
    x.to_bits()
}

#[test]
fn integer_binary_operators() {
    let i32s = pairs(&I32S, |x| x as u32 as u64);
    let a32 = |a: u64| a as u32 as i32;
    let r32 = |x: i32| x as u32 as u64;
    type F32 = fn(i32, i32) -> i32;
    let ops32: [(BinOp, F32); 13] = [
        (BinOp::Add, |a, b| a.wrapping_add(b)),
        (BinOp::Sub, |a, b| a.wrapping_sub(b)),
        (BinOp::Mul, |a, b| a.wrapping_mul(b)),
        (BinOp::Div, |a, b| if b == 0 { 0 } else { a.wrapping_div(b) }),
        (BinOp::Rem, |a, b| if b == 0 { 0 } else { a.wrapping_rem(b) }),
        (BinOp::Min, |a, b| a.min(b)),
        (BinOp::Max, |a, b| a.max(b)),
        (BinOp::And, |a, b| a & b),
        (BinOp::Or, |a, b| a | b),
        (BinOp::Xor, |a, b| a ^ b),
        (BinOp::Shl, |a, b| a.wrapping_shl(b as u32)),
        (BinOp::Shr, |a, b| a.wrapping_shr(b as u32)),
        (BinOp::Ushr, |a, b| (a as u32).wrapping_shr(b as u32) as i32),
    ];
    for (op, f) in ops32 {
        let s = one_op(Scalar::I32, Scalar::I32, |a, b| StmtKind::Binary(op, a, b));
        check(op.keyword(), &s, &i32s, |a, b| r32(f(a32(a), a32(b))));
    }
    let i64s = pairs(&I64S, |x| x as u64);
    type F64 = fn(i64, i64) -> i64;
    let ops64: [(BinOp, F64); 5] = [
        (BinOp::Div, |a, b| if b == 0 { 0 } else { a.wrapping_div(b) }),
        (BinOp::Rem, |a, b| if b == 0 { 0 } else { a.wrapping_rem(b) }),
        (BinOp::Mul, |a, b| a.wrapping_mul(b)),
        (BinOp::Shl, |a, b| a.wrapping_shl(b as u32)),
        (BinOp::Ushr, |a, b| (a as u64).wrapping_shr(b as u32) as i64),
    ];
    for (op, f) in ops64 {
        let s = one_op(Scalar::I64, Scalar::I64, |a, b| StmtKind::Binary(op, a, b));
        check(op.keyword(), &s, &i64s, |a, b| f(a as i64, b as i64) as u64);
    }
}

#[test]
fn float_binary_operators() {
    let f32s = pairs(&F32S, |x| x.to_bits() as u64);
    let a = |x: u64| f32::from_bits(x as u32);
    type F = fn(f32, f32) -> f32;
    let ops: [(BinOp, F); 9] = [
        (BinOp::Add, |a, b| a + b),
        (BinOp::Sub, |a, b| a - b),
        (BinOp::Mul, |a, b| a * b),
        (BinOp::Div, |a, b| a / b),
        (BinOp::Rem, |a, b| a % b),
        // minimumNumber / maximumNumber: NaN gives the other, -0 < +0.
        (BinOp::Min, |a, b| {
            if a.is_nan() {
                b
            } else if b.is_nan() || a < b || (a == b && a.is_sign_negative()) {
                a
            } else {
                b
            }
        }),
        (BinOp::Max, |a, b| {
            if a.is_nan() {
                b
            } else if b.is_nan() || a > b || (a == b && b.is_sign_negative()) {
                a
            } else {
                b
            }
        }),
        (BinOp::Pow, |a, b| a.powf(b)),
        (BinOp::Atan2, |a, b| a.atan2(b)),
    ];
    for (op, f) in ops {
        let s = one_op(Scalar::F32, Scalar::F32, |x, y| StmtKind::Binary(op, x, y));
        check(op.keyword(), &s, &f32s, |x, y| f32b(f(a(x), a(y))));
    }
    let f64s = pairs(&F64S, |x| x.to_bits());
    let d = f64::from_bits;
    type G = fn(f64, f64) -> f64;
    let ops: [(BinOp, G); 4] = [
        (BinOp::Rem, |a, b| a % b),
        (BinOp::Pow, |a, b| a.powf(b)),
        (BinOp::Atan2, |a, b| a.atan2(b)),
        (BinOp::Div, |a, b| a / b),
    ];
    for (op, f) in ops {
        let s = one_op(Scalar::F64, Scalar::F64, |x, y| StmtKind::Binary(op, x, y));
        check(op.keyword(), &s, &f64s, |x, y| f64b(f(d(x), d(y))));
    }
}

#[test]
fn unary_operators() {
    let f32s: Vec<(u64, u64)> = F32S.iter().map(|x| (x.to_bits() as u64, 0)).collect();
    let a = |x: u64| f32::from_bits(x as u32);
    type F = fn(f32) -> f32;
    let ops: [(UnOp, F); 15] = [
        (UnOp::Neg, |x| -x),
        (UnOp::Abs, |x| x.abs()),
        (UnOp::Sqrt, |x| x.sqrt()),
        // Kiln's own f32 functions (docs/language.md), the others libm's.
        (UnOp::Sin, |x| MathFunc::Sin.eval(x)),
        (UnOp::Cos, |x| MathFunc::Cos.eval(x)),
        (UnOp::Tan, |x| MathFunc::Tan.eval(x)),
        (UnOp::Asin, |x| x.asin()),
        (UnOp::Acos, |x| x.acos()),
        (UnOp::Atan, |x| x.atan()),
        (UnOp::Tanh, |x| MathFunc::Tanh.eval(x)),
        (UnOp::Exp, |x| MathFunc::Exp.eval(x)),
        (UnOp::Log, |x| MathFunc::Log.eval(x)),
        (UnOp::Floor, |x| x.floor()),
        (UnOp::Ceil, |x| x.ceil()),
        (UnOp::Round, |x| x.round()),
    ];
    for (op, f) in ops {
        let s = one_op(Scalar::F32, Scalar::F32, |x, _| StmtKind::Unary(op, x));
        check(op.keyword(), &s, &f32s, |x, _| f32b(f(a(x))));
    }
    let i32s: Vec<(u64, u64)> = I32S.iter().map(|&x| (x as u32 as u64, 0)).collect();
    type G = fn(i32) -> i32;
    let ops: [(UnOp, G); 3] =
        [(UnOp::Neg, |x| x.wrapping_neg()), (UnOp::Not, |x| !x), (UnOp::Abs, |x| x.wrapping_abs())];
    for (op, f) in ops {
        let s = one_op(Scalar::I32, Scalar::I32, |x, _| StmtKind::Unary(op, x));
        check(op.keyword(), &s, &i32s, |x, _| f(x as u32 as i32) as u32 as u64);
    }
}

#[test]
fn comparisons_and_casts() {
    let f32s = pairs(&F32S, |x| x.to_bits() as u64);
    let a = |x: u64| f32::from_bits(x as u32);
    type F = fn(f32, f32) -> bool;
    let cmps: [(CmpOp, F); 6] = [
        (CmpOp::Lt, |a, b| a < b),
        (CmpOp::Le, |a, b| a <= b),
        (CmpOp::Gt, |a, b| a > b),
        (CmpOp::Ge, |a, b| a >= b),
        (CmpOp::Eq, |a, b| a == b),
        (CmpOp::Ne, |a, b| a != b),
    ];
    for (op, f) in cmps {
        let s = one_op(Scalar::F32, Scalar::I1, |x, y| StmtKind::Cmp(op, x, y));
        check(op.keyword(), &s, &f32s, |x, y| f(a(x), a(y)) as u64);
    }
    // i1 orders false < true.
    let bools = [(0, 0), (0, 1), (1, 0), (1, 1)];
    let s = one_op(Scalar::I1, Scalar::I1, |x, y| StmtKind::Cmp(CmpOp::Lt, x, y));
    check("lt i1", &s, &bools, |x, y| (x < y) as u64);

    let f32in: Vec<(u64, u64)> = F32S.iter().map(|x| (x.to_bits() as u64, 0)).collect();
    let s = one_op(Scalar::F32, Scalar::I32, |x, _| StmtKind::Cast(x, Scalar::I32));
    check("f32->i32", &s, &f32in, |x, _| a(x) as i32 as u32 as u64);
    let s = one_op(Scalar::F32, Scalar::I64, |x, _| StmtKind::Cast(x, Scalar::I64));
    check("f32->i64", &s, &f32in, |x, _| a(x) as i64 as u64);
    let s = one_op(Scalar::F32, Scalar::I1, |x, _| StmtKind::Cast(x, Scalar::I1));
    check("f32->i1", &s, &f32in, |x, _| (a(x) != 0.0) as u64);
    let f64in: Vec<(u64, u64)> = F64S.iter().map(|x| (x.to_bits(), 0)).collect();
    let s = one_op(Scalar::F64, Scalar::I32, |x, _| StmtKind::Cast(x, Scalar::I32));
    check("f64->i32", &s, &f64in, |x, _| f64::from_bits(x) as i32 as u32 as u64);
    let s = one_op(Scalar::F64, Scalar::F32, |x, _| StmtKind::Cast(x, Scalar::F32));
    check("f64->f32", &s, &f64in, |x, _| f32b(f64::from_bits(x) as f32));
    let i64in: Vec<(u64, u64)> = I64S.iter().map(|&x| (x as u64, 0)).collect();
    let s = one_op(Scalar::I64, Scalar::I32, |x, _| StmtKind::Cast(x, Scalar::I32));
    check("i64->i32", &s, &i64in, |x, _| x as i64 as i32 as u32 as u64);
    let s = one_op(Scalar::I64, Scalar::I1, |x, _| StmtKind::Cast(x, Scalar::I1));
    check("i64->i1", &s, &i64in, |x, _| (x != 0) as u64);
    let s = one_op(Scalar::I64, Scalar::F32, |x, _| StmtKind::Cast(x, Scalar::F32));
    check("i64->f32", &s, &i64in, |x, _| f32b(x as i64 as f32));
    let s = one_op(Scalar::I1, Scalar::I32, |x, _| StmtKind::Cast(x, Scalar::I32));
    check("i1->i32", &s, &[(0, 0), (1, 0)], |x, _| x);
    let s = one_op(Scalar::I1, Scalar::F64, |x, _| StmtKind::Cast(x, Scalar::F64));
    check("i1->f64", &s, &[(0, 0), (1, 0)], |x, _| (x as f64).to_bits());
}

/// `bitcast` keeps every bit, on the JIT at both levels and on the
/// interpreter: NaN payloads (quiet and signalling, either sign), `-0.0`,
/// subnormals and integers whose signedness changes. A field of a type
/// narrower than 64 bits holds the low bits of the pattern.
#[test]
fn bit_casts_keep_every_bit() {
    const PATTERNS: [u64; 10] = [
        0,
        1,
        0x8000_0000,
        0x7fc0_1234,
        0xffa0_0001,
        0x007f_ffff,
        0x7ff4_0000_0000_beef,
        0x8000_0000_0000_0000,
        0x000f_ffff_ffff_ffff,
        u64::MAX,
    ];
    use Scalar::*;
    let pairs = [
        (F32, I32),
        (I32, F32),
        (F32, U32),
        (U32, F32),
        (F64, I64),
        (I64, F64),
        (U64, F64),
        (F64, U64),
        (F16, I16),
        (I16, F16),
        (F16, U16),
        (U16, F16),
    ];
    let ints = [(I8, U8), (U8, I8), (I16, U16), (U16, I16), (I32, U32), (I64, U64), (I1, I1), (F32, F32)];
    for (from, to) in pairs.into_iter().chain(ints) {
        let name = format!("bitcast {} to {}", from.keyword(), to.keyword());
        let s = one_op(from, to, |x, _| StmtKind::BitCast(x, to));
        let mask = from.wrap_bits(u64::MAX);
        let inputs: Vec<(u64, u64)> = PATTERNS.iter().map(|&p| (p & mask, 0)).collect();
        check(&name, &s, &inputs, |x, _| x);
        let mut interp = kiln::interp::Interpreter::new();
        for &(a, _) in &inputs {
            let mut fields = Fields::zeroed(&s);
            set(&mut fields, "a", a);
            interp.run_kernel(&s, "k", &[], &mut fields).unwrap();
            assert_eq!(get(&fields, "r"), a, "{name} on the interpreter: a={a:#x}");
        }
    }
}

/// A kernel drawing `random T` for every type: a `range_for` with two
/// draws per iteration and more in an inner loop, a `struct_for` over a
/// 2-D field, and a serial task.
fn random_kernel(ty: Scalar) -> String {
    format!(
        "field @x : {ty}[300]\nfield @y : {ty}[300]\nfield @z : {ty}[300]\nfield @g : {ty}[7, 5]\nfield @s : {ty}[4]\n\
         kernel @k() {{\n  for %i in 0 .. 300 {{\n    %a = random {ty}\n    store @x[%i], %a\n    %b = random {ty}\n\
         store @y[%i], %b\n    for %j in 0 .. 3 {{\n      %c = random {ty}\n      store @z[%i], %c\n    }}\n  }}\n\
         for %p in 0 .. 7 {{\n    for %q in 0 .. 5 {{\n      %d = random {ty}\n      store @g[%p, %q], %d\n    }}\n  }}\n\
         for %m in 0 .. 4 serial {{\n    %e = random {ty}\n    store @s[%m], %e\n  }}\n}}\n"
    )
}

const RANDOM_TYPES: [Scalar; 11] = [
    Scalar::F16,
    Scalar::F32,
    Scalar::F64,
    Scalar::I32,
    Scalar::I64,
    Scalar::U32,
    Scalar::U64,
    Scalar::I8,
    Scalar::I16,
    Scalar::U8,
    Scalar::U16,
];

fn random_run(engine: &mut dyn Engine, stream: &Stream) -> Fields {
    let mut fields = Fields::zeroed(stream);
    engine.run_kernel(stream, "k", &[], &mut fields).unwrap();
    fields
}

/// `random` at every type: the JIT (per task and whole kernel, 1 and 3
/// threads) writes the interpreter's bytes exactly, for several seeds; the
/// same seed repeats and another differs.
#[test]
fn random_agrees_bit_for_bit_at_every_type_and_thread_count() {
    use kiln::interp::Interpreter;
    let cfg = CompileConfig::default();
    let mut jits: Vec<JitEngine> = [JitPath::PerTask, JitPath::WholeKernel]
        .into_iter()
        .map(|p| JitEngine::new(Compiler::host(cfg.clone()).unwrap(), p, 1).unwrap())
        .collect();
    for ty in RANDOM_TYPES {
        let stream = kiln::parser::parse(&random_kernel(ty)).unwrap();
        kiln::verifier::verify(&stream).unwrap();
        let mut seen = Vec::new();
        for seed in [0, 1, u64::MAX] {
            let want = random_run(&mut Interpreter { seed, ..Interpreter::new() }, &stream);
            for jit in jits.iter_mut() {
                jit.set_seed(seed);
                for threads in [1, 3] {
                    jit.set_threads(threads).unwrap();
                    let got = random_run(jit, &stream);
                    for f in ["x", "y", "z", "g", "s"] {
                        assert_eq!(got.get(f).unwrap().bytes, want.get(f).unwrap().bytes, "{ty} seed {seed} @{f}");
                    }
                }
            }
            let again = random_run(&mut Interpreter { seed, ..Interpreter::new() }, &stream);
            assert_eq!(again.get("x").unwrap().bytes, want.get("x").unwrap().bytes, "{ty}: a seed repeats");
            seen.push(want.get("x").unwrap().bytes.to_vec());
        }
        assert!(seen[0] != seen[1] && seen[1] != seen[2], "{ty}: other seeds draw other numbers");
    }
}

/// The interpreter's values are `kiln::random::draw` at the documented
/// counter: launch 0 (the `range_for`), iteration `i`, sites 0 and 1, draws
/// 0 and 1; the serial task is launch 2, iteration 0, draw `m`.
#[test]
fn random_values_follow_the_documented_stream() {
    use kiln::random::{draw, Draw};
    let stream = kiln::parser::parse(&random_kernel(Scalar::U64)).unwrap();
    let seed = 0x0123_4567_89ab_cdef;
    let cfg = CompileConfig::default();
    let mut jit = JitEngine::new(Compiler::host(cfg).unwrap(), JitPath::PerTask, 2).unwrap();
    jit.set_seed(seed);
    let got = random_run(&mut jit, &stream);
    let word = |f: &str, k: usize| {
        let b = &got.get(f).unwrap().bytes[8 * k..8 * k + 8];
        u64::from_le_bytes(b.try_into().unwrap())
    };
    for i in [0usize, 1, 157, 299] {
        let at = |site, d| draw(Scalar::U64, seed, Draw { task: 0, iteration: i as i64, site, draw: d }).unwrap();
        assert_eq!(word("x", i), at(0, 0), "x[{i}]");
        assert_eq!(word("y", i), at(1, 1), "y[{i}]");
        // The inner loop's last draw (site 2) is the iteration's fifth.
        assert_eq!(word("z", i), at(2, 4), "z[{i}]");
    }
    // The struct_for's iteration is its row-major index.
    let g = |lin: usize| draw(Scalar::U64, seed, Draw { task: 1, iteration: lin as i64, site: 3, draw: 0 }).unwrap();
    assert_eq!(word("g", 5 * 3 + 2), g(17));
    for m in 0..4 {
        let want = draw(Scalar::U64, seed, Draw { task: 2, iteration: 0, site: 4, draw: m as u32 }).unwrap();
        assert_eq!(word("s", m), want, "s[{m}]");
    }
}

/// Statistical sanity of the JIT's draws: floats in [0, 1) with mean 1/2
/// and variance 1/12, integers with the mean of their range, within 6
/// standard errors.
#[test]
fn random_draws_have_the_uniform_mean_and_variance() {
    let n = 100_000usize;
    let text = format!(
        "field @f : f64[{n}]\nfield @u : u32[{n}]\nkernel @k() {{\n  for %i in 0 .. {n} {{\n    %a = random f64\n\
         store @f[%i], %a\n    %b = random u32\n    store @u[%i], %b\n  }}\n}}\n"
    );
    let stream = kiln::parser::parse(&text).unwrap();
    let cfg = CompileConfig::default();
    let mut jit = JitEngine::new(Compiler::host(cfg).unwrap(), JitPath::PerTask, 2).unwrap();
    jit.set_seed(7);
    let got = random_run(&mut jit, &stream);
    let f: Vec<f64> =
        got.get("f").unwrap().bytes.chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
    let u: Vec<f64> =
        got.get("u").unwrap().bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as f64).collect();
    let stats = |xs: &[f64]| {
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        (m, xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64)
    };
    let (m, v) = stats(&f);
    let nf = n as f64;
    assert!(f.iter().all(|x| (0.0..1.0).contains(x)));
    assert!((m - 0.5).abs() < 6.0 * (1.0 / 12.0 / nf).sqrt(), "mean {m}");
    assert!((v - 1.0 / 12.0).abs() < 6.0 * (1.0 / 180.0 / nf).sqrt(), "variance {v}");
    let (mu, _) = stats(&u);
    let top = u32::MAX as f64;
    assert!((mu / top - 0.5).abs() < 6.0 * (1.0 / 12.0 / nf).sqrt(), "u32 mean {mu}");
}

/// `f16` as Quadrants 1.3.3 computes it on the CPU, in both engines: the
/// expected bits were measured there (`x * x + x` and `sin(x) + 1` on
/// fields of `qd.f16`, casts with `qd.cast`). Each operation is rounded to
/// `f16` (the 7th `x * x + x` differs from one rounding of the `f32`
/// result), subnormals are kept, and `f64` converts through `f32` (so
/// 1 + 2^-11 + 2^-40 gives 1.0, not the nearest `f16`, 1 + 2^-10).
#[test]
fn f16_computes_what_quadrants_computes() {
    let text = "field @x : f16[8]\nfield @y : f16[8]\nfield @s : f16[8]\nfield @d : f64[2]\nfield @h : f16[3]\n\
                field @t : i32\nkernel @k() {\n  for %i in 0 .. 8 {\n    %a = load @x[%i]\n    %m = mul %a, %a\n\
                %y = add %m, %a\n    store @y[%i], %y\n    %sn = sin %a\n    %one = const 1.0 : f16\n\
                %t = add %sn, %one\n    store @s[%i], %t\n  }\n  %k0 = const 0 : i32\n  %k1 = const 1 : i32\n\
                %d0 = load @d[%k0]\n  %h0 = cast %d0 to f16\n  store @h[%k0], %h0\n  %d1 = load @d[%k1]\n\
                %h1 = cast %d1 to f16\n  store @h[%k1], %h1\n  %n = const 2049 : i32\n  %h2 = cast %n to f16\n\
                %k2 = const 2 : i32\n  store @h[%k2], %h2\n  %k7 = const 7 : i32\n  %x7 = load @x[%k7]\n\
                %tr = cast %x7 to i32\n  store @t[], %tr\n}\n";
    let stream = kiln::parser::parse(text).unwrap();
    kiln::verifier::verify(&stream).unwrap();
    let xs: [u16; 8] = [0x3c01, 0x3554, 0x0001, 0x8001, 0x7bff, 0x4248, 0x00a8, 0x5648];
    let halves = |f: &Fields, name: &str| -> Vec<u16> {
        f.get(name).unwrap().bytes.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
    };
    let run = |engine: &mut dyn Engine| {
        let mut fields = Fields::zeroed(&stream);
        fields.get_mut("x").unwrap().bytes = xs.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>().into();
        let d = [1.0 + 2f64.powi(-11) + 2f64.powi(-40), 65519.99];
        fields.get_mut("d").unwrap().bytes = d.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>().into();
        engine.run_kernel(&stream, "k", &[], &mut fields).unwrap();
        fields
    };
    let cfg = CompileConfig::default();
    let mut jit = JitEngine::new(Compiler::host(cfg).unwrap(), JitPath::PerTask, 2).unwrap();
    for (what, f) in [("interp", run(&mut kiln::interp::Interpreter::new())), ("jit", run(&mut jit))] {
        assert_eq!(halves(&f, "y"), [0x4002, 0x371a, 0x0001, 0x8001, 0x7c00, 0x4a81, 0x00a8, 0x70fc], "{what} x*x+x");
        assert_eq!(halves(&f, "s"), [0x3f5e, 0x3d4f, 0x3c00, 0x3c00, 0x3fe7, 0x3c01, 0x3c00, 0x3bc1], "{what} sin");
        assert_eq!(halves(&f, "h"), [0x3c00, 0x7bff, 0x6800], "{what} casts to f16");
        assert_eq!(f.get("t").unwrap().bytes[..], 100i32.to_le_bytes(), "{what} 100.5 to i32");
    }
}

/// An engine whose pool takes the calling thread (`kiln-run`'s) computes
/// what one with threads of its own does; the thread is then one of the
/// pool's, and a second such engine on the same thread gets an ordinary
/// pool (a thread belongs to one pool) and the same results.
#[test]
fn a_pool_that_takes_the_calling_thread_computes_the_same() {
    let text = "field @x : f32[100000]\nkernel @k() {\n  for %i in 0 .. 100000 {\n    %f = cast %i to f32\n    \
                %s = sin %f\n    store @x[%i], %s\n  }\n}\n";
    // A thread of its own: the test harness's thread may have joined a
    // pool in an earlier test.
    std::thread::spawn(move || {
        let stream = kiln::parser::parse(text).unwrap();
        let run = |engine: &mut JitEngine| {
            let mut fields = Fields::zeroed(&stream);
            engine.run_kernel(&stream, "k", &[], &mut fields).unwrap();
            fields.get("x").unwrap().digest()
        };
        let engine = |join: bool| {
            let e = JitEngine::new(Compiler::host(CompileConfig::default()).unwrap(), JitPath::PerTask, 2).unwrap();
            if join {
                e.with_calling_thread()
            } else {
                e
            }
        };
        let want = run(&mut engine(false));
        assert_eq!(rayon::current_thread_index(), None, "an ordinary pool leaves the thread alone");
        assert_eq!(run(&mut engine(true)), want);
        assert_eq!(rayon::current_thread_index(), Some(0), "the calling thread is the pool's first");
        assert_eq!(run(&mut engine(true)), want, "a second joining engine falls back to threads of its own");
    })
    .join()
    .unwrap();
}

/// The work of one iteration of each task of `text`'s kernel, in launch
/// order, as the engine estimates it.
fn task_work(text: &str) -> Vec<Option<u64>> {
    let split = kiln::passes::to_task_stream(kiln::parser::parse(text).unwrap()).unwrap();
    split.modules.iter().flat_map(|m| m.tasks()).map(|t| kiln_jit::runtime::iteration_work(&t.body)).collect()
}

#[test]
fn a_tasks_work_counts_its_statements_and_is_unknown_past_a_loop_or_call() {
    let head = "field @x : f32[64]\nfield @y : f32[64]\n";
    let plain = "kernel @k() {\n  for %i in 0 .. 64 {\n    %v = load @x[%i]\n    %w = add %v, %v\n    store @y[%i], %w\n  }\n}\n";
    assert_eq!(task_work(&format!("{head}{plain}")), [Some(3)]);
    let math = "kernel @k() {\n  for %i in 0 .. 64 {\n    %v = load @x[%i]\n    %s = sin %v\n    %q = sqrt %s\n    \
                %f = floor %q\n    store @y[%i], %f\n  }\n}\n";
    assert_eq!(task_work(&format!("{head}{math}")), [Some(1 + 16 + 4 + 1 + 1)]);
    let nested = "kernel @k() {\n  for %i in 0 .. 64 {\n    for %j in 0 .. 8 serial {\n      %v = load @x[%j]\n      \
                  store @y[%i], %v\n    }\n  }\n}\n";
    assert_eq!(task_work(&format!("{head}{nested}")), [None]);
    let call = "func @f(%a: f32) -> f32 {\n  %b = mul %a, %a\n  ret %b\n}\nkernel @k() {\n  for %i in 0 .. 64 {\n    \
                %v = load @x[%i]\n    %w = call @f(%v)\n    store @y[%i], %w\n  }\n}\n";
    assert_eq!(task_work(&format!("{head}{call}")), [None]);
    use kiln_jit::runtime::{worth_spreading, PARALLEL_MIN_WORK};
    assert!(!worth_spreading(Some(3), (PARALLEL_MIN_WORK / 3) as i64));
    assert!(worth_spreading(Some(3), (PARALLEL_MIN_WORK / 3 + 1) as i64));
    assert!(worth_spreading(None, 1), "unknown work is spread");
    assert!(!worth_spreading(Some(u64::MAX), 0));
}

/// An engine that chooses its threads (`kiln-run` without `--threads`)
/// runs a launch too small to gain from the pool on the calling thread,
/// and a run of such launches never starts the pool; a big launch starts
/// it, and the results are the same as with threads given.
#[test]
fn chosen_threads_spread_only_the_launches_worth_it() {
    let kernel = |n: u32| {
        format!(
            "field @x : f32[{n}]\nkernel @k() {{\n  for %i in 0 .. {n} {{\n    %f = cast %i to f32\n    \
             %s = sin %f\n    store @x[%i], %s\n  }}\n}}\n"
        )
    };
    // 2 + 16 + 1 work an iteration: 1,024 of them are too few, 1M enough.
    let (small, big) = (kernel(1024), kernel(1 << 20));
    // A thread of its own, which the engine's pool may take.
    std::thread::spawn(move || {
        let run = |engine: &mut JitEngine, text: &str| {
            let stream = kiln::parser::parse(text).unwrap();
            let mut fields = Fields::zeroed(&stream);
            engine.run_kernel(&stream, "k", &[], &mut fields).unwrap();
            fields.get("x").unwrap().digest()
        };
        let compiler = || Compiler::host(CompileConfig::default()).unwrap();
        let mut given = JitEngine::new(compiler(), JitPath::PerTask, 2).unwrap();
        let mut chosen =
            JitEngine::new(compiler(), JitPath::PerTask, 1).unwrap().with_threads(None).with_calling_thread();
        assert_eq!(run(&mut chosen, &small), run(&mut given, &small));
        assert_eq!(rayon::current_thread_index(), None, "a small launch starts no pool");
        assert_eq!(run(&mut chosen, &big), run(&mut given, &big));
        let many = kiln::cli::thread_count(None) > 1;
        assert_eq!(rayon::current_thread_index(), many.then_some(0), "a big launch starts the pool, on this thread");
    })
    .join()
    .unwrap();
}
