//! (being written)
use crate::diag::Diagnostics;
use crate::ir::Stream;

/// Checks a stream; reports every error found.
pub fn verify(_stream: &Stream) -> Result<(), Diagnostics> {
    Ok(())
}
