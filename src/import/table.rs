//! The field table a Quadrants capture writes beside its log: the
//! Quadrants version, every field (name, dtype, shape, the id of its place
//! SNode and of its ancestors, nearest first) and each kernel's arguments
//! (scalars and ndarrays, with the shape an ndarray had at the call).
//!
//! ```json
//! {"quadrants": "1.3.3",
//!  "fields": [{"name": "x", "dtype": "f32", "shape": [4096], "place": 2, "ancestors": [1, 0]}],
//!  "kernels": {"saxpy": {"args": [{"name": "a", "kind": "scalar", "dtype": "f32"},
//!                                  {"name": "arr", "kind": "ndarray", "dtype": "f32", "shape": [16]}]}}}
//! ```
//!
//! Owns: the table's format (serde; keys it does not know are allowed, so
//! the capture may add some), its errors at their line and column, and the
//! mapping of Quadrants' dtypes to KIR's scalars.
//!
//! Must never: read the log, or panic on any input.

use crate::diag::Diagnostic;
use crate::ir::Scalar;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The whole table.
#[derive(Debug, Deserialize)]
pub struct Table {
    pub quadrants: String,
    #[serde(default)]
    pub fields: Vec<Field>,
    #[serde(default)]
    pub kernels: BTreeMap<String, KernelArgs>,
}

/// One field: a place SNode and its dense ancestors.
#[derive(Debug, Deserialize)]
pub struct Field {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    pub place: u32,
    #[serde(default)]
    pub ancestors: Vec<u32>,
    /// The SNode kind of each ancestor (`dense`, `root`, `pointer`, ...),
    /// when the capture says.
    #[serde(default)]
    pub ancestor_kinds: Vec<String>,
    /// `scalar`, or `matrix` for a vector or matrix field.
    #[serde(default)]
    pub kind: Option<String>,
    /// A matrix field's `[n, m]` (a vector's is `[n, 1]`).
    #[serde(default)]
    pub element_shape: Option<Vec<u64>>,
    /// A matrix field's place SNode of each component, row-major (the
    /// first is `place`); absent in tables from captures before it was
    /// recorded, when only the first component can be named.
    #[serde(default)]
    pub components: Option<Vec<u32>>,
    /// The bytes between a matrix field's components when it can be
    /// indexed at run time (Quadrants' `dynamic_index_stride`).
    #[serde(default)]
    pub dynamic_index_stride: Option<u64>,
    /// Which Quadrants runtime (`qd.init`) the field belongs to, for a
    /// program that initialised more than one (absent: 0).
    #[serde(default)]
    pub init: Option<u32>,
}

/// A kernel's arguments, in the Python signature's order, and the runtime
/// parameters Quadrants numbered them as.
#[derive(Debug, Deserialize)]
pub struct KernelArgs {
    pub args: Vec<Arg>,
    /// Quadrants' runtime parameters in its own numbering, the one
    /// `argload[i]` and `argaddr[i]` count (template arguments have none, a
    /// dataclass one per member), as the capture saw Quadrants declare
    /// them. Absent in tables from captures before it was recorded.
    #[serde(default)]
    pub params: Option<Vec<Param>>,
}

/// One runtime parameter as Quadrants declared it.
#[derive(Debug, Deserialize, PartialEq)]
pub struct Param {
    /// Quadrants' number for it.
    pub id: u32,
    /// The name Quadrants declared it under.
    pub name: String,
    /// `scalar`, `ndarray`, `pointer` or `array`.
    pub kind: String,
    /// The Python argument it is, whole; absent for a part of one (a
    /// dataclass member, an ndarray reached through a template).
    #[serde(default)]
    pub arg: Option<String>,
}

/// Where a runtime parameter's value comes from.
#[derive(Debug, PartialEq)]
pub enum Slot<'t> {
    /// The Python argument at this index of [`KernelArgs::args`].
    Arg(usize),
    /// A part of a Python argument that the table cannot bind to one
    /// argument: the parameter as Quadrants declared it.
    Part(&'t Param),
    /// No parameter of this number.
    None,
}

impl KernelArgs {
    /// The value behind Quadrants' runtime parameter `id`. Without a
    /// recorded numbering, the arguments count as numbered in order only
    /// when every one is a scalar or an ndarray (so none can have been
    /// skipped or flattened); otherwise the numbering is unknown and
    /// `Err` says so, rather than a guess.
    pub fn slot(&self, id: u32) -> Result<Slot<'_>, String> {
        let Some(params) = &self.params else {
            if let Some(a) = self.args.iter().find(|a| a.kind != "scalar" && a.kind != "ndarray") {
                return Err(format!(
                    "the field table does not record how Quadrants numbered the kernel's arguments, and \
                     argument '{}' ({}) may have shifted them; capture the program again",
                    a.name, a.kind
                ));
            }
            return Ok(if (id as usize) < self.args.len() { Slot::Arg(id as usize) } else { Slot::None });
        };
        let Some(p) = params.iter().find(|p| p.id == id) else { return Ok(Slot::None) };
        match p.arg.as_deref().and_then(|n| self.args.iter().position(|a| a.name == n)) {
            Some(i) => Ok(Slot::Arg(i)),
            None => Ok(Slot::Part(p)),
        }
    }
}

impl Table {
    /// The arguments of the kernel Quadrants compiled as `quadrants_name`:
    /// by that compilation's own name (`k_c62_1`, how the table keys a
    /// compilation whose parameters are not its kernel's first one's), by
    /// its function's name (`k_c62`, how the table keys a second Python
    /// function of one name) or else by its Python name (`k`).
    pub fn kernel_args(&self, quadrants_name: &str) -> Option<&KernelArgs> {
        let by_compilation = self.kernels.get(quadrants_name);
        let by_function = || self.kernels.get(super::function_name(quadrants_name));
        by_compilation.or_else(by_function).or_else(|| self.kernels.get(super::python_name(quadrants_name)))
    }
}

impl Field {
    /// The axes a component adds to the field's own: none for a scalar
    /// field, `[n]` for an `n`-vector (`m` is 1) and `[n, m]` for a
    /// matrix: the trailing axes of the field's numpy value
    /// (`to_numpy()`), which are KIR's too.
    pub fn component_axes(&self) -> Vec<u64> {
        match self.element_shape.as_deref() {
            Some(&[n, 1]) => vec![n],
            Some(s) => s.to_vec(),
            None => Vec::new(),
        }
    }

    /// Which component (row-major) the place SNode `place` holds, if it
    /// is one of this field's.
    pub fn component_at(&self, place: u32) -> Option<usize> {
        match &self.components {
            Some(c) => c.iter().position(|&p| p == place),
            None => (place == self.place).then_some(0),
        }
    }
}

/// One argument.
#[derive(Debug, Deserialize)]
pub struct Arg {
    pub name: String,
    /// `scalar`, `ndarray` or `struct` (others are refused when the kernel
    /// uses them).
    pub kind: String,
    /// Absent for `other` (templates, structs: only their `repr`).
    #[serde(default)]
    pub dtype: String,
    #[serde(default)]
    pub shape: Vec<u64>,
    /// An ndarray of vectors or matrices: the element's shape (`[3]`,
    /// `[2, 2]`), the trailing axes of its numpy value.
    #[serde(default)]
    pub element_shape: Vec<u64>,
    /// A struct passed by value (`kind` `struct`): the dtype of each of
    /// its scalars, depth first (a vector member's components row-major),
    /// the order of `get_element`'s paths in Quadrants' struct type.
    #[serde(default)]
    pub members: Vec<String>,
}

/// Reads a table; a malformed one is an error at its line and column
/// (`span` over the table's text).
pub fn parse(text: &str) -> Result<Table, Diagnostic> {
    serde_json::from_str(text).map_err(|e| {
        let offset = offset_of(text, e.line(), e.column());
        let msg = e.to_string();
        // serde_json appends " at line L column C"; the location says it.
        let msg = match msg.rfind(" at line ") {
            Some(i) => msg[..i].to_string(),
            None => msg,
        };
        Diagnostic::error(format!("malformed field table: {msg}"), super::log::span(offset, offset))
    })
}

/// The byte offset of a 1-based line and column (serde_json's), clamped to
/// the text.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return start + column.saturating_sub(1).min(l.len());
        }
        start += l.len();
    }
    text.len()
}

/// KIR's scalar for a Quadrants dtype (`u1`, Quadrants' boolean, is `i1`);
/// `None` for those KIR lacks (quantised types).
pub fn scalar(dtype: &str) -> Option<Scalar> {
    match dtype {
        "u1" => Some(Scalar::I1),
        d => Scalar::from_keyword(d).filter(|t| *t != Scalar::I1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_form_with_an_extra_key() {
        let t = parse(
            r#"{"quadrants": "1.3.3", "capture": {"argv": []},
                "fields": [{"name": "x", "dtype": "f32", "shape": [4096], "place": 2, "ancestors": [1, 0], "extra": 1}],
                "kernels": {"saxpy": {"args": [{"name": "a", "kind": "scalar", "dtype": "f32"},
                                               {"name": "arr", "kind": "ndarray", "dtype": "f32", "shape": [16]},
                                               {"name": "t", "kind": "other", "repr": "template()"}],
                                      "returns": ["i64"]}}}"#,
        )
        .expect("parses");
        assert_eq!(t.fields[0].place, 2);
        assert_eq!(t.kernels["saxpy"].args[1].shape, vec![16]);
    }

    fn args_of(json: &str) -> KernelArgs {
        let t = parse(&format!(r#"{{"quadrants": "1.3.3", "kernels": {{"k": {json}}}}}"#)).expect("parses");
        t.kernels.into_values().next().expect("one kernel")
    }

    #[test]
    fn a_recorded_numbering_skips_templates_and_binds_ndarrays_by_name() {
        let k = args_of(
            r#"{"args": [{"name": "t", "kind": "other"}, {"name": "b", "kind": "scalar", "dtype": "i32"},
                         {"name": "a", "kind": "ndarray", "dtype": "f32", "shape": [4]},
                         {"name": "c", "kind": "scalar", "dtype": "i32"}],
                "params": [{"id": 0, "name": "b", "kind": "scalar", "arg": "b"},
                           {"id": 1, "name": "_a", "kind": "ndarray", "arg": "a"},
                           {"id": 2, "name": "c", "kind": "scalar", "arg": "c"},
                           {"id": 3, "name": "__qd_cfg__qd_dt", "kind": "scalar"}]}"#,
        );
        assert_eq!(k.slot(0), Ok(Slot::Arg(1)));
        assert_eq!(k.slot(1), Ok(Slot::Arg(2)));
        assert_eq!(k.slot(2), Ok(Slot::Arg(3)), "not the 'b' at index 2 of the signature");
        assert!(matches!(k.slot(3), Ok(Slot::Part(p)) if p.name == "__qd_cfg__qd_dt"));
        assert_eq!(k.slot(4), Ok(Slot::None));
    }

    #[test]
    fn without_a_numbering_only_plain_signatures_are_numbered_in_order() {
        let plain = args_of(
            r#"{"args": [{"name": "b", "kind": "scalar", "dtype": "i32"}, {"name": "a", "kind": "ndarray", "dtype": "f32"}]}"#,
        );
        assert_eq!(plain.slot(1), Ok(Slot::Arg(1)));
        assert_eq!(plain.slot(2), Ok(Slot::None));
        let templated =
            args_of(r#"{"args": [{"name": "t", "kind": "other"}, {"name": "b", "kind": "scalar", "dtype": "i32"}]}"#);
        let e = templated.slot(0).expect_err("unknown numbering");
        assert!(e.contains("argument 't' (other) may have shifted them"), "{e}");
    }

    #[test]
    fn a_compilation_of_its_own_is_found_by_its_whole_name_first() {
        let table = parse(
            r#"{"quadrants": "1.3.3", "fields": [], "kernels": {
                 "k": {"args": [{"name": "a", "kind": "scalar", "dtype": "f32"}]},
                 "k_c7": {"args": [{"name": "b", "kind": "scalar", "dtype": "f32"}]},
                 "k_c7_1": {"args": [{"name": "c", "kind": "scalar", "dtype": "f32"}]}}}"#,
        )
        .expect("parses");
        let first = |name: &str| table.kernel_args(name).map(|k| k.args[0].name.as_str());
        assert_eq!(first("k_c7_1"), Some("c"));
        assert_eq!(first("k_c7_0"), Some("b"), "the function's other compilations");
        assert_eq!(first("k_c8_0"), Some("a"), "another function of the name");
        assert_eq!(first("j_c8_0"), None);
    }

    #[test]
    fn a_malformed_table_is_located() {
        let text = "{\"quadrants\": \"1.3.3\",\n \"fields\": [{\"name\": 3}]}";
        let e = parse(text).expect_err("malformed");
        assert!(e.message.starts_with("malformed field table: invalid type"), "{}", e.message);
        let start = e.span.expect("located").start as usize;
        assert!(start > text.find('\n').expect("two lines"), "{start}");
    }

    #[test]
    fn dtypes() {
        assert_eq!(scalar("u1"), Some(Scalar::I1));
        assert_eq!(scalar("f64"), Some(Scalar::F64));
        assert_eq!(scalar("u8"), Some(Scalar::U8));
        assert_eq!(scalar("i1"), None, "Quadrants has no i1: its boolean is u1");
        assert_eq!(scalar("f16"), Some(Scalar::F16));
        assert_eq!(scalar("qi4"), None);
    }
}
