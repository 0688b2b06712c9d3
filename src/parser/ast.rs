//! The syntax tree the grammar builds: what the text says, with spans,
//! before names are resolved and types inferred.
//!
//! Owns: a borrowed, short-lived picture of one top-level chunk. Names and
//! literals are slices of the input (no allocation per token); lowering to
//! the IR (`super::lower`) consumes it right away.
//!
//! Must never: interpret literals or resolve names (that is lowering).

use crate::ir::{BinOp, CmpOp, Scalar, Span, UnOp};

/// A name as written, without its sigil.
#[derive(Clone, Copy, Debug)]
pub struct Name<'a> {
    pub text: &'a str,
    pub span: Span,
}

/// What kind of literal token a literal was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LitKind {
    Int,
    Hex,
    Float,
    True,
    False,
}

/// A literal as written; its value depends on the type it is given.
#[derive(Clone, Copy, Debug)]
pub struct Lit<'a> {
    pub kind: LitKind,
    pub text: &'a str,
    pub span: Span,
}

/// A top-level form: an item, or a `module @name { ... }` block.
#[derive(Debug)]
pub enum Top<'a> {
    Item(Item<'a>),
    Module(Name<'a>, Vec<Item<'a>>, Span),
}

/// An item.
#[derive(Debug)]
pub enum Item<'a> {
    Field(FieldAst<'a>),
    Func(FuncAst<'a>),
    Kernel(KernelAst<'a>),
    Task(TaskItemAst<'a>),
}

impl Item<'_> {
    pub fn span(&self) -> Span {
        match self {
            Item::Field(x) => x.span,
            Item::Func(x) => x.span,
            Item::Kernel(x) => x.span,
            Item::Task(x) => x.span,
        }
    }
}

#[derive(Debug)]
pub struct FieldAst<'a> {
    pub name: Name<'a>,
    pub elem: Scalar,
    pub shape: Vec<Lit<'a>>,
    pub span: Span,
}

#[derive(Debug)]
pub struct ParamAst<'a> {
    pub name: Name<'a>,
    pub ty: Scalar,
    pub default: Option<Lit<'a>>,
    pub span: Span,
}

#[derive(Debug)]
pub struct FuncAst<'a> {
    pub name: Name<'a>,
    pub params: Vec<ParamAst<'a>>,
    pub ret: Option<Scalar>,
    pub body: Vec<StmtAst<'a>>,
    pub span: Span,
}

#[derive(Debug)]
pub struct KernelAst<'a> {
    pub name: Name<'a>,
    pub params: Vec<ParamAst<'a>>,
    pub body: Vec<StmtAst<'a>>,
    pub span: Span,
}

#[derive(Debug)]
pub struct TaskItemAst<'a> {
    pub name: Name<'a>,
    pub kernel: Name<'a>,
    pub params: Vec<ParamAst<'a>>,
    pub kind: TaskKindAst<'a>,
    pub body: Vec<StmtAst<'a>>,
    pub span: Span,
}

/// `serial`, `range_for RANGE [block_dim N]`, `struct_for %i, %j in @f [block_dim N]`.
#[derive(Debug)]
pub enum TaskKindAst<'a> {
    Serial,
    RangeFor(RangeAst<'a>, Option<Lit<'a>>),
    StructFor(Vec<Name<'a>>, Name<'a>, Option<Lit<'a>>),
}

/// `%i [: TYPE] in LO .. HI`
#[derive(Debug)]
pub struct RangeAst<'a> {
    pub var: Name<'a>,
    pub ty: Option<Scalar>,
    pub lo: BoundAst<'a>,
    pub hi: BoundAst<'a>,
}

/// A loop bound: an integer literal, a value, or a 0-D field `@n[]`.
#[derive(Debug)]
pub enum BoundAst<'a> {
    Lit(Lit<'a>),
    Value(Name<'a>),
    Field(Name<'a>),
}

/// `@x[%i, %j]`
#[derive(Debug)]
pub struct FieldRefAst<'a> {
    pub field: Name<'a>,
    pub indices: Vec<Name<'a>>,
}

/// A statement, with the value it names if written `%r = ...`.
#[derive(Debug)]
pub struct StmtAst<'a> {
    pub result: Option<Name<'a>>,
    pub kind: SKind<'a>,
    pub span: Span,
}

/// What a statement says.
#[derive(Debug)]
pub enum SKind<'a> {
    Const(Lit<'a>, Scalar),
    Binary(BinOp, Name<'a>, Name<'a>),
    Unary(UnOp, Name<'a>),
    Cmp(CmpOp, Name<'a>, Name<'a>),
    Cast(Name<'a>, Scalar),
    Select(Name<'a>, Name<'a>, Name<'a>),
    Load(FieldRefAst<'a>),
    LoadSlot(Name<'a>),
    Store(FieldRefAst<'a>, Name<'a>),
    StoreSlot(Name<'a>, Name<'a>),
    /// The operator as written (`atomic` accepts a subset of `BinOp`).
    Atomic(BinOp, Span, FieldRefAst<'a>, Name<'a>),
    Alloca(Scalar),
    Call(Name<'a>, Vec<Name<'a>>),
    Ret(Option<Name<'a>>),
    If(Name<'a>, Vec<StmtAst<'a>>, Option<Vec<StmtAst<'a>>>),
    For(RangeAst<'a>, Vec<StmtAst<'a>>),
    While(Vec<StmtAst<'a>>),
    Break,
    Continue,
    Task(Name<'a>, TaskKindAst<'a>, Vec<StmtAst<'a>>),
    Launch(Name<'a>),
}
