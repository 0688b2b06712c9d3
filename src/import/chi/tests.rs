//! Tests of the CHI dump parser.

use super::*;
use crate::import::log::scan;

fn parse(text: &str) -> Result<Vec<Task>, Error> {
    let text = format!("[I 1 2] [ir_printer.cpp:operator()@912] [k_c1_0] Start offload_to_executable:\n{text}");
    let log = scan(&text).expect("scans");
    let n = log.lines.len();
    // The test dumps are the rest of the text, `kernel {` ... `}`.
    parse_dump(&log.lines[2..n - 1])
}

#[test]
fn a_range_for_task_with_locations() {
    let text = "kernel {\n  $0 = offloaded range_for(0, tmp(offset=4B)) grid_dim=0 block_dim=32 \n  body {\n    <i32> $1 = loop $0 index 0\n    File \"/t/k.py\", line 12, in saxpy:\n        y[i] = a * x[i]\n          ^\n    <*f32> $2 = global ptr [S2place<f32>], index [$1] activate=false\n    <f32> $3 = global load $2\n    $4 : global store [$2 <- $3]\n  }\n}\n";
    let tasks = parse(text).expect("parses");
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].kind, TaskKind::RangeFor { begin: Bound::Const(0), end: Bound::Tmp(4), block_dim: 32 });
    let b = &tasks[0].body;
    assert_eq!(b[0].kind, Kind::LoopIndex { lp: 0, index: 0 });
    assert_eq!(b[0].loc.as_ref().map(|l| l.to_string()).as_deref(), Some("/t/k.py:12:11"));
    assert_eq!(b[1].kind, Kind::GlobalPtr { place: 2, indices: vec![1] });
    assert_eq!(b[1].ty, Some(Ty::Ptr("f32".into())));
    assert_eq!(b[3].kind, Kind::GlobalStore { dest: 2, val: 3 });
}

#[test]
fn control_flow() {
    let text = "kernel {\n  $0 = offloaded  \n  body {\n    $1 : while true {\n      <i32> $2 = const 0\n      $3 : if $2 {\n        $4 : while control nullptr, $2\n      } else {\n        $5 continue (scope=$1)\n      }\n    }\n  }\n}\n";
    let tasks = parse(text).expect("parses");
    let Kind::While(body) = &tasks[0].body[0].kind else { panic!("a while") };
    let Kind::If { then, els: Some(els), .. } = &body[1].kind else { panic!("an if/else") };
    assert_eq!(then[0].kind, Kind::WhileControl { cond: 2 });
    assert_eq!(els[0].kind, Kind::Continue { scope: Some(1) });
}

#[test]
fn asserts_with_their_values_and_a_message_over_several_lines() {
    let text = "kernel {\n  $0 = offloaded  \n  body {\n    <u1> $1 = const true\n    \
        7 : assert $1, \"k must be positive\"\n    File \"/t/k.py\", line 3, in k:\n        assert k > 0\n        ^^^^^^\n    \
        8 : assert $1, \"index (%d, %d)\nFile \"/t/k.py\", line 4, in k:\n        x[i] = 1\n        ^^^^\n\", $1, $1\n  }\n}\n";
    let tasks = parse(text).expect("parses");
    let b = &tasks[0].body;
    assert_eq!(b[1].kind, Kind::Assert { cond: 1, message: "k must be positive".into(), args: vec![] });
    assert_eq!(b[1].loc.as_ref().map(|l| l.to_string()).as_deref(), Some("/t/k.py:3:9"));
    let message = "index (%d, %d)\nFile \"/t/k.py\", line 4, in k:\n        x[i] = 1\n        ^^^^\n".to_string();
    assert_eq!(b[2].kind, Kind::Assert { cond: 1, message, args: vec![1, 1] });
    // A message that never closes is an error, not the rest of the log.
    let open = "kernel {\n  $0 = offloaded  \n  body {\n    7 : assert $1, \"never closed\n  }\n}\n";
    assert!(matches!(parse(open), Err(Error::Syntax { .. })));
}

#[test]
fn a_print_keeps_its_pieces_unquoted() {
    let text = "kernel {\n  $0 = offloaded  \n  body {\n    print \"x =\\t\\\"\", $1, \" \", $2, \"!\\n\"\n  }\n}\n";
    let tasks = parse(text).unwrap();
    let b = &tasks[0].body;
    let pieces = vec![
        Piece::Str("x =\t\"".into()),
        Piece::Value(1),
        Piece::Str(" ".into()),
        Piece::Value(2),
        Piece::Str("!\n".into()),
    ];
    assert_eq!(b[0].kind, Kind::Print(pieces));
    assert_eq!(b[0].id, NO_ID);
}

#[test]
fn refusals_name_the_statement() {
    for (line, name) in [
        ("    <f32> $2 = stack alloc (max_size=5)", "stack alloc"),
        (
            "    <*struct[none]{0(x, at 0B): f32}> $2 = global ptr [S4place<f32>], index [$1] activate=true",
            "type <*struct[none]{0(x, at 0B): f32}>",
        ),
    ] {
        let text = format!("kernel {{\n  $0 = offloaded  \n  body {{\n{line}\n    File \"/t/k.py\", line 3, in k:\n        print(x)\n        ^^^^^\n  }}\n}}\n");
        match parse(&text) {
            Err(Error::Refused { refusal, loc, near: false, .. }) => {
                assert_eq!(refusal.name, name);
                assert_eq!(loc.map(|l| l.to_string()).as_deref(), Some("/t/k.py:3:9"));
            }
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn sparse_tasks_are_refused() {
    let text = "kernel {\n  $0 = offloaded listgen S0root->S3pointer gdw_level=-1\n}\n";
    assert!(matches!(parse(text), Err(Error::Refused { refusal, .. }) if refusal.name == "offloaded listgen"));
    let text = "kernel {\n  $0 = offloaded struct_for(S3pointer) grid_dim=0 block_dim=4 bls=none \n  body {\n  }\n}\n";
    assert!(matches!(parse(text), Err(Error::Refused { refusal, .. }) if refusal.name == "sparse SNode (pointer)"));
}

#[test]
fn meshes_and_other_statements_are_refused_by_name() {
    let text = "kernel {\n  $0 = offloaded mesh_for(Vertex -> Unknown) num_patches=4 grid_dim=0 block_dim=32 bls=none \n  body {\n  }\n}\n";
    assert!(matches!(parse(text), Err(Error::Refused { refusal, .. }) if refusal.name == "mesh_for"));
    for (line, name) in [
        ("    <i32> $2 = mesh patch idx", "mesh patch idx"),
        ("    <f32> $2 = asin $1", "asin"),
        ("    <i32> $2 = atomic cas($1, $1, $1)", "atomic cas"),
        ("    $2 = internal call test(args=[$1])", "internal call test"),
        ("    <*f32> $2 = alloca(shared)", "alloca(shared)"),
    ] {
        let text = format!("kernel {{\n  $0 = offloaded  \n  body {{\n    <f32> $1 = const 1\n{line}\n  }}\n}}\n");
        match parse(&text) {
            // `asin` parses (and is KIR's `asin`).
            Ok(t) if name == "asin" => assert_eq!(t[0].body[1].kind, Kind::Unary { op: "asin".into(), a: 1 }),
            Err(Error::Refused { refusal, .. }) => assert_eq!(refusal.name, name, "{line}"),
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn rand_parses_with_its_type() {
    let text = "kernel {\n  $0 = offloaded  \n  body {\n    <f64> $1 = rand()\n    <u32> $2 = rand()\n  }\n}\n";
    let tasks = parse(text).expect("parses");
    assert_eq!(tasks[0].body[0].kind, Kind::Rand);
    assert_eq!(tasks[0].body[0].ty, Some(Ty::Prim("f64".into())));
    assert_eq!(tasks[0].body[1].kind, Kind::Rand);
}

#[test]
fn garbage_is_a_syntax_error() {
    let text = "kernel {\n  $0 = offloaded  \n  body {\n    $1 = = ?\n  }\n}\n";
    assert!(matches!(parse(text), Err(Error::Syntax { .. })));
    let text = "kernel {\n  $0 : for @tmp0 in range(0, 4) block_dim=adaptive {\n  }\n}\n";
    assert!(matches!(parse(text), Err(Error::Syntax { message, .. }) if message.contains("task form")));
}

#[test]
fn struct_types_give_their_leaves_depth_first() {
    let t = "*struct[none]{0(x, at 0B): f32, 1(v, at 4B): struct[none]{0(v_0, at 0B): f32, 1(v_1, at 4B): i32}, 2(n, at 12B): i64}";
    let leaves = super::struct_leaves(t).unwrap();
    let want: Vec<(Vec<u32>, String)> =
        vec![(vec![0], "f32".into()), (vec![1, 0], "f32".into()), (vec![1, 1], "i32".into()), (vec![2], "i64".into())];
    assert_eq!(leaves, want);
    assert_eq!(super::struct_leaves("*struct[none]{}"), Some(vec![]));
    for bad in [
        "f32",
        "*struct[none]{0(x, at 0B): f32",
        "struct[none]{0(x, at 0B): f32 1(y, at 4B): f32}",
        "struct[none]{0(x, at 0B): [Tensor (3) f32]}",
    ] {
        assert_eq!(super::struct_leaves(bad), None, "{bad}");
    }
}

#[test]
fn vectors_and_matrices_parse() {
    let lines = [
        "    <[Tensor (3) f32]> $2 = [$1, $1, $1]",
        "    <*[Tensor (2, 2) f32]> $3 = alloca",
        "    <*f32> $4 = shift ptr [$3 + $1]",
        "    <*[Tensor (3) f32]> $5 = external_ptr $1, [$1], (3) layout=AOS is_grad=false",
        "    <[Tensor (3) i32]> $6 = cast_value<[Tensor (3) i32]> $2",
        "    <f32> $7 = get_element($1, 1, 0)",
        "    <i32> $8 = reinterpret_cast_bits<i32> $1",
    ];
    let text =
        format!("kernel {{\n  $0 = offloaded  \n  body {{\n    <f32> $1 = const 1\n{}\n  }}\n}}\n", lines.join("\n"));
    let t = parse(&text).unwrap();
    let body = &t[0].body;
    assert_eq!(body[1].kind, Kind::MatrixInit(vec![1, 1, 1]));
    assert_eq!(body[1].ty, Some(Ty::Tensor { shape: vec![3], prim: "f32".into(), ptr: false }));
    assert_eq!(body[2].ty, Some(Ty::Tensor { shape: vec![2, 2], prim: "f32".into(), ptr: true }));
    assert_eq!(body[3].kind, Kind::ShiftPtr { base: 3, offset: 1 });
    assert_eq!(body[4].kind, Kind::ExternalPtr { base: 1, indices: vec![1], element_shape: vec![3] });
    assert_eq!(body[5].kind, Kind::Cast { to: "i32".into(), a: 2 });
    assert_eq!(body[6].kind, Kind::GetElement { base: 1, path: vec![1, 0] });
    assert_eq!(body[7].kind, Kind::BitCast { to: "i32".into(), a: 1 });
}

/// A real function's dump: statements at the top level (no offloaded
/// task), its calls (`call "F", args = {...}`, typed by the struct of its
/// results), `get_element` of a call, `return tmpN`, and a `while control`
/// whose mask is an `alloca` (read as the condition alone: Quadrants' LLVM
/// code generator ignores the mask).
#[test]
fn a_real_function_body_parses() {
    let body = parse_fn("kernel {\n  <i32> $0 = argload[0]\n  <*i32> $1 = alloca\n  $2 : while true {\n    $3 : while control $1, $0\n  }\n  <*struct[e-m:e-S128]{0(ret_0, at 0B): i32}> $4 = call \"g_145_0\", args = {$0, $0}\n  <i32> $5 = get_element($4, 0)\n  <*struct[e-m:e-S128]{}> $6 = call \"h_146_0\", args = {}\n  $7 : return tmp5\n}\n")
        .expect("parses");
    assert_eq!(body[0].kind, Kind::ArgLoad(0));
    let Kind::While(inner) = &body[2].kind else { panic!("{:?}", body[2]) };
    assert_eq!(inner[0].kind, Kind::WhileControl { cond: 0 });
    assert_eq!(body[3].kind, Kind::Call { func: "g_145_0".into(), args: vec![0, 0] });
    assert!(matches!(&body[3].ty, Some(Ty::Other(t)) if struct_leaves(t) == Some(vec![(vec![0], "i32".to_string())])));
    assert_eq!(body[4].kind, Kind::GetElement { base: 4, path: vec![0] });
    assert_eq!(body[5].kind, Kind::Call { func: "h_146_0".into(), args: vec![] });
    assert!(matches!(&body[5].ty, Some(Ty::Other(t)) if struct_leaves(t) == Some(Vec::new())));
    assert_eq!(body[6].kind, Kind::Return(vec![5]));
    // A stray closing brace is an error, not the end of the body.
    let e =
        parse_fn("kernel {\n  <i32> $0 = argload[0]\n  }\n  <i32> $1 = argload[0]\n}\n").expect_err("a stray brace");
    assert!(matches!(e, Error::Syntax { ref message, .. } if message.contains("closes no block")), "{e:?}");
}

fn parse_fn(text: &str) -> Result<Vec<Stmt>, Error> {
    let text = format!("[I 1 2] [ir_printer.cpp:operator()@912] [g_145_0] Initial IR:\n{text}");
    let log = scan(&text).expect("scans");
    let n = log.lines.len();
    parse_function(&log.lines[2..n - 1])
}
