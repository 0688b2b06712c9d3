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
