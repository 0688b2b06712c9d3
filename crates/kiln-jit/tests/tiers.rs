//! Tiered compilation (`docs/runtime.md`, "Tiers").
//!
//! - The quick tier (`-O0`), the optimised tier (`-O2`) and a kernel
//!   interpreted while its optimised tier compiles compute the same
//!   results bit for bit on every `.kir` file of `testdata/` and
//!   `lit-tests/` that runs: every field's digest, every printed line, and
//!   the same error for a run that fails. One thread, so that a float
//!   `atomic` sums in one order on both.
//! - A run whose background compile of the optimised tier is killed mid-way
//!   goes on with its quick tier: right results and one warning.
//! - A run whose background compile ends replaces its tasks at a launch
//!   boundary: every later launch is of the optimised tier, with the same
//!   results, and the records are in the cache for the next process.
//! - A run of several kernels compiles the next kernel's tasks ahead, on a
//!   thread of their own, in the tier they start on, with the same results
//!   and counters; a kernel compiled ahead that never runs is waited for
//!   and not stored.
//! - A kernel small enough is interpreted, compiling nothing before its
//!   launches (nor ahead), until its optimised tier is ready; the next
//!   process loads that. Past the run's budget, or with `--fast-math`,
//!   kernels compile their quick tier.

#[path = "../../../tests/common/mod.rs"]
mod common;

use common::run_all;
use kiln::config::CompileConfig;
use kiln::exec::{Engine, FieldData, Fields};
use kiln::interp::Interpreter;
use kiln::ir::Stream;
use kiln_codegen::Compiler;
use kiln_jit::cached::CachedTasks;
use kiln_jit::engine::{JitEngine, JitPath};
use kiln_jit::tiers::{InterpretBudget, StartFill, Tiers};
use kiln_llvm::{session, CompileProcess, HostTarget};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const COMPILE: &str = concat!(env!("KILN_BINARIES_DIR"), "/kiln-compile");

fn engine(config: CompileConfig) -> JitEngine {
    JitEngine::new(Compiler::host(config).unwrap(), JitPath::PerTask, 1).unwrap()
}

/// What a run of every kernel of `stream` leaves: each field's bytes, and
/// what it printed; or its error.
fn outcome(engine: &mut dyn Engine, stream: &Stream) -> Result<(Digests, Vec<String>), String> {
    let fields = run_all(engine, stream)?;
    Ok((field_bytes(&fields), engine.take_printed()))
}

/// Every field's name and digest (of its bytes).
type Digests = Vec<(String, String)>;

fn field_bytes(fields: &Fields) -> Digests {
    fields.names().map(|n| (n.to_string(), fields.get(n).map(FieldData::digest).unwrap_or_default())).collect()
}

#[test]
fn the_tiers_compute_the_same_results_on_the_whole_corpus() {
    let opt = CompileConfig::default();
    let (mut quick_engine, mut opt_engine) = (engine(opt.quick()), engine(opt.clone()));
    // Every kernel whose launches' bound is known is interpreted: its
    // optimised tier's background compile (a `sleep`, killed at the end)
    // never ends.
    let dir = tempfile::tempdir().unwrap();
    let target = HostTarget::detect().unwrap();
    let provider = CachedTasks::new(session::open_store(dir.path(), &target, Default::default()).unwrap());
    let fills = Arc::new(Mutex::new(Vec::new()));
    let noted = fills.clone();
    let never_ends: StartFill = Box::new(move |_| {
        let started = kiln::compile_protocol::start(Path::new("sleep"), &["600".into()], "")?;
        noted.lock().unwrap().push(started.id());
        Ok(started)
    });
    let all = InterpretBudget { kernel: 100_000_000, run: u64::MAX };
    let tiers = Tiers::new(Box::new(Compiler::host(opt.quick()).unwrap()), Box::new(provider.sibling()), never_ends);
    let mut interp_engine = engine(opt);
    interp_engine.set_tiers(tiers.interpreting(all));
    interp_engine.set_provider(Box::new(provider));
    let (mut compared, mut failures) = (0, Vec::new());
    for file in common::kir_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let Ok(stream) = kiln::parser::parse(&text) else { continue };
        if kiln::verifier::verify(&stream).is_err() {
            continue;
        }
        let quick = outcome(&mut quick_engine, &stream);
        let optimised = outcome(&mut opt_engine, &stream);
        let interpreted = outcome(&mut interp_engine, &stream);
        if quick != optimised || interpreted != optimised {
            let shown = format!("quick {quick:?}\n  opt {optimised:?}\n  interpreted {interpreted:?}");
            failures.push(format!("{}: {shown}", file.display()));
        }
        compared += 1;
    }
    for pid in fills.lock().unwrap().iter() {
        std::process::Command::new("kill").arg(pid.to_string()).status().unwrap();
    }
    assert!(compared >= 60, "only {compared} files ran");
    assert!(failures.is_empty(), "the tiers differ:\n{}", failures.join("\n"));
    let s = &interp_engine.stats.run;
    assert!(s.interp_launches >= 150, "only {} launches were interpreted: {s:?}", s.interp_launches);
}

/// Eight loops of math over 64K floats: long enough to compile at `-O2`
/// that a background compile can be caught mid-way.
const MATH: &str = "\
field @x : f32[65536]
field @y : f32[65536]
kernel @init(%n: i32 = 65536) {
  for %i in 0 .. %n {
    %f = cast %i to f32
    %s = const 0.001 : f32
    %v = mul %f, %s
    store @x[%i], %v
  }
}
kernel @math(%n: i32 = 65536) {
  for %i in 0 .. %n {
    %a = load @x[%i]
    %b = sin %a
    %c = exp %b
    %d = sqrt %c
    %e = cos %d
    %g = log %c
    %h = add %e, %g
    %k = abs %h
    %l = floor %k
    %m = add %k, %l
    store @y[%i], %m
  }
}
";

/// A run over the cache at `root` with the tiers `kiln-run --tier=auto`
/// has: the quick tier compiled here, the optimised one by a
/// `kiln-compile --cache-dir` fill in the background, whose process ids
/// go to `fills`.
fn tiered_engine(root: &Path, fills: Arc<Mutex<Vec<u32>>>) -> JitEngine {
    tiered(root, fills, None)
}

/// [`tiered_engine`], interpreting kernels within `budget` (as `kiln-run`
/// does with [`InterpretBudget::default()`]).
fn interpreting(root: &Path, fills: Arc<Mutex<Vec<u32>>>, budget: InterpretBudget) -> JitEngine {
    tiered(root, fills, Some(budget))
}

fn tiered(root: &Path, fills: Arc<Mutex<Vec<u32>>>, budget: Option<InterpretBudget>) -> JitEngine {
    let config = CompileConfig::default();
    let target = HostTarget::detect().unwrap();
    let store = session::open_store(root, &target, Default::default()).unwrap();
    let provider = CachedTasks::new(store);
    let opt = CompileProcess::new(config.clone(), target, COMPILE.into()).unwrap();
    let args = vec![format!("--cache-dir={}", root.display())];
    let start_fill: StartFill = Box::new(move |modules| {
        let started = opt.start_fill(modules, &args).map_err(|e| e.to_string())?;
        fills.lock().unwrap().push(started.id());
        Ok(started)
    });
    let quick = Compiler::host(config.quick()).unwrap();
    let mut e = engine(config);
    let tiers = Tiers::new(Box::new(quick), Box::new(provider.sibling()), start_fill);
    e.set_tiers(match budget {
        Some(b) => tiers.interpreting(b),
        None => tiers,
    });
    e.set_provider(Box::new(provider));
    e
}

fn run(e: &mut JitEngine, stream: &Stream, fields: &mut Fields, kernel: &str) {
    e.run_kernel(stream, kernel, &[kiln::ir::Const::i32(65536)], fields).unwrap();
}

fn want() -> (Stream, Digests) {
    (kiln::parser::parse(MATH).unwrap(), small_want(65536))
}

/// What `engine` leaves running `MATH`'s `@init` then `@math` at `n`
/// elements (`MATH` is declared for 65536), as one batch.
fn small_batch(engine: &mut dyn Engine, n: i32) -> Digests {
    let stream = kiln::parser::parse(MATH).unwrap();
    let mut fields = Fields::zeroed(&stream);
    let arg = [kiln::ir::Const::i32(n)];
    engine.run_kernels(&stream, &[("init", &arg), ("math", &arg)], &mut fields).unwrap();
    field_bytes(&fields)
}

/// What the interpreter leaves after `@init` then `@math` at `n`.
fn small_want(n: i32) -> Digests {
    small_batch(&mut Interpreter::new(), n)
}

/// Waits until none of the processes `pids` runs any more (a child left
/// unreaped, a zombie, has ended).
fn wait_for(pids: &[u32]) {
    let runs = |p: &u32| {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z'))
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while pids.iter().any(runs) {
        assert!(Instant::now() < deadline, "the background compiles did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_small_kernel_is_interpreted_until_its_optimised_tier_is_ready() {
    let dir = tempfile::tempdir().unwrap();
    let fills = Arc::new(Mutex::new(Vec::new()));
    let mut e = interpreting(dir.path(), fills.clone(), InterpretBudget::default());
    // 1024 elements: both kernels well within the budget.
    assert_eq!(small_batch(&mut e, 1024), small_want(1024));
    e.finish();
    let s = &e.stats;
    // Nothing compiled here, not even ahead: each kernel's optimised tier
    // in a background compile of its own (the second waited for the
    // first, and got its own at the end).
    assert_eq!((s.run.interp_launches, s.run.compiled, s.run.quick_launches), (2, 0, 0), "{s:?}");
    assert_eq!((s.run.opt_pending, s.launches), (2, 2), "{s:?}");
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    wait_for(&fills.lock().unwrap());
    // The next process loads the optimised tier those compiles stored.
    let mut next = interpreting(dir.path(), Arc::new(Mutex::new(Vec::new())), InterpretBudget::default());
    assert_eq!(small_batch(&mut next, 1024), small_want(1024));
    next.finish();
    let s = &next.stats.run;
    assert_eq!((s.hits, s.opt_launches, s.interp_launches), (2, 2, 0), "{s:?}");
}

#[test]
fn the_same_process_replaces_an_interpreted_kernel_by_its_optimised_tier() {
    let dir = tempfile::tempdir().unwrap();
    let fills = Arc::new(Mutex::new(Vec::new()));
    let mut e = interpreting(dir.path(), fills.clone(), InterpretBudget::default());
    let want = small_want(512);
    assert_eq!(small_batch(&mut e, 512), want);
    // Launches go on in the interpreter until the compiles end, then
    // load the optimised tier at a launch boundary.
    let deadline = Instant::now() + Duration::from_secs(120);
    while e.stats.run.upgraded < 2 {
        assert!(Instant::now() < deadline, "the background compiles did not end: {:?}", e.stats);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(small_batch(&mut e, 512), want);
    }
    let before = e.stats.run.opt_launches;
    assert_eq!(small_batch(&mut e, 512), want);
    e.finish();
    let s = &e.stats;
    assert_eq!((s.run.opt_launches, s.run.compiled, s.run.quick_launches), (before + 2, 0, 0), "{s:?}");
    assert_eq!(fills.lock().unwrap().len(), 2, "one background compile a kernel, never two");
}

#[test]
fn past_the_budget_or_with_fast_math_a_kernel_compiles_its_quick_tier() {
    // @init (1024 x 5 statements) fits a run's budget of 6000; @math then
    // does not, and compiles its quick tier. At 65536 neither fits a
    // kernel's.
    let budget = InterpretBudget { kernel: 250_000, run: 6_000 };
    for (n, interpreted, quick) in [(1024, 1, 1), (65536, 0, 2)] {
        let dir = tempfile::tempdir().unwrap();
        let fills = Arc::new(Mutex::new(Vec::new()));
        let mut e = interpreting(dir.path(), fills.clone(), budget);
        assert_eq!(small_batch(&mut e, n), small_want(n));
        e.finish();
        let s = &e.stats.run;
        assert_eq!((s.interp_launches, s.quick_launches), (interpreted, quick), "n = {n}: {s:?}");
        wait_for(&fills.lock().unwrap());
    }
    // --fast-math: the interpreter does not compute what fast code does.
    let dir = tempfile::tempdir().unwrap();
    let config = CompileConfig { fast_math: true, ..CompileConfig::default() };
    let target = HostTarget::detect().unwrap();
    let provider = CachedTasks::new(session::open_store(dir.path(), &target, Default::default()).unwrap());
    let no_fill: StartFill = Box::new(|_| Err("no background compile in this test".into()));
    let quick = Compiler::host(config.quick()).unwrap();
    let mut e = engine(config);
    e.set_tiers(Tiers::new(Box::new(quick), Box::new(provider.sibling()), no_fill).interpreting(budget));
    e.set_provider(Box::new(provider));
    small_batch(&mut e, 16);
    e.finish();
    assert_eq!((e.stats.run.interp_launches, e.stats.run.quick_launches), (0, 2), "{:?}", e.stats);
}

/// A tiered engine over a fresh cache, [`MATH`] and what it must leave.
struct Lab {
    dir: tempfile::TempDir,
    fills: Arc<Mutex<Vec<u32>>>,
    e: JitEngine,
    stream: Stream,
    want: Digests,
}

fn lab() -> Lab {
    let dir = tempfile::tempdir().unwrap();
    let fills = Arc::new(Mutex::new(Vec::new()));
    let e = tiered_engine(dir.path(), fills.clone());
    let (stream, want) = want();
    Lab { dir, fills, e, stream, want }
}

#[test]
fn a_killed_background_compile_leaves_the_quick_tier_running() {
    let Lab { dir: _dir, fills, mut e, stream, want } = lab();
    let mut fields = Fields::zeroed(&stream);
    run(&mut e, &stream, &mut fields, "init");
    // The first kernel's tasks started on their quick tier, and their
    // optimised tier's compile with them: killed at once, mid-way.
    let pid = fills.lock().unwrap()[0];
    let killed = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
    assert!(killed.success());
    std::thread::sleep(Duration::from_millis(100));
    run(&mut e, &stream, &mut fields, "math");
    run(&mut e, &stream, &mut fields, "math");
    e.finish();
    assert_eq!(field_bytes(&fields), want);
    let s = &e.stats;
    assert_eq!((s.run.upgraded, s.run.opt_launches, s.run.quick_launches), (0, 0, 3), "{s:?}");
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(
        s.warnings[0].contains("could not be compiled in the background")
            && s.warnings[0].contains("killed by a signal"),
        "{:?}",
        s.warnings
    );
    // No other compile was started after the failure.
    assert_eq!(fills.lock().unwrap().len(), 1);
}

#[test]
fn a_finished_background_compile_replaces_the_tasks_at_a_launch_boundary() {
    let Lab { dir, fills, mut e, stream, want } = lab();
    let mut fields = Fields::zeroed(&stream);
    run(&mut e, &stream, &mut fields, "init");
    run(&mut e, &stream, &mut fields, "math");
    // Both kernels' optimised tiers: the first's compile, then the
    // second's, started at the boundary after the first ended.
    let deadline = Instant::now() + Duration::from_secs(120);
    while e.stats.run.upgraded < 2 {
        assert!(Instant::now() < deadline, "the background compiles did not end: {:?}", e.stats);
        std::thread::sleep(Duration::from_millis(50));
        fields = Fields::zeroed(&stream);
        run(&mut e, &stream, &mut fields, "init");
        run(&mut e, &stream, &mut fields, "math");
    }
    let before = e.stats.run.opt_launches;
    // A task replaced by its optimised tier keeps what one iteration of it
    // costs, which says whether a launch is worth the pool's threads.
    let split = e.split(&stream, "math").unwrap().unwrap();
    let work: Vec<Option<u64>> = e.prepare(&split, "math").unwrap().iter().map(|t| t.work).collect();
    assert_eq!(work, [Some(1 + 16 + 16 + 4 + 16 + 16 + 1 + 1 + 1 + 1 + 1)]);
    fields = Fields::zeroed(&stream);
    run(&mut e, &stream, &mut fields, "init");
    run(&mut e, &stream, &mut fields, "math");
    e.finish();
    assert_eq!(field_bytes(&fields), want);
    let s = &e.stats;
    assert_eq!(s.run.opt_launches, before + 2, "{s:?}");
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(fills.lock().unwrap().len(), 2);
    // The next process finds the optimised tier in the cache.
    let mut next = tiered_engine(dir.path(), Arc::new(Mutex::new(Vec::new())));
    let mut fields = Fields::zeroed(&stream);
    run(&mut next, &stream, &mut fields, "init");
    run(&mut next, &stream, &mut fields, "math");
    next.finish();
    assert_eq!(field_bytes(&fields), want);
    assert_eq!((next.stats.run.quick_launches, next.stats.run.opt_launches), (0, 2), "{:?}", next.stats);
}

/// A code generator that fails every compile, as a killed compiler
/// process does.
struct Failing(CompileConfig, HostTarget);

impl kiln_llvm::Backend for Failing {
    fn config(&self) -> &CompileConfig {
        &self.0
    }
    fn target(&self) -> &HostTarget {
        &self.1
    }
    fn compile_tasks(
        &self,
        modules: &[&kiln::ir::Module],
    ) -> Vec<Result<kiln_llvm::CompiledTask, kiln_llvm::CodegenError>> {
        modules.iter().map(|_| Err(kiln_llvm::CodegenError::new("killed by SIGKILL"))).collect()
    }
    fn compile_kernel(&self, _: &Stream, _: &str) -> Result<kiln_llvm::CompiledKernel, kiln_llvm::CodegenError> {
        Err(kiln_llvm::CodegenError::new("killed by SIGKILL"))
    }
    fn compile_functions(
        &self,
        records: &[kiln::key::functions::NeededRecord<'_>],
    ) -> Vec<Result<kiln_llvm::CompiledTask, kiln_llvm::CodegenError>> {
        records.iter().map(|_| Err(kiln_llvm::CodegenError::new("killed by SIGKILL"))).collect()
    }
}

#[test]
fn a_quick_tier_that_fails_leaves_the_task_to_the_optimised_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = CompileConfig::default();
    let target = HostTarget::detect().unwrap();
    let provider = CachedTasks::new(session::open_store(dir.path(), &target, Default::default()).unwrap());
    let no_fill: StartFill = Box::new(|_| Err("no background compile in this test".into()));
    let mut e = engine(config.clone());
    e.set_tiers(Tiers::new(Box::new(Failing(config.quick(), target)), Box::new(provider.sibling()), no_fill));
    e.set_provider(Box::new(provider));
    let (stream, want) = want();
    let mut fields = Fields::zeroed(&stream);
    run(&mut e, &stream, &mut fields, "init");
    run(&mut e, &stream, &mut fields, "math");
    e.finish();
    assert_eq!(field_bytes(&fields), want);
    let s = &e.stats;
    assert_eq!((s.run.quick_launches, s.run.opt_launches), (0, 2), "{s:?}");
    assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
    assert!(s
        .warnings
        .iter()
        .all(|w| w.contains("the quick tier failed (killed by SIGKILL); it runs its optimised tier")));
}

/// A code generator that notes the thread each batch is compiled on and
/// its size, around the host's.
struct Noting {
    inner: Compiler,
    batches: Arc<Mutex<Vec<(String, usize)>>>,
}

impl kiln_llvm::Backend for Noting {
    fn config(&self) -> &CompileConfig {
        self.inner.config()
    }
    fn target(&self) -> &HostTarget {
        self.inner.target()
    }
    fn compile_tasks(
        &self,
        modules: &[&kiln::ir::Module],
    ) -> Vec<Result<kiln_llvm::CompiledTask, kiln_llvm::CodegenError>> {
        let thread = std::thread::current().name().unwrap_or("").to_string();
        self.batches.lock().unwrap().push((thread, modules.len()));
        self.inner.compile_tasks(modules)
    }
    fn compile_kernel(&self, s: &Stream, k: &str) -> Result<kiln_llvm::CompiledKernel, kiln_llvm::CodegenError> {
        self.inner.compile_kernel(s, k)
    }
    fn compile_functions(
        &self,
        records: &[kiln::key::functions::NeededRecord<'_>],
    ) -> Vec<Result<kiln_llvm::CompiledTask, kiln_llvm::CodegenError>> {
        self.inner.compile_functions(records)
    }
}

/// A run of `runs` through `Engine::run_kernels` over a fresh cache, with
/// or without tiers, whose compiles (of the quick tier, when tiered) are
/// noted: the batches, the engine after `finish`, and the fields.
fn run_batch(text: &str, tiered: bool, runs: &[&str]) -> (Vec<(String, usize)>, JitEngine, Result<Fields, String>) {
    let dir = tempfile::tempdir().unwrap();
    let config = CompileConfig::default();
    let target = HostTarget::detect().unwrap();
    let provider = CachedTasks::new(session::open_store(dir.path(), &target, Default::default()).unwrap());
    let batches = Arc::new(Mutex::new(Vec::new()));
    let noting = |config: CompileConfig| Noting { inner: Compiler::host(config).unwrap(), batches: batches.clone() };
    let mut e = if tiered {
        let no_fill: StartFill = Box::new(|_| Err("no background compile in this test".into()));
        let mut e = engine(config.clone());
        e.set_tiers(Tiers::new(Box::new(noting(config.quick())), Box::new(provider.sibling()), no_fill));
        e
    } else {
        JitEngine::new(noting(config), JitPath::PerTask, 1).unwrap()
    };
    e.set_provider(Box::new(provider));
    let stream = kiln::parser::parse(text).unwrap();
    let mut fields = Fields::zeroed(&stream);
    let arg = [kiln::ir::Const::i32(65536)];
    let runs: Vec<(&str, &[kiln::ir::Const])> = runs.iter().map(|k| (*k, &arg[..])).collect();
    let result = e.run_kernels(&stream, &runs, &mut fields).map(|()| fields).map_err(|e| e.message);
    e.finish();
    let batches = batches.lock().unwrap().clone();
    (batches, e, result)
}

/// The batches in a stable order (the two threads race to note theirs).
fn noted(mut batches: Vec<(String, usize)>) -> Vec<(String, usize)> {
    batches.sort();
    batches
}

/// One task compiled ahead, and one on the test's own thread.
fn ahead_and_main() -> Vec<(String, usize)> {
    let main = std::thread::current().name().unwrap_or("").to_string();
    noted(vec![("kiln-ahead".to_string(), 1), (main, 1)])
}

#[test]
fn a_run_of_two_kernels_compiles_the_second_ahead_with_the_same_results() {
    let (_, want) = want();
    for tiered in [false, true] {
        let (batches, e, fields) = run_batch(MATH, tiered, &["init", "math", "math"]);
        assert_eq!(field_bytes(&fields.unwrap()), want, "tiered: {tiered}");
        // @init's task on the run's thread, @math's on the thread that
        // compiles ahead, while @init was prepared and run.
        assert_eq!(noted(batches), ahead_and_main(), "tiered: {tiered}");
        let s = &e.stats;
        assert_eq!((s.run.misses, s.run.compiled, s.run.stored, s.launches), (2, 2, 2, 3), "{s:?}");
        // Tiered, the optimised tier's compile is refused in this test.
        assert!(s.warnings.iter().all(|w| w.contains("no background compile in this test")), "{:?}", s.warnings);
    }
}

#[test]
fn a_kernel_compiled_ahead_that_never_runs_is_waited_for_and_not_stored() {
    // @bad fails at its launch while @math compiles ahead: the run's
    // error, @bad's task stored (it loaded), @math's compiled and dropped.
    let bad = "kernel @bad(%n: i32 = 65536) {\n  for %i in 0 .. %n {\n    %j = add %i, %n\n    %f = cast %i to f32\n    store @y[%j], %f\n  }\n}\n";
    let (batches, e, fields) = run_batch(&format!("{MATH}{bad}"), false, &["bad", "math"]);
    let err = fields.err().unwrap();
    assert!(err.contains("out of bounds"), "{err}");
    assert_eq!(noted(batches), ahead_and_main());
    let s = &e.stats;
    assert_eq!((s.run.compiled, s.run.stored), (1, 1), "{s:?}");
}
