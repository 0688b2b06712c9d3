//! The reduction passes of `kiln-reduce`: what each can change in a stream
//! and the change itself.
//!
//! Owns: [`SHRINKS`], the one table of reduction passes (items, statements,
//! loop and `if` unwrapping, loop bounds, results made constants, operands
//! replaced by earlier values, constants simplified, field shapes shrunk,
//! kernel parameters made constant); each lists its targets in a fixed
//! order (the print order of the stream) and applies itself to any subset
//! of them; and [`Size`], the measure every accepted candidate must make
//! smaller, so that reduction always ends.
//!
//! Must never: decide whether a candidate is valid (the verifier does, on
//! the printed and re-parsed candidate) or interesting (the script does);
//! print, or run anything.

use crate::ir::*;

/// A reduction pass: its name, its targets in `stream` (in a fixed order),
/// and its change to some of them.
pub struct Shrink {
    pub name: &'static str,
    targets: fn(&Stream) -> Vec<Target>,
    apply: fn(&mut Stream, &Target),
}

impl Shrink {
    /// What this pass may change in `stream`, in print order.
    pub fn targets(&self, stream: &Stream) -> Vec<Target> {
        (self.targets)(stream)
    }

    /// A copy of `stream` with this pass's change made to each of
    /// `targets` (a run of [`Shrink::targets`] of `stream`).
    pub fn apply(&self, stream: &Stream, targets: &[Target]) -> Stream {
        let mut out = stream.clone();
        // Last first, so that removing one target never moves another.
        for t in targets.iter().rev() {
            (self.apply)(&mut out, t);
        }
        out
    }
}

/// Where a pass changes a stream: module `m`, item `i`, and what in it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    m: usize,
    i: usize,
    at: At,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum At {
    Item,
    Stmt(Stmt),
    /// The `k`-th operand of a statement, to be replaced by a value.
    Operand(Stmt, usize, Value),
    /// A task item's own range bounds.
    Header,
    Param(usize),
    Dim(usize),
}

/// The reduction passes, in the order a round runs them: the coarse ones
/// first, as `llvm-reduce` does.
pub const SHRINKS: &[Shrink] = &[
    Shrink { name: "items", targets: item_targets, apply: remove_item },
    Shrink { name: "statements", targets: stmt_targets, apply: remove_stmt },
    Shrink { name: "unwrap", targets: unwrap_targets, apply: unwrap },
    Shrink { name: "loop-bounds", targets: bound_targets, apply: shrink_bounds },
    Shrink { name: "results-to-constants", targets: const_result_targets, apply: result_to_const },
    Shrink { name: "operands-to-earlier", targets: operand_targets, apply: replace_operand },
    Shrink { name: "constants-to-zero", targets: nonzero_consts, apply: const_to_zero },
    Shrink { name: "constants-halved", targets: large_consts, apply: halve_const },
    Shrink { name: "field-shapes", targets: dim_targets, apply: halve_dim },
    Shrink { name: "parameters-to-constants", targets: param_targets, apply: param_to_const },
];

fn body(item: &Item) -> Option<&Body> {
    match item {
        Item::Func(f) => Some(&f.body),
        Item::Kernel(k) => Some(&k.body),
        Item::Task(t) => Some(&t.body),
        Item::Field(_) => None,
    }
}

fn body_mut(item: &mut Item) -> Option<&mut Body> {
    match item {
        Item::Func(f) => Some(&mut std::sync::Arc::make_mut(f).body),
        Item::Kernel(k) => Some(&mut k.body),
        Item::Task(t) => Some(&mut t.body),
        Item::Field(_) => None,
    }
}

/// Every item of the stream with its module and item index.
fn items(stream: &Stream) -> impl Iterator<Item = (usize, usize, &Item)> {
    stream
        .modules
        .iter()
        .enumerate()
        .flat_map(|(m, module)| module.items.iter().enumerate().map(move |(i, it)| (m, i, it)))
}

/// Every statement of every body, in print order, with a target maker.
fn stmts(stream: &Stream) -> impl Iterator<Item = (usize, usize, &Body, Stmt)> {
    items(stream).filter_map(|(m, i, it)| body(it).map(|b| (m, i, b))).flat_map(|(m, i, b)| {
        let mut all = Vec::new();
        b.walk(b.entry, &mut |s| all.push(s));
        all.into_iter().map(move |s| (m, i, b, s))
    })
}

/// The statements of `stream` for which `keep` holds, as targets.
fn stmt_targets_where(stream: &Stream, keep: impl Fn(&Body, Stmt) -> bool) -> Vec<Target> {
    stmts(stream).filter(|&(_, _, b, s)| keep(b, s)).map(|(m, i, _, s)| Target { m, i, at: At::Stmt(s) }).collect()
}

fn item_mut<'a>(stream: &'a mut Stream, t: &Target) -> &'a mut Item {
    &mut stream.modules[t.m].items[t.i]
}

fn target_body<'a>(stream: &'a mut Stream, t: &Target) -> &'a mut Body {
    body_mut(item_mut(stream, t)).expect("a statement target is in a body")
}

fn stmt_of(t: &Target) -> Stmt {
    match t.at {
        At::Stmt(s) | At::Operand(s, ..) => s,
        _ => unreachable!("not a statement target"),
    }
}

fn item_targets(stream: &Stream) -> Vec<Target> {
    items(stream).map(|(m, i, _)| Target { m, i, at: At::Item }).collect()
}

fn remove_item(stream: &mut Stream, t: &Target) {
    stream.modules[t.m].items.remove(t.i);
}

fn stmt_targets(stream: &Stream) -> Vec<Target> {
    stmt_targets_where(stream, |_, _| true)
}

/// Where `s` sits: its block and position.
fn position(body: &Body, s: Stmt) -> Option<(Block, usize)> {
    body.blocks().enumerate().find_map(|(b, stmts)| stmts.iter().position(|&x| x == s).map(|p| (b, p)))
}

fn remove_stmt(stream: &mut Stream, t: &Target) {
    let body = target_body(stream, t);
    if let Some((b, p)) = position(body, stmt_of(t)) {
        body[b].remove(p);
    }
}

fn unwrap_targets(stream: &Stream) -> Vec<Target> {
    stmt_targets_where(stream, |b, s| matches!(b.stmt(s).kind, StmtKind::For { .. } | StmtKind::If { .. }))
}

/// A `for` becomes its body after `%i = const LO` (its first iteration);
/// an `if` becomes its `then` block.
fn unwrap(stream: &mut Stream, t: &Target) {
    let body = target_body(stream, t);
    let s = stmt_of(t);
    let Some((parent, p)) = position(body, s) else { return };
    let (inner, first) = match body.stmt(s).kind.clone() {
        StmtKind::For { var, lo, body: inner, .. } => {
            let lo = if let Bound::Const(c) = lo { c } else { 0 };
            let konst = Const::int(body.ty(var).elem(), lo);
            body[s].kind = StmtKind::Const(konst);
            body[s].result = Some(var);
            body[var].def = ValueDef::Result(s);
            (inner, p + 1)
        }
        StmtKind::If { then_blk, .. } => {
            body[parent].remove(p);
            (then_blk, p)
        }
        _ => return,
    };
    let moved = std::mem::take(&mut body[inner]);
    body[parent].splice(first..first, moved);
}

/// A loop's bounds `(lo, hi)`, mutable: a `for`, a `range_for` task
/// statement, or a task item's header.
fn bounds_mut<'a>(stream: &'a mut Stream, t: &Target) -> Option<(&'a mut Bound, &'a mut Bound)> {
    let item = item_mut(stream, t);
    match (t.at, item) {
        (At::Header, Item::Task(task)) => match &mut task.kind {
            TaskKind::RangeFor { lo, hi, .. } => Some((lo, hi)),
            _ => None,
        },
        (At::Stmt(s), item) => match &mut body_mut(item)?[s].kind {
            StmtKind::For { lo, hi, .. } | StmtKind::Task { kind: TaskKind::RangeFor { lo, hi, .. }, .. } => {
                Some((lo, hi))
            }
            _ => None,
        },
        _ => None,
    }
}

fn bounds<'a>(stream: &'a Stream, t: &Target) -> Option<(&'a Bound, &'a Bound)> {
    let item = &stream.modules[t.m].items[t.i];
    let kind = match (t.at, item) {
        (At::Header, Item::Task(task)) => &task.kind,
        (At::Stmt(s), item) => match &body(item)?.stmt(s).kind {
            StmtKind::For { lo, hi, .. } => return Some((lo, hi)),
            StmtKind::Task { kind, .. } => kind,
            _ => return None,
        },
        _ => return None,
    };
    match kind {
        TaskKind::RangeFor { lo, hi, .. } => Some((lo, hi)),
        _ => None,
    }
}

/// Whether a loop's bounds can shrink: a bound that is not a literal, or
/// more than one iteration.
fn shrinkable(lo: &Bound, hi: &Bound) -> bool {
    match (lo, hi) {
        (Bound::Const(l), Bound::Const(h)) => h.saturating_sub(*l) > 1,
        _ => true,
    }
}

fn bound_targets(stream: &Stream) -> Vec<Target> {
    let loops = stmts(stream).map(|(m, i, _, s)| Target { m, i, at: At::Stmt(s) });
    let headers = items(stream).map(|(m, i, _)| Target { m, i, at: At::Header });
    let all: Vec<Target> = headers.chain(loops).collect();
    all.into_iter().filter(|t| bounds(stream, t).is_some_and(|(lo, hi)| shrinkable(lo, hi))).collect()
}

/// Literal bounds, and half the iterations (at least one).
fn shrink_bounds(stream: &mut Stream, t: &Target) {
    let Some((lo, hi)) = bounds_mut(stream, t) else { return };
    let l = if let Bound::Const(l) = lo { *l } else { 0 };
    let h = match hi {
        Bound::Const(h) if *h > l + 1 => l + (*h - l) / 2,
        _ => l + 1,
    };
    *lo = Bound::Const(l);
    *hi = Bound::Const(h);
}

/// The type of the value a statement defines, when it is a scalar.
fn scalar_result(body: &Body, s: Stmt) -> Option<Scalar> {
    body.stmt(s).result.and_then(|v| body.ty(v).scalar())
}

fn const_result_targets(stream: &Stream) -> Vec<Target> {
    stmt_targets_where(stream, |b, s| !matches!(b.stmt(s).kind, StmtKind::Const(_)) && scalar_result(b, s).is_some())
}

fn result_to_const(stream: &mut Stream, t: &Target) {
    let body = target_body(stream, t);
    let s = stmt_of(t);
    if let Some(ty) = scalar_result(body, s) {
        body[s].kind = StmtKind::Const(Const::int(ty, 0));
    }
}

/// The values of a body in definition order: parameters, then each
/// statement's bound variables and result, in print order.
pub(super) fn definition_order(body: &Body) -> Vec<Value> {
    let mut out = body.params.clone();
    body.walk(body.entry, &mut |s| {
        let stmt = body.stmt(s);
        stmt.kind.for_each_bound_var(|v| out.push(v));
        out.extend(stmt.result);
    });
    out
}

fn operand_targets(stream: &Stream) -> Vec<Target> {
    let mut out = Vec::new();
    for (m, i, item) in items(stream) {
        let Some(b) = body(item) else { continue };
        let order = definition_order(b);
        let rank = |v: Value| order.iter().position(|&x| x == v);
        b.walk(b.entry, &mut |s| {
            for (k, v) in b.operands(s).into_iter().enumerate() {
                let Some(r) = rank(v) else { continue };
                let earlier = order[..r].iter().copied().find(|&w| b.ty(w) == b.ty(v));
                if let Some(w) = earlier {
                    out.push(Target { m, i, at: At::Operand(s, k, w) });
                }
            }
        });
    }
    out
}

fn replace_operand(stream: &mut Stream, t: &Target) {
    let At::Operand(s, k, with) = t.at else { return };
    let mut n = 0;
    target_body(stream, t)[s].kind.operands_mut(|v| {
        if n == k {
            *v = with;
        }
        n += 1;
    });
}

fn const_of(body: &Body, s: Stmt) -> Option<Const> {
    match body.stmt(s).kind {
        StmtKind::Const(c) => Some(c),
        _ => None,
    }
}

fn nonzero_consts(stream: &Stream) -> Vec<Target> {
    stmt_targets_where(stream, |b, s| const_of(b, s).is_some_and(|c| c != Const::int(c.ty, 0)))
}

fn set_const(stream: &mut Stream, t: &Target, f: impl Fn(Const) -> Const) {
    let body = target_body(stream, t);
    if let StmtKind::Const(c) = &mut body[stmt_of(t)].kind {
        *c = f(*c);
    }
}

fn const_to_zero(stream: &mut Stream, t: &Target) {
    set_const(stream, t, |c| Const::int(c.ty, 0));
}

/// How far a constant is from the simplest ones (0 and 1): what the
/// constant passes make smaller.
pub(super) fn const_weight(c: Const) -> u64 {
    match (c.as_i64(), c.as_f64()) {
        (Some(i), _) => i.unsigned_abs(),
        (_, Some(f)) if f.is_finite() && f.fract() == 0.0 => f.abs().min(u32::MAX as f64) as u64,
        _ => u64::from(u32::MAX) + 1,
    }
}

fn large_consts(stream: &Stream) -> Vec<Target> {
    stmt_targets_where(stream, |b, s| const_of(b, s).is_some_and(|c| const_weight(c) > 1))
}

/// Half an integer (towards zero); a float made a whole number, then
/// halved.
fn halve_const(stream: &mut Stream, t: &Target) {
    set_const(stream, t, |c| match (c.as_i64(), c.as_f64()) {
        (Some(i), _) => Const::int(c.ty, i / 2),
        (_, Some(f)) if f.is_finite() && f.fract() == 0.0 => float(c.ty, (f / 2.0).trunc()),
        (_, Some(f)) if f.is_finite() => float(c.ty, f.trunc()),
        _ => float(c.ty, 1.0),
    });
}

fn float(ty: Scalar, f: f64) -> Const {
    match ty {
        Scalar::F16 => Const::f16(half::f16::from_f64(f)),
        Scalar::F32 => Const::f32(f as f32),
        _ => Const::f64(f),
    }
}

fn dim_targets(stream: &Stream) -> Vec<Target> {
    let fields = items(stream).filter_map(|(m, i, it)| if let Item::Field(f) = it { Some((m, i, f)) } else { None });
    fields
        .flat_map(|(m, i, f)| {
            let dims = f.shape.iter().enumerate().filter(|(_, &n)| n > 1);
            dims.map(move |(d, _)| Target { m, i, at: At::Dim(d) })
        })
        .collect()
}

fn halve_dim(stream: &mut Stream, t: &Target) {
    if let (Item::Field(f), At::Dim(d)) = (item_mut(stream, t), t.at) {
        f.shape[d] /= 2;
    }
}

fn param_targets(stream: &Stream) -> Vec<Target> {
    let kernels = items(stream).filter_map(|(m, i, it)| if let Item::Kernel(k) = it { Some((m, i, k)) } else { None });
    kernels.flat_map(|(m, i, k)| (0..k.params.len()).map(move |p| Target { m, i, at: At::Param(p) })).collect()
}

/// A kernel parameter becomes `%p = const DEFAULT` (0 without a default)
/// at the top of the kernel.
fn param_to_const(stream: &mut Stream, t: &Target) {
    let (Item::Kernel(k), At::Param(p)) = (item_mut(stream, t), t.at) else { return };
    let param = k.params.remove(p);
    let v = k.body.params.remove(p);
    let ty = param.ty;
    let konst = param.default.unwrap_or(Const::int(ty, 0));
    let s = k.body.new_stmt(StmtKind::Const(konst), param.span);
    k.body[s].result = Some(v);
    k.body[v].def = ValueDef::Result(s);
    let entry = k.body.entry;
    k.body[entry].insert(0, s);
}
