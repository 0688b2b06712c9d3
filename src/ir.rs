//! The KIR data model: modules, items and bodies of structured statements.
//!
//! Owns: the in-memory form every other part of Kiln reads and writes.
//! Values and statements are typed indices (`Value(u32)`, `Stmt(u32)`,
//! `Block(u32)`) into the arenas of one [`Body`]; numbering follows creation
//! order, so printing never churns. Items (fields, functions, kernels,
//! tasks) refer to each other by [`Name`], resolved by lookups on
//! [`Module`].
//!
//! Must never: print, parse, or check anything. Well-formedness is the
//! verifier's job; this module lets passes build any shape.
//!
//! Spans are carried for diagnostics but are not part of a module's
//! identity: two modules that print the same compare equal (see [`Span`]).

use std::fmt;

/// A byte range in the source text a node came from. Synthesised nodes use
/// [`Span::DUMMY`]. Spans compare equal to each other always, so that
/// `parse(print(m)) == m` holds although the two texts differ in layout.
#[derive(Clone, Copy, Debug, Default, Eq, Hash)]
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

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

impl PartialEq for Span {
    fn eq(&self, _: &Span) -> bool {
        true
    }
}

/// A name (global, without `@`, or local, without `%`). Names of up to 24
/// bytes live inline, so the common case allocates nothing.
pub type Name = compact_str::CompactString;

/// A scalar type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    I1,
    I32,
    I64,
    F32,
    F64,
}

impl Scalar {
    pub const ALL: [Scalar; 5] = [Scalar::I1, Scalar::I32, Scalar::I64, Scalar::F32, Scalar::F64];

    pub fn is_int(self) -> bool {
        matches!(self, Scalar::I1 | Scalar::I32 | Scalar::I64)
    }
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }
    /// Width in bits (1 for `i1`).
    pub fn bits(self) -> u32 {
        match self {
            Scalar::I1 => 1,
            Scalar::I32 | Scalar::F32 => 32,
            Scalar::I64 | Scalar::F64 => 64,
        }
    }
    /// Bytes one element of a field of this type occupies (`i1` is one byte).
    pub fn size_bytes(self) -> usize {
        match self {
            Scalar::I1 => 1,
            Scalar::I32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::F64 => 8,
        }
    }
    pub fn keyword(self) -> &'static str {
        match self {
            Scalar::I1 => "i1",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
        }
    }
    pub fn from_keyword(s: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|t| t.keyword() == s)
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// The type of a value: a scalar, or a mutable local slot made by `alloca`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Scalar(Scalar),
    /// A slot holding one scalar; only `load`/`store` use it.
    Slot(Scalar),
}

impl Type {
    pub fn scalar(self) -> Option<Scalar> {
        match self {
            Type::Scalar(s) => Some(s),
            Type::Slot(_) => None,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Scalar(s) => write!(f, "{s}"),
            Type::Slot(s) => write!(f, "slot<{s}>"),
        }
    }
}

/// A constant of a scalar type, stored as its exact bits so that equality
/// and hashing are bitwise (NaN payloads and `-0.0` included).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Const {
    pub ty: Scalar,
    /// The value's bits, zero-extended: `i1` is 0 or 1, `i32`/`f32` use the
    /// low 32 bits.
    pub bits: u64,
}

impl Const {
    pub fn bool(b: bool) -> Const {
        Const { ty: Scalar::I1, bits: b as u64 }
    }
    pub fn i32(v: i32) -> Const {
        Const { ty: Scalar::I32, bits: v as u32 as u64 }
    }
    pub fn i64(v: i64) -> Const {
        Const { ty: Scalar::I64, bits: v as u64 }
    }
    pub fn f32(v: f32) -> Const {
        Const { ty: Scalar::F32, bits: v.to_bits() as u64 }
    }
    pub fn f64(v: f64) -> Const {
        Const { ty: Scalar::F64, bits: v.to_bits() }
    }
    /// An integer constant of type `ty`, wrapped to its width.
    pub fn int(ty: Scalar, v: i64) -> Const {
        match ty {
            Scalar::I1 => Const::bool(v & 1 != 0),
            Scalar::I32 => Const::i32(v as i32),
            Scalar::I64 => Const::i64(v),
            Scalar::F32 => Const::f32(v as f32),
            Scalar::F64 => Const::f64(v as f64),
        }
    }
    /// The integer value, sign-extended (`i1` gives 0 or 1). None for floats.
    pub fn as_i64(self) -> Option<i64> {
        match self.ty {
            Scalar::I1 => Some(self.bits as i64 & 1),
            Scalar::I32 => Some(self.bits as u32 as i32 as i64),
            Scalar::I64 => Some(self.bits as i64),
            _ => None,
        }
    }
    /// The float value, widened to f64. None for integers.
    pub fn as_f64(self) -> Option<f64> {
        match self.ty {
            Scalar::F32 => Some(f32::from_bits(self.bits as u32) as f64),
            Scalar::F64 => Some(f64::from_bits(self.bits)),
            _ => None,
        }
    }
}

/// A local value: an index into [`Body::values`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub u32);

/// A statement: an index into [`Body::stmts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Stmt(pub u32);

/// A block (a sequence of statements): an index into [`Body::blocks`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Block(pub u32);

impl Value {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
impl Stmt {
    /// The statement a top-level task item's header binds its loop
    /// variables by (`ValueDef::LoopVar(Stmt::HEADER, n)`): a [`TaskItem`]
    /// header is not a statement of its body, so it has no index of its own.
    pub const HEADER: Stmt = Stmt(u32::MAX);

    pub fn index(self) -> usize {
        self.0 as usize
    }
}
impl Block {
    pub fn index(self) -> usize {
        self.0 as usize
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

/// Binary operators; both operands and the result have one type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Min,
    Max,
    And,
    Or,
    Xor,
    Shl,
    /// Arithmetic (sign-filling) right shift.
    Shr,
    /// Logical (zero-filling) right shift.
    Ushr,
    Pow,
    Atan2,
}

impl BinOp {
    pub const ALL: [BinOp; 15] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::Min,
        BinOp::Max,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shl,
        BinOp::Shr,
        BinOp::Ushr,
        BinOp::Pow,
        BinOp::Atan2,
    ];
    pub fn keyword(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::Rem => "rem",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::Shl => "shl",
            BinOp::Shr => "shr",
            BinOp::Ushr => "ushr",
            BinOp::Pow => "pow",
            BinOp::Atan2 => "atan2",
        }
    }
    pub fn from_keyword(s: &str) -> Option<BinOp> {
        BinOp::ALL.into_iter().find(|o| o.keyword() == s)
    }
    /// Whether the operator accepts operands of type `ty`.
    pub fn accepts(self, ty: Scalar) -> bool {
        match self {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem | BinOp::Min | BinOp::Max => {
                ty != Scalar::I1
            }
            BinOp::And | BinOp::Or | BinOp::Xor => ty.is_int(),
            BinOp::Shl | BinOp::Shr | BinOp::Ushr => ty.is_int() && ty != Scalar::I1,
            BinOp::Pow | BinOp::Atan2 => ty.is_float(),
        }
    }
    /// Whether `a op b` and `b op a` give the same bits for operands of
    /// type `ty`: the symmetric integer operators. Float operators never
    /// do here (which NaN an operation returns depends on operand order).
    pub fn commutes_on(self, ty: Scalar) -> bool {
        ty.is_int()
            && matches!(self, BinOp::Add | BinOp::Mul | BinOp::Min | BinOp::Max | BinOp::And | BinOp::Or | BinOp::Xor)
    }
    /// The C library function computing it, for the operators whose
    /// results are libm's and so not fixed bit for bit by the language.
    pub fn libm(self) -> Option<&'static str> {
        match self {
            BinOp::Pow => Some("pow"),
            BinOp::Atan2 => Some("atan2"),
            _ => None,
        }
    }
}

/// Unary operators; the operand and the result have one type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Not,
    Abs,
    Sqrt,
    Sin,
    Cos,
    Tan,
    Exp,
    Log,
    Floor,
    Ceil,
    Round,
}

impl UnOp {
    pub const ALL: [UnOp; 12] = [
        UnOp::Neg,
        UnOp::Not,
        UnOp::Abs,
        UnOp::Sqrt,
        UnOp::Sin,
        UnOp::Cos,
        UnOp::Tan,
        UnOp::Exp,
        UnOp::Log,
        UnOp::Floor,
        UnOp::Ceil,
        UnOp::Round,
    ];
    pub fn keyword(self) -> &'static str {
        match self {
            UnOp::Neg => "neg",
            UnOp::Not => "not",
            UnOp::Abs => "abs",
            UnOp::Sqrt => "sqrt",
            UnOp::Sin => "sin",
            UnOp::Cos => "cos",
            UnOp::Tan => "tan",
            UnOp::Exp => "exp",
            UnOp::Log => "log",
            UnOp::Floor => "floor",
            UnOp::Ceil => "ceil",
            UnOp::Round => "round",
        }
    }
    pub fn from_keyword(s: &str) -> Option<UnOp> {
        UnOp::ALL.into_iter().find(|o| o.keyword() == s)
    }
    /// Whether the operator accepts an operand of type `ty`.
    pub fn accepts(self, ty: Scalar) -> bool {
        match self {
            UnOp::Neg | UnOp::Abs => ty != Scalar::I1,
            UnOp::Not => ty.is_int(),
            _ => ty.is_float(),
        }
    }
    /// The C library function computing it (see [`BinOp::libm`]).
    pub fn libm(self) -> Option<&'static str> {
        match self {
            UnOp::Sin => Some("sin"),
            UnOp::Cos => Some("cos"),
            UnOp::Tan => Some("tan"),
            UnOp::Exp => Some("exp"),
            UnOp::Log => Some("log"),
            _ => None,
        }
    }
}

/// Comparison predicates (signed for integers, ordered for floats except
/// `ne`, which is true when either operand is NaN).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CmpOp {
    pub const ALL: [CmpOp; 6] = [CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge, CmpOp::Eq, CmpOp::Ne];
    pub fn keyword(self) -> &'static str {
        match self {
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
        }
    }
    pub fn from_keyword(s: &str) -> Option<CmpOp> {
        CmpOp::ALL.into_iter().find(|o| o.keyword() == s)
    }
    /// Whether swapping the operands gives the same result for operands of
    /// type `ty` (`eq` and `ne` on integers; see [`BinOp::commutes_on`]).
    pub fn commutes_on(self, ty: Scalar) -> bool {
        ty.is_int() && matches!(self, CmpOp::Eq | CmpOp::Ne)
    }
}

/// Read-modify-write operators of `atomic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

impl AtomicOp {
    pub const ALL: [AtomicOp; 6] =
        [AtomicOp::Add, AtomicOp::Min, AtomicOp::Max, AtomicOp::And, AtomicOp::Or, AtomicOp::Xor];
    pub fn keyword(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Min => "min",
            AtomicOp::Max => "max",
            AtomicOp::And => "and",
            AtomicOp::Or => "or",
            AtomicOp::Xor => "xor",
        }
    }
    pub fn from_keyword(s: &str) -> Option<AtomicOp> {
        AtomicOp::ALL.into_iter().find(|o| o.keyword() == s)
    }
    /// Whether the operator accepts a field of element type `ty`.
    pub fn accepts(self, ty: Scalar) -> bool {
        match self {
            AtomicOp::Add | AtomicOp::Min | AtomicOp::Max => ty != Scalar::I1,
            AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => ty.is_int() && ty != Scalar::I1,
        }
    }
    /// The binary operator computing the new value from the old.
    pub fn as_binop(self) -> BinOp {
        match self {
            AtomicOp::Add => BinOp::Add,
            AtomicOp::Min => BinOp::Min,
            AtomicOp::Max => BinOp::Max,
            AtomicOp::And => BinOp::And,
            AtomicOp::Or => BinOp::Or,
            AtomicOp::Xor => BinOp::Xor,
        }
    }
}

/// A reference to a field element: `@x[%i, %j]` (`@t[]` for a 0-D field).
#[derive(Clone, Debug, PartialEq)]
pub struct FieldRef {
    pub field: Name,
    pub indices: Vec<Value>,
    /// The span of `@x` (for "unknown field" and rank errors).
    pub span: Span,
}

/// A loop bound or a task's range bound.
#[derive(Clone, Debug, PartialEq)]
pub enum Bound {
    /// An integer literal; its type is the other bound's, or `i32`.
    Const(i64),
    /// A value in scope (in a task header: a parameter).
    Value(Value),
    /// A 0-D integer field read when the task is launched: `@n[]`. Only in
    /// task headers (offload uses it to carry a bound computed in a serial
    /// task).
    Field(Name, Span),
}

/// How a task runs.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskKind {
    /// Runs once, on one thread.
    Serial,
    /// `range_for %i in LO .. HI block_dim N`: iterations may run in
    /// parallel in any order, in chunks of `block_dim`.
    RangeFor { var: Value, lo: Bound, hi: Bound, block_dim: u32 },
    /// `struct_for %i, %j in @f block_dim N`: one iteration per element of
    /// the field's index space (row-major), in parallel.
    StructFor { vars: Vec<Value>, field: Name, field_span: Span, block_dim: u32 },
}

impl TaskKind {
    pub fn keyword(&self) -> &'static str {
        match self {
            TaskKind::Serial => "serial",
            TaskKind::RangeFor { .. } => "range_for",
            TaskKind::StructFor { .. } => "struct_for",
        }
    }
}

/// The block size a parallel task gets when the text names none.
pub const DEFAULT_BLOCK_DIM: u32 = 128;

/// What a statement does.
#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `%c = const 3 : i32`
    Const(Const),
    /// `%r = add %a, %b`
    Binary(BinOp, Value, Value),
    /// `%r = neg %a`
    Unary(UnOp, Value),
    /// `%r = cmp lt %a, %b` (result `i1`)
    Cmp(CmpOp, Value, Value),
    /// `%r = cast %a to f32`
    Cast(Value, Scalar),
    /// `%r = select %c, %a, %b`
    Select(Value, Value, Value),
    /// `%v = load @x[%i]`
    Load(FieldRef),
    /// `store @x[%i], %v`
    Store(FieldRef, Value),
    /// `%old = atomic add @x[%i], %v`
    Atomic(AtomicOp, FieldRef, Value),
    /// `%p = alloca f32` (a zero-initialised slot)
    Alloca(Scalar),
    /// `%v = load %p`
    LoadSlot(Value),
    /// `store %p, %v`
    StoreSlot(Value, Value),
    /// `%r = call @f(%a, %b)` or `call @g(%a)` for a function without result
    Call(Name, Vec<Value>, Span),
    /// `ret` or `ret %v`
    Ret(Option<Value>),
    /// `if %c { ... } else { ... }`; the else block may be empty.
    If { cond: Value, then_blk: Block, else_blk: Option<Block> },
    /// `for %i in LO .. HI { ... }`: half-open, step 1; `var` (defined as
    /// `ValueDef::LoopVar(this, 0)`) is visible in the body only.
    /// `serial` (`for %i in LO .. HI serial { ... }`): the iterations must
    /// run in order, so `offload` keeps the loop in a serial task.
    For { var: Value, lo: Bound, hi: Bound, body: Block, serial: bool },
    /// `while { ... }`: loops until `break`.
    While { body: Block },
    Break,
    Continue,
    /// `task @name KIND { ... }`: only at the top level of a kernel, after
    /// `offload`.
    Task { name: Name, kind: TaskKind, body: Block },
    /// `launch @task`: only in a kernel of a split stream; runs the
    /// top-level task item of that name from the stream with the kernel's
    /// parameters.
    Launch(Name),
}

/// A statement's data.
#[derive(Clone, Debug, PartialEq)]
pub struct StmtData {
    pub kind: StmtKind,
    /// The value it defines, if any (`%r = ...`).
    pub result: Option<Value>,
    pub span: Span,
}

/// The values and statements of one function, kernel or task.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Body {
    pub values: Vec<ValueData>,
    pub stmts: Vec<StmtData>,
    /// Each block is the ordered list of its statements.
    pub blocks: Vec<Vec<Stmt>>,
    /// The parameter values, in order.
    pub params: Vec<Value>,
    /// The outermost block.
    pub entry: Block,
}

impl Body {
    /// An empty body with an empty entry block.
    pub fn new() -> Body {
        Body { blocks: vec![Vec::new()], entry: Block(0), ..Default::default() }
    }

    pub fn value(&self, v: Value) -> &ValueData {
        &self.values[v.index()]
    }
    pub fn stmt(&self, s: Stmt) -> &StmtData {
        &self.stmts[s.index()]
    }
    pub fn block(&self, b: Block) -> &[Stmt] {
        &self.blocks[b.index()]
    }
    pub fn ty(&self, v: Value) -> Type {
        self.values[v.index()].ty
    }
    pub fn name(&self, v: Value) -> &str {
        &self.values[v.index()].name
    }

    pub fn new_value(&mut self, name: impl Into<Name>, ty: Type, def: ValueDef, span: Span) -> Value {
        let v = Value(self.values.len() as u32);
        self.values.push(ValueData { name: name.into(), ty, def, span });
        v
    }
    /// Adds a parameter value.
    pub fn add_param(&mut self, name: impl Into<Name>, ty: Scalar, span: Span) -> Value {
        let idx = self.params.len() as u32;
        let v = self.new_value(name, Type::Scalar(ty), ValueDef::Param(idx), span);
        self.params.push(v);
        v
    }
    pub fn new_block(&mut self) -> Block {
        let b = Block(self.blocks.len() as u32);
        self.blocks.push(Vec::new());
        b
    }
    /// Creates a statement without placing it in a block.
    pub fn new_stmt(&mut self, kind: StmtKind, span: Span) -> Stmt {
        let s = Stmt(self.stmts.len() as u32);
        self.stmts.push(StmtData { kind, result: None, span });
        s
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
        self.stmts[s.index()].result = Some(v);
        (s, v)
    }
    /// Appends a statement to a block.
    pub fn push(&mut self, b: Block, s: Stmt) {
        self.blocks[b.index()].push(s);
    }

    /// The blocks nested directly in a statement, in print order.
    pub fn child_blocks(&self, s: Stmt) -> Vec<Block> {
        match &self.stmt(s).kind {
            StmtKind::If { then_blk, else_blk, .. } => {
                let mut v = vec![*then_blk];
                v.extend(*else_blk);
                v
            }
            StmtKind::For { body, .. } | StmtKind::While { body } | StmtKind::Task { body, .. } => vec![*body],
            _ => Vec::new(),
        }
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

    /// The values a statement reads (operands, indices and bounds), in
    /// print order; nested blocks are not included.
    pub fn operands(&self, s: Stmt) -> Vec<Value> {
        let mut out = Vec::new();
        let bound = |b: &Bound, out: &mut Vec<Value>| {
            if let Bound::Value(v) = b {
                out.push(*v)
            }
        };
        match &self.stmt(s).kind {
            StmtKind::Const(_) | StmtKind::Alloca(_) | StmtKind::Break | StmtKind::Continue | StmtKind::Launch(_) => {}
            StmtKind::Binary(_, a, b) | StmtKind::Cmp(_, a, b) | StmtKind::StoreSlot(a, b) => {
                out.extend([*a, *b])
            }
            StmtKind::Unary(_, a) | StmtKind::Cast(a, _) | StmtKind::LoadSlot(a) => out.push(*a),
            StmtKind::Select(c, a, b) => out.extend([*c, *a, *b]),
            StmtKind::Load(r) => out.extend(&r.indices),
            StmtKind::Store(r, v) | StmtKind::Atomic(_, r, v) => {
                out.extend(&r.indices);
                out.push(*v)
            }
            StmtKind::Call(_, args, _) => out.extend(args),
            StmtKind::Ret(v) => out.extend(*v),
            StmtKind::If { cond, .. } => out.push(*cond),
            StmtKind::For { lo, hi, .. } => {
                bound(lo, &mut out);
                bound(hi, &mut out)
            }
            StmtKind::While { .. } => {}
            StmtKind::Task { kind, .. } => {
                if let TaskKind::RangeFor { lo, hi, .. } = kind {
                    bound(lo, &mut out);
                    bound(hi, &mut out)
                }
            }
        }
        out
    }
}

/// Calls `f` on every value a statement reads (operands, field indices and
/// loop or task bounds), allowing it to be replaced. Nested blocks are not
/// visited.
pub fn operands_mut(kind: &mut StmtKind, f: &mut dyn FnMut(&mut Value)) {
    fn bound(b: &mut Bound, f: &mut dyn FnMut(&mut Value)) {
        if let Bound::Value(v) = b {
            f(v)
        }
    }
    match kind {
        StmtKind::Const(_) | StmtKind::Alloca(_) | StmtKind::Break | StmtKind::Continue | StmtKind::Launch(_) => {}
        StmtKind::Binary(_, a, b) | StmtKind::Cmp(_, a, b) | StmtKind::StoreSlot(a, b) => {
            f(a);
            f(b)
        }
        StmtKind::Unary(_, a) | StmtKind::Cast(a, _) | StmtKind::LoadSlot(a) => f(a),
        StmtKind::Select(c, a, b) => {
            f(c);
            f(a);
            f(b)
        }
        StmtKind::Load(r) => r.indices.iter_mut().for_each(&mut *f),
        StmtKind::Store(r, v) | StmtKind::Atomic(_, r, v) => {
            r.indices.iter_mut().for_each(&mut *f);
            f(v)
        }
        StmtKind::Call(_, args, _) => args.iter_mut().for_each(&mut *f),
        StmtKind::Ret(v) => {
            if let Some(v) = v {
                f(v)
            }
        }
        StmtKind::If { cond, .. } => f(cond),
        StmtKind::For { lo, hi, .. } => {
            bound(lo, f);
            bound(hi, f)
        }
        StmtKind::While { .. } => {}
        StmtKind::Task { kind, .. } => {
            if let TaskKind::RangeFor { lo, hi, .. } = kind {
                bound(lo, f);
                bound(hi, f)
            }
        }
    }
}

/// `field @x : f32[1024]`: a dense, zero-initialised array (rank 0 to 8).
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

/// A top-level item.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Field(Field),
    Func(Func),
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
        self.items.iter().filter_map(|i| if let Item::Func(f) = i { Some(f) } else { None })
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
    /// Finds a top-level task item by name in any module of the stream.
    pub fn find_task(&self, name: &str) -> Option<(&Module, &TaskItem)> {
        self.modules.iter().find_map(|m| m.task(name).map(|t| (m, t)))
    }
}
