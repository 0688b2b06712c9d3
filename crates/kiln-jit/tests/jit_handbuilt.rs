//! The JIT on IR built by hand (no parser needed): a saxpy task, run on
//! both paths and with 1 and 2 threads, and bad object bytes.

use kiln::config::CompileConfig;
use kiln::exec::{Engine, Fields};
use kiln::ir::*;
use kiln_codegen::{Compiler, Emit};
use kiln_jit::engine::{JitEngine, JitPath};
use kiln_jit::{Jit, JitErrorKind, LoadedTask};
use kiln_llvm::HostTarget;

fn field(name: &str, elem: Scalar, shape: &[u64]) -> Field {
    Field { name: name.into(), elem, shape: shape.to_vec(), span: Span::DUMMY }
}

/// `y[i] = a * x[i] + y[i]` for i in 0..n (n = 1000), plus a split main
/// module whose kernel @k launches it.
fn saxpy_stream(n: u64, hi: i64) -> Stream {
    let mut body = Body::new();
    let a = body.add_param("a", Scalar::F32, Span::DUMMY);
    let i = body.new_value("i", Type::Scalar(Scalar::I32), ValueDef::Undefined, Span::DUMMY);
    let e = body.entry;
    let fref = |f: &str| FieldRef { field: f.into(), indices: vec![i], span: Span::DUMMY };
    let (s, xi) = body.new_stmt_with_result(StmtKind::Load(fref("x")), "xi", Type::Scalar(Scalar::F32), Span::DUMMY);
    body.push(e, s);
    let (s, yi) = body.new_stmt_with_result(StmtKind::Load(fref("y")), "yi", Type::Scalar(Scalar::F32), Span::DUMMY);
    body.push(e, s);
    let (s, m) =
        body.new_stmt_with_result(StmtKind::Binary(BinOp::Mul, a, xi), "m", Type::Scalar(Scalar::F32), Span::DUMMY);
    body.push(e, s);
    let (s, r) =
        body.new_stmt_with_result(StmtKind::Binary(BinOp::Add, m, yi), "r", Type::Scalar(Scalar::F32), Span::DUMMY);
    body.push(e, s);
    let s = body.new_stmt(StmtKind::Store(fref("y"), r), Span::DUMMY);
    body.push(e, s);
    let task = TaskItem {
        name: "k.0".into(),
        kernel: "k".into(),
        params: vec![Param { ty: Scalar::F32, default: None, span: Span::DUMMY }],
        kind: TaskKind::RangeFor { var: i, lo: Bound::Const(0), hi: Bound::Const(hi), block_dim: 64 },
        body,
        span: Span::DUMMY,
    };
    let fields = vec![Item::Field(field("x", Scalar::F32, &[n])), Item::Field(field("y", Scalar::F32, &[n]))];
    let mut tm_items = fields.clone();
    tm_items.push(Item::Task(task));
    let tm = Module { name: Some("k.0".into()), items: tm_items, span: Span::DUMMY };
    let mut kb = Body::new();
    kb.add_param("a", Scalar::F32, Span::DUMMY);
    let s = kb.new_stmt(StmtKind::Launch("k.0".into()), Span::DUMMY);
    let ke = kb.entry;
    kb.push(ke, s);
    let k = Kernel {
        name: "k".into(),
        params: vec![Param { ty: Scalar::F32, default: Some(Const::f32(2.0)), span: Span::DUMMY }],
        body: kb,
        span: Span::DUMMY,
    };
    let mut main_items = fields;
    main_items.push(Item::Kernel(k));
    let main = Module { name: Some("main".into()), items: main_items, span: Span::DUMMY };
    Stream { modules: vec![tm, main] }
}

fn fill(fields: &mut Fields, name: &str, f: impl Fn(usize) -> f32) {
    let d = fields.get_mut(name).unwrap();
    for (k, c) in d.bytes.chunks_mut(4).enumerate() {
        c.copy_from_slice(&f(k).to_le_bytes());
    }
}

fn floats(fields: &Fields, name: &str) -> Vec<f32> {
    fields.get(name).unwrap().bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Launches the loaded task `l` of `kernel` once, with no slots and its
/// printed output dropped; a launch error fails the test.
fn launch_quietly(l: &LoadedTask, kernel: &str, fields: &mut Fields) {
    let names = kiln_jit::runtime::LaunchNames { kernel, task: &l.meta.task };
    let mut printed = Vec::new();
    let mut out = kiln_jit::runtime::PrintOut::new(&mut printed);
    kiln_jit::runtime::launch(
        l.entry,
        &l.meta,
        names,
        &[],
        fields,
        Default::default(),
        &|_| Default::default(),
        &mut out,
    )
    .unwrap();
}

fn compiler() -> Compiler {
    Compiler::host(CompileConfig::default()).unwrap()
}

#[test]
fn saxpy_runs_on_both_paths_and_thread_counts() {
    let stream = saxpy_stream(1000, 1000);
    for path in [JitPath::PerTask, JitPath::WholeKernel] {
        for threads in [1, 2] {
            let mut e = JitEngine::new(compiler(), path, threads).unwrap();
            let mut fields = Fields::zeroed(&stream);
            fill(&mut fields, "x", |k| k as f32);
            fill(&mut fields, "y", |k| 1.0 + k as f32 * 0.5);
            e.run_kernel(&stream, "k", &[Const::f32(3.0)], &mut fields).unwrap();
            let y = floats(&fields, "y");
            for (k, v) in y.iter().enumerate() {
                assert_eq!(*v, 3.0 * k as f32 + (1.0 + k as f32 * 0.5), "{path:?} {threads} at {k}");
            }
        }
    }
}

#[test]
fn out_of_bounds_is_an_error_naming_kernel_task_field_and_index() {
    let stream = saxpy_stream(100, 101);
    for path in [JitPath::PerTask, JitPath::WholeKernel] {
        let mut e = JitEngine::new(compiler(), path, 1).unwrap();
        let mut fields = Fields::zeroed(&stream);
        let err = e.run_kernel(&stream, "k", &[Const::f32(3.0)], &mut fields).unwrap_err();
        assert!(err.message.contains("@k"), "{err}");
        assert!(err.message.contains("@k.0"), "{err}");
        assert!(err.message.contains("@x"), "{err}");
        assert!(err.message.contains("[100]"), "{err}");
    }
}

#[test]
fn bad_object_bytes_are_errors() {
    let jit = Jit::new().unwrap();
    let c = compiler();
    let stream = saxpy_stream(10, 10);
    let (obj, meta) = c.emit_task(&stream.modules[0], Emit::Object).unwrap();
    let good = jit.load_task("good", &obj, &meta).unwrap();
    assert!(good.dylib_name().starts_with("good#"));
    let e = jit.load_task("empty", &[], &meta).unwrap_err();
    assert_eq!(e.kind, JitErrorKind::Add);
    let garbage: Vec<u8> = (0..4096u32).map(|k| (k.wrapping_mul(2654435761) >> 13) as u8).collect();
    let e = jit.load_task("garbage", &garbage, &meta).unwrap_err();
    assert_eq!(e.kind, JitErrorKind::Add, "{e}");
    for cut in [4, 16, 64, obj.len() / 2, obj.len() - 1] {
        let r = jit.load_task("truncated", &obj[..cut], &meta);
        assert!(r.is_err(), "truncated at {cut} loaded");
    }
    let mut wrong = meta.clone();
    wrong.entry_symbol = "no_such_entry".into();
    let e = jit.load_task("nosym", &obj, &wrong).unwrap_err();
    assert_eq!(e.kind, JitErrorKind::Link, "{e}");
    // The good one still works after the failures.
    let again = jit.load_task("good", &obj, &meta).unwrap();
    assert_ne!(again.dylib_name(), good.dylib_name());
}

/// A relocatable object of `triple` defining `entry`, a function that
/// returns at once, from LLVM's assembler (installed with LLVM 22).
fn assembled(triple: &str, dir: &std::path::Path) -> Vec<u8> {
    let (src, obj) = (dir.join(format!("{triple}.s")), dir.join(format!("{triple}.o")));
    std::fs::write(&src, ".text\n.globl entry\n.type entry,@function\nentry:\n  ret\n").unwrap();
    let out = std::process::Command::new("/usr/lib/llvm-22/bin/llvm-mc")
        .args([&format!("-triple={triple}"), "-filetype=obj", "-o"])
        .args([&obj, &src])
        .output()
        .expect("llvm-mc (LLVM 22) runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read(obj).unwrap()
}

#[test]
fn an_object_of_another_machine_is_refused_before_it_links() {
    let dir = std::env::temp_dir().join(format!("kiln-foreign-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let jit = Jit::new().unwrap();
    let (_, mut meta) = compiler().emit_task(&saxpy_stream(10, 10).modules[0], Emit::Object).unwrap();
    meta.entry_symbol = "entry".into();
    // The same function for this machine loads: only the machine differs.
    jit.load_task("x86-64", &assembled("x86_64-linux-gnu", &dir), &meta).unwrap();
    for (triple, arch) in [("aarch64-linux-gnu", "aarch64"), ("riscv64-linux-gnu", "riscv64")] {
        let e = jit.load_task(triple, &assembled(triple, &dir), &meta).unwrap_err();
        assert_eq!(e.kind, JitErrorKind::Add, "{e}");
        assert!(e.message.contains(&format!("an object for {arch}, not for this machine (x86_64)")), "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn host_target_uses_detected_features() {
    let t = HostTarget::detect().unwrap();
    assert!(!t.triple.is_empty() && !t.cpu.is_empty());
    let c = Compiler::new(CompileConfig::default(), t.clone()).unwrap();
    let stream = saxpy_stream(10, 10);
    let (ir, _) = c.emit_task(&stream.modules[0], Emit::LlvmIr).unwrap();
    let ir = String::from_utf8(ir).unwrap();
    assert!(ir.contains(&format!("\"target-features\"=\"{}\"", t.features)), "{ir}");
    assert!(ir.contains(&format!("\"target-cpu\"=\"{}\"", t.cpu)));
}

/// A per-task module `@name` whose range_for task stores `@f(x[i])` into
/// `out[i]`, where `@f(v) = v * factor`. Every such module defines the
/// same symbols (`kiln_task`, `kiln_fn.f`) with different code.
fn helper_module(name: &str, out: &str, factor: f32, n: u64) -> Module {
    let mut fb = Body::new();
    let v = fb.add_param("v", Scalar::F32, Span::DUMMY);
    let fe = fb.entry;
    let (s, c) =
        fb.new_stmt_with_result(StmtKind::Const(Const::f32(factor)), "c", Type::Scalar(Scalar::F32), Span::DUMMY);
    fb.push(fe, s);
    let (s, r) =
        fb.new_stmt_with_result(StmtKind::Binary(BinOp::Mul, v, c), "r", Type::Scalar(Scalar::F32), Span::DUMMY);
    fb.push(fe, s);
    let s = fb.new_stmt(StmtKind::Ret(Some(r)), Span::DUMMY);
    fb.push(fe, s);
    let func = Func {
        name: "f".into(),
        params: vec![Param { ty: Scalar::F32, default: None, span: Span::DUMMY }],
        ret: Some(Scalar::F32),
        body: fb,
        span: Span::DUMMY,
    };
    let mut body = Body::new();
    let i = body.new_value("i", Type::Scalar(Scalar::I32), ValueDef::Undefined, Span::DUMMY);
    let e = body.entry;
    let fref = |f: &str| FieldRef { field: f.into(), indices: vec![i], span: Span::DUMMY };
    let (s, xi) = body.new_stmt_with_result(StmtKind::Load(fref("x")), "xi", Type::Scalar(Scalar::F32), Span::DUMMY);
    body.push(e, s);
    let (s, r) = body.new_stmt_with_result(
        StmtKind::Call("f".into(), vec![xi], Span::DUMMY),
        "r",
        Type::Scalar(Scalar::F32),
        Span::DUMMY,
    );
    body.push(e, s);
    let s = body.new_stmt(StmtKind::Store(fref(out), r), Span::DUMMY);
    body.push(e, s);
    let task = TaskItem {
        name: name.into(),
        kernel: "k".into(),
        params: vec![],
        kind: TaskKind::RangeFor { var: i, lo: Bound::Const(0), hi: Bound::Const(n as i64), block_dim: 16 },
        body,
        span: Span::DUMMY,
    };
    Module {
        name: Some(name.into()),
        items: vec![
            Item::Field(field("x", Scalar::F32, &[n])),
            Item::Field(field(out, Scalar::F32, &[n])),
            Item::Func(func.into()),
            Item::Task(task),
        ],
        span: Span::DUMMY,
    }
}

#[test]
fn tasks_defining_the_same_helper_symbol_load_and_run_side_by_side() {
    let n = 100;
    let m1 = helper_module("k.0", "y", 2.0, n);
    let m2 = helper_module("k.1", "z", 3.0, n);
    let c = compiler();
    let jit = Jit::new().unwrap();
    let t1 = c.compile_task(&m1).unwrap();
    let t2 = c.compile_task(&m2).unwrap();
    // Same symbols, different code.
    assert_ne!(t1.object, t2.object);
    let l1 = jit.load_task("k.0", &t1.object, &t1.meta).unwrap();
    let l2 = jit.load_task("k.1", &t2.object, &t2.meta).unwrap();
    assert_ne!(l1.entry as usize, l2.entry as usize);
    let stream = Stream { modules: vec![m1, m2] };
    let mut fields = Fields::zeroed(&stream);
    fill(&mut fields, "x", |k| k as f32);
    for l in [&l2, &l1, &l2] {
        launch_quietly(l, "k", &mut fields);
    }
    for (k, (y, z)) in floats(&fields, "y").iter().zip(floats(&fields, "z")).enumerate() {
        assert_eq!(*y, 2.0 * k as f32);
        assert_eq!(z, 3.0 * k as f32);
    }
}

#[test]
fn identical_tasks_of_different_kernels_compile_to_identical_objects() {
    let c = compiler();
    let a = c.compile_task(&helper_module("k.0", "y", 2.0, 64)).unwrap();
    let b = c.compile_task(&helper_module("other.7", "y", 2.0, 64)).unwrap();
    assert_eq!(a.object, b.object);
    assert_eq!(a.meta.entry_symbol, "kiln_task");
    assert!(!a.object.windows(3).any(|w| w == b"k.0"));
}

/// A task whose object calls libm's `atanf`.
fn atan_module() -> Module {
    let mut body = Body::new();
    let e = body.entry;
    let r = |body: &mut Body, kind: StmtKind, n: &str| {
        let (s, v) = body.new_stmt_with_result(kind, n, Type::Scalar(Scalar::F32), Span::DUMMY);
        body.push(e, s);
        v
    };
    let x = r(&mut body, StmtKind::Load(FieldRef { field: "t".into(), indices: vec![], span: Span::DUMMY }), "x");
    let y = r(&mut body, StmtKind::Unary(UnOp::Atan, x), "y");
    let s = body
        .new_stmt(StmtKind::Store(FieldRef { field: "t".into(), indices: vec![], span: Span::DUMMY }, y), Span::DUMMY);
    body.push(e, s);
    let task = TaskItem {
        name: "s.0".into(),
        kernel: "s".into(),
        params: vec![],
        kind: TaskKind::Serial,
        body,
        span: Span::DUMMY,
    };
    Module {
        name: Some("s.0".into()),
        items: vec![Item::Field(field("t", Scalar::F32, &[])), Item::Task(task)],
        span: Span::DUMMY,
    }
}

#[test]
fn an_object_that_parses_but_does_not_link_is_an_error_at_load() {
    let c = compiler();
    let t = c.compile_task(&atan_module()).unwrap();
    let jit = Jit::new().unwrap();
    // The intact object links against the process's libm and runs.
    let ok = jit.load_task("s.0", &t.object, &t.meta).unwrap();
    let stream = Stream { modules: vec![atan_module()] };
    let mut fields = Fields::zeroed(&stream);
    fields.get_mut("t").unwrap().bytes.copy_from_slice(&0.5f32.to_le_bytes());
    launch_quietly(&ok, "s", &mut fields);
    assert_eq!(*fields.get("t").unwrap().bytes, 0.5f32.atan().to_le_bytes());
    // Rename the undefined symbol `atanf` to one no library defines: the
    // object still parses (add succeeds), and the forced lookup reports the
    // missing symbol instead of deferring it to the first call.
    let at = t.object.windows(6).position(|w| w == b"atanf\0").expect("the object names atanf");
    let mut bad = t.object.clone();
    bad[at..at + 5].copy_from_slice(b"atanq");
    let e = jit.load_task("s.0", &bad, &t.meta).unwrap_err();
    assert_eq!(e.kind, JitErrorKind::Link, "{e}");
    assert!(e.message.contains("atanq"), "{e}");
    // The JIT is still healthy, and the good object loads again.
    jit.load_task("s.0", &t.object, &t.meta).unwrap();
}

#[test]
fn field_storage_that_does_not_hold_its_shape_is_an_error_not_a_crash() {
    let stream = saxpy_stream(100, 100);
    let mut e = JitEngine::new(compiler(), JitPath::PerTask, 1).unwrap();
    let mut fields = Fields::zeroed(&stream);
    fields.get_mut("x").unwrap().bytes = vec![0; 10].into();
    let err = e.run_kernel(&stream, "k", &[Const::f32(1.0)], &mut fields).unwrap_err();
    assert!(err.message.contains("@x holds 10 bytes"), "{err}");
    // A field of another shape than the task was compiled for.
    let mut fields = Fields::zeroed(&stream);
    fields.get_mut("y").unwrap().shape = vec![10, 10];
    let err = e.run_kernel(&stream, "k", &[Const::f32(1.0)], &mut fields).unwrap_err();
    assert!(err.message.contains("compiled for @y"), "{err}");
}
