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
use std::collections::HashMap;

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

/// What makes two pure statements compute the same value.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Const(Const),
    Binary(BinOp, Value, Value),
    Unary(UnOp, Value),
    Cmp(CmpOp, Value, Value),
    Cast(Value, Scalar),
    Select(Value, Value, Value),
}

/// Eliminates common subexpressions in one body.
pub fn cse_body(body: &mut Body) {
    let mut cx = Cx { table: HashMap::new(), subst: HashMap::new() };
    let entry = body.entry;
    cx.block(body, entry);
}

struct Cx {
    table: HashMap<Key, Value>,
    subst: HashMap<Value, Value>,
}

impl Cx {
    fn block(&mut self, body: &mut Body, b: Block) {
        let old = std::mem::take(&mut body.blocks[b]);
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
        body.blocks[b] = out;
    }
}

fn key_of(body: &Body, s: Stmt) -> Option<Key> {
    let data = body.stmt(s);
    data.result?;
    let scalar = |v: Value| body.ty(v).scalar().unwrap_or(Scalar::F32);
    Some(match data.kind {
        StmtKind::Const(c) => Key::Const(c),
        StmtKind::Binary(op, a, b) => {
            if op.commutes_on(scalar(a)) && b < a {
                Key::Binary(op, b, a)
            } else {
                Key::Binary(op, a, b)
            }
        }
        StmtKind::Unary(op, a) => Key::Unary(op, a),
        StmtKind::Cmp(op, a, b) => {
            if op.commutes_on(scalar(a)) && b < a {
                Key::Cmp(op, b, a)
            } else {
                Key::Cmp(op, a, b)
            }
        }
        StmtKind::Cast(a, t) => Key::Cast(a, t),
        StmtKind::Select(c, a, b) => Key::Select(c, a, b),
        _ => return None,
    })
}
