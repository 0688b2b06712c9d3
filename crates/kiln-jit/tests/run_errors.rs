//! Run-time errors name the statement, in every engine: the interpreter,
//! the JIT per task and the JIT's whole-kernel path report an out-of-bounds
//! access at the same statement (in a task body, or in a function it
//! calls), with the same words. The compiled objects carry statement
//! numbers, not locations: lines added above a statement change no key,
//! and an object loaded for the old text names the statement where the new
//! text has it.

use kiln::config::CompileConfig;
use kiln::exec::{Engine, Fields, RunError};
use kiln::interp::Interpreter;
use kiln::ir::Stream;
use kiln_codegen::Compiler;
use kiln_jit::engine::{JitEngine, JitPath};

const SRC: &str = "field @x : f32[8]
field @g : i32[4, 4]

func @get(%r: i32, %c: i32) -> i32 {
  %v = load @g[%r, %c]
  ret %v
}

func @put(%i: i32) {
  %v = const 2.0 : f32
  store @x[%i], %v
}

kernel @direct() {
  for %i in 0 .. 9 {
    %v = const 1.0 : f32
    store @x[%i], %v
  }
}

kernel @called(%c: i32) {
  for %r in 0 .. 4 {
    %v = call @get(%r, %c)
    store @g[%r, %r], %v
  }
}

kernel @second() {
  %z = const 0 : i32
  %w = call @get(%z, %z)
  for %i in 0 .. 9 {
    call @put(%i)
  }
}
";

fn parse(src: &str) -> Stream {
    let s = kiln::parser::parse(src).unwrap();
    kiln::verifier::verify(&s).unwrap();
    s
}

fn run(engine: &mut dyn Engine, stream: &Stream, kernel: &str, args: &[kiln::ir::Const]) -> RunError {
    let mut fields = Fields::try_zeroed(stream).unwrap();
    engine.run_kernel(stream, kernel, args, &mut fields).unwrap_err()
}

/// The line number and text of the statement an error names.
fn located(src: &str, e: &RunError) -> (usize, String) {
    let span = e.at.unwrap_or_else(|| panic!("no location: {e}"));
    let line = src[..span.start as usize].matches('\n').count() + 1;
    (line, src[span.range()].to_string())
}

fn jit(path: JitPath) -> JitEngine {
    JitEngine::new(Compiler::host(CompileConfig::default()).unwrap(), path, 1).unwrap()
}

/// (kernel, arguments, line, statement text) of each failing case.
fn cases() -> Vec<(&'static str, Vec<kiln::ir::Const>, usize, &'static str)> {
    vec![
        ("direct", vec![], 17, "store @x[%i], %v"),
        ("called", vec![kiln::ir::Const::i32(4)], 5, "%v = load @g[%r, %c]"),
        // The second task of a kernel whose first task calls another
        // function: numbers run on across the whole-kernel object's bodies.
        ("second", vec![], 11, "store @x[%i], %v"),
    ]
}

#[test]
fn every_engine_names_the_statement() {
    let stream = parse(SRC);
    for (kernel, args, line, text) in cases() {
        let want = run(&mut Interpreter::new(), &stream, kernel, &args);
        assert_eq!(located(SRC, &want), (line, text.to_string()), "interp, @{kernel}: {want}");
        for path in [JitPath::PerTask, JitPath::WholeKernel] {
            let e = run(&mut jit(path), &stream, kernel, &args);
            assert_eq!(located(SRC, &e), (line, text.to_string()), "{path:?}, @{kernel}: {e}");
            // The interpreter runs the kernel unsplit, but names the code
            // it runs by the task offload puts it in, as the JIT does.
            assert_eq!(e.message, want.message, "{path:?}, @{kernel}");
        }
    }
}

#[test]
fn a_moved_comment_changes_no_key_and_the_line_follows_the_statement() {
    let moved_src =
        SRC.replace("    %v = const 1.0 : f32\n", "    ; a comment\n\n    %v = const 1.0 : f32\n    ; another\n");
    assert_ne!(moved_src, SRC);
    let config = CompileConfig::default();
    let keys = kiln::key::KeySet::of_text(SRC, &config).unwrap();
    let moved_keys = kiln::key::KeySet::of_text(&moved_src, &config).unwrap();
    assert!(keys.tasks.len() >= 3, "{keys:?}");
    assert_eq!(keys, moved_keys);

    // One engine: the task loaded for the first text is reused for the
    // second (same canonical module), and still names the moved line.
    let mut e = jit(JitPath::PerTask);
    let first = run(&mut e, &parse(SRC), "direct", &[]);
    assert_eq!(located(SRC, &first), (17, "store @x[%i], %v".to_string()));
    let compiled = e.stats.run.compiled;
    let second = run(&mut e, &parse(&moved_src), "direct", &[]);
    assert_eq!(e.stats.run.compiled, compiled, "the loaded task was not reused");
    assert_eq!(located(&moved_src, &second), (20, "store @x[%i], %v".to_string()));
}

/// A statement a pass made has no source text: the error stays unlocated
/// rather than pointing somewhere else.
#[test]
fn a_statement_without_source_text_is_not_located() {
    let mut stream = parse(SRC);
    for m in &mut stream.modules {
        for item in &mut m.items {
            if let kiln::ir::Item::Kernel(k) = item {
                for s in k.body.stmts_mut() {
                    s.span = kiln::ir::Span::DUMMY;
                }
            }
        }
    }
    let e = run(&mut Interpreter::new(), &stream, "direct", &[]);
    assert_eq!(e.at, None, "{e}");
    let e = run(&mut jit(JitPath::PerTask), &stream, "direct", &[]);
    assert_eq!(e.at, None, "{e}");
    assert!(e.message.contains("index 8 out of bounds for field @x"), "{e}");
}
