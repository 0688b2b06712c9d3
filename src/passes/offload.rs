//! `offload`: turns each kernel's body into a sequence of tasks.
//!
//! Owns: the split of a kernel body into tasks, `@<kernel>.<n>` in order:
//! - a top-level `for` becomes a `range_for` task (its iterations run in
//!   parallel); a bound that is a value computed earlier in the kernel is
//!   read from a kernel-scoped 0-D temporary field in the task header;
//! - a top-level loop nest whose loops run over `0 .. extent` of every
//!   dimension of a field its body accesses (constant bounds equal to the
//!   field's shape, each loop body holding only the next loop, `i32` loop
//!   variables) becomes a `struct_for` task over that field;
//! - each maximal run of other top-level statements becomes a `serial`
//!   task.
//!
//! A value defined in one task and read by a later one is carried through a
//! 0-D temporary field `@<kernel>.tmp<n>`: stored right after its
//! definition, loaded at the start of each task that reads it. A top-level
//! slot (`alloca`) used by more than one task becomes such a field too,
//! reset to zero where the `alloca` was (fields keep their values between
//! launches; slots start at zero). Temporary fields are added to the
//! module just before their kernel. Parallel tasks get a block size of
//! [`DEFAULT_BLOCK_DIM`].
//!
//! A top-level `for` stays in a serial task when it says so (`for ...
//! serial`), or when running its iterations in
//! parallel would change what it computes: when its body `break`s or
//! `continue`s out of it, or stores to a slot defined outside it (a
//! sequential accumulation). A kernel with a `ret` anywhere but as its
//! last statement becomes one serial task, since a `ret` ends the kernel,
//! not only the task it is in; tasks have no `ret`, so the body is wrapped
//! in `while { ... break }` and each `ret` becomes a `break` out of it (from
//! inside a nested loop, through a flag slot tested after each loop).
//!
//! Must never: change what a kernel computes, run on a kernel twice (an
//! already offloaded kernel, or one made of launches, is left alone), or
//! touch functions.

use super::util;
use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::*;
use std::collections::{HashMap, HashSet};

/// The `offload` pass.
pub struct Offload;

impl super::Pass for Offload {
    fn name(&self) -> &'static str {
        "offload"
    }
    fn description(&self) -> &'static str {
        "turn kernel bodies into serial, range_for and struct_for tasks"
    }
    fn run(&self, stream: &mut Stream) -> Result<(), Diagnostics> {
        let mut diags = Diagnostics::default();
        for m in &mut stream.modules {
            if let Err(d) = offload_module(m) {
                diags.push(d);
            }
        }
        diags.into_result()
    }
}

/// Offloads every kernel of a module, adding the temporary fields they
/// need.
pub fn offload_module(m: &mut Module) -> Result<(), Diagnostic> {
    let mut globals: HashSet<Name> = m.items.iter().map(|i| Name::from(i.name())).collect();
    let shapes: HashMap<Name, (Scalar, Vec<u64>)> =
        m.fields().map(|f| (f.name.clone(), (f.elem, f.shape.clone()))).collect();
    let mut items = Vec::with_capacity(m.items.len());
    for mut it in std::mem::take(&mut m.items) {
        if let Item::Kernel(k) = &mut it {
            let temps = offload_kernel(k, &shapes, &mut globals)?;
            items.extend(temps.into_iter().map(Item::Field));
        }
        items.push(it);
    }
    m.items = items;
    Ok(())
}

/// How a group of top-level statements runs.
enum GroupKind {
    Serial,
    /// The `for` statement becomes the task.
    Range,
    /// The loops of the nest, outermost first, and the field.
    Struct(Vec<Stmt>, Name, Span),
}

struct Group {
    kind: GroupKind,
    stmts: Vec<Stmt>,
}

/// Offloads one kernel; returns the temporary fields it needs.
pub fn offload_kernel(
    k: &mut Kernel,
    shapes: &HashMap<Name, (Scalar, Vec<u64>)>,
    globals: &mut HashSet<Name>,
) -> Result<Vec<Field>, Diagnostic> {
    let body = &mut k.body;
    let top: Vec<Stmt> = body.block(body.entry).to_vec();
    let is_task = |s: &Stmt| matches!(body.stmt(*s).kind, StmtKind::Task { .. });
    let is_launch = |s: &Stmt| matches!(body.stmt(*s).kind, StmtKind::Launch(_));
    if top.iter().all(is_task) || top.iter().all(is_launch) {
        // Already offloaded (or split, or empty): nothing to do.
        return Ok(Vec::new());
    }
    if let Some(&s) = top.iter().find(|s| is_task(s) || is_launch(s)) {
        return Err(Diagnostic::error(
            format!("kernel @{} mixes tasks or launches with other statements", k.name),
            body.stmt(s).span,
        ));
    }

    let mut top = top;
    // A final `ret` ends the kernel as running off its end does.
    if top.last().is_some_and(|&s| body.stmt(s).kind == StmtKind::Ret(None)) {
        top.pop();
    }
    let mut has_ret = false;
    for &s in &top {
        has_ret |= matches!(body.stmt(s).kind, StmtKind::Ret(_));
        for c in body.child_blocks(s) {
            body.walk(c, &mut |t| has_ret |= matches!(body.stmt(t).kind, StmtKind::Ret(_)));
        }
    }

    if has_ret {
        top = lower_rets(body, &top);
    }

    // Partition into groups.
    let mut groups: Vec<Group> = Vec::new();
    for &s in &top {
        let kind = if has_ret { None } else { parallel_kind(body, s, shapes) };
        match kind {
            Some(kind) => groups.push(Group { kind, stmts: vec![s] }),
            None => match groups.last_mut() {
                Some(g) if matches!(g.kind, GroupKind::Serial) => g.stmts.push(s),
                _ => groups.push(Group { kind: GroupKind::Serial, stmts: vec![s] }),
            },
        }
    }

    // Which group defines each top-level value, and which groups use it.
    let mut def_group: HashMap<Value, usize> = HashMap::new();
    for (gi, g) in groups.iter().enumerate() {
        for &s in &g.stmts {
            if let Some(r) = body.stmt(s).result {
                def_group.insert(r, gi);
            }
        }
    }
    // Values each group reads that another group defines, in first-use
    // order (so temporaries are numbered deterministically).
    let mut carried: Vec<Vec<Value>> = vec![Vec::new(); groups.len()];
    let mut carried_any: Vec<Value> = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let mut seen = HashSet::new();
        for &s in &g.stmts {
            let mut visit = |t: Stmt| {
                for v in body.operands(t) {
                    if def_group.get(&v).is_some_and(|&d| d != gi) && seen.insert(v) {
                        carried[gi].push(v);
                        if !carried_any.contains(&v) {
                            carried_any.push(v);
                        }
                    }
                }
            };
            visit(s);
            for c in body.child_blocks(s) {
                body.walk(c, &mut visit);
            }
        }
    }
    carried_any.sort_by_key(|v| {
        let ValueDef::Result(s) = body.value(*v).def else { return usize::MAX };
        top.iter().position(|&t| t == s).unwrap_or(usize::MAX)
    });

    // A carried constant is copied into each task that reads it rather
    // than passed through memory.
    let const_of = |v: Value| match body.value(v).def {
        ValueDef::Result(s) => match body.stmt(s).kind {
            StmtKind::Const(c) => Some(c),
            _ => None,
        },
        _ => None,
    };
    let consts: HashMap<Value, Const> = carried_any.iter().filter_map(|&v| Some((v, const_of(v)?))).collect();
    carried_any.retain(|v| !consts.contains_key(v));

    // One temporary field per other carried value.
    let mut temps = Vec::new();
    let mut temp_of: HashMap<Value, Name> = HashMap::new();
    let mut tmp_n = 0u32;
    for &v in &carried_any {
        let name = loop {
            let cand: Name = compact_str::format_compact!("{}.tmp{tmp_n}", k.name);
            tmp_n += 1;
            if globals.insert(cand.clone()) {
                break cand;
            }
        };
        let elem = match body.ty(v) {
            Type::Scalar(t) | Type::Slot(t) => t,
        };
        temps.push(Field { name: name.clone(), elem, shape: Vec::new(), span: Span::DUMMY });
        temp_of.insert(v, name);
    }

    let mut names = util::NameGen::new(body);
    // Slots shared between tasks: every load and store goes to the field,
    // and the `alloca` becomes a reset to zero.
    let shared_slots: Vec<Value> =
        carried_any.iter().copied().filter(|v| matches!(body.ty(*v), Type::Slot(_))).collect();
    if !shared_slots.is_empty() {
        let all: Vec<Stmt> = util::reachable_from(body, body.entry);
        for s in all {
            let data = &mut body.stmts[s.index()];
            match data.kind {
                StmtKind::LoadSlot(p) if temp_of.contains_key(&p) => {
                    data.kind = StmtKind::Load(fref(&temp_of[&p], data.span));
                }
                StmtKind::StoreSlot(p, v) if temp_of.contains_key(&p) => {
                    data.kind = StmtKind::Store(fref(&temp_of[&p], data.span), v);
                }
                _ => {}
            }
        }
    }

    // Producers: store each carried scalar right after its definition (a
    // shared slot's `alloca` becomes `store @tmp[], 0`).
    for g in &mut groups {
        let mut out = Vec::with_capacity(g.stmts.len());
        for &s in &g.stmts {
            let Some(r) = body.stmt(s).result.filter(|r| temp_of.contains_key(r)) else {
                out.push(s);
                continue;
            };
            let span = body.stmt(s).span;
            let field = fref(&temp_of[&r], span);
            match body.ty(r) {
                Type::Slot(t) => {
                    let zname = names.fresh(&format!("{}.zero", body.name(r)));
                    let (z, zv) = body.new_stmt_with_result(
                        StmtKind::Const(Const { ty: t, bits: 0 }),
                        zname,
                        Type::Scalar(t),
                        span,
                    );
                    let st = body.new_stmt(StmtKind::Store(field, zv), span);
                    out.extend([z, st]);
                }
                Type::Scalar(_) => {
                    let st = body.new_stmt(StmtKind::Store(field, r), span);
                    out.extend([s, st]);
                }
            }
        }
        g.stmts = out;
    }

    // Build the tasks.
    let mut tasks = Vec::with_capacity(groups.len());
    let mut task_n = 0u32;
    for (gi, g) in groups.into_iter().enumerate() {
        // Tasks share the item namespace (split-tasks makes them items):
        // skip a number whose name an item, or another kernel's task, has.
        let name = loop {
            let cand: Name = compact_str::format_compact!("{}.{task_n}", k.name);
            task_n += 1;
            if globals.insert(cand.clone()) {
                break cand;
            }
        };
        // Loads of carried scalars at the start of the task body; header
        // bounds read the field directly.
        let mut subst = HashMap::new();
        let mut loads = Vec::new();
        let mut header_fields: HashMap<Value, Name> = HashMap::new();
        let mut header_consts: HashMap<Value, Const> = HashMap::new();
        let header_vals: HashSet<Value> = match g.kind {
            GroupKind::Range => header_values(body, g.stmts[0]),
            _ => HashSet::new(),
        };
        let body_uses: HashSet<Value> = match g.kind {
            GroupKind::Range => {
                let mut u = HashSet::new();
                for c in body.child_blocks(g.stmts[0]) {
                    body.walk(c, &mut |t| u.extend(body.operands(t)));
                }
                u
            }
            _ => carried[gi].iter().copied().collect(),
        };
        for &v in &carried[gi] {
            if matches!(body.ty(v), Type::Slot(_)) {
                continue;
            }
            if let Some(&c) = consts.get(&v) {
                if header_vals.contains(&v) {
                    header_consts.insert(v, c);
                }
                if body_uses.contains(&v) {
                    let span = body.value(v).span;
                    let cname = names.fresh(body.name(v));
                    let (st, cv) = body.new_stmt_with_result(StmtKind::Const(c), cname, Type::Scalar(c.ty), span);
                    loads.push(st);
                    subst.insert(v, cv);
                }
                continue;
            }
            if header_vals.contains(&v) {
                header_fields.insert(v, temp_of[&v].clone());
            }
            if body_uses.contains(&v) {
                let span = body.value(v).span;
                let ty = body.ty(v);
                let lname = names.fresh(body.name(v));
                let (ld, lv) = body.new_stmt_with_result(StmtKind::Load(fref(&temp_of[&v], span)), lname, ty, span);
                loads.push(ld);
                subst.insert(v, lv);
            }
        }
        let task_stmt = match g.kind {
            GroupKind::Serial => {
                let blk = body.new_block();
                body.blocks[blk.index()] = loads.into_iter().chain(g.stmts.iter().copied()).collect();
                util::substitute_in_block(body, blk, &subst);
                let span = g.stmts.iter().map(|&s| body.stmt(s).span).reduce(Span::to).unwrap_or(Span::DUMMY);
                body.new_stmt(StmtKind::Task { name, kind: TaskKind::Serial, body: blk }, span)
            }
            GroupKind::Range => {
                let s = g.stmts[0];
                let StmtKind::For { var, lo, hi, body: blk, .. } = body.stmt(s).kind.clone() else {
                    unreachable!("range groups are made of one `for`")
                };
                let bound = |b: Bound| match b {
                    Bound::Value(v) if header_fields.contains_key(&v) => {
                        Bound::Field(header_fields[&v].clone(), body.value(v).span)
                    }
                    Bound::Value(v) if header_consts.contains_key(&v) => {
                        Bound::Const(header_consts[&v].as_i64().unwrap_or_default())
                    }
                    b => b,
                };
                let (lo, hi) = (bound(lo), bound(hi));
                util::substitute_in_block(body, blk, &subst);
                body.blocks[blk.index()].splice(0..0, loads);
                body.stmts[s.index()].kind = StmtKind::Task {
                    name,
                    kind: TaskKind::RangeFor { var, lo, hi, block_dim: DEFAULT_BLOCK_DIM },
                    body: blk,
                };
                s
            }
            GroupKind::Struct(loops, field, field_span) => {
                let span = body.stmt(loops[0]).span;
                let innermost = match body.stmt(*loops.last().expect("a nest has a loop")).kind {
                    StmtKind::For { body, .. } => body,
                    _ => unreachable!("struct groups are made of `for`s"),
                };
                let vars: Vec<Value> = loops
                    .iter()
                    .map(|&l| match body.stmt(l).kind {
                        StmtKind::For { var, .. } => var,
                        _ => unreachable!("struct groups are made of `for`s"),
                    })
                    .collect();
                util::substitute_in_block(body, innermost, &subst);
                body.blocks[innermost.index()].splice(0..0, loads);
                let t = body.new_stmt(
                    StmtKind::Task {
                        name,
                        kind: TaskKind::StructFor {
                            vars: vars.clone(),
                            field,
                            field_span,
                            block_dim: DEFAULT_BLOCK_DIM,
                        },
                        body: innermost,
                    },
                    span,
                );
                for (i, v) in vars.into_iter().enumerate() {
                    body.values[v.index()].def = ValueDef::LoopVar(t, i as u32);
                }
                t
            }
        };
        tasks.push(task_stmt);
    }
    let entry = body.entry;
    body.blocks[entry.index()] = tasks;
    Ok(temps)
}

/// Rewrites a kernel body that `ret`s early into one statement, a `while`
/// that runs it once, with every `ret` turned into a way out of that
/// `while` (see the module doc). Returns the new top-level statements.
fn lower_rets(body: &mut Body, top: &[Stmt]) -> Vec<Stmt> {
    let mut names = util::NameGen::new(body);
    let span = top.iter().map(|&s| body.stmt(s).span).reduce(Span::to).unwrap_or(Span::DUMMY);
    let (flag_stmt, flag) = body.new_stmt_with_result(
        StmtKind::Alloca(Scalar::I1),
        names.fresh("ret.flag"),
        Type::Slot(Scalar::I1),
        span,
    );
    let inner = body.new_block();
    body.blocks[inner.index()] = top.to_vec();
    let brk = body.new_stmt(StmtKind::Break, span);
    body.push(inner, brk);
    let mut cx = RetLowering { flag, names, used_flag: false };
    cx.block(body, inner, 0);
    let wh = body.new_stmt(StmtKind::While { body: inner }, span);
    if cx.used_flag {
        vec![flag_stmt, wh]
    } else {
        vec![wh]
    }
}

struct RetLowering {
    flag: Value,
    names: util::NameGen,
    used_flag: bool,
}

impl RetLowering {
    /// Rewrites the `ret`s in `b`, which is `depth` loops inside the
    /// wrapping `while`; returns whether `b` held one.
    fn block(&mut self, body: &mut Body, b: Block, depth: u32) -> bool {
        let old = std::mem::take(&mut body.blocks[b.index()]);
        let mut out = Vec::with_capacity(old.len());
        let mut any = false;
        for s in old {
            let span = body.stmt(s).span;
            match body.stmt(s).kind.clone() {
                StmtKind::Ret(_) => {
                    any = true;
                    if depth > 0 {
                        self.used_flag = true;
                        let (t, tv) = body.new_stmt_with_result(
                            StmtKind::Const(Const::bool(true)),
                            self.names.fresh("ret.true"),
                            Type::Scalar(Scalar::I1),
                            span,
                        );
                        let st = body.new_stmt(StmtKind::StoreSlot(self.flag, tv), span);
                        out.extend([t, st]);
                    }
                    out.push(body.new_stmt(StmtKind::Break, span));
                    continue;
                }
                StmtKind::If { then_blk, else_blk, .. } => {
                    any |= self.block(body, then_blk, depth);
                    if let Some(e) = else_blk {
                        any |= self.block(body, e, depth);
                    }
                    out.push(s);
                }
                StmtKind::For { body: blk, .. } | StmtKind::While { body: blk } => {
                    out.push(s);
                    if self.block(body, blk, depth + 1) {
                        any = true;
                        // The loop was left by a `ret`: leave this level too.
                        let (ld, f) = body.new_stmt_with_result(
                            StmtKind::LoadSlot(self.flag),
                            self.names.fresh("ret.taken"),
                            Type::Scalar(Scalar::I1),
                            span,
                        );
                        let then_blk = body.new_block();
                        let brk = body.new_stmt(StmtKind::Break, span);
                        body.push(then_blk, brk);
                        let iff = body.new_stmt(StmtKind::If { cond: f, then_blk, else_blk: None }, span);
                        out.extend([ld, iff]);
                    }
                }
                _ => out.push(s),
            }
        }
        body.blocks[b.index()] = out;
        any
    }
}

fn fref(field: &Name, span: Span) -> FieldRef {
    FieldRef { field: field.clone(), indices: Vec::new(), span }
}

/// The values a `for` reads in its bounds.
fn header_values(body: &Body, s: Stmt) -> HashSet<Value> {
    match &body.stmt(s).kind {
        StmtKind::For { lo, hi, .. } => [lo, hi]
            .into_iter()
            .filter_map(|b| if let Bound::Value(v) = b { Some(*v) } else { None })
            .collect(),
        _ => HashSet::new(),
    }
}

/// How a top-level statement can run in parallel, if it can.
fn parallel_kind(body: &Body, s: Stmt, shapes: &HashMap<Name, (Scalar, Vec<u64>)>) -> Option<GroupKind> {
    let StmtKind::For { body: blk, serial, .. } = &body.stmt(s).kind else { return None };
    if *serial || util::has_loop_exit(body, *blk) || stores_outer_slot(body, s) {
        return None;
    }
    Some(struct_nest(body, s, shapes).unwrap_or(GroupKind::Range))
}

/// Whether a loop stores to a slot made outside it: its iterations then
/// depend on each other in order.
fn stores_outer_slot(body: &Body, s: Stmt) -> bool {
    let mut stored = HashSet::new();
    util::slots_stored_in(body, s, &mut stored);
    if stored.is_empty() {
        return false;
    }
    let mut inner = HashSet::new();
    for c in body.child_blocks(s) {
        body.walk(c, &mut |t| {
            if let Some(r) = body.stmt(t).result {
                inner.insert(r);
            }
        });
    }
    stored.iter().any(|p| !inner.contains(p))
}

/// A `struct_for` over a field, if `s` is a loop nest over exactly that
/// field's index space whose innermost body accesses the field. The
/// deepest matching nest wins.
fn struct_nest(body: &Body, s: Stmt, shapes: &HashMap<Name, (Scalar, Vec<u64>)>) -> Option<GroupKind> {
    // The chain of perfectly nested loops over `0 .. N` with i32 variables.
    let mut chain: Vec<(Stmt, u64)> = Vec::new();
    let mut cur = s;
    // A loop that says `serial` ends the chain: its iterations stay in
    // order inside the task.
    while let StmtKind::For { var, lo: Bound::Const(0), hi: Bound::Const(n), body: blk, serial: false } =
        &body.stmt(cur).kind
    {
        if body.ty(*var) != Type::Scalar(Scalar::I32) || *n < 0 {
            break;
        }
        chain.push((cur, *n as u64));
        match body.block(*blk) {
            [only] if matches!(body.stmt(*only).kind, StmtKind::For { .. }) => cur = *only,
            _ => break,
        }
    }
    for depth in (1..=chain.len()).rev() {
        let (last, _) = chain[depth - 1];
        let StmtKind::For { body: blk, .. } = body.stmt(last).kind else { continue };
        if util::has_loop_exit(body, blk) {
            continue;
        }
        let extents: Vec<u64> = chain[..depth].iter().map(|&(_, n)| n).collect();
        let mut found = None;
        body.walk(blk, &mut |t| {
            if found.is_some() {
                return;
            }
            if let StmtKind::Load(r) | StmtKind::Store(r, _) | StmtKind::Atomic(_, r, _) = &body.stmt(t).kind {
                if shapes.get(&r.field).is_some_and(|(_, shape)| *shape == extents) {
                    found = Some((r.field.clone(), r.span));
                }
            }
        });
        if let Some((field, span)) = found {
            return Some(GroupKind::Struct(chain[..depth].iter().map(|&(l, _)| l).collect(), field, span));
        }
    }
    None
}
