//! How big a KIR stream is, for `kiln-reduce`.
//!
//! Owns: [`Size`], the well-founded measure (a tuple of counts compared in
//! order) that every accepted candidate makes strictly smaller, which is
//! why reduction ends; its first parts are what a user calls smaller
//! (items, parameters, statements).
//!
//! Must never: look at text (layout and names do not make a stream
//! smaller), or change the stream.

use super::shrink::{const_weight, definition_order};
use crate::ir::*;

/// A stream's size: compared field by field, in this order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Size {
    pub items: u64,
    pub params: u64,
    /// Every statement of every body, nested ones included.
    pub statements: u64,
    /// The statements that are not `const`.
    pub computations: u64,
    pub field_elements: u64,
    /// Loop and task bounds that are not literals.
    pub open_bounds: u64,
    /// The iterations of loops whose bounds are literals.
    pub iterations: u64,
    /// How late each operand's value is defined, summed (operands moved to
    /// earlier values make it smaller).
    pub operand_ranks: u64,
    /// How far constants are from 0 and 1, summed.
    pub constants: u64,
}

impl Size {
    /// The size of `stream`.
    pub fn of(stream: &Stream) -> Size {
        let mut size = Size::default();
        for item in stream.modules.iter().flat_map(|m| &m.items) {
            size.items += 1;
            match item {
                Item::Field(f) => size.field_elements = size.field_elements.saturating_add(f.len()),
                Item::Kernel(k) => size.params += k.params.len() as u64,
                Item::Func(f) => size.params += f.params.len() as u64,
                Item::Task(t) => {
                    size.params += t.params.len() as u64;
                    size.add_task_kind(&t.kind);
                }
            }
            let body = match item {
                Item::Func(f) => &f.body,
                Item::Kernel(k) => &k.body,
                Item::Task(t) => &t.body,
                Item::Field(_) => continue,
            };
            size.add_body(body);
        }
        size
    }

    fn add_body(&mut self, body: &Body) {
        let order = definition_order(body);
        let rank: std::collections::HashMap<Value, u64> =
            order.iter().enumerate().map(|(r, &v)| (v, r as u64)).collect();
        body.walk(body.entry, &mut |s| {
            let kind = &body.stmt(s).kind;
            self.statements += 1;
            match kind {
                StmtKind::Const(c) => self.constants = self.constants.saturating_add(const_weight(*c)),
                StmtKind::For { lo, hi, .. } => self.add_bounds(lo, hi),
                StmtKind::Task { kind, .. } => self.add_task_kind(kind),
                _ => {}
            }
            if !matches!(kind, StmtKind::Const(_)) {
                self.computations += 1;
            }
            kind.for_each_operand(|v| self.operand_ranks += rank.get(&v).copied().unwrap_or(0));
        });
    }

    fn add_task_kind(&mut self, kind: &TaskKind) {
        if let TaskKind::RangeFor { lo, hi, .. } = kind {
            self.add_bounds(lo, hi);
        }
    }

    fn add_bounds(&mut self, lo: &Bound, hi: &Bound) {
        match (lo, hi) {
            (Bound::Const(l), Bound::Const(h)) => {
                self.iterations = self.iterations.saturating_add(h.saturating_sub(*l).max(0) as u64)
            }
            (Bound::Const(_), _) | (_, Bound::Const(_)) => self.open_bounds += 1,
            _ => self.open_bounds += 2,
        }
    }
}
