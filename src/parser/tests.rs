//! Parser unit tests: every statement and item form, type inference, name
//! resolution, literals, and errors (message and span).

use super::parse;
use crate::ir::*;

fn one(text: &str) -> Module {
    let mut s = parse(text).unwrap_or_else(|ds| panic!("{ds}\n{text}"));
    assert_eq!(s.modules.len(), 1);
    s.modules.remove(0)
}

/// The single kernel's body.
fn kbody(stmts: &str) -> Body {
    let text = format!(
        "field @x : f32[16]\nfield @g : i32[4, 4]\nfield @t : f64\n\
         func @f(%a: f32) -> f32 {{\n  ret %a\n}}\nfunc @g0() {{\n  ret\n}}\n\
         kernel @k(%a: f32, %b: f32, %i: i32, %c: i1) {{\n{stmts}\n}}\n"
    );
    let m = one(&text);
    match m.items.into_iter().last() {
        Some(Item::Kernel(k)) => k.body,
        other => panic!("expected a kernel, got {other:?}"),
    }
}

/// The kind and result type of the last statement of the entry block.
fn last(stmts: &str) -> (StmtKind, Option<Type>) {
    let b = kbody(stmts);
    let s = *b.block(b.entry).last().expect("a statement");
    let d = b.stmt(s);
    (d.kind.clone(), d.result.map(|v| b.ty(v)))
}

/// The first error's message and the text its span covers.
fn err(text: &str) -> (String, String) {
    let ds = parse(text).expect_err("should not parse");
    let d = &ds.0[0];
    let span = d.span.expect("a span");
    (d.message.clone(), text[span.range()].to_string())
}

const F32: Option<Type> = Some(Type::Scalar(Scalar::F32));
const I1: Option<Type> = Some(Type::Scalar(Scalar::I1));
const I32: Option<Type> = Some(Type::Scalar(Scalar::I32));

#[test]
fn constants_of_every_type() {
    let cases: &[(&str, Const)] = &[
        ("const 3 : i32", Const::i32(3)),
        ("const -7 : i64", Const::i64(-7)),
        ("const 0x2a : i32", Const::i32(42)),
        ("const 0xffffffff : i32", Const::i32(-1)),
        ("const -0x80000000 : i32", Const::i32(i32::MIN)),
        ("const true : i1", Const::bool(true)),
        ("const 0 : i1", Const::bool(false)),
        ("const 1.5 : f32", Const::f32(1.5)),
        ("const 3 : f64", Const::f64(3.0)),
        ("const 1e20 : f32", Const::f32(1e20)),
        ("const -2.5e-3 : f64", Const::f64(-2.5e-3)),
        ("const inf : f32", Const::f32(f32::INFINITY)),
        ("const -inf : f64", Const::f64(f64::NEG_INFINITY)),
        ("const nan : f32", Const::f32(f32::NAN)),
        ("const 0x7fc00001 : f32", Const { ty: Scalar::F32, bits: 0x7fc0_0001 }),
        ("const 0x8000000000000000 : f64", Const::f64(-0.0)),
        ("const 0.1 : f32", Const::f32(0.1)),
    ];
    for (text, want) in cases {
        let (k, ty) = last(&format!("%r = {text}"));
        assert_eq!(k, StmtKind::Const(*want), "{text}");
        assert_eq!(ty, Some(Type::Scalar(want.ty)), "{text}");
    }
}

#[test]
fn f32_literals_are_not_double_rounded() {
    // 1 + 2^-24 + 2^-60: through f64 this rounds to 1 + 2^-24, a tie that
    // then rounds to 1.0 in f32; read directly it is above the tie.
    let (k, _) = last("%r = const 1.00000005960464477550 : f32");
    assert_eq!(k, StmtKind::Const(Const::f32(1.000_000_1)));
}

#[test]
fn f16_literals_are_not_double_rounded() {
    let h = |text: &str| match last(&format!("%r = const {text} : f16")).0 {
        StmtKind::Const(c) => c.bits,
        k => panic!("{k:?}"),
    };
    // 1 + 2^-11 is halfway between 1.0 (0x3c00) and 1 + 2^-10 (0x3c01),
    // and so is the f64 nearest each of the longer literals: their own
    // digits decide, where rounding the f64 would give 1.0 for all three.
    assert_eq!(h("1.00048828125"), 0x3c00, "a tie goes to even");
    assert_eq!(h("1.000488281250000000000001"), 0x3c01);
    assert_eq!(h("-1.000488281250000000000001"), 0xbc01);
    assert_eq!(h("1.000488281249999999999999"), 0x3c00);
    assert_eq!(h("100048828125000000000001e-23"), 0x3c01);
    assert_eq!(h("1.00146484375"), 0x3c02, "1 + 3 * 2^-11: a tie goes to even");
    assert_eq!(h("1.001464843749999999999999"), 0x3c01);
    // Halfway between 65504 and 2^16: below it is the greatest f16.
    assert_eq!(h("65519.99999999999999999"), 0x7bff);
    assert_eq!(h("2.98023223876953125e-8"), 0x0000, "half the least subnormal: a tie goes to even");
    assert_eq!(h("2.980232238769531250001e-8"), 0x0001);
    assert_eq!((h("0.1"), h("65504"), h("-0.0"), h("6e-8")), (0x2e66, 0x7bff, 0x8000, 0x0001));
    assert_eq!(err("kernel @k() {\n  %r = const 65520 : f16\n}\n").0, "literal `65520` is out of range for f16");
}

#[test]
fn operations_and_their_result_types() {
    let (k, ty) = last("%r = add %a, %b");
    assert!(matches!(k, StmtKind::Binary(BinOp::Add, a, b) if (a, b) == (v(0), v(1))));
    assert_eq!(ty, F32);
    assert!(matches!(last("%r = atan2 %a, %b").0, StmtKind::Binary(BinOp::Atan2, _, _)));
    assert!(matches!(last("%r = ushr %i, %i").0, StmtKind::Binary(BinOp::Ushr, _, _)));
    let (k, ty) = last("%r = sqrt %a");
    assert!(matches!(k, StmtKind::Unary(UnOp::Sqrt, a) if a == v(0)));
    assert_eq!(ty, F32);
    let (k, ty) = last("%r = cmp le %a, %b");
    assert!(matches!(k, StmtKind::Cmp(CmpOp::Le, _, _)));
    assert_eq!(ty, I1);
    let (k, ty) = last("%r = cast %i to f64");
    assert!(matches!(k, StmtKind::Cast(a, Scalar::F64) if a == v(2)));
    assert_eq!(ty, Some(Type::Scalar(Scalar::F64)));
    let (k, ty) = last("%r = select %c, %a, %b");
    assert!(matches!(k, StmtKind::Select(c, a, b) if (c, a, b) == (v(3), v(0), v(1))));
    assert_eq!(ty, F32);
}

#[test]
fn fields_loads_stores_atomics() {
    let (k, ty) = last("%r = load @g[%i, %i]");
    match k {
        StmtKind::Load(r) => {
            assert_eq!(r.field, "g");
            assert_eq!(r.indices, vec![v(2), v(2)]);
        }
        k => panic!("{k:?}"),
    }
    assert_eq!(ty, I32);
    assert_eq!(last("%r = load @t[]").1, Some(Type::Scalar(Scalar::F64)));
    assert!(matches!(last("store @x[%i], %a").0, StmtKind::Store(_, a) if a == v(0)));
    let (k, ty) = last("%o = atomic max @g[%i, %i], %i");
    assert!(matches!(k, StmtKind::Atomic(AtomicOp::Max, _, a) if a == v(2)));
    assert_eq!(ty, I32);
    let (k, ty) = last("atomic add @x[%i], %a");
    assert!(matches!(k, StmtKind::Atomic(AtomicOp::Add, _, _)));
    assert_eq!(ty, None);
}

#[test]
fn slots() {
    let b = kbody("%p = alloca i64\n%z = const 5 : i64\nstore %p, %z\n%w = load %p");
    let stmts = b.block(b.entry);
    assert_eq!(b.stmt(stmts[0]).kind, StmtKind::Alloca(Scalar::I64));
    assert_eq!(b.ty(b.stmt(stmts[0]).result.unwrap()), Type::Slot(Scalar::I64));
    assert!(matches!(b.stmt(stmts[2]).kind, StmtKind::StoreSlot(_, _)));
    assert_eq!(b.ty(b.stmt(stmts[3]).result.unwrap()), Type::Scalar(Scalar::I64));
}

#[test]
fn calls_and_returns() {
    let (k, ty) = last("%r = call @f(%a)");
    assert!(matches!(k, StmtKind::Call(ref n, ref args, _) if n == "f" && args == &[v(0)]));
    assert_eq!(ty, F32);
    let (k, ty) = last("call @g0()");
    assert!(matches!(k, StmtKind::Call(ref n, ref args, _) if n == "g0" && args.is_empty()));
    assert_eq!(ty, None);
    assert_eq!(last("ret").0, StmtKind::Ret(None));
    assert_eq!(last("ret %a").0, StmtKind::Ret(Some(v(0))));
    // `ret` then `%x = ...` is a bare `ret` followed by a statement.
    let b = kbody("ret\n%x = const 1 : i32");
    let stmts = b.block(b.entry);
    assert_eq!(b.stmt(stmts[0]).kind, StmtKind::Ret(None));
    assert!(matches!(b.stmt(stmts[1]).kind, StmtKind::Const(_)));
}

#[test]
fn control_flow_and_scopes() {
    let b = kbody(
        "if %c {\n  %t = add %a, %b\n} else {\n  %e = sub %a, %b\n}\n\
         for %j in 0 .. %i {\n  %u = add %j, %j\n  break\n}\n\
         while {\n  continue\n}\n\
         for %q : i64 in -1 .. 0x10 {\n}",
    );
    let stmts = b.block(b.entry).to_vec();
    match &b.stmt(stmts[0]).kind {
        StmtKind::If { cond, then_blk, else_blk: Some(e) } => {
            assert_eq!(*cond, v(3));
            assert_eq!(b.block(*then_blk).len(), 1);
            assert_eq!(b.block(*e).len(), 1);
        }
        k => panic!("{k:?}"),
    }
    match &b.stmt(stmts[1]).kind {
        StmtKind::For { var, lo: Bound::Const(0), hi: Bound::Value(hi), body, serial: false } if *hi == v(2) => {
            assert_eq!(b.value(*var).def, ValueDef::LoopVar(stmts[1], 0));
            assert_eq!(b.ty(*var), Type::Scalar(Scalar::I32));
            assert_eq!(b.stmt(b.block(*body)[1]).kind, StmtKind::Break);
        }
        k => panic!("{k:?}"),
    }
    assert!(matches!(b.stmt(stmts[2]).kind, StmtKind::While { .. }));
    match &b.stmt(stmts[3]).kind {
        StmtKind::For { var, lo: Bound::Const(-1), hi: Bound::Const(16), .. } => {
            assert_eq!(b.ty(*var), Type::Scalar(Scalar::I64))
        }
        k => panic!("{k:?}"),
    }
    // An `if` without `else` has no else block.
    assert!(matches!(last("if %c {\n}").0, StmtKind::If { else_blk: None, .. }));
}

#[test]
fn loop_variable_takes_a_value_bounds_type() {
    let b = kbody("%n = const 10 : i64\nfor %j in 0 .. %n {\n}");
    let s = b.block(b.entry)[1];
    let StmtKind::For { var, .. } = b.stmt(s).kind else { panic!() };
    assert_eq!(b.ty(var), Type::Scalar(Scalar::I64));
}

#[test]
fn undefined_and_forward_names() {
    // Never defined: an Undefined value per use, with the use's span.
    let text = "kernel @k() {\n  %x = add %nope, %nope\n}\n";
    let m = one(text);
    let Item::Kernel(k) = &m.items[0] else { panic!() };
    let undef: Vec<&ValueData> = k.body.values().iter().filter(|v| v.def == ValueDef::Undefined).collect();
    assert_eq!(undef.len(), 2);
    assert_eq!(&text[undef[1].span.range()], "%nope");
    assert_eq!((undef[0].span.start, undef[1].span.start), (25, 32));

    // Defined later: the use resolves to the later definition, and no
    // placeholder is left behind.
    let m = one("kernel @k() {\n  %y = add %x, %x\n  %x = const 1 : i32\n}\n");
    let Item::Kernel(k) = &m.items[0] else { panic!() };
    assert!(k.body.values().iter().all(|v| v.def != ValueDef::Undefined));
    let stmts = k.body.block(k.body.entry);
    let x = k.body.stmt(stmts[1]).result.unwrap();
    assert_eq!(k.body.stmt(stmts[0]).kind, StmtKind::Binary(BinOp::Add, x, x));
    assert_eq!(k.body.name(x), "x");

    // Out of scope: a loop variable is not visible after its loop.
    let m = one("kernel @k() {\n  for %i in 0 .. 4 {\n  }\n  %y = add %i, %i\n}\n");
    let Item::Kernel(k) = &m.items[0] else { panic!() };
    let y = k.body.block(k.body.entry)[1];
    let StmtKind::Binary(_, a, _) = k.body.stmt(y).kind else { panic!() };
    assert_eq!(k.body.value(a).def, ValueDef::Undefined);
}

#[test]
fn unknown_items_keep_their_names() {
    let (k, ty) = last("%r = load @nowhere[%i]");
    assert!(matches!(k, StmtKind::Load(ref r) if r.field == "nowhere"));
    assert_eq!(ty, I32);
    let (k, _) = last("%r = call @nothing(%a)");
    assert!(matches!(k, StmtKind::Call(ref n, _, _) if n == "nothing"));
}

#[test]
fn items_may_be_used_before_they_are_declared() {
    let m = one("kernel @k() {\n  %v = load @late[]\n  %r = call @h(%v)\n}\nfunc @h(%x: i64) -> f64 {\n  %c = cast %x to f64\n  ret %c\n}\nfield @late : i64\n");
    let Item::Kernel(k) = &m.items[0] else { panic!() };
    let tys: Vec<Type> = k.body.values().iter().map(|v| v.ty).collect();
    assert_eq!(tys, vec![Type::Scalar(Scalar::I64), Type::Scalar(Scalar::F64)]);
}

#[test]
fn items_and_defaults() {
    let m =
        one("field @s : i1\nfield @m : f64[2, 3, 4]\nkernel @k(%n: i32 = 1024, %a: f32 = -0.5, %b: i1 = true) {\n}\n");
    let Item::Field(s) = &m.items[0] else { panic!() };
    assert!(s.shape.is_empty() && s.elem == Scalar::I1);
    let Item::Field(f) = &m.items[1] else { panic!() };
    assert_eq!(f.shape, vec![2, 3, 4]);
    let Item::Kernel(k) = &m.items[2] else { panic!() };
    let defaults: Vec<Option<Const>> = k.params.iter().map(|p| p.default).collect();
    assert_eq!(defaults, vec![Some(Const::i32(1024)), Some(Const::f32(-0.5)), Some(Const::bool(true))]);
}

#[test]
fn tasks_in_a_kernel() {
    let m = one(
        "field @grid : f32[8, 8]\nfield @n : i32\nkernel @step(%dt: f32 = 0.1) {\n  task @step.0 serial {\n  }\n  \
         task @step.1 range_for %i in 0 .. 1024 block_dim 64 {\n    %x = add %i, %i\n  }\n  \
         task @step.2 struct_for %i, %j in @grid {\n  }\n}\n",
    );
    let Item::Kernel(k) = &m.items[2] else { panic!() };
    let stmts = k.body.block(k.body.entry);
    assert!(
        matches!(&k.body.stmt(stmts[0]).kind, StmtKind::Task { name, kind: TaskKind::Serial, .. } if name == "step.0")
    );
    match &k.body.stmt(stmts[1]).kind {
        StmtKind::Task {
            kind: TaskKind::RangeFor { var, lo: Bound::Const(0), hi: Bound::Const(1024), block_dim: 64 },
            ..
        } => {
            assert_eq!(k.body.value(*var).def, ValueDef::LoopVar(stmts[1], 0))
        }
        other => panic!("{other:?}"),
    }
    match &k.body.stmt(stmts[2]).kind {
        StmtKind::Task { kind: TaskKind::StructFor { vars, field, block_dim, .. }, .. } => {
            assert_eq!(vars.len(), 2);
            assert_eq!(field, "grid");
            assert_eq!(*block_dim, DEFAULT_BLOCK_DIM);
            assert_eq!(k.body.value(vars[1]).def, ValueDef::LoopVar(stmts[2], 1));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn split_stream_of_modules() {
    let text = "module @step.1 {\n  field @x : f32[1024]\n  field @n : i32\n\n  \
                task @step.1 of @step(%dt: f32) range_for %i in 0 .. @n[] block_dim 64 {\n    \
                %v = load @x[%i]\n  }\n}\n\nmodule @main {\n  field @x : f32[1024]\n\n  \
                kernel @step(%dt: f32 = 0.1) {\n    launch @step.1\n  }\n}\n";
    let s = parse(text).unwrap_or_else(|ds| panic!("{ds}"));
    assert_eq!(s.modules.len(), 2);
    assert!(s.is_multi());
    assert_eq!(s.modules[0].name.as_deref(), Some("step.1"));
    let (_, t) = s.find_task("step.1").expect("the task item");
    assert_eq!(t.kernel, "step");
    match &t.kind {
        TaskKind::RangeFor { var, lo: Bound::Const(0), hi: Bound::Field(f, _), block_dim: 64 } => {
            assert_eq!(f, "n");
            assert_eq!(t.body.value(*var).def, ValueDef::LoopVar(Stmt::HEADER, 0));
        }
        other => panic!("{other:?}"),
    }
    let Item::Kernel(k) = &s.modules[1].items[1] else { panic!() };
    assert_eq!(k.body.stmt(k.body.block(k.body.entry)[0]).kind, StmtKind::Launch("step.1".into()));
    // The module's own fields type its loads.
    assert_eq!(t.body.ty(v(2)), Type::Scalar(Scalar::F32));
    assert_eq!(s.to_string(), text);
}

#[test]
fn empty_input_is_one_empty_module() {
    let s = parse("; nothing here\n").unwrap();
    assert!(s.same_as(&Stream { modules: vec![Module { name: None, items: vec![], span: Span::DUMMY }] }));
}

#[test]
fn syntax_errors_say_what_was_expected() {
    let cases: &[(&str, &str, &str)] = &[
        ("kernel @k() {\n  %x = add %a %b\n}\n", "expected `,`, found `%b`", "%b"),
        ("field @x : f128\n", "expected a type (`i1`, `i8`, `i16`, `i32`, `i64`, `u8`, `u16`, `u32`, `u64`, `f16`, `f32`, `f64`), found `f128`", "f128"),
        (
            "kernel @k() {\n  %x = frob %a\n}\n",
            "expected an operation (`const`, `add`, `load`, `call`, ...), found `frob`",
            "frob",
        ),
        // An unclosed block is reported at its brace (the note says where
        // the parser gave up).
        ("kernel @k() {\n", "unclosed delimiter `{`", "{"),
        ("kernel @k() {\n  $\n}\n", "unexpected character `$`", "$"),
        (
            "kernel @k() {\n  %x = cmp foo %a, %b\n}\n",
            "expected a predicate (`lt`, `le`, `gt`, `ge`, `eq`, `ne`), found `foo`",
            "foo",
        ),
        ("kernel k() {\n}\n", "expected a global name (`@...`), found `k`", "k"),
        ("kernel @k() {\n  %x = add %a, %b\n  }\n}\n", "expected an item or `module`, found `}`", "}"),
        ("func @f() -> {\n}\n", "expected a type (`i1`, `i8`, `i16`, `i32`, `i64`, `u8`, `u16`, `u32`, `u64`, `f16`, `f32`, `f64`), found `{`", "{"),
    ];
    for (text, msg, at) in cases {
        assert_eq!(err(text), (msg.to_string(), at.to_string()), "{text}");
    }
}

#[test]
fn literal_errors() {
    let k = |s: &str| format!("kernel @k(%a: f32) {{\n  {s}\n}}\n");
    let cases: &[(&str, &str, &str)] = &[
        ("%x = const 1.5 : i32", "expected an integer literal for i32, found float `1.5`", "1.5"),
        ("%x = const 2147483648 : i32", "literal `2147483648` is out of range for i32", "2147483648"),
        ("%x = const 0x100000000 : i32", "literal `0x100000000` is out of range for i32", "0x100000000"),
        ("%x = const 2 : i1", "literal `2` is out of range for i1", "2"),
        ("%x = const true : f32", "expected a float literal for f32, found `true`", "true"),
        ("%x = const 1e39 : f32", "literal `1e39` is out of range for f32", "1e39"),
        (
            "%x = const 0x7fc00001 : f64",
            "a hex literal for f64 gives its raw bits and must have exactly 16 hex digits, found `0x7fc00001`",
            "0x7fc00001",
        ),
        (
            "%x = atomic sub @t[], %a",
            "expected an atomic operator (`add`, `min`, `max`, `and`, `or` or `xor`), found `sub`",
            "sub",
        ),
        ("for %i in 0 .. @n[] {\n}", "a field bound (`@n[]`) is only allowed in a task header, not in `for`", "@n"),
    ];
    for (s, msg, at) in cases {
        let text = k(s);
        assert_eq!(err(&text), (msg.to_string(), at.to_string()), "{s}");
    }
    assert_eq!(
        err("kernel @k(%n: i32 = 1.5) {\n}\n"),
        ("expected an integer literal for i32, found float `1.5`".into(), "1.5".into())
    );
    assert_eq!(err("field @x : f32[-4]\n"), ("expected a non-negative integer, found `-4`".into(), "-4".into()));
    assert_eq!(
        err("kernel @k() {\n  task @t range_for %i in 0 .. 4 block_dim 0 {\n  }\n}\n"),
        ("block_dim must be between 1 and 4294967295, found `0`".into(), "0".into())
    );
}

#[test]
fn one_error_per_broken_item() {
    let text = "kernel @a() {\n  %x = add %p\n}\n\nfield @ok : f32\n\nkernel @b() {\n  %y = const 1.5 : i64\n}\n\nfunc @c( {\n}\n";
    let ds = parse(text).expect_err("three broken items");
    let lines: Vec<usize> =
        ds.0.iter().map(|d| text[..d.span.unwrap().start as usize].matches('\n').count() + 1).collect();
    assert_eq!(lines, vec![3, 8, 11]);
}

#[test]
fn mixing_modules_and_bare_items_is_an_error() {
    let (msg, at) = err("module @a {\n  field @x : f32\n}\nfield @y : i32\n");
    assert!(msg.contains("a file holds either bare items or only `module` blocks"), "{msg}");
    assert_eq!(at, "field @y : i32");
}

#[test]
fn nesting_is_bounded() {
    let deep = format!("kernel @k() {{\n{}{}}}\n", "while {\n".repeat(300), "}\n".repeat(300));
    let (msg, _) = err(&deep);
    assert!(msg.contains("nested too deeply"), "{msg}");
    let ok = format!("kernel @k() {{\n{}{}}}\n", "while {\n".repeat(100), "}\n".repeat(100));
    assert!(parse(&ok).is_ok());
}

#[test]
fn tricky_modules_round_trip() {
    let cases = [
        // An explicit loop type that differs from the value bound's.
        "kernel @k(%n: i32) {\n  for %j : i64 in 0 .. %n {\n  }\n}\n",
        "kernel @k(%n: i64) {\n  for %j : i32 in %n .. 4 {\n  }\n}\n",
        // Floats that must keep their bits.
        "kernel @k() {\n  %a = const -0.0 : f32\n  %b = const 0x7fc00001 : f32\n  %c = const 0xfff8000000000000 : f64\n  \
         %d = const 1e-45 : f32\n  %e = const 5e-324 : f64\n  %f = const 3.4028235e38 : f32\n  %g = const nan : f64\n}\n",
        // Undefined and forward names, and a bare `ret` before an assignment.
        "kernel @k() {\n  %y = add %x, %nope\n  ret\n  %x = const 1 : i32\n}\n",
        // Integer extremes.
        "kernel @k() {\n  %a = const -9223372036854775808 : i64\n  %b = const -2147483648 : i32\n  %c = const false : i1\n}\n",
    ];
    for text in cases {
        let m = parse(text).unwrap_or_else(|ds| panic!("{ds}\n{text}"));
        let printed = m.to_string();
        assert_eq!(printed, text);
        assert_eq!(parse(&printed).unwrap(), m, "{text}");
    }
}

#[test]
fn several_errors_in_one_item() {
    let text = "kernel @k(%a: f32) {\n  %x = add %a %a\n  %y = frob %a\n  for %i in 0 .. {\n    %z = const 1.5 : f32\n    %w = sub %z\n  }\n  } else {\n  ret\n}\n";
    let ds = parse(text).expect_err("broken statements");
    let found: Vec<(usize, &str)> =
        ds.0.iter()
            .map(|d| (text[..d.span.unwrap().start as usize].matches('\n').count() + 1, d.message.as_str()))
            .collect();
    assert_eq!(
        found,
        vec![
            (2, "expected `,`, found `%a`"),
            (3, "expected an operation (`const`, `add`, `load`, `call`, ...), found `frob`"),
            (4, "expected a value name (`%...`), a global name (`@...`) or an integer, found `{`"),
            (7, "expected `,`, found `}`"),
            (8, "expected an item or `module`, found `else`"),
        ]
    );
}

/// Value number `n` of a body.
fn v(n: usize) -> Value {
    Value::numbered(n)
}
