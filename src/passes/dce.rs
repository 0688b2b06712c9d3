//! `dce`: removes statements that compute unused results without any
//! effect, slots that are only ever stored to, empty `if`s and `for`s, and
//! statements after a `break`, `continue` or `ret`.
//!
//! Owns: the notion of "removable" — a pure computation, a slot load, or a
//! field load that cannot fail (every index a constant within the field's
//! shape; with bounds checks on, an out-of-bounds load is a run-time error,
//! which is an effect).
//!
//! Must never: remove stores, atomics, calls (a function may store), `ret`,
//! loops that may not end (`while`), tasks, or functions. Unused functions
//! stay: a module's functions are its interface to whatever links against
//! it (another module of the stream, a host program calling through the
//! JIT), which this pass cannot see.

use super::util;
use crate::diag::Diagnostics;
use crate::ir::*;
use rustc_hash::{FxHashMap, FxHashSet};

/// The `dce` pass.
pub struct Dce;

impl super::Pass for Dce {
    fn name(&self) -> &'static str {
        "dce"
    }
    fn description(&self) -> &'static str {
        "remove unused computations, store-only slots, empty ifs and loops, unreachable statements"
    }
    fn run(&self, stream: &mut Stream) -> Result<(), Diagnostics> {
        util::for_each_body(stream, dce_body);
        Ok(())
    }
}

/// Removes dead statements from one body until none is left, in one
/// sweep: statements after a terminator are dropped first, then a worklist
/// starts from every statement and, each time one is removed, revisits
/// what may have become removable with it (the definitions of its
/// operands, a slot's alloca and stores once its last load goes, the
/// statement whose block it emptied). Every condition of [`Cx::removable`]
/// only becomes true as statements go, so this reaches the same fixed
/// point as sweeping until nothing changes, in time linear in the body.
/// `shapes` gives the fields' extents (to know which field loads cannot
/// fail).
pub fn dce_body(body: &mut Body, shapes: &FxHashMap<Name, Vec<u64>>) {
    let entry = body.entry;
    drop_unreachable(body, entry);
    let mut cx = Cx::new(body, shapes);
    let mut work: Vec<Stmt> = util::reachable_from(body, entry);
    work.reverse();
    while let Some(s) = work.pop() {
        if cx.removed.contains(&s) || !cx.removable(body, s) {
            continue;
        }
        cx.remove(body, s, &mut work);
    }
    cx.rebuild(body, entry);
}

/// Drops the statements after the first terminator of `b` and of every
/// block nested in it.
fn drop_unreachable(body: &mut Body, b: Block) {
    if let Some(end) = body.block(b).iter().position(|&s| body.stmt(s).kind.is_terminator()) {
        body[b].truncate(end + 1);
    }
    for i in 0..body.block(b).len() {
        let s = body.block(b)[i];
        for c in body.child_blocks(s) {
            drop_unreachable(body, c);
        }
    }
}

struct Cx<'a> {
    /// Uses of each value by statements not removed.
    uses: SecondaryMap<Value, u32>,
    /// Loads of each slot by statements not removed.
    loaded: FxHashMap<Value, u32>,
    /// The stores to each slot.
    stores: FxHashMap<Value, Vec<Stmt>>,
    consts: FxHashMap<Value, Const>,
    /// The statement and child block that hold each nested statement.
    parent: FxHashMap<Stmt, (Stmt, Block)>,
    /// Statements not removed in each block.
    live: FxHashMap<Block, usize>,
    removed: FxHashSet<Stmt>,
    shapes: &'a FxHashMap<Name, Vec<u64>>,
}

impl<'a> Cx<'a> {
    fn new(body: &Body, shapes: &'a FxHashMap<Name, Vec<u64>>) -> Cx<'a> {
        let mut cx = Cx {
            uses: util::use_counts(body),
            loaded: FxHashMap::default(),
            stores: FxHashMap::default(),
            consts: FxHashMap::default(),
            parent: FxHashMap::default(),
            live: FxHashMap::default(),
            removed: FxHashSet::default(),
            shapes,
        };
        body.walk(body.entry, &mut |s| {
            for c in body.child_blocks(s) {
                cx.live.insert(c, body.block(c).len());
                cx.parent.extend(body.block(c).iter().map(|&t| (t, (s, c))));
            }
            match &body.stmt(s).kind {
                StmtKind::LoadSlot(p) => *cx.loaded.entry(*p).or_insert(0) += 1,
                StmtKind::StoreSlot(p, _) => cx.stores.entry(*p).or_default().push(s),
                StmtKind::Const(c) => {
                    if let Some(r) = body.stmt(s).result {
                        cx.consts.insert(r, *c);
                    }
                }
                _ => {}
            }
        });
        cx
    }

    /// Removes `s` (its child blocks are already empty) and queues what
    /// may have become removable with it.
    fn remove(&mut self, body: &Body, s: Stmt, work: &mut Vec<Stmt>) {
        self.removed.insert(s);
        for v in body.operands(s) {
            let n = &mut self.uses[v];
            *n -= 1;
            if *n == 0 {
                if let ValueDef::Result(d) = body.value(v).def {
                    work.push(d);
                }
            }
        }
        if let StmtKind::LoadSlot(p) = body.stmt(s).kind {
            let n = self.loaded.get_mut(&p).expect("counted in new");
            *n -= 1;
            if *n == 0 {
                work.extend(self.stores.get(&p).into_iter().flatten().copied());
                if let ValueDef::Result(d) = body.value(p).def {
                    work.push(d);
                }
            }
        }
        if let Some(&(up, c)) = self.parent.get(&s) {
            *self.live.get_mut(&c).expect("counted in new") -= 1;
            work.push(up);
        }
    }

    /// Leaves out the removed statements of `b` and the blocks nested in
    /// it; an `else {}` says nothing, so it goes too.
    fn rebuild(&self, body: &mut Body, b: Block) {
        body[b].retain(|s| !self.removed.contains(s));
        for i in 0..body.block(b).len() {
            let s = body.block(b)[i];
            for c in body.child_blocks(s) {
                self.rebuild(body, c);
            }
            if let StmtKind::If { else_blk: Some(e), .. } = body.stmt(s).kind {
                if body.block(e).is_empty() {
                    if let StmtKind::If { else_blk, .. } = &mut body[s].kind {
                        *else_blk = None;
                    }
                }
            }
        }
    }

    /// Whether none of a block's statements is left.
    fn empty(&self, b: Block) -> bool {
        self.live.get(&b).is_none_or(|&n| n == 0)
    }

    fn removable(&self, body: &Body, s: Stmt) -> bool {
        let data = body.stmt(s);
        let unused = data.result.is_none_or(|r| self.uses[r] == 0);
        match &data.kind {
            k if k.is_pure() => unused,
            StmtKind::LoadSlot(_) => unused,
            StmtKind::Load(r) => unused && self.in_bounds(r),
            // Slots are only read by `load` and written by `store` (the
            // verifier sees to it), so a slot never loaded is dead along
            // with its stores, which this same sweep removes.
            StmtKind::Alloca(_) => data.result.is_none_or(|r| !self.is_loaded(r)),
            StmtKind::StoreSlot(p, _) => !self.is_loaded(*p),
            StmtKind::If { then_blk, else_blk, .. } => self.empty(*then_blk) && else_blk.is_none_or(|e| self.empty(e)),
            // A `for` always ends; with an empty body it does nothing.
            StmtKind::For { body: blk, .. } => self.empty(*blk),
            _ => false,
        }
    }

    fn is_loaded(&self, slot: Value) -> bool {
        self.loaded.get(&slot).is_some_and(|&n| n > 0)
    }

    /// Whether a field reference's indices are all constants within the
    /// field's shape (so loading it cannot fail).
    fn in_bounds(&self, r: &FieldRef) -> bool {
        let Some(shape) = self.shapes.get(&r.field) else { return false };
        shape.len() == r.indices.len()
            && r.indices
                .iter()
                .zip(shape)
                .all(|(v, &n)| self.consts.get(v).and_then(|c| c.as_i64()).is_some_and(|i| i >= 0 && (i as u64) < n))
    }
}
