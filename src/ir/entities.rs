//! Entities and their arenas.
//!
//! Owns: the typed indices [`Value`], [`Stmt`] and [`Block`] (minted and
//! numbered only in `ir`: [`EntityRef`] is sealed), [`Value::RESERVED`],
//! the [`Arena`] that holds the data of one kind of entity and is indexed
//! by its key only (`Index`/`IndexMut`), the side tables keyed the same
//! way ([`SecondaryMap`], [`EntitySet`]). Numbering
//! follows creation order, so printing never churns. It knows nothing of
//! what the entities hold (that is `body`'s and `stmt`'s).
//!
//! Must never: hand out its vectors: code outside `ir` reaches an entity
//! through its key (`body[v]`, `body.stmt(s)`, a `SecondaryMap` or an
//! `EntitySet`), never a raw `usize`.

use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// A typed index into an [`Arena`]. Sealed: only `ir` mints an entity
/// or reads its number (the methods are those of a trait no other module
/// can name), so code outside `ir` keys its side tables by the entity
/// ([`SecondaryMap`], [`EntitySet`]) and cannot make one up:
///
/// ```compile_fail,E0599
/// use kiln::ir::Value;
/// let made_up = Value::new(3);
/// ```
///
/// ```compile_fail,E0576
/// use kiln::ir::{EntityRef, Value};
/// let made_up = <Value as EntityRef>::new(3);
/// ```
///
/// ```compile_fail,E0599
/// use kiln::ir::Value;
/// fn number(v: Value) -> usize { v.index() }
/// ```
pub trait EntityRef: Copy + sealed::Numbered {}

pub(super) mod sealed {
    /// What only `ir` may do with an entity: make one from its number, and
    /// read its number.
    pub trait Numbered {
        fn new(index: usize) -> Self;
        fn index(self) -> usize;
    }
}
pub(super) use sealed::Numbered;

macro_rules! entity {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub(super) u32);

        /// The entity's number (creation order), as messages about
        /// malformed IR give it.
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl sealed::Numbered for $name {
            fn new(index: usize) -> Self {
                $name(index as u32)
            }
            fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl EntityRef for $name {}
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
    Block
);

impl Stmt {
    /// The statement a top-level task item's header binds its loop
    /// variables by (`ValueDef::LoopVar(Stmt::HEADER, n)`): a
    /// [`TaskItem`](super::TaskItem) header is not a statement of its body,
    /// so it has no index of its own.
    pub const HEADER: Stmt = Stmt(u32::MAX);
}

impl Value {
    /// A value that names none, as Cranelift's reserved value behind its
    /// `PackedOption`: what a statement holds while the value it defines
    /// is being made (the parser's `for`, whose loop variable is defined by
    /// the statement itself). No body defines it; the verifier rejects it
    /// as an operand.
    pub const RESERVED: Value = Value(u32::MAX);

    /// Value number `n`, for the tests of modules outside `ir` that check
    /// what a body holds.
    #[cfg(test)]
    pub(crate) fn numbered(n: usize) -> Value {
        Value(n as u32)
    }
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
