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
use std::collections::{HashMap, HashSet};

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

/// Removes dead statements from one body until none is left. `shapes`
/// gives the fields' extents (to know which field loads cannot fail).
pub fn dce_body(body: &mut Body, shapes: &HashMap<Name, Vec<u64>>) {
    loop {
        let uses = util::use_counts(body);
        // Slots some statement reads; the others are written and never read.
        let mut loaded = HashSet::new();
        let mut consts = HashMap::new();
        body.walk(body.entry, &mut |s| match &body.stmt(s).kind {
            StmtKind::LoadSlot(p) => {
                loaded.insert(*p);
            }
            StmtKind::Const(c) => {
                if let Some(r) = body.stmt(s).result {
                    consts.insert(r, *c);
                }
            }
            _ => {}
        });
        let cx = Cx { uses, loaded, consts, shapes };
        let entry = body.entry;
        if !cx.sweep(body, entry) {
            break;
        }
    }
}

struct Cx<'a> {
    uses: SecondaryMap<Value, u32>,
    loaded: HashSet<Value>,
    consts: HashMap<Value, Const>,
    shapes: &'a HashMap<Name, Vec<u64>>,
}

impl Cx<'_> {
    /// Sweeps a block and its nested blocks; returns whether anything was
    /// removed.
    fn sweep(&self, body: &mut Body, b: Block) -> bool {
        let old = std::mem::take(&mut body.blocks[b]);
        let mut changed = false;
        let mut out = Vec::with_capacity(old.len());
        for (i, &s) in old.iter().enumerate() {
            for c in body.child_blocks(s) {
                changed |= self.sweep(body, c);
            }
            if self.removable(body, s) {
                changed = true;
                continue;
            }
            // An `else {}` says nothing.
            if let StmtKind::If { else_blk: Some(e), .. } = body.stmt(s).kind {
                if body.block(e).is_empty() {
                    if let StmtKind::If { else_blk, .. } = &mut body.stmts[s].kind {
                        *else_blk = None;
                    }
                    changed = true;
                }
            }
            out.push(s);
            if body.stmt(s).kind.is_terminator() {
                changed |= i + 1 < old.len();
                break;
            }
        }
        body.blocks[b] = out;
        changed
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
            StmtKind::Alloca(_) => data.result.is_none_or(|r| !self.loaded.contains(&r)),
            StmtKind::StoreSlot(p, _) => !self.loaded.contains(p),
            StmtKind::If { then_blk, else_blk, .. } => {
                body.block(*then_blk).is_empty() && else_blk.is_none_or(|e| body.block(e).is_empty())
            }
            // A `for` always ends; with an empty body it does nothing.
            StmtKind::For { body: blk, .. } => body.block(*blk).is_empty(),
            _ => false,
        }
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
