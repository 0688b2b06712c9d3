//! The loops of a lowering: a task entry's phases and its iteration space
//! (the chunk loop of a `range_for` or `struct_for`), `for` and `while`
//! statements, and the counted loop they share; where a loop is versioned
//! (`lower::versioning`), its body is lowered twice, without and with the
//! bounds checks the pre-loop test proved.
//!
//! Owns: the control flow of loops (head, latch, induction variable, what
//! `break`, `continue` and `ret` branch to), the facts about a task's
//! iteration space told to LLVM, the `llvm.loop` hints of a versioned
//! loop's two copies, and where the checked copy goes (beside the fast
//! one, or, for a parallel task's straight-line chunk loop, an unoptimised
//! entry of its own: [`Checked`]).
//!
//! Must never: change the order in which iterations run or which iteration
//! reports an error: a versioned loop's two copies compute the same thing;
//! outline the checked copy of a loop with `if` or `while` (the test may
//! fail for an access that never runs, and the copy then runs the loop).

use super::versioning;
use super::{bug, fx_int_ty, Exit, FnCx, Lowering, Result, TaskSource, CTX_BEGIN, CTX_END, CTX_PARAMS};
use crate::CodegenError;
use inkwell::attributes::AttributeLoc;
use inkwell::basic_block::BasicBlock;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::Linkage;
use inkwell::types::IntType;
use inkwell::values::{BasicValueEnum, FunctionValue, IntValue, PhiValue};
use inkwell::{AddressSpace, IntPredicate};
use kiln::ir::{Body, Bound, Name, Scalar, SecondaryMap, Stmt, StmtKind, TaskKind, Value};

impl<'a, 'ctx> Lowering<'a, 'ctx> {
    /// Defines the entry function `symbol` of a task (signature and context
    /// in `docs/runtime.md`), in phases: the entry and its prologue, the
    /// parameters, the chunk and what the launcher guarantees about it,
    /// then the body in the task's iteration space.
    pub fn add_task(&mut self, symbol: &str, task: &TaskSource<'a>) -> Result<()> {
        let numbers = self.numbering.number(task.body);
        let checked = match task.kind {
            TaskKind::Serial => Checked::Inline,
            _ => Checked::Outline(format!("{symbol}.checked"), *task),
        };
        self.define_entry(symbol, task, numbers, checked).map(drop)
    }

    /// The entry `symbol` of `task`, its statements numbered `numbers`;
    /// `checked` says where a versioned loop's checked copy goes.
    fn define_entry(
        &mut self,
        symbol: &str,
        task: &TaskSource<'a>,
        numbers: SecondaryMap<Stmt, u32>,
        checked: Checked<'a>,
    ) -> Result<FunctionValue<'ctx>> {
        let (mut fx, exit) = self.task_entry(symbol, task.body, numbers)?;
        fx.checked = checked;
        self.load_params(&mut fx, task)?;
        let (begin, end) = self.load_chunk(&mut fx)?;
        self.assume_chunk(&mut fx, task.kind, begin, end)?;
        self.random_stream(&mut fx)?;
        let start = fx.start;
        fx.b.position_at_end(start);
        match task.kind {
            TaskKind::Serial => {
                fx.block(self, task.block)?;
                if fx.open() {
                    fx.b.build_unconditional_branch(exit)?;
                }
            }
            TaskKind::RangeFor { var, .. } => self.range_for_loop(&mut fx, task, *var, begin, end)?,
            TaskKind::StructFor { vars, field, .. } => self.struct_for_loop(&mut fx, task, vars, field, begin, end)?,
        }
        fx.b.position_at_end(exit);
        fx.b.build_return(None)?;
        let f = fx.func;
        fx.finish()?;
        Ok(f)
    }

    /// The checked copy of a parallel task's versioned chunk loop, as an
    /// entry of its own, `symbol`: the task lowered again with every check
    /// and nothing versioned, private, and compiled without optimisation
    /// (`optnone`). It runs only when the pre-loop test failed, which for a
    /// loop whose accesses all run in every iteration means some iteration
    /// fails: LLVM's time is not spent on a loop that is about to report
    /// an error (cold compile). Its statements have the task's numbers, so
    /// an error it reports names the same statement.
    pub(super) fn checked_entry(
        &mut self,
        symbol: &str,
        task: &TaskSource<'a>,
        numbers: SecondaryMap<Stmt, u32>,
    ) -> Result<FunctionValue<'ctx>> {
        let f = self.define_entry(symbol, task, numbers, Checked::Off)?;
        f.set_linkage(Linkage::Private);
        for attr in ["optnone", "noinline", "cold"] {
            f.add_attribute(AttributeLoc::Function, self.enum_attr(attr));
        }
        Ok(f)
    }

    /// The entry function `void symbol(ptr noalias ctx)` with its body's
    /// statement numbers, and the block every exit of it goes to.
    pub(super) fn task_entry(
        &mut self,
        symbol: &str,
        body: &'a Body,
        numbers: SecondaryMap<Stmt, u32>,
    ) -> Result<(FnCx<'a, 'ctx>, BasicBlock<'ctx>)> {
        let cx = self.cx;
        let ptr = cx.ptr_type(AddressSpace::default());
        let fv =
            self.module.add_function(symbol, cx.void_type().fn_type(&[ptr.into()], false), Some(Linkage::External));
        self.set_fn_attrs(fv);
        fv.add_attribute(AttributeLoc::Param(0), self.enum_attr("noalias"));
        let mut fx = FnCx::new(self, fv, body, Exit::Func(None))?;
        fx.stmt_no = numbers;
        let exit = cx.append_basic_block(fv, "exit");
        fx.exit = Exit::Entry(exit);
        fx.abort = Some(exit);
        Ok((fx, exit))
    }

    /// Reads the task's parameters from their 64-bit slots, once, in the
    /// prologue.
    pub(super) fn load_params(&self, fx: &mut FnCx<'a, 'ctx>, task: &TaskSource<'a>) -> Result<()> {
        let cx = self.cx;
        let ptr = cx.ptr_type(AddressSpace::default());
        let i64t = cx.i64_type();
        let params_pp = fx.pb.build_struct_gep(self.ctx_ty, fx.ctx, CTX_PARAMS, "params.pp")?;
        let params = fx.pb.build_load(ptr, params_pp, "params")?.into_pointer_value();
        for (k, &v) in task.params.iter().enumerate() {
            let ty = task.body.ty(v).scalar().ok_or_else(|| bug("slot-typed parameter"))?;
            // SAFETY: the context's parameter array holds one slot per
            // parameter of the task (`docs/runtime.md`).
            let at = unsafe { fx.pb.build_in_bounds_gep(i64t, params, &[i64t.const_int(k as u64, false)], "") }?;
            let raw = fx.pb.build_load(i64t, at, "")?.into_int_value();
            let val: BasicValueEnum = match ty {
                Scalar::F64 => fx.pb.build_bit_cast(raw, cx.f64_type(), "")?,
                t if t.is_float() => {
                    let lo = fx.pb.build_int_truncate(raw, fx_int_ty(cx, t), "")?;
                    fx.pb.build_bit_cast(lo, self.reg_ty(t), "")?
                }
                t if t.bits() == 64 => raw.into(),
                t => fx.pb.build_int_truncate(raw, self.reg_ty(t).into_int_type(), "")?.into(),
            };
            fx.vals[v] = Some(val);
        }
        Ok(())
    }

    /// The chunk `[begin, end)` of linear iterations, from the context.
    pub(super) fn load_chunk(&self, fx: &mut FnCx<'a, 'ctx>) -> Result<(IntValue<'ctx>, IntValue<'ctx>)> {
        let i64t = self.cx.i64_type();
        let begin_p = fx.pb.build_struct_gep(self.ctx_ty, fx.ctx, CTX_BEGIN, "begin.p")?;
        let end_p = fx.pb.build_struct_gep(self.ctx_ty, fx.ctx, CTX_END, "end.p")?;
        let begin = fx.pb.build_load(i64t, begin_p, "begin")?.into_int_value();
        let end = fx.pb.build_load(i64t, end_p, "end")?.into_int_value();
        Ok((begin, end))
    }

    /// What the launcher guarantees about a chunk (docs/runtime.md), told
    /// to LLVM so it can drop bounds checks the iteration space already
    /// implies (and then vectorise).
    pub(super) fn assume_chunk(
        &self,
        fx: &mut FnCx<'a, 'ctx>,
        kind: &TaskKind,
        begin: IntValue<'ctx>,
        end: IntValue<'ctx>,
    ) -> Result<()> {
        let (lo, hi) = match kind {
            TaskKind::Serial => return Ok(()),
            TaskKind::RangeFor { lo, hi, .. } => (
                if let Bound::Const(c) = lo { Some(*c) } else { None },
                if let Bound::Const(c) = hi { Some(*c) } else { None },
            ),
            TaskKind::StructFor { field, .. } => {
                let len = self.fields.iter().find(|f| f.name == *field).map(|f| f.len());
                (Some(0), len.and_then(|n| i64::try_from(n).ok()))
            }
        };
        // A range known to be empty is never launched: its bounds would
        // contradict `begin <= end`, and LLVM would fold the whole entry to
        // `unreachable`, an entry with no code the JIT cannot link. Its
        // entry stays an ordinary, never-called function.
        let (lo, hi) = match (lo, hi) {
            (Some(l), Some(h)) if l >= h => (None, None),
            bounds => bounds,
        };
        let i64t = self.cx.i64_type();
        let assume = Intrinsic::find("llvm.assume")
            .and_then(|i| i.get_declaration(&self.module, &[]))
            .ok_or_else(|| bug("llvm.assume not found"))?;
        let mut facts = vec![fx.pb.build_int_compare(IntPredicate::SLE, begin, end, "")?];
        if let Some(lo) = lo {
            facts.push(fx.pb.build_int_compare(IntPredicate::SGE, begin, i64t.const_int(lo as u64, true), "")?);
        }
        if let Some(hi) = hi {
            facts.push(fx.pb.build_int_compare(IntPredicate::SLE, end, i64t.const_int(hi as u64, true), "")?);
        }
        for f in facts {
            fx.pb.build_call(assume, &[f.into()], "")?;
        }
        Ok(())
    }

    /// A `range_for` body over the chunk: the linear index is the loop
    /// variable, truncated to its type.
    pub(super) fn range_for_loop(
        &mut self,
        fx: &mut FnCx<'a, 'ctx>,
        task: &TaskSource<'a>,
        var: Value,
        begin: IntValue<'ctx>,
        end: IntValue<'ctx>,
    ) -> Result<()> {
        let vty = task.body.ty(var).scalar().ok_or_else(|| bug("loop variable type"))?;
        let last = fx.b.build_int_sub(end, self.cx.i64_type().const_int(1, false), "last")?;
        fx.chunk_loop(self, task.block, begin, end, &[(var, begin, last)], |fx, _l, lin| {
            let v = fx.b.build_int_truncate_or_bit_cast(lin, fx_int_ty(fx.cx, vty), "")?;
            fx.wide.insert(var, lin);
            Ok(vec![(var, v)])
        })
    }

    /// A `struct_for` body over the chunk: the linear index split into the
    /// field's indices, row-major (the last varies fastest).
    pub(super) fn struct_for_loop(
        &mut self,
        fx: &mut FnCx<'a, 'ctx>,
        task: &TaskSource<'a>,
        vars: &[Value],
        field: &Name,
        begin: IntValue<'ctx>,
        end: IntValue<'ctx>,
    ) -> Result<()> {
        let f = self
            .fields
            .iter()
            .find(|f| f.name == *field)
            .ok_or_else(|| CodegenError::new(format!("struct_for over unknown field @{field}")))?;
        let shape = f.shape.clone();
        let var_tys: Vec<(Value, Scalar)> = vars
            .iter()
            .map(|&v| Ok((v, task.body.ty(v).scalar().ok_or_else(|| bug("loop variable type"))?)))
            .collect::<Result<_>>()?;
        let i64t = self.cx.i64_type();
        let ranges = struct_for_ranges(fx, &var_tys, &shape, begin, end)?;
        fx.chunk_loop(self, task.block, begin, end, &ranges, |fx, _l, lin| {
            // `lin` is below the field's length, so what is left after the
            // inner dimensions is the outermost index itself.
            let mut out = Vec::with_capacity(var_tys.len());
            let mut rest = lin;
            for (d, &(v, ty)) in var_tys.iter().enumerate().rev() {
                let idx = if d == 0 {
                    rest
                } else {
                    let ext = i64t.const_int(shape.get(d).copied().unwrap_or(1), false);
                    let idx = fx.b.build_int_unsigned_rem(rest, ext, "")?;
                    rest = fx.b.build_int_unsigned_div(rest, ext, "")?;
                    idx
                };
                fx.wide.insert(v, idx);
                out.push((v, fx.b.build_int_truncate_or_bit_cast(idx, fx_int_ty(fx.cx, ty), "")?));
            }
            Ok(out)
        })
    }
}

impl<'a, 'ctx> FnCx<'a, 'ctx> {
    pub(super) fn for_stmt(
        &mut self,
        l: &mut Lowering<'a, 'ctx>,
        var: Value,
        lo: &Bound,
        hi: &Bound,
        body: kiln::ir::Block,
    ) -> Result<()> {
        let ty = self.scalar(var)?;
        let ity = fx_int_ty(self.cx, ty);
        let lo = self.bound(l, lo, ity)?;
        let hi = self.bound(l, hi, ity)?;
        let exit = self.cx.append_basic_block(self.func, "for.exit");
        // The KIR name, for readable `--emit=llvm` (prefixed: a numeric
        // name like `%0` must not look like LLVM's own numbering).
        let iv_name = format!("v.{}", self.body.name(var));
        let emit = |fx: &mut Self, l: &mut Lowering<'a, 'ctx>| {
            let lp = fx.open_counted_loop("for", ity, &iv_name, hi, exit)?;
            fx.vals[var] = Some(lp.iv.into());
            fx.loops.push((lp.latch, exit));
            fx.block(l, body)?;
            fx.loops.pop();
            fx.close_counted_loop(&lp, ity, lo)
        };
        // Only an outermost loop is versioned: one test covers the loops
        // nested in it, and the checked copy is today's code.
        if self.loops.is_empty() {
            let i64t = self.cx.i64_type();
            let min = self.b.build_int_s_extend_or_bit_cast(lo, i64t, "")?;
            let hi64 = self.b.build_int_s_extend_or_bit_cast(hi, i64t, "")?;
            let max = self.b.build_int_sub(hi64, i64t.const_int(1, false), "")?;
            self.versioned(l, body, &[(var, min, max)], emit)?;
        } else {
            emit(self, l)?;
        }
        self.b.position_at_end(exit);
        Ok(())
    }

    /// Emits a loop by `emit`, once, or twice behind the pre-loop test of
    /// its versioning (`lower::versioning`) when bounds checks are on and
    /// some access of `block` is provable: a fast copy with the proven
    /// accesses unchecked, then the checked one. `ranges` are the loop's
    /// own variables' `[min, max]` (`i64`), computed before the loop.
    fn versioned(
        &mut self,
        l: &mut Lowering<'a, 'ctx>,
        block: kiln::ir::Block,
        ranges: &[(Value, IntValue<'ctx>, IntValue<'ctx>)],
        emit: impl Fn(&mut Self, &mut Lowering<'a, 'ctx>) -> Result<()>,
    ) -> Result<()> {
        let vars: Vec<Value> = ranges.iter().map(|&(v, ..)| v).collect();
        let field = |name: &str| l.field_pos.get(name).map(|&p| l.fields[p as usize]);
        let on = l.bounds_checks && !matches!(self.checked, Checked::Off);
        let plan = if on { versioning::plan(self.body, block, &vars, l.math_calls(), field) } else { None };
        let Some(plan) = plan else { return emit(self, l) };
        let ok = self.version_test(&plan, ranges)?;
        let fast = self.cx.append_basic_block(self.func, "fast");
        let checked = self.cx.append_basic_block(self.func, "checked");
        let br = self.b.build_conditional_branch(ok, fast, checked)?;
        self.branch_weights(br, 1 << 20, 1)?;
        self.b.position_at_end(fast);
        let kiln_math = plan.kiln_math;
        self.proven = plan.proven;
        let done = emit(self, l);
        self.proven.clear();
        done?;
        self.loop_hints(LoopCopy::Fast { kiln_math })?;
        self.b.position_at_end(checked);
        // Only a parallel task's chunk loop is outlined (the one loop of its
        // entry versioned: the loops nested in it are not), and only when
        // every access runs in every iteration: then the test fails only
        // when some iteration does, and the unoptimised copy runs only to
        // report it. Otherwise (an access under `if` or `while`, which the
        // box may count out of bounds when it never runs) the checked copy
        // stays here, optimised, as the loop may well run to its end.
        if let (Checked::Outline(symbol, task), Exit::Entry(exit)) = (&self.checked, self.exit) {
            if straight_line(self.body, block) {
                let (symbol, task) = (symbol.clone(), *task);
                let f = l.checked_entry(&symbol, &task, self.stmt_no.clone())?;
                self.b.build_call(f, &[self.ctx.into()], "")?;
                self.b.build_unconditional_branch(exit)?;
                return Ok(());
            }
        }
        emit(self, l)?;
        self.loop_hints(LoopCopy::Checked)
    }

    /// Tells LLVM how to treat the copy of a versioned loop just emitted
    /// (the builder is in its latch), as `llvm.loop` metadata on the back
    /// edge: a distinct node that names itself first.
    ///
    /// The fast copy is vectorised with one vector per iteration (no
    /// interleaving) and its scalar remainder, at most a vector's width of
    /// iterations, is not unrolled. A fast copy computing Kiln's own math
    /// holds two vectors an iteration (interleaved), which hides the long
    /// chain of dependent operations each element's function is, and has
    /// no remainder: its last iteration masks its loads and stores (tail
    /// folding), so the function's code is not copied again into a
    /// vectorised epilogue and a scalar remainder, for a mask per vector
    /// the math hides. The steady state is the vector loop's,
    /// and each copy LLVM makes is compile time (cold compile). The
    /// checked copy runs only when some access fails: not worth LLVM's time
    /// to vectorise or unroll at all.
    fn loop_hints(&self, copy: LoopCopy) -> Result<()> {
        use inkwell::llvm_sys::core::{
            LLVMMDNodeInContext2, LLVMMDStringInContext2, LLVMMetadataAsValue, LLVMReplaceMDNodeOperandWith,
            LLVMSetMetadata, LLVMValueAsMetadata,
        };
        use inkwell::llvm_sys::prelude::LLVMMetadataRef;
        use inkwell::values::AsValueRef;
        let latch = self
            .b
            .get_insert_block()
            .and_then(|bb| bb.get_terminator())
            .ok_or_else(|| bug("a versioned loop without a latch"))?;
        let cx = self.cx.raw();
        // SAFETY: `cx` is the module's live context; `ops` holds its length
        // of metadata of that context.
        let node = |mut ops: Vec<LLVMMetadataRef>| unsafe { LLVMMDNodeInContext2(cx, ops.as_mut_ptr(), ops.len()) };
        // SAFETY: `name` is `name.len()` readable bytes, which LLVM copies.
        let string = |name: &str| unsafe { LLVMMDStringInContext2(cx, name.as_ptr().cast(), name.len()) };
        let flag = |name: &str, value: Option<BasicValueEnum<'ctx>>| {
            let mut ops = vec![string(name)];
            // SAFETY: `v` is a constant of the same context.
            ops.extend(value.map(|v| unsafe { LLVMValueAsMetadata(v.as_value_ref()) }));
            node(ops)
        };
        let (off, on) = (self.cx.bool_type().const_zero().into(), self.cx.bool_type().const_all_ones().into());
        let kiln_math = matches!(copy, LoopCopy::Fast { kiln_math: true });
        let count = self.cx.i32_type().const_int(if kiln_math { 2 } else { 1 }, false).into();
        // A placeholder for the node itself: pointing operand 0 at the
        // node makes LLVM take it out of uniquing (distinct).
        let mut ops = vec![flag("kiln.loop", None), flag("llvm.loop.interleave.count", Some(count))];
        match copy {
            LoopCopy::Fast { .. } => {
                if kiln_math {
                    ops.push(flag("llvm.loop.vectorize.predicate.enable", Some(on)));
                }
                // The attributes of the scalar loop the vectoriser leaves
                // for the remainder (and for when its own checks fail).
                let remainder = flag("llvm.loop.unroll.disable", None);
                ops.push(node(vec![string("llvm.loop.vectorize.followup_epilogue"), remainder]));
            }
            LoopCopy::Checked => {
                ops.push(flag("llvm.loop.vectorize.enable", Some(off)));
                ops.push(flag("llvm.loop.unroll.disable", None));
            }
        }
        // SAFETY: a loop ID is a distinct node whose first operand is
        // itself (LLVM's `llvm.loop` convention), made and attached in the
        // latch's context; `latch` is a live branch of this function.
        unsafe {
            let node = node(ops);
            let as_value = LLVMMetadataAsValue(cx, node);
            LLVMReplaceMDNodeOperandWith(as_value, 0, node);
            let kind = self.cx.get_kind_id("llvm.loop");
            LLVMSetMetadata(latch.as_value_ref(), kind, as_value);
        }
        Ok(())
    }

    pub(super) fn while_stmt(&mut self, l: &mut Lowering<'a, 'ctx>, body: kiln::ir::Block) -> Result<()> {
        let head = self.cx.append_basic_block(self.func, "while.body");
        let exit = self.cx.append_basic_block(self.func, "while.exit");
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(head);
        self.loops.push((head, exit));
        self.block(l, body)?;
        self.loops.pop();
        if self.open() {
            self.b.build_unconditional_branch(head)?;
        }
        self.b.position_at_end(exit);
        Ok(())
    }

    pub(super) fn bound(
        &mut self,
        l: &Lowering<'a, 'ctx>,
        b: &Bound,
        ity: inkwell::types::IntType<'ctx>,
    ) -> Result<IntValue<'ctx>> {
        let v = match b {
            Bound::Const(c) => return Ok(ity.const_int(*c as u64, true)),
            Bound::Value(v) => self.ival(*v)?,
            Bound::Field(name, _) => {
                let pos = *l
                    .field_pos
                    .get(name.as_str())
                    .ok_or_else(|| CodegenError::new(format!("loop bound reads unknown field @{name}")))?;
                let f = l.fields[pos as usize];
                if !f.elem.is_int() || !f.shape.is_empty() {
                    return Err(CodegenError::new(format!("loop bound @{name} is not a 0-D integer field")));
                }
                let base = self.base(l, pos)?;
                let raw = self.b.build_load(l.mem_ty(f.elem), base, "")?.into_int_value();
                if f.elem == Scalar::I1 {
                    return Ok(self.b.build_int_z_extend_or_bit_cast(raw, ity, "")?);
                }
                raw
            }
        };
        Ok(self.b.build_int_cast_sign_flag(v, ity, true, "")?)
    }

    /// The loop of a parallel task entry over linear indices
    /// `[begin, end)`; `vars` maps a linear index to the task's variables.
    pub(super) fn chunk_loop(
        &mut self,
        l: &mut Lowering<'a, 'ctx>,
        block: kiln::ir::Block,
        begin: IntValue<'ctx>,
        end: IntValue<'ctx>,
        ranges: &[(Value, IntValue<'ctx>, IntValue<'ctx>)],
        vars: impl Fn(&mut Self, &Lowering<'a, 'ctx>, IntValue<'ctx>) -> Result<Vec<(Value, IntValue<'ctx>)>>,
    ) -> Result<()> {
        let Exit::Entry(exit) = self.exit else { return Err(bug("chunk loop outside an entry")) };
        let i64t = self.cx.i64_type();
        let emit = |fx: &mut Self, l: &mut Lowering<'a, 'ctx>| {
            let lp = fx.open_counted_loop("chunk", i64t, "lin", end, exit)?;
            for (v, iv) in vars(fx, l, lp.iv)? {
                fx.vals[v] = Some(iv.into());
            }
            fx.begin_iteration(lp.iv)?;
            // `ret` in a parallel task's body ends its iteration, and so
            // does `continue` (the verifier refuses `break` there: its
            // iterations run independently).
            fx.exit = Exit::Entry(lp.latch);
            fx.loops.push((lp.latch, exit));
            fx.block(l, block)?;
            fx.loops.pop();
            fx.exit = Exit::Entry(exit);
            fx.close_counted_loop(&lp, i64t, begin)
        };
        self.versioned(l, block, ranges, emit)
    }

    /// Starts a counted loop `iv in [start, end)` (start supplied when it is
    /// closed): head with the induction phi, the test against `end` that
    /// leaves to `exit`, and the body block, where the builder is left.
    fn open_counted_loop(
        &mut self,
        prefix: &str,
        ty: IntType<'ctx>,
        iv_name: &str,
        end: IntValue<'ctx>,
        exit: BasicBlock<'ctx>,
    ) -> Result<CountedLoop<'ctx>> {
        let pre = self.b.get_insert_block().ok_or_else(|| bug("no insert block"))?;
        let head = self.cx.append_basic_block(self.func, &format!("{prefix}.head"));
        let body_bb = self.cx.append_basic_block(self.func, &format!("{prefix}.body"));
        let latch = self.cx.append_basic_block(self.func, &format!("{prefix}.latch"));
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(head);
        let phi = self.b.build_phi(ty, iv_name)?;
        let iv = phi.as_basic_value().into_int_value();
        let go = self.b.build_int_compare(IntPredicate::SLT, iv, end, "")?;
        self.b.build_conditional_branch(go, body_bb, exit)?;
        self.b.position_at_end(body_bb);
        Ok(CountedLoop { pre, head, latch, phi, iv })
    }

    /// Ends a counted loop's body: falls into the latch (unless the body
    /// already left), steps the variable and closes the phi with `start`.
    fn close_counted_loop(&mut self, lp: &CountedLoop<'ctx>, ty: IntType<'ctx>, start: IntValue<'ctx>) -> Result<()> {
        if self.open() {
            self.b.build_unconditional_branch(lp.latch)?;
        }
        self.b.position_at_end(lp.latch);
        // `iv < end` held, so `iv + 1` cannot overflow.
        let next = self.b.build_int_nsw_add(lp.iv, ty.const_int(1, false), "")?;
        self.b.build_unconditional_branch(lp.head)?;
        lp.phi.add_incoming(&[(&start, lp.pre), (&next, lp.latch)]);
        Ok(())
    }
}

/// The ranges of a `struct_for`'s variables over the chunk `[begin, end)`
/// of row-major linear indices: the outermost from the chunk's ends, the
/// others their whole extent.
fn struct_for_ranges<'ctx>(
    fx: &mut FnCx<'_, 'ctx>,
    var_tys: &[(Value, Scalar)],
    shape: &[u64],
    begin: IntValue<'ctx>,
    end: IntValue<'ctx>,
) -> Result<Vec<(Value, IntValue<'ctx>, IntValue<'ctx>)>> {
    let i64t = fx.cx.i64_type();
    let one = i64t.const_int(1, false);
    let mut ranges = Vec::with_capacity(var_tys.len());
    for (d, &(v, _)) in var_tys.iter().enumerate() {
        let extent = shape.get(d).copied().unwrap_or(1);
        if d == 0 {
            let stride = i64t.const_int(shape.iter().skip(1).product::<u64>().max(1), false);
            let last = fx.b.build_int_sub(end, one, "")?;
            let min = fx.b.build_int_signed_div(begin, stride, "")?;
            let max = fx.b.build_int_signed_div(last, stride, "")?;
            ranges.push((v, min, max));
        } else {
            ranges.push((v, i64t.const_zero(), i64t.const_int(extent.wrapping_sub(1), true)));
        }
    }
    Ok(ranges)
}

/// The two copies of a versioned loop.
#[derive(Clone, Copy)]
enum LoopCopy {
    /// The copy the pre-loop test chose: the accesses it proved unchecked;
    /// vectorised, interleaved and tail-folded if it computes Kiln's own
    /// math.
    Fast { kiln_math: bool },
    /// Every access checked: runs only when some access fails.
    Checked,
}

/// The blocks and induction variable of a counted loop being emitted.
struct CountedLoop<'ctx> {
    pre: BasicBlock<'ctx>,
    head: BasicBlock<'ctx>,
    latch: BasicBlock<'ctx>,
    phi: PhiValue<'ctx>,
    iv: IntValue<'ctx>,
}

/// Where the checked copy of a versioned loop goes.
#[derive(Clone, Default)]
pub(super) enum Checked<'a> {
    /// Beside the fast copy, in the same function (serial tasks, functions).
    #[default]
    Inline,
    /// A parallel task's chunk loop: in an unoptimised entry of its own
    /// (`Lowering::checked_entry`), the symbol and task to lower it from.
    Outline(String, TaskSource<'a>),
    /// Inside that entry: nothing is versioned.
    Off,
}

/// Whether every statement of `block` (loops nested in it included) runs
/// in every iteration once the ones before it have: no `if` or `while`.
fn straight_line(body: &Body, block: kiln::ir::Block) -> bool {
    let mut straight = true;
    body.walk(block, &mut |s| {
        straight &= !matches!(body.stmt(s).kind, StmtKind::If { .. } | StmtKind::While { .. });
    });
    straight
}
