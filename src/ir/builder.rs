//! Building a body statement by statement: a cursor over a [`Body`], as
//! `cranelift-frontend`'s `FunctionBuilder` is over a function.
//!
//! Owns: [`Builder`], which appends statements at the end of its current
//! block, each with the location it was told ([`Builder::set_loc`]), its
//! result typed by the one typing rule ([`super::result_type`]), a loop's
//! or a task's variables defined by their statement (as the parser
//! defines them); and [`Ins`], the value-defining statements under the
//! result's name. A front end that makes IR from another program (the
//! Quadrants importer) builds it here, and the one printer writes it.
//!
//! Must never: check what it builds (the verifier does: a builder lets a
//! front end make any shape, as the parser does), choose a value's name,
//! or print.

use super::body::{Body, ValueDef};
use super::entities::{Block, Stmt, Value};
use super::ops::{AtomicOp, BinOp, CmpOp, UnOp};
use super::span::{Loc, Span};
use super::stmt::{Bound, FieldRef, StmtKind, TaskKind, DEFAULT_BLOCK_DIM};
use super::types::{Const, Scalar, Type};
use super::typing::{result_type, TypeEnv};
use super::Name;

/// A cursor over a body: where the next statement goes, and the location
/// it carries.
pub struct Builder<'b> {
    body: &'b mut Body,
    block: Block,
    loc: Option<Box<Loc>>,
}

/// The operand types typing asks for, from the body being built. Loads,
/// atomics and calls are typed by their caller (a builder knows no
/// fields and no functions).
struct Operands<'a>(&'a Body);

impl TypeEnv for Operands<'_> {
    fn value_type(&self, v: Value) -> Option<Type> {
        self.0.values().get(v).map(|d| d.ty)
    }
    fn field_elem(&self, _: &str) -> Option<Scalar> {
        None
    }
    fn func_ret(&self, _: &str) -> Option<Option<Scalar>> {
        None
    }
}

impl<'b> Builder<'b> {
    /// A builder at the end of `body`'s entry block, with no location.
    pub fn new(body: &'b mut Body) -> Builder<'b> {
        let block = body.entry;
        Builder { body, block, loc: None }
    }

    /// The body built so far.
    pub fn body(&self) -> &Body {
        self.body
    }

    /// The block statements are appended to.
    pub fn block(&self) -> Block {
        self.block
    }

    /// Appends to the end of `block` from now on.
    pub fn switch_to(&mut self, block: Block) {
        self.block = block;
    }

    /// The location every statement made from now on carries; the one
    /// it replaces.
    pub fn set_loc(&mut self, loc: Option<Loc>) -> Option<Loc> {
        std::mem::replace(&mut self.loc, loc.map(Box::new)).map(|l| *l)
    }

    /// A parameter named `name`.
    pub fn param(&mut self, name: impl Into<Name>, ty: Scalar) -> Value {
        self.body.add_param(name, ty, Span::DUMMY)
    }

    /// A statement that defines a value named `name`.
    pub fn ins(&mut self, name: impl Into<Name>) -> Ins<'_, 'b> {
        Ins { b: self, name: name.into() }
    }

    /// Appends `kind` to the current block, defining no value.
    fn append(&mut self, kind: StmtKind) -> Stmt {
        let s = self.body.new_stmt(kind, Span::DUMMY);
        self.body[s].loc = self.loc.clone();
        self.body.push(self.block, s);
        s
    }

    /// `store @f[...], v`.
    pub fn store(&mut self, r: FieldRef, v: Value) {
        self.append(StmtKind::Store(r, v));
    }

    /// `store %slot, v`.
    pub fn store_slot(&mut self, slot: Value, v: Value) {
        self.append(StmtKind::StoreSlot(slot, v));
    }

    /// `assert cond, "message", args...`.
    pub fn assert(&mut self, cond: Value, message: String, args: Vec<Value>) {
        self.append(StmtKind::Assert { cond, message, args });
    }

    /// `print pieces...`.
    pub fn print(&mut self, pieces: Vec<super::stmt::PrintPiece>) {
        self.append(StmtKind::Print { pieces });
    }

    /// `call @f(args...)` whose result, if any, is not named.
    pub fn call(&mut self, func: impl Into<Name>, args: Vec<Value>) {
        self.append(StmtKind::Call(func.into(), args, Span::DUMMY));
    }

    /// `ret` or `ret %v`.
    pub fn ret(&mut self, v: Option<Value>) {
        self.append(StmtKind::Ret(v));
    }

    pub fn break_(&mut self) {
        self.append(StmtKind::Break);
    }

    pub fn continue_(&mut self) {
        self.append(StmtKind::Continue);
    }

    /// `if cond { } else { }`: its then block, and its else block when
    /// `with_else`. The cursor stays after the `if`.
    pub fn if_(&mut self, cond: Value, with_else: bool) -> (Block, Option<Block>) {
        let then_blk = self.body.new_block();
        let else_blk = with_else.then(|| self.body.new_block());
        self.append(StmtKind::If { cond, then_blk, else_blk });
        (then_blk, else_blk)
    }

    /// `while { }`: its body.
    pub fn while_(&mut self) -> Block {
        let body = self.body.new_block();
        self.append(StmtKind::While { body });
        body
    }

    /// `for %var in lo .. hi { }`: its variable, typed by
    /// [`super::loop_var_type`], and its body.
    pub fn for_(&mut self, var: impl Into<Name>, lo: Bound, hi: Bound) -> (Value, Block) {
        let ty = super::loop_var_type(&lo, &hi, |v| self.body.values().get(v).map(|d| d.ty));
        let body = self.body.new_block();
        let s = self.append(StmtKind::For { var: Value::RESERVED, lo, hi, body, serial: false });
        let v = self.body.new_value(var, Type::Scalar(ty), ValueDef::LoopVar(s, 0), Span::DUMMY);
        if let StmtKind::For { var, .. } = &mut self.body[s].kind {
            *var = v;
        }
        (v, body)
    }

    /// `task @name serial { }`: its body.
    pub fn task_serial(&mut self, name: impl Into<Name>) -> Block {
        let body = self.body.new_block();
        self.append(StmtKind::Task { name: name.into(), kind: TaskKind::Serial, body });
        body
    }

    /// `task @name range_for %var : ty in lo .. hi block_dim N { }` (the
    /// default block size when `block_dim` is None): its variable and body.
    pub fn task_range_for(
        &mut self,
        name: impl Into<Name>,
        var: (Name, Scalar),
        range: (Bound, Bound),
        block_dim: Option<u32>,
    ) -> (Value, Block) {
        let body = self.body.new_block();
        let s = self.append(StmtKind::Task { name: name.into(), kind: TaskKind::Serial, body });
        let v = self.body.new_value(var.0, Type::Scalar(var.1), ValueDef::LoopVar(s, 0), Span::DUMMY);
        let kind =
            TaskKind::RangeFor { var: v, lo: range.0, hi: range.1, block_dim: block_dim.unwrap_or(DEFAULT_BLOCK_DIM) };
        self.set_task_kind(s, kind);
        (v, body)
    }

    /// `task @name struct_for %a, %b in @field block_dim N { }`: its `i32`
    /// variables and body.
    pub fn task_struct_for(
        &mut self,
        name: impl Into<Name>,
        vars: Vec<Name>,
        field: Name,
        block_dim: Option<u32>,
    ) -> (Vec<Value>, Block) {
        let body = self.body.new_block();
        let s = self.append(StmtKind::Task { name: name.into(), kind: TaskKind::Serial, body });
        let vars: Vec<Value> = vars
            .into_iter()
            .enumerate()
            .map(|(k, n)| {
                self.body.new_value(n, Type::Scalar(Scalar::I32), ValueDef::LoopVar(s, k as u32), Span::DUMMY)
            })
            .collect();
        let kind = TaskKind::StructFor {
            vars: vars.clone(),
            field,
            field_span: Span::DUMMY,
            block_dim: block_dim.unwrap_or(DEFAULT_BLOCK_DIM),
        };
        self.set_task_kind(s, kind);
        (vars, body)
    }

    fn set_task_kind(&mut self, s: Stmt, k: TaskKind) {
        if let StmtKind::Task { kind, .. } = &mut self.body[s].kind {
            *kind = k;
        }
    }
}

/// A statement about to define a value of a name ([`Builder::ins`]): each
/// method appends its statement and returns the value.
pub struct Ins<'a, 'b> {
    b: &'a mut Builder<'b>,
    name: Name,
}

impl Ins<'_, '_> {
    /// Appends `kind`, its result of type `ty` (else typed by the typing
    /// rule; `i32` where the rule has no answer, which the verifier then
    /// reports, as the parser does).
    fn define(self, kind: StmtKind, ty: Option<Type>) -> Value {
        let ty = ty.or_else(|| result_type(&kind, &Operands(self.b.body))).unwrap_or(Type::Scalar(Scalar::I32));
        let s = self.b.append(kind);
        let v = self.b.body.new_value(self.name, ty, ValueDef::Result(s), Span::DUMMY);
        self.b.body[s].result = Some(v);
        v
    }

    pub fn konst(self, c: Const) -> Value {
        self.define(StmtKind::Const(c), None)
    }
    pub fn binary(self, op: BinOp, a: Value, b: Value) -> Value {
        self.define(StmtKind::Binary(op, a, b), None)
    }
    pub fn unary(self, op: UnOp, a: Value) -> Value {
        self.define(StmtKind::Unary(op, a), None)
    }
    pub fn cmp(self, op: CmpOp, a: Value, b: Value) -> Value {
        self.define(StmtKind::Cmp(op, a, b), None)
    }
    pub fn cast(self, a: Value, to: Scalar) -> Value {
        self.define(StmtKind::Cast(a, to), None)
    }
    pub fn bitcast(self, a: Value, to: Scalar) -> Value {
        self.define(StmtKind::BitCast(a, to), None)
    }
    pub fn select(self, c: Value, a: Value, b: Value) -> Value {
        self.define(StmtKind::Select(c, a, b), None)
    }
    /// `load @f[...]` of a field whose elements are `elem`.
    pub fn load(self, r: FieldRef, elem: Scalar) -> Value {
        self.define(StmtKind::Load(r), Some(Type::Scalar(elem)))
    }
    /// `atomic op @f[...], v` on a field whose elements are `elem`: the old value.
    pub fn atomic(self, op: AtomicOp, r: FieldRef, v: Value, elem: Scalar) -> Value {
        self.define(StmtKind::Atomic(op, r, v), Some(Type::Scalar(elem)))
    }
    pub fn alloca(self, elem: Scalar) -> Value {
        self.define(StmtKind::Alloca(elem), None)
    }
    /// `random ty`, its site the count of the body's `random` statements
    /// before it (its ordinal when the body is built in program order).
    pub fn random(self, ty: Scalar) -> Value {
        let before = self.b.body.stmts().iter().filter(|d| matches!(d.kind, StmtKind::Random { .. })).count();
        let site = u32::try_from(before).unwrap_or(u32::MAX).min(crate::random::MAX_SITE);
        self.define(StmtKind::Random { ty, site }, None)
    }
    pub fn load_slot(self, slot: Value) -> Value {
        self.define(StmtKind::LoadSlot(slot), None)
    }
    /// `call @f(args...)` of a function that returns `ret`: its result.
    pub fn call(self, func: impl Into<Name>, args: Vec<Value>, ret: Scalar) -> Value {
        self.define(StmtKind::Call(func.into(), args, Span::DUMMY), Some(Type::Scalar(ret)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a builder makes prints as the parser would read it: a loop
    /// inside a task, its variable typed by the rule, locations carried.
    #[test]
    fn builds_what_the_parser_reads() {
        let mut body = Body::new();
        let mut b = Builder::new(&mut body);
        let n = b.param("n", Scalar::I32);
        let (i, task) = b.task_range_for("k.0", ("i".into(), Scalar::I32), (Bound::Const(0), Bound::Value(n)), None);
        b.switch_to(task);
        b.set_loc(Some(Loc { file: "k.py".into(), line: 3, col: 5 }));
        let (j, inner) = b.for_("j", Bound::Const(0), Bound::Value(i));
        b.switch_to(inner);
        let one = b.ins("one").konst(Const::i32(1));
        let s = b.ins("s").binary(BinOp::Add, j, one);
        let c = b.ins("c").cmp(CmpOp::Lt, s, n);
        let (then_blk, _) = b.if_(c, false);
        b.switch_to(then_blk);
        b.break_();
        assert_eq!(body.ty(s), Type::Scalar(Scalar::I32));
        assert_eq!(body.ty(c), Type::Scalar(Scalar::I1));
        assert!(matches!(body.value(j).def, ValueDef::LoopVar(_, 0)));
        let stream = crate::ir::Stream {
            modules: vec![crate::ir::Module {
                name: None,
                items: vec![crate::ir::Item::Kernel(crate::ir::Kernel {
                    name: "k".into(),
                    params: vec![crate::ir::Param { ty: Scalar::I32, default: None, span: Span::DUMMY }],
                    body,
                    span: Span::DUMMY,
                })],
                span: Span::DUMMY,
            }],
        };
        let text = stream.to_string();
        let parsed = crate::parser::parse(&text).expect("parses");
        crate::verifier::verify(&stream).expect("verifies");
        assert!(parsed.same_as(&stream), "{text}");
        assert!(text.contains("for %j in 0 .. %i {"), "{text}");
        assert!(text.contains("break loc(\"k.py\":3:5)"), "{text}");
    }
}
