//! Types: the operand rules of every statement and its result.
//!
//! Owns: the operand types each kind accepts, field references, calls'
//! arguments, each error at the operand at fault; a result's type is
//! `ir::result_type`, asked only once the operands are well typed, and a
//! result whose type is unknown is poisoned (no follow-on errors).
//!
//! Must never: restate the typing rules `ir` owns.

use super::*;

impl<'a, 'd> BodyChecker<'a, 'd> {
    pub(super) fn stmt(&mut self, s: Stmt, cx: Cx) {
        let kind = &self.body.stmt(s).kind;
        let (rule, ty) = match kind.defines() {
            Defines::IfCalleeReturns => {
                let StmtKind::Call(name, args, cspan) = kind else { unreachable!("only call depends on its callee") };
                self.call(name, args, *cspan, s, Self::level(cx))
            }
            Defines::Never
                if !matches!(
                    kind,
                    StmtKind::Store(..) | StmtKind::StoreSlot(..) | StmtKind::Assert { .. } | StmtKind::Print { .. }
                ) =>
            {
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
    pub(super) fn operand_types(&mut self, s: Stmt) -> bool {
        let sd = self.body.stmt(s);
        match &sd.kind {
            StmtKind::Const(c) => {
                if !canonical(*c) {
                    self.err(format!("constant {} does not fit {}", c.bits as i64, c.ty), sd.span);
                }
                true
            }
            StmtKind::Binary(op, a, b) => self.binary(s, *op, *a, *b),
            StmtKind::Unary(op, a) => self.unary(s, *op, *a),
            StmtKind::Cmp(op, a, b) => {
                self.same_scalars(s, *a, *b, 1, |ta, tb| {
                    format!("type mismatch: cmp {} of {ta} and {tb}", op.keyword())
                });
                true
            }
            StmtKind::Cast(a, _) => {
                self.scalar(*a, s);
                true
            }
            StmtKind::BitCast(a, to) => self.bitcast(s, *a, *to),
            StmtKind::Select(c, a, b) => self.select(s, *c, *a, *b),
            StmtKind::Load(r) => self.field_ref(r, s).is_some(),
            StmtKind::Store(r, v) => {
                self.store(s, r, *v);
                false
            }
            StmtKind::Atomic(op, r, v) => self.atomic(s, *op, r, *v),
            StmtKind::Alloca(_) => true,
            StmtKind::Random { ty, .. } => self.random(s, *ty),
            StmtKind::LoadSlot(p) => self.slot(s, *p, "load from").is_some(),
            StmtKind::StoreSlot(p, v) => {
                self.store_slot(s, *p, *v);
                false
            }
            StmtKind::Assert { cond, args, .. } => {
                self.assert(s, *cond, args);
                false
            }
            StmtKind::Print { .. } => {
                self.print(s, &sd.kind.print_values());
                false
            }
            _ => unreachable!("calls and statements with blocks are checked elsewhere"),
        }
    }

    /// `random T`: in a kernel or a task (a function has no stream of its
    /// own), of a type `crate::random` makes values of.
    fn random(&mut self, s: Stmt, ty: Scalar) -> bool {
        let span = self.body.stmt(s).span;
        if let Owner::Func(f) = self.owner {
            self.err(format!("random in function @{}: only a kernel or a task draws random numbers", f.name), span);
        }
        if !crate::random::supports(ty) {
            self.err(format!("random makes no {ty} values"), span);
            return false;
        }
        true
    }

    /// `assert %c, "...", args`: an `i1` condition, scalar values, at most
    /// `MAX_RANK` of them (they travel in the error slot's index array).
    fn assert(&mut self, s: Stmt, cond: Value, args: &[Value]) {
        if let Some(t) = self.scalar(cond, s) {
            if t != Scalar::I1 {
                self.err(format!("assert's condition must be i1, not {t}"), self.operand_span(s, 0));
            }
        }
        for &a in args {
            self.scalar(a, s);
        }
        if args.len() > crate::ir::MAX_RANK {
            let at = self.operand_span(s, crate::ir::MAX_RANK + 1);
            self.err(format!("assert takes at most {} values, not {}", crate::ir::MAX_RANK, args.len()), at);
        }
    }

    /// `print pieces...`: scalar values, at most `MAX_PRINT_VALUES` of them.
    fn print(&mut self, s: Stmt, values: &[Value]) {
        for &v in values {
            self.scalar(v, s);
        }
        if values.len() > MAX_PRINT_VALUES {
            let at = self.operand_span(s, MAX_PRINT_VALUES);
            self.err(format!("print takes at most {MAX_PRINT_VALUES} values, not {}", values.len()), at);
        }
    }

    /// Checks that operands `a` and `b` (the latter operand number `k` of
    /// `s`) have the same scalar type; that type when they do, `None` (and
    /// the error `mismatch` words at `b`, if both were known) otherwise.
    fn same_scalars(
        &mut self,
        s: Stmt,
        a: Value,
        b: Value,
        k: usize,
        mismatch: impl FnOnce(Scalar, Scalar) -> String,
    ) -> Option<Scalar> {
        let (ta, tb) = (self.scalar(a, s), self.scalar(b, s));
        let (ta, tb) = (ta?, tb?);
        if ta != tb {
            self.err(mismatch(ta, tb), self.operand_span(s, k));
            return None;
        }
        Some(ta)
    }

    fn binary(&mut self, s: Stmt, op: BinOp, a: Value, b: Value) -> bool {
        let Some(t) =
            self.same_scalars(s, a, b, 1, |ta, tb| format!("type mismatch: {} of {ta} and {tb}", op.keyword()))
        else {
            return false;
        };
        if !op.accepts(t) {
            let at = self.operand_span(s, 0);
            self.err(format!("{} does not accept operands of type {t}", op.keyword()), at);
            return false;
        }
        true
    }

    fn unary(&mut self, s: Stmt, op: UnOp, a: Value) -> bool {
        let Some(t) = self.scalar(a, s) else {
            return false;
        };
        if !op.accepts(t) {
            let at = self.operand_span(s, 0);
            self.err(format!("{} does not accept an operand of type {t}", op.keyword()), at);
            return false;
        }
        true
    }

    /// A bit cast keeps every bit, so both types have one width.
    fn bitcast(&mut self, s: Stmt, a: Value, to: Scalar) -> bool {
        let Some(t) = self.scalar(a, s) else {
            return false;
        };
        if t.bits() != to.bits() {
            let at = self.operand_span(s, 0);
            self.err(format!("bitcast from {t} to {to} changes the width ({} to {} bits)", t.bits(), to.bits()), at);
            return false;
        }
        true
    }

    fn select(&mut self, s: Stmt, c: Value, a: Value, b: Value) -> bool {
        if let Some(tc) = self.scalar(c, s).filter(|&t| t != Scalar::I1) {
            let at = self.operand_span(s, 0);
            self.err(format!("select condition must be i1, found {tc}"), at);
        }
        self.same_scalars(s, a, b, 2, |ta, tb| format!("type mismatch: select of {ta} and {tb}")).is_some()
    }

    fn store(&mut self, s: Stmt, r: &FieldRef, v: Value) {
        let elem = self.field_ref(r, s);
        let tv = self.scalar(v, s);
        if let (Some(e), Some(t)) = (elem, tv) {
            if e != t {
                let at = self.operand_span(s, r.indices.len());
                self.err(format!("type mismatch: store of {t} to field @{} of {e}", r.field), at);
            }
        }
    }

    fn atomic(&mut self, s: Stmt, op: AtomicOp, r: &FieldRef, v: Value) -> bool {
        let elem = self.field_ref(r, s);
        let tv = self.scalar(v, s);
        let Some(e) = elem else { return false };
        if !op.accepts(e) {
            let msg = format!("atomic {} does not accept field @{} of {e}", op.keyword(), r.field);
            self.err(msg, self.body.stmt(s).span);
        } else if let Some(t) = tv.filter(|&t| t != e) {
            let msg = format!("type mismatch: atomic {} of {t} on field @{} of {e}", op.keyword(), r.field);
            self.err(msg, self.operand_span(s, r.indices.len()));
        }
        true
    }

    /// The element type of slot `p`, operand 0 of `s` (`what` it does
    /// with it, for the error when `p` is not a slot).
    fn slot(&mut self, s: Stmt, p: Value, what: &str) -> Option<Scalar> {
        match self.use_value(p, s)? {
            Type::Slot(t) => Some(t),
            Type::Scalar(_) => {
                let msg = format!("{what} %{}, which is not an alloca slot", self.body.name(p));
                self.err(msg, self.operand_span(s, 0));
                None
            }
        }
    }

    fn store_slot(&mut self, s: Stmt, p: Value, v: Value) {
        let slot = self.slot(s, p, "store to");
        if let (Some(e), Some(t)) = (slot, self.scalar(v, s)) {
            if e != t {
                let msg = format!("type mismatch: store of {t} to slot %{} of {e}", self.body.name(p));
                self.err(msg, self.operand_span(s, 1));
            }
        }
    }

    /// Checks the result of a statement against what it computes, and
    /// brings it into scope.
    pub(super) fn result(&mut self, s: Stmt, rule: ResultRule, ty: Option<Type>) {
        let sd = self.body.stmt(s);
        match (sd.result, rule) {
            (None, ResultRule::Required) => self.err("malformed IR: this statement must define a value", sd.span),
            (Some(r), ResultRule::Forbidden) => {
                self.err(format!("this statement defines no value, but is named %{}", self.body.name(r)), sd.span)
            }
            (Some(r), _) => {
                let vd = self.body.value(r);
                if ty.is_none() {
                    // Its type is unknown: an error about its operands
                    // (or its callee) was reported; its uses say nothing.
                    self.poisoned.insert(r);
                }
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
    pub(super) fn field_ref(&mut self, r: &FieldRef, s: Stmt) -> Option<Scalar> {
        // A field reference's indices are its statement's first operands.
        for (k, &i) in r.indices.iter().enumerate() {
            match self.scalar(i, s) {
                Some(Scalar::I32 | Scalar::I64) | None => {}
                Some(t) => self.err(format!("field index must be i32 or i64, found {t}"), self.operand_span(s, k)),
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
    pub(super) fn unknown(&mut self, name: &str, what: &str, span: Span) {
        let msg = match self.cx.items.get(name) {
            Some(it) => format!("@{name} is {}, not a {what}", item_kind(it)),
            None => format!("unknown {what} @{name}"),
        };
        self.err(msg, span);
    }

    pub(super) fn call(
        &mut self,
        name: &Name,
        args: &[Value],
        cspan: Span,
        s: Stmt,
        level: u32,
    ) -> (ResultRule, Option<Type>) {
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
                            self.operand_span(s, i),
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
                    self.err(format!("@{name} returns no value, but its call is named %{}", self.body.name(r)), cspan);
                }
                (ResultRule::Optional, None)
            }
        }
    }
}
