//! Passes over KIR and the one registry that `kiln-opt --passes=`,
//! `--print-passes` and the tests all read.
//!
//! Owns: the [`Pass`] trait, the [`REGISTRY`] of passes and the pass
//! manager that runs a pipeline (with verification after each pass when
//! asked).
//!
//! Must never: print; passes return diagnostics, the tool reports them.

use crate::diag::Diagnostics;
use crate::ir::Stream;

pub mod cse;
pub mod dce;
pub mod offload;
pub mod simplify;
pub mod split;
mod util;

/// A transformation (or check) of a whole stream of modules.
pub trait Pass: Sync {
    /// The name used in `--passes=`.
    fn name(&self) -> &'static str;
    /// One line for `--print-passes`.
    fn description(&self) -> &'static str;
    /// Runs the pass. On error the stream may be partly changed; callers
    /// discard it.
    fn run(&self, stream: &mut Stream) -> Result<(), Diagnostics>;
}

/// `verify`: checks the stream and changes nothing.
struct Verify;

impl Pass for Verify {
    fn name(&self) -> &'static str {
        "verify"
    }
    fn description(&self) -> &'static str {
        "check that the IR is well formed; change nothing"
    }
    fn run(&self, stream: &mut Stream) -> Result<(), Diagnostics> {
        crate::verifier::verify(stream)
    }
}

/// Every pass, in the order `--print-passes` lists them.
pub static REGISTRY: &[&dyn Pass] = &[
    &Verify,
    &offload::Offload,
    &simplify::Simplify,
    &cse::Cse,
    &dce::Dce,
    &split::SplitTasks,
];

/// The pipeline that turns a kernel file into keyed, compilable per-task
/// modules: `offload, simplify, cse, dce, split-tasks`. `kiln-key`,
/// `kiln-compile` and `kiln-run` all use it, so they agree on every task's
/// text and therefore on its key. `simplify` runs after `offload` so that
/// it folds the loads and stores offload adds; `cse` before `dce` so that
/// the duplicates it leaves unused are removed.
pub fn default_pipeline() -> [&'static dyn Pass; 5] {
    [&offload::Offload, &simplify::Simplify, &cse::Cse, &dce::Dce, &split::SplitTasks]
}

/// Runs passes in order, stopping at the first that fails.
pub fn run_passes(passes: &[&dyn Pass], stream: &mut Stream) -> Result<(), Diagnostics> {
    passes.iter().try_for_each(|p| p.run(stream))
}

/// Looks a pass up by name.
pub fn lookup(name: &str) -> Option<&'static dyn Pass> {
    REGISTRY.iter().copied().find(|p| p.name() == name)
}
