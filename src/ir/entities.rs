//! Entities and their arenas.
//!
//! Owns: the typed indices [`Value`], [`Stmt`] and [`Block`] (their
//! numbers private), the [`Arena`] that holds the data of one kind of
//! entity and is indexed by its key only (`Index`/`IndexMut`), the side
//! tables keyed the same way ([`SecondaryMap`], [`EntitySet`]), and
//! [`Body`], the arenas of one function, kernel or task. Numbering follows
//! creation order, so printing never churns.
//!
//! Must never: hand out its vectors: code outside `ir` reaches an entity
//! through its key (`body[v]`, `body.stmt(s)`, a `SecondaryMap` or an
//! `EntitySet`), never a raw `usize`.

use super::span::{OperandSpans, Span};
use super::stmt::{StmtData, StmtKind};
use super::types::{Scalar, Type};
use super::Name;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// A typed index into an [`Arena`].
pub trait EntityRef: Copy {
    fn new(index: usize) -> Self;
    fn index(self) -> usize;
}

macro_rules! entity {
    ($(#[$doc:meta])* $name:ident $(, $derive:ident)?) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord $(, $derive)?)]
        pub struct $name(pub(super) u32);

        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        /// The entity's number (creation order), as messages about
        /// malformed IR give it.
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl EntityRef for $name {
            fn new(index: usize) -> Self {
                $name(index as u32)
            }
            fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

entity!(
    /// A local value: an index into [`Body::values`].
    Value
);
entity!(
    /// A statement: an index into [`Body::stmts`].
    Stmt
);
entity!(
    /// A block (a sequence of statements): an index into [`Body::blocks`].
    Block,
    Default
);

impl Stmt {
    /// The statement a top-level task item's header binds its loop
    /// variables by (`ValueDef::LoopVar(Stmt::HEADER, n)`): a
    /// [`TaskItem`](super::TaskItem) header is not a statement of its body,
    /// so it has no index of its own.
    pub const HEADER: Stmt = Stmt(u32::MAX);
}

/// The data of one kind of entity, indexed by its key `K`.
#[derive(Clone, Debug, PartialEq)]
pub struct Arena<K, T> {
    items: Vec<T>,
    key: PhantomData<fn(K) -> K>,
}

impl<K, T> Default for Arena<K, T> {
    fn default() -> Self {
        Arena { items: Vec::new(), key: PhantomData }
    }
}

impl<K: EntityRef, T> Arena<K, T> {
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// Adds an entity; returns its key.
    pub fn push(&mut self, item: T) -> K {
        self.items.push(item);
        K::new(self.items.len() - 1)
    }
    /// The entity of `k`, or None when `k` is out of range (IR built by
    /// hand or by a faulty pass; the verifier checks with this).
    pub fn get(&self, k: K) -> Option<&T> {
        self.items.get(k.index())
    }
    pub fn get_mut(&mut self, k: K) -> Option<&mut T> {
        self.items.get_mut(k.index())
    }
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.items.iter_mut()
    }
    /// Every key with its entity, in creation order.
    pub fn enumerate(&self) -> impl Iterator<Item = (K, &T)> {
        self.items.iter().enumerate().map(|(i, t)| (K::new(i), t))
    }
    /// Every key, in creation order.
    pub fn keys(&self) -> impl Iterator<Item = K> {
        (0..self.items.len()).map(K::new)
    }
    /// Gives back the room the arena grew by beyond its length.
    pub fn shrink_to_fit(&mut self) {
        self.items.shrink_to_fit()
    }
    /// Room for `n` more entities.
    pub fn reserve(&mut self, n: usize) {
        self.items.reserve(n)
    }
    /// Keeps the entities for which `keep` is true, renumbering the rest
    /// in order (the caller remaps every key it holds).
    pub fn retain_by_key(&mut self, mut keep: impl FnMut(K) -> bool) {
        let mut i = 0;
        self.items.retain(|_| {
            let k = keep(K::new(i));
            i += 1;
            k
        });
    }
}

impl<K: EntityRef, T> Index<K> for Arena<K, T> {
    type Output = T;
    fn index(&self, k: K) -> &T {
        &self.items[k.index()]
    }
}

impl<K: EntityRef, T> IndexMut<K> for Arena<K, T> {
    fn index_mut(&mut self, k: K) -> &mut T {
        &mut self.items[k.index()]
    }
}

impl<'a, K: EntityRef, T> IntoIterator for &'a Arena<K, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<'a, K: EntityRef, T> IntoIterator for &'a mut Arena<K, T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter_mut()
    }
}

impl<K: EntityRef, T> FromIterator<T> for Arena<K, T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Arena { items: iter.into_iter().collect(), key: PhantomData }
    }
}

/// Data attached to entities from outside their arena (as Cranelift's
/// `SecondaryMap`): every key maps to a value, the default until set, so a
/// side table needs no length kept in step with its arena. Reading a key
/// past the end gives the default; writing one grows the map.
#[derive(Clone, Debug)]
pub struct SecondaryMap<K, V: Clone> {
    items: Vec<V>,
    default: V,
    key: PhantomData<fn(K) -> K>,
}

impl<K: EntityRef, V: Clone> SecondaryMap<K, V> {
    /// A map whose every key holds `default`.
    pub fn with_default(default: V) -> Self {
        SecondaryMap { items: Vec::new(), default, key: PhantomData }
    }
    /// A map with room for the keys of `arena`, each holding `default`.
    pub fn for_arena<T>(arena: &Arena<K, T>, default: V) -> Self {
        SecondaryMap { items: vec![default.clone(); arena.len()], default, key: PhantomData }
    }
    /// The value of `k`, or `None` when `k` is past every key written or
    /// sized for (a key from IR that slipped past the structure check).
    pub fn get(&self, k: K) -> Option<&V> {
        self.items.get(k.index())
    }
    pub fn get_mut(&mut self, k: K) -> Option<&mut V> {
        self.items.get_mut(k.index())
    }
}

impl<K: EntityRef, V: Clone + Default> Default for SecondaryMap<K, V> {
    fn default() -> Self {
        SecondaryMap::with_default(V::default())
    }
}

impl<K: EntityRef, V: Clone> Index<K> for SecondaryMap<K, V> {
    type Output = V;
    fn index(&self, k: K) -> &V {
        self.items.get(k.index()).unwrap_or(&self.default)
    }
}

impl<K: EntityRef, V: Clone> IndexMut<K> for SecondaryMap<K, V> {
    fn index_mut(&mut self, k: K) -> &mut V {
        if k.index() >= self.items.len() {
            self.items.resize(k.index() + 1, self.default.clone());
        }
        &mut self.items[k.index()]
    }
}

/// A set of entities of one kind (as Cranelift's `EntitySet`), one bit
/// each.
#[derive(Clone, Debug)]
pub struct EntitySet<K> {
    bits: Vec<u64>,
    key: PhantomData<fn(K) -> K>,
}

impl<K> Default for EntitySet<K> {
    fn default() -> Self {
        EntitySet { bits: Vec::new(), key: PhantomData }
    }
}

impl<K: EntityRef> EntitySet<K> {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn contains(&self, k: K) -> bool {
        self.bits.get(k.index() / 64).is_some_and(|w| w >> (k.index() % 64) & 1 == 1)
    }
    /// Adds `k`; whether it was not there before.
    pub fn insert(&mut self, k: K) -> bool {
        let (w, b) = (k.index() / 64, k.index() % 64);
        if w >= self.bits.len() {
            self.bits.resize(w + 1, 0);
        }
        let was = self.bits[w] >> b & 1 == 1;
        self.bits[w] |= 1 << b;
        !was
    }
    pub fn remove(&mut self, k: K) {
        if let Some(w) = self.bits.get_mut(k.index() / 64) {
            *w &= !(1 << (k.index() % 64));
        }
    }
}

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
#[derive(Clone, Debug, PartialEq, Default)]
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

impl Body {
    /// An empty body with an empty entry block.
    pub fn new() -> Body {
        let mut body = Body::default();
        body.entry = body.blocks.push(Vec::new());
        body
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

    /// Where the `k`-th operand of `s` (in [`StmtKind::for_each_operand`]
    /// order) was written; the statement's span when that is unknown (IR a
    /// pass made, or a table that no longer fits the statement).
    pub fn operand_span(&self, s: Stmt, k: usize) -> Span {
        let stmt = self.stmt(s);
        let spans = self.operand_spans.of(s.index());
        let mut n = 0;
        stmt.kind.for_each_operand(|_| n += 1);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secondary_maps_default_and_grow() {
        let mut arena: Arena<Value, ()> = Arena::default();
        let (a, b) = (arena.push(()), arena.push(()));
        let mut m = SecondaryMap::for_arena(&arena, 7u32);
        assert_eq!((m[a], m[b], m.get(Value::new(5))), (7, 7, None));
        m[Value::new(5)] = 1;
        assert_eq!((m[Value::new(4)], m[Value::new(5)], m[Value::new(9)]), (7, 1, 7));
    }

    #[test]
    fn entity_sets_hold_keys_across_words() {
        let mut s = EntitySet::new();
        assert!(s.insert(Stmt::new(3)) && s.insert(Stmt::new(130)) && !s.insert(Stmt::new(3)));
        assert!(s.contains(Stmt::new(130)) && !s.contains(Stmt::new(64)) && !s.contains(Stmt::new(1000)));
        s.remove(Stmt::new(130));
        assert!(!s.contains(Stmt::new(130)) && s.contains(Stmt::new(3)));
    }
}
