//! The accuracy of compiled math in ulps of `f32`, measured through the
//! JIT against a reference computed in `f64` (glibc's double functions,
//! whose error is a small fraction of an `f32` ulp): fast-math code's
//! (`--fast-math`: glibc's libmvec through the vectoriser,
//! `codegen::lower::vecmath`) and default mode's own `f32` functions
//! (`kiln::math`, emitted inline by `codegen::lower::kmath`), which must
//! also give the interpreter's bits. Shared by `crates/kiln-jit/examples/accuracy.rs`
//! (every `f32` input: `make accuracy`) and `crates/kiln-jit/tests/math_accuracy.rs`
//! (a sample, in `make test`).
//!
//! A unary function is measured on the inputs asked for; a binary one on
//! each of them as `x`, with `y` a value of a fixed pseudo-random sequence
//! in the function's table range (2^64 pairs cannot all be run).

use kiln::config::{CompileConfig, OptLevel};
use kiln::exec::{Engine, Fields};
use kiln::ir::{Const, Scalar, Stream, UnOp};
use kiln::semantics::eval_unary;
use kiln_codegen::Compiler;
use kiln_jit::engine::{JitEngine, JitPath};
use rayon::prelude::*;

/// One function: its KIR operator, arity, reference, the range of the
/// second operand of a binary one, and the most ulps it may be off (glibc
/// documents 4 for libmvec's functions; sqrt rounds correctly, floor is
/// exact).
#[derive(Clone, Copy)]
pub struct MathFn {
    pub op: &'static str,
    pub arity: usize,
    pub reference: fn(f64, f64) -> f64,
    pub y_range: (f32, f32),
    pub max_ulps: f64,
}

/// Default mode's own functions: the operators of [`FUNCS`] that Kiln
/// computes itself on `f32` (`UnOp::kiln_math`, `kiln::math`), correctly
/// rounded against the `f64` reference wherever it was measured, so the
/// bound is half an ulp.
pub fn default_funcs() -> Vec<MathFn> {
    let own = |f: &MathFn| UnOp::from_keyword(f.op).is_some_and(|op| op.kiln_math(Scalar::F32).is_some());
    FUNCS.iter().filter(|f| own(f)).map(|f| MathFn { max_ulps: 0.5, ..*f }).collect()
}

/// Which mode's code is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `--fast-math` (libmvec).
    Fast,
    /// Default mode (Kiln's own functions, compared with the interpreter).
    Default,
}

/// Every float operator fast-math mode may compute differently.
pub const FUNCS: &[MathFn] = &[
    MathFn { op: "sin", arity: 1, reference: |x, _| x.sin(), y_range: (0.0, 0.0), max_ulps: 4.0 },
    MathFn { op: "cos", arity: 1, reference: |x, _| x.cos(), y_range: (0.0, 0.0), max_ulps: 4.0 },
    MathFn { op: "tan", arity: 1, reference: |x, _| x.tan(), y_range: (0.0, 0.0), max_ulps: 4.0 },
    MathFn { op: "asin", arity: 1, reference: |x, _| x.asin(), y_range: (0.0, 0.0), max_ulps: 4.0 },
    MathFn { op: "acos", arity: 1, reference: |x, _| x.acos(), y_range: (0.0, 0.0), max_ulps: 4.0 },
    MathFn { op: "atan", arity: 1, reference: |x, _| x.atan(), y_range: (0.0, 0.0), max_ulps: 4.0 },
    MathFn { op: "tanh", arity: 1, reference: |x, _| x.tanh(), y_range: (0.0, 0.0), max_ulps: 4.0 },
    MathFn { op: "exp", arity: 1, reference: |x, _| x.exp(), y_range: (0.0, 0.0), max_ulps: 4.0 },
    MathFn { op: "log", arity: 1, reference: |x, _| x.ln(), y_range: (0.0, 0.0), max_ulps: 4.0 },
    MathFn { op: "sqrt", arity: 1, reference: |x, _| x.sqrt(), y_range: (0.0, 0.0), max_ulps: 0.5 },
    MathFn { op: "floor", arity: 1, reference: |x, _| x.floor(), y_range: (0.0, 0.0), max_ulps: 0.0 },
    MathFn { op: "pow", arity: 2, reference: |x, y| x.powf(y), y_range: (-4.0, 4.0), max_ulps: 4.0 },
    MathFn { op: "atan2", arity: 2, reference: |x, y| x.atan2(y), y_range: (-1e6, 1e6), max_ulps: 4.0 },
];

/// What one function's measurement found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub inputs: u64,
    pub max_ulps: f64,
    /// The `x` (bits) and `y` of the largest error.
    pub worst: (u32, f32),
    /// Results that should be NaN or infinite and are not, or the reverse.
    pub special_mismatches: u64,
    pub first_special: Option<(u32, f32, f32)>,
    /// Results that are not the reference rounded to `f32` (NaNs aside).
    pub misrounded: u64,
    /// Default mode: results whose bits differ from the interpreter's.
    pub engine_mismatches: u64,
    pub first_engine_mismatch: Option<u32>,
}

impl Report {
    fn merge(&mut self, o: Report) {
        self.inputs += o.inputs;
        if o.max_ulps > self.max_ulps {
            self.max_ulps = o.max_ulps;
            self.worst = o.worst;
        }
        if self.first_special.is_none() {
            self.first_special = o.first_special;
        }
        self.special_mismatches += o.special_mismatches;
        self.misrounded += o.misrounded;
        self.engine_mismatches += o.engine_mismatches;
        if self.first_engine_mismatch.is_none() {
            self.first_engine_mismatch = o.first_engine_mismatch;
        }
    }
}

/// The error of `got` against the exact `want`, in ulps of `f32` at
/// `want`; `None` when one is NaN or infinite and the other is not the
/// same.
pub fn ulps(got: f32, want: f64) -> Option<f64> {
    let rounded = want as f32;
    if want.is_nan() || got.is_nan() || rounded.is_infinite() || got.is_infinite() {
        let same = (want.is_nan() && got.is_nan()) || got == rounded;
        return same.then_some(0.0);
    }
    let biased = ((want.abs().to_bits() >> 52) & 0x7ff) as i32;
    let exp = (biased - 1023).max(-126);
    let ulp = 2f64.powi(exp - 23);
    Some((f64::from(got) - want).abs() / ulp)
}

/// The `y` paired with input number `i`: a fixed pseudo-random value in
/// `range` (splitmix64 of `i`).
pub fn y_of(i: u64, range: (f32, f32)) -> f32 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let unit = (z >> 40) as f32 / (1u64 << 24) as f32;
    range.0 + (range.1 - range.0) * unit
}

/// A JIT engine of `mode` and the kernel computing `f` over `n` elements:
/// `@r[i] = OP @x[i] (, @y[i])`.
pub struct Harness {
    engine: JitEngine,
    stream: Stream,
    fields: Fields,
    n: usize,
    mode: Mode,
}

impl Harness {
    pub fn new(f: &MathFn, n: usize, threads: usize, mode: Mode) -> Harness {
        Harness::at(f, n, threads, mode, CompileConfig::default().opt_level)
    }

    /// [`Harness::new`], its kernel compiled at `opt_level`.
    pub fn at(f: &MathFn, n: usize, threads: usize, mode: Mode, opt_level: OptLevel) -> Harness {
        let operands = if f.arity == 1 { "%a".to_string() } else { "%a, %b".to_string() };
        let text = format!(
            "field @x : f32[{n}]\nfield @y : f32[{n}]\nfield @r : f32[{n}]\n\
             kernel @k() {{\n  for %i in 0 .. {n} {{\n    %a = load @x[%i]\n    %b = load @y[%i]\n    \
             %v = {op} {operands}\n    store @r[%i], %v\n  }}\n}}\n",
            op = f.op
        );
        let stream = kiln::parser::parse(&text).expect("the accuracy kernel parses");
        kiln::verifier::verify(&stream).expect("the accuracy kernel verifies");
        let cfg = CompileConfig { fast_math: mode == Mode::Fast, opt_level, ..Default::default() };
        let engine = JitEngine::new(Compiler::host(cfg).unwrap(), JitPath::PerTask, threads).unwrap();
        let fields = Fields::zeroed(&stream);
        Harness { engine, stream, fields, n, mode }
    }

    /// Measures `f` on the inputs `xs` (bits; at most `n`), input number
    /// `first + k` for `xs[k]`.
    pub fn measure(&mut self, f: &MathFn, xs: &[u32], first: u64) -> Report {
        assert!(xs.len() <= self.n);
        let ys: Vec<f32> = (0..xs.len() as u64).map(|k| y_of(first + k, f.y_range)).collect();
        put(&mut self.fields, "x", xs.iter().copied());
        put(&mut self.fields, "y", ys.iter().map(|y| y.to_bits()));
        self.engine.run_kernel(&self.stream, "k", &[], &mut self.fields).expect("the accuracy kernel runs");
        let r = &self.fields.get("r").unwrap().bytes;
        let interp = (self.mode == Mode::Default).then(|| UnOp::from_keyword(f.op).expect("a unary operator"));
        xs.par_iter()
            .zip(&ys)
            .enumerate()
            .fold(Report::default, |mut rep, (k, (&xb, &y))| {
                let got = f32::from_le_bytes(r[4 * k..4 * k + 4].try_into().unwrap());
                let want = (f.reference)(f64::from(f32::from_bits(xb)), f64::from(y));
                rep.inputs += 1;
                if !(want.is_nan() && got.is_nan()) && got.to_bits() != (want as f32).to_bits() {
                    rep.misrounded += 1;
                }
                if let Some(op) = interp {
                    let i = eval_unary(op, Const::f32(f32::from_bits(xb)));
                    if i.bits != u64::from(got.to_bits()) {
                        rep.engine_mismatches += 1;
                        rep.first_engine_mismatch.get_or_insert(xb);
                    }
                }
                match ulps(got, want) {
                    Some(u) if u > rep.max_ulps => {
                        rep.max_ulps = u;
                        rep.worst = (xb, y);
                    }
                    Some(_) => {}
                    None => {
                        rep.special_mismatches += 1;
                        rep.first_special.get_or_insert((xb, y, got));
                    }
                }
                rep
            })
            .reduce(Report::default, |mut a, b| {
                a.merge(b);
                a
            })
    }
}

fn put(fields: &mut Fields, name: &str, bits: impl Iterator<Item = u32>) {
    let d = fields.get_mut(name).unwrap();
    for (k, b) in bits.enumerate() {
        d.bytes[4 * k..4 * k + 4].copy_from_slice(&b.to_le_bytes());
    }
}

/// Measures `f` in `mode` on every `f32` input, in chunks of `n`.
pub fn exhaustive(f: &MathFn, n: usize, threads: usize, mode: Mode) -> Report {
    let mut h = Harness::new(f, n, threads, mode);
    let mut total = Report::default();
    let mut start: u64 = 0;
    let mut xs = Vec::with_capacity(n);
    while start < 1 << 32 {
        xs.clear();
        xs.extend((start..(start + n as u64).min(1 << 32)).map(|b| b as u32));
        total.merge(h.measure(f, &xs, start));
        start += n as u64;
    }
    total
}
