//! Passes over KIR and the one registry that `kiln-opt --passes=`,
//! `--print-passes` and the tests all read.
//!
//! Owns: the [`Pass`] trait, the [`REGISTRY`] of passes and the pass
//! manager that runs a pipeline (with verification after each pass when
//! asked).
//!
//! Must never: print; passes return diagnostics, the tool reports them.

use crate::diag::Diagnostics;
use crate::ir::Stream;

pub mod cse;
pub mod dce;
pub mod demote;
pub mod offload;
pub mod simplify;
pub mod split;
pub mod task_form;
mod util;

pub use task_form::to_task_stream;

/// A transformation (or check) of a whole stream of modules.
pub trait Pass: Sync {
    /// The name used in `--passes=`.
    fn name(&self) -> &'static str;
    /// One line for `--print-passes`.
    fn description(&self) -> &'static str;
    /// Runs the pass. On error the stream may be partly changed; callers
    /// discard it.
    fn run(&self, stream: &mut Stream) -> Result<(), Diagnostics>;
}

/// `verify`: checks the stream and changes nothing.
struct Verify;

impl Pass for Verify {
    fn name(&self) -> &'static str {
        "verify"
    }
    fn description(&self) -> &'static str {
        "check that the IR is well formed; change nothing"
    }
    fn run(&self, stream: &mut Stream) -> Result<(), Diagnostics> {
        crate::verifier::verify(stream)
    }
}

/// Every pass, in the order `--print-passes` lists them.
pub static REGISTRY: &[&dyn Pass] = &[
    &Verify,
    &offload::Offload,
    &demote::DemoteAtomics,
    &simplify::Simplify,
    &cse::Cse,
    &dce::Dce,
    &split::SplitTasks,
];

/// The pipeline that turns a kernel file into keyed, compilable per-task
/// modules: the `-O2` preset (`simplify, dce, offload, demote-atomics,
/// simplify, cse, dce`) then `split-tasks`. `kiln-key`, `kiln-compile` and `kiln-run` all use
/// it, so they agree on every task's text and therefore on its key; and
/// `kiln-opt -O2 | kiln-opt --passes=split-tasks` gives the same stream.
/// Simplifying before `offload` turns constant loop bounds into literals
/// (so loop nests over a field's shape become `struct_for` tasks) and
/// removes dead top-level code that would otherwise become tasks.
pub fn default_pipeline() -> Vec<&'static dyn Pass> {
    let mut passes: Vec<&'static dyn Pass> = preset(OptPreset::O2).iter().filter_map(|name| lookup(name)).collect();
    passes.push(&split::SplitTasks);
    passes
}

/// Runs passes in order, stopping at the first that fails.
pub fn run_passes(passes: &[&dyn Pass], stream: &mut Stream) -> Result<(), Diagnostics> {
    passes.iter().try_for_each(|p| p.run(stream))
}

/// Looks a pass up by name.
pub fn lookup(name: &str) -> Option<&'static dyn Pass> {
    REGISTRY.iter().copied().find(|p| p.name() == name)
}

/// The preset a pipeline text `default<O0>` .. `default<O3>` names (opt's
/// spelling, its level as `-O` takes it: [`OptPreset::of`]).
pub fn default_text(text: &str) -> Option<OptPreset> {
    let n = text.strip_prefix("default<O")?.strip_suffix('>')?;
    let level = crate::config::OptLevel::ALL.into_iter().find(|l| n == l.number().to_string())?;
    Some(OptPreset::of(level))
}

// ===========================================================================
// Pass manager: pipelines, presets and the flags of `kiln-opt`
// (`--verify-each`, `--print-after-all`, `--print-changed`, `--time-passes`).
//
// Kept apart from the registry above so that adding passes there never
// touches this section.
// ===========================================================================

use std::time::{Duration, Instant};

/// How a pipeline runs: the observable options of `kiln-opt`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipelineOptions {
    /// Run the verifier after every pass; its errors stop the pipeline.
    pub verify_each: bool,
    /// Show the IR after every pass (through the observer).
    pub print_after_all: bool,
    /// Show the IR before the first pass and after every pass that changed
    /// it (through the observer); passes that changed nothing are named.
    pub print_changed: bool,
    /// Show the IR before each run of these passes (`-print-before=PASS`).
    pub print_before: PassSet,
    /// Show the IR after each run of these passes (`-print-after=PASS`).
    pub print_after: PassSet,
}

/// A set of registered passes, by their position in [`REGISTRY`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassSet(u64);

impl PassSet {
    /// The set of the passes named; an unknown name is the error.
    pub fn of<'n>(names: impl IntoIterator<Item = &'n str>) -> Result<PassSet, String> {
        let mut set = 0u64;
        for n in names {
            let i = REGISTRY.iter().position(|p| p.name() == n).ok_or_else(|| n.to_string())?;
            set |= 1 << i;
        }
        Ok(PassSet(set))
    }
    pub fn contains(self, pass: &dyn Pass) -> bool {
        REGISTRY.iter().position(|p| p.name() == pass.name()).is_some_and(|i| self.0 & (1 << i) != 0)
    }
}

/// What the pipeline tells its caller while it runs. The library never
/// prints; a tool implements this to show dumps.
pub trait PipelineObserver {
    /// The IR before the first pass (only with `print_changed`).
    fn initial(&mut self, _stream: &Stream) -> std::io::Result<()> {
        Ok(())
    }
    /// After `pass` ran: `stream` is the IR, `changed` whether the pass
    /// changed it (known only with `print_changed`; `None` otherwise).
    /// Called for every pass when `print_after_all` or `print_changed` is
    /// set, and for the passes of `print_after`.
    fn after_pass(&mut self, _pass: &dyn Pass, _stream: &Stream, _changed: Option<bool>) -> std::io::Result<()> {
        Ok(())
    }
    /// Before `pass` runs on `stream`: for the passes of `print_before`.
    fn before_pass(&mut self, _pass: &dyn Pass, _stream: &Stream) -> std::io::Result<()> {
        Ok(())
    }
}

/// An observer that shows nothing.
pub struct NoObserver;

impl PipelineObserver for NoObserver {}

/// Wall-clock time spent in one pass (and in the verifier after it, with
/// `verify_each`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassTiming {
    pub name: &'static str,
    pub pass: Duration,
    pub verify: Duration,
}

/// Why a pipeline stopped.
#[derive(Debug)]
pub enum PipelineError {
    /// The pass itself reported errors.
    Pass { pass: &'static str, diags: Diagnostics },
    /// `verify_each`: the IR was invalid after this pass (a bug in it).
    Invalid { pass: &'static str, diags: Diagnostics },
    /// The observer failed to show something (e.g. a closed pipe).
    Observer(std::io::Error),
}

/// Runs `passes` in order over `stream`. The caller verifies the input
/// first; with `verify_each` the verifier runs after every pass. Returns
/// the time each pass took.
pub fn run_pipeline(
    stream: &mut Stream,
    passes: &[&dyn Pass],
    opts: &PipelineOptions,
    observer: &mut dyn PipelineObserver,
) -> Result<Vec<PassTiming>, PipelineError> {
    let mut timings = Vec::with_capacity(passes.len());
    if opts.print_changed {
        observer.initial(stream).map_err(PipelineError::Observer)?;
    }
    for &pass in passes {
        // Only --print-changed pays for a copy of the IR.
        if opts.print_before.contains(pass) {
            observer.before_pass(pass, stream).map_err(PipelineError::Observer)?;
        }
        let before = opts.print_changed.then(|| stream.clone());
        let _span = crate::trace::span("pass", pass.name(), crate::trace::WHOLE_INPUT);
        let start = Instant::now();
        let ran = pass.run(stream);
        let pass_time = start.elapsed();
        ran.map_err(|diags| PipelineError::Pass { pass: pass.name(), diags })?;
        let mut verify_time = Duration::ZERO;
        if opts.verify_each {
            let start = Instant::now();
            let checked = crate::verifier::verify(stream);
            verify_time = start.elapsed();
            checked.map_err(|diags| PipelineError::Invalid { pass: pass.name(), diags })?;
        }
        timings.push(PassTiming { name: pass.name(), pass: pass_time, verify: verify_time });
        if opts.print_after_all || opts.print_changed || opts.print_after.contains(pass) {
            let changed = before.map(|b| b != *stream);
            observer.after_pass(pass, stream, changed).map_err(PipelineError::Observer)?;
        }
    }
    Ok(timings)
}

/// An optimisation preset, `-O0` .. `-O2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptPreset {
    /// No pass: the input is verified and printed.
    O0,
    /// Offload into tasks, then clean up.
    O1,
    /// As `O1`, with simplification before offload and common
    /// subexpressions removed after it.
    O2,
}

impl OptPreset {
    /// The preset of an `-O` level: `-O3`, LLVM's highest, is KIR's
    /// highest, `-O2`.
    pub fn of(level: crate::config::OptLevel) -> OptPreset {
        use crate::config::OptLevel;
        match level {
            OptLevel::O0 => OptPreset::O0,
            OptLevel::O1 => OptPreset::O1,
            OptLevel::O2 | OptLevel::O3 => OptPreset::O2,
        }
    }
}

/// The pass names of a preset, in order. Every name is registered (a test
/// checks it): a preset naming an unknown pass is a bug, not a pass to
/// skip.
pub fn preset(level: OptPreset) -> Vec<&'static str> {
    match level {
        OptPreset::O0 => vec![],
        OptPreset::O1 => vec!["offload", "demote-atomics", "simplify", "dce"],
        OptPreset::O2 => vec!["simplify", "dce", "offload", "demote-atomics", "simplify", "cse", "dce"],
    }
}

/// Resolves pass names through the registry; the first unknown name is the
/// error.
pub fn resolve(names: &[&str]) -> Result<Vec<&'static dyn Pass>, String> {
    names.iter().map(|n| lookup(n).ok_or_else(|| n.to_string())).collect()
}

/// The `--time-passes` report: one line per pass, slowest first, like
/// LLVM's pass execution timing report.
pub fn format_timings(timings: &[PassTiming]) -> String {
    use std::fmt::Write;
    let total: Duration = timings.iter().map(|t| t.pass + t.verify).sum();
    let mut rows: Vec<&PassTiming> = timings.iter().collect();
    rows.sort_by_key(|t| std::cmp::Reverse(t.pass + t.verify));
    let mut out = String::new();
    let _ = writeln!(out, "===-------------------------------------------------------------------------===");
    let _ = writeln!(out, "                      ... Pass execution timing report ...");
    let _ = writeln!(out, "===-------------------------------------------------------------------------===");
    let _ = writeln!(out, "  Total Execution Time: {:.4} seconds", total.as_secs_f64());
    let _ = writeln!(out);
    let _ = writeln!(out, "   --Pass Time--   --Verify Time--   --Total--   Name");
    let pct = |d: Duration| if total.is_zero() { 0.0 } else { 100.0 * d.as_secs_f64() / total.as_secs_f64() };
    for t in rows {
        let all = t.pass + t.verify;
        let _ = writeln!(
            out,
            "   {:.4} ({:5.1}%)  {:.4} ({:5.1}%)   {:.4}   {}",
            t.pass.as_secs_f64(),
            pct(t.pass),
            t.verify.as_secs_f64(),
            pct(t.verify),
            all.as_secs_f64(),
            t.name
        );
    }
    let _ =
        writeln!(out, "   {:.4} (100.0%)                      {:.4}   Total", total.as_secs_f64(), total.as_secs_f64());
    out
}

#[cfg(test)]
mod pipeline_tests {
    use super::*;

    #[test]
    fn pipeline_texts_name_the_presets_as_o_levels_do() {
        assert_eq!(default_text("default<O0>"), Some(OptPreset::O0));
        assert_eq!(default_text("default<O1>"), Some(OptPreset::O1));
        assert_eq!(default_text("default<O2>"), Some(OptPreset::O2));
        assert_eq!(default_text("default<O3>"), Some(OptPreset::O2));
        for bad in ["default<O4>", "default<2>", "default<O2", "O2", "default<>"] {
            assert_eq!(default_text(bad), None, "{bad}");
        }
    }

    #[test]
    fn presets_only_name_registered_passes() {
        for level in [OptPreset::O0, OptPreset::O1, OptPreset::O2] {
            let names = preset(level);
            assert_eq!(resolve(&names).map(|p| p.len()), Ok(names.len()), "{level:?}");
        }
        assert!(preset(OptPreset::O0).is_empty());
        assert_eq!(preset(OptPreset::O2).len(), 7);
    }

    #[test]
    fn resolve_reports_the_unknown_name() {
        assert_eq!(resolve(&["verify", "nope"]).err().as_deref(), Some("nope"));
        assert_eq!(resolve(&["verify"]).map(|p| p.len()).ok(), Some(1));
    }

    /// A pass that changes the stream, to see the observer's `changed`.
    struct AddModule;
    impl Pass for AddModule {
        fn name(&self) -> &'static str {
            "add-module"
        }
        fn description(&self) -> &'static str {
            "test pass"
        }
        fn run(&self, stream: &mut Stream) -> Result<(), Diagnostics> {
            stream.modules.push(crate::ir::Module::default());
            Ok(())
        }
    }

    #[derive(Default)]
    struct Record(Vec<(String, Option<bool>)>, usize);
    impl PipelineObserver for Record {
        fn initial(&mut self, _: &Stream) -> std::io::Result<()> {
            self.1 += 1;
            Ok(())
        }
        fn after_pass(&mut self, p: &dyn Pass, _: &Stream, c: Option<bool>) -> std::io::Result<()> {
            self.0.push((p.name().to_string(), c));
            Ok(())
        }
    }

    #[test]
    fn print_changed_reports_which_pass_changed() {
        let verify = lookup("verify").expect("verify is registered");
        let mut s = Stream::default();
        let mut rec = Record::default();
        let opts = PipelineOptions { print_changed: true, ..Default::default() };
        let t = run_pipeline(&mut s, &[verify, &AddModule, verify], &opts, &mut rec).expect("runs");
        assert_eq!(t.len(), 3);
        assert_eq!(rec.1, 1);
        assert_eq!(
            rec.0,
            vec![("verify".into(), Some(false)), ("add-module".into(), Some(true)), ("verify".into(), Some(false))]
        );
    }

    /// A pass that makes invalid IR: a kernel whose body is `break`.
    struct Breaks;
    impl Pass for Breaks {
        fn name(&self) -> &'static str {
            "breaks"
        }
        fn description(&self) -> &'static str {
            "test pass"
        }
        fn run(&self, stream: &mut Stream) -> Result<(), Diagnostics> {
            use crate::ir::*;
            let mut body = Body::new();
            let s = body.new_stmt(StmtKind::Break, Span::DUMMY);
            body.push(body.entry, s);
            let k = Kernel { name: "k".into(), params: Vec::new(), body, span: Span::DUMMY };
            stream.modules.push(Module { name: None, items: vec![Item::Kernel(k)], span: Span::DUMMY });
            Ok(())
        }
    }

    #[test]
    fn verify_each_names_the_pass_that_broke_the_ir() {
        let mut s = Stream::default();
        let opts = PipelineOptions { verify_each: true, ..Default::default() };
        match run_pipeline(&mut s, &[lookup("verify").expect("registered"), &Breaks], &opts, &mut NoObserver) {
            Err(PipelineError::Invalid { pass, diags }) => {
                assert_eq!(pass, "breaks");
                assert_eq!(diags.0[0].message, "break outside a loop");
            }
            other => panic!("expected the verifier to reject the pass's output, got {other:?}"),
        }
        // Without --verify-each the pipeline does not look.
        let mut s = Stream::default();
        assert!(run_pipeline(&mut s, &[&Breaks], &PipelineOptions::default(), &mut NoObserver).is_ok());
    }

    #[test]
    fn observer_is_silent_without_print_flags() {
        let mut s = Stream::default();
        let mut rec = Record::default();
        run_pipeline(&mut s, &[&AddModule], &PipelineOptions::default(), &mut rec).expect("runs");
        assert!(rec.0.is_empty() && rec.1 == 0);
        assert!(format_timings(&[]).contains("Total Execution Time"));
    }
}
