//! Helpers the passes share: operand rewriting, use counts, fresh names,
//! and a walk over every body of a stream.
//!
//! Owns: the small mechanics of editing a [`Body`] in place that more than
//! one pass needs.
//!
//! Must never: decide what a pass does; these helpers only carry out edits.

use crate::ir::*;
use rustc_hash::{FxHashMap, FxHashSet};

pub use crate::ir::operands_mut;

/// Follows a substitution map to its end (`a -> b -> c` gives `c`).
pub fn resolve(subst: &FxHashMap<Value, Value>, mut v: Value) -> Value {
    // Chains are short and acyclic by construction (a value is only ever
    // replaced by one defined before it).
    while let Some(&w) = subst.get(&v) {
        v = w;
    }
    v
}

/// Rewrites the operands of one statement through `subst`.
pub fn substitute(body: &mut Body, s: Stmt, subst: &FxHashMap<Value, Value>) {
    if subst.is_empty() {
        return;
    }
    operands_mut(&mut body[s].kind, &mut |v| *v = resolve(subst, *v));
}

/// Rewrites the operands of every statement reachable from `b` (nested
/// blocks included) through `subst`.
pub fn substitute_in_block(body: &mut Body, b: Block, subst: &FxHashMap<Value, Value>) {
    if subst.is_empty() {
        return;
    }
    for s in reachable_from(body, b) {
        substitute(body, s, subst);
    }
}

/// Every statement reachable from `b`, in print order.
pub fn reachable_from(body: &Body, b: Block) -> Vec<Stmt> {
    let mut out = Vec::new();
    body.walk(b, &mut |s| out.push(s));
    out
}

/// How many times each value is read by statements reachable from the
/// entry block.
pub fn use_counts(body: &Body) -> SecondaryMap<Value, u32> {
    let mut uses = SecondaryMap::for_arena(body.values(), 0);
    body.walk(body.entry, &mut |s| {
        for v in body.operands(s) {
            if let Some(n) = uses.get_mut(v) {
                *n += 1;
            }
        }
    });
    uses
}

/// Whether a `break` or `continue` in `b` (or in an `if` nested in it, but
/// not in a nested loop) targets the loop whose body `b` is.
pub fn has_loop_exit(body: &Body, b: Block) -> bool {
    body.block(b).iter().any(|&s| match &body.stmt(s).kind {
        StmtKind::Break | StmtKind::Continue => true,
        StmtKind::If { then_blk, else_blk, .. } => {
            has_loop_exit(body, *then_blk) || else_blk.is_some_and(|e| has_loop_exit(body, e))
        }
        _ => false,
    })
}

/// The slots (`alloca` results) stored to by `s` or any statement nested
/// in it.
pub fn slots_stored_in(body: &Body, s: Stmt, out: &mut FxHashSet<Value>) {
    let mut visit = |s: Stmt| {
        if let StmtKind::StoreSlot(p, _) = body.stmt(s).kind {
            out.insert(p);
        }
    };
    visit(s);
    for c in body.child_blocks(s) {
        body.walk(c, &mut visit);
    }
}

/// Makes names that do not clash with a set of taken names (the values of
/// a body, or a module's items). Each numbered prefix keeps the next number
/// to try: names are only ever taken, never freed, so the numbers before it
/// are all taken and a search resumes there, which keeps making `n` names
/// of one prefix linear in `n`.
#[derive(Default)]
pub struct NameGen {
    taken: FxHashSet<Name>,
    /// The next number to try for each prefix and first number.
    next: FxHashMap<(Name, u32), u32>,
}

impl NameGen {
    /// Names that clash with no value of `body`.
    pub fn new(body: &Body) -> NameGen {
        NameGen::with_taken(body.values().iter().map(|v| v.name.clone()))
    }
    /// Names that clash with none of `taken`.
    pub fn with_taken(taken: impl IntoIterator<Item = Name>) -> NameGen {
        NameGen { taken: taken.into_iter().collect(), next: FxHashMap::default() }
    }
    /// Whether `name` is taken.
    pub fn is_taken(&self, name: &str) -> bool {
        self.taken.contains(name)
    }
    /// Takes `name`; whether it was free.
    pub fn take(&mut self, name: Name) -> bool {
        self.taken.insert(name)
    }
    /// `base` if it is free, else `base.1`, `base.2`, ...
    pub fn fresh(&mut self, base: &str) -> Name {
        if self.taken.insert(Name::from(base)) {
            return Name::from(base);
        }
        self.numbered(&format!("{base}."), 1)
    }
    /// The first free `<prefix><n>` for `n` counting from `first`.
    pub fn numbered(&mut self, prefix: &str, first: u32) -> Name {
        let next = self.next.entry((Name::from(prefix), first)).or_insert(first);
        let mut n = *next;
        loop {
            let cand = compact_str::format_compact!("{prefix}{n}");
            n += 1;
            if self.taken.insert(cand.clone()) {
                *next = n;
                return cand;
            }
        }
    }
}

/// How many values of a body carry each name, and the names to rename a
/// shared one to (see [`unshare_name`]).
pub struct NameCounts {
    counts: FxHashMap<Name, u32>,
    names: NameGen,
}

/// Gives a value a name no other value of the body has, if its name is
/// shared (used after code moves between scopes).
pub fn unshare_name(body: &mut Body, v: Value, counts: &mut NameCounts) {
    let name = body.value(v).name.clone();
    if counts.counts.get(&name).copied().unwrap_or(0) <= 1 {
        return;
    }
    let fresh = counts.names.numbered(&format!("{name}."), 1);
    *counts.counts.get_mut(&name).expect("counted above") -= 1;
    counts.counts.insert(fresh.clone(), 1);
    body[v].name = fresh;
}

/// How many values of a body carry each name.
pub fn name_counts(body: &Body) -> NameCounts {
    let mut counts = FxHashMap::default();
    for v in body.values() {
        *counts.entry(v.name.clone()).or_insert(0) += 1;
    }
    let names = NameGen::with_taken(counts.keys().cloned());
    NameCounts { counts, names }
}

/// The shapes of a module's fields, by name.
pub fn field_shapes(m: &Module) -> FxHashMap<Name, Vec<u64>> {
    m.fields().map(|f| (f.name.clone(), f.shape.clone())).collect()
}

/// Calls `f` on every body of every module (functions, kernels, task
/// items), with the shapes of that module's fields.
pub fn for_each_body(stream: &mut Stream, mut f: impl FnMut(&mut Body, &FxHashMap<Name, Vec<u64>>)) {
    for m in &mut stream.modules {
        let shapes = field_shapes(m);
        for it in &mut m.items {
            match it {
                Item::Field(_) => {}
                Item::Func(x) => f(&mut std::sync::Arc::make_mut(x).body, &shapes),
                Item::Kernel(x) => f(&mut x.body, &shapes),
                Item::Task(x) => f(&mut x.body, &shapes),
            }
        }
    }
}
