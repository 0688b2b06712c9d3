//! `cse`: common subexpression elimination over the dominator tree of
//! structured code.
//!
//! Owns: replacing a pure statement (`const`, arithmetic, `cmp`, `cast`,
//! `select`) by an identical one seen earlier in the same block or in an
//! enclosing block (which, in structured code, is exactly one that
//! dominates it). Commutative integer operators match with their operands
//! swapped.
//!
//! Must never: merge loads, atomics or calls (memory may change between
//! them), or commute float operators (which NaN an operation returns
//! depends on operand order).

use super::util::{self, resolve};
use crate::diag::Diagnostics;
use crate::ir::*;
use rustc_hash::FxHashMap;

/// The `cse` pass.
pub struct Cse;

impl super::Pass for Cse {
    fn name(&self) -> &'static str {
        "cse"
    }
    fn description(&self) -> &'static str {
        "replace a pure computation by an identical one that dominates it"
    }
    fn run(&self, stream: &mut Stream) -> Result<(), Diagnostics> {
        util::for_each_body(stream, |body, _| cse_body(body));
        Ok(())
    }
}

/// Eliminates common subexpressions in one body.
pub fn cse_body(body: &mut Body) {
    let mut cx = Cx { table: FxHashMap::default(), subst: FxHashMap::default() };
    let entry = body.entry;
    cx.block(body, entry);
}

struct Cx {
    table: FxHashMap<StmtKind, Value>,
    subst: FxHashMap<Value, Value>,
}

impl Cx {
    fn block(&mut self, body: &mut Body, b: Block) {
        let old = std::mem::take(&mut body[b]);
        let mut out = Vec::with_capacity(old.len());
        // Entries made in this block, removed on leaving it: they do not
        // dominate the statements after the enclosing statement's siblings.
        let mut scope = Vec::new();
        for s in old {
            util::substitute(body, s, &self.subst);
            if let Some(key) = key_of(body, s) {
                let r = body.stmt(s).result.expect("pure statements have results");
                if let Some(&first) = self.table.get(&key) {
                    self.subst.insert(r, resolve(&self.subst, first));
                    continue;
                }
                self.table.insert(key.clone(), r);
                scope.push(key);
            }
            for c in body.child_blocks(s) {
                self.block(body, c);
            }
            out.push(s);
        }
        for k in scope {
            self.table.remove(&k);
        }
        body[b] = out;
    }
}

/// What makes two pure statements compute the same value: the statement
/// itself (the table says which kinds are pure; pure kinds hold no spans),
/// with a commutative integer operator's operands in value order.
fn key_of(body: &Body, s: Stmt) -> Option<StmtKind> {
    let data = body.stmt(s);
    if data.result.is_none() || !data.kind.is_pure() {
        return None;
    }
    let mut key = data.kind.clone();
    if let StmtKind::Binary(op, a, b) = &mut key {
        if op.commutes_on(scalar(body, *a)) && *b < *a {
            std::mem::swap(a, b);
        }
    }
    if let StmtKind::Cmp(op, a, b) = &mut key {
        if op.commutes_on(scalar(body, *a)) && *b < *a {
            std::mem::swap(a, b);
        }
    }
    Some(key)
}

fn scalar(body: &Body, v: Value) -> Scalar {
    body.ty(v).scalar().unwrap_or(Scalar::F32)
}
