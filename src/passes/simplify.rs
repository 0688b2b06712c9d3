//! `simplify`: constant folding, exact algebraic identities, copy
//! propagation through local slots, and folding of branches and loops whose
//! outcome is known.
//!
//! Owns: the constant evaluator ([`fold_binary`], [`fold_unary`],
//! [`fold_cmp`], [`fold_cast`]), which follows the language's semantics
//! exactly: integers wrap, shift amounts are taken modulo the width,
//! division and remainder by zero give 0, float-to-int casts saturate (NaN
//! gives 0), floats are IEEE 754.
//!
//! Folding calls the reference interpreter's own operations
//! (`semantics::eval_*`), so the pass and the oracle cannot disagree.
//!
//! Must never: fold what the machine might compute differently. Floats are
//! folded only where IEEE 754 fixes every bit of the result (`+ - * /`,
//! `rem`, `min`/`max`, `sqrt`, `floor`/`ceil`/`round`, `neg`/`abs`,
//! comparisons and casts; `min`/`max` order `-0.0` below `+0.0`) and never
//! when the result is a NaN whose payload the hardware chooses;
//! transcendental functions (`sin cos tan exp log pow atan2`) are never
//! folded, because libm's results differ between versions. Identities that
//! are not exact for floats (`x + 0.0` is not `x` when `x` is `-0.0`;
//! `x * 1.0` quiets a signalling NaN) are applied to integers only.

use super::util;
use crate::diag::Diagnostics;
use crate::ir::*;
use rustc_hash::{FxHashMap, FxHashSet};

/// The `simplify` pass.
pub struct Simplify;

impl super::Pass for Simplify {
    fn name(&self) -> &'static str {
        "simplify"
    }
    fn description(&self) -> &'static str {
        "fold constants exactly, apply exact identities, forward stored slot values, fold known branches"
    }
    fn run(&self, stream: &mut Stream) -> Result<(), Diagnostics> {
        util::for_each_body(stream, |body, _| simplify_body(body));
        Ok(())
    }
}

/// Simplifies one body until nothing changes (bounded: each round removes
/// or folds at least one statement, and the bound only guards against a
/// bug turning into a hang).
pub fn simplify_body(body: &mut Body) {
    for _ in 0..32 {
        let mut cx = Cx { consts: FxHashMap::default(), subst: FxHashMap::default(), changed: false, names: None };
        let entry = body.entry;
        cx.block(body, entry, &mut FxHashMap::default());
        if !cx.changed {
            break;
        }
    }
}

/// What a slot is known to hold at a point of the walk.
#[derive(Clone, Copy, Debug)]
enum SlotVal {
    /// Freshly made by `alloca`: zero.
    Zero,
    /// The value last stored.
    Value(Value),
}

struct Cx {
    /// Values known to be constants.
    consts: FxHashMap<Value, Const>,
    /// Values replaced by earlier ones; uses are rewritten as the walk
    /// reaches them (a use always comes after its definition in print
    /// order, so one walk rewrites them all).
    subst: FxHashMap<Value, Value>,
    changed: bool,
    /// Name counts, computed the first time a branch is spliced.
    names: Option<util::NameCounts>,
}

/// What to do with a statement after looking at it.
enum Action {
    Keep,
    /// Its result is this other value; drop the statement.
    Replace(Value),
    /// Its result is this constant; the statement becomes a `const`.
    Fold(Const),
    /// Drop it (it has no result, or the result is unused by construction).
    Remove,
    /// Replace it by the statements of this block (a branch known taken).
    Splice(Block),
}

impl Cx {
    fn block(&mut self, body: &mut Body, b: Block, slots: &mut FxHashMap<Value, SlotVal>) {
        let old = std::mem::take(&mut body[b]);
        let mut out: Vec<Stmt> = Vec::with_capacity(old.len());
        let mut queue: std::collections::VecDeque<Stmt> = old.into();
        while let Some(s) = queue.pop_front() {
            util::substitute(body, s, &self.subst);
            match self.stmt(body, s, slots) {
                Action::Keep => {
                    let ends = body.stmt(s).kind.is_terminator();
                    out.push(s);
                    if ends {
                        // Nothing after a `break`, `continue` or `ret` runs.
                        if !queue.is_empty() {
                            self.changed = true;
                        }
                        break;
                    }
                }
                Action::Replace(v) => {
                    let r = body.stmt(s).result.expect("replaced statements have results");
                    self.subst.insert(r, v);
                    self.changed = true;
                }
                Action::Fold(c) => {
                    let data = &mut body[s];
                    if data.kind != StmtKind::Const(c) {
                        data.kind = StmtKind::Const(c);
                        self.changed = true;
                    }
                    if let Some(r) = data.result {
                        self.consts.insert(r, c);
                    }
                    out.push(s);
                }
                Action::Remove => self.changed = true,
                Action::Splice(inner) => {
                    self.changed = true;
                    let stmts = std::mem::take(&mut body[inner]);
                    // The spliced values now live in the enclosing scope,
                    // where a later sibling may carry the same name.
                    let names = self.names.get_or_insert_with(|| util::name_counts(body));
                    for &t in &stmts {
                        if let Some(r) = body.stmt(t).result {
                            util::unshare_name(body, r, names);
                        }
                    }
                    for &t in stmts.iter().rev() {
                        queue.push_front(t);
                    }
                }
            }
        }
        body[b] = out;
    }

    fn stmt(&mut self, body: &mut Body, s: Stmt, slots: &mut FxHashMap<Value, SlotVal>) -> Action {
        let kind = body.stmt(s).kind.clone();
        let result = body.stmt(s).result;
        let c = |v: Value| self.consts.get(&v).copied();
        match kind {
            StmtKind::Const(k) => Action::Fold(k),
            StmtKind::Binary(op, a, b) => {
                if let (Some(x), Some(y)) = (c(a), c(b)) {
                    if let Some(r) = fold_binary(op, x, y) {
                        return Action::Fold(r);
                    }
                }
                self.binary_identity(body, op, a, b)
            }
            StmtKind::Unary(op, a) => {
                if let Some(x) = c(a) {
                    if let Some(r) = fold_unary(op, x) {
                        return Action::Fold(r);
                    }
                }
                // neg (neg x) and not (not x) are x for every type (float
                // neg flips the sign bit only).
                if let Some(StmtKind::Unary(inner, x)) = def_kind(body, a) {
                    if inner == op && matches!(op, UnOp::Neg | UnOp::Not) {
                        return Action::Replace(x);
                    }
                }
                Action::Keep
            }
            StmtKind::Cmp(op, a, b) => {
                if let (Some(x), Some(y)) = (c(a), c(b)) {
                    if let Some(r) = fold_cmp(op, x, y) {
                        return Action::Fold(r);
                    }
                }
                if a == b && body.ty(a).scalar().is_some_and(Scalar::is_int) {
                    return Action::Fold(Const::bool(matches!(op, CmpOp::Le | CmpOp::Ge | CmpOp::Eq)));
                }
                Action::Keep
            }
            StmtKind::Cast(a, to) => {
                if let Some(x) = c(a) {
                    if let Some(r) = fold_cast(x, to) {
                        return Action::Fold(r);
                    }
                }
                if body.ty(a) == Type::Scalar(to) {
                    return Action::Replace(a);
                }
                Action::Keep
            }
            // Not folded on constants: a literal need not keep a NaN's payload.
            StmtKind::BitCast(a, to) if body.ty(a) == Type::Scalar(to) => Action::Replace(a),
            StmtKind::BitCast(..) => Action::Keep,
            StmtKind::Select(cond, x, y) => {
                if let Some(k) = c(cond) {
                    return Action::Replace(if k.bits & 1 != 0 { x } else { y });
                }
                if x == y {
                    return Action::Replace(x);
                }
                Action::Keep
            }
            // An assert known to hold checks nothing.
            StmtKind::Assert { cond, .. } if c(cond).is_some_and(|k| k.bits & 1 != 0) => Action::Remove,
            StmtKind::Alloca(_) => {
                if let Some(r) = result {
                    slots.insert(r, SlotVal::Zero);
                }
                Action::Keep
            }
            StmtKind::StoreSlot(p, v) => {
                slots.insert(p, SlotVal::Value(v));
                Action::Keep
            }
            StmtKind::LoadSlot(p) => match slots.get(&p) {
                Some(SlotVal::Value(v)) => Action::Replace(*v),
                Some(SlotVal::Zero) => match body.ty(p) {
                    Type::Slot(t) => Action::Fold(Const { ty: t, bits: 0 }),
                    Type::Scalar(_) => Action::Keep,
                },
                None => Action::Keep,
            },
            StmtKind::If { cond, then_blk, else_blk } => {
                if let Some(k) = c(cond) {
                    return match (k.bits & 1 != 0, else_blk) {
                        (true, _) => Action::Splice(then_blk),
                        (false, Some(e)) => Action::Splice(e),
                        (false, None) => Action::Remove,
                    };
                }
                for blk in [Some(then_blk), else_blk].into_iter().flatten() {
                    let mut inner = slots.clone();
                    self.block(body, blk, &mut inner);
                }
                forget_stored(body, s, slots);
                Action::Keep
            }
            StmtKind::For { var, lo, hi, body: blk, serial } => {
                let (lo2, hi2) = (self.const_bound(&lo), self.const_bound(&hi));
                if let (Bound::Const(l), Bound::Const(h)) = (&lo2, &hi2) {
                    if l >= h {
                        // The loop never runs.
                        return Action::Remove;
                    }
                }
                if lo2 != lo || hi2 != hi {
                    self.changed = true;
                    body[s].kind = StmtKind::For { var, lo: lo2, hi: hi2, body: blk, serial };
                }
                self.loop_body(body, s, blk, slots);
                Action::Keep
            }
            StmtKind::While { body: blk } => {
                self.loop_body(body, s, blk, slots);
                Action::Keep
            }
            StmtKind::Task { body: blk, .. } => {
                self.loop_body(body, s, blk, slots);
                Action::Keep
            }
            StmtKind::Load(_)
            | StmtKind::Random { .. }
            | StmtKind::Store(..)
            | StmtKind::Atomic(..)
            | StmtKind::Call(..)
            | StmtKind::Ret(_)
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Assert { .. }
            | StmtKind::Print { .. }
            | StmtKind::Launch(_) => Action::Keep,
        }
    }

    /// Walks a block that may run many times: what is known on entry holds
    /// in it except for the slots the block itself stores to.
    fn loop_body(&mut self, body: &mut Body, s: Stmt, blk: Block, slots: &mut FxHashMap<Value, SlotVal>) {
        forget_stored(body, s, slots);
        let mut inner = slots.clone();
        self.block(body, blk, &mut inner);
        forget_stored(body, s, slots);
    }

    /// A loop bound that is a known integer constant becomes a literal.
    fn const_bound(&self, b: &Bound) -> Bound {
        match b {
            Bound::Value(v) => match self.consts.get(v).and_then(|k| k.as_i64()) {
                Some(k) if self.consts[v].ty != Scalar::I1 => Bound::Const(k),
                _ => b.clone(),
            },
            _ => b.clone(),
        }
    }

    fn binary_identity(&self, body: &Body, op: BinOp, a: Value, b: Value) -> Action {
        let Some(ty) = body.ty(a).scalar() else { return Action::Keep };
        if !ty.is_int() {
            return Action::Keep;
        }
        let ca = self.consts.get(&a).and_then(|k| k.as_i64());
        let cb = self.consts.get(&b).and_then(|k| k.as_i64());
        let zero = Const::int(ty, 0);
        let ones = Const::int(ty, -1);
        // `-1` of i1 is `true` (bits 1), so `and`/`or` with all ones work
        // for i1 as for wider integers.
        let all_ones = |k: Option<i64>| k.is_some_and(|k| Const::int(ty, k) == ones);
        use BinOp::*;
        match op {
            Add if cb == Some(0) => Action::Replace(a),
            Add if ca == Some(0) => Action::Replace(b),
            Sub if cb == Some(0) => Action::Replace(a),
            Sub | Xor if a == b => Action::Fold(zero),
            Mul if cb == Some(1) => Action::Replace(a),
            Mul if ca == Some(1) => Action::Replace(b),
            Mul if ca == Some(0) || cb == Some(0) => Action::Fold(zero),
            Div if cb == Some(1) => Action::Replace(a),
            // Division and remainder by zero are defined to give 0.
            Div | Rem if cb == Some(0) => Action::Fold(zero),
            // (-1 is all ones, a large number, for an unsigned type.)
            Rem if cb == Some(1) || (ty.is_signed() && cb == Some(-1)) => Action::Fold(zero),
            Min | Max | And | Or if a == b => Action::Replace(a),
            And if ca == Some(0) || cb == Some(0) => Action::Fold(zero),
            And if all_ones(cb) => Action::Replace(a),
            And if all_ones(ca) => Action::Replace(b),
            Or if cb == Some(0) => Action::Replace(a),
            Or if ca == Some(0) => Action::Replace(b),
            Or if all_ones(ca) || all_ones(cb) => Action::Fold(ones),
            Xor if cb == Some(0) => Action::Replace(a),
            Xor if ca == Some(0) => Action::Replace(b),
            // Shift amounts are taken modulo the width.
            Shl | Shr | Ushr if cb.is_some_and(|k| k & (ty.bits() as i64 - 1) == 0) => Action::Replace(a),
            Shl | Shr | Ushr if ca == Some(0) => Action::Fold(zero),
            _ => Action::Keep,
        }
    }
}

/// The kind of the statement defining `v`, if a statement defines it.
fn def_kind(body: &Body, v: Value) -> Option<StmtKind> {
    match body.value(v).def {
        ValueDef::Result(s) => Some(body.stmt(s).kind.clone()),
        _ => None,
    }
}

/// Forgets what is known about the slots `s` (or anything nested in it)
/// stores to.
fn forget_stored(body: &Body, s: Stmt, slots: &mut FxHashMap<Value, SlotVal>) {
    if slots.is_empty() {
        return;
    }
    let mut stored = FxHashSet::default();
    util::slots_stored_in(body, s, &mut stored);
    for p in stored {
        slots.remove(&p);
    }
}

// ---------------------------------------------------------------------------
// The constant evaluator: the reference interpreter's own operations (one
// implementation of the semantics), behind a filter that keeps what the
// language does not fix bit for bit at compile time.

use crate::semantics::{eval_binary, eval_cast, eval_cmp, eval_unary};

/// Whether a float result may be folded: not a NaN, whose sign and payload
/// the host's floating-point unit chooses at run time (see
/// `docs/language.md`, "NaN bits").
fn exact(c: Const) -> Option<Const> {
    match c.as_f64() {
        Some(x) if x.is_nan() => None,
        _ => Some(c),
    }
}

/// Whether `c` is a subnormal float of its type: what it computes to
/// depends on the run's mode (`config::Denormals`: kept, or flushed to a
/// zero of its sign), which the passes do not know, so an operation that
/// reads or makes one is left to run time.
fn subnormal(c: Const) -> bool {
    match c.ty {
        Scalar::F32 => c.as_f64().is_some_and(|x| (x as f32).is_subnormal()),
        Scalar::F64 => c.as_f64().is_some_and(f64::is_subnormal),
        // An f16 operation is an f32 one on normal f32s whose result is
        // rounded to f16 by a conversion that ignores the mode: its result
        // is the same in both modes (`docs/language.md`).
        _ => false,
    }
}

/// Folds a binary operator over two constants of one type, or None where
/// the result is not fixed bit for bit by the language (see the module
/// doc): `pow` and `atan2` (libm's), NaN results, and subnormal operands
/// or results.
pub fn fold_binary(op: BinOp, a: Const, b: Const) -> Option<Const> {
    if a.ty != b.ty || !op.accepts(a.ty) || op.libm().is_some() || subnormal(a) || subnormal(b) {
        return None;
    }
    exact(eval_binary(op, a, b)).filter(|r| !subnormal(*r))
}

/// Folds a unary operator, or None where the result is not fixed bit for
/// bit: transcendental functions (libm's), and NaN results of arithmetic.
/// `neg` and `abs` touch only the sign bit, so they fold even on a NaN.
pub fn fold_unary(op: UnOp, a: Const) -> Option<Const> {
    if !op.accepts(a.ty) || op.libm().is_some() {
        return None;
    }
    let r = eval_unary(op, a);
    if matches!(op, UnOp::Neg | UnOp::Abs) {
        return Some(r);
    }
    if a.as_f64().is_some_and(f64::is_nan) || subnormal(a) {
        return None;
    }
    exact(r).filter(|r| !subnormal(*r))
}

/// Folds a comparison: signed for `i32`/`i64`, `false < true` for `i1`,
/// ordered for floats except `ne`, which is true when either is NaN.
pub fn fold_cmp(op: CmpOp, a: Const, b: Const) -> Option<Const> {
    if a.ty != b.ty || subnormal(a) || subnormal(b) {
        return None;
    }
    Some(eval_cmp(op, a, b))
}

/// Folds a cast: int to int truncates or sign-extends (`i1` gives 0 or 1),
/// int to `i1` is `!= 0`, float to `i1` is `!= 0.0`, float to int
/// saturates with NaN giving 0, int to float rounds to nearest. None for a
/// NaN changing float width (its payload is the hardware's choice).
pub fn fold_cast(a: Const, to: Scalar) -> Option<Const> {
    if a.ty == to {
        return Some(a);
    }
    if to.is_float() && a.as_f64().is_some_and(f64::is_nan) || subnormal(a) {
        return None;
    }
    Some(eval_cast(a, to)).filter(|r| !subnormal(*r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(op: BinOp, a: Const, b: Const) -> Option<Const> {
        fold_binary(op, a, b)
    }

    #[test]
    fn integer_division_edge_cases() {
        let (min32, min64) = (Const::i32(i32::MIN), Const::i64(i64::MIN));
        assert_eq!(bin(BinOp::Div, min32, Const::i32(-1)), Some(min32), "MIN / -1 wraps");
        assert_eq!(bin(BinOp::Rem, min32, Const::i32(-1)), Some(Const::i32(0)));
        assert_eq!(bin(BinOp::Div, min64, Const::i64(-1)), Some(min64));
        assert_eq!(bin(BinOp::Rem, min64, Const::i64(-1)), Some(Const::i64(0)));
        assert_eq!(bin(BinOp::Div, Const::i32(7), Const::i32(0)), Some(Const::i32(0)), "div by zero is 0");
        assert_eq!(bin(BinOp::Rem, Const::i64(7), Const::i64(0)), Some(Const::i64(0)));
        assert_eq!(bin(BinOp::Rem, Const::i32(-7), Const::i32(2)), Some(Const::i32(-1)), "dividend's sign");
        assert_eq!(bin(BinOp::Div, Const::i32(-7), Const::i32(2)), Some(Const::i32(-3)), "truncates");
    }

    #[test]
    fn integer_arithmetic_wraps() {
        assert_eq!(bin(BinOp::Add, Const::i32(i32::MAX), Const::i32(1)), Some(Const::i32(i32::MIN)));
        assert_eq!(bin(BinOp::Mul, Const::i64(i64::MAX), Const::i64(2)), Some(Const::i64(-2)));
        assert_eq!(fold_unary(UnOp::Neg, Const::i32(i32::MIN)), Some(Const::i32(i32::MIN)));
        assert_eq!(fold_unary(UnOp::Abs, Const::i64(i64::MIN)), Some(Const::i64(i64::MIN)));
        assert_eq!(fold_unary(UnOp::Not, Const::bool(true)), Some(Const::bool(false)));
        assert_eq!(fold_unary(UnOp::Not, Const::i32(0)), Some(Const::i32(-1)));
    }

    #[test]
    fn shift_amounts_are_taken_modulo_the_width() {
        assert_eq!(bin(BinOp::Shl, Const::i32(1), Const::i32(33)), Some(Const::i32(2)));
        assert_eq!(bin(BinOp::Shl, Const::i32(1), Const::i32(32)), Some(Const::i32(1)));
        assert_eq!(bin(BinOp::Shl, Const::i64(1), Const::i64(64)), Some(Const::i64(1)));
        assert_eq!(bin(BinOp::Shl, Const::i32(1), Const::i32(-1)), Some(Const::i32(i32::MIN)), "-1 mod 32 = 31");
        assert_eq!(bin(BinOp::Shr, Const::i32(-8), Const::i32(33)), Some(Const::i32(-4)), "arithmetic");
        assert_eq!(bin(BinOp::Ushr, Const::i32(-8), Const::i32(1)), Some(Const::i32(0x7fff_fffc)), "logical");
        assert_eq!(bin(BinOp::Ushr, Const::i64(-1), Const::i64(127)), Some(Const::i64(1)));
    }

    #[test]
    fn float_to_int_casts_saturate_and_nan_gives_zero() {
        assert_eq!(fold_cast(Const::f32(f32::NAN), Scalar::I32), Some(Const::i32(0)));
        assert_eq!(fold_cast(Const::f64(-f64::NAN), Scalar::I64), Some(Const::i64(0)));
        assert_eq!(fold_cast(Const::f32(1e20), Scalar::I32), Some(Const::i32(i32::MAX)));
        assert_eq!(fold_cast(Const::f64(f64::NEG_INFINITY), Scalar::I32), Some(Const::i32(i32::MIN)));
        assert_eq!(fold_cast(Const::f32(-2.9), Scalar::I64), Some(Const::i64(-2)), "truncates toward zero");
        assert_eq!(fold_cast(Const::f32(f32::NAN), Scalar::I1), Some(Const::bool(true)), "NaN != 0.0");
        assert_eq!(fold_cast(Const::f64(-0.0), Scalar::I1), Some(Const::bool(false)));
        assert_eq!(fold_cast(Const::i64(1 << 40), Scalar::I32), Some(Const::i32(0)), "truncates");
        assert_eq!(fold_cast(Const::i32(-1), Scalar::I64), Some(Const::i64(-1)), "sign-extends");
        assert_eq!(fold_cast(Const::bool(true), Scalar::I32), Some(Const::i32(1)), "i1 gives 0 or 1");
        assert_eq!(fold_cast(Const::i32(-2), Scalar::I1), Some(Const::bool(true)), "int to i1 is != 0");
        assert_eq!(fold_cast(Const::i64(16_777_217), Scalar::F32), Some(Const::f32(16_777_216.0)));
        // A NaN's payload after a width change is the hardware's choice.
        assert_eq!(fold_cast(Const::f32(f32::NAN), Scalar::F64), None);
    }

    #[test]
    fn floats_fold_only_when_every_bit_is_fixed() {
        assert_eq!(bin(BinOp::Add, Const::f32(0.1), Const::f32(0.2)), Some(Const::f32(0.1 + 0.2)));
        assert_eq!(bin(BinOp::Div, Const::f64(1.0), Const::f64(0.0)), Some(Const::f64(f64::INFINITY)));
        assert_eq!(bin(BinOp::Div, Const::f64(0.0), Const::f64(0.0)), None, "NaN result");
        assert_eq!(bin(BinOp::Rem, Const::f32(5.5), Const::f32(2.0)), Some(Const::f32(1.5)), "fmod");
        assert_eq!(bin(BinOp::Min, Const::f32(f32::NAN), Const::f32(3.0)), Some(Const::f32(3.0)), "minimumNumber");
        assert_eq!(bin(BinOp::Max, Const::f64(2.0), Const::f64(f64::NAN)), Some(Const::f64(2.0)));
        assert_eq!(bin(BinOp::Min, Const::f32(0.0), Const::f32(-0.0)), Some(Const::f32(-0.0)), "-0.0 below +0.0");
        assert_eq!(bin(BinOp::Max, Const::f64(-0.0), Const::f64(0.0)), Some(Const::f64(0.0)), "+0.0 above -0.0");
        assert_eq!(bin(BinOp::Min, Const::f32(f32::NAN), Const::f32(f32::NAN)), None, "NaN result");
        assert_eq!(bin(BinOp::Pow, Const::f64(2.0), Const::f64(3.0)), None, "libm");
        assert_eq!(bin(BinOp::Atan2, Const::f64(1.0), Const::f64(1.0)), None, "libm");
        assert_eq!(fold_unary(UnOp::Sin, Const::f64(0.0)), None, "libm");
        assert_eq!(fold_unary(UnOp::Exp, Const::f32(1.0)), None, "libm");
        assert_eq!(fold_unary(UnOp::Sqrt, Const::f64(2.0)), Some(Const::f64(2f64.sqrt())));
        assert_eq!(fold_unary(UnOp::Sqrt, Const::f64(-1.0)), None, "NaN result");
        assert_eq!(fold_unary(UnOp::Round, Const::f32(-2.5)), Some(Const::f32(-3.0)), "half away from zero");
        assert_eq!(fold_unary(UnOp::Round, Const::f64(0.5)), Some(Const::f64(1.0)));
        assert_eq!(fold_unary(UnOp::Floor, Const::f64(-0.5)), Some(Const::f64(-1.0)));
        assert_eq!(fold_unary(UnOp::Ceil, Const::f32(-0.5)), Some(Const::f32(-0.0)));
        let qnan = Const { ty: Scalar::F32, bits: 0x7fc0_0001 };
        assert_eq!(fold_unary(UnOp::Neg, qnan), Some(Const { ty: Scalar::F32, bits: 0xffc0_0001 }), "sign bit only");
        assert_eq!(fold_unary(UnOp::Abs, Const::f64(-0.0)), Some(Const::f64(0.0)));
    }

    #[test]
    fn comparisons_are_signed_and_ordered_except_ne() {
        assert_eq!(fold_cmp(CmpOp::Lt, Const::i32(-1), Const::i32(0)), Some(Const::bool(true)));
        assert_eq!(fold_cmp(CmpOp::Gt, Const::bool(true), Const::bool(false)), Some(Const::bool(true)));
        let nan = Const::f32(f32::NAN);
        assert_eq!(fold_cmp(CmpOp::Eq, nan, nan), Some(Const::bool(false)));
        assert_eq!(fold_cmp(CmpOp::Ne, nan, nan), Some(Const::bool(true)));
        assert_eq!(fold_cmp(CmpOp::Le, nan, Const::f32(1.0)), Some(Const::bool(false)));
        assert_eq!(fold_cmp(CmpOp::Eq, Const::f64(0.0), Const::f64(-0.0)), Some(Const::bool(true)));
    }

    /// `%r = OP %x, %c` over a parameter `%x` and a constant `%c`: what
    /// `simplify` leaves as `%r`'s definition.
    fn simplified(op: BinOp, ty: Scalar, c: Const) -> StmtKind {
        let mut body = Body::new();
        let x = body.add_param("x", ty, Span::DUMMY);
        let (cs, cv) = body.new_stmt_with_result(StmtKind::Const(c), "c", Type::Scalar(ty), Span::DUMMY);
        let (rs, r) = body.new_stmt_with_result(StmtKind::Binary(op, x, cv), "r", Type::Scalar(ty), Span::DUMMY);
        let ret = body.new_stmt(StmtKind::Ret(Some(r)), Span::DUMMY);
        for s in [cs, rs, ret] {
            body.push(body.entry, s);
        }
        simplify_body(&mut body);
        let last = *body.block(body.entry).last().expect("ret stays");
        let StmtKind::Ret(Some(v)) = body.stmt(last).kind else { panic!("ret stays last") };
        if v == x {
            return StmtKind::Ret(Some(x));
        }
        match body.value(v).def {
            ValueDef::Result(s) => body.stmt(s).kind.clone(),
            d => panic!("unexpected definition {d:?}"),
        }
    }

    #[test]
    fn float_identities_that_are_not_exact_are_kept() {
        // -0.0 + 0.0 is +0.0, so x + 0.0 is not x.
        assert!(matches!(simplified(BinOp::Add, Scalar::F32, Const::f32(0.0)), StmtKind::Binary(BinOp::Add, ..)));
        // x * 1.0 quiets a signalling NaN.
        assert!(matches!(simplified(BinOp::Mul, Scalar::F64, Const::f64(1.0)), StmtKind::Binary(BinOp::Mul, ..)));
        // x * 0.0 is -0.0 or NaN for some x.
        assert!(matches!(simplified(BinOp::Mul, Scalar::F32, Const::f32(0.0)), StmtKind::Binary(BinOp::Mul, ..)));
    }

    #[test]
    fn integer_identities_apply() {
        let x = |k: StmtKind| matches!(k, StmtKind::Ret(Some(_)));
        assert!(x(simplified(BinOp::Add, Scalar::I32, Const::i32(0))));
        assert!(x(simplified(BinOp::Mul, Scalar::I64, Const::i64(1))));
        assert!(x(simplified(BinOp::Shl, Scalar::I32, Const::i32(32))), "shift by the width is by 0");
        assert!(x(simplified(BinOp::And, Scalar::I1, Const::bool(true))));
        assert_eq!(simplified(BinOp::Mul, Scalar::I32, Const::i32(0)), StmtKind::Const(Const::i32(0)));
        assert_eq!(simplified(BinOp::Div, Scalar::I32, Const::i32(0)), StmtKind::Const(Const::i32(0)));
        assert_eq!(simplified(BinOp::Rem, Scalar::I64, Const::i64(-1)), StmtKind::Const(Const::i64(0)));
        assert_eq!(simplified(BinOp::Or, Scalar::I32, Const::i32(-1)), StmtKind::Const(Const::i32(-1)));
        assert!(matches!(simplified(BinOp::Div, Scalar::I32, Const::i32(-1)), StmtKind::Binary(BinOp::Div, ..)));
    }
}
