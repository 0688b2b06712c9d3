//! Types, scalars and constants, and the typing rules.
//!
//! Owns: [`Scalar`], [`Type`], [`Const`], and the rules that give a value
//! its type: [`result_type`] (the type of a statement's result from its
//! operands and the module's signatures) and [`loop_var_type`] (the type a
//! `for` or `range_for` variable written without `: TYPE` gets). The
//! parser infers with them, the verifier checks against them, and the
//! printer decides with them when a loop variable needs its `: TYPE`.
//!
//! Must never: report errors: a rule answers with a type, or None where
//! the kind defines no value or a name is unknown; the verifier says why.

use super::entities::Value;
use super::stmt::{Bound, StmtKind};
use std::fmt;

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
    /// The scalar it holds: itself, or a slot's element type.
    pub fn elem(self) -> Scalar {
        match self {
            Type::Scalar(s) | Type::Slot(s) => s,
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

/// What typing needs to know around a statement: its operands' types and
/// the module's signatures.
pub trait TypeEnv {
    /// A value's type (None if the value is out of range).
    fn value_type(&self, v: Value) -> Option<Type>;
    /// A field's element type (None if there is no such field).
    fn field_elem(&self, name: &str) -> Option<Scalar>;
    /// A function's return type (None if there is no such function; the
    /// inner None for a function without a result).
    fn func_ret(&self, name: &str) -> Option<Option<Scalar>>;
}

/// The type a statement gives its result, from its operands' types (a
/// slot's element type where a slot stands for a scalar): `const` its
/// type, arithmetic and `select` their (first value) operand's, `cmp` `i1`,
/// `cast` its target, `load` and `atomic` the field's element type,
/// `alloca` a slot, `load %p` the slot's element type, `call` the callee's
/// return type. None for a kind that defines no value, or when a name it
/// needs is unknown.
pub fn result_type(kind: &StmtKind, env: &impl TypeEnv) -> Option<Type> {
    let scalar = |v: &Value| env.value_type(*v).map(|t| Type::Scalar(t.elem()));
    match kind {
        StmtKind::Const(c) => Some(Type::Scalar(c.ty)),
        StmtKind::Binary(_, a, _) | StmtKind::Unary(_, a) | StmtKind::LoadSlot(a) => scalar(a),
        StmtKind::Select(_, a, _) => scalar(a),
        StmtKind::Cmp(..) => Some(Type::Scalar(Scalar::I1)),
        StmtKind::Cast(_, t) => Some(Type::Scalar(*t)),
        StmtKind::Load(r) | StmtKind::Atomic(_, r, _) => env.field_elem(&r.field).map(Type::Scalar),
        StmtKind::Alloca(t) => Some(Type::Slot(*t)),
        StmtKind::Call(f, _, _) => env.func_ret(f).flatten().map(Type::Scalar),
        StmtKind::Store(..)
        | StmtKind::StoreSlot(..)
        | StmtKind::Ret(_)
        | StmtKind::If { .. }
        | StmtKind::For { .. }
        | StmtKind::While { .. }
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Task { .. }
        | StmtKind::Launch(_) => None,
    }
}

/// The type of a `for` or `range_for` variable written without `: TYPE`:
/// the type of the first bound that is a value (`lo`, else `hi`; a slot's
/// element type), else `i32`. `ty_of` gives a value's type (None if out of
/// range). The printer writes `: TYPE` exactly when a variable's type
/// differs from this.
pub fn loop_var_type(lo: &Bound, hi: &Bound, ty_of: impl Fn(Value) -> Option<Type>) -> Scalar {
    match (lo, hi) {
        (Bound::Value(v), _) | (_, Bound::Value(v)) => ty_of(*v).map_or(Scalar::I32, Type::elem),
        _ => Scalar::I32,
    }
}
