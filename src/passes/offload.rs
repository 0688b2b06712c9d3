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
//! It also answers, for the interpreter, which task each top-level
//! statement goes in ([`top_level_tasks`]), from the same run on a copy,
//! with what it needs of the module gathered once for all of its kernels
//! ([`ModuleScope`]).
//!
//! Must never: change what a kernel computes, run on a kernel twice (an
//! already offloaded kernel, or one made of launches, is left alone), or
//! touch functions.

use super::util;
use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::*;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeSet;

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
    let mut globals = util::NameGen::with_taken(m.items.iter().map(|i| Name::from(i.name())));
    let shapes: FxHashMap<Name, (Scalar, Vec<u64>)> =
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

/// What offloading one kernel of a module needs to know of the module:
/// its items' names and its fields' shapes, gathered once for all of its
/// kernels ([`top_level_tasks`]).
pub struct ModuleScope {
    names: BTreeSet<Name>,
    shapes: FxHashMap<Name, (Scalar, Vec<u64>)>,
}

impl ModuleScope {
    pub fn of(m: &Module) -> ModuleScope {
        ModuleScope {
            names: m.items.iter().map(|i| Name::from(i.name())).collect(),
            shapes: m.fields().map(|f| (f.name.clone(), (f.elem, f.shape.clone()))).collect(),
        }
    }

    /// The items' names a kernel's offload could take: those under the
    /// kernel's own prefix (`<kernel>.`), the only names it makes.
    fn taken_by(&self, kernel: &str) -> util::NameGen {
        let prefix = format!("{kernel}.");
        let under =
            self.names.range::<str, _>((std::ops::Bound::Included(prefix.as_str()), std::ops::Bound::Unbounded));
        util::NameGen::with_taken(under.take_while(|n| n.starts_with(&prefix)).cloned())
    }
}

/// The task offload puts each top-level statement of `before` (a kernel
/// of the module `scope` describes) in, by the statement: the names the
/// JIT's tasks have, so that the interpreter, which runs the kernel as
/// written, names the code it runs as the JIT does (a `task` written in
/// the kernel keeps its own name). Empty when offload leaves the kernel
/// alone or refuses it.
///
/// Only this kernel is offloaded, on a copy: its tasks are `@<kernel>.<n>`
/// and its temporaries `@<kernel>.tmp<n>`, so no other kernel's names can
/// take theirs, only items that exist under that prefix, and the cost is
/// this kernel's, not the module's.
pub fn top_level_tasks(before: &Kernel, scope: &ModuleScope) -> FxHashMap<Stmt, Name> {
    let mut out = FxHashMap::default();
    let mut k = before.clone();
    let mut globals = scope.taken_by(&before.name);
    if offload_kernel(&mut k, &scope.shapes, &mut globals).is_err() {
        return out;
    }
    for &t in k.body.block(k.body.entry) {
        let StmtKind::Task { name, kind, body } = &k.body.stmt(t).kind else { continue };
        // A range task is its `for` in place; a serial task holds its
        // statements; a struct task replaced its loop nest, which its loop
        // variables still name in the kernel as written.
        out.insert(t, name.clone());
        k.body.walk(*body, &mut |s| {
            out.insert(s, name.clone());
        });
        for &v in kind.vars() {
            if let Some(ValueDef::LoopVar(l, _)) = before.body.values().get(v).map(|d| d.def) {
                out.insert(l, name.clone());
            }
        }
    }
    out
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

/// Offloads one kernel; returns the temporary fields it needs. The
/// phases, in order: [`top_level`] (what there is to offload),
/// [`partition`] (statements into groups), [`carried_values`] (what
/// crosses between groups), [`temp_fields`], [`redirect_shared_slots`],
/// [`store_carried`] (producers), then [`build_task`] for each group.
pub fn offload_kernel(
    k: &mut Kernel,
    shapes: &FxHashMap<Name, (Scalar, Vec<u64>)>,
    globals: &mut util::NameGen,
) -> Result<Vec<Field>, Diagnostic> {
    let Some((top, has_ret)) = top_level(k)? else { return Ok(Vec::new()) };
    let body = &mut k.body;
    let mut groups = partition(body, &top, has_ret, shapes);
    let carried = carried_values(body, &groups, &top);
    let (temps, temp_of) = temp_fields(body, &k.name, &carried.through_memory, globals);
    let mut names = util::NameGen::new(body);
    redirect_shared_slots(body, &carried.through_memory, &temp_of);
    store_carried(body, &mut groups, &temp_of, &mut names);
    let mut tasks = Vec::with_capacity(groups.len());
    for (gi, g) in groups.into_iter().enumerate() {
        // Tasks share the item namespace (split-tasks makes them items):
        // skip a number whose name an item, or another kernel's task, has.
        let name = fresh_global(globals, &k.name, "");
        let inputs = TaskInputs { carried: &carried.per_group[gi], consts: &carried.consts, temp_of: &temp_of };
        tasks.push(build_task(body, g, name, &inputs, &mut names));
    }
    let entry = body.entry;
    body[entry] = tasks;
    Ok(temps)
}

/// The first free item name `@<kernel>.<prefix><n>` (counting from 0),
/// taken into `globals`.
fn fresh_global(globals: &mut util::NameGen, kernel: &str, prefix: &str) -> Name {
    globals.numbered(&format!("{kernel}.{prefix}"), 0)
}

/// The kernel's top-level statements to offload and whether any of them
/// `ret`s (then they are already one `while`, see [`lower_rets`]); `None`
/// for a kernel already offloaded, split or empty; an error for one that
/// mixes tasks or launches with other statements.
fn top_level(k: &mut Kernel) -> Result<Option<(Vec<Stmt>, bool)>, Diagnostic> {
    let body = &mut k.body;
    let mut top: Vec<Stmt> = body.block(body.entry).to_vec();
    let is_task = |s: &Stmt| matches!(body.stmt(*s).kind, StmtKind::Task { .. });
    let is_launch = |s: &Stmt| matches!(body.stmt(*s).kind, StmtKind::Launch(_));
    if top.iter().all(is_task) || top.iter().all(is_launch) {
        return Ok(None);
    }
    if let Some(&s) = top.iter().find(|s| is_task(s) || is_launch(s)) {
        return Err(Diagnostic::error(
            format!("kernel @{} mixes tasks or launches with other statements", k.name),
            body.stmt(s).span,
        ));
    }
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
    Ok(Some((top, has_ret)))
}

/// Groups the top-level statements: each parallel loop (nest) alone, each
/// maximal run of the others together (all of them when the body `ret`s).
fn partition(body: &Body, top: &[Stmt], has_ret: bool, shapes: &FxHashMap<Name, (Scalar, Vec<u64>)>) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for &s in top {
        let kind = if has_ret { None } else { parallel_kind(body, s, shapes) };
        match kind {
            Some(kind) => groups.push(Group { kind, stmts: vec![s] }),
            None => match groups.last_mut() {
                Some(g) if matches!(g.kind, GroupKind::Serial) => g.stmts.push(s),
                _ => groups.push(Group { kind: GroupKind::Serial, stmts: vec![s] }),
            },
        }
    }
    groups
}

/// The values that cross from one group to another.
struct Carried {
    /// Per group: the values it reads that another group defines, in
    /// first-use order (so temporaries are numbered deterministically).
    per_group: Vec<Vec<Value>>,
    /// Carried constants: copied into each task that reads them rather
    /// than passed through memory.
    consts: FxHashMap<Value, Const>,
    /// The other carried values, in definition order: each gets a
    /// temporary field.
    through_memory: Vec<Value>,
}

fn carried_values(body: &Body, groups: &[Group], top: &[Stmt]) -> Carried {
    // Which group defines each top-level value.
    let mut def_group: FxHashMap<Value, usize> = FxHashMap::default();
    for (gi, g) in groups.iter().enumerate() {
        for &s in &g.stmts {
            if let Some(r) = body.stmt(s).result {
                def_group.insert(r, gi);
            }
        }
    }
    let mut per_group: Vec<Vec<Value>> = vec![Vec::new(); groups.len()];
    let mut any: Vec<Value> = Vec::new();
    let mut in_any: FxHashSet<Value> = FxHashSet::default();
    for (gi, g) in groups.iter().enumerate() {
        let mut seen = FxHashSet::default();
        for &s in &g.stmts {
            let mut visit = |t: Stmt| {
                for v in body.operands(t) {
                    if def_group.get(&v).is_some_and(|&d| d != gi) && seen.insert(v) {
                        per_group[gi].push(v);
                        if in_any.insert(v) {
                            any.push(v);
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
    let position: FxHashMap<Stmt, usize> = top.iter().enumerate().map(|(i, &t)| (t, i)).collect();
    any.sort_by_key(|v| {
        let ValueDef::Result(s) = body.value(*v).def else { return usize::MAX };
        position.get(&s).copied().unwrap_or(usize::MAX)
    });
    let const_of = |v: Value| match body.value(v).def {
        ValueDef::Result(s) => match body.stmt(s).kind {
            StmtKind::Const(c) => Some(c),
            _ => None,
        },
        _ => None,
    };
    let consts: FxHashMap<Value, Const> = any.iter().filter_map(|&v| Some((v, const_of(v)?))).collect();
    any.retain(|v| !consts.contains_key(v));
    Carried { per_group, consts, through_memory: any }
}

/// One 0-D temporary field `@<kernel>.tmp<n>` per value carried through
/// memory, and which field each value has.
fn temp_fields(
    body: &Body,
    kernel: &str,
    carried: &[Value],
    globals: &mut util::NameGen,
) -> (Vec<Field>, FxHashMap<Value, Name>) {
    let mut temps = Vec::new();
    let mut temp_of: FxHashMap<Value, Name> = FxHashMap::default();
    for &v in carried {
        let name = fresh_global(globals, kernel, "tmp");
        let elem = match body.ty(v) {
            Type::Scalar(t) | Type::Slot(t) => t,
        };
        temps.push(Field { name: name.clone(), elem, shape: Vec::new(), span: Span::DUMMY });
        temp_of.insert(v, name);
    }
    (temps, temp_of)
}

/// Slots shared between tasks: every load and store goes to the slot's
/// temporary field instead.
fn redirect_shared_slots(body: &mut Body, carried: &[Value], temp_of: &FxHashMap<Value, Name>) {
    if !carried.iter().any(|v| matches!(body.ty(*v), Type::Slot(_))) {
        return;
    }
    for s in util::reachable_from(body, body.entry) {
        let data = &mut body[s];
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

/// Producers: stores each carried scalar right after its definition; a
/// shared slot's `alloca` becomes `store @tmp[], 0`.
fn store_carried(body: &mut Body, groups: &mut [Group], temp_of: &FxHashMap<Value, Name>, names: &mut util::NameGen) {
    for g in groups {
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
}

/// What one task receives from the others.
struct TaskInputs<'a> {
    /// The values it reads that other tasks define.
    carried: &'a [Value],
    consts: &'a FxHashMap<Value, Const>,
    temp_of: &'a FxHashMap<Value, Name>,
}

/// How a task reads its carried values: statements at the start of its
/// body (loads of temporaries, copies of constants) and what replaces each
/// value there; a `range_for` header's bounds read the field or take the
/// constant directly.
#[derive(Default)]
struct Reads {
    loads: Vec<Stmt>,
    subst: FxHashMap<Value, Value>,
    header_fields: FxHashMap<Value, Name>,
    header_consts: FxHashMap<Value, Const>,
}

fn task_reads(body: &mut Body, g: &Group, inputs: &TaskInputs, names: &mut util::NameGen) -> Reads {
    let mut r = Reads::default();
    let (header_vals, body_uses): (FxHashSet<Value>, FxHashSet<Value>) = match g.kind {
        GroupKind::Range => {
            let mut u = FxHashSet::default();
            for c in body.child_blocks(g.stmts[0]) {
                body.walk(c, &mut |t| u.extend(body.operands(t)));
            }
            (header_values(body, g.stmts[0]), u)
        }
        _ => (FxHashSet::default(), inputs.carried.iter().copied().collect()),
    };
    for &v in inputs.carried {
        if matches!(body.ty(v), Type::Slot(_)) {
            continue;
        }
        let span = body.value(v).span;
        let (kind, ty) = if let Some(&c) = inputs.consts.get(&v) {
            if header_vals.contains(&v) {
                r.header_consts.insert(v, c);
            }
            (StmtKind::Const(c), Type::Scalar(c.ty))
        } else {
            if header_vals.contains(&v) {
                r.header_fields.insert(v, inputs.temp_of[&v].clone());
            }
            (StmtKind::Load(fref(&inputs.temp_of[&v], span)), body.ty(v))
        };
        if body_uses.contains(&v) {
            let name = names.fresh(body.name(v));
            let (st, nv) = body.new_stmt_with_result(kind, name, ty, span);
            r.loads.push(st);
            r.subst.insert(v, nv);
        }
    }
    r
}

/// Turns one group into its task statement.
fn build_task(body: &mut Body, g: Group, name: Name, inputs: &TaskInputs, names: &mut util::NameGen) -> Stmt {
    let reads = task_reads(body, &g, inputs, names);
    match g.kind {
        GroupKind::Serial => {
            let blk = body.new_block();
            body[blk] = reads.loads.into_iter().chain(g.stmts.iter().copied()).collect();
            util::substitute_in_block(body, blk, &reads.subst);
            let span = g.stmts.iter().map(|&s| body.stmt(s).span).reduce(Span::to).unwrap_or(Span::DUMMY);
            body.new_stmt(StmtKind::Task { name, kind: TaskKind::Serial, body: blk }, span)
        }
        GroupKind::Range => range_task(body, g.stmts[0], name, reads),
        GroupKind::Struct(loops, field, field_span) => struct_task(body, &loops, (field, field_span), name, reads),
    }
}

/// A top-level `for` becomes a `range_for` task in place.
fn range_task(body: &mut Body, s: Stmt, name: Name, reads: Reads) -> Stmt {
    let StmtKind::For { var, lo, hi, body: blk, .. } = body.stmt(s).kind.clone() else {
        unreachable!("range groups are made of one `for`")
    };
    let bound = |b: Bound| match b {
        Bound::Value(v) if reads.header_fields.contains_key(&v) => {
            Bound::Field(reads.header_fields[&v].clone(), body.value(v).span)
        }
        Bound::Value(v) if reads.header_consts.contains_key(&v) => {
            Bound::Const(reads.header_consts[&v].as_i64().unwrap_or_default())
        }
        b => b,
    };
    let (lo, hi) = (bound(lo), bound(hi));
    util::substitute_in_block(body, blk, &reads.subst);
    body[blk].splice(0..0, reads.loads);
    body[s].kind =
        StmtKind::Task { name, kind: TaskKind::RangeFor { var, lo, hi, block_dim: DEFAULT_BLOCK_DIM }, body: blk };
    s
}

/// A loop nest over a field's shape becomes a `struct_for` task over the
/// innermost body; the loop variables become the task's.
fn struct_task(body: &mut Body, loops: &[Stmt], (field, field_span): (Name, Span), name: Name, reads: Reads) -> Stmt {
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
    util::substitute_in_block(body, innermost, &reads.subst);
    body[innermost].splice(0..0, reads.loads);
    let kind = TaskKind::StructFor { vars: vars.clone(), field, field_span, block_dim: DEFAULT_BLOCK_DIM };
    let t = body.new_stmt(StmtKind::Task { name, kind, body: innermost }, span);
    for (i, v) in vars.into_iter().enumerate() {
        body[v].def = ValueDef::LoopVar(t, i as u32);
    }
    t
}

/// Rewrites a kernel body that `ret`s early into one statement, a `while`
/// that runs it once, with every `ret` turned into a way out of that
/// `while` (see the module doc). Returns the new top-level statements.
fn lower_rets(body: &mut Body, top: &[Stmt]) -> Vec<Stmt> {
    let mut names = util::NameGen::new(body);
    let span = top.iter().map(|&s| body.stmt(s).span).reduce(Span::to).unwrap_or(Span::DUMMY);
    let (flag_stmt, flag) =
        body.new_stmt_with_result(StmtKind::Alloca(Scalar::I1), names.fresh("ret.flag"), Type::Slot(Scalar::I1), span);
    let inner = body.new_block();
    body[inner] = top.to_vec();
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
        let old = std::mem::take(&mut body[b]);
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
        body[b] = out;
        any
    }
}

fn fref(field: &Name, span: Span) -> FieldRef {
    FieldRef { field: field.clone(), indices: Vec::new(), span }
}

/// The values a `for` reads in its bounds.
fn header_values(body: &Body, s: Stmt) -> FxHashSet<Value> {
    match &body.stmt(s).kind {
        StmtKind::For { lo, hi, .. } => {
            [lo, hi].into_iter().filter_map(|b| if let Bound::Value(v) = b { Some(*v) } else { None }).collect()
        }
        _ => FxHashSet::default(),
    }
}

/// How a top-level statement can run in parallel, if it can.
fn parallel_kind(body: &Body, s: Stmt, shapes: &FxHashMap<Name, (Scalar, Vec<u64>)>) -> Option<GroupKind> {
    let StmtKind::For { body: blk, serial, .. } = &body.stmt(s).kind else { return None };
    if *serial || util::has_loop_exit(body, *blk) || stores_outer_slot(body, s) {
        return None;
    }
    Some(struct_nest(body, s, shapes).unwrap_or(GroupKind::Range))
}

/// Whether a loop stores to a slot made outside it: its iterations then
/// depend on each other in order.
fn stores_outer_slot(body: &Body, s: Stmt) -> bool {
    let mut stored = FxHashSet::default();
    util::slots_stored_in(body, s, &mut stored);
    if stored.is_empty() {
        return false;
    }
    let mut inner = FxHashSet::default();
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
fn struct_nest(body: &Body, s: Stmt, shapes: &FxHashMap<Name, (Scalar, Vec<u64>)>) -> Option<GroupKind> {
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
            if let Some(r) = body.stmt(t).kind.access() {
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
