//! Types, scalars and constants.
//!
//! Owns: [`Scalar`], [`Type`], [`Const`] and their facts (keywords,
//! widths, a constant's bits); the typing rules that use them are
//! `typing`'s.
//!
//! Must never: know statements or values.

use std::fmt;

/// A scalar type. Integers are two's complement of their width; a signed
/// one (`i8` … `i64`) and an unsigned one (`u8` … `u64`) of one width hold
/// the same bits and differ in the operations that read them as numbers
/// (`div`, `rem`, `min`, `max`, `cmp`, widening casts, conversions to
/// floats; `docs/language.md`). New types go last: the order is part of
/// nothing but must not move the old ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    I1,
    I32,
    I64,
    F32,
    F64,
    I8,
    I16,
    U8,
    U16,
    U32,
    U64,
    F16,
}

/// What a scalar is: the one table every fact about a type comes from.
struct Facts {
    keyword: &'static str,
    /// Width in bits (1 for `i1`).
    bits: u32,
    float: bool,
    /// Read as a signed number (never for `i1`, whose 1 is `true`).
    signed: bool,
}

const fn facts(t: Scalar) -> Facts {
    let (keyword, bits, float, signed) = match t {
        Scalar::I1 => ("i1", 1, false, false),
        Scalar::I8 => ("i8", 8, false, true),
        Scalar::I16 => ("i16", 16, false, true),
        Scalar::I32 => ("i32", 32, false, true),
        Scalar::I64 => ("i64", 64, false, true),
        Scalar::U8 => ("u8", 8, false, false),
        Scalar::U16 => ("u16", 16, false, false),
        Scalar::U32 => ("u32", 32, false, false),
        Scalar::U64 => ("u64", 64, false, false),
        Scalar::F16 => ("f16", 16, true, true),
        Scalar::F32 => ("f32", 32, true, true),
        Scalar::F64 => ("f64", 64, true, true),
    };
    Facts { keyword, bits, float, signed }
}

impl Scalar {
    /// Every scalar type, in the order the language reference lists them.
    pub const ALL: [Scalar; 12] = [
        Scalar::I1,
        Scalar::I8,
        Scalar::I16,
        Scalar::I32,
        Scalar::I64,
        Scalar::U8,
        Scalar::U16,
        Scalar::U32,
        Scalar::U64,
        Scalar::F16,
        Scalar::F32,
        Scalar::F64,
    ];

    pub fn is_int(self) -> bool {
        !facts(self).float
    }
    pub fn is_float(self) -> bool {
        facts(self).float
    }
    /// An integer read as a signed number (`i8` … `i64`); floats too.
    pub fn is_signed(self) -> bool {
        facts(self).signed
    }
    /// An integer read as an unsigned number (`u8` … `u64`; not `i1`).
    pub fn is_unsigned(self) -> bool {
        self.is_int() && !self.is_signed() && self != Scalar::I1
    }
    /// Width in bits (1 for `i1`).
    pub fn bits(self) -> u32 {
        facts(self).bits
    }
    /// Bytes one element of a field of this type occupies (`i1` is one byte).
    pub fn size_bytes(self) -> usize {
        (facts(self).bits as usize).div_ceil(8)
    }
    pub fn keyword(self) -> &'static str {
        facts(self).keyword
    }
    pub fn from_keyword(s: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|t| t.keyword() == s)
    }
    /// The bits of an integer of this type, wrapped to its width and
    /// zero-extended (what [`Const::bits`] holds).
    pub fn wrap_bits(self, v: u64) -> u64 {
        match self.bits() {
            64 => v,
            w => v & ((1u64 << w) - 1),
        }
    }
    /// An integer's bits (zero-extended, as [`Scalar::wrap_bits`] makes
    /// them) as the number they are: sign-extended for a signed type.
    pub fn int_value(self, bits: u64) -> i128 {
        let w = self.bits();
        if self.is_signed() && w < 64 {
            (((bits << (64 - w)) as i64) >> (64 - w)) as i128
        } else if self.is_signed() {
            bits as i64 as i128
        } else {
            self.wrap_bits(bits) as i128
        }
    }
    /// The least and greatest numbers an integer type holds.
    pub fn int_range(self) -> (i128, i128) {
        let w = self.bits();
        if self.is_signed() {
            (-(1i128 << (w - 1)), (1i128 << (w - 1)) - 1)
        } else {
            (0, (1i128 << w) - 1)
        }
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
    /// The value's bits, zero-extended: `i1` is 0 or 1, a narrower type
    /// uses the low bits of its width.
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
    pub fn f16(v: half::f16) -> Const {
        Const { ty: Scalar::F16, bits: v.to_bits() as u64 }
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
            // Through f64, exact below 2^53; above it every f16 is inf.
            Scalar::F16 => Const::f16(half::f16::from_f64(v as f64)),
            Scalar::F32 => Const::f32(v as f32),
            Scalar::F64 => Const::f64(v as f64),
            _ => Const { ty, bits: ty.wrap_bits(v as u64) },
        }
    }
    /// The integer's bits as an `i64`: its value sign-extended for a
    /// signed type (`i1` gives 0 or 1), zero-extended for an unsigned one
    /// (a `u64` above `i64::MAX` wraps). None for floats.
    pub fn as_i64(self) -> Option<i64> {
        self.ty.is_int().then(|| self.ty.int_value(self.bits) as i64)
    }
    /// The float value, widened to f64. None for integers.
    pub fn as_f64(self) -> Option<f64> {
        match self.ty {
            Scalar::F16 => Some(half::f16::from_bits(self.bits as u16).to_f64()),
            Scalar::F32 => Some(f32::from_bits(self.bits as u32) as f64),
            Scalar::F64 => Some(f64::from_bits(self.bits)),
            _ => None,
        }
    }
}
