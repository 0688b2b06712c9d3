//! A body: the values, statements and blocks of one function, kernel or
//! task, in their arenas.
//!
//! Owns: [`Body`] (its arenas private to `ir`: entities made only through
//! `new_value`, `new_stmt`, `new_block`), [`ValueData`] and [`ValueDef`],
//! walking a body's blocks, replacing values, and the operand spans it
//! keeps for diagnostics.
//!
//! Must never: hand out an arena to grow, or an entity's number.

use super::entities::{Arena, Block, EntitySet, Numbered, SecondaryMap, Stmt, Value};
use super::span::{OperandSpans, Span};
use super::stmt::{StmtData, StmtKind};
use super::types::{Scalar, Type};
use super::Name;
use std::ops::{Index, IndexMut};

/// Where a value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueDef {
    /// The n-th parameter of the body's function, kernel or task.
    Param(u32),
    /// The result of a statement.
    Result(Stmt),
    /// The n-th induction variable bound by a `for` or a task header.
    LoopVar(Stmt, u32),
    /// Named in the text but never defined (the parser keeps it so the
    /// verifier can report every such use with its span).
    Undefined,
}

/// A local value's data.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueData {
    /// The textual name, without `%` (user names are kept; passes make new
    /// ones that do not clash).
    pub name: Name,
    pub ty: Type,
    pub def: ValueDef,
    pub span: Span,
}

/// The values and statements of one function, kernel or task. Its arenas
/// are private to `ir`: entities are made only through [`Body::new_value`],
/// [`Body::new_stmt`] and [`Body::new_block`] (so every entity is numbered
/// in creation order), read through [`Body::values`] and its siblings, and
/// changed in place through indexing (`body[s]`, `body[v]`, `body[b]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    pub(super) values: Arena<Value, ValueData>,
    pub(super) stmts: Arena<Stmt, StmtData>,
    /// Each block is the ordered list of its statements.
    pub(super) blocks: Arena<Block, Vec<Stmt>>,
    /// The parameter values, in order.
    pub params: Vec<Value>,
    /// The outermost block.
    pub entry: Block,
    /// Where each statement's operands were written (filled by the
    /// parser; empty for what a pass made): for diagnostics only, see
    /// [`Body::operand_span`].
    pub operand_spans: OperandSpans,
}

impl Index<Value> for Body {
    type Output = ValueData;
    fn index(&self, v: Value) -> &ValueData {
        &self.values[v]
    }
}
impl IndexMut<Value> for Body {
    fn index_mut(&mut self, v: Value) -> &mut ValueData {
        &mut self.values[v]
    }
}
impl Index<Stmt> for Body {
    type Output = StmtData;
    fn index(&self, s: Stmt) -> &StmtData {
        &self.stmts[s]
    }
}
impl IndexMut<Stmt> for Body {
    fn index_mut(&mut self, s: Stmt) -> &mut StmtData {
        &mut self.stmts[s]
    }
}
impl Index<Block> for Body {
    type Output = Vec<Stmt>;
    fn index(&self, b: Block) -> &Vec<Stmt> {
        &self.blocks[b]
    }
}
impl IndexMut<Block> for Body {
    fn index_mut(&mut self, b: Block) -> &mut Vec<Stmt> {
        &mut self.blocks[b]
    }
}

impl Default for Body {
    fn default() -> Body {
        Body::new()
    }
}

impl Body {
    /// An empty body with an empty entry block.
    pub fn new() -> Body {
        let mut blocks = Arena::default();
        let entry = blocks.push(Vec::new());
        Body {
            values: Arena::default(),
            stmts: Arena::default(),
            blocks,
            params: Vec::new(),
            entry,
            operand_spans: OperandSpans::default(),
        }
    }

    /// Every value, in creation order (for secondary maps and scans).
    pub fn values(&self) -> &Arena<Value, ValueData> {
        &self.values
    }
    /// Every statement, in creation order, reachable or not.
    pub fn stmts(&self) -> &Arena<Stmt, StmtData> {
        &self.stmts
    }
    /// Every block, in creation order.
    pub fn blocks(&self) -> &Arena<Block, Vec<Stmt>> {
        &self.blocks
    }
    /// Every value, to change in place.
    pub fn values_mut(&mut self) -> std::slice::IterMut<'_, ValueData> {
        self.values.iter_mut()
    }
    /// Every statement, to change in place.
    pub fn stmts_mut(&mut self) -> std::slice::IterMut<'_, StmtData> {
        self.stmts.iter_mut()
    }
    /// Every block's statement list, to change in place.
    pub fn blocks_mut(&mut self) -> std::slice::IterMut<'_, Vec<Stmt>> {
        self.blocks.iter_mut()
    }
    /// The statement [`Body::new_stmt`] will make next.
    pub fn next_stmt(&self) -> Stmt {
        Stmt::new(self.stmts.len())
    }
    /// Room for `stmts` more statements and `values` more values.
    pub fn reserve(&mut self, stmts: usize, values: usize) {
        self.stmts.reserve(stmts);
        self.values.reserve(values);
    }
    /// Gives back the arenas' slack (a body that is complete).
    pub fn shrink_to_fit(&mut self) {
        self.values.shrink_to_fit();
        self.stmts.shrink_to_fit();
        self.blocks.shrink_to_fit();
        self.blocks.iter_mut().for_each(Vec::shrink_to_fit);
    }

    pub fn value(&self, v: Value) -> &ValueData {
        &self.values[v]
    }
    pub fn stmt(&self, s: Stmt) -> &StmtData {
        &self.stmts[s]
    }
    pub fn block(&self, b: Block) -> &[Stmt] {
        &self.blocks[b]
    }
    pub fn ty(&self, v: Value) -> Type {
        self.values[v].ty
    }
    pub fn name(&self, v: Value) -> &str {
        &self.values[v].name
    }

    pub fn new_value(&mut self, name: impl Into<Name>, ty: Type, def: ValueDef, span: Span) -> Value {
        self.values.push(ValueData { name: name.into(), ty, def, span })
    }
    /// Adds a parameter value.
    pub fn add_param(&mut self, name: impl Into<Name>, ty: Scalar, span: Span) -> Value {
        let idx = self.params.len() as u32;
        let v = self.new_value(name, Type::Scalar(ty), ValueDef::Param(idx), span);
        self.params.push(v);
        v
    }
    pub fn new_block(&mut self) -> Block {
        self.blocks.push(Vec::new())
    }
    /// Creates a statement without placing it in a block.
    pub fn new_stmt(&mut self, kind: StmtKind, span: Span) -> Stmt {
        self.stmts.push(StmtData { kind, result: None, span, loc: None })
    }
    /// Creates a statement that defines a fresh value of type `ty` named
    /// `name`, and returns both.
    pub fn new_stmt_with_result(
        &mut self,
        kind: StmtKind,
        name: impl Into<Name>,
        ty: Type,
        span: Span,
    ) -> (Stmt, Value) {
        let s = self.new_stmt(kind, span);
        let v = self.new_value(name, ty, ValueDef::Result(s), span);
        self.stmts[s].result = Some(v);
        (s, v)
    }
    /// Replaces every use of each `from` of `pairs` by its `to` (itself no
    /// `from`), and drops the `from` values, renumbering the others in
    /// order.
    pub fn replace_values(&mut self, pairs: &[(Value, Value)]) {
        let mut target = SecondaryMap::with_default(None);
        let mut dropped = EntitySet::new();
        for &(from, to) in pairs {
            target[from] = Some(to);
            dropped.insert(from);
        }
        // The number each kept value gets once the dropped are gone.
        let mut renumbered = SecondaryMap::for_arena(&self.values, Value(0));
        let mut next = 0;
        for v in self.values.keys() {
            renumbered[v] = Value(next);
            next += u32::from(!dropped.contains(v));
        }
        let map = |v: &mut Value| *v = renumbered[target[*v].unwrap_or(*v)];
        for s in &mut self.stmts {
            s.kind.values_mut(map);
            if let Some(r) = &mut s.result {
                map(r);
            }
        }
        self.params.iter_mut().for_each(map);
        self.values.retain_by_key(|v| !dropped.contains(v));
    }

    /// Appends a statement to a block.
    pub fn push(&mut self, b: Block, s: Stmt) {
        self.blocks[b].push(s);
    }

    /// The blocks nested directly in a statement, in print order (see
    /// [`StmtKind::child_blocks`]).
    pub fn child_blocks(&self, s: Stmt) -> impl Iterator<Item = Block> + use<> {
        self.stmt(s).kind.child_blocks()
    }

    /// Calls `f` on every statement reachable from `b`, in print order
    /// (pre-order: a statement before the statements nested in it).
    pub fn walk(&self, b: Block, f: &mut dyn FnMut(Stmt)) {
        for &s in self.block(b) {
            f(s);
            for c in self.child_blocks(s) {
                self.walk(c, f);
            }
        }
    }

    /// Calls `f` with the callee of every call reachable from the entry
    /// block, once per call, in print order.
    pub fn each_call<'b>(&'b self, f: &mut dyn FnMut(&'b str)) {
        self.walk(self.entry, &mut |s| {
            if let StmtKind::Call(name, ..) = &self.stmt(s).kind {
                f(name.as_str());
            }
        });
    }

    /// Where the `k`-th operand of `s` (in [`StmtKind::for_each_operand`]
    /// order) was written; the statement's span when that is unknown (IR a
    /// pass made, or a table that no longer fits the statement).
    pub fn operand_span(&self, s: Stmt, k: usize) -> Span {
        let mut n = 0;
        self.stmt(s).kind.for_each_operand(|_| n += 1);
        self.operand_span_of(s, k, n)
    }

    /// [`Body::operand_span`] of a statement the caller knows to have `n`
    /// operands (a verifier placing many errors in one statement counts
    /// them once).
    pub fn operand_span_of(&self, s: Stmt, k: usize, n: usize) -> Span {
        let stmt = self.stmt(s);
        let spans = self.operand_spans.of(s);
        match spans.get(k) {
            Some(&sp) if spans.len() == n && inside(sp, stmt.span) => sp,
            _ => stmt.span,
        }
    }

    /// Where `s` reads `v` (its first operand that is `v`; see
    /// [`Body::operand_span`]).
    pub fn use_span(&self, s: Stmt, v: Value) -> Span {
        let (mut k, mut found) = (0, None);
        self.stmt(s).kind.for_each_operand(|u| {
            if u == v && found.is_none() {
                found = Some(k);
            }
            k += 1;
        });
        found.map_or(self.stmt(s).span, |k| self.operand_span(s, k))
    }

    /// The values a statement reads (operands, indices and bounds), in
    /// print order; nested blocks are not included.
    pub fn operands(&self, s: Stmt) -> Vec<Value> {
        let mut out = Vec::new();
        self.stmt(s).kind.for_each_operand(|v| out.push(v));
        out
    }
}

/// Whether `inner` is a span of text within `outer` (a recorded operand
/// span is used only inside its statement's).
fn inside(inner: Span, outer: Span) -> bool {
    !inner.is_dummy() && outer.start <= inner.start && inner.end <= outer.end
}
