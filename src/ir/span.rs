//! Source spans.
//!
//! Owns: [`Span`], a byte range of the text a node came from; [`Loc`],
//! where a statement came from in the program the KIR was made from; the one
//! dummy span of synthesised nodes ([`Span::is_dummy`]), and
//! [`OperandSpans`], a body's side table of where each operand was written
//! (for diagnostics only).
//!
//! Must never: take part in what a module *means*: spans compare honestly
//! (two spans are equal when their ranges are), so comparing modules up to
//! layout goes through [`crate::ir::Stream::same_as`], which ignores them.

use super::entities::{Numbered, Stmt};

/// Where a statement came from in the program the IR was made from (a
/// Quadrants kernel's Python file, say), written after the statement as
/// `loc("kernels.py":16:13)` in the manner of MLIR's locations: a file,
/// a 1-based line and a 1-based column. Printed and parsed back, never
/// part of a task's key, and shown by run-time diagnostics beside the
/// statement's own location in the KIR text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Loc {
    pub file: crate::ir::Name,
    pub line: u32,
    pub col: u32,
}

/// A byte range in the source text a node came from. Synthesised nodes use
/// [`Span::DUMMY`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    /// The span of a node that has no source text.
    pub const DUMMY: Span = Span { start: 0, end: 0 };

    pub fn new(start: usize, end: usize) -> Span {
        Span { start: start as u32, end: end as u32 }
    }

    /// Whether this is [`Span::DUMMY`] (a node made by a pass, not read).
    pub fn is_dummy(self) -> bool {
        self == Span::DUMMY
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// Where each statement's operands were written: a side table of a
/// [`super::Body`], filled by the parser, for diagnostics only. For
/// statement `s`, the spans of its operands in the order
/// [`super::StmtKind::for_each_operand`] visits them. Statements a pass
/// made have no entry, and an entry that no longer fits its statement (a
/// pass changed the operands, or moved the statement) is not used: errors
/// then point at the statement.
///
/// Not part of what a module means: [`crate::ir::Stream::same_as`] leaves
/// it out, and the printer never reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OperandSpans {
    /// Where statement `i`'s spans start in `spans`; they end where
    /// statement `i + 1`'s start (or at the end of `spans`).
    starts: Vec<u32>,
    spans: Vec<Span>,
}

impl OperandSpans {
    /// Records the operand spans of statement `stmt`. Statements
    /// are recorded in increasing order (skipped ones get none); a
    /// statement already recorded is left as it is.
    pub fn record(&mut self, stmt: Stmt, spans: impl IntoIterator<Item = Span>) {
        let stmt = stmt.index();
        if stmt < self.starts.len() {
            return;
        }
        let at = self.spans.len() as u32;
        self.starts.resize(stmt + 1, at);
        self.spans.extend(spans);
    }

    /// The spans recorded for statement `stmt` (empty when none).
    pub fn of(&self, stmt: Stmt) -> &[Span] {
        let stmt = stmt.index();
        let Some(&start) = self.starts.get(stmt) else {
            return &[];
        };
        let end = self.starts.get(stmt + 1).map_or(self.spans.len(), |&e| e as usize);
        self.spans.get(start as usize..end).unwrap_or(&[])
    }

    /// Room for `stmts` more statements and `operands` more spans.
    pub fn reserve(&mut self, stmts: usize, operands: usize) {
        self.starts.reserve(stmts);
        self.spans.reserve(operands);
    }

    /// Gives back the room the table grew by beyond its length.
    pub fn shrink_to_fit(&mut self) {
        self.starts.shrink_to_fit();
        self.spans.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Stmt;

    #[test]
    fn operand_spans_by_statement() {
        let mut t = OperandSpans::default();
        t.record(Stmt(0), [Span::new(1, 2), Span::new(3, 4)]);
        // Statement 1 has no operands; 2 is recorded after it is skipped.
        t.record(Stmt(2), [Span::new(5, 6)]);
        t.record(Stmt(0), [Span::new(9, 9)]);
        assert_eq!(t.of(Stmt(0)), &[Span::new(1, 2), Span::new(3, 4)]);
        assert_eq!(t.of(Stmt(1)), &[] as &[Span]);
        assert_eq!(t.of(Stmt(2)), &[Span::new(5, 6)]);
        assert_eq!(t.of(Stmt(3)), &[] as &[Span]);
    }
}
