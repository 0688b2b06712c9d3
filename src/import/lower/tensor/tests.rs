//! Vectors, matrices and structs through the whole import (log and table
//! in, verified KIR out), and their bad inputs.

use crate::import::{import, ImportError, DEFAULT_STAGE};

const HEAD: &str =
    "[I 12/01/26 23:28:20.309 6361] [ir_printer.cpp:operator()@912] [k_c1_0] Start offload_to_executable:\n";

/// A table with a vec3 field `v` of 8 cells (places 4, 5, 6; `stride` its
/// dynamic_index_stride) and a scalar field `x`, and kernel `k`'s `args`.
fn table(stride: &str, element: &str, args: &str) -> String {
    format!(
        r#"{{"quadrants": "1.3.3",
  "fields": [{{"name": "v", "dtype": "f32", "shape": [8], "place": 4, "ancestors": [3, 0], "kind": "matrix",
              "element_shape": {element}, "components": [4, 5, 6]{stride}}},
             {{"name": "x", "dtype": "f32", "shape": [8], "place": 2, "ancestors": [1, 0], "kind": "scalar"}}],
  "kernels": {{"k": {{"args": [{args}], "params": [{{"id": 0, "name": "p", "kind": "scalar", "arg": "p"}}]}}}}}}"#
    )
}

fn body(lines: &[&str]) -> String {
    format!(
        "{HEAD}kernel {{\n  $0 = offloaded range_for(0, 8) grid_dim=0 block_dim=32 \n  body {{\n    <i32> $1 = loop $0 index 0\n{}\n  }}\n}}\n",
        lines.iter().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
    )
}

fn run(log: &str, table: &str) -> Result<String, String> {
    match import(log, table, DEFAULT_STAGE) {
        Ok(i) => {
            let text = i.stream.to_string();
            let read = crate::parser::parse(&text).expect("the text printed parses");
            assert!(read.same_as(&i.stream), "the text printed reads back as other IR:\n{text}");
            Ok(text)
        }
        Err(ImportError::Log(d)) => Err(d.message),
        Err(e) => Err(format!("{e:?}")),
    }
}

const WHOLE: [&str; 6] = [
    "<*[Tensor (3) f32]> $2 = global ptr [S4place<f32>], index [$1] activate=false",
    "<[Tensor (3) f32]> $3 = global load $2",
    "<f32> $4 = const 2",
    "<[Tensor (3) f32]> $5 = [$4, $4, $4]",
    "<[Tensor (3) f32]> $6 = mul $3 $5",
    "$7 : global store [$2 <- $6]",
];

#[test]
fn a_vector_field_is_a_field_with_its_components_last() {
    let kir = run(&body(&WHOLE), &table(r#", "dynamic_index_stride": 4"#, "[3, 1]", "")).unwrap();
    assert!(kir.contains("field @v : f32[8, 3]"), "{kir}");
    // Three loads, three products, three stores.
    assert_eq!(kir.matches("= load @v[%i.0, ").count(), 3, "{kir}");
    assert_eq!(kir.matches(" = mul %v.3.").count(), 3, "{kir}");
    assert_eq!(kir.matches("store @v[%i.0, ").count(), 3, "{kir}");
}

#[test]
fn a_component_by_bytes_needs_the_stride() {
    let lines = [
        "<*f32> $2 = global ptr [S4place<f32>], index [$1] activate=false",
        "<i32> $3 = argload[0]",
        "<*f32> $4 = shift ptr [$2 + $3]",
        "<f32> $5 = global load $4",
    ];
    let args = r#"{"name": "p", "kind": "scalar", "dtype": "i32"}"#;
    let kir = run(&body(&lines), &table(r#", "dynamic_index_stride": 4"#, "[3, 1]", args)).unwrap();
    assert!(kir.contains("= div %p, "), "{kir}");
    let e = run(&body(&lines), &table("", "[3, 1]", args)).unwrap_err();
    assert!(e.contains("no dynamic_index_stride"), "{e}");
    // A stride no i32 index can hold is an error at the shift, not a
    // constant wrapped to another stride.
    let e = run(&body(&lines), &table(r#", "dynamic_index_stride": 4294967300"#, "[3, 1]", args)).unwrap_err();
    assert!(e.contains("a component index or stride of 4294967300, over KIR's i32 indices"), "{e}");
    // The place of a later component names the field too (component 2):
    // a constant shift of 4 bytes from it is past the vector's end.
    let lines = [
        "<*f32> $2 = global ptr [S6place<f32>], index [$1] activate=false",
        "<i32> $3 = const 4",
        "<*f32> $4 = shift ptr [$2 + $3]",
    ];
    let e = run(&body(&lines), &table(r#", "dynamic_index_stride": 4"#, "[3, 1]", args)).unwrap_err();
    assert!(e.contains("a shift of 4 bytes in field @v"), "{e}");
}

#[test]
fn bad_tensors_are_errors_at_their_line() {
    let t = table(r#", "dynamic_index_stride": 4"#, "[3, 1]", "");
    for (lines, said) in [
        (
            vec![WHOLE[0], "<i32> $3 = const 3", "<*f32> $4 = shift ptr [$2 + $3]"],
            "component 3 of a tensor of 3 components",
        ),
        (
            vec!["<*[Tensor (3) f32]> $2 = global ptr [S2place<f32>], index [$1] activate=false"],
            "a pointer to a (3) tensor into field @x, whose elements are scalars",
        ),
        (
            vec!["<*[Tensor (2) f32]> $2 = global ptr [S4place<f32>], index [$1] activate=false"],
            "a pointer to a (2) tensor",
        ),
        (
            vec![WHOLE[0], WHOLE[1], WHOLE[2], "<[Tensor (2) f32]> $5 = [$4, $4]", "<[Tensor (3) f32]> $6 = add $3 $5"],
            "tensors of [3, 2] components",
        ),
        (vec![WHOLE[0], WHOLE[2], "<[Tensor (2) f32]> $5 = [$4, $4]", "$6 : global store [$2 <- $5]"], "another shape"),
    ] {
        let e = run(&body(&lines), &t).unwrap_err();
        assert!(e.contains(said), "{lines:?}: {e}");
    }
    let e = run(&body(&WHOLE), &table("", "[0, 1]", "")).unwrap_err();
    assert!(e.contains("element shape"), "{e}");
}

#[test]
fn a_struct_argument_is_a_parameter_per_scalar() {
    let lines = [
        "<*struct[none]{0(a, at 0B): f32, 1(b, at 4B): struct[none]{0(b_0, at 0B): f32, 1(b_1, at 4B): f32}}> $2 = argaddr[0]",
        "<f32> $3 = get_element($2, 1, 1)",
        "<*f32> $4 = global ptr [S2place<f32>], index [$1] activate=false",
        "$5 : global store [$4 <- $3]",
    ];
    let args = r#"{"name": "p", "kind": "struct", "members": ["f32", "f32", "f32"]}"#;
    let kir = run(&body(&lines), &table("", "[3, 1]", args)).unwrap();
    assert!(kir.contains("kernel @k(%p.0: f32, %p.1: f32, %p.2: f32)"), "{kir}");
    assert!(kir.contains("store @x[%i.0], %p.2"), "{kir}");
    let args = r#"{"name": "p", "kind": "struct", "members": ["f32", "f32"]}"#;
    let e = run(&body(&lines), &table("", "[3, 1]", args)).unwrap_err();
    assert!(e.contains("in the field table but"), "{e}");
    let args = r#"{"name": "p", "kind": "struct", "members": ["f32", "qi4", "f32"]}"#;
    let e = run(&body(&lines), &table("", "[3, 1]", args)).unwrap_err();
    assert!(e.contains("struct argument 'p' with a member of type qi4"), "{e}");
}

/// A table whose kernel `k` takes `m`, an ndarray of 4 elements of 3x3
/// matrices (`entry`: its shape and element shape as the table gives them).
fn matrix_nd_table(entry: &str) -> String {
    format!(
        r#"{{"quadrants": "1.3.3", "fields": [],
  "kernels": {{"k": {{"args": [{{"name": "m", "kind": "ndarray", "dtype": "f32", {entry}}}],
                    "params": [{{"id": 0, "name": "_m", "kind": "ndarray", "arg": "m"}}]}}}}}}"#
    )
}

/// Component 4 (row 1, column 1) of element `$1` of ndarray 0, addressed
/// as Quadrants addresses a matrix element's component: flattened, `(9)`.
const FLAT: [&str; 3] = [
    "<*struct[none]{0(shape, at 0B): struct[none]{0(dim_0, at 0B): i32}, 1(data_ptr, at 0B): *f32}> $2 = argaddr[0]",
    "<i32> $3 = const 4",
    "<*f32> $4 = external_ptr $2, [$1, $3], (9) layout=AOS is_grad=false",
];

#[test]
fn a_matrix_ndarrays_flattened_component_is_its_row_and_column() {
    let lines = [FLAT[0], FLAT[1], FLAT[2], "<f32> $5 = global load $4", "$6 : global store [$4 <- $5]"];
    for entry in [r#""shape": [4], "element_shape": [3, 3]"#, r#""shape": [4, 3, 3]"#] {
        let kir = run(&body(&lines), &matrix_nd_table(entry)).unwrap();
        assert!(kir.contains("field @k.m : f32[4, 3, 3]"), "{entry}: {kir}");
        // Component 4 is 4 / 3 and 4 % 3 of the element's axes.
        assert!(kir.contains(" = div %") && kir.contains(" = rem %"), "{entry}: {kir}");
        assert_eq!(kir.matches("= load @k.m[%i.0, %").count(), 1, "{entry}: {kir}");
    }
    // Nine components are not a 2x2 matrix's; an array whose last axis is
    // the nine is indexed as it is, not split.
    let e = run(&body(&lines), &matrix_nd_table(r#""shape": [4], "element_shape": [2, 2]"#)).unwrap_err();
    assert!(e.contains("does not end in the log's elements (9)"), "{e}");
    let kir = run(&body(&lines), &matrix_nd_table(r#""shape": [4, 9]"#)).unwrap();
    assert!(kir.contains("field @k.m : f32[4, 9]") && kir.contains("= load @k.m[%i.0, %3]"), "{kir}");
    assert!(!kir.contains(" = div %"), "{kir}");
}
