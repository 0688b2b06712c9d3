//! What a kernel's launches cost the interpreter, known before they run:
//! an upper bound on the statements they execute, for a tiered run that
//! interprets a kernel too small to be worth a compile
//! (`docs/runtime.md`, "Tiers").
//!
//! Owns: [`statements_bound`] and the rules it counts by.
//!
//! Must never: run anything, or give a bound lower than what a run
//! executes: what it cannot know before the launch (a bound computed in
//! the task, or read from a field that a launch before it writes with a
//! value not known, a `while` loop, a call chain deeper than the verifier
//! allows) makes the whole bound unknown.

use crate::ir::{Block, Body, Bound, Const, Module, Stmt, StmtKind, TaskItem, TaskKind, Value, ValueDef};
use std::collections::HashMap;

/// An upper bound on the statements the interpreter executes to run the
/// launches `launched` (a kernel of a split stream, in launch order) with
/// `args`, the kernel's arguments by parameter name; `None` when one is
/// not known before the launches run, or is above `u64::MAX`. A range
/// bound read from a 0-D field (`@n[]`, offload's and Quadrants' way of
/// passing a bound computed in a serial task) is the value a serial
/// launch before it stores there when that is known (a literal or an
/// argument, stored unconditionally), else, when no launch before it
/// writes the field, `field`'s value of it now.
pub fn statements_bound(
    launched: &[(&Module, &TaskItem)],
    args: &[(&str, Const)],
    field: &dyn Fn(&str) -> Option<i64>,
) -> Option<u64> {
    let mut stored: HashMap<&str, Option<i64>> = HashMap::new();
    let mut sum = 0u64;
    for (m, t) in launched {
        let read = |f: &str| stored.get(f).copied().unwrap_or_else(|| field(f));
        sum = sum.checked_add(launch(m, t, args, &read)?)?;
        note_stores(m, t, args, &mut stored);
    }
    Some(sum)
}

/// A value of `body` known before the launch: an argument (by its
/// parameter's name) or a literal.
fn known_in(body: &Body, args: &[(&str, Const)], v: Value) -> Option<i64> {
    match body.value(v).def {
        ValueDef::Param(_) => args.iter().find(|(n, _)| *n == body.name(v)).and_then(|(_, c)| c.as_i64()),
        _ => constant(body, v),
    }
}

/// Notes what `task` (of `module`) leaves in the fields it writes: a
/// serial task's stores at the top of its body of a known value, that
/// value; any other write, a value not known, and so every write of the
/// module's functions (those the task reaches) when it calls one.
fn note_stores<'t>(
    module: &'t Module,
    task: &'t TaskItem,
    args: &[(&str, Const)],
    stored: &mut HashMap<&'t str, Option<i64>>,
) {
    let body = &task.body;
    let top: &[Stmt] = match task.kind {
        TaskKind::Serial => body.block(body.entry),
        _ => &[],
    };
    let mut calls = false;
    body.walk(body.entry, &mut |s| match &body.stmt(s).kind {
        StmtKind::Store(r, v) => {
            let value = top.contains(&s).then(|| known_in(body, args, *v)).flatten();
            stored.insert(&r.field, value);
        }
        StmtKind::Atomic(_, r, _) => {
            stored.insert(&r.field, None);
        }
        StmtKind::Call(..) => calls = true,
        _ => {}
    });
    for f in module.funcs().filter(|_| calls) {
        let fb = &f.body;
        fb.walk(fb.entry, &mut |s| {
            if let StmtKind::Store(r, _) | StmtKind::Atomic(_, r, _) = &fb.stmt(s).kind {
                stored.insert(&r.field, None);
            }
        });
    }
}

/// One launch: its iterations times its body; `read` gives a 0-D field's
/// value when it is known.
fn launch(module: &Module, task: &TaskItem, args: &[(&str, Const)], read: &dyn Fn(&str) -> Option<i64>) -> Option<u64> {
    let body = &task.body;
    let known = |v: Value| known_in(body, args, v);
    let range = |b: &Bound| match b {
        Bound::Field(f, _) => read(f),
        other => bound(other, &known),
    };
    let iterations = match &task.kind {
        TaskKind::Serial => 1,
        TaskKind::RangeFor { lo, hi, .. } => trips(range(lo)?, range(hi)?),
        TaskKind::StructFor { field, .. } => {
            module.field(field)?.shape.iter().try_fold(1u64, |n, &e| n.checked_mul(e))?
        }
    };
    let mut costs = Costs { module, funcs: HashMap::new(), depth: 0 };
    iterations.checked_mul(costs.block(body, body.entry, &known)?.checked_add(1)?)
}

/// A bound's value, when `known` or a literal gives it (a field read in a
/// task's body does not).
fn bound(b: &Bound, known: &impl Fn(Value) -> Option<i64>) -> Option<i64> {
    match b {
        Bound::Const(c) => Some(*c),
        Bound::Value(v) => known(*v),
        Bound::Field(..) => None,
    }
}

/// The iterations of a half-open range `lo .. hi`.
fn trips(lo: i64, hi: i64) -> u64 {
    (hi as i128 - lo as i128).clamp(0, u64::MAX as i128) as u64
}

/// `v`'s value when a `const` statement defines it.
fn constant(body: &Body, v: Value) -> Option<i64> {
    match body.value(v).def {
        ValueDef::Result(s) => match &body.stmt(s).kind {
            StmtKind::Const(c) => c.as_i64(),
            _ => None,
        },
        _ => None,
    }
}

/// The costs of a task's functions (each worked out once), within the
/// verifier's depth of calls.
struct Costs<'m> {
    module: &'m Module,
    funcs: HashMap<&'m str, Option<u64>>,
    depth: usize,
}

impl<'m> Costs<'m> {
    /// The statements one run of `b` executes at most: each statement
    /// once, an `if` its longer branch, a `for` its trips times its body
    /// (and its test), a call the function's body.
    fn block(&mut self, body: &'m Body, b: Block, known: &impl Fn(Value) -> Option<i64>) -> Option<u64> {
        body.block(b).iter().try_fold(0u64, |sum, &s| {
            let cost = match &body.stmt(s).kind {
                StmtKind::If { then_blk, else_blk, .. } => {
                    let els = match else_blk {
                        Some(e) => self.block(body, *e, known)?,
                        None => 0,
                    };
                    self.block(body, *then_blk, known)?.max(els)
                }
                StmtKind::For { lo, hi, body: inner, .. } => {
                    let n = trips(bound(lo, known)?, bound(hi, known)?);
                    n.checked_mul(self.block(body, *inner, known)?.checked_add(2)?)?
                }
                StmtKind::While { .. } | StmtKind::Task { .. } | StmtKind::Launch(_) => return None,
                StmtKind::Call(name, ..) => self.func(name)?,
                _ => 0,
            };
            sum.checked_add(cost)?.checked_add(1)
        })
    }

    /// A function's body, its parameters unknown (a loop bounded by one
    /// makes the bound unknown).
    fn func(&mut self, name: &str) -> Option<u64> {
        if let Some(&c) = self.funcs.get(name) {
            return c;
        }
        let f = self.module.func(name)?;
        if self.depth >= super::code::MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let body = &f.body;
        let c = self.block(body, body.entry, &|v| constant(body, v));
        self.depth -= 1;
        self.funcs.insert(&f.name, c);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound of `kernel`'s launches in `text` (split by the default
    /// pipeline) with `args` by name.
    fn bound_of(text: &str, kernel: &str, args: &[(&str, Const)]) -> Option<u64> {
        let stream = crate::parser::parse(text).unwrap();
        let split = crate::passes::to_task_stream(stream).unwrap();
        let launched = crate::plan::launched_tasks(&split, kernel).unwrap();
        statements_bound(&launched, args, &|_| None)
    }

    const FIELDS: &str = "field @x : f32[64]\nfield @g : i32[4, 8]\nfield @n : i32\n";

    #[test]
    fn a_range_is_its_trips_times_its_body_and_test() {
        let k =
            "kernel @k(%n: i32 = 10) {\n  for %i in 0 .. %n {\n    %v = load @x[%i]\n    store @x[%i], %v\n  }\n}\n";
        let text = format!("{FIELDS}{k}");
        assert_eq!(bound_of(&text, "k", &[("n", Const::i32(10))]), Some(10 * 3));
        assert_eq!(bound_of(&text, "k", &[("n", Const::i32(-5))]), Some(0));
        // A parameter with no argument named is not known.
        assert_eq!(bound_of(&text, "k", &[]), None);
    }

    #[test]
    fn a_struct_for_is_its_fields_elements() {
        // A perfect nest over the field's whole index space.
        let k = "kernel @k() {\n  for %i in 0 .. 4 {\n    for %j in 0 .. 8 {\n      %c = const 1 : i32\n      store @g[%i, %j], %c\n    }\n  }\n}\n";
        assert_eq!(bound_of(&format!("{FIELDS}{k}"), "k", &[]), Some(32 * 3));
    }

    #[test]
    fn inner_loops_multiply_and_an_if_costs_its_longer_branch() {
        let k = "kernel @k() {\n  for %i in 0 .. 4 {\n    for %j in 0 .. 8 serial {\n      %c = cmp lt %j, %i\n      if %c {\n        %v = load @x[%j]\n        store @x[%i], %v\n      }\n    }\n  }\n}\n";
        // Per outer trip: the inner loop (8 trips of cmp, if, load,
        // store, and its test: 6) and itself, and the task's test.
        assert_eq!(bound_of(&format!("{FIELDS}{k}"), "k", &[]), Some(4 * (8 * 6 + 1 + 1)));
    }

    #[test]
    fn what_is_known_only_at_the_launch_has_no_bound() {
        // A loop bounded by a field read in the body, and a `while`.
        let k = "kernel @k() {\n  %m = load @n[]\n  for %i in 0 .. %m {\n    %c = const 1.0 : f32\n    store @x[%i], %c\n  }\n}\n";
        assert_eq!(bound_of(&format!("{FIELDS}{k}"), "k", &[]), None);
        let w = "kernel @w() {\n  while {\n    break\n  }\n}\n";
        assert_eq!(bound_of(&format!("{FIELDS}{w}"), "w", &[]), None);
    }

    #[test]
    fn a_bound_a_serial_task_stores_in_a_field_is_known() {
        // Quadrants' form: a literal stored by a serial task, read as the
        // loop's bound. Serial: 2 statements and 1; the loop: 20 trips of
        // 2 and 1.
        let q = "field @t : i32\nkernel @q() {\n  task @q.0 serial {\n    %c = const 20 : i32\n    store @t[], %c\n  }\n  task @q.1 range_for %i in 0 .. @t[] block_dim 32 {\n    %v = const 2.0 : f32\n    store @x[%i], %v\n  }\n}\n";
        assert_eq!(bound_of(&format!("{FIELDS}{q}"), "q", &[]), Some(3 + 20 * 3));
        // A value read there is not known, whatever the field holds.
        let c = q.replace("%c = const 20 : i32\n", "%c = load @n[]\n");
        let text = format!("{FIELDS}{c}");
        assert_eq!(bound_of(&text, "q", &[]), None);
        let split = crate::passes::to_task_stream(crate::parser::parse(&text).unwrap()).unwrap();
        let launched = crate::plan::launched_tasks(&split, "q").unwrap();
        assert_eq!(statements_bound(&launched, &[], &|_| Some(20)), None);
        // A field no launch writes: its value now.
        let r = "field @t : i32\nkernel @r() {\n  task @r.0 range_for %i in 0 .. @t[] block_dim 32 {\n    %v = const 2.0 : f32\n    store @x[%i], %v\n  }\n}\n";
        let split = crate::passes::to_task_stream(crate::parser::parse(&format!("{FIELDS}{r}")).unwrap()).unwrap();
        let launched = crate::plan::launched_tasks(&split, "r").unwrap();
        assert_eq!(statements_bound(&launched, &[], &|f| (f == "t").then_some(5)), Some(15));
        assert_eq!(statements_bound(&launched, &[], &|_| None), None);
    }

    #[test]
    fn a_bound_field_a_called_function_writes_is_not_known() {
        // The serial task stores 2, then calls a function that stores
        // @t[] again: the loop's bound is no longer the 2 stored.
        let f = "func @set(%v: i32) {\n  store @t[], %v\n}\n";
        let q = "kernel @q(%n: i32 = 9) {\n  task @q.0 serial {\n    %c = const 2 : i32\n    store @t[], %c\n    call @set(%n)\n  }\n  task @q.1 range_for %i in 0 .. @t[] block_dim 32 {\n    %v = const 2.0 : f32\n    store @x[%i], %v\n  }\n}\n";
        let text = format!("{FIELDS}field @t : i32\n{f}{q}");
        assert_eq!(bound_of(&text, "q", &[("n", Const::i32(9))]), None);
        // Without the call, the 2 stored is the bound.
        let plain = text.replace("    call @set(%n)\n", "");
        assert_eq!(bound_of(&plain, "q", &[("n", Const::i32(9))]), Some(3 + 2 * 3));
    }

    #[test]
    fn a_call_costs_its_function() {
        let f = "func @twice(%a: f32) -> f32 {\n  %b = add %a, %a\n  ret %b\n}\n";
        let k = "kernel @k() {\n  for %i in 0 .. 2 {\n    %v = load @x[%i]\n    %w = call @twice(%v)\n    store @x[%i], %w\n  }\n}\n";
        assert_eq!(bound_of(&format!("{FIELDS}{f}{k}"), "k", &[]), Some(2 * (3 + 2 + 1)));
    }
}
