//! Checking one body: the walk over its blocks in order, with the loop
//! context and depth each statement stands in.
//!
//! Owns: [`BodyChecker::run`], the order of a body's checks (structure,
//! names, then the statements), and entering blocks and loops.
//!
//! Must never: check a statement's own rules (`typing`, `control`).

use super::*;

impl<'a, 'd> BodyChecker<'a, 'd> {
    /// Checks one body; returns its nesting and the calls it makes.
    pub(super) fn run(cx: &'a ModuleCx<'a>, owner: Owner<'a>, diags: &'d mut Vec<Diagnostic>) -> Nesting {
        let body = owner.body();
        let mut ck = BodyChecker {
            cx,
            owner,
            body,
            diags,
            pos: SecondaryMap::for_arena(body.stmts(), NOT_PLACED),
            task_of: SecondaryMap::for_arena(body.stmts(), None),
            order: Vec::with_capacity(body.stmts().len()),
            visible: EntitySet::new(),
            poisoned: EntitySet::new(),
            scope: Vec::new(),
            defs: Vec::with_capacity(body.values().len()),
            calls: Vec::new(),
            deepest: 0,
            operands: std::cell::RefCell::new(None),
        };
        if !ck.structure() {
            return ck.nesting();
        }
        ck.names();
        for &p in &body.params {
            ck.visible.insert(p);
        }
        // The entry block's context: a task item's body is its task's top
        // level (one deeper, parallel when the task is).
        let top = Cx { loop_cx: LoopCx::None, depth: 0, task: None };
        let entry_cx = match owner {
            Owner::Func(_) => top,
            Owner::Kernel(k) => {
                ck.kernel_top_level(k);
                top
            }
            Owner::TaskItem(t) => {
                let parallel = ck.task_header(&t.kind, None, t.span);
                for &v in t.kind.vars() {
                    ck.visible.insert(v);
                }
                let loop_cx = if parallel { LoopCx::Parallel } else { LoopCx::None };
                Cx { loop_cx, depth: 1, task: None }
            }
        };
        ck.block(body.entry, entry_cx);
        if let Owner::Func(f) = owner {
            if f.ret.is_some() && !ends_with_ret(body, body.entry) {
                // A statement after a `ret` is the usual slip: point at it.
                let entry = body.block(body.entry);
                let ret = entry.iter().position(|&s| matches!(body.stmt(s).kind, StmtKind::Ret(_)));
                match ret.and_then(|i| Some((entry[i], *entry.get(i + 1)?))) {
                    Some((r, after)) => ck.diags.push(
                        Diagnostic::error(
                            format!("statement after `ret` in function @{}: it never runs, and the function must end with `ret`", f.name),
                            body.stmt(after).span,
                        )
                        .with_note_at("the function returns here", body.stmt(r).span),
                    ),
                    None => ck.err(format!("function @{} must end with ret", f.name), f.span),
                }
            }
        }
        ck.nesting()
    }

    pub(super) fn nesting(self) -> Nesting {
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
    pub(super) fn level(cx: Cx) -> u32 {
        u32::try_from(cx.depth + 1).unwrap_or(u32::MAX)
    }

    pub(super) fn err(&mut self, msg: impl Into<String>, span: Span) {
        self.diags.push(Diagnostic::error(msg, span));
    }

    pub(super) fn owner_span(&self) -> Span {
        match self.owner {
            Owner::Func(f) => f.span,
            Owner::Kernel(k) => k.span,
            Owner::TaskItem(t) => t.span,
        }
    }

    /// A kernel's top level holds tasks only, or no task at all.
    pub(super) fn kernel_top_level(&mut self, k: &Kernel) {
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

    pub(super) fn block(&mut self, b: Block, cx: Cx) {
        self.deepest = self.deepest.max(Self::level(cx));
        let mark = self.scope.len();
        for &s in self.body.block(b) {
            self.stmt(s, cx);
        }
        for v in self.scope.drain(mark..) {
            self.visible.remove(v);
        }
    }

    /// Makes loop variables visible in a loop or task body only.
    pub(super) fn enter_loop(&mut self, vars: &[Value], b: Block, cx: Cx) {
        let mark = self.scope.len();
        for &v in vars {
            self.make_visible(v);
        }
        self.block(b, cx);
        for v in self.scope.drain(mark..) {
            self.visible.remove(v);
        }
    }
}
