//! The verifier: checks that a stream of modules is well formed and reports
//! every error it finds, each with the span of the offending entity and a
//! message that names it.
//!
//! Owns: the well-formedness rules of KIR (scopes, names, types, fields,
//! calls, returns, loops, tasks, launches, recursion, the one limit on how
//! deeply blocks and calls nest ([`MAX_CALL_DEPTH`]), and the agreement of
//! modules in a split stream). `docs/language.md` ("Well-formedness") states
//! the same rules for readers of the language.
//!
//! Must never: change the IR, print, or panic, whatever the input. It runs
//! on IR built by passes as well as by the parser, so it checks the arena
//! structure (indices in range, each block and statement placed once) before
//! anything that indexes with it, and recurses no deeper than
//! [`MAX_NESTING`] blocks.
//!
//! Where a use has no span of its own (operands are plain [`Value`]
//! indices), an error about it points at the statement that uses it; a use
//! of an undefined name points at the name, which the parser keeps as a
//! [`ValueDef::Undefined`] value with the span of the use.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::*;
use crate::parser::FxMap;
use std::collections::HashMap;

/// The deepest nesting of statement blocks (`if`, `for`, `while`; a task,
/// only ever at a kernel's top level, does not count) accepted. Deeper
/// input is rejected with an error rather than risking the stack of the
/// verifier, the printer and the passes, which all recurse on nesting.
///
/// The printer wraps statements in up to three braces of their own (a
/// module, a kernel and a task; `offload` adds the task), and the lexer
/// accepts [`crate::lexer::MAX_DEPTH`] levels of braces: so whatever
/// verifies prints, after any pass, as text that parses again.
pub const MAX_NESTING: usize = crate::lexer::MAX_DEPTH - 3;

/// How deeply blocks and calls may nest, counted together along any path
/// of calls: the body of the kernel, of a task and of every function called
/// is one level, and each `if`, `for` and `while` block one more. A chain of
/// calls is valid KIR however long it is, but the interpreter, the code
/// generator and the JIT all go down such a chain on a stack, so the
/// language fixes one limit and the verifier enforces it; every tool then
/// rejects the same inputs with the same error, and the interpreter's own
/// limit (`crate::interp::MAX_DEPTH`) is this one.
pub const MAX_CALL_DEPTH: usize = 512;

/// The largest field accepted, in bytes (2^40, one TiB): anything larger is
/// certainly a mistake, and the limit keeps every size computation far from
/// overflow.
pub const MAX_FIELD_BYTES: u64 = 1 << 40;

/// The largest rank of a field.
pub const MAX_RANK: usize = 8;

/// Checks a stream: every module on its own, `launch` targets across the
/// stream, and that fields of one name agree across modules. Reports every
/// error found, in source order.
pub fn verify(stream: &Stream) -> Result<(), Diagnostics> {
    let mut diags = Vec::new();
    let mut module_names = HashMap::new();
    for m in &stream.modules {
        check_module_name(stream, m, &mut module_names, &mut diags);
        check_module(m, Some(stream), &mut diags);
    }
    check_fields_agree(stream, &mut diags);
    finish(diags)
}

/// A module of a stream must have a name that no earlier module has (an
/// unnamed module is only allowed alone).
fn check_module_name<'a>(
    stream: &Stream,
    m: &'a Module,
    seen: &mut HashMap<&'a str, ()>,
    diags: &mut Vec<Diagnostic>,
) {
    match &m.name {
        Some(n) if seen.insert(n.as_str(), ()).is_some() => {
            diags.push(Diagnostic::error(format!("duplicate module @{n}"), m.span));
        }
        Some(_) => {}
        None if stream.is_multi() => {
            diags.push(Diagnostic::error("module without a name in a stream of named modules", m.span))
        }
        None => {}
    }
}

/// Checks one module on its own: `launch` targets must be task items of
/// this module.
pub fn verify_module(module: &Module) -> Result<(), Diagnostics> {
    let mut diags = Vec::new();
    check_module(module, None, &mut diags);
    finish(diags)
}

/// Sorts the diagnostics into source order (stable, so errors at one place
/// keep the order they were found in) and drops exact repeats (one
/// undefined value used twice by one statement is one error).
fn finish(mut diags: Vec<Diagnostic>) -> Result<(), Diagnostics> {
    diags.sort_by_key(|d| d.span.map_or(0, |s| s.start));
    diags.dedup_by(|a, b| a.message == b.message && same_span(a.span, b.span));
    Diagnostics(diags).into_result()
}

fn same_span(a: Option<Span>, b: Option<Span>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.start == b.start && a.end == b.end,
        (None, None) => true,
        _ => false,
    }
}

/// Across a split stream, a field is one piece of storage: every module
/// that declares it must declare the same element type and shape. The
/// error is reported at the later declaration.
fn check_fields_agree(stream: &Stream, diags: &mut Vec<Diagnostic>) {
    let mut first: HashMap<&str, (&Module, &Field)> = HashMap::new();
    for m in &stream.modules {
        for f in m.fields() {
            match first.get(f.name.as_str()) {
                None => {
                    first.insert(f.name.as_str(), (m, f));
                }
                Some((pm, pf)) => {
                    if pf.elem != f.elem || pf.shape != f.shape {
                        let place = match &pm.name {
                            Some(n) => format!("in module @{n}"),
                            None => "in an earlier module".to_string(),
                        };
                        diags.push(Diagnostic::error(
                            format!(
                                "field @{} is declared as {} here but as {} {place}",
                                f.name,
                                field_type(f),
                                field_type(pf)
                            ),
                            f.span,
                        ));
                    }
                }
            }
        }
    }
}

/// `f32[64, 64]`, or `f64` for a 0-D field.
fn field_type(f: &Field) -> String {
    if f.shape.is_empty() {
        return f.elem.to_string();
    }
    let dims: Vec<String> = f.shape.iter().map(u64::to_string).collect();
    format!("{}[{}]", f.elem, dims.join(", "))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// What a module's bodies may refer to.
struct ModuleCx<'a> {
    module: &'a Module,
    /// Where `launch` looks for task items: the whole stream, or the module.
    stream: Option<&'a Stream>,
    items: FxMap<&'a str, &'a Item>,
}

impl<'a> ModuleCx<'a> {
    fn field(&self, name: &str) -> Option<&'a Field> {
        match self.items.get(name) {
            Some(Item::Field(f)) => Some(f),
            _ => None,
        }
    }
    fn task_item(&self, name: &str) -> Option<&'a TaskItem> {
        match self.stream {
            Some(s) => s.find_task(name).map(|(_, t)| t),
            None => self.module.task(name),
        }
    }
}

fn check_module(m: &Module, stream: Option<&Stream>, diags: &mut Vec<Diagnostic>) {
    let cx = ModuleCx::new(m, stream, diags);
    let mut wide = ModuleWide::default();
    for it in &m.items {
        let facts = check_item(&cx, it, diags);
        wide.add(&cx, facts, diags);
    }
    wide.finish(diags);
}

impl<'a> ModuleCx<'a> {
    /// Indexes a module's items by name (the first of a name wins) and
    /// reports the later ones as duplicates.
    fn new(m: &'a Module, stream: Option<&'a Stream>, diags: &mut Vec<Diagnostic>) -> Self {
        let mut items: FxMap<&str, &Item> = FxMap::with_capacity_and_hasher(m.items.len(), Default::default());
        for it in &m.items {
            if items.contains_key(it.name()) {
                diags.push(Diagnostic::error(format!("duplicate item @{}", it.name()), it.span()));
            } else {
                items.insert(it.name(), it);
            }
        }
        ModuleCx { module: m, stream, items }
    }
}

/// What the module-wide checks need to know of one item once its own
/// checks are done: a body's nesting and calls, a kernel's task statements.
#[derive(Debug, Default)]
pub struct ItemFacts {
    /// For a function, kernel or task item: how deep its blocks nest and
    /// the calls it makes.
    nesting: Option<Nesting>,
    /// For a kernel: the names and spans of its top-level task statements.
    task_stmts: Vec<(Name, Span)>,
}

/// The checks of one item that need nothing but the module's signatures.
fn check_item(cx: &ModuleCx<'_>, it: &Item, diags: &mut Vec<Diagnostic>) -> ItemFacts {
    let mut facts = ItemFacts::default();
    match it {
        Item::Field(f) => check_field(f, diags),
        Item::Func(f) => {
            check_params(&f.body, &f.params, false, &format!("@{}", f.name), f.span, diags);
            facts.nesting = Some(BodyChecker::run(cx, Owner::Func(f), diags));
        }
        Item::Kernel(k) => {
            check_params(&k.body, &k.params, true, &format!("@{}", k.name), k.span, diags);
            facts.nesting = Some(BodyChecker::run(cx, Owner::Kernel(k), diags));
            for &s in k.body.blocks.get(k.body.entry).map(Vec::as_slice).unwrap_or(&[]) {
                if let Some(StmtData { kind: StmtKind::Task { name, .. }, span, .. }) = k.body.stmts.get(s) {
                    facts.task_stmts.push((name.clone(), *span));
                }
            }
        }
        Item::Task(t) => {
            check_params(&t.body, &t.params, true, &format!("task @{}", t.name), t.span, diags);
            facts.nesting = Some(BodyChecker::run(cx, Owner::TaskItem(t), diags));
        }
    }
    facts
}

/// The checks of a module that need all of its items: task statement
/// names against each other and the items, recursion through calls, and
/// the depth of blocks and calls.
#[derive(Default)]
struct ModuleWide {
    task_names: HashMap<Name, ()>,
    /// Every body's nesting, in source order.
    bodies: Vec<Nesting>,
}

impl ModuleWide {
    /// Takes the facts of the module's next item (in source order).
    fn add(&mut self, cx: &ModuleCx<'_>, facts: ItemFacts, diags: &mut Vec<Diagnostic>) {
        // Task statements are named like items (`launch` and the cache
        // refer to them by name), so their names share the items' namespace.
        for (name, span) in facts.task_stmts {
            if cx.items.contains_key(name.as_str()) || self.task_names.contains_key(&name) {
                diags.push(Diagnostic::error(format!("duplicate item @{name}"), span));
            } else {
                self.task_names.insert(name, ());
            }
        }
        if let Some(n) = facts.nesting {
            self.bodies.push(n);
        }
    }

    fn finish(self, diags: &mut Vec<Diagnostic>) {
        let graph = CallGraph::new(&self.bodies);
        let sccs = tarjan(&graph.succ);
        check_recursion(&graph, &sccs, diags);
        check_call_depth(&graph, &sccs, diags);
    }
}

/// The verifier for a front end that never holds a whole stream's IR: it
/// is built from the stream's *signatures* (every item, with bodies that
/// hold only their parameters and header variables), checks each full
/// item on its own with [`Self::verify_item`] (thread-safe, so items can
/// be checked in parallel and dropped), takes each item's
/// [`ItemFacts`] in source order with [`Self::add_facts`], and reports with
/// [`Self::finish`] exactly what [`verify`] reports for the whole stream.
/// Every rule has one implementation, shared with [`verify`].
pub struct ItemVerifier<'a> {
    modules: Vec<ModuleCx<'a>>,
    wide: Vec<ModuleWide>,
    diags: Vec<Diagnostic>,
}

impl<'a> ItemVerifier<'a> {
    /// Runs the stream-wide checks on the signatures: module names,
    /// duplicate items, and that fields agree across modules.
    pub fn new(signatures: &'a Stream) -> Self {
        let mut diags = Vec::new();
        let mut module_names = HashMap::new();
        let modules = signatures
            .modules
            .iter()
            .map(|m| {
                check_module_name(signatures, m, &mut module_names, &mut diags);
                ModuleCx::new(m, Some(signatures), &mut diags)
            })
            .collect();
        check_fields_agree(signatures, &mut diags);
        let wide = signatures.modules.iter().map(|_| ModuleWide::default()).collect();
        ItemVerifier { modules, wide, diags }
    }

    /// Checks one full item of module `module` (an index into the
    /// signatures' modules) against the signatures; returns its errors and
    /// the facts the module-wide checks need.
    pub fn verify_item(&self, module: usize, item: &Item) -> (Vec<Diagnostic>, ItemFacts) {
        let mut diags = Vec::new();
        let facts = match self.modules.get(module) {
            Some(cx) => check_item(cx, item, &mut diags),
            None => {
                diags.push(Diagnostic::error_nospan(format!("malformed stream: no module {module}")));
                ItemFacts::default()
            }
        };
        (diags, facts)
    }

    /// Takes the facts of module `module`'s next item, in source order.
    pub fn add_facts(&mut self, module: usize, facts: ItemFacts) {
        if let (Some(cx), Some(w)) = (self.modules.get(module), self.wide.get_mut(module)) {
            w.add(cx, facts, &mut self.diags);
        }
    }

    /// Whether any error has been found so far by the stream-wide checks
    /// (not counting those [`Self::verify_item`] returned).
    pub fn has_errors(&self) -> bool {
        !self.diags.is_empty()
    }

    /// Runs the checks that need every item's facts (recursion) and
    /// reports all errors, with `item_diags` (what `verify_item` returned),
    /// in source order.
    pub fn finish(mut self, item_diags: Vec<Diagnostic>) -> Result<(), Diagnostics> {
        for w in std::mem::take(&mut self.wide) {
            w.finish(&mut self.diags);
        }
        self.diags.extend(item_diags);
        finish(self.diags)
    }
}

fn check_field(f: &Field, diags: &mut Vec<Diagnostic>) {
    let name = &f.name;
    if f.shape.len() > MAX_RANK {
        diags.push(Diagnostic::error(
            format!("field @{name} has rank {}, more than the maximum of {MAX_RANK}", f.shape.len()),
            f.span,
        ));
        return;
    }
    if let Some(d) = f.shape.iter().position(|&e| e == 0) {
        diags.push(Diagnostic::error(format!("field @{name} has extent 0 in dimension {}", d + 1), f.span));
        return;
    }
    let bytes = f
        .shape
        .iter()
        .try_fold(f.elem.size_bytes() as u64, |acc, &e| acc.checked_mul(e))
        .filter(|&b| b <= MAX_FIELD_BYTES);
    if bytes.is_none() {
        diags.push(Diagnostic::error(
            format!("field @{name} : {} is larger than the limit of 2^40 bytes", field_type(f)),
            f.span,
        ));
    }
}

/// The declared parameters against the body's parameter values, and the
/// default values (kernel parameters only).
fn check_params(
    body: &Body,
    params: &[Param],
    defaults_allowed: bool,
    owner: &str,
    owner_span: Span,
    diags: &mut Vec<Diagnostic>,
) {
    if params.len() != body.params.len() {
        diags.push(Diagnostic::error(
            format!(
                "malformed IR: {owner} declares {} but its body has {}",
                plural(params.len(), "parameter", "parameters"),
                plural(body.params.len(), "parameter value", "parameter values")
            ),
            owner_span,
        ));
        return;
    }
    for (i, (p, &v)) in params.iter().zip(&body.params).enumerate() {
        let Some(vd) = body.values.get(v) else {
            diags.push(Diagnostic::error(format!("malformed IR: parameter {} of {owner} is out of range", i + 1), p.span));
            continue;
        };
        if vd.def != ValueDef::Param(i as u32) || vd.ty != Type::Scalar(p.ty) {
            diags.push(Diagnostic::error(
                format!("malformed IR: parameter %{} of {owner} does not match its declaration", vd.name),
                p.span,
            ));
        }
        let Some(d) = p.default else { continue };
        if !defaults_allowed {
            diags.push(Diagnostic::error(
                format!("parameter %{} of {owner} has a default value; only kernel parameters may", vd.name),
                p.span,
            ));
            continue;
        }
        if let Some(msg) = default_error(d, p.ty) {
            diags.push(Diagnostic::error(format!("default value of %{} {msg}", vd.name), p.span));
        }
    }
}

/// Why constant `c` is not a valid default for a parameter of type `ty`.
fn default_error(c: Const, ty: Scalar) -> Option<String> {
    if c.ty == ty {
        return (!canonical(c)).then(|| format!("does not fit {ty}"));
    }
    // An integer literal of another integer type: say whether its value
    // would fit, since that is what the writer needs to know.
    if c.ty.is_int() && ty.is_int() && canonical(c) {
        let v = c.as_i64().unwrap_or_default();
        if !int_fits(v, ty) {
            return Some(format!("does not fit {ty}"));
        }
    }
    Some(format!("has type {}, expected {ty}", c.ty))
}

/// Whether the bits of a constant are the zero-extended form its type
/// promises (`i1` is 0 or 1, 32-bit types use the low 32 bits).
fn canonical(c: Const) -> bool {
    match c.ty {
        Scalar::I1 => c.bits <= 1,
        Scalar::I32 | Scalar::F32 => c.bits <= u32::MAX as u64,
        Scalar::I64 | Scalar::F64 => true,
    }
}

/// Whether integer `v` is representable in `ty` (`i1`: 0 or 1).
fn int_fits(v: i64, ty: Scalar) -> bool {
    match ty {
        Scalar::I1 => v == 0 || v == 1,
        Scalar::I32 => i32::try_from(v).is_ok(),
        Scalar::I64 => true,
        Scalar::F32 | Scalar::F64 => false,
    }
}

/// Rejects recursion, direct or through other functions. The interpreter
/// and the JIT give `call` inline-free semantics without a stack model of
/// their own (a call runs on the host stack, with no depth limit or
/// overflow error defined by the language), so a call graph with a cycle
/// could exhaust the stack instead of producing a defined result.
///
/// Reports each strongly connected component of the call graph that has a
/// cycle once, at a call that closes it, naming the cycle.
fn check_recursion(graph: &CallGraph<'_>, sccs: &[Vec<usize>], diags: &mut Vec<Diagnostic>) {
    let succ = &graph.succ;
    for scc in sccs {
        if !graph.is_cycle(scc) {
            continue;
        }
        // Name the cycle through the first function (in source order) of
        // the component: a shortest path back to itself inside it.
        let start = *scc.iter().min().unwrap_or(&scc[0]);
        let in_scc: std::collections::HashSet<usize> = scc.iter().copied().collect();
        let mut prev: HashMap<usize, (usize, Span)> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut closing = None;
        'bfs: while let Some(u) = queue.pop_front() {
            for &(v, sp) in &succ[u] {
                if !in_scc.contains(&v) {
                    continue;
                }
                if v == start {
                    closing = Some((u, sp));
                    break 'bfs;
                }
                if v != start && !prev.contains_key(&v) {
                    prev.insert(v, (u, sp));
                    queue.push_back(v);
                }
            }
        }
        let Some((last, span)) = closing else { continue };
        let mut path = vec![start];
        let mut cur = last;
        let mut tail = Vec::new();
        while cur != start {
            tail.push(cur);
            cur = prev.get(&cur).map_or(start, |p| p.0);
        }
        path.extend(tail.into_iter().rev());
        path.push(start);
        let names: Vec<String> = path.iter().map(|&i| format!("@{}", graph.bodies[i].name)).collect();
        diags.push(Diagnostic::error(
            format!("recursive call: {} (recursion is not allowed)", names.join(" -> ")),
            span,
        ));
    }
}

/// What a body contributes to the module-wide call checks.
#[derive(Debug)]
pub struct Nesting {
    name: Name,
    /// "function", "kernel" or "task".
    what: &'static str,
    span: Span,
    /// The deepest block of the body, in levels (its own body is level 1,
    /// a task's body in a kernel level 2).
    deepest: u32,
    /// Its calls, in order, with the level of the block each stands in.
    calls: Vec<CallSite>,
}

/// A call and the level of the block it stands in (see [`Nesting`]).
#[derive(Debug)]
struct CallSite {
    callee: Name,
    span: Span,
    level: u32,
}

/// A module's bodies as a graph: `succ[i]` are the functions body `i`
/// calls (by index into `bodies`), with the call's span and level. Only
/// functions are called, so kernels and task items have no callers.
struct CallGraph<'b> {
    bodies: &'b [Nesting],
    succ: Vec<Vec<(usize, Span)>>,
    levels: Vec<Vec<u32>>,
}

impl<'b> CallGraph<'b> {
    fn new(bodies: &'b [Nesting]) -> Self {
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (i, b) in bodies.iter().enumerate().filter(|(_, b)| b.what == "function") {
            index.entry(b.name.as_str()).or_insert(i);
        }
        let resolved = |b: &'b Nesting| {
            b.calls.iter().filter_map(|c| index.get(c.callee.as_str()).map(|&j| (j, c))).collect::<Vec<_>>()
        };
        let (mut succ, mut levels) = (Vec::with_capacity(bodies.len()), Vec::with_capacity(bodies.len()));
        for b in bodies {
            let calls = resolved(b);
            succ.push(calls.iter().map(|&(j, c)| (j, c.span)).collect());
            levels.push(calls.iter().map(|&(_, c)| c.level).collect());
        }
        CallGraph { bodies, succ, levels }
    }

    /// Whether a strongly connected component holds a cycle.
    fn is_cycle(&self, scc: &[usize]) -> bool {
        scc.len() > 1 || self.succ[scc[0]].iter().any(|&(j, _)| j == scc[0])
    }
}

/// Rejects a body whose blocks and calls nest deeper than
/// [`MAX_CALL_DEPTH`] along some path of calls, naming the path. Only the
/// outermost offender is reported: not a function that a body already
/// reported calls. Bodies in a cycle (reported as recursion) count only
/// their own blocks.
fn check_call_depth(graph: &CallGraph<'_>, sccs: &[Vec<usize>], diags: &mut Vec<Diagnostic>) {
    let n = graph.bodies.len();
    // Tarjan's components come callees first, so one pass in that order
    // sees every callee's depth before its callers.
    let mut depth: Vec<u32> = graph.bodies.iter().map(|b| b.deepest).collect();
    let mut via: Vec<Option<usize>> = vec![None; n];
    for scc in sccs.iter().filter(|scc| !graph.is_cycle(scc)) {
        let u = scc[0];
        for (k, &(v, _)) in graph.succ[u].iter().enumerate() {
            let d = graph.levels[u][k].saturating_add(depth[v]);
            if d > depth[u] {
                depth[u] = d;
                via[u] = Some(k);
            }
        }
    }
    let too_deep = |i: usize| depth[i] as usize > MAX_CALL_DEPTH;
    let mut called_by_offender = vec![false; n];
    for i in (0..n).filter(|&i| too_deep(i)) {
        for &(j, _) in &graph.succ[i] {
            called_by_offender[j] = true;
        }
    }
    for i in (0..n).filter(|&i| too_deep(i) && !called_by_offender[i]) {
        let b = &graph.bodies[i];
        let mut path = vec![i];
        while let Some(k) = via[*path.last().unwrap_or(&i)] {
            path.push(graph.succ[path[path.len() - 1]][k].0);
        }
        let span = via[i].map_or(b.span, |k| graph.succ[i][k].1);
        diags.push(Diagnostic::error(
            format!(
                "{} @{}: blocks and calls nest {} levels deep, more than the limit of {MAX_CALL_DEPTH}: {}",
                b.what,
                b.name,
                depth[i],
                call_path(graph.bodies, &path)
            ),
            span,
        ));
    }
}

/// `@a -> @b -> @c`; a long path shows its first and last few names.
fn call_path(bodies: &[Nesting], path: &[usize]) -> String {
    const SHOW: usize = 4;
    let name = |&i: &usize| format!("@{}", bodies[i].name);
    if path.len() <= 2 * SHOW {
        return path.iter().map(name).collect::<Vec<_>>().join(" -> ");
    }
    let head: Vec<String> = path[..SHOW].iter().map(name).collect();
    let tail: Vec<String> = path[path.len() - SHOW..].iter().map(name).collect();
    format!("{} -> ... ({} more) -> {}", head.join(" -> "), path.len() - 2 * SHOW, tail.join(" -> "))
}

/// Strongly connected components (Tarjan's algorithm, iterative so that
/// long call chains cannot exhaust the stack).
fn tarjan(succ: &[Vec<(usize, Span)>]) -> Vec<Vec<usize>> {
    const NONE: usize = usize::MAX;
    let n = succ.len();
    let mut index = vec![NONE; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut out = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (u, ref mut i)) = work.last_mut() {
            if let Some(&(v, _)) = succ[u].get(*i) {
                *i += 1;
                if index[v] == NONE {
                    index[v] = next;
                    low[v] = next;
                    next += 1;
                    stack.push(v);
                    on_stack[v] = true;
                    work.push((v, 0));
                } else if on_stack[v] {
                    low[u] = low[u].min(index[v]);
                }
            } else {
                work.pop();
                if let Some(&(p, _)) = work.last() {
                    low[p] = low[p].min(low[u]);
                }
                if low[u] == index[u] {
                    let mut scc = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        scc.push(w);
                        if w == u {
                            break;
                        }
                    }
                    out.push(scc);
                }
            }
        }
    }
    out
}

/// The item a body belongs to.
#[derive(Clone, Copy)]
enum Owner<'a> {
    Func(&'a Func),
    Kernel(&'a Kernel),
    TaskItem(&'a TaskItem),
}

impl<'a> Owner<'a> {
    fn body(self) -> &'a Body {
        match self {
            Owner::Func(f) => &f.body,
            Owner::Kernel(k) => &k.body,
            Owner::TaskItem(t) => &t.body,
        }
    }
    fn describe(self) -> String {
        match self {
            Owner::Func(f) => format!("function @{}", f.name),
            Owner::Kernel(k) => format!("kernel @{}", k.name),
            Owner::TaskItem(t) => format!("task @{}", t.name),
        }
    }
}

/// What `break` and `continue` may do where a statement stands.
#[derive(Clone, Copy, PartialEq)]
enum LoopCx {
    /// Not in a loop.
    None,
    /// In the body of a `for` or `while`.
    Loop,
    /// Directly in the body of a parallel task: `continue` ends the
    /// iteration; `break` has no meaning, iterations run independently.
    Parallel,
}

/// Where a statement stands.
#[derive(Clone, Copy)]
struct Cx {
    loop_cx: LoopCx,
    depth: usize,
    /// The task (statement) the statement is in, if any.
    task: Option<Stmt>,
}

/// Sentinel position of a statement not reachable from the entry block.
const NOT_PLACED: u32 = u32::MAX;

struct BodyChecker<'a, 'd> {
    cx: &'a ModuleCx<'a>,
    owner: Owner<'a>,
    body: &'a Body,
    diags: &'d mut Vec<Diagnostic>,
    /// Pre-order position of each statement placed in the body.
    pos: Vec<u32>,
    /// The enclosing task statement of each placed statement.
    task_of: Vec<Option<Stmt>>,
    /// The placed statements in pre-order.
    order: Vec<Stmt>,
    visible: Vec<bool>,
    /// Values made visible, in order; blocks truncate it on exit.
    scope: Vec<Value>,
    /// Every definition: its name, its naming scope (see [`Self::scope`])
    /// and its pre-order rank; after `names`, sorted. Sorting short names
    /// beats hashing them for bodies of the usual size.
    defs: Vec<(&'a str, u32, u32, Value)>,
    /// Calls to functions, for the recursion and depth checks.
    calls: Vec<CallSite>,
    /// The deepest block level seen (see [`Nesting`]).
    deepest: u32,
}

impl crate::ir::TypeEnv for BodyChecker<'_, '_> {
    fn value_type(&self, v: Value) -> Option<Type> {
        self.body.values.get(v).map(|d| d.ty)
    }
    fn field_elem(&self, name: &str) -> Option<Scalar> {
        self.cx.field(name).map(|f| f.elem)
    }
    fn func_ret(&self, name: &str) -> Option<Option<Scalar>> {
        match self.cx.items.get(name) {
            Some(Item::Func(f)) => Some(f.ret),
            _ => None,
        }
    }
}

impl<'a, 'd> BodyChecker<'a, 'd> {
    /// Checks one body; returns its nesting and the calls it makes.
    fn run(cx: &'a ModuleCx<'a>, owner: Owner<'a>, diags: &'d mut Vec<Diagnostic>) -> Nesting {
        let body = owner.body();
        let mut ck = BodyChecker {
            cx,
            owner,
            body,
            diags,
            pos: vec![NOT_PLACED; body.stmts.len()],
            task_of: vec![None; body.stmts.len()],
            order: Vec::with_capacity(body.stmts.len()),
            visible: vec![false; body.values.len()],
            scope: Vec::new(),
            defs: Vec::with_capacity(body.values.len()),
            calls: Vec::new(),
            deepest: 0,
        };
        if !ck.structure() {
            return ck.nesting();
        }
        ck.names();
        for &p in &body.params {
            ck.visible[p.index()] = true;
        }
        match owner {
            Owner::Func(f) => {
                ck.block(body.entry, Cx { loop_cx: LoopCx::None, depth: 0, task: None });
                if f.ret.is_some() && !ends_with_ret(body, body.entry) {
                    ck.err(format!("function @{} must end with ret", f.name), f.span);
                }
            }
            Owner::Kernel(k) => {
                ck.kernel_top_level(k);
                ck.block(body.entry, Cx { loop_cx: LoopCx::None, depth: 0, task: None });
            }
            Owner::TaskItem(t) => {
                let parallel = ck.task_header(&t.kind, None, t.span);
                let loop_cx = if parallel { LoopCx::Parallel } else { LoopCx::None };
                for &v in t.kind.vars() {
                    ck.visible[v.index()] = true;
                }
                ck.block(body.entry, Cx { loop_cx, depth: 1, task: None });
            }
        }
        ck.nesting()
    }

    fn nesting(self) -> Nesting {
        let (name, what, span) = match self.owner {
            Owner::Func(f) => (f.name.clone(), "function", f.span),
            Owner::Kernel(k) => (k.name.clone(), "kernel", k.span),
            Owner::TaskItem(t) => (t.name.clone(), "task", t.span),
        };
        Nesting { name, what, span, deepest: self.deepest, calls: self.calls }
    }

    /// The level of a block checked in `cx` (see [`Nesting`]): a body's
    /// entry is checked at depth 0, a task item's at 1, and every nested
    /// block (a task's too) one deeper.
    fn level(cx: Cx) -> u32 {
        u32::try_from(cx.depth + 1).unwrap_or(u32::MAX)
    }

    fn err(&mut self, msg: impl Into<String>, span: Span) {
        self.diags.push(Diagnostic::error(msg, span));
    }

    fn owner_span(&self) -> Span {
        match self.owner {
            Owner::Func(f) => f.span,
            Owner::Kernel(k) => k.span,
            Owner::TaskItem(t) => t.span,
        }
    }

    /// Checks the arena structure and numbers the statements in pre-order.
    /// Returns false (after reporting) when the body cannot be walked
    /// safely.
    fn structure(&mut self) -> bool {
        let body = self.body;
        let owner = self.owner.describe();
        let span = self.owner_span();
        let nv = body.values.len();
        let nb = body.blocks.len();
        if body.entry.index() >= nb {
            self.err(format!("malformed IR: the entry block of {owner} is out of range"), span);
            return false;
        }
        if let Some(p) = body.params.iter().find(|p| p.index() >= nv) {
            self.err(format!("malformed IR: parameter value {} of {owner} is out of range", p.0), span);
            return false;
        }
        if let Owner::TaskItem(t) = self.owner {
            let mut bad = None;
            let header = StmtData { kind: StmtKind::Task { name: t.name.clone(), kind: t.kind.clone(), body: body.entry }, result: None, span };
            header.kind.for_each_value(|v| {
                if v.index() >= nv {
                    bad = Some(v)
                }
            });
            if let Some(v) = bad {
                self.err(format!("malformed IR: value {} in the header of {owner} is out of range", v.0), span);
                return false;
            }
        }
        let mut block_seen = vec![false; nb];
        block_seen[body.entry.index()] = true;
        // (block, next statement index, depth, enclosing task)
        let mut stack: Vec<(Block, usize, usize, Option<Stmt>)> = vec![(body.entry, 0, 0, None)];
        let mut next_pos = 0u32;
        while let Some(top) = stack.last_mut() {
            let (b, i, depth, task) = *top;
            let Some(&s) = body.blocks[b].get(i) else {
                stack.pop();
                continue;
            };
            top.1 += 1;
            let Some(sd) = body.stmts.get(s) else {
                self.err(format!("malformed IR: statement {} in {owner} is out of range", s.0), span);
                return false;
            };
            if self.pos[s.index()] != NOT_PLACED {
                self.err(format!("malformed IR: a statement of {owner} is placed twice"), sd.span);
                return false;
            }
            self.pos[s.index()] = next_pos;
            next_pos += 1;
            self.order.push(s);
            self.task_of[s.index()] = task;
            let mut bad = sd.result.filter(|r| r.index() >= nv);
            sd.kind.for_each_value(|v| {
                if v.index() >= nv {
                    bad = Some(v)
                }
            });
            if let Some(v) = bad {
                self.err(format!("malformed IR: value {} used in {owner} is out of range", v.0), sd.span);
                return false;
            }
            let children = sd.kind.child_blocks();
            let child_depth = if matches!(sd.kind, StmtKind::Task { .. }) { depth } else { depth + 1 };
            if children.clone().next().is_some() && child_depth > MAX_NESTING {
                self.err(format!("statements nested more than {MAX_NESTING} levels deep"), sd.span);
                return false;
            }
            let inner_task = if matches!(sd.kind, StmtKind::Task { .. }) { Some(s) } else { task };
            // Push in reverse so that children are visited in print order.
            for c in children.rev() {
                if c.index() >= nb || block_seen[c.index()] {
                    self.err(format!("malformed IR: a block of {owner} is out of range or shared"), sd.span);
                    return false;
                }
                block_seen[c.index()] = true;
                stack.push((c, 0, child_depth, inner_task));
            }
        }
        true
    }

    /// Checks that the definitions of placed statements agree with their
    /// values, and that no name is defined twice.
    fn names(&mut self) {
        let body = self.body;
        for &p in &body.params {
            self.define_name(p, 0);
        }
        for i in 0..self.order.len() {
            let s = self.order[i];
            let sd = body.stmt(s);
            let scope = self.scope_of(s);
            if let Some(r) = sd.result {
                if body.value(r).def != ValueDef::Result(s) {
                    self.err(
                        format!("malformed IR: value %{} does not name its defining statement", body.name(r)),
                        sd.span,
                    );
                }
                self.define_name(r, scope);
            }
            // A task's variables belong to the task.
            let var_scope = if matches!(sd.kind, StmtKind::Task { .. }) { s.0 + 1 } else { scope };
            let mut bound = Vec::new();
            sd.kind.for_each_bound_var(|v| bound.push(v));
            for (k, v) in bound.iter().enumerate() {
                if body.value(*v).def != ValueDef::LoopVar(s, k as u32) {
                    self.err(
                        format!("malformed IR: loop variable %{} does not name its loop", body.name(*v)),
                        sd.span,
                    );
                }
                self.define_name(*v, var_scope);
            }
        }
        if let Owner::TaskItem(t) = self.owner {
            for (k, &v) in t.kind.vars().iter().enumerate() {
                if !matches!(body.value(v).def, ValueDef::LoopVar(_, i) if i == k as u32) {
                    self.err(format!("malformed IR: %{} is not a loop variable of task @{}", body.name(v), t.name), t.span);
                }
                self.define_name(v, 0);
            }
        }
        self.duplicate_names();
    }

    /// The naming scope of the values a statement defines. Names are
    /// unique within a body, except that each task of a kernel is a scope
    /// of its own (tasks see no value of another task, and each becomes a
    /// body of its own in `split-tasks`): 0 for the body, `t + 1` inside
    /// task statement `t`. Scope 0 (parameters above all) clashes with
    /// every scope.
    fn scope_of(&self, s: Stmt) -> u32 {
        self.task_of[s.index()].map_or(0, |t| t.0 + 1)
    }

    fn define_name(&mut self, v: Value, scope: u32) {
        let rank = self.defs.len() as u32;
        self.defs.push((self.body.value(v).name.as_str(), scope, rank, v));
    }

    /// Reports every definition of a name after the first that it clashes
    /// with: any other in its scope, and any at all when the name is
    /// defined in scope 0.
    fn duplicate_names(&mut self) {
        self.defs.sort_unstable_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        let mut group_has_scope0 = false;
        for i in 0..self.defs.len() {
            let (name, scope, _, v) = self.defs[i];
            let prev = i.checked_sub(1).map(|j| self.defs[j]);
            let same_name = prev.is_some_and(|p| p.0 == name);
            if !same_name {
                group_has_scope0 = scope == 0;
                continue;
            }
            let clash = group_has_scope0 || prev.is_some_and(|p| p.1 == scope);
            if clash && prev.is_some_and(|p| p.3 != v) {
                self.err(format!("duplicate value name %{name}"), self.body.value(v).span);
            }
        }
    }

    /// A definition of `name`: the first in pre-order of the body scope if
    /// there is one, else of the first task that defines it.
    fn first_def(&self, name: &str) -> Option<Value> {
        let i = self.defs.partition_point(|d| d.0 < name);
        self.defs.get(i).filter(|d| d.0 == name).map(|d| d.3)
    }

    /// A kernel's top level holds tasks only, or no task at all.
    fn kernel_top_level(&mut self, k: &Kernel) {
        let body = self.body;
        let top = body.block(body.entry);
        let is_task = |s: &Stmt| matches!(body.stmt(*s).kind, StmtKind::Task { .. });
        // One error per kernel, at the first stray statement: the rest are
        // the same mistake.
        if top.iter().any(is_task) {
            if let Some(s) = top.iter().find(|s| !is_task(s)) {
                self.err(
                    format!("statement outside a task in kernel @{}, whose body holds tasks", k.name),
                    body.stmt(*s).span,
                );
            }
        }
    }

    fn block(&mut self, b: Block, cx: Cx) {
        self.deepest = self.deepest.max(Self::level(cx));
        let mark = self.scope.len();
        for &s in self.body.block(b) {
            self.stmt(s, cx);
        }
        for v in self.scope.drain(mark..) {
            self.visible[v.index()] = false;
        }
    }

    fn make_visible(&mut self, v: Value) {
        self.visible[v.index()] = true;
        self.scope.push(v);
    }

    /// A use of `v` by statement `s`: reports a use out of scope. Returns
    /// the type when it is known (not for undefined names, so that one
    /// mistake is not reported again as a type error).
    fn use_value(&mut self, v: Value, s: Stmt) -> Option<Type> {
        if self.visible[v.index()] {
            return Some(self.body.ty(v));
        }
        let body = self.body;
        let vd = body.value(v);
        let stmt_span = body.stmt(s).span;
        let name = &vd.name;
        let def_pos = |this: &Self, d: ValueDef| match d {
            ValueDef::Result(ds) | ValueDef::LoopVar(ds, _) => this.pos.get(ds.index()).copied(),
            _ => None,
        };
        match vd.def {
            ValueDef::Undefined => {
                // The parser keeps a use of a name it could not resolve; say
                // why if the name is defined somewhere else in the body.
                let msg = match self.first_def(name) {
                    None => format!("use of undefined value %{name}"),
                    Some(d) => self.out_of_scope(d, s),
                };
                self.err(msg, vd.span);
                return None;
            }
            ValueDef::Param(_) => {
                // Parameters are visible everywhere; not visible means it is
                // not one of this body's parameters.
                self.err(format!("malformed IR: %{name} is not a parameter of {}", self.owner.describe()), stmt_span);
            }
            d => match def_pos(self, d) {
                Some(p) if p != NOT_PLACED => {
                    let msg = self.out_of_scope(v, s);
                    self.err(msg, stmt_span);
                }
                _ => self.err(format!("value %{name} is used but its definition is not in the body"), stmt_span),
            },
        }
        Some(vd.ty)
    }

    /// The message for a use (by `s`) of defined value `d` out of scope.
    fn out_of_scope(&self, d: Value, s: Stmt) -> String {
        let body = self.body;
        let name = body.name(d);
        let (ds, is_loop_var) = match body.value(d).def {
            ValueDef::Result(ds) => (ds, false),
            ValueDef::LoopVar(ds, _) => (ds, true),
            _ => return format!("value %{name} is not visible here"),
        };
        let dpos = self.pos.get(ds.index()).copied().unwrap_or(NOT_PLACED);
        if dpos == NOT_PLACED {
            return format!("value %{name} is used but its definition is not in the body");
        }
        if dpos >= self.pos[s.index()] {
            return format!("value %{name} used before its definition");
        }
        let (dt, ut) = (self.task_of[ds.index()], self.task_of[s.index()]);
        let task_name = |t: Stmt| match &body.stmt(t).kind {
            StmtKind::Task { name, .. } => name.to_string(),
            _ => String::new(),
        };
        if is_loop_var && matches!(body.stmt(ds).kind, StmtKind::Task { .. }) && dt.is_none() {
            // The variable of a task header: only its body sees it.
            return match ut {
                Some(u) => format!(
                    "value %{name} is defined in task @{} and cannot be used in task @{}",
                    task_name(ds),
                    task_name(u)
                ),
                None => format!("loop variable %{name} used outside its task"),
            };
        }
        match (dt, ut) {
            (Some(a), Some(b)) if a != b => format!(
                "value %{name} is defined in task @{} and cannot be used in task @{}",
                task_name(a),
                task_name(b)
            ),
            _ if is_loop_var => format!("loop variable %{name} used outside its loop"),
            _ => format!("value %{name} used outside the block that defines it"),
        }
    }

    /// A use that must be a scalar (every use except the slot operand of
    /// `load %p` / `store %p, %v`).
    fn scalar(&mut self, v: Value, s: Stmt) -> Option<Scalar> {
        match self.use_value(v, s)? {
            Type::Scalar(t) => Some(t),
            Type::Slot(_) => {
                let span = self.body.stmt(s).span;
                self.err(format!("alloca slot %{} used as a scalar", self.body.name(v)), span);
                None
            }
        }
    }

    fn stmt(&mut self, s: Stmt, cx: Cx) {
        let kind = &self.body.stmt(s).kind;
        let (rule, ty) = match kind.defines() {
            Defines::IfCalleeReturns => {
                let StmtKind::Call(name, args, cspan) = kind else { unreachable!("only call depends on its callee") };
                self.call(name, args, *cspan, s, Self::level(cx))
            }
            Defines::Never if !matches!(kind, StmtKind::Store(..) | StmtKind::StoreSlot(..)) => {
                self.control(s, cx);
                (ResultRule::Forbidden, None)
            }
            defines => {
                // The result's type is the IR's rule, once the operands
                // are known to be well typed (no follow-on errors).
                let ty = if self.operand_types(s) { crate::ir::result_type(kind, &*self) } else { None };
                (ResultRule::from(defines), ty)
            }
        };
        self.result(s, rule, ty);
    }

    /// Checks the operand types of a statement without blocks that is not
    /// a call; true when its result's type follows from them.
    fn operand_types(&mut self, s: Stmt) -> bool {
        let body = self.body;
        let sd = body.stmt(s);
        let span = sd.span;
        let mut typed = false;
        match &sd.kind {
            StmtKind::Const(c) => {
                if !canonical(*c) {
                    self.err(format!("constant {} does not fit {}", c.bits as i64, c.ty), span);
                }
                typed = true;
            }
            StmtKind::Binary(op, a, b) => {
                let (ta, tb) = (self.scalar(*a, s), self.scalar(*b, s));
                if let (Some(ta), Some(tb)) = (ta, tb) {
                    if ta != tb {
                        self.err(format!("type mismatch: {} of {ta} and {tb}", op.keyword()), span);
                    } else if !op.accepts(ta) {
                        self.err(format!("{} does not accept operands of type {ta}", op.keyword()), span);
                    } else {
                        typed = true;
                    }
                }
            }
            StmtKind::Unary(op, a) => {
                if let Some(t) = self.scalar(*a, s) {
                    if op.accepts(t) {
                        typed = true;
                    } else {
                        self.err(format!("{} does not accept an operand of type {t}", op.keyword()), span);
                    }
                }
            }
            StmtKind::Cmp(op, a, b) => {
                let (ta, tb) = (self.scalar(*a, s), self.scalar(*b, s));
                if let (Some(ta), Some(tb)) = (ta, tb) {
                    if ta != tb {
                        self.err(format!("type mismatch: cmp {} of {ta} and {tb}", op.keyword()), span);
                    }
                }
                typed = true;
            }
            StmtKind::Cast(a, _) => {
                self.scalar(*a, s);
                typed = true;
            }
            StmtKind::Select(c, a, b) => {
                if let Some(tc) = self.scalar(*c, s) {
                    if tc != Scalar::I1 {
                        self.err(format!("select condition must be i1, found {tc}"), span);
                    }
                }
                let (ta, tb) = (self.scalar(*a, s), self.scalar(*b, s));
                if let (Some(ta), Some(tb)) = (ta, tb) {
                    if ta != tb {
                        self.err(format!("type mismatch: select of {ta} and {tb}"), span);
                    } else {
                        typed = true;
                    }
                }
            }
            StmtKind::Load(r) => {
                typed = self.field_ref(r, s).is_some();
            }
            StmtKind::Store(r, v) => {
                let elem = self.field_ref(r, s);
                let tv = self.scalar(*v, s);
                if let (Some(e), Some(t)) = (elem, tv) {
                    if e != t {
                        self.err(format!("type mismatch: store of {t} to field @{} of {e}", r.field), span);
                    }
                }
            }
            StmtKind::Atomic(op, r, v) => {
                let elem = self.field_ref(r, s);
                let tv = self.scalar(*v, s);
                if let Some(e) = elem {
                    if !op.accepts(e) {
                        self.err(format!("atomic {} does not accept field @{} of {e}", op.keyword(), r.field), span);
                    } else if let Some(t) = tv {
                        if e != t {
                            self.err(
                                format!("type mismatch: atomic {} of {t} on field @{} of {e}", op.keyword(), r.field),
                                span,
                            );
                        }
                    }
                    typed = true;
                }
            }
            StmtKind::Alloca(_) => typed = true,
            StmtKind::LoadSlot(p) => match self.use_value(*p, s) {
                Some(Type::Slot(_)) => typed = true,
                Some(Type::Scalar(_)) => {
                    self.err(format!("load from %{}, which is not an alloca slot", body.name(*p)), span)
                }
                None => {}
            },
            StmtKind::StoreSlot(p, v) => {
                let slot = match self.use_value(*p, s) {
                    Some(Type::Slot(t)) => Some(t),
                    Some(Type::Scalar(_)) => {
                        self.err(format!("store to %{}, which is not an alloca slot", body.name(*p)), span);
                        None
                    }
                    None => None,
                };
                if let (Some(e), Some(t)) = (slot, self.scalar(*v, s)) {
                    if e != t {
                        self.err(format!("type mismatch: store of {t} to slot %{} of {e}", body.name(*p)), span);
                    }
                }
            }
            _ => unreachable!("calls and statements with blocks are checked elsewhere"),
        }
        typed
    }

    /// Checks a statement that returns, branches or loops.
    fn control(&mut self, s: Stmt, cx: Cx) {
        let sd = self.body.stmt(s);
        let span = sd.span;
        match &sd.kind {
            StmtKind::Ret(v) => self.ret(*v, s, cx),
            StmtKind::If { cond, then_blk, else_blk } => {
                if let Some(t) = self.scalar(*cond, s) {
                    if t != Scalar::I1 {
                        self.err(format!("if condition must be i1, found {t}"), span);
                    }
                }
                let inner = Cx { depth: cx.depth + 1, ..cx };
                self.block(*then_blk, inner);
                if let Some(e) = else_blk {
                    self.block(*e, inner);
                }
            }
            StmtKind::For { var, lo, hi, body: b, .. } => {
                let vt = self.loop_var_type(*var, span);
                for bound in [lo, hi] {
                    match bound {
                        Bound::Field(name, fspan) => self.err(
                            format!("field bound @{name}[] is only allowed in a task header"),
                            *fspan,
                        ),
                        _ => self.bound(bound, vt, s, false),
                    }
                }
                self.enter_loop(&[*var], *b, Cx { loop_cx: LoopCx::Loop, depth: cx.depth + 1, task: cx.task });
            }
            StmtKind::While { body: b } => {
                self.block(*b, Cx { loop_cx: LoopCx::Loop, depth: cx.depth + 1, task: cx.task });
            }
            StmtKind::Break => match cx.loop_cx {
                LoopCx::Loop => {}
                LoopCx::None => self.err("break outside a loop", span),
                LoopCx::Parallel => self.err(
                    "break in the body of a parallel task: its iterations run independently (continue ends one)",
                    span,
                ),
            },
            StmtKind::Continue => {
                if cx.loop_cx == LoopCx::None {
                    self.err("continue outside a loop", span)
                }
            }
            StmtKind::Task { name, kind, body: b } => {
                let ok_place = matches!(self.owner, Owner::Kernel(_)) && cx.depth == 0;
                if !ok_place {
                    let place = match self.owner {
                        Owner::Kernel(_) => "is nested in a statement",
                        _ => "outside a kernel",
                    };
                    self.err(format!("task @{name} {place}; tasks only stand at the top level of a kernel"), span);
                }
                let parallel = self.task_header(kind, Some(s), span);
                let loop_cx = if parallel { LoopCx::Parallel } else { LoopCx::None };
                self.enter_loop(kind.vars(), *b, Cx { loop_cx, depth: cx.depth + 1, task: Some(s) });
            }
            StmtKind::Launch(name) => self.launch(name, span),
            _ => unreachable!("simple statements are checked by operand_types"),
        }
    }

    /// Makes loop variables visible in a loop or task body only.
    fn enter_loop(&mut self, vars: &[Value], b: Block, cx: Cx) {
        let mark = self.scope.len();
        for &v in vars {
            self.make_visible(v);
        }
        self.block(b, cx);
        for v in self.scope.drain(mark..) {
            self.visible[v.index()] = false;
        }
    }

    /// Checks the result of a statement against what it computes, and
    /// brings it into scope.
    fn result(&mut self, s: Stmt, rule: ResultRule, ty: Option<Type>) {
        let sd = self.body.stmt(s);
        match (sd.result, rule) {
            (None, ResultRule::Required) => {
                self.err("malformed IR: this statement must define a value", sd.span)
            }
            (Some(r), ResultRule::Forbidden) => {
                self.err(format!("this statement defines no value, but is named %{}", self.body.name(r)), sd.span)
            }
            (Some(r), _) => {
                let vd = self.body.value(r);
                if let Some(t) = ty {
                    if t != vd.ty {
                        self.err(
                            format!("malformed IR: %{} has type {} but its statement gives {t}", vd.name, vd.ty),
                            vd.span,
                        );
                    }
                }
                self.make_visible(r);
            }
            (None, _) => {}
        }
    }

    /// The element type of a field reference, after checking the field,
    /// the rank and the index types.
    fn field_ref(&mut self, r: &FieldRef, s: Stmt) -> Option<Scalar> {
        for &i in &r.indices {
            match self.scalar(i, s) {
                Some(Scalar::I32 | Scalar::I64) | None => {}
                Some(t) => self.err(format!("field index must be i32 or i64, found {t}"), r.span),
            }
        }
        let Some(f) = self.cx.field(&r.field) else {
            self.unknown(&r.field, "field", r.span);
            return None;
        };
        if f.shape.len() != r.indices.len() {
            let n = r.indices.len();
            self.err(
                format!(
                    "field @{} has rank {} but is indexed with {}",
                    f.name,
                    f.shape.len(),
                    plural(n, "index", "indices")
                ),
                r.span,
            );
        }
        Some(f.elem)
    }

    /// `unknown field @q`, or what the name is if it is another item.
    fn unknown(&mut self, name: &str, what: &str, span: Span) {
        let msg = match self.cx.items.get(name) {
            Some(it) => format!("@{name} is {}, not a {what}", item_kind(it)),
            None => format!("unknown {what} @{name}"),
        };
        self.err(msg, span);
    }

    fn call(&mut self, name: &Name, args: &[Value], cspan: Span, s: Stmt, level: u32) -> (ResultRule, Option<Type>) {
        // Every argument is checked first (in order, as its errors come
        // first); short lists, the usual case, need no allocation.
        let mut short = [None; 8];
        let long: Vec<Option<Scalar>>;
        let arg_types: &[Option<Scalar>] = if args.len() <= short.len() {
            for (t, &a) in short.iter_mut().zip(args) {
                *t = self.scalar(a, s);
            }
            &short[..args.len()]
        } else {
            long = args.iter().map(|&a| self.scalar(a, s)).collect();
            &long
        };
        let f = match self.cx.items.get(name.as_str()) {
            Some(Item::Func(f)) => f,
            _ => {
                self.unknown(name, "function", cspan);
                return (ResultRule::Optional, None);
            }
        };
        self.calls.push(CallSite { callee: name.clone(), span: cspan, level });
        if args.len() != f.params.len() {
            self.err(
                format!(
                    "call to @{name} with {}, expected {}",
                    plural(args.len(), "argument", "arguments"),
                    f.params.len()
                ),
                cspan,
            );
        } else {
            for (i, (t, p)) in arg_types.iter().zip(&f.params).enumerate() {
                if let Some(t) = t {
                    if *t != p.ty {
                        self.err(
                            format!("argument {} of call to @{name} has type {t}, expected {}", i + 1, p.ty),
                            cspan,
                        );
                    }
                }
            }
        }
        match f.ret {
            // A returned value may be dropped.
            Some(r) => (ResultRule::Optional, Some(Type::Scalar(r))),
            None => {
                if let Some(r) = self.body.stmt(s).result {
                    self.err(
                        format!("@{name} returns no value, but its call is named %{}", self.body.name(r)),
                        cspan,
                    );
                }
                (ResultRule::Optional, None)
            }
        }
    }

    fn ret(&mut self, v: Option<Value>, s: Stmt, cx: Cx) {
        let span = self.body.stmt(s).span;
        let ty = v.and_then(|v| self.scalar(v, s));
        if cx.task.is_some() || matches!(self.owner, Owner::TaskItem(_)) {
            self.err("ret inside a task: a task runs to the end of its body", span);
            return;
        }
        match self.owner {
            Owner::Func(f) => match (f.ret, v) {
                (Some(r), Some(_)) => {
                    if let Some(t) = ty {
                        if t != r {
                            self.err(format!("ret of {t} in function @{} returning {r}", f.name), span);
                        }
                    }
                }
                (Some(r), None) => self.err(format!("ret without a value in function @{} returning {r}", f.name), span),
                (None, Some(_)) => {
                    self.err(format!("ret with a value in function @{}, which returns nothing", f.name), span)
                }
                (None, None) => {}
            },
            // A plain `ret` ends the kernel early.
            Owner::Kernel(_) => {
                if v.is_some() {
                    self.err("ret with a value in a kernel", span);
                }
            }
            // Reported above: a task runs to its end.
            Owner::TaskItem(_) => {}
        }
    }

    /// The type of a `for` or task variable, which must be i32 or i64.
    fn loop_var_type(&mut self, var: Value, span: Span) -> Option<Scalar> {
        let vd = self.body.value(var);
        match vd.ty {
            Type::Scalar(t @ (Scalar::I32 | Scalar::I64)) => Some(t),
            t => {
                self.err(format!("loop variable %{} must be i32 or i64, found {t}", vd.name), span);
                None
            }
        }
    }

    /// A bound of a `for` or a `range_for` task. In a task header a value
    /// bound must be a parameter (the header is evaluated at launch, before
    /// any statement of the kernel runs).
    fn bound(&mut self, b: &Bound, var_ty: Option<Scalar>, s: Stmt, header: bool) {
        let span = self.body.stmt(s).span;
        match b {
            Bound::Const(c) => {
                if let Some(t) = var_ty {
                    if !int_fits(*c, t) {
                        self.err(format!("loop bound {c} does not fit {t}"), span);
                    }
                }
            }
            Bound::Value(v) => {
                if header && !matches!(self.body.value(*v).def, ValueDef::Param(_)) {
                    self.err(
                        format!(
                            "range_for bound %{} must be a constant, a kernel parameter or a 0-D integer field",
                            self.body.name(*v)
                        ),
                        span,
                    );
                    return;
                }
                let t = self.scalar(*v, s);
                if let (Some(t), Some(vt)) = (t, var_ty) {
                    if t != vt {
                        self.err(
                            format!("loop bound %{} has type {t}, but the loop variable is {vt}", self.body.name(*v)),
                            span,
                        );
                    }
                }
            }
            Bound::Field(name, fspan) => {
                let Some(f) = self.cx.field(name) else {
                    self.unknown(name, "field", *fspan);
                    return;
                };
                if !f.shape.is_empty() {
                    self.err(
                        format!("range_for bound @{name} must be a 0-D field, but has rank {}", f.shape.len()),
                        *fspan,
                    );
                } else if let Some(vt) = var_ty {
                    if f.elem != vt {
                        self.err(
                            format!("range_for bound @{name} is a field of {}, but the loop variable is {vt}", f.elem),
                            *fspan,
                        );
                    }
                }
            }
        }
    }

    /// Checks a task header (of a task statement `s`, or of a task item).
    /// Returns whether the task is parallel.
    fn task_header(&mut self, kind: &TaskKind, s: Option<Stmt>, span: Span) -> bool {
        match kind {
            TaskKind::Serial => false,
            TaskKind::RangeFor { var, lo, hi, block_dim } => {
                let vt = self.loop_var_type(*var, span);
                if let Some(s) = s {
                    self.bound(lo, vt, s, true);
                    self.bound(hi, vt, s, true);
                } else {
                    self.item_bounds(lo, hi, vt, span);
                }
                if *block_dim == 0 {
                    self.err("block_dim must be at least 1", span);
                }
                true
            }
            TaskKind::StructFor { vars, field, field_span, block_dim } => {
                for &v in vars {
                    self.loop_var_type(v, span);
                }
                match self.cx.field(field) {
                    None => self.unknown(field, "field", *field_span),
                    Some(f) => {
                        if f.shape.is_empty() {
                            self.err(format!("struct_for over 0-D field @{field}: it has no index space"), *field_span);
                        } else if f.shape.len() != vars.len() {
                            self.err(
                                format!(
                                    "struct_for binds {} but field @{field} has rank {}",
                                    plural(vars.len(), "variable", "variables"),
                                    f.shape.len()
                                ),
                                *field_span,
                            );
                        }
                    }
                }
                if *block_dim == 0 {
                    self.err("block_dim must be at least 1", span);
                }
                true
            }
        }
    }

    /// The bounds of a task item: parameters are visible, nothing else is;
    /// there is no statement to attribute a use to, so checks are direct.
    fn item_bounds(&mut self, lo: &Bound, hi: &Bound, vt: Option<Scalar>, span: Span) {
        for b in [lo, hi] {
            match b {
                Bound::Value(v) => {
                    let vd = self.body.value(*v);
                    if let ValueDef::Undefined = vd.def {
                        self.err(format!("use of undefined value %{}", vd.name), vd.span);
                    } else if !self.body.params.contains(v) {
                        self.err(
                            format!(
                                "range_for bound %{} must be a constant, a kernel parameter or a 0-D integer field",
                                vd.name
                            ),
                            span,
                        );
                    } else if let (Type::Scalar(t), Some(vt)) = (vd.ty, vt) {
                        if t != vt {
                            self.err(
                                format!("loop bound %{} has type {t}, but the loop variable is {vt}", vd.name),
                                span,
                            );
                        }
                    }
                }
                Bound::Const(c) => {
                    if let Some(t) = vt {
                        if !int_fits(*c, t) {
                            self.err(format!("loop bound {c} does not fit {t}"), span);
                        }
                    }
                }
                Bound::Field(name, fspan) => match self.cx.field(name) {
                    None => self.unknown(name, "field", *fspan),
                    Some(f) if !f.shape.is_empty() => self.err(
                        format!("range_for bound @{name} must be a 0-D field, but has rank {}", f.shape.len()),
                        *fspan,
                    ),
                    Some(f) => {
                        if let Some(vt) = vt {
                            if f.elem != vt {
                                self.err(
                                    format!(
                                        "range_for bound @{name} is a field of {}, but the loop variable is {vt}",
                                        f.elem
                                    ),
                                    *fspan,
                                );
                            }
                        }
                    }
                },
            }
        }
    }

    /// `launch @t`: only in a kernel, naming a task item whose parameters
    /// the kernel provides (by name and type).
    fn launch(&mut self, name: &str, span: Span) {
        let Owner::Kernel(k) = self.owner else {
            self.err(format!("launch @{name} outside a kernel"), span);
            return;
        };
        let Some(t) = self.cx.task_item(name) else {
            let msg = match self.cx.items.get(name) {
                Some(it) => format!("launch of @{name}, which is {}, not a task", item_kind(it)),
                None => format!("launch of unknown task @{name}"),
            };
            self.err(msg, span);
            return;
        };
        for (p, &v) in t.params.iter().zip(&t.body.params) {
            let Some(pname) = t.body.values.get(v).map(|d| d.name.as_str()) else { continue };
            let found = k.body.params.iter().zip(&k.params).find(|(kv, _)| {
                k.body.values.get(**kv).is_some_and(|d| d.name == pname)
            });
            match found {
                None => self.err(
                    format!("launch @{name}: the task reads parameter %{pname}, which kernel @{} does not have", k.name),
                    span,
                ),
                Some((_, kp)) if kp.ty != p.ty => self.err(
                    format!(
                        "launch @{name}: the task's parameter %{pname} is {}, but kernel @{}'s is {}",
                        p.ty, k.name, kp.ty
                    ),
                    span,
                ),
                Some(_) => {}
            }
        }
    }
}

/// Whether a statement defines a value.
#[derive(Clone, Copy)]
enum ResultRule {
    Required,
    Optional,
    Forbidden,
}

impl From<Defines> for ResultRule {
    fn from(d: Defines) -> ResultRule {
        match d {
            Defines::Always => ResultRule::Required,
            Defines::Optional | Defines::IfCalleeReturns => ResultRule::Optional,
            Defines::Never => ResultRule::Forbidden,
        }
    }
}

fn item_kind(it: &Item) -> &'static str {
    match it {
        Item::Field(_) => "a field",
        Item::Func(_) => "a function",
        Item::Kernel(_) => "a kernel",
        Item::Task(_) => "a task",
    }
}

/// Whether a block ends in `ret` on every path: its last statement is a
/// `ret`, or an `if` with an `else` whose two branches both end in `ret`.
/// This simple rule is the documented one: a function that returns a value
/// from inside a loop must still end with `ret`.
fn ends_with_ret(body: &Body, b: Block) -> bool {
    // Recursion is bounded: `structure` rejected nesting deeper than
    // MAX_NESTING before this runs.
    match body.block(b).last().map(|&s| &body.stmt(s).kind) {
        Some(StmtKind::Ret(_)) => true,
        Some(StmtKind::If { then_blk, else_blk: Some(e), .. }) => ends_with_ret(body, *then_blk) && ends_with_ret(body, *e),
        _ => false,
    }
}

