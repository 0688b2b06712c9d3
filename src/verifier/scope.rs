//! Scopes: which values a statement may use.
//!
//! Owns: visibility (a value is visible after its definition, in its block
//! and the blocks nested in it; loop variables in their loop only), the
//! errors for a use out of scope (at the use), and silence about the type
//! of a poisoned value (one whose type an earlier error left unknown).
//!
//! Must never: check types beyond scalar-versus-slot.

use super::*;

impl<'a, 'd> BodyChecker<'a, 'd> {
    /// Operand `k` of `s` (the first operand that is `v`, with `v`), and
    /// `s`'s operand count: its operands walked once per statement errors
    /// are placed in.
    fn operand_index(&self, s: Stmt, v: Option<Value>, k: usize) -> (Option<usize>, usize) {
        let mut cache = self.operands.borrow_mut();
        if cache.as_ref().is_none_or(|o| o.0 != s) {
            let (mut n, mut first) = (0, std::collections::HashMap::new());
            self.body.stmt(s).kind.for_each_operand(|v| {
                first.entry(v).or_insert(n);
                n += 1;
            });
            *cache = Some((s, n, first));
        }
        let (_, n, first) = cache.as_ref().expect("set just above");
        (v.map_or(Some(k), |v| first.get(&v).copied()), *n)
    }

    /// Where `s` reads its operand `k` ([`Body::operand_span`]).
    pub(super) fn operand_span(&self, s: Stmt, k: usize) -> Span {
        let (_, n) = self.operand_index(s, None, k);
        self.body.operand_span_of(s, k, n)
    }

    /// Where `s` reads `v` ([`Body::use_span`]).
    pub(super) fn use_span(&self, s: Stmt, v: Value) -> Span {
        match self.operand_index(s, Some(v), 0) {
            (Some(k), n) => self.body.operand_span_of(s, k, n),
            (None, _) => self.body.stmt(s).span,
        }
    }

    pub(super) fn make_visible(&mut self, v: Value) {
        self.visible.insert(v);
        self.scope.push(v);
    }

    /// A use of `v` by statement `s`: reports a use out of scope, at the
    /// operand. Returns the type when it is known (not for a value out of
    /// scope or poisoned, so that one mistake is not reported again as a
    /// type error).
    pub(super) fn use_value(&mut self, v: Value, s: Stmt) -> Option<Type> {
        if !self.visible.contains(v) {
            // Its type says nothing here: what uses it is not checked
            // against it (nor is its result, by the parser's typing).
            self.out_of_scope_use(v, s);
            return None;
        }
        if self.poisoned.contains(v) {
            return None;
        }
        Some(self.body.ty(v))
    }

    /// Reports a use of `v` by `s` where `v` is not visible.
    fn out_of_scope_use(&mut self, v: Value, s: Stmt) {
        let body = self.body;
        let vd = body.value(v);
        let stmt_span = self.use_span(s, v);
        let name = &vd.name;
        let def_pos = |this: &Self, d: ValueDef| match d {
            ValueDef::Result(ds) | ValueDef::LoopVar(ds, _) => this.pos.get(ds).copied(),
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
    }

    /// The message for a use (by `s`) of defined value `d` out of scope.
    pub(super) fn out_of_scope(&self, d: Value, s: Stmt) -> String {
        let body = self.body;
        let name = body.name(d);
        let (ds, is_loop_var) = match body.value(d).def {
            ValueDef::Result(ds) => (ds, false),
            ValueDef::LoopVar(ds, _) => (ds, true),
            _ => return format!("value %{name} is not visible here"),
        };
        let dpos = self.pos.get(ds).copied().unwrap_or(NOT_PLACED);
        if dpos == NOT_PLACED {
            return format!("value %{name} is used but its definition is not in the body");
        }
        if dpos >= self.pos[s] {
            return format!("value %{name} used before its definition");
        }
        let (dt, ut) = (self.task_of[ds], self.task_of[s]);
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
    pub(super) fn scalar(&mut self, v: Value, s: Stmt) -> Option<Scalar> {
        match self.use_value(v, s)? {
            Type::Scalar(t) => Some(t),
            Type::Slot(_) => {
                let span = self.use_span(s, v);
                self.err(format!("alloca slot %{} used as a scalar", self.body.name(v)), span);
                None
            }
        }
    }
}
