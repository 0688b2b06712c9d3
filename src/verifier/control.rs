//! Control: `ret`, loops and their bounds, tasks and launches.
//!
//! Owns: where `ret`, `break` and `continue` may stand, loop variables and
//! bounds, task headers (in a kernel and as items), and `launch` targets.
//!
//! Must never: check simple statements' operands (`typing`).

use super::*;

impl<'a, 'd> BodyChecker<'a, 'd> {
    /// Checks a statement that returns, branches or loops.
    pub(super) fn control(&mut self, s: Stmt, cx: Cx) {
        let sd = self.body.stmt(s);
        let span = sd.span;
        match &sd.kind {
            StmtKind::Ret(v) => self.ret(*v, s, cx),
            StmtKind::If { cond, then_blk, else_blk } => {
                if let Some(t) = self.scalar(*cond, s) {
                    if t != Scalar::I1 {
                        let at = self.operand_span(s, 0);
                        self.err(format!("if condition must be i1, found {t}"), at);
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
                        Bound::Field(name, fspan) => {
                            self.err(format!("field bound @{name}[] is only allowed in a task header"), *fspan)
                        }
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

    pub(super) fn ret(&mut self, v: Option<Value>, s: Stmt, cx: Cx) {
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
                            self.err(
                                format!("ret of {t} in function @{} returning {r}", f.name),
                                self.operand_span(s, 0),
                            );
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
    pub(super) fn loop_var_type(&mut self, var: Value, span: Span) -> Option<Scalar> {
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
    pub(super) fn bound(&mut self, b: &Bound, var_ty: Option<Scalar>, s: Stmt, header: bool) {
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
                        self.use_span(s, *v),
                    );
                    return;
                }
                let t = self.scalar(*v, s);
                if let (Some(t), Some(vt)) = (t, var_ty) {
                    if t != vt {
                        self.err(
                            format!("loop bound %{} has type {t}, but the loop variable is {vt}", self.body.name(*v)),
                            self.use_span(s, *v),
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
    pub(super) fn task_header(&mut self, kind: &TaskKind, s: Option<Stmt>, span: Span) -> bool {
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
                        } else {
                            self.struct_for_extents(vars, f, *field_span);
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

    /// A `struct_for`'s variables are `i32`: a dimension of more than
    /// 2^31 elements has indices they cannot hold (they would wrap, and the
    /// loop would index the wrong elements), so it is refused here, never
    /// run with a wrong result.
    fn struct_for_extents(&mut self, vars: &[Value], f: &Field, span: Span) {
        for (d, (&v, &extent)) in vars.iter().zip(&f.shape).enumerate() {
            let ty = self.body.values().get(v).and_then(|d| d.ty.scalar()).unwrap_or(Scalar::I32);
            let max = if ty == Scalar::I64 { i64::MAX as u64 } else { i32::MAX as u64 };
            if extent > max + 1 {
                self.err(
                    format!(
                        "struct_for over @{}: dimension {d} has {extent} elements, more than its {ty} variable %{} can index ({}); loop over it with a range_for of i64 bounds",
                        f.name,
                        self.body.name(v),
                        max + 1
                    ),
                    span,
                );
            }
        }
    }

    /// The bounds of a task item: parameters are visible, nothing else is;
    /// there is no statement to attribute a use to, so checks are direct.
    pub(super) fn item_bounds(&mut self, lo: &Bound, hi: &Bound, vt: Option<Scalar>, span: Span) {
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
    pub(super) fn launch(&mut self, name: &str, span: Span) {
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
            let Some(pname) = t.body.values().get(v).map(|d| d.name.as_str()) else {
                continue;
            };
            let found = k
                .body
                .params
                .iter()
                .zip(&k.params)
                .find(|(kv, _)| k.body.values().get(**kv).is_some_and(|d| d.name == pname));
            match found {
                None => self.err(
                    format!(
                        "launch @{name}: the task reads parameter %{pname}, which kernel @{} does not have",
                        k.name
                    ),
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
