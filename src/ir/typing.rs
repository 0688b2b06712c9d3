//! The typing rules.
//!
//! Owns: the rules that give a value its type: [`result_type`] (the type
//! of a statement's result from its operands and the module's signatures)
//! and [`loop_var_type`] (the type a `for` or `range_for` variable written
//! without `: TYPE` gets), and [`TypeEnv`], what they ask of their caller.
//! The parser infers with them, the verifier checks against them, and the
//! printer decides with them when a loop variable needs its `: TYPE`.
//!
//! Must never: report errors: a rule answers with a type, or None where
//! the kind defines no value or a name is unknown; the verifier says why.

use super::entities::Value;
use super::stmt::{Bound, StmtKind};
use super::types::{Scalar, Type};

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
        StmtKind::Cast(_, t) | StmtKind::BitCast(_, t) => Some(Type::Scalar(*t)),
        StmtKind::Load(r) | StmtKind::Atomic(_, r, _) => env.field_elem(&r.field).map(Type::Scalar),
        StmtKind::Alloca(t) => Some(Type::Slot(*t)),
        StmtKind::Random { ty, .. } => Some(Type::Scalar(*ty)),
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
        | StmtKind::Assert { .. }
        | StmtKind::Print { .. }
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
