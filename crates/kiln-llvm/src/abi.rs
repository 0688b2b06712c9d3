//! The task ABI (`docs/runtime.md`): the context a task's entry receives
//! and the error slot its code writes, as the Rust types the runtime fills
//! and reads, and the member positions and byte offsets lowering uses,
//! derived from those types.
//!
//! Owns: [`TaskContext`], [`ErrorSlot`], [`PrintSink`], [`EntryFn`], the
//! LLVM type of the context ([`context_type`]), its member positions
//! (`CTX_*`, each checked at compile time against `offset_of!`), and the
//! runtime functions objects call by name, which the JIT defines in every
//! session ([`runtime_symbols`]): the out-of-bounds reporter
//! ([`OOB_REPORTER`], [`kiln_rt_oob`], the only writer of an
//! [`ErrorSlot`]), the printer ([`PRINTER`], [`kiln_rt_print`], the only
//! writer of a [`PrintSink`]) and Kiln's math for `-O0` code
//! ([`MATH_RUNTIME`]).
//!
//! Must never: hold a layout fact that is not checked against the Rust
//! type it describes; change without the build identity changing (this
//! file is one of its inputs); unwind out of a runtime function.

use inkwell::context::Context;
use inkwell::types::StructType;
use inkwell::AddressSpace;
use kiln::ir::MAX_RANK;
use std::mem::{offset_of, size_of};
use std::sync::atomic::AtomicU32;
use std::sync::Mutex;

/// A task's entry: `void kiln_task(const TaskContext *)`.
pub type EntryFn = unsafe extern "C" fn(*const TaskContext);

/// What a task entry receives.
#[repr(C)]
#[derive(Debug)]
pub struct TaskContext {
    /// Base pointers of the fields, in the order of `LaunchMeta::fields`.
    pub fields: *const *mut u8,
    /// The task's parameters as 64-bit slots, in the order of
    /// `LaunchMeta::params`.
    pub params: *const u64,
    pub error: *mut ErrorSlot,
    /// The chunk of linear iterations to run, `[begin, end)` (parallel
    /// tasks; a serial task ignores them).
    pub begin: i64,
    pub end: i64,
    /// The seed of the launch's `random` streams (`kiln::random`).
    pub seed: u64,
    /// The task's position among its kernel's launches (0 for the first),
    /// which `random` draws with.
    pub task: u64,
    /// Where the launch's `print`s go ([`kiln_rt_print`]).
    pub prints: *const PrintSink,
}

/// Where compiled code reports the first run-time error of a launch.
#[repr(C)]
#[derive(Debug, Default)]
pub struct ErrorSlot {
    /// 0: no error; 1: an error was recorded (the first wins, by a
    /// compare-and-swap from 0 to 1).
    pub state: AtomicU32,
    /// The field's position in `LaunchMeta::fields`.
    pub field: u32,
    /// How many of `index` are set.
    pub rank: u32,
    /// The statement that failed, by its number in the object
    /// (`kiln_llvm::sites`).
    pub stmt: u32,
    pub index: [i64; MAX_RANK],
}

/// The field number with which a failed `assert` reports through
/// [`kiln_rt_oob`] (no field has it: a launch has fewer than `u32::MAX`
/// fields); its `index` then holds the assert's values' bits, `rank` of
/// them.
pub const ASSERT_FIELD: u32 = u32::MAX;

/// The symbol of the out-of-bounds reporter, [`kiln_rt_oob`], which every
/// object with a bounds check declares and calls on a failed check.
pub const OOB_REPORTER: &str = "kiln_rt_oob";

/// The reporter's C signature: `void kiln_rt_oob(const TaskContext *ctx,
/// uint32_t field, uint32_t rank, uint32_t stmt, const int64_t *index)`.
pub type OobReporterFn = unsafe extern "C" fn(*const TaskContext, u32, u32, u32, *const i64);

/// Reports a failed bounds check of the launch `ctx` belongs to: the
/// first failure claims its error slot (a compare-and-swap of `state` from
/// 0 to 1) and writes the field, the rank, the statement and the `rank`
/// indices at `index` (at most `MAX_RANK` are read); a later failure
/// changes nothing. One function of the runtime instead of a copy in every
/// object: each copy was a function for LLVM to optimise and compile in
/// every task (`docs/performance.md`, "Runs 29–31").
///
/// # Safety
///
/// `ctx` is the context the running entry received, whose `error` points
/// to the launch's slot, and `index` holds `rank` readable `i64`s.
pub unsafe extern "C" fn kiln_rt_oob(ctx: *const TaskContext, field: u32, rank: u32, stmt: u32, index: *const i64) {
    use std::sync::atomic::Ordering::Relaxed;
    // SAFETY: the caller's contract; the slot outlives the launch.
    let slot = unsafe { (*ctx).error };
    // The state is the slot's only member written by more than one thread;
    // the rest is written by the winner alone and read after the launch.
    // SAFETY: `slot` is the launch's live slot; its state is an atomic.
    let state = unsafe { &*std::ptr::addr_of!((*slot).state) };
    if state.compare_exchange(0, 1, Relaxed, Relaxed).is_err() {
        return;
    }
    let n = (rank as usize).min(MAX_RANK);
    // SAFETY: `slot` is valid and now this thread's to write; `index`
    // holds `rank >= n` values.
    unsafe {
        std::ptr::addr_of_mut!((*slot).field).write(field);
        std::ptr::addr_of_mut!((*slot).rank).write(n as u32);
        std::ptr::addr_of_mut!((*slot).stmt).write(stmt);
        std::ptr::copy_nonoverlapping(index, std::ptr::addr_of_mut!((*slot).index).cast::<i64>(), n);
    }
}

/// The symbol of the printer, [`kiln_rt_print`], which every object with
/// a `print` declares and calls.
pub const PRINTER: &str = "kiln_rt_print";

/// The printer's C signature: `void kiln_rt_print(const TaskContext *ctx,
/// uint32_t stmt, uint32_t count, const uint64_t *values)`.
pub type PrinterFn = unsafe extern "C" fn(*const TaskContext, u32, u32, *const u64);

/// One executed `print` of a launch: the chunk it ran in (the chunk's
/// first iteration, `TaskContext::begin`), its statement (by its number in
/// the object, `codegen::sites`) and where its values start in
/// [`PrintRecords::values`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrintRecord {
    pub chunk: i64,
    pub stmt: u32,
    pub count: u32,
    pub at: usize,
}

/// What a launch's `print`s recorded: their values' bits, not their text,
/// so that the code does not format (the launch's caller does, once it
/// knows each statement's pieces: `jit::runtime`).
#[derive(Debug, Default)]
pub struct PrintRecords {
    /// In the order the calls took the lock: a chunk's in program order
    /// (a chunk runs on one thread, its iterations in increasing order).
    pub lines: Vec<PrintRecord>,
    pub values: Vec<u64>,
    /// Whether a `print` found the sink full (its line was dropped).
    pub overflow: bool,
}

/// Where the `print`s of one launch go, reached from its context: at most
/// `room` lines, after which a `print` marks the sink overflowed.
#[derive(Debug, Default)]
pub struct PrintSink {
    pub records: Mutex<PrintRecords>,
    pub room: usize,
}

impl PrintSink {
    /// An empty sink for at most `room` lines.
    pub fn new(room: usize) -> PrintSink {
        PrintSink { records: Mutex::default(), room }
    }

    /// The records, sorted into iteration order: by chunk, a stable sort,
    /// so one chunk's keep their program order.
    pub fn into_records(self) -> PrintRecords {
        let mut r = self.records.into_inner().unwrap_or_else(|e| e.into_inner());
        r.lines.sort_by_key(|l| l.chunk);
        r
    }
}

/// Records a `print` of the launch `ctx` belongs to: statement `stmt`
/// with the `count` values' bits at `values` (each zero-extended to 64
/// bits), in the launch's sink, under its lock; when the sink already
/// holds its `room` of lines, marks it overflowed instead.
///
/// # Safety
///
/// `ctx` is the context the running entry received, whose `prints` points
/// to the launch's live sink, and `values` holds `count` readable `u64`s.
pub unsafe extern "C" fn kiln_rt_print(ctx: *const TaskContext, stmt: u32, count: u32, values: *const u64) {
    // SAFETY: the caller's contract: the context and its sink are live.
    let (sink, chunk) = unsafe { (&*(*ctx).prints, (*ctx).begin) };
    // SAFETY: the caller's contract: `count` values at `values`.
    let vals = unsafe { std::slice::from_raw_parts(values, count as usize) };
    // A panic while holding the lock is impossible here (no code that can
    // panic runs under it but an allocation, which aborts); take the data
    // of a poisoned lock anyway rather than unwind.
    let mut r = sink.records.lock().unwrap_or_else(|e| e.into_inner());
    if r.lines.len() >= sink.room {
        r.overflow = true;
        return;
    }
    let at = r.values.len();
    r.values.extend_from_slice(vals);
    r.lines.push(PrintRecord { chunk, stmt, count, at });
}

/// A math function's C signature: `float kiln_rt_sin(float)`.
pub type MathFn = extern "C" fn(f32) -> f32;

/// The rows of [`MATH_RUNTIME`]: each function under its symbol, with a
/// C-ABI function computing it.
macro_rules! math_runtime {
    ($($func:ident: $symbol:literal,)*) => {
        [$({
            extern "C" fn computes(x: f32) -> f32 {
                kiln::math::MathFunc::$func.eval(x)
            }
            (kiln::math::MathFunc::$func, $symbol, computes as MathFn)
        }),*]
    };
}

/// Kiln's own `f32` math ([`kiln::math`]) compiled with the runtime, for
/// code compiled at `-O0` to call: inlined there, each function is dozens
/// of unoptimised instructions for the quick compile in every task that
/// uses it. These compute what the interpreter computes (its
/// [`MathFunc::eval`](kiln::math::MathFunc::eval)), which is what the
/// inline IR computes: the tiers agree bit for bit. One row a function,
/// in the order of [`kiln::math::MathFunc::ALL`] (checked below).
pub const MATH_RUNTIME: [(kiln::math::MathFunc, &str, MathFn); 6] = math_runtime![
    Sin: "kiln_rt_sin",
    Cos: "kiln_rt_cos",
    Tan: "kiln_rt_tan",
    Exp: "kiln_rt_exp",
    Log: "kiln_rt_log",
    Tanh: "kiln_rt_tanh",
];

const _: () = {
    let all = kiln::math::MathFunc::ALL;
    let mut i = 0;
    while i < all.len() {
        assert!(all[i] as usize == MATH_RUNTIME[i].0 as usize);
        i += 1;
    }
};

/// The symbol under which the runtime defines `f` ([`MATH_RUNTIME`]).
pub fn math_symbol(f: kiln::math::MathFunc) -> &'static str {
    MATH_RUNTIME[f as usize].1
}

/// A runtime function objects call by symbol.
#[derive(Clone, Copy, Debug)]
pub enum RuntimeFn {
    Oob(OobReporterFn),
    Print(PrinterFn),
    Math(MathFn),
}

impl RuntimeFn {
    /// Its address in this process.
    pub fn address(self) -> u64 {
        match self {
            RuntimeFn::Oob(f) => f as usize as u64,
            RuntimeFn::Print(f) => f as usize as u64,
            RuntimeFn::Math(f) => f as usize as u64,
        }
    }
}

/// The runtime functions the JIT defines in each session for objects to
/// call, by symbol: the reporter, the printer and [`MATH_RUNTIME`].
pub fn runtime_symbols() -> impl Iterator<Item = (&'static str, RuntimeFn)> {
    [(OOB_REPORTER, RuntimeFn::Oob(kiln_rt_oob)), (PRINTER, RuntimeFn::Print(kiln_rt_print))]
        .into_iter()
        .chain(MATH_RUNTIME.iter().map(|&(_, name, f)| (name, RuntimeFn::Math(f))))
}

/// Positions of the members of [`TaskContext`] in [`context_type`].
pub const CTX_FIELDS: u32 = 0;
pub const CTX_PARAMS: u32 = 1;
pub const CTX_ERROR: u32 = 2;
pub const CTX_BEGIN: u32 = 3;
pub const CTX_END: u32 = 4;
pub const CTX_SEED: u32 = 5;
pub const CTX_TASK: u32 = 6;
pub const CTX_PRINTS: u32 = 7;

/// Every member of the context is 8 bytes and 8-aligned (a pointer or an
/// `i64` on the 64-bit targets Kiln compiles for), so member `k` of
/// [`context_type`] is at `8 * k`: checked here against the Rust type.
const _: () = {
    const fn at(k: u32) -> usize {
        8 * k as usize
    }
    assert!(size_of::<*const u8>() == 8);
    assert!(offset_of!(TaskContext, fields) == at(CTX_FIELDS));
    assert!(offset_of!(TaskContext, params) == at(CTX_PARAMS));
    assert!(offset_of!(TaskContext, error) == at(CTX_ERROR));
    assert!(offset_of!(TaskContext, begin) == at(CTX_BEGIN));
    assert!(offset_of!(TaskContext, end) == at(CTX_END));
    assert!(offset_of!(TaskContext, seed) == at(CTX_SEED));
    assert!(offset_of!(TaskContext, task) == at(CTX_TASK));
    assert!(offset_of!(TaskContext, prints) == at(CTX_PRINTS));
    assert!(size_of::<TaskContext>() == at(CTX_PRINTS + 1));
};

/// Compiled code reads the slot's `state` (a function's caller, after a
/// call that may fail) at the slot's start.
const _: () = assert!(offset_of!(ErrorSlot, state) == 0);

/// The LLVM type of [`TaskContext`]: `{ ptr, ptr, ptr, i64, i64, i64, i64, ptr }`.
pub fn context_type(cx: &Context) -> StructType<'_> {
    let ptr = cx.ptr_type(AddressSpace::default());
    let i64t = cx.i64_type();
    let members = [ptr.into(), ptr.into(), ptr.into(), i64t.into(), i64t.into(), i64t.into(), i64t.into(), ptr.into()];
    cx.struct_type(&members, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inkwell::targets::TargetData;

    /// LLVM lays the context type out as the Rust type is laid out, under
    /// the x86-64 data layout codegen compiles with.
    #[test]
    fn llvm_layout_matches_the_rust_types() {
        let cx = Context::create();
        let td = TargetData::create("e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128");
        let ty = context_type(&cx);
        let rust = [
            offset_of!(TaskContext, fields),
            offset_of!(TaskContext, params),
            offset_of!(TaskContext, error),
            offset_of!(TaskContext, begin),
            offset_of!(TaskContext, end),
            offset_of!(TaskContext, seed),
            offset_of!(TaskContext, task),
            offset_of!(TaskContext, prints),
        ];
        let members = [CTX_FIELDS, CTX_PARAMS, CTX_ERROR, CTX_BEGIN, CTX_END, CTX_SEED, CTX_TASK, CTX_PRINTS];
        for (k, want) in members.into_iter().zip(rust) {
            assert_eq!(td.offset_of_element(&ty, k), Some(want as u64), "member {k}");
        }
        assert_eq!(td.get_abi_size(&ty), size_of::<TaskContext>() as u64);
        assert_eq!(offset_of!(ErrorSlot, index), 16);
    }

    fn report(ctx: &TaskContext, field: u32, index: &[i64]) {
        // SAFETY: `ctx.error` is the test's live slot; `index` holds its
        // length of values.
        unsafe { kiln_rt_oob(ctx, field, index.len() as u32, 7 + field, index.as_ptr()) }
    }

    /// The first report claims the slot whole; a later one changes
    /// nothing.
    #[test]
    fn the_first_out_of_bounds_report_wins() {
        let mut slot = ErrorSlot::default();
        let ctx = TaskContext {
            fields: std::ptr::null(),
            params: std::ptr::null(),
            error: &mut slot,
            begin: 0,
            end: 0,
            seed: 0,
            task: 0,
            prints: std::ptr::null(),
        };
        report(&ctx, 2, &[5, -1]);
        report(&ctx, 3, &[9]);
        assert_eq!(slot.state.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!((slot.field, slot.rank, slot.stmt), (2, 2, 9));
        assert_eq!(&slot.index[..3], &[5, -1, 0]);
    }

    /// Records come out by chunk, each chunk's in the order it printed
    /// them, whatever order the chunks took the lock in; past its room, a
    /// sink drops the line and says so.
    #[test]
    fn a_sink_sorts_by_chunk_and_bounds_its_lines() {
        let sink = PrintSink::new(4);
        let ctx = |begin| TaskContext {
            fields: std::ptr::null(),
            params: std::ptr::null(),
            error: std::ptr::null_mut(),
            begin,
            end: begin + 1,
            seed: 0,
            task: 0,
            prints: &sink,
        };
        let print = |begin: i64, stmt: u32, vals: &[u64]| {
            // SAFETY: the context points to the live sink; `vals` holds
            // its length of values.
            unsafe { kiln_rt_print(&ctx(begin), stmt, vals.len() as u32, vals.as_ptr()) }
        };
        print(8, 1, &[80]);
        print(0, 2, &[1, 2]);
        print(8, 3, &[]);
        print(0, 4, &[3]);
        assert!(!sink.records.lock().unwrap().overflow);
        print(4, 5, &[4]);
        let r = sink.into_records();
        assert!(r.overflow);
        let lines: Vec<(i64, u32, Vec<u64>)> =
            r.lines.iter().map(|l| (l.chunk, l.stmt, r.values[l.at..l.at + l.count as usize].to_vec())).collect();
        assert_eq!(lines, [(0, 2, vec![1, 2]), (0, 4, vec![3]), (8, 1, vec![80]), (8, 3, vec![])]);
    }
}
