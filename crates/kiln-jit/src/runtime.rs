//! The runtime side of the task ABI (`docs/runtime.md`): the context a
//! task entry receives, the error slot, and launching a loaded task over
//! field storage: serial tasks on the calling thread, `range_for` and
//! `struct_for` in chunks of `block_dim` iterations over a thread pool.
//!
//! Owns: [`launch`] of a task over the ABI of `kiln_llvm::abi` (in phases: the
//! iteration space, the fields' storage, the chunks, the error slot, the
//! print sink, whose records it puts in iteration order and formats into
//! a [`PrintOut`]), the estimate of a launch's work that decides whether
//! it is worth a pool's threads ([`iteration_work`], [`worth_spreading`];
//! the pool itself is the engine's, [`LaunchThreads`]) and
//! the run-time errors of compiled code (their text is the interpreter's,
//! `exec::out_of_bounds`; their location comes from the task's module).
//!
//! Must never: compile or load code, or let a task touch memory that is not
//! a field of the right element type and shape (checked before every
//! launch).

use kiln::config::{Denormals, LaunchMeta, MetaBound, MetaField, MetaKind};
use kiln::exec::{
    assert_message, assertion_failed, out_of_bounds, print_text, too_much_output, FieldData, Fields, RunError,
    MAX_PRINT_LINES,
};
use kiln::ir::{BinOp, Body, Const, PrintPiece, Scalar, StmtKind, UnOp, DEFAULT_BLOCK_DIM};
use kiln_llvm::abi::{PrintRecords, PrintSink, ASSERT_FIELD};
use kiln_llvm::sites::Site;
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

pub use kiln_llvm::abi::{EntryFn, ErrorSlot, TaskContext};

pub(crate) fn entry_from_address(a: u64) -> EntryFn {
    // SAFETY: the address comes from a successful ORC lookup of a function
    // symbol the object defines with this signature (codegen's entry).
    unsafe { std::mem::transmute::<usize, EntryFn>(a as usize) }
}

/// Raw pointers that are only read during a launch, shared by the pool's
/// threads.
#[derive(Clone, Copy)]
struct Shared {
    fields: *const *mut u8,
    params: *const u64,
    error: *mut ErrorSlot,
    seed: u64,
    task: u64,
    prints: *const PrintSink,
}
// SAFETY: the pointers are to the launch's field bases, parameter slots,
// error slot and print sink, which outlive the launch; the pool's threads
// only read them, write the error slot through its atomic state
// (`kiln_rt_oob`) and the sink under its lock (`kiln_rt_print`).
unsafe impl Send for Shared {}
// SAFETY: as for Send.
unsafe impl Sync for Shared {}

/// The storage of one field as a task sees it: the caller's bytes, or an
/// aligned copy when those are not aligned to the element size (copied
/// back after the launch).
enum Base<'f> {
    Direct(&'f mut FieldData),
    Copied(&'f mut FieldData, Vec<u64>),
}

impl Base<'_> {
    fn ptr(&mut self) -> *mut u8 {
        match self {
            Base::Direct(f) => f.bytes.as_mut_ptr(),
            Base::Copied(_, v) => v.as_mut_ptr() as *mut u8,
        }
    }
    fn finish(self) {
        if let Base::Copied(f, v) = self {
            let n = f.bytes.len();
            // SAFETY: `v` holds `div_ceil(n, 8)` u64s, at least `n` bytes,
            // and no task runs any more.
            let src = unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, n) };
            f.bytes.copy_from_slice(src);
        }
    }
}

/// The names a launch error reports.
#[derive(Clone, Copy, Debug)]
pub struct LaunchNames<'a> {
    pub kernel: &'a str,
    pub task: &'a str,
}

/// The parameter slots of a task from a kernel's parameters (by name) and
/// arguments.
pub fn param_slots(
    meta: &LaunchMeta,
    kernel_params: &[(&str, Scalar)],
    args: &[kiln::ir::Const],
    names: LaunchNames,
) -> Result<Vec<u64>, RunError> {
    meta.params
        .iter()
        .map(|p| {
            let (name, ty) = (&p.name, p.ty);
            let k = kernel_params.iter().position(|(n, _)| n == name).ok_or_else(|| {
                RunError::new(format!(
                    "kernel @{}: task @{} reads parameter %{name}, which the kernel does not have",
                    names.kernel, names.task
                ))
            })?;
            let (_, kty) = kernel_params[k];
            if kty != ty {
                return Err(RunError::new(format!(
                    "kernel @{}: task @{} reads parameter %{name} as {ty}, but the kernel declares it {kty}",
                    names.kernel, names.task
                )));
            }
            let a = args
                .get(k)
                .ok_or_else(|| RunError::new(format!("kernel @{}: missing argument %{name}", names.kernel)))?;
            Ok(a.bits)
        })
        .collect()
}

fn slot_as_i64(bits: u64, ty: Scalar) -> i64 {
    match ty {
        Scalar::I1 => (bits & 1) as i64,
        Scalar::I32 => bits as u32 as i32 as i64,
        _ => bits as i64,
    }
}

fn read_int_field(fields: &Fields, name: &str, names: LaunchNames) -> Result<i64, RunError> {
    let f = fields
        .get(name)
        .ok_or_else(|| RunError::new(format!("kernel @{}: task @{}: no field @{name}", names.kernel, names.task)))?;
    if !f.shape.is_empty() || !f.elem.is_int() {
        return Err(RunError::new(format!(
            "kernel @{}: task @{}: the bound @{name} is not a 0-D integer field",
            names.kernel, names.task
        )));
    }
    f.element(0).and_then(Const::as_i64).ok_or_else(|| {
        RunError::new(format!("kernel @{}: task @{}: the bound @{name} has no value", names.kernel, names.task))
    })
}

/// The error a recorded slot stands for: the first out-of-range index of
/// the access, worded as the interpreter words it, at the statement the
/// slot names (`locate` maps the object's statement numbers to spans:
/// `kiln_llvm::sites::locate`).
fn slot_error(slot: &ErrorSlot, meta: &LaunchMeta, names: LaunchNames, locate: &dyn Fn(u32) -> Site) -> RunError {
    let site = locate(slot.stmt);
    let at = site.span;
    if slot.field == ASSERT_FIELD {
        let (message, types) = site.assert.unwrap_or_default();
        let args: Vec<(Scalar, u64)> = types.into_iter().zip(slot.index.map(|b| b as u64)).collect();
        return assertion_failed(names.kernel, Some(names.task), &assert_message(&message, &args)).at(at);
    }
    let Some(mf) = meta.fields.get(slot.field as usize) else {
        return RunError::new(format!("kernel @{}, task @{}: out-of-bounds access", names.kernel, names.task)).at(at);
    };
    let rank = (slot.rank as usize).min(slot.index.len());
    let index = &slot.index[..rank];
    let dim = index.iter().zip(&mf.shape).position(|(&i, &e)| i < 0 || i as u64 >= e).unwrap_or(0);
    let i = index.get(dim).copied().unwrap_or(0);
    out_of_bounds(names.kernel, Some(names.task), &mf.name, &mf.shape, i, dim).at(at)
}

/// The iteration space of a launch: the first linear iteration, how many,
/// and the block size.
#[derive(Clone, Copy, Debug)]
struct Space {
    begin: i64,
    count: i64,
    block: i64,
}

/// The least estimated work ([`iteration_work`] times the iterations) of a
/// launch that the pool's threads share when the engine chooses
/// ([`worth_spreading`]): about 64 µs of one thread's work. Waking the
/// other threads and joining them costs a launch from a few microseconds
/// (a pool the calling thread belongs to) to some 40 (one it waits for),
/// and starting the pool, which the first such launch does, about 70
/// (docs/performance.md, "Warm start" and "import kiln").
pub const PARALLEL_MIN_WORK: u64 = 1 << 18;

/// The estimated work of one iteration of a task whose body is `body`, in
/// units of about a quarter of a nanosecond, what a statement of
/// vectorised code costs: a math function (`sin`, `pow`, ...) counts 16,
/// a division or square root 4, any other statement 1 (measured over a
/// million `f32`s a launch: 0.32 ns an iteration of four statements, 3.9
/// of a `sin`, 1.2 of an `exp`). `None` when it cannot be known from the
/// body alone: a loop, which may run any number of times, or a call.
pub fn iteration_work(body: &Body) -> Option<u64> {
    let mut work = 0u64;
    let mut known = true;
    body.walk(body.entry, &mut |s| {
        work += match &body.stmt(s).kind {
            StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::Call(..) => {
                known = false;
                0
            }
            StmtKind::Unary(UnOp::Sqrt, _) | StmtKind::Binary(BinOp::Div | BinOp::Rem, ..) => 4,
            StmtKind::Unary(
                UnOp::Sin
                | UnOp::Cos
                | UnOp::Tan
                | UnOp::Asin
                | UnOp::Acos
                | UnOp::Atan
                | UnOp::Tanh
                | UnOp::Exp
                | UnOp::Log,
                _,
            )
            | StmtKind::Binary(BinOp::Pow | BinOp::Atan2, ..) => 16,
            _ => 1,
        }
    });
    known.then_some(work)
}

/// Whether a parallel launch of `count` iterations of `work` each is worth
/// the pool's threads ([`PARALLEL_MIN_WORK`]): one whose work is not known
/// always is.
pub fn worth_spreading(work: Option<u64>, count: i64) -> bool {
    work.is_none_or(|w| w.saturating_mul(count.max(0) as u64) >= PARALLEL_MIN_WORK)
}

/// The iteration space of a task, from its bounds (which may read 0-D
/// fields) at launch.
fn iteration_space(meta: &LaunchMeta, names: LaunchNames, slots: &[u64], fields: &Fields) -> Result<Space, RunError> {
    let bound = |b: &MetaBound| -> Result<i64, RunError> {
        Ok(match b {
            MetaBound::Const(c) => *c,
            MetaBound::Param(i) => {
                let p = meta.params.get(*i as usize).ok_or_else(|| {
                    RunError::new(format!("kernel @{}: task @{}: bad parameter index", names.kernel, names.task))
                })?;
                let bits = slots.get(*i as usize).copied().ok_or_else(|| {
                    RunError::new(format!("kernel @{}: task @{}: missing parameter slot {i}", names.kernel, names.task))
                })?;
                slot_as_i64(bits, p.ty)
            }
            MetaBound::Field(n) => read_int_field(fields, n, names)?,
        })
    };
    let (begin, count, block) = match &meta.kind {
        MetaKind::Serial => (0i64, 1i64, 1u32),
        MetaKind::RangeFor { lo, hi, block_dim } => {
            let lo = bound(lo)?;
            let hi = bound(hi)?;
            (lo, hi.saturating_sub(lo).max(0), *block_dim)
        }
        MetaKind::StructFor { field, block_dim, .. } => {
            let f = fields.get(field).ok_or_else(|| {
                RunError::new(format!("kernel @{}: task @{}: no field @{field}", names.kernel, names.task))
            })?;
            (0, f.len() as i64, *block_dim)
        }
        MetaKind::Function => {
            return Err(RunError::new(format!(
                "kernel @{}: task @{}: the object is a function record, not a task",
                names.kernel, names.task
            )))
        }
    };
    let block = if block == 0 { DEFAULT_BLOCK_DIM } else { block } as i64;
    Ok(Space { begin, count, block })
}

/// The storage of each field the task touches, in the order of
/// `meta.fields`, checked against what the object was compiled for. Each
/// is looked up by name in the storage's map: a launch costs what its task
/// touches, not the program's count of fields (a kernel of many launches
/// over a program of many fields was their product).
fn bind_fields<'f>(meta: &LaunchMeta, names: LaunchNames, fields: &'f mut Fields) -> Result<Vec<Base<'f>>, RunError> {
    let mut bound: HashSet<&str> = HashSet::with_capacity(meta.fields.len());
    let mut out = Vec::with_capacity(meta.fields.len());
    for mf in &meta.fields {
        // A name listed twice is bound once (the first), as before.
        let entry = bound.insert(mf.name.as_str()).then(|| fields.map.get_mut(mf.name.as_str())).flatten();
        let Some(data) = entry.map(|d| d as *mut FieldData) else {
            return Err(RunError::new(format!(
                "kernel @{}: task @{}: no field @{}",
                names.kernel, names.task, mf.name
            )));
        };
        // SAFETY: each name is looked up once, so each pointer is to another
        // entry of the map, which `fields` borrows mutably for 'f and which
        // nothing changes while the bases live: the references never alias.
        let data: &'f mut FieldData = unsafe { &mut *data };
        out.push(bind_one(mf, data, names)?);
    }
    Ok(out)
}

/// Field `mf`'s storage `data`, checked.
fn bind_one<'f>(mf: &MetaField, data: &'f mut FieldData, names: LaunchNames) -> Result<Base<'f>, RunError> {
    if mf.elem != data.elem || mf.shape != data.shape {
        return Err(RunError::new(format!(
            "kernel @{}: task @{} was compiled for @{} : {}{:?}, but the field is {}",
            names.kernel,
            names.task,
            mf.name,
            mf.elem,
            mf.shape,
            data.type_string()
        )));
    }
    // The code trusts the shape: the storage must really hold it.
    let want = data.len() * data.elem.size_bytes();
    if data.bytes.len() != want {
        return Err(RunError::new(format!(
            "kernel @{}: task @{}: field @{} holds {} bytes, but {} needs {want}",
            names.kernel,
            names.task,
            mf.name,
            data.bytes.len(),
            data.type_string()
        )));
    }
    let align = data.elem.size_bytes();
    Ok(if (data.bytes.as_ptr() as usize).is_multiple_of(align) && !data.bytes.is_empty() {
        Base::Direct(data)
    } else {
        let mut v = vec![0u64; data.bytes.len().div_ceil(8)];
        // SAFETY: `v` has room for at least `data.bytes.len()` bytes, and a
        // new Vec does not overlap the field's.
        unsafe { std::ptr::copy_nonoverlapping(data.bytes.as_ptr(), v.as_mut_ptr() as *mut u8, data.bytes.len()) };
        Base::Copied(data, v)
    })
}

/// Calls the entry over the iteration space: once for a serial task;
/// chunks of whole blocks on `pool` for a parallel one (or one call over
/// the whole range on the calling thread). Chunks not yet started are
/// skipped once an error is recorded.
fn run_chunks(
    entry: EntryFn,
    serial: bool,
    space: Space,
    shared: Shared,
    pool: Option<&rayon::ThreadPool>,
    fp: Denormals,
) {
    let run_chunk = |s: Shared, b: i64, e: i64| {
        // SAFETY: the error slot outlives the launch; its state is atomic.
        if unsafe { (*s.error).state.load(Ordering::Relaxed) } != 0 {
            return;
        }
        let ctx = TaskContext {
            fields: s.fields,
            params: s.params,
            error: s.error,
            begin: b,
            end: e,
            seed: s.seed,
            task: s.task,
            prints: s.prints,
        };
        // The code runs in the mode it was compiled for, on whichever
        // thread takes the chunk, and the thread's own mode comes back.
        let _env = kiln::fpenv::FpEnv::enter(fp);
        // SAFETY: the entry was compiled for this context layout; the fields
        // it addresses are bound (shapes checked by `bind_fields`) and the
        // chunk lies within the task's iteration space.
        unsafe { entry(&ctx) };
    };
    let Space { begin, count, block } = space;
    if serial {
        run_chunk(shared, 0, 1);
        return;
    }
    if count <= 0 {
        return;
    }
    let end = begin + count;
    match pool {
        Some(p) if p.current_num_threads() > 1 && count > block => {
            // Chunks are runs of whole blocks; a pool thread takes a few
            // consecutive blocks per call (about 8 calls per thread), so
            // the per-call cost (context, loop set-up, vector-loop checks)
            // stays small next to the work.
            let blocks = (count + block - 1) / block;
            let per_call = (blocks / (8 * p.current_num_threads() as i64)).max(1);
            let step = per_call * block;
            let calls = (count + step - 1) / step;
            p.install(|| {
                (0..calls).into_par_iter().for_each(|c| {
                    let b = begin + c * step;
                    run_chunk(shared, b, (b + step).min(end));
                })
            });
        }
        // One thread: the blocks in order are one call over the whole
        // range (the same iterations in the same order).
        _ => run_chunk(shared, begin, end),
    }
}

/// Where and how a task's code runs: a parallel launch on the threads
/// `threads` gives it, in the floating-point mode the code was compiled
/// for.
#[derive(Clone, Copy)]
pub struct RunOn<'p> {
    pub threads: &'p dyn LaunchThreads,
    pub denormals: Denormals,
    /// The seed of the `random` streams, and the task's position among
    /// its kernel's launches (`kiln::random`).
    pub seed: u64,
    pub task: u32,
}

/// The threads a parallel launch runs on, chosen once its iteration count
/// is known (the engine's choice: [`worth_spreading`]).
pub trait LaunchThreads {
    /// The pool a launch of `count` iterations runs on, started if it is
    /// not yet (`None`: the calling thread).
    fn pool(&self, count: i64) -> Result<Option<&rayon::ThreadPool>, RunError>;
}

/// Every launch on the calling thread.
pub struct CallingThread;

impl LaunchThreads for CallingThread {
    fn pool(&self, _: i64) -> Result<Option<&rayon::ThreadPool>, RunError> {
        Ok(None)
    }
}

impl Default for RunOn<'_> {
    /// On the calling thread, in the default floating-point mode.
    fn default() -> Self {
        RunOn { threads: &CallingThread, denormals: Denormals::default(), seed: 0, task: 0 }
    }
}

/// Where a launch's printed lines go: appended to `lines`, of which those
/// from `run_from` on are the current run's (at most
/// [`MAX_PRINT_LINES`] of them: `exec::too_much_output`).
pub struct PrintOut<'o> {
    pub lines: &'o mut Vec<String>,
    pub run_from: usize,
}

impl<'o> PrintOut<'o> {
    /// The output of a run whose lines are appended to `lines`.
    pub fn new(lines: &'o mut Vec<String>) -> PrintOut<'o> {
        let run_from = lines.len();
        PrintOut { lines, run_from }
    }

    /// How many more lines the run may print.
    fn room(&self) -> usize {
        MAX_PRINT_LINES.saturating_sub(self.lines.len().saturating_sub(self.run_from))
    }

    /// Appends a launch's records as text, in their (iteration) order;
    /// each statement's pieces and value types are located once.
    fn append(&mut self, r: PrintRecords, kernel: &str, locate: &dyn Fn(u32) -> Site) -> Result<(), RunError> {
        if r.overflow {
            self.lines.truncate(self.run_from);
            return Err(too_much_output(kernel));
        }
        let mut sites: HashMap<u32, (Vec<PrintPiece>, Vec<Scalar>)> = HashMap::new();
        for line in &r.lines {
            let (pieces, types) = sites.entry(line.stmt).or_insert_with(|| locate(line.stmt).print.unwrap_or_default());
            let bits = r.values.get(line.at..line.at + line.count as usize).unwrap_or_default();
            self.lines.push(print_text(pieces, types.iter().copied().zip(bits.iter().copied())));
        }
        Ok(())
    }
}

/// Runs a loaded task once over `fields`: `slots` are its parameters
/// ([`param_slots`]); parallel tasks run in chunks of `block_dim`
/// iterations on the pool `on.threads` gives (on the calling thread when
/// it gives none). A
/// run-time error is located with `locate`, which maps the object's
/// statement numbers to spans of the task's module
/// (`kiln_llvm::sites::locate`; `&|_| Site::default()` leaves errors
/// unlocated); what its `print`s wrote is appended to `out`.
#[allow(clippy::too_many_arguments)]
pub fn launch(
    entry: EntryFn,
    meta: &LaunchMeta,
    names: LaunchNames,
    slots: &[u64],
    fields: &mut Fields,
    on: RunOn<'_>,
    locate: &dyn Fn(u32) -> Site,
    out: &mut PrintOut<'_>,
) -> Result<(), RunError> {
    // The iteration space first (it may read 0-D fields), and the threads
    // it runs on.
    let space = iteration_space(meta, names, slots, fields)?;
    let serial = matches!(meta.kind, MetaKind::Serial);
    let pool = if serial { None } else { on.threads.pool(space.count)? };
    let mut bases = bind_fields(meta, names, fields)?;
    let ptrs: Vec<*mut u8> = bases.iter_mut().map(|b| b.ptr()).collect();
    let mut slot = ErrorSlot::default();
    let sink = PrintSink::new(out.room());
    let shared = Shared {
        fields: ptrs.as_ptr(),
        params: slots.as_ptr(),
        error: &mut slot,
        seed: on.seed,
        task: u64::from(on.task),
        prints: &sink,
    };
    run_chunks(entry, serial, space, shared, pool, on.denormals);
    drop(ptrs);
    for b in bases {
        b.finish();
    }
    out.append(sink.into_records(), names.kernel, locate)?;
    if slot.state.load(Ordering::Acquire) != 0 {
        return Err(slot_error(&slot, meta, names, locate));
    }
    Ok(())
}
