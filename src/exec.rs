//! What the engines share: field storage, kernel arguments and run-time
//! errors.
//!
//! Owns: [`Fields`] (every field of a program as little-endian bytes, the
//! layout both the interpreter and the JIT read and write), the digest of a
//! field, and the [`Engine`] trait `kiln-run` drives.
//!
//! Must never: execute anything itself, or print.

use crate::ir::{Const, Field, Name, Scalar, Stream};
use std::collections::BTreeMap;
use std::fmt;

/// One field's storage: dense, row-major, little-endian elements.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldData {
    pub elem: Scalar,
    pub shape: Vec<u64>,
    pub bytes: Vec<u8>,
}

impl FieldData {
    /// A zero-filled field of this declaration.
    pub fn zeroed(f: &Field) -> FieldData {
        FieldData { elem: f.elem, shape: f.shape.clone(), bytes: vec![0; f.size_bytes() as usize] }
    }
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product::<u64>() as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `blake3:HEX` over the little-endian bytes.
    pub fn digest(&self) -> String {
        format!("blake3:{}", blake3::hash(&self.bytes).to_hex())
    }
    /// The type as printed in digests and listings: `f32[64, 64]`, `f64`.
    pub fn type_string(&self) -> String {
        if self.shape.is_empty() {
            self.elem.to_string()
        } else {
            let dims: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
            format!("{}[{}]", self.elem, dims.join(", "))
        }
    }
}

/// Every field of a program, by name (sorted, so listings never churn).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fields {
    pub map: BTreeMap<Name, FieldData>,
}

impl Fields {
    /// Zeroed storage for every field declared in any module of the stream
    /// (modules of a split stream repeat the fields they share; the first
    /// declaration wins, and the verifier checks that they agree).
    pub fn zeroed(stream: &Stream) -> Fields {
        let mut map = BTreeMap::new();
        for m in &stream.modules {
            for f in m.fields() {
                map.entry(f.name.clone()).or_insert_with(|| FieldData::zeroed(f));
            }
        }
        Fields { map }
    }
    pub fn get(&self, name: &str) -> Option<&FieldData> {
        self.map.get(name)
    }
    pub fn get_mut(&mut self, name: &str) -> Option<&mut FieldData> {
        self.map.get_mut(name)
    }
}

/// An error while running a kernel (out-of-bounds access, a bad argument).
#[derive(Clone, Debug, PartialEq)]
pub struct RunError {
    pub message: String,
}

impl RunError {
    pub fn new(message: impl Into<String>) -> RunError {
        RunError { message: message.into() }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RunError {}

/// Something that runs kernels of a verified stream over field storage.
pub trait Engine {
    /// Runs kernel `kernel` of `stream` with `args` (one per kernel
    /// parameter, in order, already of the parameter's type).
    fn run_kernel(&mut self, stream: &Stream, kernel: &str, args: &[Const], fields: &mut Fields) -> Result<(), RunError>;
}
