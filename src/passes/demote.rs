//! `demote-atomics`: an atomic that no other iteration can race with
//! becomes a load, the operation and a store.
//!
//! An atomic is demoted when it is in a serial task (one thread runs it), or
//! in a parallel task on a field every access of which, anywhere in the
//! task, is indexed first by the task's own loop variables in order: the
//! elements one iteration reaches are then reached by no other, so the
//! read-modify-write needs no atomicity (Quadrants' `demote_atomics` does the
//! same for its loop-unique pointers, and makes `x[i] += v` an atomic only
//! for this pass to undo). A task that calls a function keeps every atomic
//! of its parallel loop: a function may add into a field too. The result is
//! the same value on every engine, and the loop can be vectorised.
//!
//! Owns: which atomics are race-free by their task and indices, and their
//! load-operate-store form (the atomic's own result is the value loaded).
//!
//! Must never: demote an atomic another iteration may touch the element of,
//! or change what any statement computes.

use super::util;
use super::Pass;
use crate::diag::Diagnostics;
use crate::ir::*;
use rustc_hash::{FxHashMap, FxHashSet};

pub struct DemoteAtomics;

impl Pass for DemoteAtomics {
    fn name(&self) -> &'static str {
        "demote-atomics"
    }
    fn description(&self) -> &'static str {
        "turn an atomic no other iteration can reach into a load, the operation and a store"
    }
    fn run(&self, stream: &mut Stream) -> Result<(), Diagnostics> {
        for m in &mut stream.modules {
            for it in &mut m.items {
                match it {
                    Item::Kernel(k) => {
                        let tasks: Vec<(TaskKind, Block)> = k
                            .body
                            .block(k.body.entry)
                            .iter()
                            .filter_map(|&t| match &k.body.stmt(t).kind {
                                StmtKind::Task { kind, body, .. } => Some((kind.clone(), *body)),
                                _ => None,
                            })
                            .collect();
                        demote_tasks(&mut k.body, &tasks);
                    }
                    Item::Task(t) => {
                        let task = [(t.kind.clone(), t.body.entry)];
                        demote_tasks(&mut t.body, &task);
                    }
                    Item::Field(_) | Item::Func(_) => {}
                }
            }
        }
        Ok(())
    }
}

/// Demotes the race-free atomics of the tasks of one body (each a kind and
/// the block of its body), rewriting the body's blocks once for all of
/// them: a kernel of many tasks stays linear.
fn demote_tasks(body: &mut Body, tasks: &[(TaskKind, Block)]) {
    let demote: Vec<Stmt> = tasks.iter().flat_map(|(kind, b)| race_free_atomics(body, kind, *b)).collect();
    if demote.is_empty() {
        return;
    }
    let mut names = util::NameGen::new(body);
    let mut after: FxHashMap<Stmt, [Stmt; 2]> = FxHashMap::default();
    for s in demote {
        after.insert(s, load_op_store(body, s, &mut names));
    }
    for blk in body.blocks().keys().collect::<Vec<_>>() {
        if body[blk].iter().any(|s| after.contains_key(s)) {
            let old = std::mem::take(&mut body[blk]);
            body[blk] = old
                .into_iter()
                .flat_map(|s| std::iter::once(s).chain(after.get(&s).into_iter().flatten().copied()))
                .collect();
        }
    }
}

/// The atomics of the task whose body is block `b` that no other
/// iteration can race with.
fn race_free_atomics(body: &Body, kind: &TaskKind, b: Block) -> Vec<Stmt> {
    let stmts = util::reachable_from(body, b);
    let unique: FxHashSet<Name> = match kind {
        TaskKind::Serial => FxHashSet::default(),
        _ if stmts.iter().any(|&s| matches!(body.stmt(s).kind, StmtKind::Call(..))) => return Vec::new(),
        _ => own_fields(body, &stmts, kind.vars()),
    };
    stmts
        .into_iter()
        .filter(|&s| match &body.stmt(s).kind {
            StmtKind::Atomic(_, r, _) => matches!(kind, TaskKind::Serial) || unique.contains(&r.field),
            _ => false,
        })
        .collect()
}

/// The fields every access of which in `stmts` is indexed first by `vars`,
/// in order: no two iterations reach one element of them.
fn own_fields(body: &Body, stmts: &[Stmt], vars: &[Value]) -> FxHashSet<Name> {
    let mut own: FxHashMap<Name, bool> = FxHashMap::default();
    for &s in stmts {
        let r = match &body.stmt(s).kind {
            StmtKind::Load(r) | StmtKind::Store(r, _) | StmtKind::Atomic(_, r, _) => r,
            _ => continue,
        };
        let mine = !vars.is_empty() && r.indices.len() >= vars.len() && r.indices[..vars.len()] == *vars;
        *own.entry(r.field.clone()).or_insert(true) &= mine;
    }
    own.into_iter().filter_map(|(f, mine)| mine.then_some(f)).collect()
}

/// Rewrites atomic `s` into `old = load`; returns `new = OP old, v` and
/// `store new`, to be placed after it. `old` is the atomic's own result
/// (its old value), or a fresh value when it had none.
fn load_op_store(body: &mut Body, s: Stmt, names: &mut util::NameGen) -> [Stmt; 2] {
    let StmtKind::Atomic(op, r, v) = body.stmt(s).kind.clone() else { unreachable!("only atomics are demoted") };
    let (span, loc) = (body.stmt(s).span, body.stmt(s).loc.clone());
    let ty = body.ty(v);
    let old = match body.stmt(s).result {
        Some(old) => old,
        None => {
            let old = body.new_value(names.fresh("atomic.old"), ty, ValueDef::Result(s), span);
            body[s].result = Some(old);
            old
        }
    };
    body[s].kind = StmtKind::Load(r.clone());
    let (op_stmt, new) =
        body.new_stmt_with_result(StmtKind::Binary(op.as_binop(), old, v), names.fresh("atomic.new"), ty, span);
    let store = body.new_stmt(StmtKind::Store(r, new), span);
    body[op_stmt].loc = loc.clone();
    body[store].loc = loc;
    [op_stmt, store]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demoted(text: &str) -> String {
        let mut s = crate::parser::parse(text).expect("parses");
        crate::verifier::verify(&s).expect("verifies");
        DemoteAtomics.run(&mut s).expect("runs");
        crate::verifier::verify(&s).expect("still verifies");
        s.to_string()
    }

    const FIELDS: &str = "field @x : f32[8]\nfield @h : i32[4]\nfield @g : i32[8, 8]\nfunc @f() {\n  ret\n}\n";

    #[test]
    fn an_atomic_on_the_iterations_own_element_becomes_load_op_store() {
        let out = demoted(&format!(
            "{FIELDS}kernel @k() {{\n  task @k.0 range_for %i : i32 in 0 .. 8 {{\n    %v = const 1.5 : f32\n    %old = atomic add @x[%i], %v\n    %y = load @x[%i]\n  }}\n}}\n"
        ));
        assert!(
            out.contains("    %old = load @x[%i]\n    %atomic.new = add %old, %v\n    store @x[%i], %atomic.new\n"),
            "{out}"
        );
        assert!(!out.contains("atomic add"), "{out}");
    }

    #[test]
    fn an_element_another_iteration_reaches_keeps_its_atomic() {
        // @h[%r]: iterations share elements; @x is also read at %j.
        let shared = format!(
            "{FIELDS}kernel @k() {{\n  task @k.0 range_for %i : i32 in 0 .. 8 {{\n    %four = const 4 : i32\n    %r = rem %i, %four\n    %one = const 1 : i32\n    atomic add @h[%r], %one\n    %v = const 1.5 : f32\n    atomic add @x[%i], %v\n    %j = sub %i, %one\n    %z = load @x[%r]\n  }}\n}}\n"
        );
        let out = demoted(&shared);
        assert!(out.contains("atomic add @h[%r], %one") && out.contains("atomic add @x[%i], %v"), "{out}");
    }

    #[test]
    fn a_struct_for_needs_all_its_variables_in_order() {
        let text = |idx: &str| {
            format!(
                "{FIELDS}kernel @k() {{\n  task @k.0 struct_for %i, %j in @g {{\n    %one = const 1 : i32\n    atomic add @g[{idx}], %one\n  }}\n}}\n"
            )
        };
        assert!(!demoted(&text("%i, %j")).contains("atomic add"));
        assert!(demoted(&text("%j, %i")).contains("atomic add @g[%j, %i]"));
        assert!(demoted(&text("%i, %i")).contains("atomic add @g[%i, %i]"));
    }

    #[test]
    fn a_serial_task_demotes_all_and_a_call_keeps_a_parallel_tasks() {
        let serial = format!(
            "{FIELDS}kernel @k() {{\n  task @k.0 serial {{\n    %one = const 1 : i32\n    %z = const 0 : i32\n    atomic add @h[%z], %one\n  }}\n}}\n"
        );
        let out = demoted(&serial);
        assert!(out.contains("%atomic.old = load @h[%z]") && !out.contains("atomic add"), "{out}");
        let call = format!(
            "{FIELDS}kernel @k() {{\n  task @k.0 range_for %i : i32 in 0 .. 8 {{\n    %v = const 1.5 : f32\n    atomic add @x[%i], %v\n    call @f()\n  }}\n}}\n"
        );
        assert!(demoted(&call).contains("atomic add @x[%i], %v"));
    }
}
