//! Source spans.
//!
//! Owns: [`Span`], a byte range of the text a node came from, and the one
//! dummy span of synthesised nodes ([`Span::is_dummy`]).
//!
//! Must never: take part in what a module *means*: spans compare honestly
//! (two spans are equal when their ranges are), so comparing modules up to
//! layout goes through [`crate::ir::Stream::same_as`], which ignores them.

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
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// Whether this is [`Span::DUMMY`] (a node made by a pass, not read).
    pub fn is_dummy(self) -> bool {
        self == Span::DUMMY
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}
