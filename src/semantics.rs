//! The language's scalar semantics, below every user of them: register
//! form and every arithmetic, comparison and cast rule of
//! `docs/language.md` on registers and on [`Const`]s. The interpreter
//! executes with the register functions; `passes::simplify` folds
//! constants and the tests check the JIT with the `eval_*` wrappers, so
//! the pass, the oracle and the tests cannot disagree (as naga's `proc`
//! sits below its front ends and validator). Kiln's own `f32` math is
//! evaluated through [`crate::math`] (`MathFunc::eval`), the one reference
//! that `codegen::lower::kmath` emits.
//!
//! Owns: register form (an integer's value sign- or zero-extended to 64
//! bits by its type, a float's bits: `to_reg`, `from_reg`, `norm_int`),
//! `bin_reg`, `un_reg`, `cmp_reg`, `cast_reg` and the `eval_*` wrappers.
//!
//! Must never: depend on anything but the operation and its operands'
//! bits (no host state but libm), or on a module above `ir` and `math`
//! (the interpreter and the passes both stand on it).

use crate::ir::*;

/// Converts a constant to register form: an integer's value in 64 bits
/// (sign-extended for a signed type, zero-extended for `i1` and an
/// unsigned one), a float's bits.
pub fn to_reg(c: Const) -> u64 {
    if c.ty.is_float() {
        c.ty.wrap_bits(c.bits)
    } else {
        norm_int(c.ty, c.bits as i64)
    }
}

/// Converts a register back to a constant of type `ty`.
pub fn from_reg(ty: Scalar, r: u64) -> Const {
    Const { ty, bits: ty.wrap_bits(r) }
}

/// Wraps an integer result to the width of `ty` in register form.
#[inline(always)]
pub fn norm_int(ty: Scalar, r: i64) -> u64 {
    let w = ty.bits();
    match w {
        64 => r as u64,
        _ if ty.is_signed() => ((r << (64 - w)) >> (64 - w)) as u64,
        _ => (r as u64) & ((1u64 << w) - 1),
    }
}

/// A register of an integer type read as the signed number of its width's
/// bits (what an arithmetic shift right shifts in).
#[inline(always)]
fn as_signed(ty: Scalar, r: u64) -> i64 {
    let w = ty.bits();
    if w == 64 {
        r as i64
    } else {
        ((r << (64 - w)) as i64) >> (64 - w)
    }
}

/// `x` with the quiet bit set when it is a NaN (what the floating-point
/// unit does to a NaN it propagates; `docs/language.md`), else `x`.
macro_rules! quieted {
    ($t:ty, $x:expr) => {{
        let x: $t = $x;
        if x.is_nan() {
            <$t>::from_bits(x.to_bits() | (1 << (<$t>::MANTISSA_DIGITS - 2)))
        } else {
            x
        }
    }};
}

/// `min` of floats: the other operand when one is NaN (IEEE minNum, LLVM
/// `minimumnum`), the second one quieted when both are, and `-0.0` below
/// `+0.0` so the result never depends on operand order.
macro_rules! fminmax {
    ($name:ident, $t:ty, $less:tt) => {
        #[inline(always)]
        fn $name(a: $t, b: $t) -> $t {
            if a.is_nan() {
                quieted!($t, b)
            } else if b.is_nan() {
                a
            } else if a $less b {
                a
            } else if b $less a {
                b
            } else if (a.is_sign_negative() as u8) $less (b.is_sign_negative() as u8) {
                // Equal and both zero with different signs: for min the
                // negative one (sign bit 1) wins, for max the positive one.
                b
            } else {
                a
            }
        }
    };
}
fminmax!(fmin32, f32, <);
fminmax!(fmax32, f32, >);
fminmax!(fmin64, f64, <);
fminmax!(fmax64, f64, >);

/// A float as the hardware reads it, and a result as it writes it, in the
/// thread's mode (`crate::fpenv`): a subnormal is a zero of its sign when
/// flushing. Only for the interpreter's software operations: its hardware
/// arithmetic sees the mode itself.
trait Daz: Sized {
    fn daz(self) -> Self;
}

macro_rules! daz {
    ($t:ty) => {
        impl Daz for $t {
            #[inline(always)]
            fn daz(self) -> $t {
                if self.is_subnormal() && crate::fpenv::flushing() {
                    <$t>::copysign(0.0, self)
                } else {
                    self
                }
            }
        }
    };
}
daz!(f32);
daz!(f64);

/// `min` or `max` of a NaN and a number, as the JIT's code computes it
/// (LLVM's x86-64 lowering of `minimumnum`/`maximumnum`): the operands are
/// ordered by the first one's sign bit, and the number comes out as it is
/// when the NaN is the one ordered first, else as the `min`/`max`
/// instruction reads it (flushed, when flushing). Without flushing both
/// are the number itself.
#[inline(always)]
fn min_max_one_nan<T: Daz + Copy + IsNan>(min: bool, a: T, b: T) -> T {
    let (x, y) = if a.sign_negative() == min { (a, b) } else { (b, a) };
    if x.nan() {
        y
    } else {
        x.daz()
    }
}

/// The two facts of a float [`min_max_one_nan`] asks.
trait IsNan {
    fn nan(self) -> bool;
    fn sign_negative(self) -> bool;
}

impl IsNan for f32 {
    fn nan(self) -> bool {
        self.is_nan()
    }
    fn sign_negative(self) -> bool {
        self.is_sign_negative()
    }
}

impl IsNan for f64 {
    fn nan(self) -> bool {
        self.is_nan()
    }
    fn sign_negative(self) -> bool {
        self.is_sign_negative()
    }
}

macro_rules! float_bin {
    ($op:expr, $a:expr, $b:expr, $min:ident, $max:ident) => {{
        let (a, b) = ($a, $b);
        match $op {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Div => a / b,
            // Rust's `%` on floats is C's fmod: the result has the
            // dividend's sign. Here it is software, where the JIT calls
            // glibc's, whose test for a zero divisor is a float compare
            // that reads a subnormal as zero when flushing.
            BinOp::Rem => a % if b.daz() == 0.0 { b.daz() } else { b },
            // Software here, an instruction that reads flushed operands in
            // the JIT's code (see `min_max_one_nan` for one NaN).
            BinOp::Min | BinOp::Max if a.is_nan() != b.is_nan() => min_max_one_nan($op == BinOp::Min, a, b),
            BinOp::Min => $min(a.daz(), b.daz()),
            BinOp::Max => $max(a.daz(), b.daz()),
            BinOp::Pow => a.powf(b),
            BinOp::Atan2 => a.atan2(b),
            // Bitwise and shift operators do not accept floats (the
            // verifier rejects them); give a defined result anyway.
            _ => 0.0,
        }
    }};
}

/// An `f16` register widened to `f32` (exact; a NaN comes out quiet, as
/// the F16C conversion makes it).
#[inline(always)]
fn widen16(a: u64) -> u64 {
    half::f16::from_bits(a as u16).to_f32().to_bits() as u64
}

/// An `f32` register rounded to `f16` (nearest even; a NaN keeps its sign
/// and the top of its payload, quieted). `f16` subnormals are kept in
/// either subnormal mode: the conversions ignore it, in Quadrants too.
#[inline(always)]
fn narrow16(r: u64) -> u64 {
    half::f16::from_f32(f32::from_bits(r as u32)).to_bits() as u64
}

/// `a OP b` on registers of `ty`. An `f16` operation is the `f32` one on
/// its operands widened, rounded back to `f16` (what Quadrants computes on
/// the CPU, and LLVM's code for `half` on a host without AVX512-FP16).
#[inline(always)]
pub fn bin_reg(op: BinOp, ty: Scalar, a: u64, b: u64) -> u64 {
    match ty {
        Scalar::F16 => narrow16(bin_reg(op, Scalar::F32, widen16(a), widen16(b))),
        Scalar::F32 => {
            let r = float_bin!(op, f32::from_bits(a as u32), f32::from_bits(b as u32), fmin32, fmax32);
            r.to_bits() as u64
        }
        Scalar::F64 => float_bin!(op, f64::from_bits(a), f64::from_bits(b), fmin64, fmax64).to_bits(),
        _ => norm_int(ty, int_bin(op, ty, a, b)),
    }
}

/// `a OP b` on two registers of the integer type `ty` (wrapped by the
/// caller). Division by zero is 0, and the least value divided by -1 is
/// itself (`docs/language.md`); an unsigned type divides, compares and takes
/// `min`/`max` as unsigned numbers.
#[inline(always)]
fn int_bin(op: BinOp, ty: Scalar, a: u64, b: u64) -> i64 {
    let (x, y) = (a as i64, b as i64);
    // Shift amounts are taken modulo the bit width (a power of two).
    let sh = (y as u32) & (ty.bits().max(2) - 1);
    let unsigned = ty.is_unsigned();
    match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::Div | BinOp::Rem if y == 0 => 0,
        BinOp::Div if unsigned => (a / b) as i64,
        BinOp::Rem if unsigned => (a % b) as i64,
        BinOp::Div => x.wrapping_div(y),
        BinOp::Rem => x.wrapping_rem(y),
        BinOp::Min if unsigned => a.min(b) as i64,
        BinOp::Max if unsigned => a.max(b) as i64,
        BinOp::Min => x.min(y),
        BinOp::Max => x.max(y),
        BinOp::And => x & y,
        BinOp::Or => x | y,
        BinOp::Xor => x ^ y,
        BinOp::Shl => x.wrapping_shl(sh),
        BinOp::Shr => as_signed(ty, a).wrapping_shr(sh),
        BinOp::Ushr => (ty.wrap_bits(a) >> sh) as i64,
        BinOp::Pow | BinOp::Atan2 => 0,
    }
}

macro_rules! float_un {
    ($op:expr, $t:ty, $a:expr) => {{
        let a: $t = $a;
        match $op {
            UnOp::Neg => -a,
            UnOp::Abs => a.abs(),
            UnOp::Sqrt => a.sqrt(),
            UnOp::Sin => a.sin(),
            UnOp::Cos => a.cos(),
            UnOp::Tan => a.tan(),
            UnOp::Asin => a.asin(),
            UnOp::Acos => a.acos(),
            UnOp::Atan => a.atan(),
            UnOp::Tanh => a.tanh(),
            UnOp::Exp => a.exp(),
            UnOp::Log => a.ln(),
            // Rust's software `floor`/`ceil` return a signalling NaN
            // unchanged; the unit (and C's `floor`) quiets it.
            UnOp::Floor => quieted!($t, a.daz().floor()),
            UnOp::Ceil => quieted!($t, a.daz().ceil()),
            // Rust's `round` rounds half away from zero, as KIR does.
            UnOp::Round => a.round(),
            UnOp::Not => 0.0,
        }
    }};
}

/// `OP a` on a register of `ty`; on `f16` as [`bin_reg`] says, but `neg`
/// and `abs`, which change the sign bit alone.
#[inline(always)]
pub fn un_reg(op: UnOp, ty: Scalar, a: u64) -> u64 {
    match ty {
        Scalar::F16 => match op {
            UnOp::Neg => a ^ 0x8000,
            UnOp::Abs => a & 0x7fff,
            _ => narrow16(un_reg(op, Scalar::F32, widen16(a))),
        },
        Scalar::F32 => {
            let x = f32::from_bits(a as u32);
            let y = match op.kiln_math(ty) {
                Some(f) => f.eval(x),
                None => float_un!(op, f32, x),
            };
            y.to_bits() as u64
        }
        Scalar::F64 => float_un!(op, f64, f64::from_bits(a)).to_bits(),
        _ => {
            let x = a as i64;
            let r = match op {
                UnOp::Neg => x.wrapping_neg(),
                UnOp::Not => !x,
                // An unsigned number is its own magnitude.
                UnOp::Abs if ty.is_unsigned() => x,
                UnOp::Abs => x.wrapping_abs(),
                _ => 0,
            };
            norm_int(ty, r)
        }
    }
}

#[inline(always)]
pub fn cmp_reg(op: CmpOp, ty: Scalar, a: u64, b: u64) -> u64 {
    macro_rules! cmp {
        ($x:expr, $y:expr) => {{
            let (x, y) = ($x, $y);
            // Rust's float comparisons are ordered (false on NaN) except
            // `!=`, which is true on NaN: exactly KIR's rule.
            match op {
                CmpOp::Lt => x < y,
                CmpOp::Le => x <= y,
                CmpOp::Gt => x > y,
                CmpOp::Ge => x >= y,
                CmpOp::Eq => x == y,
                CmpOp::Ne => x != y,
            }
        }};
    }
    let r = match ty {
        Scalar::F16 => return cmp_reg(op, Scalar::F32, widen16(a), widen16(b)),
        Scalar::F32 => cmp!(f32::from_bits(a as u32), f32::from_bits(b as u32)),
        Scalar::F64 => cmp!(f64::from_bits(a), f64::from_bits(b)),
        // Signed integers compare signed; `i1` (0 or 1 in register form,
        // so `false < true`) and unsigned ones as unsigned numbers.
        t if t.is_signed() => cmp!(a as i64, b as i64),
        _ => cmp!(a, b),
    };
    r as u64
}

#[inline(always)]
pub fn cast_reg(from: Scalar, to: Scalar, a: u64) -> u64 {
    if from == to {
        return a;
    }
    if from.is_int() {
        // Register form is already the value: sign-extended for a signed
        // type, zero-extended for i1 and an unsigned one.
        let i = a as i64;
        match to {
            Scalar::I1 => (i != 0) as u64,
            // Through f32 as LLVM converts (exact up to 2^24; past 65520
            // both roundings give infinity).
            Scalar::F16 => narrow16(cast_reg(from, Scalar::F32, a)),
            Scalar::F32 if from.is_signed() => (i as f32).to_bits() as u64,
            Scalar::F64 if from.is_signed() => (i as f64).to_bits(),
            Scalar::F32 => (a as f32).to_bits() as u64,
            Scalar::F64 => (a as f64).to_bits(),
            _ => norm_int(to, i),
        }
    } else {
        // Widening f16 or f32 to f64 is exact, so every conversion from
        // them can go through f64 without changing its result.
        let x = match from {
            Scalar::F16 => half::f16::from_bits(a as u16).to_f64(),
            Scalar::F32 => f32::from_bits(a as u32) as f64,
            _ => f64::from_bits(a),
        };
        match to {
            // NaN != 0.0 is true, as KIR's unordered `ne`.
            Scalar::I1 => (x != 0.0) as u64,
            // Rust's `as` saturates and maps NaN to 0.
            Scalar::I8 => x as i8 as i64 as u64,
            Scalar::I16 => x as i16 as i64 as u64,
            Scalar::I32 => x as i32 as i64 as u64,
            Scalar::I64 => x as i64 as u64,
            Scalar::U8 => x as u8 as u64,
            Scalar::U16 => x as u16 as u64,
            Scalar::U32 => x as u32 as u64,
            Scalar::U64 => x as u64,
            // f64 to f16 rounds to f32 first, as Quadrants converts it
            // (so twice: 1 + 2^-11 + 2^-40 gives 1.0, not the nearest f16).
            Scalar::F16 => narrow16((x as f32).to_bits() as u64),
            Scalar::F32 => (x as f32).to_bits() as u64,
            Scalar::F64 => x.to_bits(),
        }
    }
}

/// `bitcast` of a register of type `from` to `to`, a type of the same
/// width: the same bits, put back in `to`'s register form.
pub fn bitcast_reg(from: Scalar, to: Scalar, a: u64) -> u64 {
    let bits = from.wrap_bits(a);
    if to.is_float() {
        bits
    } else {
        norm_int(to, bits as i64)
    }
}

/// `a OP b` on constants of one type, with KIR's semantics.
pub fn eval_binary(op: BinOp, a: Const, b: Const) -> Const {
    from_reg(a.ty, bin_reg(op, a.ty, to_reg(a), to_reg(b)))
}

/// `OP a` on a constant, with KIR's semantics.
pub fn eval_unary(op: UnOp, a: Const) -> Const {
    from_reg(a.ty, un_reg(op, a.ty, to_reg(a)))
}

/// `cmp OP a, b` on constants of one type (an `i1`).
pub fn eval_cmp(op: CmpOp, a: Const, b: Const) -> Const {
    Const::bool(cmp_reg(op, a.ty, to_reg(a), to_reg(b)) != 0)
}

/// `cast a to ty`, with KIR's semantics.
pub fn eval_cast(a: Const, to: Scalar) -> Const {
    from_reg(to, cast_reg(a.ty, to, to_reg(a)))
}
