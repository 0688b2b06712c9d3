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

impl OptLevel {
    /// Every level, in order.
    pub const ALL: [OptLevel; 4] = [OptLevel::O0, OptLevel::O1, OptLevel::O2, OptLevel::O3];

    /// The level's number, as `-O` and LLVM's pipeline names spell it.
    pub fn number(self) -> u8 {
        match self {
            OptLevel::O0 => 0,
            OptLevel::O1 => 1,
            OptLevel::O2 => 2,
            OptLevel::O3 => 3,
        }
    }
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

impl CodeModel {
    /// Every model, in the order `--help` lists them.
    pub const ALL: [CodeModel; 3] = [CodeModel::Default, CodeModel::Small, CodeModel::Large];

    /// The model's name, as `--code-model` spells it.
    pub fn keyword(self) -> &'static str {
        match self {
            CodeModel::Default => "default",
            CodeModel::Small => "small",
            CodeModel::Large => "large",
        }
    }
}

impl std::fmt::Display for CodeModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.keyword())
    }
}

/// Which tiers a run compiles (`--tier`, the `tier` setting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TierPolicy {
    /// A task the cache lacks in its optimised tier starts on its quick
    /// tier while the optimised one compiles in the background and
    /// replaces it at a launch boundary; the best tier present is loaded.
    #[default]
    Auto,
    /// The quick tier only.
    Quick,
    /// The optimised tier only (compiled before the first launch).
    Opt,
}

impl TierPolicy {
    /// Every policy, in the order `--help` lists them.
    pub const ALL: [TierPolicy; 3] = [TierPolicy::Auto, TierPolicy::Quick, TierPolicy::Opt];

    /// The policy's name, as `--tier` spells it.
    pub fn keyword(self) -> &'static str {
        match self {
            TierPolicy::Auto => "auto",
            TierPolicy::Quick => "quick",
            TierPolicy::Opt => "opt",
        }
    }

    /// The policy `--tier` names.
    pub fn from_keyword(s: &str) -> Option<TierPolicy> {
        TierPolicy::ALL.into_iter().find(|p| p.keyword() == s)
    }
}

/// What float operations do with subnormal numbers
/// ([`crate::fpenv`]; `docs/language.md`, "Subnormal numbers").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Denormals {
    /// IEEE 754: subnormal inputs and results are kept (KIR's default).
    #[default]
    Preserve,
    /// A subnormal input counts as a zero of its sign, and a subnormal
    /// result becomes one, as Quadrants' CPU backend computes.
    Flush,
}

impl Denormals {
    /// Every mode, in the order `--help` lists them.
    pub const ALL: [Denormals; 2] = [Denormals::Preserve, Denormals::Flush];

    /// The mode's name, as `--denormals` spells it.
    pub fn keyword(self) -> &'static str {
        match self {
            Denormals::Preserve => "preserve",
            Denormals::Flush => "flush",
        }
    }
}

impl std::fmt::Display for Denormals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.keyword())
    }
}

/// Everything besides the task's text that determines its object's bytes.
/// The host (triple, CPU, features) is not here: it scopes the cache
/// directory instead.
///
/// Its serialised form ([`CompileConfig::to_wire`]) is also what crosses
/// the process boundary to a `kiln-compile` child: the child reads it
/// whole ([`CompileConfig::from_wire`]) and refuses a field it does not
/// know, so no setting can be keyed on one side and dropped on the other.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompileConfig {
    pub opt_level: OptLevel,
    pub fast_math: bool,
    pub bounds_checks: bool,
    pub code_model: CodeModel,
    /// What float operations do with subnormal numbers: the code is
    /// compiled for the mode (LLVM's `denormal-fp-math`) and run in it.
    pub denormals: Denormals,
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
/// [`crate::build_id::digest`] over every source the code generator, the
/// JIT runtime, the key and the record format reach, the LLVM bindings'
/// locked versions and [`LLVM_VERSION`].
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
            denormals: Denormals::Preserve,
            record_version: RECORD_VERSION,
            kiln_version: crate::VERSION.to_string(),
            llvm_version: llvm_version.into(),
            build_id: BUILD_ID.to_string(),
        }
    }
}

impl CompileConfig {
    /// This configuration's quick tier (`--tier`, `docs/runtime.md`,
    /// "Tiers"): the same settings at `-O0`, LLVM's fastest compile (the
    /// lighter pipelines measured cost more to compile than they saved in
    /// a first launch: `docs/performance.md`, "Tiered compilation"). Its
    /// records are `-O0`'s, whatever the run's `-O` level.
    pub fn quick(&self) -> CompileConfig {
        CompileConfig { opt_level: OptLevel::O0, ..self.clone() }
    }

    /// Whether the interpreter computes what code compiled with this
    /// configuration computes, bit for bit, errors included: in the
    /// default mode (not `--fast-math`), with bounds checks (the
    /// interpreter always checks).
    pub fn interpreter_agrees(&self) -> bool {
        !self.fast_math && self.bounds_checks
    }

    /// Whether a quick tier is worth having: the optimised tier optimises
    /// (at `-O0` the two are the same code).
    pub fn has_quick_tier(&self) -> bool {
        self.opt_level != OptLevel::O0
    }

    /// The configuration as one line of JSON: exactly the fields the key
    /// hashes, for a `kiln-compile` process (`--compile-config`).
    pub fn to_wire(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| unreachable!("a CompileConfig always serialises: {e}"))
    }

    /// A configuration sent by [`CompileConfig::to_wire`], if this build can
    /// honour it: every field known (an unknown one is refused, never
    /// dropped), and the record format, Kiln version, LLVM version and
    /// build identity this build's own (an object is never made by a build
    /// other than the one its key names).
    pub fn from_wire(text: &str) -> Result<CompileConfig, String> {
        let config: CompileConfig =
            serde_json::from_str(text).map_err(|e| format!("cannot honour the compile configuration: {e}"))?;
        let ours = CompileConfig::default();
        let fixed: [(&str, String, String); 4] = [
            ("record_version", config.record_version.to_string(), ours.record_version.to_string()),
            ("kiln_version", config.kiln_version.clone(), ours.kiln_version.clone()),
            ("llvm_version", config.llvm_version.clone(), ours.llvm_version.clone()),
            ("build_id", config.build_id.clone(), ours.build_id.clone()),
        ];
        for (field, asked, have) in fixed {
            if asked != have {
                return Err(format!(
                    "cannot honour the compile configuration: {field} is {asked}, but this build's is {have}"
                ));
            }
        }
        Ok(config)
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
    RangeFor {
        lo: MetaBound,
        hi: MetaBound,
        block_dim: u32,
    },
    StructFor {
        field: String,
        rank: u32,
        block_dim: u32,
    },
    /// Not a task: a function record (`crate::key::functions`), which
    /// defines `entry_symbol` for the objects that call it and is never
    /// launched.
    Function,
}

/// A field a task touches: name, element type and shape. The element type
/// is stored as its keyword (`"f32"`); a record naming another is damaged.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MetaField {
    pub name: String,
    #[serde(with = "scalar_keyword")]
    pub elem: Scalar,
    pub shape: Vec<u64>,
}

/// A kernel parameter a task reads: its name and type. Stored as the pair
/// `["name", "i32"]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "ParamRepr", into = "ParamRepr")]
pub struct MetaParam {
    pub name: String,
    pub ty: Scalar,
}

/// The stored form of a [`MetaParam`].
#[derive(Serialize, Deserialize)]
struct ParamRepr(String, #[serde(with = "scalar_keyword")] Scalar);

impl From<ParamRepr> for MetaParam {
    fn from(ParamRepr(name, ty): ParamRepr) -> MetaParam {
        MetaParam { name, ty }
    }
}

impl From<MetaParam> for ParamRepr {
    fn from(p: MetaParam) -> ParamRepr {
        ParamRepr(p.name, p.ty)
    }
}

/// A [`Scalar`] as its keyword in stored metadata.
mod scalar_keyword {
    use crate::ir::Scalar;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Scalar, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(t.keyword())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        let k = String::deserialize(d)?;
        Scalar::from_keyword(&k).ok_or_else(|| serde::de::Error::custom(format!("unknown element type `{k}`")))
    }
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
    /// The kernel parameters the task reads, in order.
    pub params: Vec<MetaParam>,
    /// The fields the task touches, in the order the object expects their
    /// base pointers.
    pub fields: Vec<MetaField>,
}

/// Why a task item has no launch metadata (IR the verifier would reject).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaError {
    pub message: String,
}

impl std::fmt::Display for MetaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MetaError {}

impl LaunchMeta {
    /// The metadata of a task item of a per-task module. `fields` must be
    /// the module's fields in order (what `split-tasks` emits). A bound
    /// naming a value that is not one of the task's parameters is an error.
    pub fn of_task(task: &TaskItem, fields: &[&crate::ir::Field], entry_symbol: &str) -> Result<LaunchMeta, MetaError> {
        let bound = |b: &Bound| -> Result<MetaBound, MetaError> {
            Ok(match b {
                Bound::Const(c) => MetaBound::Const(*c),
                Bound::Value(v) => {
                    let k = task.body.params.iter().position(|p| p == v).ok_or_else(|| MetaError {
                        message: format!(
                            "task @{}: the loop bound %{} is not a parameter of the task",
                            task.name,
                            task.body.name(*v)
                        ),
                    })?;
                    MetaBound::Param(k as u32)
                }
                Bound::Field(n, _) => MetaBound::Field(n.to_string()),
            })
        };
        let kind = match &task.kind {
            TaskKind::Serial => MetaKind::Serial,
            TaskKind::RangeFor { lo, hi, block_dim, .. } => {
                MetaKind::RangeFor { lo: bound(lo)?, hi: bound(hi)?, block_dim: *block_dim }
            }
            TaskKind::StructFor { vars, field, block_dim, .. } => {
                MetaKind::StructFor { field: field.to_string(), rank: vars.len() as u32, block_dim: *block_dim }
            }
        };
        Ok(LaunchMeta {
            task: task.name.to_string(),
            entry_symbol: entry_symbol.to_string(),
            kind,
            params: task
                .params
                .iter()
                .zip(&task.body.params)
                .map(|(p, v)| MetaParam { name: task.body.name(*v).to_string(), ty: p.ty })
                .collect(),
            fields: fields
                .iter()
                .map(|f| MetaField { name: f.name.to_string(), elem: f.elem, shape: f.shape.clone() })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task_module(src: &str) -> crate::ir::Module {
        let s = crate::parser::parse(src).unwrap();
        crate::verifier::verify(&s).unwrap();
        s.modules.into_iter().next().unwrap()
    }

    const SRC: &str = "field @x : f32[8]\n\
        task @k.0 of @k(%n: i32) range_for %i in 0 .. %n block_dim 4 {\n  %v = const 1.0 : f32\n  store @x[%i], %v\n}\n";

    #[test]
    fn metadata_is_typed_and_stored_as_keywords() {
        let m = task_module(SRC);
        let task = m.tasks().next().unwrap();
        let fields: Vec<&crate::ir::Field> = m.fields().collect();
        let meta = LaunchMeta::of_task(task, &fields, "kiln_task").unwrap();
        assert_eq!(meta.params, [MetaParam { name: "n".into(), ty: Scalar::I32 }]);
        assert_eq!(meta.fields, [MetaField { name: "x".into(), elem: Scalar::F32, shape: vec![8] }]);
        assert_eq!(meta.kind, MetaKind::RangeFor { lo: MetaBound::Const(0), hi: MetaBound::Param(0), block_dim: 4 });
        // The stored form is the one records have always had.
        let json = serde_json::to_string(&meta).unwrap();
        assert!(json.contains(r#""params":[["n","i32"]]"#), "{json}");
        assert!(json.contains(r#""fields":[{"name":"x","elem":"f32","shape":[8]}]"#), "{json}");
        assert_eq!(serde_json::from_str::<LaunchMeta>(&json).unwrap(), meta);
        // A type no build knows makes the metadata unreadable (a damaged
        // record), never a wrong launch.
        for bad in
            [json.replace(r#""elem":"f32""#, r#""elem":"f128""#), json.replace(r#"["n","i32"]"#, r#"["n","q8"]"#)]
        {
            let e = serde_json::from_str::<LaunchMeta>(&bad).unwrap_err();
            assert!(e.to_string().contains("unknown element type"), "{e}");
        }
    }

    #[test]
    fn a_bound_that_is_no_parameter_is_an_error() {
        let m = task_module(SRC);
        let mut task = m.tasks().next().unwrap().clone();
        // What the verifier rejects: the bound's value is not a parameter.
        task.params.clear();
        task.body.params.clear();
        let e = LaunchMeta::of_task(&task, &[], "kiln_task").unwrap_err();
        assert_eq!(e.message, "task @k.0: the loop bound %n is not a parameter of the task");
    }
}
