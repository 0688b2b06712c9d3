//! Items, modules and streams.
//!
//! Owns: the top of the data model: a [`Stream`] of [`Module`]s, each a
//! list of [`Item`]s (fields, functions, kernels, task items) that refer to
//! each other by [`Name`], resolved by lookups on [`Module`].
//!
//! Must never: print, parse or check.

use super::body::Body;
use super::span::Span;
use super::stmt::TaskKind;
use super::types::{Const, Scalar};
use super::Name;

/// The largest rank of a field: the verifier's limit, the number of
/// indices codegen passes and the runtime's error slot holds.
pub const MAX_RANK: usize = 8;

/// `field @x : f32[1024]`: a dense, zero-initialised array (rank 0 to
/// [`MAX_RANK`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub name: Name,
    pub elem: Scalar,
    /// Extents, outermost first; empty for a 0-D field (a global scalar).
    pub shape: Vec<u64>,
    pub span: Span,
}

impl Field {
    /// The number of elements (1 for a 0-D field).
    pub fn len(&self) -> u64 {
        self.shape.iter().product()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn size_bytes(&self) -> u64 {
        self.len() * self.elem.size_bytes() as u64
    }
}

/// A parameter's declaration; its value is `body.params[i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub ty: Scalar,
    /// `= LITERAL` on a kernel parameter: the value `kiln-run` uses when
    /// none is given.
    pub default: Option<Const>,
    pub span: Span,
}

/// `func @f(%a: f32) -> f32 { ... }`
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    pub name: Name,
    pub params: Vec<Param>,
    pub ret: Option<Scalar>,
    pub body: Body,
    pub span: Span,
}

/// `kernel @k(%n: i32 = 16) { ... }`: statements before `offload`, tasks
/// after it, launches in a split stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: Name,
    pub params: Vec<Param>,
    pub body: Body,
    pub span: Span,
}

/// A task as a top-level item of a per-task module (made by `split-tasks`):
/// `task @k.1 of @k (%a: f32, %n: i32) range_for %i in 0 .. %n block_dim 64 { ... }`.
/// Its parameters are the kernel parameters it reads, by the kernel's
/// names; the body's entry block is the task body.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskItem {
    pub name: Name,
    /// The kernel it came from (launch metadata; not part of the key).
    pub kernel: Name,
    pub params: Vec<Param>,
    pub kind: TaskKind,
    pub body: Body,
    pub span: Span,
}

/// A top-level item. A function is shared (`Arc`): `split-tasks` puts a
/// copy of every function a task reaches into the task's module, and many
/// tasks reaching one call chain would otherwise hold tasks × functions
/// bodies; a pass that changes a function copies it then
/// ([`std::sync::Arc::make_mut`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Field(Field),
    Func(std::sync::Arc<Func>),
    Kernel(Kernel),
    Task(TaskItem),
}

impl Item {
    pub fn name(&self) -> &str {
        match self {
            Item::Field(x) => &x.name,
            Item::Func(x) => &x.name,
            Item::Kernel(x) => &x.name,
            Item::Task(x) => &x.name,
        }
    }
    pub fn span(&self) -> Span {
        match self {
            Item::Field(x) => x.span,
            Item::Func(x) => x.span,
            Item::Kernel(x) => x.span,
            Item::Task(x) => x.span,
        }
    }
}

/// One module: a list of items in source order. `name` is set when the
/// module was written as `module @name { ... }`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    pub name: Option<Name>,
    pub items: Vec<Item>,
    pub span: Span,
}

impl Module {
    pub fn fields(&self) -> impl Iterator<Item = &Field> {
        self.items.iter().filter_map(|i| if let Item::Field(f) = i { Some(f) } else { None })
    }
    pub fn funcs(&self) -> impl Iterator<Item = &Func> {
        self.items.iter().filter_map(|i| if let Item::Func(f) = i { Some(&**f) } else { None })
    }
    pub fn kernels(&self) -> impl Iterator<Item = &Kernel> {
        self.items.iter().filter_map(|i| if let Item::Kernel(f) = i { Some(f) } else { None })
    }
    pub fn tasks(&self) -> impl Iterator<Item = &TaskItem> {
        self.items.iter().filter_map(|i| if let Item::Task(f) = i { Some(f) } else { None })
    }
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields().find(|f| f.name == name)
    }
    pub fn func(&self, name: &str) -> Option<&Func> {
        self.funcs().find(|f| f.name == name)
    }
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels().find(|f| f.name == name)
    }
    pub fn task(&self, name: &str) -> Option<&TaskItem> {
        self.tasks().find(|f| f.name == name)
    }
}

/// What a file holds: one unnamed module, or a stream of `module @name { }`
/// blocks (what `split-tasks` writes and the next tool in a pipe reads).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Stream {
    pub modules: Vec<Module>,
}

impl Stream {
    /// Whether the text was (or will print as) `module @name { }` blocks
    /// rather than bare items.
    pub fn is_multi(&self) -> bool {
        self.modules.iter().any(|m| m.name.is_some())
    }
    /// Finds a top-level task item by name in any module of the stream (a
    /// scan: for many names, build a [`StreamIndex`] once).
    pub fn find_task(&self, name: &str) -> Option<(&Module, &TaskItem)> {
        self.modules.iter().find_map(|m| m.task(name).map(|t| (m, t)))
    }

    /// The source location (`loc(...)`) of every statement that has one,
    /// by the statement's span: how a diagnostic at a statement of the text
    /// finds where that statement came from.
    pub fn locs(&self) -> std::collections::HashMap<Span, &super::Loc> {
        let bodies = self.modules.iter().flat_map(|m| &m.items).filter_map(|i| match i {
            Item::Func(f) => Some(&f.body),
            Item::Kernel(k) => Some(&k.body),
            Item::Task(t) => Some(&t.body),
            Item::Field(_) => None,
        });
        bodies
            .flat_map(|b| b.stmts.iter())
            .filter_map(|d| Some((d.span, d.loc.as_deref()?)))
            .filter(|(span, _)| !span.is_dummy())
            .collect()
    }
}

/// Every item of a stream by name, built once in one pass over the stream:
/// the lookups of a loop over many names (a kernel's launches, the fields
/// and functions an interpreter binds) cost O(1) each instead of a scan of
/// the stream, which made them quadratic in a split stream's size. The
/// first item of a kind and name in stream order wins, as the scans did.
pub struct StreamIndex<'a> {
    stream: &'a Stream,
    first: rustc_hash::FxHashMap<(ItemTag, &'a str), (usize, &'a Item)>,
    in_module: rustc_hash::FxHashMap<(usize, ItemTag, &'a str), &'a Item>,
}

/// Which kind of item a name is looked up as.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum ItemTag {
    Field,
    Func,
    Kernel,
    Task,
}

impl Item {
    fn tag(&self) -> ItemTag {
        match self {
            Item::Field(_) => ItemTag::Field,
            Item::Func(_) => ItemTag::Func,
            Item::Kernel(_) => ItemTag::Kernel,
            Item::Task(_) => ItemTag::Task,
        }
    }
}

impl<'a> StreamIndex<'a> {
    pub fn new(stream: &'a Stream) -> StreamIndex<'a> {
        let mut first = rustc_hash::FxHashMap::default();
        let mut in_module = rustc_hash::FxHashMap::default();
        for (mi, m) in stream.modules.iter().enumerate() {
            for it in &m.items {
                let tag = it.tag();
                first.entry((tag, it.name())).or_insert((mi, it));
                in_module.entry((mi, tag, it.name())).or_insert(it);
            }
        }
        StreamIndex { stream, first, in_module }
    }
    /// The stream this indexes.
    pub fn stream(&self) -> &'a Stream {
        self.stream
    }
    fn get(&self, tag: ItemTag, name: &str) -> Option<(usize, &'a Item)> {
        self.first.get(&(tag, name)).copied()
    }
    /// The first task item named `name` in the stream, with its module.
    pub fn task(&self, name: &str) -> Option<(&'a Module, &'a TaskItem)> {
        match self.get(ItemTag::Task, name)? {
            (mi, Item::Task(t)) => Some((&self.stream.modules[mi], t)),
            _ => None,
        }
    }
    /// The first task item named `name` in the stream, with its module's
    /// index.
    pub fn task_at(&self, name: &str) -> Option<(usize, &'a TaskItem)> {
        match self.get(ItemTag::Task, name)? {
            (mi, Item::Task(t)) => Some((mi, t)),
            _ => None,
        }
    }
    /// The first kernel named `name` in the stream, with its module's index.
    pub fn kernel(&self, name: &str) -> Option<(usize, &'a Kernel)> {
        match self.get(ItemTag::Kernel, name)? {
            (mi, Item::Kernel(k)) => Some((mi, k)),
            _ => None,
        }
    }
    /// The field named `name` in module `mi`, else the first in the stream.
    pub fn field(&self, mi: usize, name: &str) -> Option<&'a Field> {
        let tag = ItemTag::Field;
        match self.in_module.get(&(mi, tag, name)).copied().or_else(|| Some(self.get(tag, name)?.1))? {
            Item::Field(f) => Some(f),
            _ => None,
        }
    }
    /// The function named `name` in module `mi`.
    pub fn func(&self, mi: usize, name: &str) -> Option<&'a Func> {
        match self.in_module.get(&(mi, ItemTag::Func, name))? {
            Item::Func(f) => Some(f),
            _ => None,
        }
    }
}
