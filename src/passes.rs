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
pub static REGISTRY: &[&dyn Pass] = &[&Verify];

/// Looks a pass up by name.
pub fn lookup(name: &str) -> Option<&'static dyn Pass> {
    REGISTRY.iter().copied().find(|p| p.name() == name)
}
