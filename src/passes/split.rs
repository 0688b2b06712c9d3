//! `split-tasks`: each task of an offloaded kernel becomes its own module.
//!
//! Owns: the per-task module, the unit that is keyed, compiled, cached and
//! loaded. `module @<task>` holds the fields the task touches (sorted by
//! name), the functions it calls, transitively (sorted by name), and a
//! top-level `task @<task> of @<kernel>(...)` whose parameters are the
//! kernel parameters it reads, in kernel order, without defaults. After
//! the task modules, one module named after the input (`@main` if it had
//! no name) holds every field, the functions no task calls, and each kernel
//! as a sequence of `launch` statements.
//!
//! Also owns [`task_needs`], the one definition of what a task needs from
//! its module. Because every task module holds exactly that, sorted, keys
//! (`crate::key`, which hashes the module as codegen compiles it) do not
//! depend on unused items or on item order.
//!
//! Must never: offload. A kernel that still holds plain statements is an
//! error (run `offload` first); the default pipeline does. A stream that is
//! already split passes through unchanged.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::*;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeSet;

/// The `split-tasks` pass.
pub struct SplitTasks;

impl super::Pass for SplitTasks {
    fn name(&self) -> &'static str {
        "split-tasks"
    }
    fn description(&self) -> &'static str {
        "give each task its own module (fields, functions, parameters it uses) plus a module of launches"
    }
    fn run(&self, stream: &mut Stream) -> Result<(), Diagnostics> {
        *stream = split_stream(stream)?;
        Ok(())
    }
}

/// Splits every module of a stream that holds offloaded kernels.
pub fn split_stream(stream: &Stream) -> Result<Stream, Diagnostics> {
    let mut out = Stream::default();
    let mut diags = Diagnostics::default();
    // Which input module made each output module: tasks of one name in two
    // modules would give two modules of that name, which do not read back.
    let mut made_by: FxHashMap<Name, &Module> = FxHashMap::default();
    let show = |m: &Module| m.name.as_ref().map_or("the unnamed module".to_string(), |n| format!("@{n}"));
    for m in &stream.modules {
        match split_module(m) {
            Ok(ms) => {
                for made in &ms {
                    let Some(name) = &made.name else { continue };
                    if let Some(first) = made_by.insert(name.clone(), m) {
                        diags.push(Diagnostic::error(
                            format!(
                                "split-tasks would make two modules named @{name} (from modules {} and {}); task names must be unique across the stream",
                                show(first),
                                show(m)
                            ),
                            m.span,
                        ));
                    }
                }
                out.modules.extend(ms)
            }
            Err(d) => diags.push(d),
        }
    }
    diags.into_result()?;
    Ok(out)
}

/// What a kernel's body holds.
enum KernelState {
    /// This many tasks (an empty kernel has zero).
    Tasks(usize),
    /// Launches: the kernel is already split.
    Launches,
}

fn kernel_state(k: &Kernel) -> Result<KernelState, Diagnostic> {
    let top = k.body.block(k.body.entry);
    let kind = |s: &Stmt| &k.body.stmt(*s).kind;
    if top.iter().all(|s| matches!(kind(s), StmtKind::Task { .. })) {
        return Ok(KernelState::Tasks(top.len()));
    }
    if top.iter().all(|s| matches!(kind(s), StmtKind::Launch(_))) {
        return Ok(KernelState::Launches);
    }
    Err(Diagnostic::error(
        format!("kernel @{} has not been offloaded into tasks; run the `offload` pass before `split-tasks`", k.name),
        k.span,
    ))
}

/// Splits one module: its task modules, then its launch module. A module
/// that is already split (it holds task items or launches, or it is named
/// and holds no task) comes back unchanged.
pub fn split_module(m: &Module) -> Result<Vec<Module>, Diagnostic> {
    let mut task_kernel = None;
    let mut has_launches = false;
    for k in m.kernels() {
        match kernel_state(k)? {
            KernelState::Tasks(0) => {}
            KernelState::Tasks(_) => task_kernel = task_kernel.or(Some(k)),
            KernelState::Launches => has_launches = true,
        }
    }
    let has_items = m.tasks().next().is_some();
    match task_kernel {
        None if m.name.is_some() || has_items || has_launches => return Ok(vec![m.clone()]),
        Some(k) if has_items || has_launches => {
            return Err(Diagnostic::error(
                format!(
                    "kernel @{} holds tasks in a module that is already split (it has task items or launches)",
                    k.name
                ),
                k.span,
            ))
        }
        _ => {}
    }

    let mut out = Vec::new();
    let mut called_by_tasks = BTreeSet::new();
    let index = ByName::new(m);
    for k in m.kernels() {
        for &s in k.body.block(k.body.entry) {
            let item = extract_task(k, s);
            let (fields, funcs) = task_needs(&index, &item.body, item.body.entry, &item.kind);
            called_by_tasks.extend(funcs.iter().map(|f| f.name.clone()));
            let mut items: Vec<Item> = fields.into_iter().cloned().map(Item::Field).collect();
            items.extend(funcs.into_iter().cloned().map(Item::Func));
            let name = item.name.clone();
            items.push(Item::Task(item));
            out.push(Module { name: Some(name), items, span: k.body.stmt(s).span });
        }
    }

    // The launch module keeps the functions no task calls, and what they
    // call (which may also be called by a task).
    let mut keep: BTreeSet<Name> = BTreeSet::new();
    let mut pending: Vec<&Func> = m.funcs().filter(|f| !called_by_tasks.contains(&f.name)).collect();
    while let Some(f) = pending.pop() {
        if !keep.insert(f.name.clone()) {
            continue;
        }
        f.body.each_call(&mut |callee| pending.extend(index.funcs.get(callee).map(|&f| &**f)));
    }
    let mut items = Vec::with_capacity(m.items.len());
    for it in &m.items {
        match it {
            Item::Field(_) => items.push(it.clone()),
            Item::Func(f) if keep.contains(&f.name) => items.push(it.clone()),
            Item::Func(_) | Item::Task(_) => {}
            Item::Kernel(k) => items.push(Item::Kernel(launch_kernel(k))),
        }
    }
    out.push(Module { name: Some(m.name.clone().unwrap_or_else(|| "main".into())), items, span: m.span });
    Ok(out)
}

/// The kernel as a sequence of launches of its tasks.
fn launch_kernel(k: &Kernel) -> Kernel {
    let mut body = Body::new();
    for &p in &k.body.params {
        let vd = k.body.value(p);
        body.add_param(vd.name.clone(), vd.ty.scalar().unwrap_or(Scalar::I32), vd.span);
    }
    for &s in k.body.block(k.body.entry) {
        if let StmtKind::Task { name, .. } = &k.body.stmt(s).kind {
            let l = body.new_stmt(StmtKind::Launch(name.clone()), k.body.stmt(s).span);
            body.push(body.entry, l);
        }
    }
    Kernel { name: k.name.clone(), params: k.params.clone(), body, span: k.span }
}

/// A module's fields and functions by name (the first of a name), so that
/// following a task's calls costs time linear in what it calls, not in the
/// module's size for every call.
pub struct ByName<'m> {
    fields: FxHashMap<&'m str, &'m Field>,
    /// Shared, so a task module's copy of a function is a reference.
    funcs: FxHashMap<&'m str, &'m std::sync::Arc<Func>>,
}

impl<'m> ByName<'m> {
    pub fn new(m: &'m Module) -> Self {
        let mut index = ByName { fields: FxHashMap::default(), funcs: FxHashMap::default() };
        for f in m.fields() {
            index.fields.entry(f.name.as_str()).or_insert(f);
        }
        for it in &m.items {
            if let Item::Func(f) = it {
                index.funcs.entry(f.name.as_str()).or_insert(f);
            }
        }
        index
    }
}

/// The fields a task touches and the functions it calls transitively, both
/// sorted by name: exactly what its module must hold. `root` is the task's
/// body block in `body`; `kind` its header.
pub fn task_needs<'m>(
    m: &ByName<'m>,
    body: &Body,
    root: Block,
    kind: &TaskKind,
) -> (Vec<&'m Field>, Vec<&'m std::sync::Arc<Func>>) {
    let mut fields: Vec<&str> = Vec::new();
    match kind {
        TaskKind::Serial => {}
        TaskKind::RangeFor { lo, hi, .. } => {
            for b in [lo, hi] {
                if let Bound::Field(n, _) = b {
                    fields.push(n);
                }
            }
        }
        TaskKind::StructFor { field, .. } => fields.push(field),
    }
    let mut calls: Vec<&str> = Vec::new();
    scan(body, root, &mut fields, &mut calls);
    let mut funcs: Vec<&'m std::sync::Arc<Func>> = Vec::new();
    // A set, not a scan of `funcs`: a task may call thousands of functions.
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    while let Some(name) = calls.pop() {
        if !seen.insert(name) {
            continue;
        }
        if let Some(&f) = m.funcs.get(name) {
            funcs.push(f);
            scan(&f.body, f.body.entry, &mut fields, &mut calls);
        }
    }
    funcs.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    fields.sort_unstable();
    fields.dedup();
    (fields.into_iter().filter_map(|n| m.fields.get(n).copied()).collect(), funcs)
}

/// The fields a block touches and the functions it calls, nested blocks
/// included (with repeats).
fn scan<'x>(body: &'x Body, b: Block, fields: &mut Vec<&'x str>, calls: &mut Vec<&'x str>) {
    body.walk(b, &mut |s| {
        let kind = &body.stmt(s).kind;
        kind.for_each_field(|f| fields.push(f));
        if let StmtKind::Call(name, ..) = kind {
            calls.push(name);
        }
    });
}

/// The task statement `s` of kernel `k` as a task item with a body of its
/// own.
pub fn extract_task(k: &Kernel, s: Stmt) -> TaskItem {
    let src = &k.body;
    let StmtKind::Task { name, kind, body: root } = &src.stmt(s).kind else {
        panic!("extract_task is given a task statement")
    };
    // The kernel parameters the task reads, in kernel order. Sets and maps
    // of the values the task touches, not vectors over all the kernel's:
    // a kernel of n tasks is split in time linear in n, not n².
    let mut read: FxHashSet<Value> = FxHashSet::default();
    let mut mark = |v: Value| {
        read.insert(v);
    };
    if let TaskKind::RangeFor { lo, hi, .. } = kind {
        for b in [lo, hi] {
            if let Bound::Value(v) = b {
                mark(*v)
            }
        }
    }
    src.walk(*root, &mut |t| src.operands(t).into_iter().for_each(&mut mark));

    let mut cp = Copier { src, dst: Body::new(), map: FxHashMap::default() };
    let mut params = Vec::new();
    for (i, &p) in src.params.iter().enumerate() {
        if read.contains(&p) {
            let vd = src.value(p);
            let np = cp.dst.add_param(vd.name.clone(), vd.ty.scalar().unwrap_or(Scalar::I32), vd.span);
            cp.map.insert(p, np);
            let decl = k.params.get(i).map(|d| Param { ty: d.ty, default: None, span: d.span });
            params.push(decl.unwrap_or(Param { ty: Scalar::I32, default: None, span: vd.span }));
        }
    }
    let kind = cp.kind(kind, Stmt::HEADER);
    let entry = cp.dst.entry;
    cp.fill(*root, entry);
    TaskItem { name: name.clone(), kernel: k.name.clone(), params, kind, body: cp.dst, span: src.stmt(s).span }
}

/// Copies statements from one body into another, renumbering values and
/// statements in print order.
struct Copier<'a> {
    src: &'a Body,
    dst: Body,
    map: FxHashMap<Value, Value>,
}

impl Copier<'_> {
    fn val(&mut self, v: Value) -> Value {
        if let Some(&n) = self.map.get(&v) {
            return n;
        }
        // A use with no definition in the copied code (the verifier rejects
        // it); keep it visible as undefined rather than invent one.
        let vd = self.src.value(v);
        let n = self.dst.new_value(vd.name.clone(), vd.ty, ValueDef::Undefined, vd.span);
        self.map.insert(v, n);
        n
    }

    fn def(&mut self, v: Value, def: ValueDef) -> Value {
        let vd = self.src.value(v);
        let n = self.dst.new_value(vd.name.clone(), vd.ty, def, vd.span);
        self.map.insert(v, n);
        n
    }

    /// A task item's header, its variables defined by `at`, walked through
    /// the statement table's task-header row (bounds, then variables).
    fn kind(&mut self, k: &TaskKind, at: Stmt) -> TaskKind {
        let mut kind = k.clone();
        let this = std::cell::RefCell::new(&mut *self);
        let mut bound = 0;
        kind.visit_mut(
            |v| *v = this.borrow_mut().val(*v),
            |v| {
                *v = this.borrow_mut().def(*v, ValueDef::LoopVar(at, bound));
                bound += 1;
            },
        );
        kind
    }

    fn block(&mut self, b: Block) -> Block {
        let nb = self.dst.new_block();
        self.fill(b, nb);
        nb
    }

    fn fill(&mut self, from: Block, to: Block) {
        for &s in self.src.block(from) {
            let ns = self.stmt(s);
            self.dst.push(to, ns);
        }
    }

    fn stmt(&mut self, s: Stmt) -> Stmt {
        let data = self.src.stmt(s);
        let ns = self.dst.new_stmt(StmtKind::Break, data.span);
        let mut kind = data.kind.clone();
        // The statement table walks the parts in print order (operands,
        // then the variables bound, then the blocks), so values are
        // numbered as the canonical text names them. The three callbacks
        // share the copier.
        let this = std::cell::RefCell::new(&mut *self);
        let mut bound = 0;
        kind.visit_mut(
            |v| *v = this.borrow_mut().val(*v),
            |b| *b = this.borrow_mut().block(*b),
            |v| {
                *v = this.borrow_mut().def(*v, ValueDef::LoopVar(ns, bound));
                bound += 1;
            },
        );
        self.dst[ns].kind = kind;
        self.dst[ns].loc = data.loc.clone();
        if let Some(r) = data.result {
            let nr = self.def(r, ValueDef::Result(ns));
            self.dst[ns].result = Some(nr);
        }
        ns
    }
}
