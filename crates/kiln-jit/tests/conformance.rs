//! The JIT against the reference interpreter on every operation of the
//! language, exhaustively: every binary and unary operator, comparison
//! predicate, cast pair and atomic operation, on every type it accepts,
//! over edge values (0, ±1, MIN, MAX, −0.0, ±inf, NaNs with and without
//! payloads, subnormals, shift amounts at and past the width), compared
//! bit for bit. `docs/language.md` says NaN results are the host unit's
//! and that both engines compute them at run time, so NaNs are compared by
//! their bits too.
//!
//! The operations come from the IR's own tables (`Scalar::ALL`,
//! `BinOp::ALL` with `accepts`, `UnOp::ALL` with `accepts`, `CmpOp::ALL`,
//! `AtomicOp::ALL` with `accepts`, every pair of `Scalar::ALL` for casts),
//! so an operation added to the IR without being taught to codegen fails
//! here. All cases of one operand type run in one kernel (one compile):
//! a loop over every pair of edge values, one output field per operation.

use kiln::config::{CompileConfig, OptLevel};
use kiln::exec::{Engine, Fields};
use kiln::interp::Interpreter;
use kiln::ir::{AtomicOp, BinOp, CmpOp, Scalar, UnOp};
use kiln_codegen::Compiler;
use kiln_jit::engine::{JitEngine, JitPath};
use std::fmt::Write;

/// Edge values of a type, as their bits (the low bytes, little-endian, of
/// the element).
fn edges(ty: Scalar) -> Vec<u64> {
    let i32s = |v: &[i64]| v.iter().map(|&x| x as i32 as u32 as u64).collect::<Vec<_>>();
    match ty {
        Scalar::I1 => vec![0, 1],
        // Shift amounts at and past the width (31..33, 64), negative ones.
        Scalar::I32 => i32s(&[0, 1, -1, 2, -7, 31, 32, 33, 64, i32::MIN as i64, i32::MAX as i64, i32::MIN as i64 + 1]),
        Scalar::I64 => {
            [0, 1, -1, 3, -9, 63, 64, 65, 1 << 40, i64::MIN, i64::MAX, i64::MIN + 1].iter().map(|&x| x as u64).collect()
        }
        Scalar::F32 => [
            0.0f32.to_bits(),
            (-0.0f32).to_bits(),
            1.0f32.to_bits(),
            (-1.0f32).to_bits(),
            0.5f32.to_bits(),
            (-2.5f32).to_bits(),
            3.0e9f32.to_bits(),
            f32::MAX.to_bits(),
            f32::MIN.to_bits(),
            f32::MIN_POSITIVE.to_bits(),
            1,           // the smallest subnormal
            0x8000_0001, // its negative
            0x007f_ffff, // the largest subnormal
            f32::INFINITY.to_bits(),
            f32::NEG_INFINITY.to_bits(),
            0x7fc0_0000, // the canonical quiet NaN
            0xffc0_0000, // the x86 default NaN
            0x7fc1_2345, // a quiet NaN with a payload
            0x7f80_0001, // a signalling NaN
        ]
        .iter()
        .map(|&b| b as u64)
        .collect(),
        Scalar::F16 => vec![
            0x0000, // 0.0
            0x8000, // -0.0
            0x3c00, // 1.0
            0xbc00, // -1.0
            0x3800, // 0.5
            0xc100, // -2.5
            0x3555, // the f16 nearest 1/3
            0x6800, // 2048, past which not every integer is an f16
            0x7bff, // 65504, the greatest
            0xfbff, // its negative
            0x0400, // the least normal
            0x0001, // the smallest subnormal
            0x8001, // its negative
            0x03ff, // the largest subnormal
            0x7c00, // inf
            0xfc00, // -inf
            0x7e00, // the canonical quiet NaN
            0xfe00, // the x86 default NaN
            0x7e5a, // a quiet NaN with a payload
            0x7c01, // a signalling NaN
        ],
        Scalar::F64 => vec![
            0.0f64.to_bits(),
            (-0.0f64).to_bits(),
            1.0f64.to_bits(),
            (-1.0f64).to_bits(),
            0.5f64.to_bits(),
            (-2.5f64).to_bits(),
            (-9.3e18f64).to_bits(),
            f64::MAX.to_bits(),
            f64::MIN.to_bits(),
            f64::MIN_POSITIVE.to_bits(),
            1,
            0x8000_0000_0000_0001,
            0x000f_ffff_ffff_ffff,
            f64::INFINITY.to_bits(),
            f64::NEG_INFINITY.to_bits(),
            0x7ff8_0000_0000_0000,
            0xfff8_0000_0000_0000,
            0x7ff8_0000_1234_5678,
            0x7ff0_0000_0000_0001,
        ],
        // Narrow and unsigned: zero, one, all ones, the sign bit and its
        // neighbours, shift amounts at and past the width.
        t => {
            let w = t.bits();
            let sign = 1u64 << (w - 1);
            [
                0,
                1,
                2,
                3,
                u64::MAX,
                sign,
                sign - 1,
                sign + 1,
                (w - 1) as u64,
                w as u64,
                (w + 1) as u64,
                64,
                0x5a5a_5a5a_5a5a_5a5a,
            ]
            .iter()
            .map(|&x| t.wrap_bits(x))
            .collect()
        }
    }
}

/// One operation of the kernel: the field its results go to, and its
/// statements in the loop body (`%a`, `%b` are the operands, `%i` the
/// case).
struct Op {
    field: String,
    ty: Scalar,
    body: String,
}

/// Every operation whose operands are of type `ty`, from the IR's tables.
fn operations(ty: Scalar) -> Vec<Op> {
    let t = ty.keyword();
    let mut ops = Vec::new();
    let mut value = |field: String, rty: Scalar, expr: String| {
        let body = format!("    %{field} = {expr}\n    store @{field}[%i], %{field}\n");
        ops.push(Op { field, ty: rty, body });
    };
    for op in BinOp::ALL.into_iter().filter(|op| op.accepts(ty)) {
        value(format!("bin_{}", op.keyword()), ty, format!("{} %a, %b", op.keyword()));
    }
    for op in UnOp::ALL.into_iter().filter(|op| op.accepts(ty)) {
        value(format!("un_{}", op.keyword()), ty, format!("{} %a", op.keyword()));
    }
    for op in CmpOp::ALL {
        value(format!("cmp_{}", op.keyword()), Scalar::I1, format!("cmp {} %a, %b", op.keyword()));
    }
    for to in Scalar::ALL {
        value(format!("cast_{}", to.keyword()), to, format!("cast %a to {}", to.keyword()));
    }
    for op in AtomicOp::ALL.into_iter().filter(|op| op.accepts(ty)) {
        // The element starts at %a; the old value and the new one are
        // both results.
        let k = op.keyword();
        let body = format!(
            "    store @atomic_{k}[%i], %a\n    %old_{k} = atomic {k} @atomic_{k}[%i], %b\n    store @old_{k}[%i], %old_{k}\n"
        );
        ops.push(Op { field: format!("atomic_{k}"), ty, body });
        ops.push(Op { field: format!("old_{k}"), ty, body: String::new() });
    }
    assert!(!ops.is_empty(), "no operation on {t}");
    ops
}

/// The kernel running every operation on `ty` over every pair of edge
/// values (`n` cases).
fn kernel(ty: Scalar, n: usize, ops: &[Op]) -> String {
    let t = ty.keyword();
    let mut s = format!("field @a : {t}[{n}]\nfield @b : {t}[{n}]\n");
    for op in ops {
        let _ = writeln!(s, "field @{} : {}[{n}]", op.field, op.ty.keyword());
    }
    let _ =
        write!(s, "\nkernel @conformance() {{\n  for %i in 0 .. {n} {{\n    %a = load @a[%i]\n    %b = load @b[%i]\n");
    for op in ops {
        s.push_str(&op.body);
    }
    s.push_str("  }\n}\n");
    s
}

fn set_elements(fields: &mut Fields, name: &str, values: impl Iterator<Item = u64>) {
    let d = fields.get_mut(name).unwrap();
    let size = d.elem.size_bytes();
    for (k, v) in values.enumerate() {
        d.bytes[k * size..(k + 1) * size].copy_from_slice(&v.to_le_bytes()[..size]);
    }
}

fn element(fields: &Fields, name: &str, k: usize) -> u64 {
    let d = fields.get(name).unwrap();
    let size = d.elem.size_bytes();
    let mut b = [0u8; 8];
    b[..size].copy_from_slice(&d.bytes[k * size..(k + 1) * size]);
    u64::from_le_bytes(b)
}

/// Runs every operation on `ty` in both engines and returns the
/// disagreements, one line each.
fn disagreements(ty: Scalar, opt: OptLevel) -> Vec<String> {
    let vals = edges(ty);
    let pairs: Vec<(u64, u64)> = vals.iter().flat_map(|&a| vals.iter().map(move |&b| (a, b))).collect();
    disagreements_over(ty, &pairs, &operations(ty), opt)
}

/// Runs `ops` on `ty` over `pairs` in both engines and returns the
/// disagreements, one line each.
fn disagreements_over(ty: Scalar, pairs: &[(u64, u64)], ops: &[Op], opt: OptLevel) -> Vec<String> {
    let text = kernel(ty, pairs.len(), ops);
    let stream = kiln::parser::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    kiln::verifier::verify(&stream).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let run = |engine: &mut dyn Engine| {
        let mut fields = Fields::try_zeroed(&stream).unwrap();
        set_elements(&mut fields, "a", pairs.iter().map(|p| p.0));
        set_elements(&mut fields, "b", pairs.iter().map(|p| p.1));
        engine.run_kernel(&stream, "conformance", &[], &mut fields).map(|_| fields)
    };
    let want = run(&mut Interpreter::new()).unwrap();
    let config = CompileConfig { opt_level: opt, ..CompileConfig::default() };
    let mut jit = JitEngine::new(Compiler::host(config).unwrap(), JitPath::PerTask, 1).unwrap();
    match run(&mut jit) {
        Ok(got) => compare(ops, pairs, &want, &got, &format!("{} at {opt:?}", ty.keyword())),
        Err(e) => vec![format!("{} at {opt:?}: the JIT fails: {e}", ty.keyword())],
    }
}

/// The cases whose results differ between `want` and `got`, one line each.
fn compare(ops: &[Op], pairs: &[(u64, u64)], want: &Fields, got: &Fields, what: &str) -> Vec<String> {
    let mut out = Vec::new();
    for op in ops {
        for (k, &(a, b)) in pairs.iter().enumerate() {
            let (w, g) = (element(want, &op.field, k), element(got, &op.field, k));
            if w != g {
                out.push(format!("{} {what}: a={a:#x} b={b:#x}: interp {w:#x}, jit {g:#x}", op.field));
            }
        }
    }
    out
}

fn check(ty: Scalar) {
    let mut bad = Vec::new();
    for opt in [OptLevel::O0, OptLevel::O2] {
        bad.extend(disagreements(ty, opt));
    }
    assert_agree(&bad);
}

fn assert_agree(bad: &[String]) {
    assert!(
        bad.is_empty(),
        "{} disagreements:\n{}",
        bad.len(),
        bad.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn i1_operations() {
    check(Scalar::I1);
}

#[test]
fn i32_operations() {
    check(Scalar::I32);
}

#[test]
fn i64_operations() {
    check(Scalar::I64);
}

#[test]
fn i8_operations() {
    check(Scalar::I8);
}

#[test]
fn i16_operations() {
    check(Scalar::I16);
}

#[test]
fn u8_operations() {
    check(Scalar::U8);
}

#[test]
fn u16_operations() {
    check(Scalar::U16);
}

#[test]
fn u32_operations() {
    check(Scalar::U32);
}

#[test]
fn u64_operations() {
    check(Scalar::U64);
}

#[test]
fn f32_operations() {
    check(Scalar::F32);
}

#[test]
fn f64_operations() {
    check(Scalar::F64);
}

#[test]
fn f16_operations() {
    check(Scalar::F16);
}

/// The operations of `ty` of one operand: unary operators and casts.
fn unary_operations(ty: Scalar) -> Vec<Op> {
    operations(ty).into_iter().filter(|op| op.field.starts_with("un_") || op.field.starts_with("cast_")).collect()
}

/// Every unary operator and cast of `f16`, on every one of its 65536
/// values, and every 16-bit integer cast to `f16`.
#[test]
fn f16_unary_operations_and_casts_on_every_input() {
    let every: Vec<(u64, u64)> = (0..1u64 << 16).map(|a| (a, 0)).collect();
    let to_f16 = |ty| operations(ty).into_iter().filter(|op| op.field == "cast_f16").collect::<Vec<_>>();
    let mut bad = Vec::new();
    for opt in [OptLevel::O0, OptLevel::O2] {
        bad.extend(disagreements_over(Scalar::F16, &every, &unary_operations(Scalar::F16), opt));
        for ty in [Scalar::I16, Scalar::U16] {
            bad.extend(disagreements_over(ty, &every, &to_f16(ty), opt));
        }
    }
    assert_agree(&bad);
}

/// Every binary operator and comparison of `f16` over 2^18 pairs of
/// values drawn from all of them, and `f32` and `f64` values spread over
/// every exponent cast to `f16` (where rounding twice, through `f32`, is
/// what both engines must do).
#[test]
fn f16_binary_operations_and_narrowing_casts_over_many_inputs() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let pairs: Vec<(u64, u64)> = (0..1 << 18).map(|_| (next() & 0xffff, next() & 0xffff)).collect();
    let binary = operations(Scalar::F16)
        .into_iter()
        .filter(|op| op.field.starts_with("bin_") || op.field.starts_with("cmp_"))
        .collect::<Vec<_>>();
    let wide: Vec<(u64, u64)> = (0..1 << 18).map(|_| (next(), 0)).collect();
    let narrow32: Vec<(u64, u64)> = wide.iter().map(|&(a, _)| (a & 0xffff_ffff, 0)).collect();
    let to_f16 = |ty| operations(ty).into_iter().filter(|op| op.field == "cast_f16").collect::<Vec<_>>();
    let mut bad = Vec::new();
    for opt in [OptLevel::O0, OptLevel::O2] {
        bad.extend(disagreements_over(Scalar::F16, &pairs, &binary, opt));
        bad.extend(disagreements_over(Scalar::F32, &narrow32, &to_f16(Scalar::F32), opt));
        bad.extend(disagreements_over(Scalar::F64, &wide, &to_f16(Scalar::F64), opt));
    }
    assert_agree(&bad);
}

/// Every type of the IR has its test above, and every operation table is
/// reached: a new type or operation cannot slip past unchecked.
#[test]
fn the_tables_are_covered() {
    assert_eq!(Scalar::ALL.len(), 12, "a new type needs its test here");
    for op in BinOp::ALL {
        assert!(Scalar::ALL.iter().any(|&t| op.accepts(t)), "{} accepts no type", op.keyword());
    }
    for op in UnOp::ALL {
        assert!(Scalar::ALL.iter().any(|&t| op.accepts(t)), "{} accepts no type", op.keyword());
    }
    for op in AtomicOp::ALL {
        assert!(Scalar::ALL.iter().any(|&t| op.accepts(t)), "atomic {} accepts no type", op.keyword());
    }
}

/// The comparison finds a difference in any result field, old values of
/// atomics included, and names the case.
#[test]
fn a_difference_is_reported() {
    let ty = Scalar::I32;
    let ops = operations(ty);
    let text = kernel(ty, 4, &ops);
    assert!(text.contains("%bin_add = add %a, %b") && text.contains("atomic add @atomic_add[%i], %b"), "{text}");
    let stream = kiln::parser::parse(&text).unwrap();
    let pairs = [(1, 2), (3, 4), (5, 6), (7, 8)];
    let want = Fields::try_zeroed(&stream).unwrap();
    assert!(compare(&ops, &pairs, &want, &want, "i32").is_empty());
    for op in &ops {
        let mut got = Fields::try_zeroed(&stream).unwrap();
        set_elements(&mut got, &op.field, [0, 0, 1, 0].into_iter());
        let d = compare(&ops, &pairs, &want, &got, "i32");
        assert_eq!(d, [format!("{} i32: a=0x5 b=0x6: interp 0x0, jit 0x1", op.field)]);
    }
}
