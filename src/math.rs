//! Kiln's own `f32` transcendental functions (`sin`, `cos`, `tan`, `exp`,
//! `log`, `tanh`): one algorithm each, written once over [`Ops`], that the
//! interpreter runs on Rust's `f64` ([`MathFunc::eval`]) and the code
//! generator emits as LLVM IR inline in the loop that calls it
//! (`codegen::lower::kmath`).
//!
//! Why: a call of the C library's `sinf` keeps a loop scalar. The same
//! function as straight-line IR (no branch, no call, no memory but a
//! constant table) vectorises at any width, and because both engines
//! perform the same IEEE operations in the same order, they agree bit for
//! bit at every vector width without depending on any libm.
//!
//! How: each function widens its argument to `f64`, reduces it exactly
//! (`exp` and `tanh`: by a multiple of ln 2; `log`: to its binary exponent
//! and a significand in [√½, √2); `sin`, `cos`, `tan`: by a multiple of
//! π/2 with 2/π to 106 bits at the argument's exponent, a Payne–Hanek
//! reduction in `f64` whose products are all exact), evaluates a polynomial
//! (Estrin's scheme) with an error near 2⁻⁵³, and rounds once to `f32`.
//! `make accuracy` compares every `f32` input's result with the `f64`
//! reference rounded to `f32` (docs/performance.md, "Default-mode math").
//!
//! Special values: NaN in gives the quieted NaN (`x + x`), an invalid
//! operation (`sin ∞`, `log -1`) the host's default NaN (`x - x`,
//! `0 / 0` computed at run time), `exp` overflows to `∞` and underflows
//! through the subnormals to `0`, `log ±0` is `-∞`.
//!
//! Owns: the algorithms, their constants and the reduction table, and the
//! operation set [`Ops`] an engine must provide to run them.
//!
//! Must never: use an operation whose result may differ between engines
//! or targets (no fused multiply-add, which a target may lack; no libm; no
//! float-to-int conversion of a value that may be out of range: integers
//! come from the bits of an `f64`), or branch on a value (the emitted code
//! must stay straight-line to vectorise).

use std::sync::LazyLock;

/// Float binary operations, IEEE 754 round-to-nearest on `f64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FOp {
    Add,
    Sub,
    Mul,
    Div,
}

/// Integer binary operations on `i64` (shifts are logical, by less than 64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IOp {
    Add,
    Sub,
    And,
    Or,
    Xor,
    Shl,
    Shr,
}

/// Comparisons: ordered for floats (false with a NaN), signed for integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Gt,
    Eq,
}

impl Cmp {
    /// Whether `a op b` holds (IEEE's ordered comparison for floats).
    #[inline(always)]
    fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Cmp::Lt => a < b,
            Cmp::Gt => a > b,
            Cmp::Eq => a == b,
        }
    }
}

/// A constant table of `f64` an algorithm reads with a computed index.
pub struct Table {
    /// The name the code generator gives its global.
    pub name: &'static str,
    pub values: LazyLock<Vec<f64>>,
}

/// The operations the algorithms are written in. `F` is an `f64`, `S` an
/// `f32`, `I` an `i64`, `B` a boolean: scalars in the interpreter, LLVM
/// values (each of which may become a vector lane) in the code generator.
pub trait Ops {
    type F: Copy;
    type S: Copy;
    type I: Copy;
    type B: Copy;
    fn fconst(&mut self, v: f64) -> Self::F;
    fn iconst(&mut self, v: i64) -> Self::I;
    fn ext(&mut self, x: Self::S) -> Self::F;
    fn trunc(&mut self, x: Self::F) -> Self::S;
    fn fop(&mut self, op: FOp, a: Self::F, b: Self::F) -> Self::F;
    fn iop(&mut self, op: IOp, a: Self::I, b: Self::I) -> Self::I;
    fn fcmp(&mut self, op: Cmp, a: Self::F, b: Self::F) -> Self::B;
    fn icmp(&mut self, op: Cmp, a: Self::I, b: Self::I) -> Self::B;
    fn bits(&mut self, a: Self::F) -> Self::I;
    fn float_of_bits(&mut self, a: Self::I) -> Self::F;
    fn fselect(&mut self, c: Self::B, a: Self::F, b: Self::F) -> Self::F;
    fn iselect(&mut self, c: Self::B, a: Self::I, b: Self::I) -> Self::I;
    /// `table.values[idx]`; `idx` is always within the table.
    fn load(&mut self, table: &'static Table, idx: Self::I) -> Self::F;
}

/// The functions, in the order of `ALL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFunc {
    Sin,
    Cos,
    Tan,
    Exp,
    Log,
    Tanh,
}

/// Which function of the π/2 reduction [`E::trig`] finishes with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trig {
    Sin,
    Cos,
    Tan,
}

impl MathFunc {
    pub const ALL: [MathFunc; 6] =
        [MathFunc::Sin, MathFunc::Cos, MathFunc::Tan, MathFunc::Exp, MathFunc::Log, MathFunc::Tanh];

    /// Emits or computes the function of `x` with `o`.
    pub fn apply<O: Ops>(self, o: &mut O, x: O::S) -> O::S {
        let mut e = E(o);
        match self {
            MathFunc::Sin => e.trig(x, Trig::Sin),
            MathFunc::Cos => e.trig(x, Trig::Cos),
            MathFunc::Tan => e.trig(x, Trig::Tan),
            MathFunc::Exp => e.exp(x),
            MathFunc::Log => e.log(x),
            MathFunc::Tanh => e.tanh(x),
        }
    }

    /// Computes it on the host's `f64` (what the interpreter runs).
    pub fn eval(self, x: f32) -> f32 {
        self.apply(&mut Host, x)
    }
}

/// 1.5 × 2⁵²: `(v + MAGIC) - MAGIC` rounds `v` (|v| < 2⁵¹) to the nearest
/// integer, ties to even, and the low bits of `v + MAGIC` hold it.
const MAGIC: f64 = 6755399441055744.0;
const LOG2E: f64 = std::f64::consts::LOG2_E;
/// ln 2 in two parts; `k × LN2_HI` is exact for |k| < 2¹⁹.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
const LN2: f64 = std::f64::consts::LN_2;
const FRAC_PI_2: f64 = std::f64::consts::FRAC_PI_2;
const SQRT2: f64 = std::f64::consts::SQRT_2;
const SIGN: i64 = i64::MIN;
const EXP_MASK: i64 = 0x7ff;

/// 1/n! for n = 0..=16.
const INV_FACT: [f64; 17] = {
    let mut t = [1.0; 17];
    let mut n = 1;
    while n < 17 {
        t[n] = t[n - 1] / n as f64;
        n += 1;
    }
    t
};

/// (-1)^n / (2n+1)!: sin θ = θ Σ SIN_C[n] θ^2n, to θ¹⁵.
const SIN_C: [f64; 8] = alternating::<8>(1);
/// (-1)^n / (2n)!: cos θ = Σ COS_C[n] θ^2n, to θ¹⁶.
const COS_C: [f64; 9] = alternating::<9>(0);

const fn alternating<const N: usize>(first: usize) -> [f64; N] {
    let mut t = [0.0; N];
    let mut n = 0;
    while n < N {
        let v = INV_FACT[2 * n + first];
        t[n] = if n % 2 == 1 { -v } else { v };
        n += 1;
    }
    t
}

/// The algorithms over an [`Ops`], with the small helpers they share.
struct E<'o, O: Ops>(&'o mut O);

impl<O: Ops> E<'_, O> {
    fn c(&mut self, v: f64) -> O::F {
        self.0.fconst(v)
    }
    fn i(&mut self, v: i64) -> O::I {
        self.0.iconst(v)
    }
    fn add(&mut self, a: O::F, b: O::F) -> O::F {
        self.0.fop(FOp::Add, a, b)
    }
    fn sub(&mut self, a: O::F, b: O::F) -> O::F {
        self.0.fop(FOp::Sub, a, b)
    }
    fn mul(&mut self, a: O::F, b: O::F) -> O::F {
        self.0.fop(FOp::Mul, a, b)
    }
    fn mulc(&mut self, a: O::F, k: f64) -> O::F {
        let k = self.c(k);
        self.mul(a, k)
    }
    fn div(&mut self, a: O::F, b: O::F) -> O::F {
        self.0.fop(FOp::Div, a, b)
    }
    fn iop(&mut self, op: IOp, a: O::I, k: i64) -> O::I {
        let k = self.i(k);
        self.0.iop(op, a, k)
    }
    /// Whether `x` is not NaN (`x == x`).
    fn ordered(&mut self, x: O::F) -> O::B {
        self.0.fcmp(Cmp::Eq, x, x)
    }
    /// `Σ coef[n] × x^n`, by Estrin's scheme: pairs `c[2i] + c[2i+1] x`,
    /// then pairs of those with x², and so on. Its chain of dependent
    /// operations is about 2 log₂ n long, where Horner's rule's is 2n; the
    /// vectorised loop is bound by that chain's latency.
    fn poly(&mut self, x: O::F, coef: &[f64]) -> O::F {
        // In place, on the stack: the interpreter and the runtime's copy
        // (`kiln_llvm::abi::MATH_RUNTIME`) run this once a value, where
        // two allocations a level cost more than the arithmetic.
        const MOST: usize = 16;
        assert!(!coef.is_empty() && coef.len() <= MOST, "a polynomial of 1 to {MOST} terms");
        let mut terms = [x; MOST];
        for (t, &k) in terms.iter_mut().zip(coef) {
            *t = self.c(k);
        }
        let (mut n, mut x) = (coef.len(), x);
        while n > 1 {
            // Pair `i` is terms 2i and 2i+1, read before slot i (≤ 2i) is
            // written.
            for i in 0..n.div_ceil(2) {
                terms[i] = if 2 * i + 1 < n {
                    let t = self.mul(terms[2 * i + 1], x);
                    self.add(terms[2 * i], t)
                } else {
                    terms[2 * i]
                };
            }
            n = n.div_ceil(2);
            if n > 1 {
                x = self.mul(x, x);
            }
        }
        terms[0]
    }
    /// `x = k ln 2 + r` with `k` the nearest integer to `x / ln 2`
    /// (|k| < 2¹⁹, so `k × LN2_HI` is exact): `r`, and 2^k, an exact power
    /// of two (2⁰ when `ordered` is false: a NaN's bits make `k` garbage).
    fn reduce_ln2(&mut self, x: O::F, ordered: O::B) -> (O::F, O::F) {
        let t = self.mulc(x, LOG2E);
        let (kf, k) = self.round(t);
        let hi = self.mulc(kf, LN2_HI);
        let r = self.sub(x, hi);
        let lo = self.mulc(kf, LN2_LO);
        let r = self.sub(r, lo);
        let zero = self.i(0);
        let k = self.0.iselect(ordered, k, zero);
        (r, self.pow2(k))
    }
    /// The bits of `x`, those of `|x|`, and `|x|`.
    fn abs(&mut self, x: O::F) -> (O::I, O::I, O::F) {
        let b = self.0.bits(x);
        let ab = self.iop(IOp::And, b, !SIGN);
        (b, ab, self.0.float_of_bits(ab))
    }
    /// `v` as its top 29 significant bits and the rest (both exact).
    fn split(&mut self, v: O::F) -> (O::F, O::F) {
        let b = self.0.bits(v);
        let hb = self.iop(IOp::And, b, !((1 << 24) - 1));
        let h = self.0.float_of_bits(hb);
        let t = self.sub(v, h);
        (h, t)
    }
    /// `v` rounded to an integer, as a float and as an integer (|v| < 2⁵¹).
    fn round(&mut self, v: O::F) -> (O::F, O::I) {
        let m = self.c(MAGIC);
        let t = self.add(v, m);
        let r = self.sub(t, m);
        let tb = self.0.bits(t);
        let k = self.iop(IOp::Sub, tb, MAGIC.to_bits() as i64);
        (r, k)
    }
    /// The integer `k` (|k| < 2⁵¹) as a float.
    fn int_to_float(&mut self, k: O::I) -> O::F {
        let b = self.iop(IOp::Add, k, MAGIC.to_bits() as i64);
        let f = self.0.float_of_bits(b);
        let m = self.c(MAGIC);
        self.sub(f, m)
    }
    /// 2^k for an integer `k` of the normal range.
    fn pow2(&mut self, k: O::I) -> O::F {
        let b = self.iop(IOp::Add, k, 1023);
        let b = self.iop(IOp::Shl, b, 52);
        self.0.float_of_bits(b)
    }
    /// `v` if `keep`, else `v` with its sign bit flipped (`-v`, zeros too).
    fn sign_unless(&mut self, keep: O::B, v: O::F) -> O::F {
        let vb = self.0.bits(v);
        let flipped = self.iop(IOp::Xor, vb, SIGN);
        let flipped = self.0.float_of_bits(flipped);
        self.0.fselect(keep, v, flipped)
    }

    /// `e^x`: x = k ln 2 + r with |r| ≤ ln 2 / 2, `e^r` by its Taylor series
    /// to r¹², scaled by 2^k exactly in `f64`, rounded once to `f32` (which
    /// also gives the subnormals, the overflow to ∞ and the underflow to 0).
    fn exp(&mut self, x: O::S) -> O::S {
        let xd = self.0.ext(x);
        let (hi, lo) = (self.c(89.0), self.c(-104.0));
        let over = self.0.fcmp(Cmp::Gt, xd, hi);
        let under = self.0.fcmp(Cmp::Lt, xd, lo);
        let xc = self.0.fselect(under, lo, xd);
        let xc = self.0.fselect(over, hi, xc);
        let ordered = self.ordered(xd);
        let (r, scale) = self.reduce_ln2(xc, ordered);
        let p = self.poly(r, &INV_FACT[..13]);
        let y = self.mul(p, scale);
        let quiet = self.add(xd, xd);
        let y = self.0.fselect(ordered, y, quiet);
        self.0.trunc(y)
    }

    /// `ln x`: x = 2^e m with m in [√½, √2), ln m = 2 atanh(s) with
    /// s = (m - 1)/(m + 1), |s| < 0.172, its series to s¹⁹.
    fn log(&mut self, x: O::S) -> O::S {
        const Q: [f64; 9] =
            [2.0 / 3.0, 2.0 / 5.0, 2.0 / 7.0, 2.0 / 9.0, 2.0 / 11.0, 2.0 / 13.0, 2.0 / 15.0, 2.0 / 17.0, 2.0 / 19.0];
        let xd = self.0.ext(x);
        let b = self.0.bits(xd);
        let eb = self.iop(IOp::Shr, b, 52);
        let eb = self.iop(IOp::And, eb, EXP_MASK);
        let mb = self.iop(IOp::And, b, (1 << 52) - 1);
        let mb = self.iop(IOp::Or, mb, 1023 << 52);
        let m = self.0.float_of_bits(mb);
        let sqrt2 = self.c(SQRT2);
        let big = self.0.fcmp(Cmp::Gt, m, sqrt2);
        let half = self.mulc(m, 0.5);
        let m = self.0.fselect(big, half, m);
        let (e1, e0) = (self.i(1 - 1023), self.i(-1023));
        let bias = self.0.iselect(big, e1, e0);
        let e = self.0.iop(IOp::Add, eb, bias);
        let ef = self.int_to_float(e);
        let one = self.c(1.0);
        let f = self.sub(m, one);
        let two = self.c(2.0);
        let d = self.add(two, f);
        let s = self.div(f, d);
        let z = self.mul(s, s);
        let q = self.poly(z, &Q);
        let sz = self.mul(s, z);
        let s2 = self.add(s, s);
        let tail = self.mul(sz, q);
        let lm = self.add(s2, tail);
        let el = self.mulc(ef, LN2);
        let y = self.add(el, lm);
        // Special cases: +∞ and NaN give x + x; ±0 gives -∞; below 0, the
        // invalid operation's NaN, 0/0 at run time.
        let zero = self.c(0.0);
        let pos = self.0.fcmp(Cmp::Gt, xd, zero);
        let inf = self.c(f64::INFINITY);
        let finite = self.0.fcmp(Cmp::Lt, xd, inf);
        let is_zero = self.0.fcmp(Cmp::Eq, xd, zero);
        let neg = self.0.fcmp(Cmp::Lt, xd, zero);
        let diff = self.sub(xd, xd);
        let invalid = self.div(diff, diff);
        let quiet = self.add(xd, xd);
        let minf = self.c(f64::NEG_INFINITY);
        let special = self.0.fselect(neg, invalid, quiet);
        let special = self.0.fselect(is_zero, minf, special);
        let y = self.0.fselect(finite, y, special);
        let y = self.0.fselect(pos, y, special);
        self.0.trunc(y)
    }

    /// `tanh x` = sign(x) m / (m + 2) with m = e^2|x| - 1, computed as
    /// (2^k - 1) + 2^k (e^r - 1), exact but for the last sum, the series of
    /// e^r - 1 to r¹³; |x| is clamped to 10, where tanh is 1 in `f32`.
    fn tanh(&mut self, x: O::S) -> O::S {
        let xd = self.0.ext(x);
        let (b, _, ax) = self.abs(xd);
        let ten = self.c(10.0);
        let big = self.0.fcmp(Cmp::Gt, ax, ten);
        let ax = self.0.fselect(big, ten, ax);
        let y = self.add(ax, ax);
        let ordered = self.ordered(xd);
        let (r, scale) = self.reduce_ln2(y, ordered);
        let p = self.poly(r, &INV_FACT[1..14]);
        let em1 = self.mul(r, p);
        let one = self.c(1.0);
        let s1 = self.sub(scale, one);
        let sp = self.mul(scale, em1);
        let m = self.add(s1, sp);
        let two = self.c(2.0);
        let d = self.add(m, two);
        let th = self.div(m, d);
        let sign = self.iop(IOp::Shr, b, 63);
        let zero = self.i(0);
        let keep = self.0.icmp(Cmp::Eq, sign, zero);
        let th = self.sign_unless(keep, th);
        let quiet = self.add(xd, xd);
        let th = self.0.fselect(ordered, th, quiet);
        self.0.trunc(th)
    }

    /// `sin x`, `cos x` or `tan x`: |x| = M 2^E with M an integer below 2²⁴, so
    /// |x| × 2/π ≡ M × F_E (mod 4) with F_E = 2^E × 2/π mod 4, held in
    /// [`REDUCE`] as two doubles, each split into a 29-bit head and a 24-bit
    /// tail ([`E::split`]) so that every product with M is exact.
    /// The quadrant q is the nearest integer; θ = (|x| 2/π - q) π/2 is in
    /// [-π/4, π/4]; sin and cos of θ by their Taylor series (to θ¹⁵, θ¹⁶),
    /// picked and signed by q (cos x = sin(|x| + π/2): q + 1; tan x is
    /// their quotient, `-cos/sin` in an odd quadrant).
    fn trig(&mut self, x: O::S, which: Trig) -> O::S {
        let xd = self.0.ext(x);
        let (b, ab, ax) = self.abs(xd);
        // The exponent, clamped to the f32 range (0, ∞ and NaN are made
        // finite here and replaced at the end).
        let eb = self.iop(IOp::Shr, ab, 52);
        let (lo, hi) = (self.i(1023 - 149), self.i(1023 + 127));
        let small = self.0.icmp(Cmp::Lt, eb, lo);
        let eb = self.0.iselect(small, lo, eb);
        let large = self.0.icmp(Cmp::Gt, eb, hi);
        let eb = self.0.iselect(large, hi, eb);
        // M = |x| / 2^E with E = exponent - 23.
        let sb = self.i(2 * 1023 + 23);
        let sb = self.0.iop(IOp::Sub, sb, eb);
        let sb = self.iop(IOp::Shl, sb, 52);
        let s = self.0.float_of_bits(sb);
        let mm = self.mul(ax, s);
        let idx = self.iop(IOp::Sub, eb, 1023 - 149);
        let idx = self.iop(IOp::Shl, idx, 1);
        let hi = self.0.load(&REDUCE, idx);
        let idx1 = self.iop(IOp::Add, idx, 1);
        let lo = self.0.load(&REDUCE, idx1);
        // Each 53-bit part as a 29-bit head and a 24-bit tail, so that every
        // product with M (24 bits) is exact.
        let (h, m) = self.split(hi);
        let (l, l2) = self.split(lo);
        let a = self.mul(mm, h); // below 2^26: F_E < 4
        let bm = self.mul(mm, m);
        let cl = self.mul(mm, l);
        let dl = self.mul(mm, l2);
        let s1 = self.add(a, bm);
        let (qf, q) = self.round(s1);
        let r = self.sub(a, qf); // exact
        let r = self.add(r, bm);
        let r = self.add(r, cl);
        let r = self.add(r, dl);
        let t = self.mulc(r, FRAC_PI_2);
        let t2 = self.mul(t, t);
        let sp = self.poly(t2, &SIN_C);
        let sv = self.mul(t, sp);
        let cv = self.poly(t2, &COS_C);
        let q = if which == Trig::Cos { self.iop(IOp::Add, q, 1) } else { q };
        let odd = self.iop(IOp::And, q, 1);
        let zero = self.i(0);
        let even = self.0.icmp(Cmp::Eq, odd, zero);
        let v = if which == Trig::Tan {
            // tan has period π: tan θ, or -cot θ in an odd quadrant.
            let tan = self.div(sv, cv);
            let cot = self.div(cv, sv);
            let z = self.c(0.0);
            let mcot = self.sub(z, cot);
            self.0.fselect(even, tan, mcot)
        } else {
            self.0.fselect(even, sv, cv)
        };
        // The sign: the quadrant's (sin, cos) and x's (sin and tan are odd).
        let neg = if which == Trig::Tan { zero } else { self.iop(IOp::And, q, 2) };
        let neg = if which == Trig::Cos {
            neg
        } else {
            let sx = self.iop(IOp::Shr, b, 62);
            let sx = self.iop(IOp::And, sx, 2);
            self.0.iop(IOp::Xor, neg, sx)
        };
        let keep = self.0.icmp(Cmp::Eq, neg, zero);
        let y = self.sign_unless(keep, v);
        // ±∞ and NaN: x - x (the invalid operation's NaN, or NaN quieted).
        let inf = self.c(f64::INFINITY);
        let finite = self.0.fcmp(Cmp::Lt, ax, inf);
        let special = self.sub(xd, xd);
        let y = self.0.fselect(finite, y, special);
        self.0.trunc(y)
    }
}

/// F_E = 2^E × 2/π mod 4 for E = -172 ..= 104 (the exponents of an `f32`'s
/// 24-bit integer significand), each as two doubles holding its first 106
/// significant bits, 53 each, truncated: entries 2 × (E + 172) and + 1.
pub static REDUCE: Table = Table { name: "kiln.math.reduce_pio2", values: LazyLock::new(reduce_table) };

/// 2/π to 320 bits, most significant first (2/π = 0.1010 0010 1111…b).
const TWO_OVER_PI: [u64; 5] =
    [0xa2f9836e4e441529, 0xfc2757d1f534ddc0, 0xdb6295993c439041, 0xfe5163abdebbc561, 0xb7246e3a424dd2e0];

/// Bit `j` (1-based: weight 2^-j) of 2/π.
fn two_over_pi_bit(j: i64) -> u64 {
    let j = (j - 1) as usize;
    (TWO_OVER_PI[j / 64] >> (63 - j % 64)) & 1
}

fn reduce_table() -> Vec<f64> {
    let mut t = Vec::with_capacity(277 * 2);
    for e in -172i64..=104 {
        // Bit j of 2/π has weight 2^(e - j) in 2^e × 2/π; weights above 2
        // are multiples of 4 and dropped. Start at the first set bit.
        let mut w = (e - 1).min(1);
        while two_over_pi_bit(e - w) == 0 {
            w -= 1;
        }
        for _ in 0..2 {
            let mut v: u64 = 0;
            for k in 0..53 {
                v = (v << 1) | two_over_pi_bit(e - (w - k));
            }
            let scale = f64::from_bits(((w - 52 + 1023) as u64) << 52);
            t.push(v as f64 * scale);
            w -= 53;
        }
    }
    t
}

/// The interpreter's engine: the operations on the host's scalars.
struct Host;

impl Ops for Host {
    type F = f64;
    type S = f32;
    type I = i64;
    type B = bool;
    #[inline(always)]
    fn fconst(&mut self, v: f64) -> f64 {
        v
    }
    #[inline(always)]
    fn iconst(&mut self, v: i64) -> i64 {
        v
    }
    #[inline(always)]
    fn ext(&mut self, x: f32) -> f64 {
        f64::from(x)
    }
    #[inline(always)]
    fn trunc(&mut self, x: f64) -> f32 {
        x as f32
    }
    #[inline(always)]
    fn fop(&mut self, op: FOp, a: f64, b: f64) -> f64 {
        match op {
            FOp::Add => a + b,
            FOp::Sub => a - b,
            FOp::Mul => a * b,
            FOp::Div => a / b,
        }
    }
    #[inline(always)]
    fn iop(&mut self, op: IOp, a: i64, b: i64) -> i64 {
        match op {
            IOp::Add => a.wrapping_add(b),
            IOp::Sub => a.wrapping_sub(b),
            IOp::And => a & b,
            IOp::Or => a | b,
            IOp::Xor => a ^ b,
            IOp::Shl => a.wrapping_shl(b as u32),
            IOp::Shr => ((a as u64) >> (b as u32 & 63)) as i64,
        }
    }
    #[inline(always)]
    fn fcmp(&mut self, op: Cmp, a: f64, b: f64) -> bool {
        op.holds(a, b)
    }
    #[inline(always)]
    fn icmp(&mut self, op: Cmp, a: i64, b: i64) -> bool {
        op.holds(a, b)
    }
    #[inline(always)]
    fn bits(&mut self, a: f64) -> i64 {
        a.to_bits() as i64
    }
    #[inline(always)]
    fn float_of_bits(&mut self, a: i64) -> f64 {
        f64::from_bits(a as u64)
    }
    #[inline(always)]
    fn fselect(&mut self, c: bool, a: f64, b: f64) -> f64 {
        if c {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn iselect(&mut self, c: bool, a: i64, b: i64) -> i64 {
        if c {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn load(&mut self, table: &'static Table, idx: i64) -> f64 {
        table.values[idx as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The f64 reference rounded to f32 (what a correctly rounded function
    /// gives wherever glibc's double function is within 2⁻⁵³ of a midpoint's
    /// far side, which is everywhere these samples land).
    fn reference(f: MathFunc, x: f32) -> f32 {
        let x = f64::from(x);
        (match f {
            MathFunc::Sin => x.sin(),
            MathFunc::Cos => x.cos(),
            MathFunc::Tan => x.tan(),
            MathFunc::Exp => x.exp(),
            MathFunc::Log => x.ln(),
            MathFunc::Tanh => x.tanh(),
        }) as f32
    }

    #[test]
    fn a_sample_over_all_bit_patterns_rounds_correctly() {
        for f in MathFunc::ALL {
            for k in 0..(1u32 << 16) {
                let x = f32::from_bits(k.wrapping_mul(65537) ^ (k >> 3));
                let (got, want) = (f.eval(x), reference(f, x));
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{:?}({x:e} = {:#010x}) = {got:e}, want {want:e}",
                    f,
                    x.to_bits()
                );
            }
        }
    }

    #[test]
    fn special_values() {
        let nan = f32::NAN;
        let inf = f32::INFINITY;
        let cases: [(MathFunc, f32, f32); 22] = [
            (MathFunc::Tan, -0.0, -0.0),
            (MathFunc::Tan, 1.0, 1.5574077),
            (MathFunc::Tanh, -0.0, -0.0),
            (MathFunc::Tanh, 1e-45, 1e-45),
            (MathFunc::Tanh, -inf, -1.0),
            (MathFunc::Tanh, 9.5, 1.0),
            (MathFunc::Sin, 0.0, 0.0),
            (MathFunc::Sin, -0.0, -0.0),
            (MathFunc::Cos, -0.0, 1.0),
            (MathFunc::Exp, 0.0, 1.0),
            (MathFunc::Exp, -inf, 0.0),
            (MathFunc::Exp, inf, inf),
            (MathFunc::Exp, 88.72284, inf),
            (MathFunc::Exp, -100.0, f32::from_bits(27)),
            (MathFunc::Exp, -200.0, 0.0),
            (MathFunc::Log, 0.0, -inf),
            (MathFunc::Log, -0.0, -inf),
            (MathFunc::Log, 1.0, 0.0),
            (MathFunc::Log, inf, inf),
            (MathFunc::Log, f32::from_bits(1), -103.27893),
            (MathFunc::Sin, 3.4028235e38, -0.5218765),
            (MathFunc::Cos, 1e20, 0.7542593),
        ];
        for (f, x, want) in cases {
            let got = f.eval(x);
            assert_eq!(got.to_bits(), want.to_bits(), "{f:?}({x:e}) = {got:e}, want {want:e}");
        }
        // NaN in, NaN out; an invalid operation gives the host's default NaN.
        for f in MathFunc::ALL {
            assert!(f.eval(nan).is_nan(), "{f:?}");
        }
        for (f, x) in [
            (MathFunc::Sin, inf),
            (MathFunc::Cos, -inf),
            (MathFunc::Tan, inf),
            (MathFunc::Log, -1.0),
            (MathFunc::Log, -inf),
        ] {
            assert_eq!(f.eval(x).to_bits(), (0.0f32 / std::hint::black_box(0.0)).to_bits(), "{f:?}({x})");
        }
    }

    /// Each entry of the reduction table is 2^E × 2/π mod 4 as two
    /// doubles, the second continuing the first's bits.
    #[test]
    fn the_reduction_table_holds_two_over_pi() {
        let t = &REDUCE.values;
        assert_eq!(t.len(), 277 * 2);
        // E = 0: 2/π itself, to 106 bits.
        let (hi, lo) = (t[2 * 172], t[2 * 172 + 1]);
        assert_eq!(hi + lo, std::f64::consts::FRAC_2_PI);
        assert!(lo < hi * 2f64.powi(-52) && lo > 0.0 && hi < std::f64::consts::FRAC_2_PI);
        // E = 1: twice that, exactly; E = 104: below 4.
        assert_eq!((t[2 * 173], t[2 * 173 + 1]), (2.0 * hi, 2.0 * lo));
        assert!(t[2 * 276] < 4.0 && t[2 * 276] > 0.0);
    }
}
