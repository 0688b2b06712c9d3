//! Types, scalars and constants.
//!
//! Owns: [`Scalar`], [`Type`], [`Const`] and their facts (keywords,
//! widths, a constant's bits); the typing rules that use them are
//! `typing`'s.
//!
//! Must never: know statements or values.

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
