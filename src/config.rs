//! The compile configuration and a task's launch metadata.
//!
//! Owns: [`CompileConfig`], the one struct that says how a task module is
//! turned into machine code. It is hashed whole into every cache key (see
//! `key`), so a field added here can never be forgotten by the key; and
//! [`LaunchMeta`], what the runtime needs to launch a compiled task, stored
//! beside the object in a cache record.
//!
//! Must never: detect the host or touch LLVM (codegen fills `llvm_version`
//! from the library it links; the rest is plain data).

use crate::ir::{Bound, Scalar, TaskItem, TaskKind};
use serde::{Deserialize, Serialize};

/// Optimisation level of the LLVM pipeline (`-O0` .. `-O3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OptLevel {
    O0,
    O1,
    O2,
    O3,
}

/// The code model objects are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CodeModel {
    /// The target's default.
    Default,
    Small,
    /// x86-64's large model: code and constants of many loaded objects can
    /// be placed any distance apart.
    Large,
}

/// Everything besides the task's text that determines its object's bytes.
/// The host (triple, CPU, features) is not here: it scopes the cache
/// directory instead.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CompileConfig {
    pub opt_level: OptLevel,
    pub fast_math: bool,
    pub bounds_checks: bool,
    pub code_model: CodeModel,
    /// The cache record format version.
    pub record_version: u32,
    /// Kiln's version ([`crate::VERSION`]).
    pub kiln_version: String,
    /// LLVM's version, e.g. `22.1.8`; `none` in builds without LLVM.
    pub llvm_version: String,
    /// The build identity ([`BUILD_ID`]): a digest of the compiler's own
    /// code that decides an object's bytes, so a rebuilt compiler never
    /// loads objects an older one made.
    pub build_id: String,
}

/// The cache record format this build writes and reads.
pub const RECORD_VERSION: u32 = 1;

/// The version of the LLVM this build compiles with (from `llvm-config` at
/// build time; `none` when LLVM was not found). Codegen checks that the
/// library it loads reports the same.
pub const LLVM_VERSION: &str = env!("KILN_LLVM_VERSION");

/// This build's identity, computed by `build.rs` with
/// [`crate::build_id::digest`] over the codegen, JIT runtime, IR, key and
/// record sources, the LLVM bindings' locked versions and [`LLVM_VERSION`].
pub const BUILD_ID: &str = env!("KILN_BUILD_ID");

impl Default for CompileConfig {
    fn default() -> CompileConfig {
        CompileConfig::new(LLVM_VERSION)
    }
}

impl CompileConfig {
    /// The default configuration: `-O2`, no fast-math, bounds checks on,
    /// the large code model on x86-64 (the target default elsewhere).
    pub fn new(llvm_version: impl Into<String>) -> CompileConfig {
        CompileConfig {
            opt_level: OptLevel::O2,
            fast_math: false,
            bounds_checks: true,
            code_model: if cfg!(target_arch = "x86_64") { CodeModel::Large } else { CodeModel::Default },
            record_version: RECORD_VERSION,
            kiln_version: crate::VERSION.to_string(),
            llvm_version: llvm_version.into(),
            build_id: BUILD_ID.to_string(),
        }
    }
}

/// A launch bound as stored in metadata: a constant, a kernel parameter by
/// index into the task's parameter list, or a 0-D field read at launch.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MetaBound {
    Const(i64),
    Param(u32),
    Field(String),
}

/// How a compiled task is launched.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MetaKind {
    Serial,
    RangeFor { lo: MetaBound, hi: MetaBound, block_dim: u32 },
    StructFor { field: String, rank: u32, block_dim: u32 },
}

/// A field a task touches: name, element type and shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MetaField {
    pub name: String,
    pub elem: String,
    pub shape: Vec<u64>,
}

/// What the runtime needs to launch a compiled task, stored with its
/// object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LaunchMeta {
    /// The task's name when it was compiled (informational: identical tasks
    /// of other kernels share the record).
    pub task: String,
    /// The symbol of the task's entry function in the object.
    pub entry_symbol: String,
    pub kind: MetaKind,
    /// The kernel parameters the task reads, in order: name and type.
    pub params: Vec<(String, String)>,
    /// The fields the task touches, in the order the object expects their
    /// base pointers.
    pub fields: Vec<MetaField>,
}

impl LaunchMeta {
    /// The metadata of a task item of a per-task module. `fields` must be
    /// the module's fields in order (what `split-tasks` emits).
    pub fn of_task(task: &TaskItem, fields: &[&crate::ir::Field], entry_symbol: &str) -> LaunchMeta {
        let param_index = |b: &Bound| -> MetaBound {
            match b {
                Bound::Const(c) => MetaBound::Const(*c),
                Bound::Value(v) => MetaBound::Param(task.body.params.iter().position(|p| p == v).unwrap_or(0) as u32),
                Bound::Field(n, _) => MetaBound::Field(n.to_string()),
            }
        };
        let kind = match &task.kind {
            TaskKind::Serial => MetaKind::Serial,
            TaskKind::RangeFor { lo, hi, block_dim, .. } => {
                MetaKind::RangeFor { lo: param_index(lo), hi: param_index(hi), block_dim: *block_dim }
            }
            TaskKind::StructFor { vars, field, block_dim, .. } => {
                MetaKind::StructFor { field: field.to_string(), rank: vars.len() as u32, block_dim: *block_dim }
            }
        };
        LaunchMeta {
            task: task.name.to_string(),
            entry_symbol: entry_symbol.to_string(),
            kind,
            params: task
                .params
                .iter()
                .zip(&task.body.params)
                .map(|(p, v)| (task.body.name(*v).to_string(), p.ty.keyword().to_string()))
                .collect(),
            fields: fields
                .iter()
                .map(|f| MetaField { name: f.name.to_string(), elem: f.elem.keyword().to_string(), shape: f.shape.clone() })
                .collect(),
        }
    }

    /// The element type of a field entry.
    pub fn field_elem(f: &MetaField) -> Option<Scalar> {
        Scalar::from_keyword(&f.elem)
    }
}
