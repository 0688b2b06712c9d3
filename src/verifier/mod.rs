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
//! An error about one operand points at that operand, where the body's
//! side table says it was written ([`Body::operand_span`]); in IR a pass
//! made, at the statement. A use of an undefined name points at the name,
//! which the parser keeps as a [`ValueDef::Undefined`] value with the span
//! of the use. A value whose type an error left unknown is poisoned: its
//! uses report no further type error.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::*;
use rustc_hash::FxHashMap as FxMap;
use std::collections::HashMap;
use std::sync::Arc;

mod body;
mod calls;
mod control;
mod items;
mod scope;
mod structure;
mod typing;

use calls::{check_call_depth, check_recursion, tarjan};
use items::{canonical, check_field, check_params, int_fits};

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

pub use crate::ir::MAX_RANK;

/// Checks a stream: every module on its own, `launch` targets across the
/// stream, and that fields of one name agree across modules. Reports every
/// error found, in source order.
pub fn verify(stream: &Stream) -> Result<(), Diagnostics> {
    let mut diags = Vec::new();
    let mut module_names = HashMap::new();
    let index = Arc::new(StreamIndex::new(stream));
    for m in &stream.modules {
        check_module_name(stream, m, &mut module_names, &mut diags);
        check_module(m, Some(index.clone()), &mut diags);
    }
    check_fields_agree(stream, &mut diags);
    finish(diags)
}

/// A module of a stream must have a name that no earlier module has (an
/// unnamed module is only allowed alone).
fn check_module_name<'a>(stream: &Stream, m: &'a Module, seen: &mut HashMap<&'a str, ()>, diags: &mut Vec<Diagnostic>) {
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
    /// Where `launch` looks for task items: the whole stream (indexed once
    /// for all its modules), or the module.
    stream: Option<Arc<StreamIndex<'a>>>,
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
        match &self.stream {
            Some(s) => s.task(name).map(|(_, t)| t),
            None => self.module.task(name),
        }
    }
}

fn check_module<'a>(m: &'a Module, stream: Option<Arc<StreamIndex<'a>>>, diags: &mut Vec<Diagnostic>) {
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
    fn new(m: &'a Module, stream: Option<Arc<StreamIndex<'a>>>, diags: &mut Vec<Diagnostic>) -> Self {
        let mut items: FxMap<&str, &Item> = FxMap::with_capacity_and_hasher(m.items.len(), Default::default());
        for it in &m.items {
            match items.get(it.name()) {
                Some(first) => diags.push(duplicate_item(it.name(), it.span(), first.span())),
                None => {
                    items.insert(it.name(), it);
                }
            }
        }
        ModuleCx { module: m, stream, items }
    }
}

/// `duplicate item @x` at `span`, with a note at the first definition.
fn duplicate_item(name: &str, span: Span, first: Span) -> Diagnostic {
    Diagnostic::error(format!("duplicate item @{name}"), span).with_note_at(PREVIOUS_DEFINITION, first)
}

/// The note at the first of two definitions of one name.
const PREVIOUS_DEFINITION: &str = "previous definition is here";

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
            for &s in k.body.blocks().get(k.body.entry).map(Vec::as_slice).unwrap_or(&[]) {
                if let Some(StmtData { kind: StmtKind::Task { name, .. }, span, .. }) = k.body.stmts().get(s) {
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
    /// The task statements' names so far, with their spans.
    task_names: HashMap<Name, Span>,
    /// Every body's nesting, in source order.
    bodies: Vec<Nesting>,
}

impl ModuleWide {
    /// Takes the facts of the module's next item (in source order).
    fn add(&mut self, cx: &ModuleCx<'_>, facts: ItemFacts, diags: &mut Vec<Diagnostic>) {
        // Task statements are named like items (`launch` and the cache
        // refer to them by name), so their names share the items' namespace.
        for (name, span) in facts.task_stmts {
            let first = match cx.items.get(name.as_str()) {
                Some(it) => Some(it.span()),
                None => self.task_names.get(&name).copied(),
            };
            match first {
                Some(first) => diags.push(duplicate_item(&name, span, first)),
                None => {
                    self.task_names.insert(name, span);
                }
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
        let index = Arc::new(StreamIndex::new(signatures));
        let modules = signatures
            .modules
            .iter()
            .map(|m| {
                check_module_name(signatures, m, &mut module_names, &mut diags);
                ModuleCx::new(m, Some(index.clone()), &mut diags)
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

/// A statement, its operand count and each value's first operand index.
type OperandIndex = (Stmt, usize, std::collections::HashMap<Value, usize>);

struct BodyChecker<'a, 'd> {
    cx: &'a ModuleCx<'a>,
    owner: Owner<'a>,
    body: &'a Body,
    diags: &'d mut Vec<Diagnostic>,
    /// Pre-order position of each statement placed in the body.
    pos: SecondaryMap<Stmt, u32>,
    /// The enclosing task statement of each placed statement.
    task_of: SecondaryMap<Stmt, Option<Stmt>>,
    /// The placed statements in pre-order.
    order: Vec<Stmt>,
    visible: EntitySet<Value>,
    /// Values whose type is unknown because of an error already reported
    /// (a result of ill-typed operands): uses of them report no type error.
    poisoned: EntitySet<Value>,
    /// Values made visible, in order; blocks truncate it on exit.
    scope: Vec<Value>,
    /// Every definition: its name, its naming scope (see [`Self::scope`])
    /// and its pre-order rank; after `names`, sorted. Sorting short names
    /// beats hashing them for bodies of the usual size.
    defs: Vec<(&'a str, Option<Stmt>, u32, Value)>,
    /// Calls to functions, for the recursion and depth checks.
    calls: Vec<CallSite>,
    /// The deepest block level seen (see [`Nesting`]).
    deepest: u32,
    /// The operands of the last statement an error was placed in: its
    /// operand count and each value's first operand index, so that errors
    /// at many operands of one statement (a call with thousands of
    /// arguments) cost one walk of its operands, not one each.
    operands: std::cell::RefCell<Option<OperandIndex>>,
}

impl crate::ir::TypeEnv for BodyChecker<'_, '_> {
    fn value_type(&self, v: Value) -> Option<Type> {
        self.body.values().get(v).map(|d| d.ty)
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
        Some(StmtKind::If { then_blk, else_blk: Some(e), .. }) => {
            ends_with_ret(body, *then_blk) && ends_with_ret(body, *e)
        }
        _ => false,
    }
}
