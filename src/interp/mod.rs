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
//! A `print` appends its text to the run's output, keyed by its iteration
//! in the parallel launch running; a launch's lines are sorted by that key
//! when it ends (a stable sort), so they come in iteration order whatever
//! order the iterations ran in, as the JIT's do ([`Engine::take_printed`]).
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
//! never compare stored NaNs bitwise); `sin`, `cos`, `tan`, `exp`, `log`,
//! `tanh` on `f32` are Kiln's own (`crate::math`), which the JIT emits
//! inline, the other transcendental functions the host libm's (`f32::atan`
//! is `atanf`), the ones the JIT calls too.
//!
//! Values live in a `Vec<u64>` register file per body, in "register form":
//! `i1` is 0 or 1, `i32` is sign-extended to 64 bits (so indices and loop
//! bounds of either integer type compare as `i64`), `i64` as is, `f32` its
//! bits in the low half, `f64` its bits. Every arithmetic rule of the
//! language is `crate::semantics`', which passes and tests share.

use crate::exec::{
    assert_message, assertion_failed, out_of_bounds, print_text, too_much_output, Engine, FieldData, Fields, RunError,
};
use crate::ir::*;
use crate::races::{AccessKind, IterationOrder, Permutation, Race, RaceReport, Shadow};
use std::collections::HashMap;

mod code;
pub mod cost;
mod run;

use crate::semantics::*;
use code::*;

/// The reference interpreter engine (each run lowers what it needs).
#[derive(Clone, Debug, Default)]
pub struct Interpreter {
    /// The order the iterations of parallel tasks run in.
    pub order: IterationOrder,
    /// Report data races in parallel tasks (a run-time error).
    pub check_races: bool,
    /// What float operations do with subnormal numbers: the run computes
    /// in this mode ([`crate::fpenv`]), as the JIT's code does.
    pub denormals: crate::config::Denormals,
    /// The seed of the `random` statements' streams (`crate::random`).
    pub seed: u64,
    /// What the `print`s of its runs wrote, until [`Engine::take_printed`].
    pub printed: Vec<String>,
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
        self.run_kernels(stream, &[(kernel, args)], fields)
    }

    /// The stream is indexed (and, for iteration orders and races,
    /// offloaded) once for all the runs.
    fn run_kernels(&mut self, stream: &Stream, runs: &[(&str, &[Const])], fields: &mut Fields) -> Result<(), RunError> {
        let _env = crate::fpenv::FpEnv::enter(self.denormals);
        // The options each run reads (its output goes to `printed`).
        let opts = Interpreter { printed: Vec::new(), ..*self };
        let printed = &mut self.printed;
        let mut scopes = Scopes::new();
        if self.order == IterationOrder::Ascending && !self.check_races && !draws_random(stream) {
            let items = StreamIndex::new(stream);
            return runs.iter().try_for_each(|&(kernel, args)| {
                Program::lower(&items, &mut scopes, kernel)?.run(args, fields, opts.clone(), printed)
            });
        }
        // Iteration orders, races and random streams are properties of
        // tasks: run the kernels as offload makes them.
        let mut tasks = stream.clone();
        for m in &mut tasks.modules {
            crate::passes::offload::offload_module(m)
                .map_err(|d| err(format!("cannot offload the kernels into tasks: {}", d.message)))?;
        }
        let items = StreamIndex::new(&tasks);
        runs.iter().try_for_each(|&(kernel, args)| {
            let prog = Program::lower(&items, &mut scopes, kernel)?;
            let used = prog.fields.iter().map(|f| (f.name.as_str(), f.elem, f.shape.as_slice()));
            let temps = fields.add_temporaries(used)?;
            let r = prog.run(args, fields, opts.clone(), printed);
            fields.drop_temporaries(temps);
            r
        })
    }

    fn take_printed(&mut self) -> Vec<String> {
        std::mem::take(&mut self.printed)
    }
}

/// Whether a kernel or task of the stream holds a `random` statement
/// (which draws from its task's stream, so the kernel runs as tasks).
fn draws_random(stream: &Stream) -> bool {
    let mut found = false;
    for m in &stream.modules {
        for it in &m.items {
            let body = match it {
                Item::Kernel(k) => &k.body,
                Item::Task(t) => &t.body,
                Item::Field(_) | Item::Func(_) => continue,
            };
            body.walk(body.entry, &mut |s| found |= matches!(body.stmt(s).kind, StmtKind::Random { .. }));
        }
    }
    found
}

#[cfg(test)]
mod tests;
