//! Lowering of KIR task bodies and functions to LLVM IR.
//!
//! Owns: the translation of one task (or several, for the whole-kernel
//! path) and the functions it calls into an inkwell [`Module`], with the
//! exact semantics of `docs/language.md`: wrapping integers, no undefined
//! behaviour on division, shifts or float-to-int casts, Kiln's own `f32`
//! `sin`/`cos`/`tan`/`exp`/`log`/`tanh` inline (`lower::kmath`) and libm calls for the
//! other transcendental functions (the same ones Rust's `f32`/`f64` methods
//! call, so the interpreter and the JIT agree bit for bit), and bounds checks
//! that report through the error slot of the task context
//! (`docs/runtime.md`).
//!
//! Must never: embed the name of a task or a kernel in the code it emits
//! (identical tasks of different kernels must produce identical objects),
//! emit an instruction whose result can be undefined on some input, or
//! touch a target machine (see `kiln_llvm::target`).

mod access;
mod kmath;
mod loops;
mod ops;
mod print;
mod random;
mod vecmath;
mod versioning;

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::intrinsics::Intrinsic;
use inkwell::llvm_sys;
use inkwell::module::{Linkage, Module};
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum, StructType};
use inkwell::values::{
    AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, FloatValue, FunctionValue, InstructionValue,
    IntValue, MetadataValue, PointerValue,
};
use inkwell::{AddressSpace, AtomicOrdering, FloatPredicate, IntPredicate};
use kiln::config::{CompileConfig, Denormals};
use kiln::ir::{
    BinOp, Body, CmpOp, Const, Field, Func, Name, Scalar, SecondaryMap, Stmt, StmtKind, TaskKind, Type, UnOp, Value,
    ValueDef,
};
use kiln_llvm::sites::{Numbering, NO_STMT};
use kiln_llvm::CodegenError;
use std::collections::HashMap;

use kiln::ir::MAX_RANK;

use kiln_llvm::abi::{self, CTX_BEGIN, CTX_END, CTX_ERROR, CTX_FIELDS, CTX_PARAMS};

type Result<T> = std::result::Result<T, CodegenError>;

fn bug(what: impl std::fmt::Display) -> CodegenError {
    CodegenError::new(format!("internal codegen error: {what}"))
}

/// A task to lower: its body, the block holding its statements, how it
/// runs, and which of the body's values are read from parameter slots.
#[derive(Clone, Copy)]
pub struct TaskSource<'a> {
    pub body: &'a Body,
    pub block: kiln::ir::Block,
    pub kind: &'a TaskKind,
    /// `params[k]` is read from slot `k` of the context.
    pub params: &'a [Value],
}

/// How a module holds a function (see [`Lowering::add_funcs_as`]).
pub enum FuncUse {
    /// Defined here under this symbol.
    Define(String),
    /// Declared under this symbol: a function record, defined by an object
    /// of its own (`kiln::key::functions`).
    Declare(String),
}

/// Builds one LLVM module: the functions, then one or more task entries.
pub struct Lowering<'a, 'ctx> {
    cx: &'ctx Context,
    pub module: Module<'ctx>,
    fast_math: bool,
    bounds_checks: bool,
    /// Whether the compile is at `-O0` (Kiln's math is then called, not
    /// inlined: [`MathCalls::KilnCalls`]).
    quick: bool,
    /// The field table: the position of a field is the index of its base
    /// pointer in the context.
    fields: Vec<&'a Field>,
    field_pos: HashMap<&'a str, u32>,
    funcs: HashMap<&'a str, (FunctionValue<'ctx>, &'a Func)>,
    /// Functions that may report an error (they touch a field, or call one
    /// that may): a call to one is followed by a check of the error slot.
    may_fail: HashMap<&'a str, bool>,
    ctx_ty: StructType<'ctx>,
    oob: Option<FunctionValue<'ctx>>,
    /// Each field's `alias.scope` and `noalias` lists, made on first use
    /// (`lower::access`).
    alias_tags: Vec<Option<(MetadataValue<'ctx>, MetadataValue<'ctx>)>>,
    /// Numbers the statements of the bodies in the order they are defined
    /// (`kiln_llvm::sites`): the number a failed access reports.
    numbering: Numbering,
    cpu_attr: Attribute,
    features_attr: Attribute,
    /// LLVM's `denormal-fp-math` for the configured mode (none for IEEE,
    /// LLVM's default): the code runs with subnormals flushed
    /// (`kiln::fpenv`), and LLVM must not assume otherwise.
    denormal_attrs: Vec<Attribute>,
    /// In fast-math mode, the vector width the vectoriser is told to
    /// prefer (`vecmath::preferred_width`).
    width_attr: Option<Attribute>,
    /// The inline-asm register constraint that hides a float constant from
    /// LLVM's constant folder (see [`FnCx::float_constant`]); `None` on
    /// targets without one.
    float_barrier: Option<&'static str>,
    /// The vector ISAs the target allows libm's vector variants in
    /// (`lower::vecmath`), as (ABI letter, bits).
    vector_isas: Vec<(char, u32)>,
}

/// How a compile computes the math operators (`docs/runtime.md`), and so
/// which of them a vectorised loop can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MathCalls {
    /// Default mode: Kiln's own `f32` functions inline (`lower::kmath`),
    /// the other operators libm's scalar functions.
    Kiln,
    /// Default mode at `-O0`: Kiln's own functions called in the runtime
    /// (`kiln_llvm::abi::MATH_RUNTIME`, the same operations compiled
    /// once, optimised), which keeps a quick compile quick; nothing
    /// vectorises at `-O0`.
    KilnCalls,
    /// Fast-math on a target with libmvec's variants (`lower::vecmath`):
    /// every operator vectorises.
    VectorLibm,
    /// Fast-math elsewhere: libm's scalar functions.
    ScalarLibm,
}

impl MathCalls {
    /// Kiln's own function computing `op` on `ty` in this compile, if any.
    fn kiln_func(self, op: UnOp, ty: Scalar) -> Option<kiln::math::MathFunc> {
        op.kiln_math(ty).filter(|_| matches!(self, MathCalls::Kiln | MathCalls::KilnCalls))
    }
    /// Whether a loop computing `op` on `ty` can vectorise.
    fn unary_vectorises(self, op: UnOp, ty: Scalar) -> bool {
        self == MathCalls::VectorLibm
            || op.libm().is_none()
            || (self == MathCalls::Kiln && self.kiln_func(op, ty).is_some())
    }
    /// Whether a loop computing `op` can vectorise.
    fn binary_vectorises(self, op: BinOp) -> bool {
        self == MathCalls::VectorLibm || op.libm().is_none()
    }
}

impl<'a, 'ctx> Lowering<'a, 'ctx> {
    /// A module named `name` whose tasks see `fields` in this order.
    pub fn new(
        cx: &'ctx Context,
        name: &str,
        config: &CompileConfig,
        triple: &str,
        cpu: &str,
        features: &str,
        fields: Vec<&'a Field>,
    ) -> Lowering<'a, 'ctx> {
        let ctx_ty = abi::context_type(cx);
        let field_pos = fields.iter().enumerate().map(|(i, f)| (f.name.as_str(), i as u32)).collect();
        let vector_isas = vecmath::vector_isas(triple, features);
        Lowering {
            cx,
            module: cx.create_module(name),
            fast_math: config.fast_math,
            bounds_checks: config.bounds_checks,
            quick: config.opt_level == kiln::config::OptLevel::O0,
            fields,
            field_pos,
            funcs: HashMap::new(),
            may_fail: HashMap::new(),
            ctx_ty,
            oob: None,
            alias_tags: Vec::new(),
            numbering: Numbering::default(),
            cpu_attr: cx.create_string_attribute("target-cpu", cpu),
            features_attr: cx.create_string_attribute("target-features", features),
            denormal_attrs: match config.denormals {
                Denormals::Preserve => Vec::new(),
                Denormals::Flush => ["denormal-fp-math", "denormal-fp-math-f32"]
                    .map(|k| cx.create_string_attribute(k, "preserve-sign,preserve-sign"))
                    .to_vec(),
            },
            width_attr: config
                .fast_math
                .then(|| vecmath::preferred_width(&vector_isas))
                .flatten()
                .map(|bits| cx.create_string_attribute("prefer-vector-width", &bits.to_string())),
            vector_isas,
            float_barrier: if triple.starts_with("x86_64") || triple.starts_with("i686") {
                Some("=x,0")
            } else if triple.starts_with("aarch64") {
                Some("=w,0")
            } else {
                None
            },
        }
    }

    /// Declares and defines functions (each name once; a second function of
    /// the same name must be identical to the first), each under
    /// `kiln_fn.NAME`.
    pub fn add_funcs(&mut self, funcs: impl IntoIterator<Item = &'a Func>) -> Result<()> {
        self.add_funcs_as(funcs, |f| Some(FuncUse::Define(format!("kiln_fn.{}", f.name))))
    }

    /// [`Lowering::add_funcs`], with `how` deciding for each function
    /// whether this module defines it, declares it (a function record
    /// another object defines) or leaves it out. Every function's
    /// statements are numbered in the order given, whatever `how` says, so
    /// a task's numbers stay those of its whole module (`kiln_llvm::sites`).
    pub fn add_funcs_as(
        &mut self,
        funcs: impl IntoIterator<Item = &'a Func>,
        how: impl Fn(&Func) -> Option<FuncUse>,
    ) -> Result<()> {
        let mut new = Vec::new();
        for f in funcs {
            if let Some((_, prev)) = self.funcs.get(f.name.as_str()) {
                if !prev.same_as(f) {
                    return Err(CodegenError::new(format!(
                        "two different definitions of function @{} in one kernel",
                        f.name
                    )));
                }
                continue;
            }
            let use_ = how(f);
            if let Some(u) = &use_ {
                let (symbol, define) = match u {
                    FuncUse::Define(s) => (s, true),
                    FuncUse::Declare(s) => (s, false),
                };
                let fv = self.declare_func(f, symbol);
                if define {
                    self.set_fn_attrs(fv);
                }
                self.funcs.insert(f.name.as_str(), (fv, f));
            }
            new.push((f, matches!(use_, Some(FuncUse::Define(_)))));
        }
        for (f, _) in &new {
            self.compute_may_fail(f.name.as_str(), &mut Vec::new());
        }
        for (f, define) in new {
            if define {
                self.define_func(f)?;
            } else {
                self.numbering.number(&f.body);
            }
        }
        Ok(())
    }

    /// The LLVM function of `f` under `symbol`. External linkage, under
    /// prefixes no other symbol uses: every object that copies @f defines
    /// `kiln_fn.f`, and each object lives in its own dylib; a record's
    /// symbol is named from its key (see docs/runtime.md).
    fn declare_func(&self, f: &Func, symbol: &str) -> FunctionValue<'ctx> {
        let mut params: Vec<BasicMetadataTypeEnum> = vec![self.cx.ptr_type(AddressSpace::default()).into()];
        params.extend(f.params.iter().map(|p| BasicMetadataTypeEnum::from(self.reg_ty(p.ty))));
        let fn_ty = match f.ret {
            Some(t) => self.reg_ty(t).fn_type(&params, false),
            None => self.cx.void_type().fn_type(&params, false),
        };
        self.module.add_function(symbol, fn_ty, Some(Linkage::External))
    }

    fn compute_may_fail(&mut self, name: &'a str, stack: &mut Vec<&'a str>) -> bool {
        if let Some(&b) = self.may_fail.get(name) {
            return b;
        }
        let Some(&(_, f)) = self.funcs.get(name) else { return false };
        if stack.contains(&name) {
            // Recursion: assume the worst while the cycle is open.
            return true;
        }
        stack.push(name);
        let mut fails = false;
        let mut callees = Vec::new();
        f.body.walk(f.body.entry, &mut |s| {
            let kind = &f.body.stmt(s).kind;
            fails |= kind.access().is_some();
            if let StmtKind::Call(callee, ..) = kind {
                callees.push(callee.as_str());
            }
        });
        for c in callees {
            let key = self.funcs.get_key_value(c).map(|(k, _)| *k);
            if let Some(k) = key {
                fails |= self.compute_may_fail(k, stack);
            }
        }
        stack.pop();
        self.may_fail.insert(name, fails);
        fails
    }

    fn set_fn_attrs(&self, fv: FunctionValue<'ctx>) {
        fv.add_attribute(AttributeLoc::Function, self.cpu_attr);
        fv.add_attribute(AttributeLoc::Function, self.features_attr);
        fv.add_attribute(AttributeLoc::Function, self.enum_attr("nounwind"));
        for a in self.denormal_attrs.iter().chain(&self.width_attr) {
            fv.add_attribute(AttributeLoc::Function, *a);
        }
    }

    /// How this compile computes the math operators.
    fn math_calls(&self) -> MathCalls {
        match (self.fast_math, self.vector_isas.is_empty()) {
            (false, _) if self.quick => MathCalls::KilnCalls,
            (false, _) => MathCalls::Kiln,
            (true, false) => MathCalls::VectorLibm,
            (true, true) => MathCalls::ScalarLibm,
        }
    }

    /// An enum attribute by name. Only names LLVM 22 knows are used; an
    /// unknown one (kind 0) would crash LLVM's verifier.
    fn enum_attr(&self, name: &str) -> Attribute {
        let kind = Attribute::get_named_enum_kind_id(name);
        debug_assert!(kind != 0, "LLVM has no attribute `{name}`");
        self.cx.create_enum_attribute(kind, 0)
    }

    fn reg_ty(&self, t: Scalar) -> BasicTypeEnum<'ctx> {
        match t {
            Scalar::F16 => self.cx.f16_type().into(),
            Scalar::F32 => self.cx.f32_type().into(),
            Scalar::F64 => self.cx.f64_type().into(),
            // Signed and unsigned integers of one width are one LLVM type;
            // the operations that read them choose the signedness.
            t => fx_int_ty(self.cx, t).into(),
        }
    }

    /// The type an element occupies in a field (`i1` is one byte).
    fn mem_ty(&self, t: Scalar) -> BasicTypeEnum<'ctx> {
        match t {
            Scalar::I1 => self.cx.i8_type().into(),
            t => self.reg_ty(t),
        }
    }

    fn zero(&self, t: Scalar) -> BasicValueEnum<'ctx> {
        self.reg_ty(t).const_zero()
    }

    fn constant(&self, c: Const) -> BasicValueEnum<'ctx> {
        match c.ty {
            // Through the integer bits, so NaN payloads and -0.0 survive.
            Scalar::F16 | Scalar::F32 | Scalar::F64 => {
                let ty = self.reg_ty(c.ty);
                let words = [c.ty.wrap_bits(c.bits)];
                // SAFETY: `ty` is a float type of this context and `words`
                // holds the one word its bits need; the result is a constant
                // of that type.
                unsafe {
                    use inkwell::types::AsTypeRef;
                    BasicValueEnum::new(llvm_sys::core::LLVMConstFPFromBits(ty.as_type_ref(), words.as_ptr()))
                }
            }
            t => self.reg_ty(t).into_int_type().const_int(t.wrap_bits(c.bits), false).into(),
        }
    }

    fn define_func(&mut self, f: &'a Func) -> Result<()> {
        let (fv, _) = self.funcs[f.name.as_str()];
        let mut fx = FnCx::new(self, fv, &f.body, Exit::Func(f.ret))?;
        fx.stmt_no = self.numbering.number(&f.body);
        for (k, &v) in f.body.params.iter().enumerate() {
            let p = fv.get_nth_param(k as u32 + 1).ok_or_else(|| bug("parameter count"))?;
            fx.vals[v] = Some(p);
        }
        let start = fx.start;
        fx.b.position_at_end(start);
        fx.block(self, f.body.entry)?;
        if fx.open() {
            fx.ret_default(self)?;
        }
        fx.finish()
    }

    /// Checks the module (a failure is a bug in this lowering).
    pub fn verify(&self) -> Result<()> {
        self.module.verify().map_err(|e| bug(format!("invalid LLVM IR: {}", e.to_string_lossy())))
    }
}

/// The LLVM integer type of an integer scalar's width.
fn fx_int_ty(cx: &Context, t: Scalar) -> inkwell::types::IntType<'_> {
    match t.bits() {
        1 => cx.bool_type(),
        8 => cx.i8_type(),
        16 => cx.i16_type(),
        32 => cx.i32_type(),
        _ => cx.i64_type(),
    }
}

/// Where control goes when a body returns.
#[derive(Clone, Copy)]
enum Exit<'ctx> {
    /// A function: `ret` returns (a value of this type).
    Func(Option<Scalar>),
    /// A task entry: `ret` ends the current iteration (branches here, or to
    /// the loop latch of a parallel task).
    Entry(BasicBlock<'ctx>),
}

/// The state of one function being lowered.
struct FnCx<'a, 'ctx> {
    cx: &'ctx Context,
    b: Builder<'ctx>,
    /// Builds in the prologue: allocas and loads of base pointers.
    pb: Builder<'ctx>,
    func: FunctionValue<'ctx>,
    body: &'a Body,
    ctx: PointerValue<'ctx>,
    start: BasicBlock<'ctx>,
    prologue: BasicBlock<'ctx>,
    vals: SecondaryMap<Value, Option<BasicValueEnum<'ctx>>>,
    bases: HashMap<u32, PointerValue<'ctx>>,
    err: Option<PointerValue<'ctx>>,
    /// (continue target, break target) of the enclosing loops.
    loops: Vec<(BasicBlock<'ctx>, BasicBlock<'ctx>)>,
    exit: Exit<'ctx>,
    /// The block that leaves the function after an error was reported.
    abort: Option<BasicBlock<'ctx>>,
    /// The array a failed access's indices are passed to the reporter in
    /// (`lower::access`), allocated in the prologue on first use.
    oob_index: Option<PointerValue<'ctx>>,
    /// The array a `print`'s values are passed to the printer in
    /// (`lower::print`), allocated in the prologue on first use.
    print_values: Option<PointerValue<'ctx>>,
    /// Where a versioned loop's checked copy goes (`lower::loops`).
    checked: loops::Checked<'a>,
    /// The number of each statement of `body` (`kiln_llvm::sites`), and of
    /// the one being lowered.
    stmt_no: SecondaryMap<Stmt, u32>,
    cur_stmt: u32,
    /// The statement being lowered, and the accesses whose bounds the
    /// enclosing versioned loop's test proved (`lower::versioning`): empty
    /// outside the fast copy of such a loop.
    cur: Option<Stmt>,
    proven: versioning::Proven,
    /// The exact `i64` value of a chunk loop's variable (`range_for`: the
    /// linear index; `struct_for`: its index before truncation), which the
    /// fast copy's proven indices are computed from.
    wide: HashMap<Value, IntValue<'ctx>>,
    /// The random stream of a task entry whose body draws
    /// (`lower::random`).
    rand: Option<random::Stream<'ctx>>,
}

impl<'a, 'ctx> FnCx<'a, 'ctx> {
    fn new(l: &Lowering<'a, 'ctx>, func: FunctionValue<'ctx>, body: &'a Body, exit: Exit<'ctx>) -> Result<Self> {
        let cx = l.cx;
        if func.get_first_basic_block().is_some() {
            return Err(bug("function already has a body"));
        }
        let prologue = cx.append_basic_block(func, "prologue");
        let start = cx.append_basic_block(func, "start");
        let b = cx.create_builder();
        let pb = cx.create_builder();
        pb.position_at_end(prologue);
        let ctx = func.get_nth_param(0).ok_or_else(|| bug("context parameter"))?.into_pointer_value();
        Ok(FnCx {
            cx,
            b,
            pb,
            func,
            body,
            ctx,
            start,
            prologue,
            vals: SecondaryMap::for_arena(body.values(), None),
            bases: HashMap::new(),
            err: None,
            loops: Vec::new(),
            exit,
            abort: None,
            oob_index: None,
            print_values: None,
            checked: loops::Checked::Inline,
            stmt_no: SecondaryMap::with_default(NO_STMT),
            cur_stmt: NO_STMT,
            cur: None,
            proven: HashMap::new(),
            wide: HashMap::new(),
            rand: None,
        })
    }

    fn finish(self) -> Result<()> {
        self.pb.position_at_end(self.prologue);
        self.pb.build_unconditional_branch(self.start)?;
        Ok(())
    }

    /// Whether the current block still needs a terminator.
    fn open(&self) -> bool {
        self.b.get_insert_block().is_some_and(|bb| bb.get_terminator().is_none())
    }

    /// Continues in a fresh unreachable block when the current one ended
    /// (statements after `break`, `continue` or `ret`).
    fn ensure_open(&mut self) {
        if !self.open() {
            let dead = self.cx.append_basic_block(self.func, "dead");
            self.b.position_at_end(dead);
        }
    }

    fn ret_default(&mut self, l: &Lowering<'a, 'ctx>) -> Result<()> {
        match self.exit {
            Exit::Func(Some(t)) => {
                self.b.build_return(Some(&l.zero(t)))?;
            }
            Exit::Func(None) => {
                self.b.build_return(None)?;
            }
            Exit::Entry(bb) => {
                self.b.build_unconditional_branch(bb)?;
            }
        }
        Ok(())
    }

    fn abort_block(&mut self, l: &Lowering<'a, 'ctx>) -> Result<BasicBlock<'ctx>> {
        if let Some(bb) = self.abort {
            return Ok(bb);
        }
        let bb = self.cx.append_basic_block(self.func, "abort");
        let here = self.b.get_insert_block();
        self.b.position_at_end(bb);
        self.ret_default(l)?;
        if let Some(h) = here {
            self.b.position_at_end(h);
        }
        self.abort = Some(bb);
        Ok(bb)
    }

    fn err_slot(&mut self, l: &Lowering<'a, 'ctx>) -> Result<PointerValue<'ctx>> {
        if let Some(p) = self.err {
            return Ok(p);
        }
        let ptr = self.cx.ptr_type(AddressSpace::default());
        let pp = self.pb.build_struct_gep(l.ctx_ty, self.ctx, CTX_ERROR, "err.pp")?;
        let p = self.pb.build_load(ptr, pp, "err")?.into_pointer_value();
        self.err = Some(p);
        Ok(p)
    }

    fn base(&mut self, l: &Lowering<'a, 'ctx>, pos: u32) -> Result<PointerValue<'ctx>> {
        if let Some(&p) = self.bases.get(&pos) {
            return Ok(p);
        }
        let ptr = self.cx.ptr_type(AddressSpace::default());
        let i64t = self.cx.i64_type();
        let pp = self.pb.build_struct_gep(l.ctx_ty, self.ctx, CTX_FIELDS, "fields.pp")?;
        let arr = self.pb.build_load(ptr, pp, "fields")?.into_pointer_value();
        // SAFETY: the context's field array holds a base for every field of
        // the launch metadata, `pos` among them.
        let at = unsafe { self.pb.build_in_bounds_gep(ptr, arr, &[i64t.const_int(pos as u64, false)], "") }?;
        let name = format!("base.{}", l.fields[pos as usize].name);
        let p = self.pb.build_load(ptr, at, &name)?.into_pointer_value();
        self.bases.insert(pos, p);
        Ok(p)
    }

    fn val(&self, v: Value) -> Result<BasicValueEnum<'ctx>> {
        self.vals[v].ok_or_else(|| {
            let d = self.body.value(v);
            if d.def == ValueDef::Undefined {
                CodegenError::new(format!("use of undefined value %{}", d.name))
            } else {
                bug(format!("value %{} used before its definition", d.name))
            }
        })
    }

    fn ival(&self, v: Value) -> Result<IntValue<'ctx>> {
        match self.val(v)? {
            BasicValueEnum::IntValue(i) => Ok(i),
            _ => Err(bug(format!("%{} is not an integer", self.body.name(v)))),
        }
    }

    fn scalar(&self, v: Value) -> Result<Scalar> {
        self.body.ty(v).scalar().ok_or_else(|| bug(format!("%{} is a slot, not a scalar", self.body.name(v))))
    }

    fn block(&mut self, l: &mut Lowering<'a, 'ctx>, blk: kiln::ir::Block) -> Result<()> {
        for &s in self.body.block(blk) {
            self.ensure_open();
            self.cur_stmt = self.stmt_no[s];
            self.cur = Some(s);
            self.stmt(l, s)?;
        }
        Ok(())
    }

    fn fmf(&self, l: &Lowering<'a, 'ctx>, v: impl AsValueRef) {
        if l.fast_math {
            let r = v.as_value_ref();
            // SAFETY: `r` is a live value of this module; the check only
            // reads its kind.
            if !unsafe { llvm_sys::core::LLVMIsAInstruction(r) }.is_null() {
                // SAFETY: `r` was just found to be an instruction.
                let _ = unsafe { InstructionValue::new(r) }.set_fast_math_flags(inkwell::values::FastMathFlags::all());
            }
        }
    }

    /// Lowers one statement: by kind, to the phase that emits it, then
    /// binds its result.
    fn stmt(&mut self, l: &mut Lowering<'a, 'ctx>, s: Stmt) -> Result<()> {
        let data = self.body.stmt(s);
        let result = match &data.kind {
            StmtKind::Const(_)
            | StmtKind::Binary(..)
            | StmtKind::Unary(..)
            | StmtKind::Cmp(..)
            | StmtKind::Cast(..)
            | StmtKind::BitCast(..)
            | StmtKind::Select(..) => Some(self.value_stmt(l, &data.kind)?),
            StmtKind::Load(r) => Some(self.load(l, r)?),
            StmtKind::Store(r, v) => {
                self.store(l, r, *v)?;
                None
            }
            StmtKind::Atomic(op, r, v) => Some(self.atomic(l, *op, r, *v)?),
            StmtKind::Random { ty, site } => Some(self.random_stmt(*ty, *site)?),
            StmtKind::Alloca(_) | StmtKind::LoadSlot(_) | StmtKind::StoreSlot(..) => self.slot_stmt(l, &data.kind)?,
            StmtKind::Call(name, args, _) => self.call(l, name, args)?,
            StmtKind::Assert { cond, args, .. } => {
                self.assert_stmt(l, *cond, args)?;
                None
            }
            StmtKind::Print { .. } => {
                self.print_stmt(l, &data.kind.print_values())?;
                None
            }
            StmtKind::Ret(v) => {
                self.ret(*v)?;
                None
            }
            StmtKind::If { cond, then_blk, else_blk } => {
                self.if_stmt(l, *cond, *then_blk, *else_blk)?;
                None
            }
            StmtKind::For { var, lo, hi, body, .. } => {
                self.for_stmt(l, *var, lo, hi, *body)?;
                None
            }
            StmtKind::While { body } => {
                self.while_stmt(l, *body)?;
                None
            }
            StmtKind::Break | StmtKind::Continue => {
                let &(cont, brk) =
                    self.loops.last().ok_or_else(|| CodegenError::new("`break` or `continue` outside a loop"))?;
                let to = if matches!(data.kind, StmtKind::Break) { brk } else { cont };
                self.b.build_unconditional_branch(to)?;
                None
            }
            StmtKind::Task { name, .. } => {
                return Err(CodegenError::new(format!("task @{name} nested in a body (run offload and split-tasks)")))
            }
            StmtKind::Launch(name) => return Err(CodegenError::new(format!("`launch @{name}` in a task body"))),
        };
        if let (Some(rv), Some(v)) = (data.result, result) {
            self.vals[rv] = Some(v);
        }
        Ok(())
    }

    /// The statements that compute a value from values: constants,
    /// operators, comparisons, casts, bit casts and `select`.
    fn value_stmt(&mut self, l: &mut Lowering<'a, 'ctx>, kind: &StmtKind) -> Result<BasicValueEnum<'ctx>> {
        Ok(match kind {
            StmtKind::Const(c) if c.ty.is_float() => self.float_constant(l, *c)?,
            StmtKind::Const(c) => l.constant(*c),
            StmtKind::Binary(op, a, b) => self.binary(l, *op, *a, *b)?,
            StmtKind::Unary(op, a) => self.unary(l, *op, *a)?,
            StmtKind::Cmp(op, a, b) => self.cmp(l, *op, *a, *b)?.into(),
            StmtKind::Cast(a, to) => self.cast(l, *a, *to)?,
            StmtKind::BitCast(a, to) => self.bitcast(l, *a, *to)?,
            StmtKind::Select(c, a, b) => {
                let c = self.ival(*c)?;
                self.b.build_select(c, self.val(*a)?, self.val(*b)?, "")?
            }
            _ => return Err(bug("value_stmt on another statement")),
        })
    }

    /// `alloca`, and loads and stores of a slot.
    fn slot_stmt(&mut self, l: &mut Lowering<'a, 'ctx>, kind: &StmtKind) -> Result<Option<BasicValueEnum<'ctx>>> {
        Ok(match kind {
            StmtKind::Alloca(t) => {
                let slot = self.pb.build_alloca(l.reg_ty(*t), "slot")?;
                // A slot starts at zero each time its statement runs.
                self.b.build_store(slot, l.zero(*t))?;
                Some(slot.into())
            }
            StmtKind::LoadSlot(p) => {
                let Type::Slot(t) = self.body.ty(*p) else { return Err(bug("load from a non-slot")) };
                let ptr = self.val(*p)?.into_pointer_value();
                Some(self.b.build_load(l.reg_ty(t), ptr, "")?)
            }
            StmtKind::StoreSlot(p, v) => {
                let ptr = self.val(*p)?.into_pointer_value();
                self.b.build_store(ptr, self.val(*v)?)?;
                None
            }
            _ => return Err(bug("slot_stmt on another statement")),
        })
    }

    /// `ret`: returns from a function; in a task entry, ends the iteration
    /// (or the serial task).
    fn ret(&mut self, v: Option<Value>) -> Result<()> {
        match self.exit {
            Exit::Func(_) => {
                let rv = v.map(|v| self.val(v)).transpose()?;
                self.b.build_return(rv.as_ref().map(|v| v as &dyn BasicValue))?;
            }
            Exit::Entry(bb) => {
                self.b.build_unconditional_branch(bb)?;
            }
        }
        Ok(())
    }

    fn if_stmt(
        &mut self,
        l: &mut Lowering<'a, 'ctx>,
        cond: Value,
        then_blk: kiln::ir::Block,
        else_blk: Option<kiln::ir::Block>,
    ) -> Result<()> {
        let c = self.ival(cond)?;
        let then_bb = self.cx.append_basic_block(self.func, "then");
        let else_bb = self.cx.append_basic_block(self.func, "else");
        let join = self.cx.append_basic_block(self.func, "endif");
        self.b.build_conditional_branch(c, then_bb, else_bb)?;
        self.b.position_at_end(then_bb);
        self.block(l, then_blk)?;
        if self.open() {
            self.b.build_unconditional_branch(join)?;
        }
        self.b.position_at_end(else_bb);
        if let Some(e) = else_blk {
            self.block(l, e)?;
        }
        if self.open() {
            self.b.build_unconditional_branch(join)?;
        }
        self.b.position_at_end(join);
        Ok(())
    }

    fn call(
        &mut self,
        l: &mut Lowering<'a, 'ctx>,
        name: &Name,
        args: &[Value],
    ) -> Result<Option<BasicValueEnum<'ctx>>> {
        let (fv, may_fail) = match l.funcs.get(name.as_str()) {
            Some(&(fv, _)) => (fv, l.may_fail.get(name.as_str()).copied().unwrap_or(true)),
            None => return Err(CodegenError::new(format!("call to unknown function @{name}"))),
        };
        let mut a: Vec<BasicMetadataValueEnum> = vec![self.ctx.into()];
        for &v in args {
            a.push(self.val(v)?.into());
        }
        let c = self.b.build_call(fv, &a, "")?;
        let r = c.try_as_basic_value().basic();
        if may_fail && l.bounds_checks {
            let err = self.err_slot(l)?;
            let i32t = self.cx.i32_type();
            let state = self.b.build_load(i32t, err, "err.state")?;
            state
                .as_instruction_value()
                .ok_or_else(|| bug("load is not an instruction"))?
                .set_atomic_ordering(AtomicOrdering::Monotonic)
                .map_err(|e| bug(format!("{e:?}")))?;
            state.as_instruction_value().unwrap().set_alignment(4).map_err(|e| bug(format!("{e:?}")))?;
            let failed = self.b.build_int_compare(IntPredicate::NE, state.into_int_value(), i32t.const_zero(), "")?;
            let abort = self.abort_block(l)?;
            let cont = self.cx.append_basic_block(self.func, "call.ok");
            let br = self.b.build_conditional_branch(failed, abort, cont)?;
            self.branch_weights(br, 1, 1 << 20)?;
            self.b.position_at_end(cont);
        }
        Ok(r)
    }
}
