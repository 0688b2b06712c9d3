//! Operators and their facts.
//!
//! Owns: [`BinOp`], [`UnOp`], [`CmpOp`] and [`AtomicOp`], their keywords,
//! and every per-operator fact the rest of Kiln relies on, beside each
//! other: which types an operator accepts (`accepts`), which operators
//! commute bit for bit (`commutes_on`, what `cse` matches with operands
//! swapped), and which go to the C library (`libm`, what `simplify` must
//! not fold and codegen calls by name).
//!
//! Must never: be restated where used: a pass or a backend asks the
//! operator.

use super::types::Scalar;

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
    /// The C library function computing it (on f64; `f` appended for
    /// f32), for the operators whose results are libm's and so not fixed
    /// bit for bit by the language.
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
    Asin,
    Acos,
    Atan,
    Tanh,
    Exp,
    Log,
    Floor,
    Ceil,
    Round,
}

impl UnOp {
    pub const ALL: [UnOp; 16] = [
        UnOp::Neg,
        UnOp::Not,
        UnOp::Abs,
        UnOp::Sqrt,
        UnOp::Sin,
        UnOp::Cos,
        UnOp::Tan,
        UnOp::Asin,
        UnOp::Acos,
        UnOp::Atan,
        UnOp::Tanh,
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
            UnOp::Asin => "asin",
            UnOp::Acos => "acos",
            UnOp::Atan => "atan",
            UnOp::Tanh => "tanh",
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
    /// Kiln's own function computing it on `ty` outside fast-math mode
    /// (`crate::math`), where it has one; elsewhere [`UnOp::libm`]'s.
    pub fn kiln_math(self, ty: Scalar) -> Option<crate::math::MathFunc> {
        use crate::math::MathFunc;
        match (self, ty) {
            (UnOp::Sin, Scalar::F32) => Some(MathFunc::Sin),
            (UnOp::Cos, Scalar::F32) => Some(MathFunc::Cos),
            (UnOp::Tan, Scalar::F32) => Some(MathFunc::Tan),
            (UnOp::Exp, Scalar::F32) => Some(MathFunc::Exp),
            (UnOp::Log, Scalar::F32) => Some(MathFunc::Log),
            (UnOp::Tanh, Scalar::F32) => Some(MathFunc::Tanh),
            _ => None,
        }
    }
    /// The C library function computing it (see [`BinOp::libm`]).
    pub fn libm(self) -> Option<&'static str> {
        match self {
            UnOp::Sin => Some("sin"),
            UnOp::Cos => Some("cos"),
            UnOp::Tan => Some("tan"),
            UnOp::Asin => Some("asin"),
            UnOp::Acos => Some("acos"),
            UnOp::Atan => Some("atan"),
            UnOp::Tanh => Some("tanh"),
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
