//! Loop versioning: the bounds checks of a loop's field accesses, proved
//! once before the loop instead of at every access (as LLVM's inductive
//! range check elimination does), so the loop LLVM sees has no checks it
//! cannot remove and vectorises.
//!
//! An access is *provable* when each of its indices is an affine function,
//! with constant coefficients, of variables whose ranges are known before
//! the loop (the loop's own variables, and those of `for` loops nested in
//! it with loop-invariant bounds) and of loop-invariant values. Its index,
//! computed exactly (in `i128`, no wrapping), then takes its smallest and
//! largest values at corners of that box of ranges, and the pre-loop test
//! checks them against the field's shape. Integer arithmetic in KIR wraps,
//! so the test also checks that no wrapping can happen where it would
//! matter: an `i32` index or an `i32` value widened to `i64` must hold its
//! exact value (addition, subtraction, multiplication and truncation
//! commute with wrapping, so they need no test of their own).
//!
//! When the test passes, the loop runs a copy of its body in which the
//! provable accesses are unchecked (the others keep their checks); when it
//! fails, the loop runs today's fully checked body, which reports the
//! first failing iteration, its statement and its index. Both copies
//! compute the same thing: the test passing means no provable access can
//! fail in any iteration of the box, a superset of those that run.
//!
//! Owns: which loops are worth versioning ([`vectorisable`]), the affine
//! analysis of a loop's indices ([`plan`]), the emission of the pre-loop
//! test ([`FnCx::version_test`]) and of the fast copy's exact indices
//! ([`FnCx::exact_index`]).
//!
//! Must never: prove an access that some iteration could run out of
//! bounds, read a value in the test that the loop could change, or let
//! the analysis' cost grow with more than the size of the loop's body.

use super::{FnCx, MathCalls, Result};
use inkwell::values::IntValue;
use inkwell::IntPredicate;
use kiln::ir::{BinOp, Block, Body, Bound, Field, FieldRef, Scalar, Stmt, StmtKind, UnOp, Value, ValueDef};
use std::collections::{HashMap, HashSet};

/// The most distinct leaves an affine form keeps, and the largest
/// coefficient and constant: with leaves in `i64`, every sum the test
/// computes then fits in `i128`.
const MAX_TERMS: usize = 8;
const MAX_COEF: i128 = 1 << 40;
const MAX_CONST: i128 = 1 << 80;
/// How many values the analysis of one index may visit (long or shared
/// chains of arithmetic are given up on, not walked).
const BUDGET: u32 = 64;

/// A leaf of an affine form: a loop variable with a known range, or a
/// value fixed for the whole loop (its exact value is its sign extension).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Leaf {
    Var(Value),
    Inv(Value),
}

/// `konst + Σ coef·leaf`, exactly; terms sorted by leaf, no zero
/// coefficient. A KIR value of type `T` described by it equals the form
/// wrapped to `T`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Affine {
    konst: i128,
    terms: Vec<(Leaf, i128)>,
}

impl Affine {
    fn constant(k: i128) -> Affine {
        Affine { konst: k, terms: Vec::new() }
    }

    fn leaf(l: Leaf) -> Affine {
        Affine { konst: 0, terms: vec![(l, 1)] }
    }

    /// `self + k·other`, or `None` past the limits.
    fn add_scaled(&self, other: &Affine, k: i128) -> Option<Affine> {
        let mut terms: HashMap<Leaf, i128> = self.terms.iter().copied().collect();
        for &(l, c) in &other.terms {
            *terms.entry(l).or_insert(0) += c.checked_mul(k)?;
        }
        let mut terms: Vec<(Leaf, i128)> = terms.into_iter().filter(|&(_, c)| c != 0).collect();
        terms.sort();
        let a = Affine { konst: self.konst.checked_add(other.konst.checked_mul(k)?)?, terms };
        a.within_limits().then_some(a)
    }

    fn scale(&self, k: i128) -> Option<Affine> {
        Affine::constant(0).add_scaled(self, k)
    }

    fn within_limits(&self) -> bool {
        self.konst.abs() <= MAX_CONST
            && self.terms.len() <= MAX_TERMS
            && self.terms.iter().all(|&(_, c)| c.abs() <= MAX_COEF)
    }
}

/// `lo <= form <= hi` at every point of the loop's box.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Cond {
    form: Affine,
    lo: i128,
    hi: i128,
}

/// Where a nested `for` loop's variable lies: `[lo, hi - 1]`, each bound a
/// constant or a loop-invariant value of the variable's type.
#[derive(Clone, Copy)]
enum RangeBound {
    Const(i64),
    Value(Value),
}

/// The accesses a versioned loop's test proves, each with its indices'
/// affine forms: in the fast copy, where the test passed, each index's
/// exact value (the test put it in the field's extent, so no wrapping
/// changed it).
pub(super) type Proven = HashMap<Stmt, Vec<Affine>>;

/// The versioning of one loop: the accesses the test proves and what it
/// checks.
pub(super) struct Plan {
    /// The accesses the fast copy leaves unchecked.
    pub proven: Proven,
    conds: Vec<Cond>,
    /// The ranges of nested loops' variables the conditions use.
    nested: Vec<(Value, RangeBound, RangeBound)>,
    /// Whether the loop computes Kiln's own math ([`vectorisation`]), which
    /// decides the fast copy's vector shape (`lower::loops`).
    pub kiln_math: bool,
}

/// The range of a type's values.
fn type_range(t: Scalar) -> (i128, i128) {
    match t {
        Scalar::I32 => (i32::MIN.into(), i32::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    }
}

/// The analysis of one loop's body.
struct Analysis<'b> {
    body: &'b Body,
    /// Values defined inside the loop (results and nested loop variables).
    inside: HashSet<Value>,
    /// Variables with a known range: the loop's own and nested ones.
    vars: HashSet<Value>,
}

impl Analysis<'_> {
    /// The affine form of integer value `v`, with the conditions under
    /// which it is exact pushed to `conds`; `None` when it is not one.
    fn affine(&self, v: Value, budget: &mut u32, conds: &mut Vec<Cond>) -> Option<Affine> {
        *budget = budget.checked_sub(1)?;
        let ty = self.body.ty(v).scalar()?;
        if !matches!(ty, Scalar::I32 | Scalar::I64) {
            return None;
        }
        if self.vars.contains(&v) {
            return Some(Affine::leaf(Leaf::Var(v)));
        }
        if !self.inside.contains(&v) {
            return (self.body.value(v).def != ValueDef::Undefined).then(|| Affine::leaf(Leaf::Inv(v)));
        }
        let ValueDef::Result(s) = self.body.value(v).def else { return None };
        match &self.body.stmt(s).kind {
            StmtKind::Const(c) => Some(Affine::constant(match ty {
                Scalar::I32 => i128::from(c.bits as u32 as i32),
                _ => i128::from(c.bits as i64),
            })),
            StmtKind::Binary(op, a, b) => {
                let x = self.affine(*a, budget, conds)?;
                let y = self.affine(*b, budget, conds)?;
                match op {
                    BinOp::Add => x.add_scaled(&y, 1),
                    BinOp::Sub => x.add_scaled(&y, -1),
                    BinOp::Mul if y.terms.is_empty() => x.scale(y.konst),
                    BinOp::Mul if x.terms.is_empty() => y.scale(x.konst),
                    _ => None,
                }
            }
            StmtKind::Unary(UnOp::Neg, a) => self.affine(*a, budget, conds)?.scale(-1),
            StmtKind::Cast(a, _) => {
                let from = self.body.ty(*a).scalar()?;
                let x = self.affine(*a, budget, conds)?;
                // Widening sign-extends the wrapped value: exact only when
                // the form fits the narrower type. Truncation commutes.
                if from.bits() < ty.bits() {
                    let (lo, hi) = type_range(from);
                    conds.push(Cond { form: x.clone(), lo, hi });
                }
                Some(x)
            }
            _ => None,
        }
    }

    /// The conditions that prove access `r` and its indices' forms, or
    /// `None` when some index is not affine.
    fn access(&self, r: &FieldRef, field: &Field) -> Option<(Vec<Cond>, Vec<Affine>)> {
        if r.indices.len() != field.shape.len() {
            return None;
        }
        let mut conds = Vec::new();
        let mut forms = Vec::with_capacity(r.indices.len());
        for (&v, &extent) in r.indices.iter().zip(&field.shape) {
            let mut budget = BUDGET;
            let form = self.affine(v, &mut budget, &mut conds)?;
            let (_, tmax) = type_range(self.body.ty(v).scalar()?);
            conds.push(Cond { form: form.clone(), lo: 0, hi: i128::from(extent).min(tmax + 1) - 1 });
            forms.push(form);
        }
        Some((conds, forms))
    }

    /// A nested `for`'s bound usable in the test: a constant of the
    /// variable's type, or an invariant value of that type.
    fn range_bound(&self, b: &Bound, ty: Scalar) -> Option<RangeBound> {
        let (lo, hi) = type_range(ty);
        match *b {
            Bound::Const(c) if (lo..=hi).contains(&i128::from(c)) => Some(RangeBound::Const(c)),
            Bound::Value(v) if !self.inside.contains(&v) && self.body.ty(v).scalar() == Some(ty) => {
                Some(RangeBound::Value(v))
            }
            _ => None,
        }
    }
}

/// How LLVM can vectorise a loop over `block`: `None` when it cannot (an
/// atomic read-modify-write, which LLVM keeps scalar, or a math operator
/// `math` computes with a scalar libm call: a call of `atanf` that may set
/// `errno` is not vectorised; libmvec's variants in fast-math and Kiln's
/// own math in default mode are); else whether it calls Kiln's own math.
/// Versioning a loop that stays scalar buys only the checks, which cost
/// little beside such a statement, for twice the code to compile (cold
/// compile).
fn vectorisation(body: &Body, block: Block, math: MathCalls) -> Option<bool> {
    let (mut ok, mut kiln_math) = (true, false);
    body.walk(block, &mut |s| {
        ok &= match &body.stmt(s).kind {
            StmtKind::Atomic(..) => false,
            StmtKind::Unary(op, a) => body.ty(*a).scalar().is_none_or(|t| {
                kiln_math |= math.kiln_func(*op, t).is_some();
                math.unary_vectorises(*op, t)
            }),
            StmtKind::Binary(op, ..) => math.binary_vectorises(*op),
            _ => true,
        };
    });
    ok.then_some(kiln_math)
}

/// Plans the versioning of a loop over `block` whose own variables are
/// `vars` (their ranges are the caller's); `None` when no access of the
/// loop is provable, or when the loop would not vectorise anyway
/// ([`vectorisation`]; `math`: how the math operators are computed).
pub(super) fn plan<'f>(
    body: &Body,
    block: Block,
    vars: &[Value],
    math: MathCalls,
    field: impl Fn(&str) -> Option<&'f Field>,
) -> Option<Plan> {
    let kiln_math = vectorisation(body, block, math)?;
    // The loop's own variables change from one iteration to the next too.
    let mut inside: HashSet<Value> = vars.iter().copied().collect();
    body.walk(block, &mut |s| {
        let data = body.stmt(s);
        inside.extend(data.result);
        if let StmtKind::For { var, .. } = &data.kind {
            inside.insert(*var);
        }
    });
    let mut a = Analysis { body, inside, vars: vars.iter().copied().collect() };
    let mut nested = Vec::new();
    body.walk(block, &mut |s| {
        if let StmtKind::For { var, lo, hi, .. } = &body.stmt(s).kind {
            let ty = body.ty(*var).scalar();
            let range = ty
                .filter(|t| matches!(t, Scalar::I32 | Scalar::I64))
                .and_then(|t| Some((a.range_bound(lo, t)?, a.range_bound(hi, t)?)));
            if let Some((lo, hi)) = range {
                nested.push((*var, lo, hi));
            }
        }
    });
    a.vars.extend(nested.iter().map(|&(v, ..)| v));
    let mut proven = HashMap::new();
    let mut conds = Vec::new();
    let mut seen = HashSet::new();
    body.walk(block, &mut |s| {
        let Some(r) = body.stmt(s).kind.access() else { return };
        let Some((found, forms)) = field(r.field.as_str()).and_then(|f| a.access(r, f)) else { return };
        proven.insert(s, forms);
        conds.extend(found.into_iter().filter(|c| seen.insert(c.clone())));
    });
    (!proven.is_empty()).then_some(Plan { proven, conds, nested, kiln_math })
}

impl<'a, 'ctx> FnCx<'a, 'ctx> {
    /// The pre-loop test of `plan` (an `i1`, true when every access it
    /// proves is in bounds in every iteration), at the builder's position;
    /// `ranges` are the loop's own variables' `[min, max]` as `i64`.
    pub(super) fn version_test(
        &mut self,
        plan: &Plan,
        ranges: &[(Value, IntValue<'ctx>, IntValue<'ctx>)],
    ) -> Result<IntValue<'ctx>> {
        let i128t = self.cx.i128_type();
        let mut box_: HashMap<Leaf, (IntValue<'ctx>, IntValue<'ctx>)> = HashMap::new();
        for &(v, min, max) in ranges {
            let min = self.b.build_int_s_extend(min, i128t, "")?;
            let max = self.b.build_int_s_extend(max, i128t, "")?;
            box_.insert(Leaf::Var(v), (min, max));
        }
        for &(v, lo, hi) in &plan.nested {
            let lo = self.range_bound_value(lo)?;
            let hi = self.range_bound_value(hi)?;
            let max = self.b.build_int_sub(hi, i128t.const_int(1, false), "")?;
            box_.insert(Leaf::Var(v), (lo, max));
        }
        let mut ok = self.cx.bool_type().const_all_ones();
        for c in &plan.conds {
            let (min, max) = self.form_range(&c.form, &mut box_)?;
            let above = self.b.build_int_compare(IntPredicate::SGE, min, const_i128(self, c.lo), "")?;
            let below = self.b.build_int_compare(IntPredicate::SLE, max, const_i128(self, c.hi), "")?;
            ok = self.b.build_and(ok, above, "")?;
            ok = self.b.build_and(ok, below, "")?;
        }
        Ok(ok)
    }

    /// The exact value of a proven index in the fast copy, as an `i64`:
    /// `konst + Σ coef·leaf` from the leaves' exact values (a loop
    /// variable's from [`FnCx::wide`] when its loop keeps one, else its
    /// sign extension, as an invariant's). Computed modulo 2⁶⁴, which the
    /// result, inside the field's extent, is exact in. An `i64` index of
    /// the loop's `i64` counters, where the `i32` value sign-extended was
    /// one LLVM had to test for wrapping before it vectorised.
    pub(super) fn exact_index(&mut self, form: &Affine) -> Result<IntValue<'ctx>> {
        let i64t = self.cx.i64_type();
        // The constant last (and only when not zero), for LLVM's folds.
        let mut sum: Option<IntValue<'ctx>> = None;
        for &(leaf, coef) in &form.terms {
            let (Leaf::Var(v) | Leaf::Inv(v)) = leaf;
            let x = match (leaf, self.wide.get(&v)) {
                (Leaf::Var(_), Some(&w)) => w,
                _ => self.b.build_int_s_extend_or_bit_cast(self.ival(v)?, i64t, "")?,
            };
            let term = match coef {
                1 => x,
                _ => self.b.build_int_mul(x, i64t.const_int(coef as u64, false), "")?,
            };
            sum = Some(match sum {
                None => term,
                Some(s) => self.b.build_int_add(s, term, "")?,
            });
        }
        // `as u64` keeps the low 64 bits: the constant modulo 2⁶⁴.
        let k = i64t.const_int(form.konst as u64, false);
        Ok(match sum {
            None => k,
            Some(s) if form.konst == 0 => s,
            Some(s) => self.b.build_int_add(s, k, "")?,
        })
    }

    /// A nested loop's bound as an exact `i128`.
    fn range_bound_value(&mut self, b: RangeBound) -> Result<IntValue<'ctx>> {
        let i128t = self.cx.i128_type();
        Ok(match b {
            RangeBound::Const(c) => const_i128(self, c.into()),
            RangeBound::Value(v) => self.b.build_int_s_extend(self.ival(v)?, i128t, "")?,
        })
    }

    /// The smallest and largest values of `form` over the box: each term at
    /// the end of its leaf's range its coefficient's sign picks.
    fn form_range(
        &mut self,
        form: &Affine,
        box_: &mut HashMap<Leaf, (IntValue<'ctx>, IntValue<'ctx>)>,
    ) -> Result<(IntValue<'ctx>, IntValue<'ctx>)> {
        let mut min = const_i128(self, form.konst);
        let mut max = min;
        for &(leaf, coef) in &form.terms {
            let (lo, hi) = match box_.get(&leaf) {
                Some(&r) => r,
                None => {
                    let Leaf::Inv(v) = leaf else { return Err(super::bug("a loop variable without a range")) };
                    let x = self.b.build_int_s_extend(self.ival(v)?, self.cx.i128_type(), "")?;
                    box_.insert(leaf, (x, x));
                    (x, x)
                }
            };
            let k = const_i128(self, coef);
            let (at_min, at_max) = if coef > 0 { (lo, hi) } else { (hi, lo) };
            let t_min = self.b.build_int_mul(at_min, k, "")?;
            let t_max = self.b.build_int_mul(at_max, k, "")?;
            min = self.b.build_int_add(min, t_min, "")?;
            max = self.b.build_int_add(max, t_max, "")?;
        }
        Ok((min, max))
    }
}

/// An `i128` constant.
fn const_i128<'ctx>(fx: &FnCx<'_, 'ctx>, k: i128) -> IntValue<'ctx> {
    let bits = k as u128;
    fx.cx.i128_type().const_int_arbitrary_precision(&[bits as u64, (bits >> 64) as u64])
}
