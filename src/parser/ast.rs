//! The syntax tree the grammar builds: what the text says, with spans,
//! before names are resolved and types inferred.
//!
//! Owns: a short-lived picture of one top-level chunk. Names and literals
//! are only spans into the input (8 bytes each, no allocation per token):
//! the LR parser moves its symbols around a lot, so small nodes are fast
//! nodes. Lowering to the IR reads their text from the input and consumes
//! the tree right away.
//!
//! Must never: interpret literals or resolve names (that is lowering).

use crate::ir::{BinOp, CmpOp, Scalar, Span, UnOp};

/// A name token (`%x`, `@f`): its span, sigil included.
#[derive(Clone, Copy, Debug)]
pub struct Sym {
    pub span: Span,
}

impl Sym {
    /// The name's text, without its sigil.
    pub fn text(self, src: &str) -> &str {
        src.get(self.span.start as usize + 1..self.span.end as usize).unwrap_or("")
    }
}

/// A literal token: its kind and span.
#[derive(Clone, Copy, Debug)]
pub struct LitTok {
    pub kind: LitKind,
    pub span: Span,
}

impl LitTok {
    /// The literal with its text.
    pub fn with_text(self, src: &str) -> Lit<'_> {
        Lit { kind: self.kind, text: src.get(self.span.range()).unwrap_or(""), span: self.span }
    }
}

/// A name with its text (without the sigil), as lowering uses it.
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

/// A literal with its text; its value depends on the type it is given.
#[derive(Clone, Copy, Debug)]
pub struct Lit<'a> {
    pub kind: LitKind,
    pub text: &'a str,
    pub span: Span,
}

/// A top-level form: an item, or a `module @name { ... }` block.
#[derive(Debug)]
pub enum Top {
    Item(Item),
    Module(Sym, Vec<Item>, Span),
}

/// An item.
#[derive(Debug)]
pub enum Item {
    Field(FieldAst),
    Func(FuncAst),
    Kernel(KernelAst),
    Task(TaskItemAst),
}

impl Item {
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
pub struct FieldAst {
    pub name: Sym,
    pub elem: Scalar,
    pub shape: Vec<LitTok>,
    pub span: Span,
}

#[derive(Debug)]
pub struct ParamAst {
    pub name: Sym,
    pub ty: Scalar,
    pub default: Option<LitTok>,
    pub span: Span,
}

#[derive(Debug)]
pub struct FuncAst {
    pub name: Sym,
    pub params: Vec<ParamAst>,
    pub ret: Option<Scalar>,
    pub body: Vec<StmtAst>,
    pub span: Span,
}

#[derive(Debug)]
pub struct KernelAst {
    pub name: Sym,
    pub params: Vec<ParamAst>,
    pub body: Vec<StmtAst>,
    pub span: Span,
}

#[derive(Debug)]
pub struct TaskItemAst {
    pub name: Sym,
    pub kernel: Sym,
    pub params: Vec<ParamAst>,
    pub kind: Box<TaskKindAst>,
    pub body: Vec<StmtAst>,
    pub span: Span,
}

/// `serial`, `range_for RANGE [block_dim N]`, `struct_for %i, %j in @f [block_dim N]`.
#[derive(Debug)]
pub enum TaskKindAst {
    Serial,
    RangeFor(Box<RangeAst>, Option<LitTok>),
    StructFor(Vec<Sym>, Sym, Option<LitTok>),
}

/// `%i [: TYPE] in LO .. HI`
#[derive(Debug)]
pub struct RangeAst {
    pub var: Sym,
    pub ty: Option<Scalar>,
    pub lo: BoundAst,
    pub hi: BoundAst,
}

/// A loop bound: an integer literal, a value, or a 0-D field `@n[]`.
#[derive(Debug)]
pub enum BoundAst {
    Lit(LitTok),
    Value(Sym),
    Field(Sym),
}

/// `@x[%i, %j]`
#[derive(Debug)]
pub struct FieldRefAst {
    pub field: Sym,
    pub indices: Vec<Sym>,
}

/// A statement, with the value it names if written `%r = ...`.
#[derive(Debug)]
pub struct StmtAst {
    pub result: Option<Sym>,
    pub kind: SKind,
    pub span: Span,
    pub loc: Option<LocAst>,
}

/// `loc("file":LINE:COL)`: the file is the string literal's span, quotes
/// included, its escapes not yet decoded.
#[derive(Debug)]
pub struct LocAst {
    pub file: Span,
    pub line: LitTok,
    pub col: LitTok,
    pub span: Span,
}

/// What a statement says.
#[derive(Debug)]
pub enum SKind {
    Const(LitTok, Scalar),
    Binary(BinOp, Sym, Sym),
    Unary(UnOp, Sym),
    Cmp(CmpOp, Sym, Sym),
    Cast(Sym, Scalar),
    BitCast(Sym, Scalar),
    Select(Sym, Sym, Sym),
    Load(FieldRefAst),
    LoadSlot(Sym),
    Store(FieldRefAst, Sym),
    StoreSlot(Sym, Sym),
    /// The operator as written (`atomic` accepts a subset of `BinOp`).
    Atomic(BinOp, Span, FieldRefAst, Sym),
    Alloca(Scalar),
    /// The type and the `site` literal, if written.
    Random(Scalar, Option<LitTok>),
    Call(Sym, Vec<Sym>),
    Ret(Option<Sym>),
    If(Sym, Vec<StmtAst>, Option<Vec<StmtAst>>),
    /// The range, whether it says `serial`, the body.
    For(Box<RangeAst>, bool, Vec<StmtAst>),
    While(Vec<StmtAst>),
    Break,
    Continue,
    Task(Sym, Box<TaskKindAst>, Vec<StmtAst>),
    Launch(Sym),
    /// The condition, the message's span (quotes included), the values.
    Assert(Sym, Span, Vec<Sym>),
    /// A `print`'s pieces.
    Print(Vec<PieceAst>),
}

/// A piece of a `print`: a string's span (quotes included), or a value.
#[derive(Clone, Debug)]
pub enum PieceAst {
    Str(Span),
    Value(Sym),
}
