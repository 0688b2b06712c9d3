//! Statements, and the one table of what each kind of statement is.
//!
//! Owns: [`StmtKind`] and its parts ([`FieldRef`], [`Bound`],
//! [`TaskKind`]), and [`stmt_table!`], the single place that says, for
//! every kind, which values it reads (operands, indices, bounds), which
//! blocks it holds, which variables it binds for them, which fields it
//! touches, and its [`Class`] (pure, terminator, whether it defines a
//! value). The operand walkers (shared and mutable), the child
//! blocks, the bound variables, purity and terminator-ness are all
//! instances of that table, so adding an operand to a kind is one edit.
//!
//! Must never: describe statement shape anywhere else: parser, verifier,
//! passes and the key ask these methods.

use super::entities::{Block, Value};
use super::ops::{AtomicOp, BinOp, CmpOp, UnOp};
use super::span::Span;
use super::types::{Const, Scalar};
use super::Name;

/// A reference to a field element: `@x[%i, %j]` (`@t[]` for a 0-D field).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldRef {
    pub field: Name,
    pub indices: Vec<Value>,
    /// The span of `@x` (for "unknown field" and rank errors).
    pub span: Span,
}

/// A loop bound or a task's range bound.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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

    /// The variables a task header binds, in order (`ValueDef::LoopVar(_, n)`
    /// is the n-th).
    pub fn vars(&self) -> &[Value] {
        match self {
            TaskKind::Serial => &[],
            TaskKind::RangeFor { var, .. } => std::slice::from_ref(var),
            TaskKind::StructFor { vars, .. } => vars,
        }
    }
}

/// The block size a parallel task gets when the text names none.
pub const DEFAULT_BLOCK_DIM: u32 = 128;

/// What a statement does.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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
    /// `%r = bitcast %a to i32`: the same bits read as a scalar type of the
    /// same width
    BitCast(Value, Scalar),
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
    /// `%r = random f32` (`site N` when the number is not the statement's
    /// ordinal among its item's `random` statements): a number of the
    /// counter-based stream of `crate::random`, drawn where it runs.
    Random {
        ty: Scalar,
        site: u32,
    },
    /// `%v = load %p`
    LoadSlot(Value),
    /// `store %p, %v`
    StoreSlot(Value, Value),
    /// `%r = call @f(%a, %b)` or `call @g(%a)` for a function without result
    Call(Name, Vec<Value>, Span),
    /// `ret` or `ret %v`
    Ret(Option<Value>),
    /// `if %c { ... } else { ... }`; the else block may be empty.
    If {
        cond: Value,
        then_blk: Block,
        else_blk: Option<Block>,
    },
    /// `for %i in LO .. HI { ... }`: half-open, step 1; `var` (defined as
    /// `ValueDef::LoopVar(this, 0)`) is visible in the body only.
    /// `serial` (`for %i in LO .. HI serial { ... }`): the iterations must
    /// run in order, so `offload` keeps the loop in a serial task.
    For {
        var: Value,
        lo: Bound,
        hi: Bound,
        body: Block,
        serial: bool,
    },
    /// `while { ... }`: loops until `break`.
    While {
        body: Block,
    },
    Break,
    Continue,
    /// `task @name KIND { ... }`: only at the top level of a kernel, after
    /// `offload`.
    Task {
        name: Name,
        kind: TaskKind,
        body: Block,
    },
    /// `launch @task`: only in a kernel of a split stream; runs the
    /// top-level task item of that name from the stream with the kernel's
    /// parameters.
    Launch(Name),
    /// `assert %c, "message", %a, %b`: when `%c` (an `i1`) is false, the
    /// launch fails with the message, its `%` conversions filled from the
    /// values in order (at most `MAX_RANK` of them: they travel in the
    /// error slot's index array).
    Assert {
        cond: Value,
        message: String,
        args: Vec<Value>,
    },
    /// `print "x = ", %x, "\0A"`: appends the text of its pieces, in
    /// order, to the launch's output (`docs/runtime.md`, "Printing"):
    /// strings as they are, values formatted as Quadrants prints them
    /// (`crate::exec::print_text`). At most [`MAX_PRINT_VALUES`] values.
    Print {
        pieces: Vec<PrintPiece>,
    },
}

/// The most values one `print` may hold (the JIT passes them in an array
/// on the stack).
pub const MAX_PRINT_VALUES: usize = 32;

/// One piece of a `print`: a string or a scalar value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PrintPiece {
    Str(String),
    Value(Value),
}

impl StmtKind {
    /// A `print`'s values, in order (empty for any other statement).
    pub fn print_values(&self) -> Vec<Value> {
        match self {
            StmtKind::Print { pieces } => pieces
                .iter()
                .filter_map(|p| match p {
                    PrintPiece::Value(v) => Some(*v),
                    PrintPiece::Str(_) => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// A statement's data.
#[derive(Clone, Debug, PartialEq)]
pub struct StmtData {
    pub kind: StmtKind,
    /// The value it defines, if any (`%r = ...`).
    pub result: Option<Value>,
    pub span: Span,
    /// Where it came from in the program the KIR was made from
    /// (`loc(...)`), if it says.
    pub loc: Option<Box<super::Loc>>,
}

/// What a kind of statement is, beyond its parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Class {
    /// It only computes its result from its operands: no memory, no
    /// control flow, no effect, and it cannot fail.
    pub pure: bool,
    /// It ends its block: nothing after it runs.
    pub terminator: bool,
    /// Whether it defines a value (`%r = ...`).
    pub defines: Defines,
}

const fn class(pure: bool, terminator: bool, defines: Defines) -> Class {
    Class { pure, terminator, defines }
}
const PURE: Class = class(true, false, Defines::Always);
/// An effect (memory, control flow) that defines a value: `load`, `alloca`.
const READS: Class = class(false, false, Defines::Always);
const EFFECT: Class = class(false, false, Defines::Never);
const ATOMIC: Class = class(false, false, Defines::Optional);
const CALL: Class = class(false, false, Defines::IfCalleeReturns);
const TERMINATOR: Class = class(false, true, Defines::Never);

/// A loop or task bound's part in the table: the value it reads, or the
/// field (`@n[]`).
macro_rules! bound_parts {
    ($b:expr, $op:ident, $field:ident) => {
        match $b {
            Bound::Value(v) => $op(v),
            Bound::Field(f, _) => $field(f),
            Bound::Const(_) => {}
        }
    };
}

/// A task header's parts (of a `task` statement, or of a split stream's
/// task item): the bounds it reads, the field it iterates, the variables
/// it binds, in print order.
macro_rules! task_header_parts {
    ($k:expr, $op:ident, $bind:ident, $field:ident, $iter:ident) => {
        match $k {
            TaskKind::Serial => {}
            TaskKind::RangeFor { var, lo, hi, .. } => {
                for b in [lo, hi] {
                    bound_parts!(b, $op, $field)
                }
                $bind(var);
            }
            TaskKind::StructFor { vars, field, .. } => {
                $field(field);
                vars.$iter().for_each(&mut $bind)
            }
        }
    };
}

/// The table of statement kinds: for each kind, the values it reads
/// (`$op`, in print order), the blocks it holds (`$blk`, in print order),
/// the variables it binds for them (`$bind`, in binding order), the fields
/// it touches (`$field`: accesses, and the fields a loop or task header
/// reads), and its [`Class`] (with whether it defines a value). `$iter` is
/// `iter` or `iter_mut`: the same table makes the shared and the mutable
/// walkers. A new kind fails to compile here until its row is written.
macro_rules! stmt_table {
    ($kind:expr, op: $op:ident, blk: $blk:ident, bind: $bind:ident, $iter:ident) => {
        stmt_table!($kind, op: $op, blk: $blk, bind: $bind, field: ignore_field, $iter)
    };
    ($kind:expr, op: $op:ident, blk: $blk:ident, bind: $bind:ident, field: $field:ident, $iter:ident) => {
        match $kind {
            StmtKind::Const(_) => PURE,
            StmtKind::Binary(_, a, b) | StmtKind::Cmp(_, a, b) => {
                $op(a);
                $op(b);
                PURE
            }
            StmtKind::Unary(_, a) | StmtKind::Cast(a, _) | StmtKind::BitCast(a, _) => {
                $op(a);
                PURE
            }
            StmtKind::Select(c, a, b) => {
                $op(c);
                $op(a);
                $op(b);
                PURE
            }
            StmtKind::Load(r) => {
                $field(&r.field);
                r.indices.$iter().for_each(&mut $op);
                READS
            }
            StmtKind::Store(r, v) => {
                $field(&r.field);
                r.indices.$iter().for_each(&mut $op);
                $op(v);
                EFFECT
            }
            StmtKind::Atomic(_, r, v) => {
                $field(&r.field);
                r.indices.$iter().for_each(&mut $op);
                $op(v);
                ATOMIC
            }
            StmtKind::Alloca(_) | StmtKind::Random { .. } => READS,
            StmtKind::Launch(_) => EFFECT,
            StmtKind::LoadSlot(p) => {
                $op(p);
                READS
            }
            StmtKind::StoreSlot(p, v) => {
                $op(p);
                $op(v);
                EFFECT
            }
            StmtKind::Call(_, args, _) => {
                args.$iter().for_each(&mut $op);
                CALL
            }
            StmtKind::Ret(v) => {
                v.$iter().for_each(&mut $op);
                TERMINATOR
            }
            StmtKind::Break | StmtKind::Continue => TERMINATOR,
            StmtKind::Assert { cond, args, .. } => {
                $op(cond);
                args.$iter().for_each(&mut $op);
                EFFECT
            }
            StmtKind::Print { pieces } => {
                for p in pieces.$iter() {
                    if let PrintPiece::Value(v) = p {
                        $op(v);
                    }
                }
                EFFECT
            }
            StmtKind::If { cond, then_blk, else_blk } => {
                $op(cond);
                $blk(then_blk);
                else_blk.$iter().for_each(&mut $blk);
                EFFECT
            }
            StmtKind::For { var, lo, hi, body, .. } => {
                for b in [lo, hi] {
                    bound_parts!(b, $op, $field)
                }
                $bind(var);
                $blk(body);
                EFFECT
            }
            StmtKind::While { body } => {
                $blk(body);
                EFFECT
            }
            StmtKind::Task { kind, body, .. } => {
                task_header_parts!(kind, $op, $bind, $field, $iter);
                $blk(body);
                EFFECT
            }
        }
    };
}

impl TaskKind {
    /// The statement table's task-header row, with a callback for each
    /// value it reads (bounds, in print order) and each variable it binds
    /// (in binding order), either of which may replace it.
    pub fn visit_mut(&mut self, mut op: impl FnMut(&mut Value), mut bind: impl FnMut(&mut Value)) {
        task_header_parts!(self, op, bind, ignore_field, iter_mut)
    }
}

/// Whether a kind of statement defines a value (`%r = ...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Defines {
    Always,
    /// `atomic`: the old value may be named or dropped.
    Optional,
    /// `call`: when the callee returns a value (which may be dropped).
    IfCalleeReturns,
    Never,
}

/// The blocks nested directly in a statement (at most two), in print order.
pub type ChildBlocks = std::iter::Flatten<std::array::IntoIter<Option<Block>, 2>>;

impl StmtKind {
    /// Its row of the table, with a callback for each part.
    pub fn visit<'a>(
        &'a self,
        mut op: impl FnMut(&'a Value),
        mut blk: impl FnMut(&'a Block),
        mut bind: impl FnMut(&'a Value),
    ) -> Class {
        stmt_table!(self, op: op, blk: blk, bind: bind, iter)
    }

    /// Its row of the table, with a callback for each part that may
    /// replace it.
    pub fn visit_mut(
        &mut self,
        mut op: impl FnMut(&mut Value),
        mut blk: impl FnMut(&mut Block),
        mut bind: impl FnMut(&mut Value),
    ) -> Class {
        stmt_table!(self, op: op, blk: blk, bind: bind, iter_mut)
    }

    /// Whether it defines a value; [`super::result_type`] gives its type.
    pub fn defines(&self) -> Defines {
        self.class().defines
    }

    /// Its class: pure, terminator.
    pub fn class(&self) -> Class {
        self.visit(|_| {}, |_| {}, |_| {})
    }

    /// Whether it only computes its result from its operands (no memory,
    /// no control flow, no effect, cannot fail).
    pub fn is_pure(&self) -> bool {
        self.class().pure
    }

    /// Whether it may end its block: nothing after it runs.
    pub fn is_terminator(&self) -> bool {
        self.class().terminator
    }

    /// Calls `f` on every value it reads (operands, field indices and loop
    /// or task bounds), in print order; nested blocks are not visited.
    pub fn for_each_operand(&self, mut f: impl FnMut(Value)) {
        self.visit(|v| f(*v), |_| {}, |_| {});
    }

    /// Calls `f` on every value it reads, allowing it to be replaced.
    pub fn operands_mut(&mut self, f: impl FnMut(&mut Value)) {
        self.visit_mut(f, |_| {}, |_| {});
    }

    /// Calls `f` on every value it mentions but its result: what it reads
    /// and the variables it binds (for renumbering and range checks).
    pub fn values_mut(&mut self, mut f: impl FnMut(&mut Value)) {
        stmt_table!(self, op: f, blk: ignore_mut, bind: f, iter_mut);
    }

    /// Calls `f` on every value it mentions but its result: what it reads
    /// and the variables it binds (for range checks).
    pub fn for_each_value(&self, mut f: impl FnMut(Value)) {
        let mut g = |v: &Value| f(*v);
        stmt_table!(self, op: g, blk: ignore, bind: g, iter);
    }

    /// Calls `f` on every variable it binds for its blocks (a `for`'s
    /// variable, a task header's), in binding order.
    pub fn for_each_bound_var(&self, mut f: impl FnMut(Value)) {
        self.visit(|_| {}, |_| {}, |v| f(*v));
    }

    /// Calls `f` on every field it touches: the field of an access, and
    /// a field a loop or task header reads (`@n[]` bounds, a `struct_for`'s
    /// field); called functions' fields are not included.
    pub fn for_each_field<'a>(&'a self, mut f: impl FnMut(&'a Name)) {
        stmt_table!(self, op: ignore_value, blk: ignore, bind: ignore_value, field: f, iter);
    }

    /// The field element it accesses, if it is an access (`load`,
    /// `store`, `atomic`): the statements that may fail a bounds check.
    pub fn access(&self) -> Option<&FieldRef> {
        match self {
            StmtKind::Load(r) | StmtKind::Store(r, _) | StmtKind::Atomic(_, r, _) => Some(r),
            _ => None,
        }
    }

    /// The blocks nested directly in it, in print order, without
    /// allocating.
    pub fn child_blocks(&self) -> ChildBlocks {
        let mut out = [None, None];
        let mut n = 0;
        self.visit(
            |_| {},
            |b| {
                out[n] = Some(*b);
                n += 1;
            },
            |_| {},
        );
        out.into_iter().flatten()
    }
}

fn ignore_mut(_: &mut Block) {}
fn ignore(_: &Block) {}
fn ignore_value(_: &Value) {}
fn ignore_field(_: &Name) {}

/// Calls `f` on every value a statement reads (operands, field indices and
/// loop or task bounds), allowing it to be replaced. Nested blocks are not
/// visited.
pub fn operands_mut(kind: &mut StmtKind, f: &mut dyn FnMut(&mut Value)) {
    kind.operands_mut(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::entities::Numbered;

    fn field(name: &str) -> FieldRef {
        FieldRef { field: name.into(), indices: vec![Value::new(0)], span: Span::DUMMY }
    }

    fn fields_of(kind: &StmtKind) -> Vec<String> {
        let mut out = Vec::new();
        kind.for_each_field(|f| out.push(f.to_string()));
        out
    }

    #[test]
    fn the_table_names_the_fields_a_statement_touches() {
        let v = Value::new(1);
        assert_eq!(fields_of(&StmtKind::Load(field("x"))), ["x"]);
        assert_eq!(fields_of(&StmtKind::Atomic(AtomicOp::Add, field("y"), v)), ["y"]);
        let range =
            TaskKind::RangeFor { var: v, lo: Bound::Const(0), hi: Bound::Field("n".into(), Span::DUMMY), block_dim: 8 };
        assert_eq!(fields_of(&StmtKind::Task { name: "t".into(), kind: range, body: Block::new(1) }), ["n"]);
        let each = TaskKind::StructFor { vars: vec![v], field: "f".into(), field_span: Span::DUMMY, block_dim: 8 };
        assert_eq!(fields_of(&StmtKind::Task { name: "t".into(), kind: each, body: Block::new(1) }), ["f"]);
        assert!(fields_of(&StmtKind::StoreSlot(v, v)).is_empty());
    }

    #[test]
    fn the_table_says_what_defines_a_value() {
        let v = Value::new(1);
        assert_eq!(StmtKind::Load(field("x")).defines(), Defines::Always);
        assert_eq!(StmtKind::Alloca(Scalar::F32).defines(), Defines::Always);
        assert_eq!(StmtKind::Atomic(AtomicOp::Add, field("x"), v).defines(), Defines::Optional);
        assert_eq!(StmtKind::Call("f".into(), vec![], Span::DUMMY).defines(), Defines::IfCalleeReturns);
        assert_eq!(StmtKind::Store(field("x"), v).defines(), Defines::Never);
        assert!(StmtKind::Binary(BinOp::Add, v, v).is_pure() && !StmtKind::Load(field("x")).is_pure());
    }
}
