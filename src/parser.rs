//! (being written)
use crate::diag::Diagnostics;
use crate::ir::Stream;

/// Parses KIR text into a stream of modules.
pub fn parse(_text: &str) -> Result<Stream, Diagnostics> {
    Ok(Stream::default())
}
