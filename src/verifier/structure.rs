//! The arena structure of a body and its names.
//!
//! Owns: the first pass over a body (indices in range, each block and
//! statement placed once, nesting bounded, statements numbered in
//! pre-order) and the naming rules (definitions agree with their values,
//! no name defined twice in one scope).
//!
//! Must never: index the arenas before `structure` has said they are
//! sound.

use super::*;

impl<'a, 'd> BodyChecker<'a, 'd> {
    /// Checks the arena structure and numbers the statements in pre-order.
    /// Returns false (after reporting) when the body cannot be walked
    /// safely.
    pub(super) fn structure(&mut self) -> bool {
        match self.roots().and_then(|()| self.walk()) {
            Ok(()) => true,
            Err((msg, span)) => {
                self.err(msg, span);
                false
            }
        }
    }

    /// Checks that the entry block, the parameters and a task item's
    /// header name nothing out of range.
    fn roots(&self) -> Result<(), Malformed> {
        let body = self.body;
        let (owner, span) = (self.owner.describe(), self.owner_span());
        if body.blocks().get(body.entry).is_none() {
            return Err((format!("malformed IR: the entry block of {owner} is out of range"), span));
        }
        if let Some(p) = body.params.iter().find(|&&p| body.values().get(p).is_none()) {
            return Err((format!("malformed IR: parameter value {p} of {owner} is out of range"), span));
        }
        if let Owner::TaskItem(t) = self.owner {
            let header = StmtKind::Task { name: t.name.clone(), kind: t.kind.clone(), body: body.entry };
            if let Some(v) = out_of_range(&header, None, body.values()) {
                return Err((format!("malformed IR: value {v} in the header of {owner} is out of range"), span));
            }
        }
        Ok(())
    }

    /// Walks the blocks from the entry, placing each statement in
    /// pre-order ([`Self::place`]): each block reached once, nesting
    /// bounded by [`MAX_NESTING`].
    fn walk(&mut self) -> Result<(), Malformed> {
        let body = self.body;
        let mut block_seen = EntitySet::new();
        block_seen.insert(body.entry);
        // (block, next statement index, depth, enclosing task)
        let mut stack: Vec<(Block, usize, usize, Option<Stmt>)> = vec![(body.entry, 0, 0, None)];
        while let Some(top) = stack.last_mut() {
            let (b, i, depth, task) = *top;
            let Some(&s) = body[b].get(i) else {
                stack.pop();
                continue;
            };
            top.1 += 1;
            let sd = self.place(s, task)?;
            // A task's body is not nested deeper: it is the task's top level.
            let (child_depth, inner_task) =
                if matches!(sd.kind, StmtKind::Task { .. }) { (depth, Some(s)) } else { (depth + 1, task) };
            let children = sd.kind.child_blocks();
            if children.clone().next().is_some() && child_depth > MAX_NESTING {
                return Err((format!("statements nested more than {MAX_NESTING} levels deep"), sd.span));
            }
            // Push in reverse so that children are visited in print order.
            for c in children.rev() {
                if body.blocks().get(c).is_none() || !block_seen.insert(c) {
                    let owner = self.owner.describe();
                    return Err((format!("malformed IR: a block of {owner} is out of range or shared"), sd.span));
                }
                stack.push((c, 0, child_depth, inner_task));
            }
        }
        Ok(())
    }

    /// Places statement `s` next in pre-order, inside `task`: it must be
    /// in range, not placed before, and name only values in range.
    fn place(&mut self, s: Stmt, task: Option<Stmt>) -> Result<&'a StmtData, Malformed> {
        let body = self.body;
        let Some(sd) = body.stmts().get(s) else {
            let owner = self.owner.describe();
            return Err((format!("malformed IR: statement {s} in {owner} is out of range"), self.owner_span()));
        };
        if self.pos[s] != NOT_PLACED {
            let owner = self.owner.describe();
            return Err((format!("malformed IR: a statement of {owner} is placed twice"), sd.span));
        }
        self.pos[s] = self.order.len() as u32;
        self.order.push(s);
        self.task_of[s] = task;
        if let Some(v) = out_of_range(&sd.kind, sd.result, body.values()) {
            let owner = self.owner.describe();
            return Err((format!("malformed IR: value {} used in {owner} is out of range", v), sd.span));
        }
        Ok(sd)
    }

    /// Checks that the definitions of placed statements agree with their
    /// values, and that no name is defined twice.
    pub(super) fn names(&mut self) {
        let body = self.body;
        for &p in &body.params {
            self.define_name(p, None);
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
            let var_scope = if matches!(sd.kind, StmtKind::Task { .. }) { Some(s) } else { scope };
            let mut bound = Vec::new();
            sd.kind.for_each_bound_var(|v| bound.push(v));
            for (k, v) in bound.iter().enumerate() {
                if body.value(*v).def != ValueDef::LoopVar(s, k as u32) {
                    self.err(format!("malformed IR: loop variable %{} does not name its loop", body.name(*v)), sd.span);
                }
                self.define_name(*v, var_scope);
            }
        }
        if let Owner::TaskItem(t) = self.owner {
            for (k, &v) in t.kind.vars().iter().enumerate() {
                if !matches!(body.value(v).def, ValueDef::LoopVar(_, i) if i == k as u32) {
                    self.err(
                        format!("malformed IR: %{} is not a loop variable of task @{}", body.name(v), t.name),
                        t.span,
                    );
                }
                self.define_name(v, None);
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
    pub(super) fn scope_of(&self, s: Stmt) -> Option<Stmt> {
        self.task_of[s]
    }

    pub(super) fn define_name(&mut self, v: Value, scope: Option<Stmt>) {
        let rank = self.defs.len() as u32;
        self.defs.push((self.body.value(v).name.as_str(), scope, rank, v));
    }

    /// Reports every definition of a name after the first that it clashes
    /// with: any other in its scope, and any at all when the name is
    /// defined in scope 0; a note points at the definition it clashes with
    /// (the one before it in its scope, else the one in scope 0).
    pub(super) fn duplicate_names(&mut self) {
        self.defs.sort_unstable_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        // The first definition of the current name, when it is in scope 0.
        let mut group_scope0 = None;
        for i in 0..self.defs.len() {
            let (name, scope, _, v) = self.defs[i];
            let prev = i.checked_sub(1).map(|j| self.defs[j]);
            let Some(prev) = prev.filter(|p| p.0 == name) else {
                group_scope0 = scope.is_none().then_some(v);
                continue;
            };
            let earlier = if prev.1 == scope { Some(prev.3) } else { group_scope0 };
            if let Some(first) = earlier.filter(|&first| first != v && prev.3 != v) {
                let body = self.body;
                self.diags.push(
                    Diagnostic::error(format!("duplicate value name %{name}"), body.value(v).span)
                        .with_note_at(PREVIOUS_DEFINITION, body.value(first).span),
                );
            }
        }
    }

    /// A definition of `name`: the first in pre-order of the body scope if
    /// there is one, else of the first task that defines it.
    pub(super) fn first_def(&self, name: &str) -> Option<Value> {
        let i = self.defs.partition_point(|d| d.0 < name);
        self.defs.get(i).filter(|d| d.0 == name).map(|d| d.3)
    }
}

/// Why a body cannot be walked: the message and where.
type Malformed = (String, Span);

/// A value `kind` names (or `result`, its result) that is not in `values`.
fn out_of_range(kind: &StmtKind, result: Option<Value>, values: &Arena<Value, ValueData>) -> Option<Value> {
    let mut bad = result.filter(|&r| values.get(r).is_none());
    kind.for_each_value(|v| {
        if values.get(v).is_none() {
            bad = Some(v)
        }
    });
    bad
}
