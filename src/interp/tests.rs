//! Unit tests of the interpreter: one test per semantic rule of
//! `docs/language.md`, then execution of hand-built bodies (control flow,
//! tasks, launches, bounds checks).

use super::*;

fn i32c(v: i32) -> Const {
    Const::i32(v)
}
fn i64c(v: i64) -> Const {
    Const::i64(v)
}
fn f32c(v: f32) -> Const {
    Const::f32(v)
}
fn f64c(v: f64) -> Const {
    Const::f64(v)
}
fn bin(op: BinOp, a: Const, b: Const) -> Const {
    eval_binary(op, a, b)
}
fn f32_of(c: Const) -> f32 {
    f32::from_bits(c.bits as u32)
}

#[test]
fn integers_wrap() {
    assert_eq!(bin(BinOp::Add, i32c(i32::MAX), i32c(1)), i32c(i32::MIN));
    assert_eq!(bin(BinOp::Sub, i32c(i32::MIN), i32c(1)), i32c(i32::MAX));
    assert_eq!(bin(BinOp::Mul, i32c(0x10000), i32c(0x10000)), i32c(0));
    assert_eq!(bin(BinOp::Add, i64c(i64::MAX), i64c(1)), i64c(i64::MIN));
    assert_eq!(eval_unary(UnOp::Neg, i32c(i32::MIN)), i32c(i32::MIN));
    assert_eq!(eval_unary(UnOp::Abs, i64c(i64::MIN)), i64c(i64::MIN));
    assert_eq!(eval_unary(UnOp::Abs, i32c(-5)), i32c(5));
}

/// `docs/language.md`, "Half precision": each f16 operation is the f32 one
/// rounded to f16; `neg` and `abs` change the sign bit only; f64 converts
/// through f32; f16 subnormals stay in flush mode.
#[test]
fn f16_rounds_each_operation_from_f32() {
    let h = |bits: u16| Const { ty: Scalar::F16, bits: bits as u64 };
    // 100.5 * 100.5 is 10100.25, which rounds to 10104 (0x70ef); adding
    // 100.5 then gives 0x70fc, where rounding the f32 result 10200.75 once
    // would give 0x70fb (Quadrants computes 0x70fc).
    let x = h(0x5648);
    let m = bin(BinOp::Mul, x, x);
    assert_eq!(m, h(0x70ef));
    assert_eq!(bin(BinOp::Add, m, x), h(0x70fc));
    // 2049 is no f16: it rounds to even, 2048.
    assert_eq!(eval_cast(i32c(2049), Scalar::F16), h(0x6800));
    // 1 + 2^-11 + 2^-40: f32 holds 1 + 2^-11, a tie that goes to 1.0.
    assert_eq!(eval_cast(f64c(1.0 + 2f64.powi(-11) + 2f64.powi(-40)), Scalar::F16), h(0x3c00));
    assert_eq!(eval_cast(f32c(1.0 + 2f32.powi(-11) + 2f32.powi(-20)), Scalar::F16), h(0x3c01));
    // A signalling NaN: neg flips its sign bit, an arithmetic operation quiets it.
    assert_eq!(eval_unary(UnOp::Neg, h(0x7c01)), h(0xfc01));
    assert_eq!(eval_unary(UnOp::Abs, h(0xfc01)), h(0x7c01));
    assert_eq!(bin(BinOp::Add, h(0x7c01), h(0x3c00)), h(0x7e01));
    assert_eq!(eval_cast(h(0x7c01), Scalar::F32), f32c(f32::from_bits(0x7fc0_2000)));
    // The least subnormal times one stays, in either mode.
    for mode in crate::config::Denormals::ALL {
        let _env = crate::fpenv::FpEnv::enter(mode);
        assert_eq!(bin(BinOp::Mul, h(0x0001), h(0x3c00)), h(0x0001), "{mode}");
    }
}

#[test]
fn division_by_zero_gives_zero() {
    assert_eq!(bin(BinOp::Div, i32c(7), i32c(0)), i32c(0));
    assert_eq!(bin(BinOp::Rem, i32c(7), i32c(0)), i32c(0));
    assert_eq!(bin(BinOp::Div, i64c(-7), i64c(0)), i64c(0));
    assert_eq!(bin(BinOp::Rem, i64c(-7), i64c(0)), i64c(0));
}

#[test]
fn min_divided_by_minus_one_wraps() {
    assert_eq!(bin(BinOp::Div, i32c(i32::MIN), i32c(-1)), i32c(i32::MIN));
    assert_eq!(bin(BinOp::Rem, i32c(i32::MIN), i32c(-1)), i32c(0));
    assert_eq!(bin(BinOp::Div, i64c(i64::MIN), i64c(-1)), i64c(i64::MIN));
    assert_eq!(bin(BinOp::Rem, i64c(i64::MIN), i64c(-1)), i64c(0));
}

#[test]
fn integer_division_truncates_and_rem_has_the_dividends_sign() {
    assert_eq!(bin(BinOp::Div, i32c(-7), i32c(2)), i32c(-3));
    assert_eq!(bin(BinOp::Rem, i32c(-7), i32c(2)), i32c(-1));
    assert_eq!(bin(BinOp::Rem, i32c(7), i32c(-2)), i32c(1));
}

#[test]
fn shift_amounts_are_taken_modulo_the_width() {
    assert_eq!(bin(BinOp::Shl, i32c(1), i32c(33)), i32c(2));
    assert_eq!(bin(BinOp::Shl, i64c(1), i64c(65)), i64c(2));
    assert_eq!(bin(BinOp::Shl, i32c(1), i32c(-1)), i32c(i32::MIN));
    assert_eq!(bin(BinOp::Shr, i32c(-8), i32c(1)), i32c(-4));
    assert_eq!(bin(BinOp::Shr, i32c(-8), i32c(32)), i32c(-8));
    assert_eq!(bin(BinOp::Ushr, i32c(-1), i32c(28)), i32c(15));
    assert_eq!(bin(BinOp::Ushr, i64c(-1), i64c(60)), i64c(15));
    assert_eq!(bin(BinOp::Ushr, i32c(-1), i32c(32)), i32c(-1));
}

#[test]
fn bitwise_operators_and_not() {
    assert_eq!(bin(BinOp::And, i32c(0b1100), i32c(0b1010)), i32c(0b1000));
    assert_eq!(bin(BinOp::Or, i32c(0b1100), i32c(0b1010)), i32c(0b1110));
    assert_eq!(bin(BinOp::Xor, i32c(0b1100), i32c(0b1010)), i32c(0b0110));
    assert_eq!(eval_unary(UnOp::Not, i32c(0)), i32c(-1));
    assert_eq!(eval_unary(UnOp::Not, Const::bool(true)), Const::bool(false));
    assert_eq!(bin(BinOp::Xor, Const::bool(true), Const::bool(true)), Const::bool(false));
}

#[test]
fn integer_min_max_are_signed() {
    assert_eq!(bin(BinOp::Min, i32c(-1), i32c(1)), i32c(-1));
    assert_eq!(bin(BinOp::Max, i64c(-1), i64c(i64::MIN)), i64c(-1));
}

#[test]
fn float_rem_is_fmod() {
    assert_eq!(bin(BinOp::Rem, f32c(-7.5), f32c(2.0)), f32c(-1.5));
    assert_eq!(bin(BinOp::Rem, f64c(7.5), f64c(-2.0)), f64c(1.5));
    assert!(f32_of(bin(BinOp::Rem, f32c(1.0), f32c(0.0))).is_nan());
}

#[test]
fn float_arithmetic_is_ieee() {
    assert_eq!(bin(BinOp::Div, f32c(1.0), f32c(0.0)), f32c(f32::INFINITY));
    assert_eq!(bin(BinOp::Div, f32c(-1.0), f32c(0.0)), f32c(f32::NEG_INFINITY));
    assert!(f32_of(bin(BinOp::Sub, f32c(f32::INFINITY), f32c(f32::INFINITY))).is_nan());
    assert_eq!(bin(BinOp::Add, f32c(0.1), f32c(0.2)), f32c(0.1f32 + 0.2f32));
    // f32 arithmetic is done in f32, not widened.
    assert_eq!(bin(BinOp::Add, f32c(16777216.0), f32c(1.0)), f32c(16777216.0));
    assert_eq!(eval_unary(UnOp::Neg, f32c(0.0)), f32c(-0.0));
    assert_eq!(eval_unary(UnOp::Abs, f64c(-0.0)), f64c(0.0));
    assert_eq!(eval_unary(UnOp::Sqrt, f64c(2.0)), f64c(2f64.sqrt()));
}

#[test]
fn float_min_max_return_the_other_operand_on_nan() {
    for nan in [f32c(f32::NAN), Const { ty: Scalar::F32, bits: 0xffc0_0000 }] {
        assert_eq!(bin(BinOp::Min, nan, f32c(1.0)), f32c(1.0));
        assert_eq!(bin(BinOp::Min, f32c(1.0), nan), f32c(1.0));
        assert_eq!(bin(BinOp::Max, nan, f32c(-1.0)), f32c(-1.0));
        assert_eq!(bin(BinOp::Max, f32c(-1.0), nan), f32c(-1.0));
    }
    assert!(f64::from_bits(bin(BinOp::Min, f64c(f64::NAN), f64c(f64::NAN)).bits).is_nan());
    assert_eq!(bin(BinOp::Min, f64c(2.0), f64c(-3.0)), f64c(-3.0));
}

#[test]
fn float_min_max_order_negative_zero_below_positive_zero() {
    for (a, b) in [(0.0f32, -0.0f32), (-0.0, 0.0)] {
        assert_eq!(bin(BinOp::Min, f32c(a), f32c(b)).bits, (-0.0f32).to_bits() as u64);
        assert_eq!(bin(BinOp::Max, f32c(a), f32c(b)).bits, 0.0f32.to_bits() as u64);
        assert_eq!(bin(BinOp::Min, f64c(a as f64), f64c(b as f64)).bits, (-0.0f64).to_bits());
        assert_eq!(bin(BinOp::Max, f64c(a as f64), f64c(b as f64)).bits, 0.0f64.to_bits());
    }
}

#[test]
fn float_compares_are_ordered_except_ne() {
    let nan = f32c(f32::NAN);
    let one = f32c(1.0);
    for op in [CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge, CmpOp::Eq] {
        assert_eq!(eval_cmp(op, nan, one), Const::bool(false), "{op:?}");
        assert_eq!(eval_cmp(op, nan, nan), Const::bool(false), "{op:?}");
    }
    assert_eq!(eval_cmp(CmpOp::Ne, nan, nan), Const::bool(true));
    assert_eq!(eval_cmp(CmpOp::Ne, one, nan), Const::bool(true));
    assert_eq!(eval_cmp(CmpOp::Eq, f64c(0.0), f64c(-0.0)), Const::bool(true));
}

#[test]
fn integer_compares_are_signed() {
    assert_eq!(eval_cmp(CmpOp::Lt, i32c(-1), i32c(0)), Const::bool(true));
    assert_eq!(eval_cmp(CmpOp::Gt, i64c(i64::MIN), i64c(0)), Const::bool(false));
    assert_eq!(eval_cmp(CmpOp::Ge, i32c(5), i32c(5)), Const::bool(true));
    // i1 is 0 or 1: false < true.
    assert_eq!(eval_cmp(CmpOp::Lt, Const::bool(false), Const::bool(true)), Const::bool(true));
}

#[test]
fn float_to_int_casts_saturate_and_nan_gives_zero() {
    assert_eq!(eval_cast(f32c(1e10), Scalar::I32), i32c(i32::MAX));
    assert_eq!(eval_cast(f32c(f32::NEG_INFINITY), Scalar::I32), i32c(i32::MIN));
    assert_eq!(eval_cast(f32c(f32::NAN), Scalar::I32), i32c(0));
    assert_eq!(eval_cast(f64c(1e300), Scalar::I64), i64c(i64::MAX));
    assert_eq!(eval_cast(f64c(-2.9), Scalar::I64), i64c(-2));
    assert_eq!(eval_cast(f64c(f64::NAN), Scalar::I64), i64c(0));
    assert_eq!(eval_cast(f64c(3e9), Scalar::I32), i32c(i32::MAX));
}

#[test]
fn int_to_int_casts_truncate_or_sign_extend() {
    assert_eq!(eval_cast(i64c(0x1_0000_0005), Scalar::I32), i32c(5));
    assert_eq!(eval_cast(i64c(0xffff_ffff), Scalar::I32), i32c(-1));
    assert_eq!(eval_cast(i32c(-1), Scalar::I64), i64c(-1));
}

#[test]
fn casts_to_and_from_i1() {
    assert_eq!(eval_cast(Const::bool(true), Scalar::I32), i32c(1));
    assert_eq!(eval_cast(Const::bool(true), Scalar::I64), i64c(1));
    assert_eq!(eval_cast(Const::bool(true), Scalar::F32), f32c(1.0));
    assert_eq!(eval_cast(i32c(2), Scalar::I1), Const::bool(true));
    assert_eq!(eval_cast(i64c(0), Scalar::I1), Const::bool(false));
    assert_eq!(eval_cast(f32c(0.5), Scalar::I1), Const::bool(true));
    assert_eq!(eval_cast(f32c(-0.0), Scalar::I1), Const::bool(false));
    assert_eq!(eval_cast(f64c(f64::NAN), Scalar::I1), Const::bool(true));
}

#[test]
fn int_to_float_and_float_to_float_casts_round_to_nearest() {
    assert_eq!(eval_cast(i32c(16777217), Scalar::F32), f32c(16777216.0));
    assert_eq!(eval_cast(i64c(-3), Scalar::F64), f64c(-3.0));
    assert_eq!(eval_cast(f64c(0.1), Scalar::F32), f32c(0.1));
    assert_eq!(eval_cast(f32c(0.1), Scalar::F64), f64c(0.1f32 as f64));
    assert_eq!(eval_cast(f64c(1e40), Scalar::F32), f32c(f32::INFINITY));
}

#[test]
fn round_is_half_away_from_zero() {
    assert_eq!(eval_unary(UnOp::Round, f32c(2.5)), f32c(3.0));
    assert_eq!(eval_unary(UnOp::Round, f32c(-2.5)), f32c(-3.0));
    assert_eq!(eval_unary(UnOp::Round, f64c(0.5)), f64c(1.0));
    assert_eq!(eval_unary(UnOp::Round, f64c(1.4999999999999998)), f64c(1.0));
    assert_eq!(eval_unary(UnOp::Floor, f32c(-0.5)), f32c(-1.0));
    assert_eq!(eval_unary(UnOp::Ceil, f32c(-0.5)).bits, (-0.0f32).to_bits() as u64);
}

// ---------------------------------------------------------------------------
// Hand-built bodies.

/// A tiny builder of bodies for tests that must not depend on the parser.
struct B {
    body: Body,
    cur: Block,
    n: usize,
}

impl B {
    fn new() -> B {
        let body = Body::new();
        let cur = body.entry;
        B { body, cur, n: 0 }
    }
    fn name(&mut self) -> String {
        self.n += 1;
        format!("v{}", self.n)
    }
    fn param(&mut self, ty: Scalar) -> Value {
        let n = self.name();
        self.body.add_param(n, ty, Span::DUMMY)
    }
    fn val(&mut self, kind: StmtKind, ty: Type) -> Value {
        let n = self.name();
        let (s, v) = self.body.new_stmt_with_result(kind, n, ty, Span::DUMMY);
        self.body.push(self.cur, s);
        v
    }
    fn c(&mut self, c: Const) -> Value {
        self.val(StmtKind::Const(c), Type::Scalar(c.ty))
    }
    fn st(&mut self, kind: StmtKind) -> Stmt {
        let s = self.body.new_stmt(kind, Span::DUMMY);
        self.body.push(self.cur, s);
        s
    }
    fn load(&mut self, field: &str, idx: &[Value], ty: Scalar) -> Value {
        self.val(StmtKind::Load(fref(field, idx)), Type::Scalar(ty))
    }
    fn store(&mut self, field: &str, idx: &[Value], v: Value) {
        self.st(StmtKind::Store(fref(field, idx), v));
    }
    fn bin(&mut self, op: BinOp, a: Value, b: Value) -> Value {
        let ty = self.body.ty(a);
        self.val(StmtKind::Binary(op, a, b), ty)
    }
    /// Lowers `f` into a fresh block and returns it.
    fn block(&mut self, f: impl FnOnce(&mut B)) -> Block {
        let b = self.body.new_block();
        let saved = std::mem::replace(&mut self.cur, b);
        f(self);
        self.cur = saved;
        b
    }
    fn loop_var(&mut self, ty: Scalar) -> Value {
        let n = self.name();
        self.body.new_value(n, Type::Scalar(ty), ValueDef::Undefined, Span::DUMMY)
    }
    fn for_(&mut self, ty: Scalar, lo: Bound, hi: Bound, f: impl FnOnce(&mut B, Value)) {
        let var = self.loop_var(ty);
        let body = self.block(|b| f(b, var));
        let s = self.st(StmtKind::For { var, lo, hi, body, serial: false });
        self.body[var].def = ValueDef::LoopVar(s, 0);
    }
    fn task(&mut self, name: &str, kind: TaskKind, f: impl FnOnce(&mut B)) {
        let body = self.block(f);
        self.st(StmtKind::Task { name: name.into(), kind, body });
    }
}

fn fref(field: &str, idx: &[Value]) -> FieldRef {
    FieldRef { field: field.into(), indices: idx.to_vec(), span: Span::DUMMY }
}

fn field(name: &str, elem: Scalar, shape: &[u64]) -> Item {
    Item::Field(Field { name: name.into(), elem, shape: shape.to_vec(), span: Span::DUMMY })
}

fn kernel(name: &str, b: B, params: &[Scalar]) -> Item {
    Item::Kernel(Kernel {
        name: name.into(),
        params: params.iter().map(|&ty| Param { ty, default: None, span: Span::DUMMY }).collect(),
        body: b.body,
        span: Span::DUMMY,
    })
}

fn stream(items: Vec<Item>) -> Stream {
    Stream { modules: vec![Module { name: None, items, span: Span::DUMMY }] }
}

fn run(s: &Stream, k: &str, args: &[Const]) -> Result<Fields, RunError> {
    let mut fields = Fields::zeroed(s);
    Interpreter::new().run_kernel(s, k, args, &mut fields)?;
    Ok(fields)
}

fn i32s(f: &Fields, name: &str) -> Vec<i32> {
    f.get(name).unwrap().bytes.chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn saxpy_runs() {
    let mut b = B::new();
    let a = b.param(Scalar::F32);
    b.for_(Scalar::I32, Bound::Const(0), Bound::Const(4), |b, i| {
        let fi = b.val(StmtKind::Cast(i, Scalar::F32), Type::Scalar(Scalar::F32));
        let t = b.bin(BinOp::Mul, a, fi);
        b.store("y", &[i], t);
    });
    let s = stream(vec![field("y", Scalar::F32, &[4]), kernel("k", b, &[Scalar::F32])]);
    let f = run(&s, "k", &[f32c(2.5)]).unwrap();
    let y: Vec<f32> = f.get("y").unwrap().bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(y, [0.0, 2.5, 5.0, 7.5]);
}

#[test]
fn out_of_bounds_in_a_plain_kernel_names_kernel_task_field_and_index() {
    let mut b = B::new();
    let i = b.c(i32c(1024));
    let v = b.c(f32c(1.0));
    b.store("x", &[i], v);
    let s = stream(vec![field("x", Scalar::F32, &[1024]), kernel("k", b, &[])]);
    let e = run(&s, "k", &[]).unwrap_err();
    // The task is the one offload puts the statement in, as the JIT names it.
    assert_eq!(e.message, "kernel @k, task @k.0: index 1024 out of bounds for field @x of shape [1024] (dimension 0)");
}

#[test]
fn out_of_bounds_in_a_task_names_the_task_and_dimension() {
    let mut b = B::new();
    let var = b.loop_var(Scalar::I32);
    b.task("k.1", TaskKind::RangeFor { var, lo: Bound::Const(0), hi: Bound::Const(2), block_dim: 64 }, |b| {
        let m = b.c(i32c(-3));
        let j = b.bin(BinOp::Add, var, m);
        b.load("g", &[var, j], Scalar::I32);
    });
    let s = stream(vec![field("g", Scalar::I32, &[4, 4]), kernel("k", b, &[])]);
    let e = run(&s, "k", &[]).unwrap_err();
    assert_eq!(e.message, "kernel @k, task @k.1: index -3 out of bounds for field @g of shape [4, 4] (dimension 1)");
}

#[test]
fn a_failed_run_keeps_the_fields_storage() {
    let mut b = B::new();
    let z = b.c(i32c(0));
    let v = b.c(i32c(7));
    b.store("x", &[z], v);
    let big = b.c(i32c(9));
    b.store("x", &[big], v);
    let s = stream(vec![field("x", Scalar::I32, &[2]), kernel("k", b, &[])]);
    let mut fields = Fields::zeroed(&s);
    assert!(Interpreter::new().run_kernel(&s, "k", &[], &mut fields).is_err());
    assert_eq!(i32s(&fields, "x"), [7, 0]);
}

#[test]
fn i1_field_elements_are_bytes() {
    let mut b = B::new();
    let one = b.c(i32c(1));
    let t = b.c(Const::bool(true));
    b.store("m", &[one], t);
    let s = stream(vec![field("m", Scalar::I1, &[3]), kernel("k", b, &[])]);
    let f = run(&s, "k", &[]).unwrap();
    assert_eq!(*f.get("m").unwrap().bytes, [0, 1, 0]);
}

#[test]
fn alloca_slots_start_at_zero_each_time() {
    // for i in 0..3 { p = alloca; old = load p; store x[i], old; store p, 5 }
    let mut b = B::new();
    b.for_(Scalar::I32, Bound::Const(0), Bound::Const(3), |b, i| {
        let p = b.val(StmtKind::Alloca(Scalar::I32), Type::Slot(Scalar::I32));
        let old = b.val(StmtKind::LoadSlot(p), Type::Scalar(Scalar::I32));
        b.store("x", &[i], old);
        let five = b.c(i32c(5));
        b.st(StmtKind::StoreSlot(p, five));
    });
    let s = stream(vec![field("x", Scalar::I32, &[3]), kernel("k", b, &[])]);
    assert_eq!(i32s(&run(&s, "k", &[]).unwrap(), "x"), [0, 0, 0]);
}

#[test]
fn while_with_break_and_continue() {
    // n = 0; while { n += 1; if n > 5 { break }; if n & 1 { continue }; atomic add @t[], n }
    // adds 2 + 4 = 6.
    let mut b = B::new();
    let p = b.val(StmtKind::Alloca(Scalar::I32), Type::Slot(Scalar::I32));
    let body = b.block(|b| {
        let n0 = b.val(StmtKind::LoadSlot(p), Type::Scalar(Scalar::I32));
        let one = b.c(i32c(1));
        let n = b.bin(BinOp::Add, n0, one);
        b.st(StmtKind::StoreSlot(p, n));
        let five = b.c(i32c(5));
        let done = b.val(StmtKind::Cmp(CmpOp::Gt, n, five), Type::Scalar(Scalar::I1));
        let brk = b.block(|b| {
            b.st(StmtKind::Break);
        });
        b.st(StmtKind::If { cond: done, then_blk: brk, else_blk: None });
        let odd = b.bin(BinOp::And, n, one);
        let oddb = b.val(StmtKind::Cast(odd, Scalar::I1), Type::Scalar(Scalar::I1));
        let cont = b.block(|b| {
            b.st(StmtKind::Continue);
        });
        b.st(StmtKind::If { cond: oddb, then_blk: cont, else_blk: None });
        b.st(StmtKind::Atomic(AtomicOp::Add, fref("t", &[]), n));
    });
    b.st(StmtKind::While { body });
    let s = stream(vec![field("t", Scalar::I32, &[]), kernel("k", b, &[])]);
    assert_eq!(i32s(&run(&s, "k", &[]).unwrap(), "t"), [6]);
}

#[test]
fn if_else_and_select() {
    let mut b = B::new();
    let c = b.c(Const::bool(false));
    let then_blk = b.block(|b| {
        let z = b.c(i32c(0));
        let v = b.c(i32c(1));
        b.store("x", &[z], v);
    });
    let else_blk = b.block(|b| {
        let z = b.c(i32c(0));
        let v = b.c(i32c(2));
        b.store("x", &[z], v);
    });
    b.st(StmtKind::If { cond: c, then_blk, else_blk: Some(else_blk) });
    let one = b.c(i32c(1));
    let a = b.c(i32c(10));
    let d = b.c(i32c(20));
    let t = b.c(Const::bool(true));
    let r = b.val(StmtKind::Select(t, a, d), Type::Scalar(Scalar::I32));
    b.store("x", &[one], r);
    let s = stream(vec![field("x", Scalar::I32, &[2]), kernel("k", b, &[])]);
    assert_eq!(i32s(&run(&s, "k", &[]).unwrap(), "x"), [2, 10]);
}

#[test]
fn calls_pass_arguments_and_return_values() {
    let mut f = B::new();
    let x = f.param(Scalar::I32);
    let y = f.param(Scalar::I32);
    let r = f.bin(BinOp::Sub, x, y);
    f.st(StmtKind::Ret(Some(r)));
    let func = Item::Func(
        Func {
            name: "sub".into(),
            params: vec![Param { ty: Scalar::I32, default: None, span: Span::DUMMY }; 2],
            ret: Some(Scalar::I32),
            body: f.body,
            span: Span::DUMMY,
        }
        .into(),
    );
    let mut b = B::new();
    let a = b.c(i32c(10));
    let c = b.c(i32c(3));
    let r1 = b.val(StmtKind::Call("sub".into(), vec![a, c], Span::DUMMY), Type::Scalar(Scalar::I32));
    let r2 = b.val(StmtKind::Call("sub".into(), vec![r1, a], Span::DUMMY), Type::Scalar(Scalar::I32));
    let z = b.c(i32c(0));
    b.store("x", &[z], r2);
    let s = stream(vec![field("x", Scalar::I32, &[1]), func, kernel("k", b, &[])]);
    assert_eq!(i32s(&run(&s, "k", &[]).unwrap(), "x"), [-3]);
}

#[test]
fn recursion_is_an_error_not_a_crash() {
    let mut f = B::new();
    f.st(StmtKind::Call("f".into(), vec![], Span::DUMMY));
    let func = Item::Func(Func { name: "f".into(), params: vec![], ret: None, body: f.body, span: Span::DUMMY }.into());
    let mut b = B::new();
    b.st(StmtKind::Call("f".into(), vec![], Span::DUMMY));
    let s = stream(vec![func, kernel("k", b, &[])]);
    assert!(run(&s, "k", &[]).unwrap_err().message.contains("recursion"));
}

#[test]
fn ret_in_a_kernel_ends_it() {
    let mut b = B::new();
    let z = b.c(i32c(0));
    let v = b.c(i32c(1));
    b.store("x", &[z], v);
    b.st(StmtKind::Ret(None));
    let one = b.c(i32c(1));
    b.store("x", &[one], v);
    let s = stream(vec![field("x", Scalar::I32, &[2]), kernel("k", b, &[])]);
    assert_eq!(i32s(&run(&s, "k", &[]).unwrap(), "x"), [1, 0]);
}

#[test]
fn struct_for_visits_elements_row_major() {
    // struct_for %i, %j in @g { old = atomic add @c[], 1; store @g[i, j], old }
    let mut b = B::new();
    let i = b.loop_var(Scalar::I32);
    let j = b.loop_var(Scalar::I32);
    b.task(
        "k.0",
        TaskKind::StructFor { vars: vec![i, j], field: "g".into(), field_span: Span::DUMMY, block_dim: 8 },
        |b| {
            let one = b.c(i32c(1));
            let old = b.val(StmtKind::Atomic(AtomicOp::Add, fref("c", &[]), one), Type::Scalar(Scalar::I32));
            b.store("g", &[i, j], old);
        },
    );
    let s = stream(vec![field("g", Scalar::I32, &[2, 3]), field("c", Scalar::I32, &[]), kernel("k", b, &[])]);
    let f = run(&s, "k", &[]).unwrap();
    assert_eq!(i32s(&f, "g"), [0, 1, 2, 3, 4, 5]);
    assert_eq!(i32s(&f, "c"), [6]);
}

#[test]
fn range_for_reads_a_bound_from_a_0d_field() {
    // serial: store @n[], 3; range_for %i in 1 .. @n[] { store @x[i], i }
    let mut b = B::new();
    b.task("k.0", TaskKind::Serial, |b| {
        let three = b.c(i32c(3));
        b.store("n", &[], three);
    });
    let var = b.loop_var(Scalar::I32);
    let kind = TaskKind::RangeFor { var, lo: Bound::Const(1), hi: Bound::Field("n".into(), Span::DUMMY), block_dim: 4 };
    b.task("k.1", kind, |b| b.store("x", &[var], var));
    let s = stream(vec![field("x", Scalar::I32, &[5]), field("n", Scalar::I32, &[]), kernel("k", b, &[])]);
    assert_eq!(i32s(&run(&s, "k", &[]).unwrap(), "x"), [0, 1, 2, 0, 0]);
}

#[test]
fn launches_bind_task_parameters_by_name() {
    // module @k.0 { task @k.0 of @k(%b: i32) range_for %i in 0 .. %b { store @x[i], b } }
    // module @main { kernel @k(%a: i32, %b: i32) { launch @k.0 } }
    let mut t = B::new();
    let tb = t.body.add_param("b", Scalar::I32, Span::DUMMY);
    let var = t.loop_var(Scalar::I32);
    t.store("x", &[var], tb);
    let task = Item::Task(TaskItem {
        name: "k.0".into(),
        kernel: "k".into(),
        params: vec![Param { ty: Scalar::I32, default: None, span: Span::DUMMY }],
        kind: TaskKind::RangeFor { var, lo: Bound::Const(0), hi: Bound::Value(tb), block_dim: 64 },
        body: t.body,
        span: Span::DUMMY,
    });
    let mut k = B::new();
    k.body.add_param("a", Scalar::I32, Span::DUMMY);
    k.body.add_param("b", Scalar::I32, Span::DUMMY);
    k.st(StmtKind::Launch("k.0".into()));
    let x = || field("x", Scalar::I32, &[4]);
    let s = Stream {
        modules: vec![
            Module { name: Some("k.0".into()), items: vec![x(), task], span: Span::DUMMY },
            Module {
                name: Some("main".into()),
                items: vec![x(), kernel("k", k, &[Scalar::I32, Scalar::I32])],
                span: Span::DUMMY,
            },
        ],
    };
    let f = run(&s, "k", &[i32c(100), i32c(3)]).unwrap();
    assert_eq!(i32s(&f, "x"), [3, 3, 3, 0]);
}

#[test]
fn arguments_are_checked_against_the_parameters() {
    let b = B::new();
    let s = stream(vec![kernel("k", b, &[Scalar::I32])]);
    assert!(run(&s, "k", &[]).unwrap_err().message.contains("takes 1 arguments"));
    assert!(run(&s, "k", &[f32c(1.0)]).unwrap_err().message.contains("argument 0 is f32"));
    assert_eq!(run(&s, "nope", &[]).unwrap_err().message, "no kernel named @nope");
}

#[test]
fn i64_loop_variables_and_indices() {
    let mut b = B::new();
    b.for_(Scalar::I64, Bound::Const(0), Bound::Const(3), |b, i| {
        let v = b.val(StmtKind::Cast(i, Scalar::I32), Type::Scalar(Scalar::I32));
        b.store("x", &[i], v);
    });
    let s = stream(vec![field("x", Scalar::I32, &[3]), kernel("k", b, &[])]);
    assert_eq!(i32s(&run(&s, "k", &[]).unwrap(), "x"), [0, 1, 2]);
}

/// The narrow and unsigned integer types, on values whose result depends
/// on the width or the signedness (`docs/language.md`, "Integers").
#[test]
fn narrow_and_unsigned_integers() {
    use crate::semantics::{eval_binary, eval_cast, eval_cmp, eval_unary};
    let c = |ty: Scalar, v: i64| Const::int(ty, v);
    let val = |k: Const| k.ty.int_value(k.bits);
    // Wrapping at the width.
    assert_eq!(val(eval_binary(BinOp::Add, c(Scalar::U8, 250), c(Scalar::U8, 10))), 4);
    assert_eq!(val(eval_binary(BinOp::Add, c(Scalar::I8, 120), c(Scalar::I8, 10))), -126);
    assert_eq!(val(eval_binary(BinOp::Mul, c(Scalar::I16, 300), c(Scalar::I16, 300))), 90000 - 65536);
    assert_eq!(val(eval_binary(BinOp::Mul, c(Scalar::I16, 200), c(Scalar::I16, 200))), 40000 - 65536);
    // Division, remainder, min and max by signedness; the least value
    // divided by -1 is itself, anything by 0 is 0.
    assert_eq!(val(eval_binary(BinOp::Div, c(Scalar::U8, 200), c(Scalar::U8, 3))), 66);
    assert_eq!(val(eval_binary(BinOp::Div, c(Scalar::I8, -128), c(Scalar::I8, -1))), -128);
    assert_eq!(val(eval_binary(BinOp::Rem, c(Scalar::U32, -1), c(Scalar::U32, 10))), 5);
    assert_eq!(val(eval_binary(BinOp::Div, c(Scalar::U64, -1), c(Scalar::U64, 2))), i64::MAX as i128);
    assert_eq!(val(eval_binary(BinOp::Rem, c(Scalar::U64, -1), c(Scalar::U64, -1))), 0);
    assert_eq!(val(eval_binary(BinOp::Div, c(Scalar::U16, 7), c(Scalar::U16, 0))), 0);
    assert_eq!(val(eval_binary(BinOp::Min, c(Scalar::U8, 200), c(Scalar::U8, 3))), 3);
    assert_eq!(val(eval_binary(BinOp::Min, c(Scalar::I8, -56), c(Scalar::I8, 3))), -56);
    assert_eq!(val(eval_binary(BinOp::Max, c(Scalar::U64, -1), c(Scalar::U64, 1))), u64::MAX as i128);
    // Shifts: `shr` copies the width's top bit, `ushr` shifts in zeros.
    assert_eq!(val(eval_binary(BinOp::Shr, c(Scalar::U8, 0x80), c(Scalar::U8, 1))), 0xc0);
    assert_eq!(val(eval_binary(BinOp::Ushr, c(Scalar::I8, -128), c(Scalar::I8, 1))), 64);
    assert_eq!(val(eval_binary(BinOp::Shl, c(Scalar::U16, 1), c(Scalar::U16, 17))), 2, "modulo the width");
    // Comparisons by signedness.
    assert_eq!(eval_cmp(CmpOp::Lt, c(Scalar::U32, -1), c(Scalar::U32, 1)), Const::bool(false));
    assert_eq!(eval_cmp(CmpOp::Lt, c(Scalar::I16, -1), c(Scalar::I16, 1)), Const::bool(true));
    assert_eq!(eval_cmp(CmpOp::Gt, c(Scalar::U64, -1), c(Scalar::U64, 1)), Const::bool(true));
    // abs of an unsigned number is itself; neg wraps.
    assert_eq!(val(eval_unary(UnOp::Abs, c(Scalar::U8, 200))), 200);
    assert_eq!(val(eval_unary(UnOp::Abs, c(Scalar::I8, -128))), -128);
    assert_eq!(val(eval_unary(UnOp::Neg, c(Scalar::U16, 1))), 65535);
    // Casts: widening extends by the source's signedness, narrowing
    // truncates, conversions to floats read the number, from floats
    // saturate to the target's range.
    assert_eq!(val(eval_cast(c(Scalar::I8, -1), Scalar::U32)), u32::MAX as i128);
    assert_eq!(val(eval_cast(c(Scalar::U8, 255), Scalar::I32)), 255);
    assert_eq!(val(eval_cast(c(Scalar::I32, 300), Scalar::U8)), 44);
    assert_eq!(val(eval_cast(c(Scalar::U32, -1), Scalar::I64)), u32::MAX as i128);
    assert_eq!(eval_cast(c(Scalar::U64, -1), Scalar::F64), Const::f64(18446744073709551615.0));
    assert_eq!(eval_cast(c(Scalar::I16, -2), Scalar::F32), Const::f32(-2.0));
    assert_eq!(val(eval_cast(Const::f32(-3.5), Scalar::U8)), 0);
    assert_eq!(val(eval_cast(Const::f32(300.0), Scalar::U8)), 255);
    assert_eq!(val(eval_cast(Const::f64(-1e9), Scalar::I16)), i16::MIN as i128);
    assert_eq!(val(eval_cast(Const::f64(1e30), Scalar::U64)), u64::MAX as i128);
}
