//! The verifier's rules, each with an input that passes and one that fails,
//! checking the message and where its span starts.
//!
//! A failing case names an anchor: a piece of the source that occurs once,
//! with `|` marking where the error's span must start (no `|`: the start of
//! the piece).

use kiln::diag::{Diagnostic, SourceFile};
use kiln::ir::*;
use kiln::verifier::{verify, verify_module};

/// Entities only `ir` mints; malformed IR of the kind a pass could make
/// (an entity of another body, out of this one's range) takes them from a
/// body that has many of each: `ENT.v(n)` is value number `n` of that
/// body, so of any body that has one.
struct Entities {
    values: Vec<Value>,
    stmts: Vec<Stmt>,
    blocks: Vec<Block>,
}

impl Entities {
    fn v(&self, n: usize) -> Value {
        self.values[n]
    }
    fn s(&self, n: usize) -> Stmt {
        self.stmts[n]
    }
    fn b(&self, n: usize) -> Block {
        self.blocks[n]
    }
}

static ENT: std::sync::LazyLock<Entities> = std::sync::LazyLock::new(|| {
    let mut src = String::from("kernel @many() {\n  %c = const true : i1\n");
    for i in 0..2048 {
        src += &format!("  %v{i} = const {i} : i32\n  if %c {{\n  }} else {{\n  }}\n");
    }
    src += "}\n";
    let s = parse(&src);
    let Item::Kernel(k) = &s.modules[0].items[0] else { unreachable!() };
    let b = &k.body;
    let e = Entities {
        values: b.values().keys().collect(),
        stmts: b.stmts().keys().collect(),
        blocks: b.blocks().keys().collect(),
    };
    assert!(e.values.len() > 2048 && e.stmts.len() > 4096 && e.blocks.len() > 4096);
    e
});

fn parse(src: &str) -> Stream {
    match kiln::parser::parse(src) {
        Ok(s) => s,
        Err(ds) => panic!("test input does not parse:\n{}", SourceFile::new("t.kir", src).render_all(&ds)),
    }
}

fn errors(src: &str) -> Vec<Diagnostic> {
    match verify(&parse(src)) {
        Ok(()) => Vec::new(),
        Err(ds) => ds.0,
    }
}

#[track_caller]
fn ok(src: &str) {
    let es = errors(src);
    if !es.is_empty() {
        panic!("expected no error, got:\n{}", SourceFile::new("t.kir", src).render_all(&kiln::diag::Diagnostics(es)));
    }
}

/// The byte offset an anchor designates.
#[track_caller]
fn anchor_offset(src: &str, anchor: &str) -> usize {
    let (before, after) = anchor.split_once('|').unwrap_or(("", anchor));
    let text = format!("{before}{after}");
    let found: Vec<_> = src.match_indices(&text).collect();
    assert_eq!(found.len(), 1, "anchor {text:?} must occur exactly once");
    found[0].0 + before.len()
}

/// Exactly one error, with this message, its span starting at the anchor.
#[track_caller]
fn bad(src: &str, message: &str, anchor: &str) {
    let es = errors(src);
    let rendered = SourceFile::new("t.kir", src).render_all(&kiln::diag::Diagnostics(es.clone()));
    assert_eq!(es.len(), 1, "expected exactly one error, got:\n{rendered}");
    assert_eq!(es[0].message, message, "\n{rendered}");
    let span = es[0].span.expect("the error has a span");
    assert_eq!(span.start as usize, anchor_offset(src, anchor), "span of {message:?} starts elsewhere:\n{rendered}");
}

// ---------------------------------------------------------------- scopes

#[test]
fn undefined_value() {
    ok("kernel @k() {\n  %a = const 1 : i32\n  %b = add %a, %a\n}\n");
    bad("kernel @k() {\n  %a = const 1 : i32\n  %b = add %a, %zz\n}\n", "use of undefined value %zz", "%zz");
}

#[test]
fn use_before_definition() {
    bad(
        "kernel @k() {\n  %b = add %a, %a\n  %a = const 1 : i32\n}\n",
        "value %a used before its definition",
        "add |%a",
    );
}

#[test]
fn value_is_visible_in_nested_blocks_but_not_after_them() {
    ok("kernel @k(%c: i1) {\n  %t = const 1 : i32\n  if %c {\n    %u = neg %t\n  }\n}\n");
    bad(
        "kernel @k(%c: i1) {\n  if %c {\n    %t = const 1 : i32\n  }\n  %u = neg %t\n}\n",
        "value %t used outside the block that defines it",
        "neg |%t",
    );
}

#[test]
fn loop_variable_only_in_its_body() {
    ok("field @x : i32[4]\nkernel @k() {\n  for %i in 0 .. 4 {\n    store @x[%i], %i\n  }\n}\n");
    bad(
        "kernel @k() {\n  for %i in 0 .. 4 {\n  }\n  %j = neg %i\n}\n",
        "loop variable %i used outside its loop",
        "neg |%i",
    );
}

#[test]
fn values_of_one_task_are_not_visible_in_another() {
    let good = "field @x : i32[4]\nkernel @k(%p: i32 = 1) {\n  task @k.0 serial {\n    %a = const 1 : i32\n    store @x[%a], %p\n  }\n  task @k.1 range_for %i in 0 .. 4 block_dim 4 {\n    store @x[%i], %p\n  }\n}\n";
    ok(good);
    bad(
        "field @x : i32[4]\nkernel @k() {\n  task @k.0 serial {\n    %a = const 1 : i32\n  }\n  task @k.1 range_for %i in 0 .. 4 block_dim 4 {\n    store @x[%i], %a\n  }\n}\n",
        "value %a is defined in task @k.0 and cannot be used in task @k.1",
        "], |%a",
    );
}

#[test]
fn duplicate_value_name() {
    bad(
        "kernel @k() {\n  %t = const 1 : i32\n  %t = const 2 : i32\n}\n",
        "duplicate value name %t",
        "\n  |%t = const 2",
    );
    bad("kernel @k(%n: i32) {\n  for %n in 0 .. 4 {\n  }\n}\n", "duplicate value name %n", "for |%n");
    // Each task of a kernel names its values on its own; parameters are
    // shared by all tasks, so their names are taken in every task.
    ok("field @x : i32[4]\nkernel @k() {\n  task @k.0 serial {\n    %i = const 0 : i32\n    store @x[%i], %i\n  }\n  task @k.1 range_for %i in 0 .. 4 block_dim 4 {\n    store @x[%i], %i\n  }\n}\n");
    bad(
        "kernel @k(%i: i32) {\n  task @k.0 range_for %i in 0 .. 4 block_dim 4 {\n  }\n}\n",
        "duplicate value name %i",
        "range_for |%i",
    );
    bad(
        "kernel @k() {\n  task @k.0 serial {\n    %a = const 0 : i32\n    %a = const 1 : i32\n  }\n}\n",
        "duplicate value name %a",
        "    |%a = const 1",
    );
}

// ---------------------------------------------------------------- types

#[test]
fn binary_operands_have_one_type() {
    ok("kernel @k(%a: f32, %b: f32) {\n  %c = add %a, %b\n}\n");
    bad("kernel @k(%a: i32, %b: f32) {\n  %c = add %a, %b\n}\n", "type mismatch: add of i32 and f32", "%a, |%b");
}

#[test]
fn operators_accept_their_types_only() {
    ok("kernel @k(%a: i32) {\n  %c = shl %a, %a\n  %d = neg %a\n}\n");
    bad("kernel @k(%a: f32) {\n  %c = shl %a, %a\n}\n", "shl does not accept operands of type f32", "shl |%a");
    bad("kernel @k(%a: i32) {\n  %c = sqrt %a\n}\n", "sqrt does not accept an operand of type i32", "sqrt |%a");
    bad("kernel @k(%a: i1) {\n  %c = add %a, %a\n}\n", "add does not accept operands of type i1", "add |%a");
}

#[test]
fn cmp_select_and_if() {
    ok("kernel @k(%a: f32, %b: f32) {\n  %c = cmp lt %a, %b\n  %d = select %c, %a, %b\n  if %c {\n  }\n}\n");
    bad("kernel @k(%a: f32, %b: i32) {\n  %c = cmp lt %a, %b\n}\n", "type mismatch: cmp lt of f32 and i32", "%a, |%b");
    bad(
        "kernel @k(%a: f32, %b: f32) {\n  %d = select %a, %a, %b\n}\n",
        "select condition must be i1, found f32",
        "select |%a",
    );
    bad("kernel @k(%a: i32) {\n  if %a {\n  }\n}\n", "if condition must be i1, found i32", "if |%a");
}

#[test]
fn alloca_slots_are_not_scalars() {
    ok("kernel @k(%v: f32) {\n  %p = alloca f32\n  store %p, %v\n  %w = load %p\n}\n");
    bad("kernel @k() {\n  %p = alloca f32\n  %q = add %p, %p\n}\n", "alloca slot %p used as a scalar", "add |%p");
    bad("kernel @k(%v: f32) {\n  %w = load %v\n}\n", "load from %v, which is not an alloca slot", "load |%v");
    bad(
        "kernel @k(%v: i32) {\n  %p = alloca f32\n  store %p, %v\n}\n",
        "type mismatch: store of i32 to slot %p of f32",
        "%p, |%v",
    );
}

// ---------------------------------------------------------------- fields

#[test]
fn field_rank_and_index_types() {
    ok("field @g : f32[4, 4]\nkernel @k(%i: i32, %j: i64) {\n  %v = load @g[%i, %j]\n}\n");
    bad(
        "field @g : f32[4, 4]\nkernel @k(%i: i32) {\n  %v = load @g[%i]\n}\n",
        "field @g has rank 2 but is indexed with 1 index",
        "load |@g",
    );
    bad(
        "field @x : f32[4]\nkernel @k(%f: f32) {\n  %v = load @x[%f]\n}\n",
        "field index must be i32 or i64, found f32",
        "[|%f]",
    );
}

#[test]
fn unknown_field() {
    bad("kernel @k() {\n  %v = load @q[]\n}\n", "unknown field @q", "@q");
}

#[test]
fn store_and_atomic_types() {
    ok("field @t : i32\nkernel @k(%v: i32) {\n  store @t[], %v\n  %o = atomic xor @t[], %v\n}\n");
    bad(
        "field @t : f32\nkernel @k(%v: i32) {\n  store @t[], %v\n}\n",
        "type mismatch: store of i32 to field @t of f32",
        "], |%v",
    );
    bad(
        "field @t : f32\nkernel @k(%v: f32) {\n  %o = atomic and @t[], %v\n}\n",
        "atomic and does not accept field @t of f32",
        "%o = atomic",
    );
}

#[test]
fn field_declarations() {
    ok("field @a : f32[1, 2, 3, 4, 5, 6, 7, 8]\nfield @b : f64\n");
    bad("field @a : f32[1, 2, 3, 4, 5, 6, 7, 8, 9]\n", "field @a has rank 9, more than the maximum of 8", "field @a");
    // An extent of 0: a field of no elements (an empty ndarray).
    ok("field @a : f32[4, 0]\nfield @b : i32[0]\n");
    bad(
        "field @a : f64[1048576, 1048576]\n",
        "field @a : f64[1048576, 1048576] is larger than the limit of 2^40 bytes",
        "field @a",
    );
    bad(
        "field @a : i32[4294967296, 4294967296, 4294967296]\n",
        "field @a : i32[4294967296, 4294967296, 4294967296] is larger than the limit of 2^40 bytes",
        "field @a",
    );
}

// ---------------------------------------------------------------- items and calls

const F3: &str = "func @f(%a: f32, %b: f32, %c: f32) -> f32 {\n  ret %a\n}\n";

#[test]
fn call_arity_and_argument_types() {
    ok(&format!("{F3}kernel @k(%x: f32) {{\n  %r = call @f(%x, %x, %x)\n  call @f(%x, %x, %x)\n}}\n"));
    bad(
        &format!("{F3}kernel @k(%x: f32) {{\n  %r = call @f(%x, %x)\n}}\n"),
        "call to @f with 2 arguments, expected 3",
        "call |@f",
    );
    bad(
        &format!("{F3}kernel @k(%x: f32, %i: i32) {{\n  %r = call @f(%i, %x, %x)\n}}\n"),
        "argument 1 of call to @f has type i32, expected f32",
        "(|%i",
    );
}

#[test]
fn unknown_or_wrong_callee() {
    bad("kernel @k() {\n  call @h()\n}\n", "unknown function @h", "@h");
    bad("kernel @j() {\n}\n\nkernel @k() {\n  call @j()\n}\n", "@j is a kernel, not a function", "call |@j");
    bad(
        "func @g() {\n  ret\n}\n\nkernel @k() {\n  %r = call @g()\n}\n",
        "@g returns no value, but its call is named %r",
        "call |@g",
    );
}

#[test]
fn duplicate_item() {
    ok("field @x : f32\nfield @y : f32\n");
    bad("field @x : f32\n\nkernel @x() {\n}\n", "duplicate item @x", "kernel @x");
}

#[test]
fn function_must_end_with_ret() {
    ok("func @f(%c: i1, %a: f32) -> f32 {\n  if %c {\n    ret %a\n  } else {\n    ret %a\n  }\n}\n");
    ok("func @g(%a: f32) {\n}\n");
    bad(
        "func @f(%c: i1, %a: f32) -> f32 {\n  if %c {\n    ret %a\n  }\n}\n",
        "function @f must end with ret",
        "func @f",
    );
    bad("func @f(%a: f32) -> f32 {\n  while {\n    ret %a\n  }\n}\n", "function @f must end with ret", "func @f");
}

#[test]
fn ret_matches_the_function() {
    bad("func @f(%a: i32) -> f32 {\n  ret %a\n}\n", "ret of i32 in function @f returning f32", "ret |%a");
    bad("func @f(%a: f32) -> f32 {\n  ret\n}\n", "ret without a value in function @f returning f32", "ret");
    bad("func @f(%a: f32) {\n  ret %a\n}\n", "ret with a value in function @f, which returns nothing", "ret %a");
}

#[test]
fn kernels_return_no_value() {
    ok("kernel @k() {\n  ret\n}\n");
    bad("kernel @k(%a: i32) {\n  ret %a\n}\n", "ret with a value in a kernel", "ret %a");
    bad(
        "kernel @k() {\n  task @k.0 serial {\n    ret\n  }\n}\n",
        "ret inside a task: a task runs to the end of its body",
        "ret",
    );
}

#[test]
fn break_and_continue_need_a_loop() {
    ok("kernel @k() {\n  while {\n    break\n  }\n  for %i in 0 .. 4 {\n    continue\n  }\n}\n");
    bad("kernel @k() {\n  break\n}\n", "break outside a loop", "break");
    bad("kernel @k(%c: i1) {\n  if %c {\n    continue\n  }\n}\n", "continue outside a loop", "continue");
    ok("kernel @k() {\n  task @k.0 range_for %i in 0 .. 4 block_dim 4 {\n    continue\n  }\n}\n");
    bad(
        "kernel @k() {\n  task @k.0 range_for %i in 0 .. 4 block_dim 4 {\n    break\n  }\n}\n",
        "break in the body of a parallel task: its iterations run independently (continue ends one)",
        "break",
    );
    bad("kernel @k() {\n  task @k.0 serial {\n    continue\n  }\n}\n", "continue outside a loop", "continue");
}

#[test]
fn recursion_is_rejected() {
    ok("func @g(%a: i32) -> i32 {\n  ret %a\n}\n\nfunc @f(%a: i32) -> i32 {\n  %b = call @g(%a)\n  ret %b\n}\n");
    bad(
        "func @f(%a: i32) -> i32 {\n  %b = call @f(%a)\n  ret %b\n}\n",
        "recursive call: @f -> @f (recursion is not allowed)",
        "call |@f",
    );
    bad(
        "func @f(%a: i32) -> i32 {\n  %b = call @g(%a)\n  ret %b\n}\n\nfunc @g(%a: i32) -> i32 {\n  %b = call @f(%a)\n  ret %b\n}\n",
        "recursive call: @f -> @g -> @f (recursion is not allowed)",
        "call |@f",
    );
}

// ---------------------------------------------------------------- loops and tasks

#[test]
fn for_bounds_match_the_variable() {
    ok("kernel @k(%n: i64) {\n  for %i in 0 .. %n {\n  }\n  for %j : i64 in 0 .. 10 {\n  }\n}\n");
    bad("kernel @k() {\n  for %i in 0 .. 3000000000 {\n  }\n}\n", "loop bound 3000000000 does not fit i32", "for %i");
    bad(
        "kernel @k(%n: f32) {\n  for %i in 0 .. %n {\n  }\n}\n",
        "loop variable %i must be i32 or i64, found f32",
        "for %i",
    );
}

#[test]
fn tasks_stand_only_at_the_top_level_of_a_kernel() {
    bad(
        "kernel @k() {\n  for %j in 0 .. 4 {\n    task @k.0 serial {\n    }\n  }\n}\n",
        "task @k.0 is nested in a statement; tasks only stand at the top level of a kernel",
        "task @k.0",
    );
    bad(
        "func @f() {\n  task @f.0 serial {\n  }\n}\n",
        "task @f.0 outside a kernel; tasks only stand at the top level of a kernel",
        "task @f.0",
    );
    bad(
        "kernel @k() {\n  task @k.0 serial {\n  }\n  %a = const 1 : i32\n}\n",
        "statement outside a task in kernel @k, whose body holds tasks",
        "%a = const",
    );
    bad(
        "kernel @k() {\n  task @k.0 serial {\n  }\n  task @k.0 serial {\n  }\n}\n",
        "duplicate item @k.0",
        "\n  |task @k.0 serial {\n  }\n}",
    );
}

#[test]
fn struct_for_binds_one_variable_per_dimension() {
    ok("field @g : f32[4, 4]\nkernel @k() {\n  task @k.0 struct_for %i, %j in @g block_dim 8 {\n    %v = load @g[%i, %j]\n  }\n}\n");
    bad(
        "field @g : f32[4, 4]\nkernel @k() {\n  task @k.0 struct_for %i in @g block_dim 8 {\n  }\n}\n",
        "struct_for binds 1 variable but field @g has rank 2",
        "in |@g",
    );
    bad("kernel @k() {\n  task @k.0 struct_for %i in @nope block_dim 8 {\n  }\n}\n", "unknown field @nope", "@nope");
}

#[test]
fn range_for_bounds() {
    ok("field @n : i32\nkernel @k(%m: i32) {\n  task @k.0 range_for %i in @n[] .. %m block_dim 8 {\n  }\n}\n");
    bad(
        "field @n : i32[2]\nkernel @k() {\n  task @k.0 range_for %i in 0 .. @n[] block_dim 8 {\n  }\n}\n",
        "range_for bound @n must be a 0-D field, but has rank 1",
        ".. |@n",
    );
    bad(
        "field @n : i64\nkernel @k() {\n  task @k.0 range_for %i in 0 .. @n[] block_dim 8 {\n  }\n}\n",
        "range_for bound @n is a field of i64, but the loop variable is i32",
        ".. |@n",
    );
}

// ---------------------------------------------------------------- split streams

const SPLIT_OK: &str = "module @k.0 {\n  field @x : f32[4]\n\n  task @k.0 of @k(%a: f32) range_for %i in 0 .. 4 block_dim 4 {\n    store @x[%i], %a\n  }\n}\n\nmodule @main {\n  field @x : f32[4]\n\n  kernel @k(%a: f32 = 2.0) {\n    launch @k.0\n  }\n}\n";

#[test]
fn split_stream() {
    ok(SPLIT_OK);
    bad(
        &SPLIT_OK.replace("  field @x : f32[4]\n\n  kernel", "  field @x : f32[8]\n\n  kernel"),
        "field @x is declared as f32[8] here but as f32[4] in module @k.0",
        "field @x : f32[8]",
    );
    bad(&SPLIT_OK.replace("launch @k.0", "launch @k.9"), "launch of unknown task @k.9", "launch");
    bad(
        &SPLIT_OK.replace("kernel @k(%a: f32 = 2.0)", "kernel @k(%a: i32 = 2)"),
        "launch @k.0: the task's parameter %a is f32, but kernel @k's is i32",
        "launch",
    );
    bad("func @f() {\n  launch @t\n}\n", "launch @t outside a kernel", "launch");
}

#[test]
fn verify_module_resolves_launches_in_the_module_only() {
    let s = parse(SPLIT_OK);
    assert!(verify(&s).is_ok());
    let main = &s.modules[1];
    let e = verify_module(main).expect_err("the task is in another module");
    assert_eq!(e.0[0].message, "launch of unknown task @k.0");
    assert!(verify_module(&s.modules[0]).is_ok());
}

// ---------------------------------------------------------------- parameters

#[test]
fn default_values() {
    ok("kernel @k(%n: i32 = 7, %a: f32 = 2.5, %c: i1 = true) {\n}\n");
    bad("func @f(%a: i32 = 1) {\n}\n", "parameter %a of @f has a default value; only kernel parameters may", "%a: i32");
    // Defaults that the parser cannot produce but a pass could.
    let mut s = parse("kernel @k(%n: i32 = 7) {\n}\n");
    let set = |s: &mut Stream, c: Const| {
        let Item::Kernel(k) = &mut s.modules[0].items[0] else { unreachable!() };
        k.params[0].default = Some(c);
    };
    set(&mut s, Const::i64(5_000_000_000));
    assert_eq!(verify(&s).unwrap_err().0[0].message, "default value of %n does not fit i32");
    set(&mut s, Const::f32(1.0));
    assert_eq!(verify(&s).unwrap_err().0[0].message, "default value of %n has type f32, expected i32");
    set(&mut s, Const { ty: Scalar::I32, bits: 1 << 40 });
    assert_eq!(verify(&s).unwrap_err().0[0].message, "default value of %n does not fit i32");
}

// ---------------------------------------------------------------- whole input

#[test]
fn every_error_is_reported_in_source_order() {
    let src = "kernel @k(%a: i32, %b: f32) {\n  %c = add %a, %b\n  %d = load @q[]\n  break\n  %e = mul %zz, %a\n}\n";
    let es = errors(src);
    let msgs: Vec<&str> = es.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        msgs,
        ["type mismatch: add of i32 and f32", "unknown field @q", "break outside a loop", "use of undefined value %zz"]
    );
}

#[test]
fn malformed_ir_from_a_pass_is_an_error_not_a_panic() {
    let mut s = parse("kernel @k(%a: i32) {\n  %b = add %a, %a\n}\n");
    let Item::Kernel(k) = &mut s.modules[0].items[0] else { unreachable!() };
    k.body[ENT.s(0)].kind = StmtKind::Binary(BinOp::Add, ENT.v(99), ENT.v(0));
    let e = verify(&s).unwrap_err();
    assert!(e.0[0].message.starts_with("malformed IR: value 99"), "{}", e);

    let mut s = parse("kernel @k(%a: i32) {\n  %b = add %a, %a\n}\n");
    let Item::Kernel(k) = &mut s.modules[0].items[0] else { unreachable!() };
    let entry = k.body.entry;
    k.body[entry].push(ENT.s(0));
    let e = verify(&s).unwrap_err();
    assert!(e.0[0].message.contains("placed twice"), "{}", e);
}

#[test]
fn statements_removed_by_a_pass_leave_no_trace() {
    // A pass (dce) drops a statement from its block but not from the arena:
    // the orphan is not checked, and its value's name is free again.
    let mut s = parse("kernel @k(%a: i32) {\n  %b = add %a, %a\n  %c = mul %a, %a\n}\n");
    let Item::Kernel(k) = &mut s.modules[0].items[0] else { unreachable!() };
    let entry = k.body.entry;
    k.body[entry].remove(0);
    k.body[ENT.s(0)].kind = StmtKind::Binary(BinOp::Add, ENT.v(0), ENT.v(9));
    assert!(verify(&s).is_ok());
}

#[test]
fn every_testdata_file_verifies() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("testdata/ exists") {
        let path = entry.expect("readable").path();
        if path.extension().and_then(|e| e.to_str()) != Some("kir") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable");
        let src = SourceFile::new(path.display().to_string(), text.clone());
        let stream = kiln::parser::parse(&text).unwrap_or_else(|ds| panic!("{}", src.render_all(&ds)));
        if let Err(ds) = verify(&stream) {
            panic!("{}", src.render_all(&ds));
        }
        n += 1;
    }
    assert!(n >= 8, "expected at least eight testdata files, found {n}");
}

/// A small deterministic generator (xorshift), so the damage test needs no
/// dependency and always runs the same cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % (n.max(1) as u64)) as usize
    }
}

fn body_mut(it: &mut Item) -> Option<&mut Body> {
    match it {
        Item::Field(_) => None,
        Item::Func(f) => Some(&mut std::sync::Arc::make_mut(f).body),
        Item::Kernel(k) => Some(&mut k.body),
        Item::Task(t) => Some(&mut t.body),
    }
}

/// One random change of the kind a buggy pass could make: indices out of
/// range, statements placed twice or in a cycle, values with wrong
/// definitions or types, statements copied from another body.
fn damage(s: &mut Stream, rng: &mut Rng, donor: &StmtKind, task_donor: &TaskKind) {
    let m = rng.below(s.modules.len());
    let items = &mut s.modules[m].items;
    if items.is_empty() {
        return;
    }
    let i = rng.below(items.len());
    if let Item::Field(f) = &mut items[i] {
        let dims = rng.below(11);
        f.shape = (0..dims).map(|_| [0, 1, 7, 1 << 20, u64::MAX][rng.below(5)]).collect();
        return;
    }
    if let Item::Task(t) = &mut items[i] {
        if rng.below(2) == 0 {
            t.kind = task_donor.clone();
            return;
        }
    }
    let Some(body) = body_mut(&mut items[i]) else { return };
    let (nv, ns, nb) = (body.values().len(), body.stmts().len(), body.blocks().len());
    let types =
        [Type::Scalar(Scalar::I1), Type::Scalar(Scalar::I32), Type::Scalar(Scalar::F64), Type::Slot(Scalar::F32)];
    match rng.below(9) {
        0 if ns > 0 => body[ENT.s(rng.below(ns))].result = Some(ENT.v(rng.below(nv + 2))),
        1 if nv > 0 => body[ENT.v(rng.below(nv))].ty = types[rng.below(4)],
        2 if nv > 0 => {
            body[ENT.v(rng.below(nv))].def = match rng.below(4) {
                0 => ValueDef::Param(rng.below(3) as u32),
                1 => ValueDef::Result(ENT.s(rng.below(ns + 2))),
                2 => ValueDef::LoopVar(ENT.s(rng.below(ns + 2)), rng.below(2) as u32),
                _ => ValueDef::Undefined,
            }
        }
        3 if nb > 0 => body[ENT.b(rng.below(nb))].push(ENT.s(rng.below(ns + 2))),
        4 if nb > 0 => {
            let b = rng.below(nb);
            if !body[ENT.b(b)].is_empty() {
                let k = rng.below(body[ENT.b(b)].len());
                body[ENT.b(b)].remove(k);
            }
        }
        5 if ns > 0 => body[ENT.s(rng.below(ns))].kind = donor.clone(),
        6 => body.entry = ENT.b(rng.below(nb + 1)),
        7 => body.params.push(ENT.v(rng.below(nv + 2))),
        8 if ns > 1 => {
            let (a, b) = (rng.below(ns), rng.below(ns));
            let k = body[ENT.s(a)].kind.clone();
            body[ENT.s(b)].kind = k;
        }
        _ => {}
    }
}

#[test]
fn damaged_ir_never_panics_the_verifier() {
    let mut seeds: Vec<Stream> = vec![
        parse(SPLIT_OK),
        parse("field @g : f32[4, 4]\nfield @n : i32\n\nfunc @f(%a: f32) -> f32 {\n  %p = alloca f32\n  store %p, %a\n  %w = load %p\n  ret %w\n}\n\nkernel @k(%m: i32 = 4) {\n  task @k.0 serial {\n    %c = const 3 : i32\n    store @n[], %c\n  }\n  task @k.1 range_for %i in 0 .. @n[] block_dim 2 {\n    %v = load @g[%i, %i]\n    %r = call @f(%v)\n    store @g[%i, %i], %r\n  }\n  task @k.2 struct_for %i, %j in @g block_dim 4 {\n    while {\n      break\n    }\n  }\n}\n"),
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    if let Ok(rd) = std::fs::read_dir(&dir) {
        let mut paths: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths.iter().filter(|p| p.extension().is_some_and(|e| e == "kir")) {
            seeds.push(parse(&std::fs::read_to_string(p).expect("readable")));
        }
    }
    // Statement kinds to transplant from one body into another.
    let donors: Vec<StmtKind> = seeds
        .iter()
        .flat_map(|s| &s.modules)
        .flat_map(|m| &m.items)
        .filter_map(|it| match it {
            Item::Func(f) => Some(&f.body),
            Item::Kernel(k) => Some(&k.body),
            Item::Task(t) => Some(&t.body),
            Item::Field(_) => None,
        })
        .flat_map(|b| b.stmts().iter().map(|s| s.kind.clone()))
        .collect();
    let task_donors: Vec<TaskKind> = donors
        .iter()
        .filter_map(|k| if let StmtKind::Task { kind, .. } = k { Some(kind.clone()) } else { None })
        .collect();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut rejected = 0;
    for round in 0..4000 {
        let mut s = seeds[round % seeds.len()].clone();
        for _ in 0..1 + rng.below(3) {
            let donor = &donors[rng.below(donors.len())];
            let task_donor = &task_donors[rng.below(task_donors.len())];
            damage(&mut s, &mut rng, donor, task_donor);
        }
        rejected += verify(&s).is_err() as usize;
        for m in &s.modules {
            let _ = verify_module(m);
        }
    }
    // Most damage must be caught (some, like removing a store, is benign).
    assert!(rejected > 2000, "only {rejected} of 4000 damaged streams were rejected");
}

#[test]
fn more_type_rules() {
    bad(
        "kernel @k(%c: i1, %a: f32, %b: f64) {\n  %d = select %c, %a, %b\n}\n",
        "type mismatch: select of f32 and f64",
        "%a, |%b",
    );
    bad(
        "field @t : i32\nkernel @k(%v: i64) {\n  %o = atomic add @t[], %v\n}\n",
        "type mismatch: atomic add of i64 on field @t of i32",
        "], |%v",
    );
    bad("kernel @k(%a: f32, %v: f32) {\n  store %a, %v\n}\n", "store to %a, which is not an alloca slot", "store |%a");
    ok("kernel @k(%a: i64, %n: i64) {\n  for %i in %a .. %n {\n  }\n}\n");
    bad(
        "kernel @k(%a: i32, %n: i64) {\n  for %i in %a .. %n {\n  }\n}\n",
        "loop bound %n has type i64, but the loop variable is i32",
        ".. |%n",
    );
}

#[test]
fn more_task_and_stream_rules() {
    bad(
        "field @t : f32\nkernel @k() {\n  task @k.0 struct_for %i in @t block_dim 8 {\n  }\n}\n",
        "struct_for over 0-D field @t: it has no index space",
        "in |@t",
    );
    bad(
        "module @a {\n  field @x : f32\n}\n\nmodule @a {\n  field @y : f32\n}\n",
        "duplicate module @a",
        "\n|module @a {\n  field @y",
    );
    bad(
        &SPLIT_OK.replace("kernel @k(%a: f32 = 2.0)", "kernel @k(%b: f32 = 2.0)"),
        "launch @k.0: the task reads parameter %a, which kernel @k does not have",
        "launch",
    );
    // A 0-D field bound of a range_for task item, as split-tasks writes it.
    ok("module @k.0 {\n  field @n : i32\n\n  task @k.0 of @k() range_for %i in 0 .. @n[] block_dim 4 {\n  }\n}\n\nmodule @main {\n  field @n : i32\n\n  kernel @k() {\n    launch @k.0\n  }\n}\n");
}

#[test]
fn rules_only_a_pass_can_break() {
    // block_dim 0 and a call whose result has the wrong type cannot be
    // written in text; a pass could make them.
    let mut s = parse("kernel @k() {\n  task @k.0 range_for %i in 0 .. 4 block_dim 4 {\n  }\n}\n");
    let Item::Kernel(k) = &mut s.modules[0].items[0] else { unreachable!() };
    let StmtKind::Task { kind: TaskKind::RangeFor { block_dim, .. }, .. } = &mut k.body[ENT.s(0)].kind else {
        unreachable!()
    };
    *block_dim = 0;
    assert_eq!(verify(&s).unwrap_err().0[0].message, "block_dim must be at least 1");

    let mut s =
        parse("func @f() -> f32 {\n  %c = const 1.0 : f32\n  ret %c\n}\n\nkernel @k() {\n  %r = call @f()\n}\n");
    let Item::Kernel(k) = &mut s.modules[0].items[1] else { unreachable!() };
    k.body[ENT.v(0)].ty = Type::Scalar(Scalar::I32);
    assert_eq!(verify(&s).unwrap_err().0[0].message, "malformed IR: %r has type i32 but its statement gives f32");
}

// ---------------------------------------------------------------- diagnostics

/// Where a note of the only error starts, and its message.
#[track_caller]
fn note_of(src: &str) -> (String, usize) {
    let es = errors(src);
    assert_eq!(es.len(), 1, "expected one error");
    assert_eq!(es[0].notes.len(), 1, "expected one note");
    let n = &es[0].notes[0];
    (n.message.clone(), n.span.expect("the note has a span").start as usize)
}

#[test]
fn duplicates_note_the_previous_definition() {
    let prev = "previous definition is here".to_string();
    let src = "kernel @k() {\n  %t = const 1 : i32\n  %t = const 2 : i32\n}\n";
    assert_eq!(note_of(src), (prev.clone(), anchor_offset(src, "|%t = const 1")));
    // A loop variable clashing with a parameter: the parameter is first.
    let src = "kernel @k(%n: i32) {\n  for %n in 0 .. 4 {\n  }\n}\n";
    assert_eq!(note_of(src), (prev.clone(), anchor_offset(src, "k(|%n")));
    // Three definitions: each later one notes the one it clashes with.
    let src = "kernel @k() {\n  %t = const 1 : i32\n  %t = const 2 : i32\n  %t = const 3 : i32\n}\n";
    let es = errors(src);
    let notes: Vec<usize> = es.iter().map(|e| e.notes[0].span.unwrap().start as usize).collect();
    assert_eq!(notes, [anchor_offset(src, "|%t = const 1"), anchor_offset(src, "|%t = const 2")]);
    let src = "field @x : f32\n\nkernel @x() {\n}\n";
    assert_eq!(note_of(src), (prev.clone(), anchor_offset(src, "field @x")));
    let src = "kernel @k() {\n  task @k.0 serial {\n  }\n  task @k.0 serial {\n  }\n}\n";
    assert_eq!(note_of(src), (prev, anchor_offset(src, "{\n  |task @k.0")));
}

#[test]
fn no_follow_on_errors_from_a_value_of_unknown_type() {
    // %c's type is unknown after the mismatch: its uses say nothing more,
    // and neither do the uses of what is computed from it.
    bad(
        "kernel @k(%a: i32, %b: f32, %x: f64) {\n  %c = add %a, %b\n  %d = mul %c, %x\n  %e = sub %d, %a\n  if %d {\n  }\n}\n",
        "type mismatch: add of i32 and f32",
        "%a, |%b",
    );
    // So for a call to an unknown function and a slot used as a scalar.
    bad("kernel @k(%x: f64) {\n  %r = call @nope(%x)\n  %s = add %r, %x\n}\n", "unknown function @nope", "@nope");
    bad(
        "kernel @k(%x: f64) {\n  %p = alloca f32\n  %q = add %p, %x\n  %r = add %q, %x\n}\n",
        "alloca slot %p used as a scalar",
        "add |%p",
    );
    // A well-typed result of a bad statement still types its uses: cmp
    // gives i1 whatever it compares.
    let es = errors("kernel @k(%a: i32, %b: f32, %x: f32) {\n  %c = cmp lt %a, %b\n  %d = add %c, %x\n}\n");
    assert_eq!(es.len(), 2, "{es:?}");
    assert_eq!(es[1].message, "type mismatch: add of i1 and f32");
    // Scope errors about a poisoned value still count.
    let es = errors("kernel @k(%a: i32, %b: f32, %c1: i1) {\n  if %c1 {\n    %c = add %a, %b\n  }\n  %d = neg %c\n}\n");
    let msgs: Vec<&str> = es.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(msgs, ["type mismatch: add of i32 and f32", "value %c used outside the block that defines it"]);
}

#[test]
fn ir_a_pass_made_points_at_the_statement() {
    // Without operand spans (a pass's statements), an error about an
    // operand points at its statement.
    let src = "kernel @k(%a: i32, %b: f32) {\n  %c = add %a, %b\n}\n";
    let mut s = parse(src);
    let Item::Kernel(k) = &mut s.modules[0].items[0] else { unreachable!() };
    k.body.operand_spans = OperandSpans::default();
    let es = verify(&s).unwrap_err().0;
    assert_eq!(es[0].span.unwrap().start as usize, anchor_offset(src, "%c = add"));
    // A table that no longer fits the statement is not used either.
    let mut s = parse(src);
    let Item::Kernel(k) = &mut s.modules[0].items[0] else { unreachable!() };
    let (a, b) = (k.body.params[0], k.body.params[1]);
    k.body[ENT.s(0)].kind = StmtKind::Select(a, a, b);
    let es = verify(&s).unwrap_err().0;
    assert!(es.iter().all(|e| e.span.unwrap().start as usize == anchor_offset(src, "%c = add")), "{es:?}");
    // The side table is layout: not part of what the module says.
    let mut t = parse(src);
    let Item::Kernel(k) = &mut t.modules[0].items[0] else { unreachable!() };
    k.body.operand_spans = OperandSpans::default();
    assert!(parse(src).same_as(&t));
    assert_ne!(parse(src), t);
}
