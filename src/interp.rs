//! The reference interpreter: runs kernels of a verified stream with exactly
//! the semantics of `docs/language.md`. It is the oracle passes, the JIT and
//! the cache are checked against.
//!
//! Owns: lowering a body (function, kernel, task item) to a compact,
//! flat instruction form ([`Code`]) with fields resolved to indices and
//! values resolved to registers, and executing it over [`Fields`].
//! Parallel tasks run their iterations one after the other, in increasing
//! index order by default (a valid order of a parallel loop), so results
//! are deterministic; [`Interpreter::order`] picks another order, and
//! [`Interpreter::check_races`] keeps shadow state per field element during
//! each parallel launch to report data races (`crate::races`). Either asks
//! for parallel tasks, so the interpreter then runs kernels as `offload`
//! makes them (with its temporaries for the run only).
//!
//! Must never: print, panic on any input (a stream that slipped past the
//! verifier gives a [`RunError`]), or skip a bounds check: the interpreter
//! always checks, whatever the compile configuration says, because an
//! out-of-bounds access here would be a Rust panic, not undefined memory.
//!
//! Where `docs/language.md` leaves a choice open, the interpreter (and the
//! JIT, which matches it) decides: float `min`/`max` order `-0.0` below
//! `+0.0` (LLVM's `minimumnum`/`maximumnum`), so the result never depends
//! on operand order; `cmp` on `i1` is unsigned (`false < true`); `ret`
//! outside a function ends the kernel (in a task body, which the verifier
//! rejects, it would end the iteration); NaN payloads and signs are
//! whatever the host's arithmetic gives (IEEE leaves them open, so tests
//! never compare stored NaNs bitwise); transcendental functions are the
//! host libm's (`f32::sin` is `sinf`), the ones the JIT calls too.
//!
//! Values live in a `Vec<u64>` register file per body, in "register form":
//! `i1` is 0 or 1, `i32` is sign-extended to 64 bits (so indices and loop
//! bounds of either integer type compare as `i64`), `i64` as is, `f32` its
//! bits in the low half, `f64` its bits. The functions [`eval_binary`],
//! [`eval_unary`], [`eval_cmp`] and [`eval_cast`] hold every arithmetic rule
//! of the language and work on [`Const`]s so passes and tests can share them.

use crate::exec::{out_of_bounds, Engine, FieldData, Fields, RunError};
use crate::ir::*;
use crate::races::{AccessKind, IterationOrder, Permutation, Race, RaceReport, Shadow};
use std::collections::HashMap;

/// The reference interpreter engine (each run lowers what it needs).
#[derive(Clone, Copy, Debug, Default)]
pub struct Interpreter {
    /// The order the iterations of parallel tasks run in.
    pub order: IterationOrder,
    /// Report data races in parallel tasks (a run-time error).
    pub check_races: bool,
}

impl Interpreter {
    pub fn new() -> Interpreter {
        Interpreter::default()
    }
}

impl Engine for Interpreter {
    fn run_kernel(
        &mut self,
        stream: &Stream,
        kernel: &str,
        args: &[Const],
        fields: &mut Fields,
    ) -> Result<(), RunError> {
        if self.order == IterationOrder::Ascending && !self.check_races {
            let prog = Program::lower(stream, kernel)?;
            return prog.run(args, fields, *self);
        }
        // Iteration orders and races are properties of parallel tasks:
        // run the kernels as offload makes them.
        let mut tasks = stream.clone();
        for m in &mut tasks.modules {
            crate::passes::offload::offload_module(m)
                .map_err(|d| err(format!("cannot offload the kernels into tasks: {}", d.message)))?;
        }
        let prog = Program::lower(&tasks, kernel)?;
        // Offload's temporaries exist for this run only.
        let mut temps = Vec::new();
        for f in tasks.modules.iter().flat_map(|m| m.fields()) {
            if fields.get(&f.name).is_none() {
                fields.map.insert(f.name.clone(), FieldData::try_zeroed(f).map_err(RunError::new)?);
                temps.push(f.name.clone());
            }
        }
        let r = prog.run(args, fields, *self);
        for n in temps {
            fields.map.remove(&n);
        }
        r
    }
}

// ---------------------------------------------------------------------------
// Scalar semantics (on Const, the IR's exact-bits form).

/// Converts a constant to register form.
fn to_reg(c: Const) -> u64 {
    match c.ty {
        Scalar::I1 => c.bits & 1,
        Scalar::I32 => c.bits as u32 as i32 as i64 as u64,
        Scalar::I64 | Scalar::F64 => c.bits,
        Scalar::F32 => c.bits & 0xffff_ffff,
    }
}

/// Converts a register back to a constant of type `ty`.
fn from_reg(ty: Scalar, r: u64) -> Const {
    let bits = match ty {
        Scalar::I1 => r & 1,
        Scalar::I32 | Scalar::F32 => r & 0xffff_ffff,
        Scalar::I64 | Scalar::F64 => r,
    };
    Const { ty, bits }
}

/// Truncates an `i64` result to the width of `ty` in register form.
#[inline(always)]
fn norm_int(ty: Scalar, r: i64) -> u64 {
    match ty {
        Scalar::I1 => (r & 1) as u64,
        Scalar::I32 => r as i32 as i64 as u64,
        _ => r as u64,
    }
}

/// `x` with the quiet bit set when it is a NaN (what the floating-point
/// unit does to a NaN it propagates; `docs/language.md`), else `x`.
macro_rules! quieted {
    ($t:ty, $x:expr) => {{
        let x: $t = $x;
        if x.is_nan() {
            <$t>::from_bits(x.to_bits() | (1 << (<$t>::MANTISSA_DIGITS - 2)))
        } else {
            x
        }
    }};
}

/// `min` of floats: the other operand when one is NaN (IEEE minNum, LLVM
/// `minimumnum`), the second one quieted when both are, and `-0.0` below
/// `+0.0` so the result never depends on operand order.
macro_rules! fminmax {
    ($name:ident, $t:ty, $less:tt) => {
        #[inline(always)]
        fn $name(a: $t, b: $t) -> $t {
            if a.is_nan() {
                quieted!($t, b)
            } else if b.is_nan() {
                a
            } else if a $less b {
                a
            } else if b $less a {
                b
            } else if (a.is_sign_negative() as u8) $less (b.is_sign_negative() as u8) {
                // Equal and both zero with different signs: for min the
                // negative one (sign bit 1) wins, for max the positive one.
                b
            } else {
                a
            }
        }
    };
}
fminmax!(fmin32, f32, <);
fminmax!(fmax32, f32, >);
fminmax!(fmin64, f64, <);
fminmax!(fmax64, f64, >);

macro_rules! float_bin {
    ($op:expr, $a:expr, $b:expr, $min:ident, $max:ident) => {{
        let (a, b) = ($a, $b);
        match $op {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Div => a / b,
            // Rust's `%` on floats is C's fmod: the result has the
            // dividend's sign.
            BinOp::Rem => a % b,
            BinOp::Min => $min(a, b),
            BinOp::Max => $max(a, b),
            BinOp::Pow => a.powf(b),
            BinOp::Atan2 => a.atan2(b),
            // Bitwise and shift operators do not accept floats (the
            // verifier rejects them); give a defined result anyway.
            _ => 0.0,
        }
    }};
}

#[inline(always)]
fn bin_reg(op: BinOp, ty: Scalar, a: u64, b: u64) -> u64 {
    match ty {
        Scalar::F32 => {
            let r = float_bin!(op, f32::from_bits(a as u32), f32::from_bits(b as u32), fmin32, fmax32);
            r.to_bits() as u64
        }
        Scalar::F64 => float_bin!(op, f64::from_bits(a), f64::from_bits(b), fmin64, fmax64).to_bits(),
        _ => {
            let (x, y) = (a as i64, b as i64);
            let width = ty.bits();
            // Shift amounts are taken modulo the bit width (a power of two).
            let sh = (y as u32) & (width - 1);
            let r = match op {
                BinOp::Add => x.wrapping_add(y),
                BinOp::Sub => x.wrapping_sub(y),
                BinOp::Mul => x.wrapping_mul(y),
                BinOp::Div => {
                    if y == 0 {
                        0
                    } else if ty == Scalar::I32 {
                        (x as i32).wrapping_div(y as i32) as i64
                    } else {
                        x.wrapping_div(y)
                    }
                }
                BinOp::Rem => {
                    if y == 0 {
                        0
                    } else {
                        x.wrapping_rem(y)
                    }
                }
                BinOp::Min => x.min(y),
                BinOp::Max => x.max(y),
                BinOp::And => x & y,
                BinOp::Or => x | y,
                BinOp::Xor => x ^ y,
                BinOp::Shl => x.wrapping_shl(sh),
                BinOp::Shr => x.wrapping_shr(sh),
                BinOp::Ushr => match ty {
                    Scalar::I32 => ((x as u32) >> sh) as i32 as i64,
                    _ => ((x as u64) >> sh) as i64,
                },
                BinOp::Pow | BinOp::Atan2 => 0,
            };
            norm_int(ty, r)
        }
    }
}

macro_rules! float_un {
    ($op:expr, $t:ty, $a:expr) => {{
        let a: $t = $a;
        match $op {
            UnOp::Neg => -a,
            UnOp::Abs => a.abs(),
            UnOp::Sqrt => a.sqrt(),
            UnOp::Sin => a.sin(),
            UnOp::Cos => a.cos(),
            UnOp::Tan => a.tan(),
            UnOp::Asin => a.asin(),
            UnOp::Acos => a.acos(),
            UnOp::Atan => a.atan(),
            UnOp::Tanh => a.tanh(),
            UnOp::Exp => a.exp(),
            UnOp::Log => a.ln(),
            // Rust's software `floor`/`ceil` return a signalling NaN
            // unchanged; the unit (and C's `floor`) quiets it.
            UnOp::Floor => quieted!($t, a.floor()),
            UnOp::Ceil => quieted!($t, a.ceil()),
            // Rust's `round` rounds half away from zero, as KIR does.
            UnOp::Round => a.round(),
            UnOp::Not => 0.0,
        }
    }};
}

#[inline(always)]
fn un_reg(op: UnOp, ty: Scalar, a: u64) -> u64 {
    match ty {
        Scalar::F32 => float_un!(op, f32, f32::from_bits(a as u32)).to_bits() as u64,
        Scalar::F64 => float_un!(op, f64, f64::from_bits(a)).to_bits(),
        _ => {
            let x = a as i64;
            let r = match op {
                UnOp::Neg => x.wrapping_neg(),
                UnOp::Not => !x,
                UnOp::Abs => x.wrapping_abs(),
                _ => 0,
            };
            norm_int(ty, r)
        }
    }
}

#[inline(always)]
fn cmp_reg(op: CmpOp, ty: Scalar, a: u64, b: u64) -> u64 {
    macro_rules! cmp {
        ($x:expr, $y:expr) => {{
            let (x, y) = ($x, $y);
            // Rust's float comparisons are ordered (false on NaN) except
            // `!=`, which is true on NaN: exactly KIR's rule.
            match op {
                CmpOp::Lt => x < y,
                CmpOp::Le => x <= y,
                CmpOp::Gt => x > y,
                CmpOp::Ge => x >= y,
                CmpOp::Eq => x == y,
                CmpOp::Ne => x != y,
            }
        }};
    }
    let r = match ty {
        Scalar::F32 => cmp!(f32::from_bits(a as u32), f32::from_bits(b as u32)),
        Scalar::F64 => cmp!(f64::from_bits(a), f64::from_bits(b)),
        // Integers compare signed; `i1` is 0 or 1 in register form, so
        // `false < true`.
        _ => cmp!(a as i64, b as i64),
    };
    r as u64
}

#[inline(always)]
fn cast_reg(from: Scalar, to: Scalar, a: u64) -> u64 {
    if from == to {
        return a;
    }
    if from.is_int() {
        // Register form is already sign-extended (i1 is 0/1).
        let i = a as i64;
        match to {
            Scalar::I1 => (i != 0) as u64,
            Scalar::I32 | Scalar::I64 => norm_int(to, i),
            Scalar::F32 => (i as f32).to_bits() as u64,
            Scalar::F64 => (i as f64).to_bits(),
        }
    } else {
        // Widening f32 to f64 is exact, so every conversion from f32 can go
        // through f64 without changing its result.
        let x = if from == Scalar::F32 { f32::from_bits(a as u32) as f64 } else { f64::from_bits(a) };
        match to {
            // NaN != 0.0 is true, as KIR's unordered `ne`.
            Scalar::I1 => (x != 0.0) as u64,
            // Rust's `as` saturates and maps NaN to 0.
            Scalar::I32 => x as i32 as i64 as u64,
            Scalar::I64 => x as i64 as u64,
            Scalar::F32 => (x as f32).to_bits() as u64,
            Scalar::F64 => x.to_bits(),
        }
    }
}

/// `a OP b` on constants of one type, with KIR's semantics.
pub fn eval_binary(op: BinOp, a: Const, b: Const) -> Const {
    from_reg(a.ty, bin_reg(op, a.ty, to_reg(a), to_reg(b)))
}

/// `OP a` on a constant, with KIR's semantics.
pub fn eval_unary(op: UnOp, a: Const) -> Const {
    from_reg(a.ty, un_reg(op, a.ty, to_reg(a)))
}

/// `cmp OP a, b` on constants of one type (an `i1`).
pub fn eval_cmp(op: CmpOp, a: Const, b: Const) -> Const {
    Const::bool(cmp_reg(op, a.ty, to_reg(a), to_reg(b)) != 0)
}

/// `cast a to ty`, with KIR's semantics.
pub fn eval_cast(a: Const, to: Scalar) -> Const {
    from_reg(to, cast_reg(a.ty, to, to_reg(a)))
}

// ---------------------------------------------------------------------------
// The lowered form.

type Reg = u32;

/// A field element reference with its field resolved.
#[derive(Clone, Debug)]
struct Access {
    field: u32,
    idx: Box<[Reg]>,
    /// The span of the statement that makes the access (run-time errors
    /// name it).
    at: Span,
    /// Its statement's index in [`Program::sites`] (for race reports).
    site: u32,
}

/// The iterations of a parallel task (`range_for`, `struct_for`).
#[derive(Clone, Debug)]
struct ParLoop {
    /// The loop variables (one per dimension of a `struct_for`).
    vars: Box<[Reg]>,
    space: Space,
    /// The task's statement or item (for race reports).
    span: Span,
}

#[derive(Clone, Debug)]
enum Space {
    /// `lo .. hi`, evaluated when the launch starts.
    Range { lo: Reg, hi: Reg },
    /// A field's index space, row-major.
    Struct { shape: Box<[u64]> },
}

#[derive(Clone, Debug)]
enum Inst {
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
struct Code {
    insts: Vec<Inst>,
    nregs: usize,
    /// Registers of the parameters, in order.
    params: Vec<Reg>,
    accesses: Vec<Access>,
    pars: Vec<ParLoop>,
    /// Argument register lists of calls.
    arglists: Vec<Box<[Reg]>>,
    /// For a task item: where each parameter's value comes from (an index
    /// into the kernel's arguments).
    param_from_kernel: Vec<usize>,
    /// For a task item: its name's index in [`Program::task_names`].
    task: u32,
    /// What the code is, for error messages (`function @f`).
    what: String,
    has_result: bool,
}

#[derive(Debug)]
struct FieldInfo {
    name: Name,
    elem: Scalar,
    shape: Vec<u64>,
}

/// A kernel lowered together with every function and task it reaches.
#[derive(Debug)]
struct Program {
    kernel: Name,
    kernel_params: Vec<Scalar>,
    codes: Vec<Code>,
    /// Index of the kernel's code in `codes`.
    entry: usize,
    fields: Vec<FieldInfo>,
    task_names: Vec<Name>,
    /// The statement of each field access site.
    sites: Vec<Span>,
}

const NO_TASK: u32 = u32::MAX;

fn err(msg: impl Into<String>) -> RunError {
    RunError::new(msg)
}

/// Lowering state shared by all bodies of one program.
struct ProgramBuilder<'s> {
    stream: &'s Stream,
    kernel: &'s Kernel,
    codes: Vec<Option<Code>>,
    fields: Vec<FieldInfo>,
    field_ids: HashMap<Name, u32>,
    /// Functions by (module index, name), and task items by name.
    func_ids: HashMap<(usize, Name), u32>,
    task_ids: HashMap<Name, u32>,
    task_names: Vec<Name>,
    task_name_ids: HashMap<Name, u32>,
    /// Functions being lowered (a call back into one is recursion).
    in_progress: Vec<u32>,
    /// Their names, innermost last (for the nesting-limit error).
    in_progress_names: Vec<Name>,
    /// Blocks being lowered, counted across calls: see [`MAX_DEPTH`].
    depth: usize,
    sites: Vec<Span>,
}

/// How deeply blocks and calls may nest, counted together (every function
/// body is a block): the language's limit, which the verifier enforces.
/// Lowering recurses on both and running recurses on calls; the check here
/// guards unverified IR.
pub const MAX_DEPTH: usize = crate::verifier::MAX_CALL_DEPTH;

/// Where a jump must be patched in once its target is known.
#[derive(Default)]
struct LoopPatches {
    breaks: Vec<usize>,
    continues: Vec<usize>,
}

/// Lowering state of one body.
struct BodyLowerer<'a> {
    body: &'a Body,
    module: usize,
    insts: Vec<Inst>,
    nregs: u32,
    accesses: Vec<Access>,
    pars: Vec<ParLoop>,
    arglists: Vec<Box<[Reg]>>,
    loops: Vec<LoopPatches>,
    /// Jumps made by `ret` outside a function (it ends the current
    /// invocation: a kernel, a serial task, or one iteration of a parallel
    /// task), patched when that end is known.
    rets: Vec<usize>,
    is_func: bool,
}

impl<'a> BodyLowerer<'a> {
    fn new(body: &'a Body, module: usize, is_func: bool) -> Self {
        BodyLowerer {
            body,
            module,
            insts: Vec::new(),
            nregs: body.values.len() as u32,
            accesses: Vec::new(),
            pars: Vec::new(),
            arglists: Vec::new(),
            loops: Vec::new(),
            rets: Vec::new(),
            is_func,
        }
    }

    fn here(&self) -> u32 {
        self.insts.len() as u32
    }
    fn emit(&mut self, i: Inst) -> usize {
        self.insts.push(i);
        self.insts.len() - 1
    }
    fn temp(&mut self) -> Reg {
        self.nregs += 1;
        self.nregs - 1
    }
    fn patch(&mut self, at: usize, target: u32) {
        match &mut self.insts[at] {
            Inst::Jump { to } | Inst::JumpIfNot { to, .. } => *to = target,
            Inst::ForEnter { exit, .. } | Inst::ParBegin { exit, .. } => *exit = target,
            _ => {}
        }
    }
    /// Points a loop's `continue`s at `next` and its `break`s at `exit`.
    fn close_loop(&mut self, patches: LoopPatches, next: u32, exit: u32) {
        for c in patches.continues {
            self.patch(c, next);
        }
        for b in patches.breaks {
            self.patch(b, exit);
        }
    }
    fn scalar(&self, v: Value) -> Result<Scalar, RunError> {
        match self.body.ty(v) {
            Type::Scalar(s) | Type::Slot(s) => Ok(s),
        }
    }

    fn finish(self, params: Vec<Reg>, what: String, has_result: bool) -> Code {
        Code {
            insts: self.insts,
            nregs: self.nregs as usize,
            params,
            accesses: self.accesses,
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
fn rets_continue(lw: &mut BodyLowerer) {
    let rets = std::mem::take(&mut lw.rets);
    if let Some(l) = lw.loops.last_mut() {
        l.continues.extend(rets);
    }
}

impl<'s> ProgramBuilder<'s> {
    fn module(&self, m: usize) -> &'s Module {
        &self.stream.modules[m]
    }

    fn field_id(&mut self, module: usize, name: &str) -> Result<u32, RunError> {
        if let Some(&id) = self.field_ids.get(name) {
            return Ok(id);
        }
        let decl = self
            .module(module)
            .field(name)
            .or_else(|| self.stream.modules.iter().find_map(|m| m.field(name)))
            .ok_or_else(|| err(format!("kernel @{}: unknown field @{name}", self.kernel.name)))?;
        let id = self.fields.len() as u32;
        self.fields.push(FieldInfo { name: decl.name.clone(), elem: decl.elem, shape: decl.shape.clone() });
        self.field_ids.insert(decl.name.clone(), id);
        Ok(id)
    }

    fn task_name_id(&mut self, name: &Name) -> u32 {
        if let Some(&id) = self.task_name_ids.get(name) {
            return id;
        }
        let id = self.task_names.len() as u32;
        self.task_names.push(name.clone());
        self.task_name_ids.insert(name.clone(), id);
        id
    }

    fn access(&mut self, lw: &mut BodyLowerer, r: &FieldRef, span: Span) -> Result<u32, RunError> {
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
        lw.accesses.push(Access { field, idx: r.indices.iter().map(|v| v.0).collect(), site, at: span });
        Ok(lw.accesses.len() as u32 - 1)
    }

    /// Lowers a loop bound into a register holding an integer of type `ty`.
    fn bound(&mut self, lw: &mut BodyLowerer, b: &Bound, ty: Scalar) -> Result<Reg, RunError> {
        Ok(match b {
            Bound::Value(v) => v.0,
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
    fn counted_loop(
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

    fn block(&mut self, lw: &mut BodyLowerer, b: Block) -> Result<(), RunError> {
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

    /// Lowers a task's iteration space around its body: `ret` in the body
    /// ends the current iteration (or the serial task).
    fn task_body(&mut self, lw: &mut BodyLowerer, kind: &TaskKind, blk: Block, span: Span) -> Result<(), RunError> {
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
                let par = ParLoop { vars: Box::new([var.0]), space: Space::Range { lo, hi }, span };
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
                let vars = vars.iter().map(|v| v.0).collect();
                self.par_loop(lw, ParLoop { vars, space: Space::Struct { shape: shape.into() }, span }, blk)?;
            }
        }
        lw.rets = saved_rets;
        Ok(())
    }

    /// A parallel task's iterations around its body, in the run order
    /// ([`Inst::ParBegin`]): `ret` and `continue` in the body end the
    /// current iteration.
    fn par_loop(&mut self, lw: &mut BodyLowerer, par: ParLoop, blk: Block) -> Result<(), RunError> {
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

    fn stmt(&mut self, lw: &mut BodyLowerer, s: Stmt) -> Result<(), RunError> {
        let body = lw.body;
        let data = body.stmt(s);
        let dst = data.result.map(|v| v.0);
        let need = |d: Option<Reg>| d.ok_or_else(|| err("a statement that yields a value has no result"));
        match &data.kind {
            StmtKind::Const(c) => {
                lw.emit(Inst::Const { dst: need(dst)?, bits: to_reg(*c) });
            }
            StmtKind::Binary(op, a, b) => {
                let ty = lw.scalar(*a)?;
                lw.emit(Inst::Bin { op: *op, ty, dst: need(dst)?, a: a.0, b: b.0 });
            }
            StmtKind::Unary(op, a) => {
                let ty = lw.scalar(*a)?;
                lw.emit(Inst::Un { op: *op, ty, dst: need(dst)?, a: a.0 });
            }
            StmtKind::Cmp(op, a, b) => {
                let ty = lw.scalar(*a)?;
                lw.emit(Inst::Cmp { op: *op, ty, dst: need(dst)?, a: a.0, b: b.0 });
            }
            StmtKind::Cast(a, to) => {
                let from = lw.scalar(*a)?;
                lw.emit(Inst::Cast { from, to: *to, dst: need(dst)?, a: a.0 });
            }
            StmtKind::Select(c, a, b) => {
                lw.emit(Inst::Select { dst: need(dst)?, c: c.0, a: a.0, b: b.0 });
            }
            StmtKind::Load(r) => {
                let acc = self.access(lw, r, data.span)?;
                lw.emit(Inst::Load { dst: need(dst)?, acc });
            }
            StmtKind::Store(r, v) => {
                let acc = self.access(lw, r, data.span)?;
                lw.emit(Inst::Store { acc, src: v.0 });
            }
            StmtKind::Atomic(op, r, v) => {
                let acc = self.access(lw, r, data.span)?;
                lw.emit(Inst::Atomic { op: *op, dst, acc, src: v.0 });
            }
            // A slot's register holds its content; `alloca` (re)zeroes it
            // each time it runs.
            StmtKind::Alloca(_) => {
                lw.emit(Inst::Const { dst: need(dst)?, bits: 0 });
            }
            StmtKind::LoadSlot(p) => {
                lw.emit(Inst::Copy { dst: need(dst)?, src: p.0 });
            }
            StmtKind::StoreSlot(p, v) => {
                lw.emit(Inst::Copy { dst: p.0, src: v.0 });
            }
            StmtKind::Call(name, args, _) => {
                let code = self.func(lw.module, name)?;
                lw.arglists.push(args.iter().map(|v| v.0).collect());
                let args = lw.arglists.len() as u32 - 1;
                lw.emit(Inst::Call { code, args, dst });
            }
            StmtKind::Ret(v) => {
                if lw.is_func {
                    lw.emit(Inst::Ret { val: v.map(|v| v.0) });
                } else {
                    let j = lw.emit(Inst::Jump { to: 0 });
                    lw.rets.push(j);
                }
            }
            StmtKind::If { cond, then_blk, else_blk } => {
                let jf = lw.emit(Inst::JumpIfNot { cond: cond.0, to: 0 });
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
                self.counted_loop(lw, var.0, lo, hi, &mut |this, lw| this.block(lw, b))?;
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
                lw.emit(Inst::SetTask { task });
                // A parallel task's loop is not a loop `break` in an
                // enclosing kernel statement could leave: tasks sit at the
                // top level.
                self.task_body(lw, kind, *b, data.span)?;
                lw.emit(Inst::SetTask { task: NO_TASK });
            }
            StmtKind::Launch(name) => {
                let code = self.task_item(name)?;
                lw.emit(Inst::Launch { code });
            }
        }
        Ok(())
    }

    fn reserve(&mut self) -> u32 {
        self.codes.push(None);
        self.codes.len() as u32 - 1
    }

    fn func(&mut self, module: usize, name: &str) -> Result<u32, RunError> {
        let key = (module, Name::from(name));
        if let Some(&id) = self.func_ids.get(&key) {
            if self.in_progress.contains(&id) {
                return Err(err(format!("kernel @{}: function @{name} calls itself (recursion)", self.kernel.name)));
            }
            return Ok(id);
        }
        let f = self
            .module(module)
            .func(name)
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
        let params = f.body.params.iter().map(|v| v.0).collect();
        self.codes[id as usize] = Some(lw.finish(params, format!("function @{name}"), f.ret.is_some()));
        Ok(id)
    }

    fn task_item(&mut self, name: &str) -> Result<u32, RunError> {
        if let Some(&id) = self.task_ids.get(name) {
            return Ok(id);
        }
        let (m, t) = self
            .stream
            .modules
            .iter()
            .enumerate()
            .find_map(|(i, m)| m.task(name).map(|t| (i, t)))
            .ok_or_else(|| err(format!("kernel @{}: launch of unknown task @{name}", self.kernel.name)))?;
        // Bind the task's parameters by name to the kernel's.
        let mut from = Vec::new();
        for (i, p) in t.params.iter().enumerate() {
            let pname = t.body.name(t.body.params[i]);
            let k =
                self.kernel.body.params.iter().position(|v| self.kernel.body.name(*v) == pname).ok_or_else(|| {
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
        let params = t.body.params.iter().map(|v| v.0).collect();
        let mut code = lw.finish(params, format!("task @{name}"), false);
        code.param_from_kernel = from;
        code.task = task;
        self.codes[id as usize] = Some(code);
        Ok(id)
    }
}

impl Program {
    /// Lowers kernel `name` of `stream` with every function and task it
    /// reaches.
    fn lower(stream: &Stream, name: &str) -> Result<Program, RunError> {
        let (mi, kernel) = stream
            .modules
            .iter()
            .enumerate()
            .find_map(|(i, m)| m.kernel(name).map(|k| (i, k)))
            .ok_or_else(|| err(format!("no kernel named @{name}")))?;
        let mut b = ProgramBuilder {
            stream,
            kernel,
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
        };
        let entry = b.reserve();
        let mut lw = BodyLowerer::new(&kernel.body, mi, false);
        b.block(&mut lw, kernel.body.entry)?;
        let end = lw.here();
        for r in std::mem::take(&mut lw.rets) {
            lw.patch(r, end);
        }
        lw.emit(Inst::End);
        let params = kernel.body.params.iter().map(|v| v.0).collect();
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

    fn run(&self, args: &[Const], fields: &mut Fields, opts: Interpreter) -> Result<(), RunError> {
        if args.len() != self.kernel_params.len() {
            return Err(err(format!(
                "kernel @{} takes {} arguments, {} given",
                self.kernel,
                self.kernel_params.len(),
                args.len()
            )));
        }
        for (i, (a, &ty)) in args.iter().zip(&self.kernel_params).enumerate() {
            if a.ty != ty {
                return Err(err(format!("kernel @{}: argument {i} is {}, the parameter is {ty}", self.kernel, a.ty)));
            }
        }
        // Move the bytes of every field the program uses out of the map for
        // the run (no lookups by name while running), and back afterwards
        // whatever happens.
        for f in &self.fields {
            let data = fields.get(&f.name).ok_or_else(|| err(format!("field @{} has no storage", f.name)))?;
            if data.elem != f.elem || data.shape != f.shape {
                let want = FieldData { elem: f.elem, shape: f.shape.clone(), bytes: Vec::new() };
                return Err(err(format!(
                    "field @{} is declared {} but its storage is {}",
                    f.name,
                    want.type_string(),
                    data.type_string()
                )));
            }
            if data.bytes.len() != data.len() * data.elem.size_bytes() {
                return Err(err(format!(
                    "field @{}: storage has {} bytes, not the size of {}",
                    f.name,
                    data.bytes.len(),
                    data.type_string()
                )));
            }
        }
        let store = self
            .fields
            .iter()
            .map(|f| fields.get_mut(&f.name).map(|d| std::mem::take(&mut d.bytes)).unwrap_or_default())
            .collect();
        let mut st = State {
            fields: store,
            frames: self.codes.iter().map(|c| Some(vec![0u64; c.nregs])).collect(),
            args: args.iter().map(|a| to_reg(*a)).collect(),
            task: NO_TASK,
            opts,
            par: Vec::new(),
        };
        let result = self.exec_entry(&mut st);
        for (f, bytes) in self.fields.iter().zip(st.fields) {
            if let Some(d) = fields.get_mut(&f.name) {
                d.bytes = bytes;
            }
        }
        result
    }

    fn exec_entry(&self, st: &mut State) -> Result<(), RunError> {
        let code = &self.codes[self.entry];
        let mut regs = st.frames[self.entry].take().unwrap_or_default();
        for (&p, &a) in code.params.iter().zip(&st.args) {
            regs[p as usize] = a;
        }
        self.exec(self.entry, &mut regs, st).map(|_| ())
    }

    fn oob(&self, st: &State, acc: &Access, dim: usize, index: i64) -> RunError {
        let f = &self.fields[acc.field as usize];
        let task = (st.task != NO_TASK).then(|| self.task_names[st.task as usize].as_str());
        out_of_bounds(&self.kernel, task, &f.name, &f.shape, index, dim).at(Some(acc.at))
    }

    /// The byte offset of an element, bounds-checked.
    #[inline(always)]
    fn offset(&self, st: &State, regs: &[u64], acc: &Access) -> Result<usize, RunError> {
        let f = &self.fields[acc.field as usize];
        let mut lin: u64 = 0;
        for (d, (&r, &ext)) in acc.idx.iter().zip(&f.shape).enumerate() {
            let i = regs[r as usize] as i64;
            if i < 0 || i as u64 >= ext {
                return Err(self.oob(st, acc, d, i));
            }
            lin = lin * ext + i as u64;
        }
        Ok(lin as usize * f.elem.size_bytes())
    }

    fn exec(&self, id: usize, regs: &mut [u64], st: &mut State) -> Result<Option<u64>, RunError> {
        let code = &self.codes[id];
        let insts = &code.insts[..];
        let mut pc = 0usize;
        loop {
            let Some(inst) = insts.get(pc) else { return Ok(None) };
            pc += 1;
            match *inst {
                Inst::Const { dst, bits } => regs[dst as usize] = bits,
                Inst::Copy { dst, src } => regs[dst as usize] = regs[src as usize],
                Inst::Bin { op, ty, dst, a, b } => {
                    regs[dst as usize] = bin_reg(op, ty, regs[a as usize], regs[b as usize])
                }
                Inst::Un { op, ty, dst, a } => regs[dst as usize] = un_reg(op, ty, regs[a as usize]),
                Inst::Cmp { op, ty, dst, a, b } => {
                    regs[dst as usize] = cmp_reg(op, ty, regs[a as usize], regs[b as usize])
                }
                Inst::Cast { from, to, dst, a } => regs[dst as usize] = cast_reg(from, to, regs[a as usize]),
                Inst::Select { dst, c, a, b } => {
                    regs[dst as usize] = if regs[c as usize] & 1 != 0 { regs[a as usize] } else { regs[b as usize] }
                }
                Inst::Load { dst, acc } => {
                    let acc = &code.accesses[acc as usize];
                    let at = self.offset(st, regs, acc)?;
                    let elem = self.fields[acc.field as usize].elem;
                    st.touch(acc, elem, at, AccessKind::Read);
                    regs[dst as usize] = read_elem(elem, &st.fields[acc.field as usize], at);
                }
                Inst::Store { acc, src } => {
                    let acc = &code.accesses[acc as usize];
                    let at = self.offset(st, regs, acc)?;
                    let elem = self.fields[acc.field as usize].elem;
                    st.touch(acc, elem, at, AccessKind::Write);
                    write_elem(elem, &mut st.fields[acc.field as usize], at, regs[src as usize]);
                }
                Inst::Atomic { op, dst, acc, src } => {
                    let acc = &code.accesses[acc as usize];
                    let at = self.offset(st, regs, acc)?;
                    let elem = self.fields[acc.field as usize].elem;
                    st.touch(acc, elem, at, AccessKind::Atomic);
                    let bytes = &mut st.fields[acc.field as usize];
                    let old = read_elem(elem, bytes, at);
                    let new = bin_reg(op.as_binop(), elem, old, regs[src as usize]);
                    write_elem(elem, bytes, at, new);
                    if let Some(d) = dst {
                        regs[d as usize] = old;
                    }
                }
                Inst::LoadBound { dst, field, to } => {
                    let elem = self.fields[field as usize].elem;
                    let v = read_elem(elem, &st.fields[field as usize], 0);
                    regs[dst as usize] = cast_reg(elem, to, v);
                }
                Inst::Call { code: callee, args, dst } => {
                    let c = &self.codes[callee as usize];
                    let mut frame = st.frames[callee as usize]
                        .take()
                        .ok_or_else(|| err(format!("kernel @{}: {} is called recursively", self.kernel, c.what)))?;
                    for (&p, &a) in c.params.iter().zip(code.arglists[args as usize].iter()) {
                        frame[p as usize] = regs[a as usize];
                    }
                    let r = self.exec(callee as usize, &mut frame, st);
                    st.frames[callee as usize] = Some(frame);
                    let r = r?;
                    if let Some(d) = dst {
                        regs[d as usize] = r.ok_or_else(|| {
                            err(format!("kernel @{}: {} ended without returning a value", self.kernel, c.what))
                        })?;
                    }
                }
                Inst::Ret { val } => return Ok(val.map(|v| regs[v as usize])),
                Inst::Jump { to } => pc = to as usize,
                Inst::JumpIfNot { cond, to } => {
                    if regs[cond as usize] & 1 == 0 {
                        pc = to as usize
                    }
                }
                Inst::ForEnter { var, hi, exit } => {
                    if (regs[var as usize] as i64) >= (regs[hi as usize] as i64) {
                        pc = exit as usize
                    }
                }
                Inst::ForNext { var, hi, body } => {
                    // var < hi held, so var + 1 cannot overflow its type.
                    let v = (regs[var as usize] as i64) + 1;
                    regs[var as usize] = v as u64;
                    if v < regs[hi as usize] as i64 {
                        pc = body as usize
                    }
                }
                Inst::ParBegin { par, exit } => {
                    if !self.par_begin(code, par, regs, st)? {
                        pc = exit as usize
                    }
                }
                Inst::ParNext { body } => {
                    if self.par_next(code, regs, st) {
                        pc = body as usize
                    }
                }
                Inst::ParEnd => self.par_end(code, st)?,
                Inst::SetTask { task } => st.task = task,
                Inst::Launch { code: t } => {
                    let c = &self.codes[t as usize];
                    let mut frame = st.frames[t as usize]
                        .take()
                        .ok_or_else(|| err(format!("kernel @{}: {} is launched recursively", self.kernel, c.what)))?;
                    for (&p, &k) in c.params.iter().zip(&c.param_from_kernel) {
                        frame[p as usize] = st.args[k];
                    }
                    let saved = st.task;
                    st.task = c.task;
                    let r = self.exec(t as usize, &mut frame, st);
                    st.task = saved;
                    st.frames[t as usize] = Some(frame);
                    r?;
                }
                Inst::End => {
                    if code.has_result {
                        return Err(err(format!("kernel @{}: {} ended without `ret`", self.kernel, code.what)));
                    }
                    return Ok(None);
                }
            }
        }
    }
}

/// Parallel launches: the iteration loop in the run order, and the race
/// report at the end of a launch.
impl Program {
    /// Starts a launch of `code.pars[par]`; false when it has no iteration.
    fn par_begin(&self, code: &Code, par: u32, regs: &mut [u64], st: &mut State) -> Result<bool, RunError> {
        let p = &code.pars[par as usize];
        let (n, lo) = match &p.space {
            Space::Range { lo, hi } => {
                let (lo, hi) = (regs[*lo as usize] as i64, regs[*hi as usize] as i64);
                ((hi as i128 - lo as i128).max(0) as u64, lo)
            }
            Space::Struct { shape } => (shape.iter().product(), 0),
        };
        if n == 0 {
            return Ok(false);
        }
        let shadow = if st.opts.check_races {
            if n > crate::races::MAX_CHECKED_ITERATIONS {
                return Err(err(format!(
                    "kernel @{}, task {}: {n} iterations are more than --check-races can follow in one launch ({})",
                    self.kernel,
                    self.task_label(st),
                    crate::races::MAX_CHECKED_ITERATIONS
                )));
            }
            Some(Box::new(Shadow::new()))
        } else {
            None
        };
        let mut run = ParRun { par, order: st.opts.order.permutation(n), k: 0, lo, shadow };
        set_iteration(p, &mut run, regs);
        st.par.push(run);
        Ok(true)
    }

    /// Moves the current launch to its next iteration; false after the last.
    #[inline]
    fn par_next(&self, code: &Code, regs: &mut [u64], st: &mut State) -> bool {
        let Some(run) = st.par.last_mut() else { return false };
        run.k += 1;
        if run.k >= run.order.len() {
            return false;
        }
        set_iteration(&code.pars[run.par as usize], run, regs);
        true
    }

    /// Ends the current launch: the races it found are the error.
    fn par_end(&self, code: &Code, st: &mut State) -> Result<(), RunError> {
        let Some(run) = st.par.pop() else { return Ok(()) };
        let Some(shadow) = &run.shadow else { return Ok(()) };
        let (found, more) = shadow.conflicts();
        if found.is_empty() {
            return Ok(());
        }
        let p = &code.pars[run.par as usize];
        let task = match st.task {
            NO_TASK => Name::from("-"),
            t => self.task_names[t as usize].clone(),
        };
        let iteration = |epoch: u32| iteration_text(p, &run, run.order.index(epoch as u64 - 1));
        let races = found
            .iter()
            .map(|c| Race {
                kernel: self.kernel.clone(),
                task: task.clone(),
                element: self.element_text(c.field, c.elem),
                iteration: iteration(c.epoch),
                kind: c.kind,
                span: self.sites[c.site as usize],
                other_iteration: iteration(c.other_epoch),
                other_kind: c.other_kind,
                other_span: self.sites[c.other_site as usize],
            })
            .collect();
        Err(RunError::races(RaceReport { races, more, task_span: p.span }))
    }

    fn task_label(&self, st: &State) -> String {
        match st.task {
            NO_TASK => "-".to_string(),
            t => format!("@{}", self.task_names[t as usize]),
        }
    }

    /// `@g[1, 2]` for the element at row-major index `lin` of a field.
    fn element_text(&self, field: u32, lin: u64) -> String {
        let f = &self.fields[field as usize];
        let idx: Vec<String> = unravel(lin, &f.shape).iter().map(|i| i.to_string()).collect();
        format!("@{}[{}]", f.name, idx.join(", "))
    }
}

/// The row-major multi-index of linear index `lin` in `shape`.
fn unravel(mut lin: u64, shape: &[u64]) -> Vec<u64> {
    let mut out = vec![0; shape.len()];
    for (o, &ext) in out.iter_mut().zip(shape).rev() {
        *o = lin % ext.max(1);
        lin /= ext.max(1);
    }
    out
}

/// Sets the loop variables of the current iteration of a launch.
#[inline(always)]
fn set_iteration(p: &ParLoop, run: &mut ParRun, regs: &mut [u64]) {
    let idx = run.order.index(run.k);
    if let Some(sh) = run.shadow.as_deref_mut() {
        // k + 1 fits: a checked launch has at most MAX_CHECKED_ITERATIONS.
        sh.begin_iteration(run.k as u32 + 1);
    }
    match &p.space {
        Space::Range { .. } => regs[p.vars[0] as usize] = run.lo.wrapping_add(idx as i64) as u64,
        Space::Struct { shape } => {
            let mut rest = idx;
            for (&v, &ext) in p.vars.iter().zip(shape.iter()).rev() {
                regs[v as usize] = rest % ext;
                rest /= ext;
            }
        }
    }
}

/// An iteration as a report names it: `5`, or `(1, 2)`.
fn iteration_text(p: &ParLoop, run: &ParRun, idx: u64) -> String {
    match &p.space {
        Space::Range { .. } => run.lo.wrapping_add(idx as i64).to_string(),
        Space::Struct { shape } => {
            let parts: Vec<String> = unravel(idx, shape).iter().map(|i| i.to_string()).collect();
            match parts.len() {
                1 => parts[0].clone(),
                _ => format!("({})", parts.join(", ")),
            }
        }
    }
}

/// Run-time state of one kernel run.
struct State {
    /// The bytes of each field of [`Program::fields`].
    fields: Vec<Vec<u8>>,
    /// The register file of each code; `None` while it runs (there is no
    /// recursion, so one frame per body suffices).
    frames: Vec<Option<Vec<u64>>>,
    args: Vec<u64>,
    task: u32,
    opts: Interpreter,
    /// The parallel launches running (innermost last; tasks do not nest in
    /// verified code).
    par: Vec<ParRun>,
}

/// One launch of a parallel task in progress.
struct ParRun {
    /// Its loop in the running code's [`Code::pars`].
    par: u32,
    order: Permutation,
    /// The position in the run order of the current iteration.
    k: u64,
    /// A `range_for`'s lower bound.
    lo: i64,
    shadow: Option<Box<Shadow>>,
}

impl State {
    /// Records an access to element `at` (a byte offset) in the current
    /// launch's shadow, when races are checked.
    #[inline(always)]
    fn touch(&mut self, acc: &Access, elem: Scalar, at: usize, kind: AccessKind) {
        if let Some(sh) = self.par.last_mut().and_then(|r| r.shadow.as_deref_mut()) {
            sh.access(acc.field, (at >> elem.size_bytes().trailing_zeros()) as u64, kind, acc.site);
        }
    }
}

#[inline(always)]
fn read_elem(elem: Scalar, bytes: &[u8], at: usize) -> u64 {
    match elem {
        Scalar::I1 => (bytes[at] != 0) as u64,
        Scalar::I32 => i32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as i64 as u64,
        Scalar::F32 => u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as u64,
        Scalar::I64 | Scalar::F64 => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(b)
        }
    }
}

#[inline(always)]
fn write_elem(elem: Scalar, bytes: &mut [u8], at: usize, v: u64) {
    match elem {
        Scalar::I1 => bytes[at] = (v & 1) as u8,
        Scalar::I32 | Scalar::F32 => bytes[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes()),
        Scalar::I64 | Scalar::F64 => bytes[at..at + 8].copy_from_slice(&v.to_le_bytes()),
    }
}

#[cfg(test)]
#[path = "interp_tests.rs"]
mod tests;
