//! The interpreter's lowered form: a body (function, kernel, task item)
//! as flat instructions ([`Code`]) with fields resolved to indices and
//! values to registers, and [`Program::lower`], which lowers a kernel with
//! every function and task it reaches.
//!
//! Owns: the instruction set ([`Inst`]), parallel loops' iteration spaces,
//! the builder that lowers bodies, the statement spans kept for errors, and
//! the task each statement written outside tasks is named by (the one
//! `offload` puts it in, as the JIT names it).
//!
//! Must never: execute anything, or lower a statement the verifier would
//! reject without an error.

use super::*;
use crate::passes::offload::ModuleScope;

/// What offload needs of each module, by module index, made once for all
/// the kernels of a batch of runs.
pub(super) type Scopes = HashMap<usize, ModuleScope>;

pub(super) type Reg = u32;

/// A field element reference with its field resolved.
#[derive(Clone, Debug)]
pub(super) struct Access {
    pub(super) field: u32,
    pub(super) idx: Box<[Reg]>,
    /// The span of the statement that makes the access (run-time errors
    /// name it).
    pub(super) at: Span,
    /// Its statement's index in [`Program::sites`] (for race reports).
    pub(super) site: u32,
}

/// An `assert`: its message, the values its conversions take (registers
/// and types) and its statement's span.
#[derive(Clone, Debug)]
pub(super) struct AssertSite {
    pub(super) message: String,
    pub(super) args: Box<[(Reg, Scalar)]>,
    pub(super) at: Span,
}

/// A `print`: its pieces and the values they take (registers and types).
#[derive(Clone, Debug)]
pub(super) struct PrintSite {
    pub(super) pieces: Box<[PrintPiece]>,
    pub(super) args: Box<[(Reg, Scalar)]>,
}

/// The iterations of a parallel task (`range_for`, `struct_for`).
#[derive(Clone, Debug)]
pub(super) struct ParLoop {
    /// The loop variables (one per dimension of a `struct_for`).
    pub(super) vars: Box<[Reg]>,
    pub(super) space: Space,
    /// The task's statement or item (for race reports).
    pub(super) span: Span,
}

#[derive(Clone, Debug)]
pub(super) enum Space {
    /// `lo .. hi`, evaluated when the launch starts.
    Range { lo: Reg, hi: Reg },
    /// A field's index space, row-major.
    Struct { shape: Box<[u64]> },
}

#[derive(Clone, Debug)]
pub(super) enum Inst {
    /// Fails the run with `Code::asserts[site]` when `cond` is false.
    Assert {
        cond: Reg,
        site: u32,
    },
    /// Appends the text of `Code::prints[site]` to the run's output.
    Print {
        site: u32,
    },
    Const {
        dst: Reg,
        bits: u64,
    },
    Copy {
        dst: Reg,
        src: Reg,
    },
    Bin {
        op: BinOp,
        ty: Scalar,
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    Un {
        op: UnOp,
        ty: Scalar,
        dst: Reg,
        a: Reg,
    },
    Cmp {
        op: CmpOp,
        ty: Scalar,
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    Cast {
        from: Scalar,
        to: Scalar,
        dst: Reg,
        a: Reg,
    },
    BitCast {
        from: Scalar,
        to: Scalar,
        dst: Reg,
        a: Reg,
    },
    Select {
        dst: Reg,
        c: Reg,
        a: Reg,
        b: Reg,
    },
    Load {
        dst: Reg,
        acc: u32,
    },
    Store {
        acc: u32,
        src: Reg,
    },
    Atomic {
        op: AtomicOp,
        dst: Option<Reg>,
        acc: u32,
        src: Reg,
    },
    /// Reads a 0-D integer field as an integer of type `to` (a task
    /// header's `@n[]` bound).
    LoadBound {
        dst: Reg,
        field: u32,
        to: Scalar,
    },
    Call {
        code: u32,
        args: u32,
        dst: Option<Reg>,
    },
    Ret {
        val: Option<Reg>,
    },
    Jump {
        to: u32,
    },
    JumpIfNot {
        cond: Reg,
        to: u32,
    },
    /// Enters a counted loop: jumps to `exit` unless `var < hi`.
    ForEnter {
        var: Reg,
        hi: Reg,
        exit: u32,
    },
    /// Ends an iteration: `var += 1`, and jumps to `body` while `var < hi`.
    ForNext {
        var: Reg,
        hi: Reg,
        body: u32,
    },
    /// Starts a launch of the parallel loop `par` of this code: jumps to
    /// `exit` when it has no iteration, else sets the variables of the
    /// first iteration in the run order.
    ParBegin {
        par: u32,
        exit: u32,
    },
    /// Ends an iteration of the current parallel launch: sets the next
    /// iteration's variables and jumps to `body`, or falls through.
    ParNext {
        body: u32,
    },
    /// Ends the current parallel launch (an error if it raced).
    ParEnd,
    /// Starts the random stream of the kernel's `ordinal`-th launch:
    /// iteration 0, no draws yet (`crate::random`).
    BeginTask {
        ordinal: u32,
    },
    /// `random`: a value of `ty` from the stream, at `site`.
    Random {
        dst: Reg,
        ty: Scalar,
        site: u32,
    },
    /// Sets the task named in run-time errors (`u32::MAX`: none).
    SetTask {
        task: u32,
    },
    Launch {
        code: u32,
    },
    End,
}

/// One lowered body.
#[derive(Debug)]
pub(super) struct Code {
    pub(super) insts: Vec<Inst>,
    pub(super) nregs: usize,
    /// Registers of the parameters, in order.
    pub(super) params: Vec<Reg>,
    pub(super) accesses: Vec<Access>,
    pub(super) asserts: Vec<AssertSite>,
    pub(super) prints: Vec<PrintSite>,
    pub(super) pars: Vec<ParLoop>,
    /// Argument register lists of calls.
    pub(super) arglists: Vec<Box<[Reg]>>,
    /// For a task item: where each parameter's value comes from (an index
    /// into the kernel's arguments).
    pub(super) param_from_kernel: Vec<usize>,
    /// For a task item: its name's index in [`Program::task_names`].
    pub(super) task: u32,
    /// What the code is, for error messages (`function @f`).
    pub(super) what: String,
    pub(super) has_result: bool,
}

#[derive(Debug)]
pub(super) struct FieldInfo {
    pub(super) name: Name,
    pub(super) elem: Scalar,
    pub(super) shape: Vec<u64>,
}

/// A kernel lowered together with every function and task it reaches.
#[derive(Debug)]
pub(super) struct Program {
    pub(super) kernel: Name,
    pub(super) kernel_params: Vec<Scalar>,
    pub(super) codes: Vec<Code>,
    /// Index of the kernel's code in `codes`.
    pub(super) entry: usize,
    pub(super) fields: Vec<FieldInfo>,
    pub(super) task_names: Vec<Name>,
    /// The statement of each field access site.
    pub(super) sites: Vec<Span>,
}

pub(super) const NO_TASK: u32 = u32::MAX;

pub(super) fn err(msg: impl Into<String>) -> RunError {
    RunError::new(msg)
}

/// Lowering state shared by all bodies of one program.
pub(super) struct ProgramBuilder<'s> {
    /// The stream's items by name, indexed once for every lookup (once for
    /// a batch of runs).
    pub(super) items: &'s StreamIndex<'s>,
    pub(super) kernel: &'s Kernel,
    /// The kernel's parameters by name (tasks bind theirs by name).
    pub(super) kernel_params: HashMap<&'s str, usize>,
    pub(super) codes: Vec<Option<Code>>,
    pub(super) fields: Vec<FieldInfo>,
    pub(super) field_ids: HashMap<Name, u32>,
    /// Functions by (module index, name), and task items by name.
    pub(super) func_ids: HashMap<(usize, Name), u32>,
    pub(super) task_ids: HashMap<Name, u32>,
    pub(super) task_names: Vec<Name>,
    pub(super) task_name_ids: HashMap<Name, u32>,
    /// Functions being lowered (a call back into one is recursion).
    pub(super) in_progress: Vec<u32>,
    /// Their names, innermost last (for the nesting-limit error).
    pub(super) in_progress_names: Vec<Name>,
    /// Blocks being lowered, counted across calls: see [`MAX_DEPTH`].
    pub(super) depth: usize,
    pub(super) sites: Vec<Span>,
    /// How many tasks the kernel launched before the one being lowered
    /// (a task statement or a `launch`): the next one's random stream.
    pub(super) launches: u32,
}

/// How deeply blocks and calls may nest, counted together (every function
/// body is a block): the language's limit, which the verifier enforces.
/// Lowering recurses on both and running recurses on calls; the check here
/// guards unverified IR.
pub const MAX_DEPTH: usize = crate::verifier::MAX_CALL_DEPTH;

/// Where a jump must be patched in once its target is known.
#[derive(Default)]
pub(super) struct LoopPatches {
    pub(super) breaks: Vec<usize>,
    pub(super) continues: Vec<usize>,
}

/// Lowering state of one body.
pub(super) struct BodyLowerer<'a> {
    pub(super) body: &'a Body,
    pub(super) module: usize,
    pub(super) insts: Vec<Inst>,
    pub(super) nregs: u32,
    /// The register of each value: one per value of the body, numbered
    /// as the body made them; temporaries ([`BodyLowerer::temp`]) follow.
    regs: SecondaryMap<Value, Reg>,
    pub(super) accesses: Vec<Access>,
    pub(super) asserts: Vec<AssertSite>,
    pub(super) prints: Vec<PrintSite>,
    pub(super) pars: Vec<ParLoop>,
    pub(super) arglists: Vec<Box<[Reg]>>,
    pub(super) loops: Vec<LoopPatches>,
    /// Jumps made by `ret` outside a function (it ends the current
    /// invocation: a kernel, a serial task, or one iteration of a parallel
    /// task), patched when that end is known.
    pub(super) rets: Vec<usize>,
    pub(super) is_func: bool,
}

impl<'a> BodyLowerer<'a> {
    pub(super) fn new(body: &'a Body, module: usize, is_func: bool) -> Self {
        let mut regs = SecondaryMap::for_arena(body.values(), 0);
        for (n, v) in body.values().keys().enumerate() {
            regs[v] = n as Reg;
        }
        BodyLowerer {
            body,
            module,
            insts: Vec::new(),
            nregs: body.values().len() as u32,
            regs,
            accesses: Vec::new(),
            asserts: Vec::new(),
            prints: Vec::new(),
            pars: Vec::new(),
            arglists: Vec::new(),
            loops: Vec::new(),
            rets: Vec::new(),
            is_func,
        }
    }

    pub(super) fn here(&self) -> u32 {
        self.insts.len() as u32
    }
    pub(super) fn emit(&mut self, i: Inst) -> usize {
        self.insts.push(i);
        self.insts.len() - 1
    }
    /// The register of a value of the body.
    pub(super) fn reg(&self, v: impl std::borrow::Borrow<Value>) -> Reg {
        self.regs[*v.borrow()]
    }
    pub(super) fn temp(&mut self) -> Reg {
        self.nregs += 1;
        self.nregs - 1
    }
    pub(super) fn patch(&mut self, at: usize, target: u32) {
        match &mut self.insts[at] {
            Inst::Jump { to } | Inst::JumpIfNot { to, .. } => *to = target,
            Inst::ForEnter { exit, .. } | Inst::ParBegin { exit, .. } => *exit = target,
            _ => {}
        }
    }
    /// Points a loop's `continue`s at `next` and its `break`s at `exit`.
    pub(super) fn close_loop(&mut self, patches: LoopPatches, next: u32, exit: u32) {
        for c in patches.continues {
            self.patch(c, next);
        }
        for b in patches.breaks {
            self.patch(b, exit);
        }
    }
    pub(super) fn scalar(&self, v: Value) -> Result<Scalar, RunError> {
        match self.body.ty(v) {
            Type::Scalar(s) | Type::Slot(s) => Ok(s),
        }
    }

    pub(super) fn finish(self, params: Vec<Reg>, what: String, has_result: bool) -> Code {
        Code {
            insts: self.insts,
            nregs: self.nregs as usize,
            params,
            accesses: self.accesses,
            asserts: self.asserts,
            prints: self.prints,
            pars: self.pars,
            arglists: self.arglists,
            param_from_kernel: Vec::new(),
            task: NO_TASK,
            what,
            has_result,
        }
    }
}

/// Makes the pending `ret`s of a parallel task's body continue with the
/// next iteration (the innermost loop is the task's own).
pub(super) fn rets_continue(lw: &mut BodyLowerer) {
    let rets = std::mem::take(&mut lw.rets);
    if let Some(l) = lw.loops.last_mut() {
        l.continues.extend(rets);
    }
}

impl<'s> ProgramBuilder<'s> {
    pub(super) fn field_id(&mut self, module: usize, name: &str) -> Result<u32, RunError> {
        if let Some(&id) = self.field_ids.get(name) {
            return Ok(id);
        }
        let decl = self
            .items
            .field(module, name)
            .ok_or_else(|| err(format!("kernel @{}: unknown field @{name}", self.kernel.name)))?;
        let id = self.fields.len() as u32;
        self.fields.push(FieldInfo { name: decl.name.clone(), elem: decl.elem, shape: decl.shape.clone() });
        self.field_ids.insert(decl.name.clone(), id);
        Ok(id)
    }

    pub(super) fn task_name_id(&mut self, name: &Name) -> u32 {
        if let Some(&id) = self.task_name_ids.get(name) {
            return id;
        }
        let id = self.task_names.len() as u32;
        self.task_names.push(name.clone());
        self.task_name_ids.insert(name.clone(), id);
        id
    }

    pub(super) fn access(&mut self, lw: &mut BodyLowerer, r: &FieldRef, span: Span) -> Result<u32, RunError> {
        let field = self.field_id(lw.module, &r.field)?;
        let rank = self.fields[field as usize].shape.len();
        if r.indices.len() != rank {
            return Err(err(format!(
                "kernel @{}: field @{} of rank {rank} indexed with {} indices",
                self.kernel.name,
                r.field,
                r.indices.len()
            )));
        }
        self.sites.push(span);
        let site = self.sites.len() as u32 - 1;
        lw.accesses.push(Access { field, idx: r.indices.iter().map(|v| lw.reg(v)).collect(), site, at: span });
        Ok(lw.accesses.len() as u32 - 1)
    }

    /// Lowers a loop bound into a register holding an integer of type `ty`.
    pub(super) fn bound(&mut self, lw: &mut BodyLowerer, b: &Bound, ty: Scalar) -> Result<Reg, RunError> {
        Ok(match b {
            Bound::Value(v) => lw.reg(v),
            Bound::Const(c) => {
                let dst = lw.temp();
                lw.emit(Inst::Const { dst, bits: to_reg(Const::int(ty, *c)) });
                dst
            }
            Bound::Field(name, _) => {
                let field = self.field_id(lw.module, name)?;
                let f = &self.fields[field as usize];
                if !f.shape.is_empty() || !f.elem.is_int() {
                    return Err(err(format!(
                        "kernel @{}: loop bound @{name}[] must be a 0-D integer field",
                        self.kernel.name
                    )));
                }
                let dst = lw.temp();
                lw.emit(Inst::LoadBound { dst, field, to: ty });
                dst
            }
        })
    }

    /// `for var in lo .. hi { body }` with `ret` patched to the end of
    /// each iteration when `ret_ends_iteration`.
    pub(super) fn counted_loop(
        &mut self,
        lw: &mut BodyLowerer,
        var: Reg,
        lo: Reg,
        hi: Reg,
        body: &mut dyn FnMut(&mut Self, &mut BodyLowerer) -> Result<(), RunError>,
    ) -> Result<(), RunError> {
        lw.emit(Inst::Copy { dst: var, src: lo });
        let enter = lw.emit(Inst::ForEnter { var, hi, exit: 0 });
        let start = lw.here();
        lw.loops.push(LoopPatches::default());
        body(self, lw)?;
        let patches = lw.loops.pop().unwrap_or_default();
        let next = lw.here();
        lw.emit(Inst::ForNext { var, hi, body: start });
        let exit = lw.here();
        lw.patch(enter, exit);
        lw.close_loop(patches, next, exit);
        Ok(())
    }

    pub(super) fn block(&mut self, lw: &mut BodyLowerer, b: Block) -> Result<(), RunError> {
        if self.depth >= MAX_DEPTH {
            let at = match self.in_progress_names.last() {
                Some(f) => format!("function @{f}"),
                None => "the kernel's body".to_string(),
            };
            return Err(err(format!(
                "kernel @{}: blocks and calls nested more than {MAX_DEPTH} deep (at {at}); the interpreter's limit",
                self.kernel.name
            )));
        }
        self.depth += 1;
        let body = lw.body;
        let r = body.block(b).iter().try_for_each(|&s| self.stmt(lw, s));
        self.depth -= 1;
        r
    }

    /// The kernel's own block, each top-level statement outside a `task`
    /// run as part of the task offload puts it in (`tasks`), so that its
    /// errors and races name that task as the JIT's do.
    fn kernel_block(
        &mut self,
        lw: &mut BodyLowerer,
        tasks: &rustc_hash::FxHashMap<Stmt, Name>,
    ) -> Result<(), RunError> {
        let body = lw.body;
        let mut current = NO_TASK;
        for &s in body.block(body.entry) {
            let task = match tasks.get(&s) {
                _ if matches!(body.stmt(s).kind, StmtKind::Task { .. }) => NO_TASK,
                Some(name) => self.task_name_id(name),
                None => NO_TASK,
            };
            if task != current {
                lw.emit(Inst::SetTask { task });
                current = task;
            }
            self.stmt(lw, s)?;
        }
        if current != NO_TASK {
            lw.emit(Inst::SetTask { task: NO_TASK });
        }
        Ok(())
    }

    /// Lowers a task's iteration space around its body: `ret` in the body
    /// ends the current iteration (or the serial task).
    pub(super) fn task_body(
        &mut self,
        lw: &mut BodyLowerer,
        kind: &TaskKind,
        blk: Block,
        span: Span,
    ) -> Result<(), RunError> {
        let saved_rets = std::mem::take(&mut lw.rets);
        match kind {
            TaskKind::Serial => {
                self.block(lw, blk)?;
                let end = lw.here();
                for r in std::mem::take(&mut lw.rets) {
                    lw.patch(r, end);
                }
            }
            TaskKind::RangeFor { var, lo, hi, .. } => {
                let ty = lw.scalar(*var)?;
                let lo = self.bound(lw, lo, ty)?;
                let hi = self.bound(lw, hi, ty)?;
                let par = ParLoop { vars: Box::new([lw.reg(var)]), space: Space::Range { lo, hi }, span };
                self.par_loop(lw, par, blk)?;
            }
            TaskKind::StructFor { vars, field, .. } => {
                let fid = self.field_id(lw.module, field)?;
                let shape = self.fields[fid as usize].shape.clone();
                if shape.len() != vars.len() {
                    return Err(err(format!(
                        "kernel @{}: struct_for over @{field} of rank {} binds {} variables",
                        self.kernel.name,
                        shape.len(),
                        vars.len()
                    )));
                }
                let vars = vars.iter().map(|v| lw.reg(v)).collect();
                self.par_loop(lw, ParLoop { vars, space: Space::Struct { shape: shape.into() }, span }, blk)?;
            }
        }
        lw.rets = saved_rets;
        Ok(())
    }

    /// A parallel task's iterations around its body, in the run order
    /// ([`Inst::ParBegin`]): `ret` and `continue` in the body end the
    /// current iteration.
    pub(super) fn par_loop(&mut self, lw: &mut BodyLowerer, par: ParLoop, blk: Block) -> Result<(), RunError> {
        lw.pars.push(par);
        let begin = lw.emit(Inst::ParBegin { par: lw.pars.len() as u32 - 1, exit: 0 });
        let start = lw.here();
        lw.loops.push(LoopPatches::default());
        self.block(lw, blk)?;
        rets_continue(lw);
        let patches = lw.loops.pop().unwrap_or_default();
        let next = lw.here();
        lw.emit(Inst::ParNext { body: start });
        let end = lw.here();
        lw.emit(Inst::ParEnd);
        let exit = lw.here();
        lw.patch(begin, exit);
        lw.close_loop(patches, next, end);
        Ok(())
    }

    pub(super) fn stmt(&mut self, lw: &mut BodyLowerer, s: Stmt) -> Result<(), RunError> {
        let body = lw.body;
        let data = body.stmt(s);
        let dst = data.result.map(|v| lw.reg(v));
        let need = |d: Option<Reg>| d.ok_or_else(|| err("a statement that yields a value has no result"));
        match &data.kind {
            StmtKind::Const(c) => {
                lw.emit(Inst::Const { dst: need(dst)?, bits: to_reg(*c) });
            }
            StmtKind::Binary(op, a, b) => {
                let ty = lw.scalar(*a)?;
                lw.emit(Inst::Bin { op: *op, ty, dst: need(dst)?, a: lw.reg(a), b: lw.reg(b) });
            }
            StmtKind::Unary(op, a) => {
                let ty = lw.scalar(*a)?;
                lw.emit(Inst::Un { op: *op, ty, dst: need(dst)?, a: lw.reg(a) });
            }
            StmtKind::Cmp(op, a, b) => {
                let ty = lw.scalar(*a)?;
                lw.emit(Inst::Cmp { op: *op, ty, dst: need(dst)?, a: lw.reg(a), b: lw.reg(b) });
            }
            StmtKind::Cast(a, to) | StmtKind::BitCast(a, to) => {
                let (from, to, dst, a) = (lw.scalar(*a)?, *to, need(dst)?, lw.reg(a));
                let bits = matches!(data.kind, StmtKind::BitCast(..));
                lw.emit(if bits { Inst::BitCast { from, to, dst, a } } else { Inst::Cast { from, to, dst, a } });
            }
            StmtKind::Select(c, a, b) => {
                lw.emit(Inst::Select { dst: need(dst)?, c: lw.reg(c), a: lw.reg(a), b: lw.reg(b) });
            }
            StmtKind::Load(r) => {
                let acc = self.access(lw, r, data.span)?;
                lw.emit(Inst::Load { dst: need(dst)?, acc });
            }
            StmtKind::Store(r, v) => {
                let acc = self.access(lw, r, data.span)?;
                lw.emit(Inst::Store { acc, src: lw.reg(v) });
            }
            StmtKind::Atomic(op, r, v) => {
                let acc = self.access(lw, r, data.span)?;
                lw.emit(Inst::Atomic { op: *op, dst, acc, src: lw.reg(v) });
            }
            // A slot's register holds its content; `alloca` (re)zeroes it
            // each time it runs.
            StmtKind::Alloca(_) => {
                lw.emit(Inst::Const { dst: need(dst)?, bits: 0 });
            }
            StmtKind::Random { ty, site } => {
                lw.emit(Inst::Random { dst: need(dst)?, ty: *ty, site: *site });
            }
            StmtKind::LoadSlot(p) => {
                lw.emit(Inst::Copy { dst: need(dst)?, src: lw.reg(p) });
            }
            StmtKind::StoreSlot(p, v) => {
                lw.emit(Inst::Copy { dst: lw.reg(p), src: lw.reg(v) });
            }
            StmtKind::Assert { cond, message, args } => {
                let args = args.iter().map(|a| Ok((lw.reg(a), lw.scalar(*a)?))).collect::<Result<_, RunError>>()?;
                lw.asserts.push(AssertSite { message: message.clone(), args, at: data.span });
                lw.emit(Inst::Assert { cond: lw.reg(cond), site: lw.asserts.len() as u32 - 1 });
            }
            StmtKind::Print { pieces } => {
                let values = data.kind.print_values();
                let args = values.iter().map(|a| Ok((lw.reg(a), lw.scalar(*a)?))).collect::<Result<_, RunError>>()?;
                lw.prints.push(PrintSite { pieces: pieces.clone().into(), args });
                lw.emit(Inst::Print { site: lw.prints.len() as u32 - 1 });
            }
            StmtKind::Call(name, args, _) => {
                let code = self.func(lw.module, name)?;
                lw.arglists.push(args.iter().map(|v| lw.reg(v)).collect());
                let args = lw.arglists.len() as u32 - 1;
                lw.emit(Inst::Call { code, args, dst });
            }
            StmtKind::Ret(v) => {
                if lw.is_func {
                    lw.emit(Inst::Ret { val: v.map(|v| lw.reg(v)) });
                } else {
                    let j = lw.emit(Inst::Jump { to: 0 });
                    lw.rets.push(j);
                }
            }
            StmtKind::If { cond, then_blk, else_blk } => {
                let jf = lw.emit(Inst::JumpIfNot { cond: lw.reg(cond), to: 0 });
                self.block(lw, *then_blk)?;
                match else_blk {
                    Some(e) => {
                        let jend = lw.emit(Inst::Jump { to: 0 });
                        let else_at = lw.here();
                        lw.patch(jf, else_at);
                        self.block(lw, *e)?;
                        let end = lw.here();
                        lw.patch(jend, end);
                    }
                    None => {
                        let end = lw.here();
                        lw.patch(jf, end);
                    }
                }
            }
            StmtKind::For { var, lo, hi, body: b, .. } => {
                let ty = lw.scalar(*var)?;
                let lo = self.bound(lw, lo, ty)?;
                let hi = self.bound(lw, hi, ty)?;
                let b = *b;
                self.counted_loop(lw, lw.reg(var), lo, hi, &mut |this, lw| this.block(lw, b))?;
            }
            StmtKind::While { body: b } => {
                let top = lw.here();
                lw.loops.push(LoopPatches::default());
                self.block(lw, *b)?;
                lw.emit(Inst::Jump { to: top });
                let exit = lw.here();
                let patches = lw.loops.pop().unwrap_or_default();
                for c in patches.continues {
                    lw.patch(c, top);
                }
                for j in patches.breaks {
                    lw.patch(j, exit);
                }
            }
            StmtKind::Break | StmtKind::Continue => {
                let j = lw.emit(Inst::Jump { to: 0 });
                let is_break = matches!(data.kind, StmtKind::Break);
                match lw.loops.last_mut() {
                    Some(l) if is_break => l.breaks.push(j),
                    Some(l) => l.continues.push(j),
                    None => {
                        return Err(err(format!("kernel @{}: `break` or `continue` outside a loop", self.kernel.name)))
                    }
                }
            }
            StmtKind::Task { name, kind, body: b } => {
                let task = self.task_name_id(name);
                lw.emit(Inst::BeginTask { ordinal: self.next_launch() });
                lw.emit(Inst::SetTask { task });
                // A parallel task's loop is not a loop `break` in an
                // enclosing kernel statement could leave: tasks sit at the
                // top level.
                self.task_body(lw, kind, *b, data.span)?;
                lw.emit(Inst::SetTask { task: NO_TASK });
            }
            StmtKind::Launch(name) => {
                let code = self.task_item(name)?;
                lw.emit(Inst::BeginTask { ordinal: self.next_launch() });
                lw.emit(Inst::Launch { code });
            }
        }
        Ok(())
    }

    /// The number of the kernel's next launch, counted.
    fn next_launch(&mut self) -> u32 {
        self.launches += 1;
        self.launches - 1
    }

    pub(super) fn reserve(&mut self) -> u32 {
        self.codes.push(None);
        self.codes.len() as u32 - 1
    }

    pub(super) fn func(&mut self, module: usize, name: &str) -> Result<u32, RunError> {
        let key = (module, Name::from(name));
        if let Some(&id) = self.func_ids.get(&key) {
            if self.in_progress.contains(&id) {
                return Err(err(format!("kernel @{}: function @{name} calls itself (recursion)", self.kernel.name)));
            }
            return Ok(id);
        }
        let f = self
            .items
            .func(module, name)
            .ok_or_else(|| err(format!("kernel @{}: call of unknown function @{name}", self.kernel.name)))?;
        let id = self.reserve();
        self.func_ids.insert(key, id);
        self.in_progress.push(id);
        self.in_progress_names.push(Name::from(name));
        let mut lw = BodyLowerer::new(&f.body, module, true);
        self.block(&mut lw, f.body.entry)?;
        lw.emit(Inst::End);
        self.in_progress.pop();
        self.in_progress_names.pop();
        let params = f.body.params.iter().map(|v| lw.reg(v)).collect();
        self.codes[id as usize] = Some(lw.finish(params, format!("function @{name}"), f.ret.is_some()));
        Ok(id)
    }

    pub(super) fn task_item(&mut self, name: &str) -> Result<u32, RunError> {
        if let Some(&id) = self.task_ids.get(name) {
            return Ok(id);
        }
        let (m, t) = self
            .items
            .task_at(name)
            .ok_or_else(|| err(format!("kernel @{}: launch of unknown task @{name}", self.kernel.name)))?;
        // Bind the task's parameters by name to the kernel's.
        let mut from = Vec::new();
        for (i, p) in t.params.iter().enumerate() {
            let pname = t.body.name(t.body.params[i]);
            let k = *self.kernel_params.get(pname).ok_or_else(|| {
                err(format!(
                    "kernel @{}: task @{name} reads parameter %{pname}, which the kernel does not have",
                    self.kernel.name
                ))
            })?;
            if self.kernel.params[k].ty != p.ty {
                return Err(err(format!(
                    "kernel @{}: task @{name} takes %{pname} as {}, the kernel passes {}",
                    self.kernel.name, p.ty, self.kernel.params[k].ty
                )));
            }
            from.push(k);
        }
        let id = self.reserve();
        self.task_ids.insert(Name::from(name), id);
        let task = self.task_name_id(&t.name);
        let mut lw = BodyLowerer::new(&t.body, m, false);
        self.task_body(&mut lw, &t.kind, t.body.entry, t.span)?;
        lw.emit(Inst::End);
        let params = t.body.params.iter().map(|v| lw.reg(v)).collect();
        let mut code = lw.finish(params, format!("task @{name}"), false);
        code.param_from_kernel = from;
        code.task = task;
        self.codes[id as usize] = Some(code);
        Ok(id)
    }
}

impl Program {
    /// Lowers kernel `name` of the stream `items` indexes with every
    /// function and task it reaches; `scopes` keeps what offload needs of
    /// each module, made at the first kernel of the module that asks.
    pub(super) fn lower<'s>(items: &'s StreamIndex<'s>, scopes: &mut Scopes, name: &str) -> Result<Program, RunError> {
        let stream = items.stream();
        let (mi, kernel) = items.kernel(name).ok_or_else(|| err(format!("no kernel named @{name}")))?;
        let kernel_params =
            kernel.body.params.iter().enumerate().map(|(i, &v)| (kernel.body.name(v), i)).rev().collect();
        let mut b = ProgramBuilder {
            items,
            kernel,
            kernel_params,
            codes: Vec::new(),
            fields: Vec::new(),
            field_ids: HashMap::new(),
            func_ids: HashMap::new(),
            task_ids: HashMap::new(),
            task_names: Vec::new(),
            task_name_ids: HashMap::new(),
            in_progress: Vec::new(),
            in_progress_names: Vec::new(),
            depth: 0,
            sites: Vec::new(),
            launches: 0,
        };
        let entry = b.reserve();
        let mut lw = BodyLowerer::new(&kernel.body, mi, false);
        // Only code written outside tasks needs offload's names: an
        // offloaded or split kernel (tasks and launches) is not copied.
        let body = &kernel.body;
        let outside_tasks = body
            .block(body.entry)
            .iter()
            .any(|&s| !matches!(body.stmt(s).kind, StmtKind::Task { .. } | StmtKind::Launch(_)));
        let tasks = if outside_tasks {
            let scope = scopes.entry(mi).or_insert_with(|| ModuleScope::of(&stream.modules[mi]));
            crate::passes::offload::top_level_tasks(kernel, scope)
        } else {
            rustc_hash::FxHashMap::default()
        };
        b.kernel_block(&mut lw, &tasks)?;
        let end = lw.here();
        for r in std::mem::take(&mut lw.rets) {
            lw.patch(r, end);
        }
        lw.emit(Inst::End);
        let params = kernel.body.params.iter().map(|v| lw.reg(v)).collect();
        b.codes[entry as usize] = Some(lw.finish(params, format!("kernel @{name}"), false));
        let codes = b
            .codes
            .into_iter()
            .map(|c| c.ok_or_else(|| err("internal: a body was not lowered")))
            .collect::<Result<_, _>>()?;
        Ok(Program {
            kernel: kernel.name.clone(),
            kernel_params: kernel.params.iter().map(|p| p.ty).collect(),
            codes,
            entry: entry as usize,
            fields: b.fields,
            task_names: b.task_names,
            sites: b.sites,
        })
    }
}
