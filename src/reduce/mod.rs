//! `kiln-reduce`'s library: shrinks a KIR input to a smaller one that a
//! test script still finds interesting, as `llvm-reduce` does for LLVM IR.
//!
//! Owns: the reduction loop: every pass of [`shrink::SHRINKS`] in turn,
//! over chunks of its targets that halve down to one (delta debugging),
//! until a whole round changes nothing; which candidates are tried (only
//! those that print, parse back, verify, and are smaller by [`Size`]);
//! trying several at once on a rayon pool while keeping the result what
//! one-at-a-time trying gives (the first interesting candidate in target
//! order wins; later ones of its batch are dropped), so the output does not
//! depend on `-j`; stopping early when interrupted.
//!
//! Must never: print, exit or look at the terminal (progress and each
//! better result go to the caller's [`Observer`]); accept a candidate that
//! does not verify; depend on timing or on the order tries finish in.

mod oracle;
mod shrink;
mod size;

pub use oracle::{find_script, Oracle, ScriptError, Verdict};
pub use shrink::{Shrink, Target, SHRINKS};
pub use size::Size;

use crate::ir::Stream;
use rayon::prelude::*;
use std::io;

/// Where a reduction is, for a progress display.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// The pass being tried.
    pub pass: &'static str,
    /// The size of the best candidate so far.
    pub size: Size,
    /// Tries of the script so far.
    pub tries: u64,
}

/// What a reduction tells its caller as it goes.
pub trait Observer {
    /// Called after each batch of tries.
    fn progress(&mut self, p: &Progress);
    /// A smaller interesting candidate was found (its canonical text):
    /// the caller keeps it (a reduction interrupted later leaves this).
    fn better(&mut self, text: &str) -> io::Result<()>;
}

/// Why a reduction could not run.
#[derive(Debug)]
pub enum ReduceError {
    /// The script does not find the input itself interesting (the exit
    /// status it gave).
    NotInteresting(String),
    /// The script did not finish on the input within the timeout.
    Hangs,
    /// The script could not be run.
    Run(io::Error),
    /// The caller could not keep a better candidate.
    Keep(io::Error),
}

/// How a reduction ended.
#[derive(Debug)]
pub struct Outcome {
    /// The canonical text of the smallest interesting candidate.
    pub text: String,
    pub before: Size,
    pub after: Size,
    /// The input's canonical text's length in bytes.
    pub bytes_before: usize,
    pub tries: u64,
    /// Whether it stopped because it was interrupted (`text` is the best
    /// found until then).
    pub interrupted: bool,
}

/// A candidate worth a try: it verifies and is smaller than the best.
struct Candidate {
    stream: Stream,
    text: String,
    size: Size,
}

struct Reduction<'a, 'o> {
    oracle: &'a Oracle<'o>,
    observer: &'a mut dyn Observer,
    pool: rayon::ThreadPool,
    jobs: usize,
    best: Candidate,
    tries: u64,
}

/// Reduces `input` (a verified stream) with `jobs` tries at a time.
pub fn reduce(
    input: &Stream,
    oracle: &Oracle,
    jobs: usize,
    observer: &mut dyn Observer,
) -> Result<Outcome, ReduceError> {
    let text = input.to_string();
    let size = Size::of(input);
    let (before, bytes_before) = (size, text.len());
    let best = Candidate { stream: input.clone(), text, size };
    match oracle.judge(&best.text).map_err(ReduceError::Run)? {
        Verdict::Interesting => {}
        Verdict::Boring(status) => return Err(ReduceError::NotInteresting(status)),
        Verdict::TimedOut => return Err(ReduceError::Hangs),
        Verdict::Cancelled => {
            return Ok(Outcome { text: best.text, before, after: size, bytes_before, tries: 1, interrupted: true })
        }
    }
    observer.better(&best.text).map_err(ReduceError::Keep)?;
    let jobs = jobs.max(1);
    let pool =
        rayon::ThreadPoolBuilder::new().num_threads(jobs).build().map_err(|e| ReduceError::Run(io::Error::other(e)))?;
    let mut r = Reduction { oracle, observer, pool, jobs, best, tries: 1 };
    let interrupted = r.until_fixed_point()?;
    let Reduction { best, tries, .. } = r;
    Ok(Outcome { text: best.text, before, after: best.size, bytes_before, tries, interrupted })
}

impl Reduction<'_, '_> {
    /// Runs every pass until a round changes nothing; true if interrupted.
    fn until_fixed_point(&mut self) -> Result<bool, ReduceError> {
        loop {
            let mut changed = false;
            for shrink in SHRINKS {
                match self.run(shrink)? {
                    Step::Interrupted => return Ok(true),
                    Step::Changed => changed = true,
                    Step::Unchanged => {}
                }
            }
            if !changed {
                return Ok(false);
            }
        }
    }

    /// One pass: chunks of its targets, halving to single targets.
    fn run(&mut self, shrink: &Shrink) -> Result<Step, ReduceError> {
        let mut changed = Step::Unchanged;
        let mut chunk = shrink.targets(&self.best.stream).len();
        while chunk > 0 {
            let mut start = 0;
            loop {
                let targets = shrink.targets(&self.best.stream);
                if start >= targets.len() {
                    break;
                }
                let (batch, next) = self.batch(shrink, &targets, start, chunk);
                match self.try_batch(shrink, batch)? {
                    Tried::Interrupted => return Ok(Step::Interrupted),
                    Tried::Accepted(at) => {
                        changed = Step::Changed;
                        start = at;
                    }
                    Tried::Nothing => start = next,
                }
            }
            chunk = if chunk == 1 { 0 } else { chunk.div_ceil(2) };
        }
        Ok(changed)
    }

    /// Up to `jobs` candidates from chunks of `chunk` targets from `start`
    /// on (chunks that give no candidate are skipped), each with the start
    /// of its chunk; and where the next batch starts.
    fn batch(
        &self,
        shrink: &Shrink,
        targets: &[Target],
        start: usize,
        chunk: usize,
    ) -> (Vec<(usize, Candidate)>, usize) {
        let mut batch = Vec::new();
        let mut at = start;
        while batch.len() < self.jobs && at < targets.len() {
            let end = (at + chunk).min(targets.len());
            if let Some(c) = self.candidate(shrink, &targets[at..end]) {
                batch.push((at, c));
            }
            at = end;
        }
        (batch, at)
    }

    /// The best stream with `shrink` applied to `targets`, if it prints,
    /// parses back, verifies and is smaller.
    fn candidate(&self, shrink: &Shrink, targets: &[Target]) -> Option<Candidate> {
        let text = shrink.apply(&self.best.stream, targets).to_string();
        let stream = crate::parser::parse(&text).ok()?;
        crate::verifier::verify(&stream).ok()?;
        let size = Size::of(&stream);
        (size < self.best.size).then(|| Candidate { text: stream.to_string(), stream, size })
    }

    /// Runs the script on a batch at once; the first interesting candidate
    /// in target order becomes the best.
    fn try_batch(&mut self, shrink: &Shrink, batch: Vec<(usize, Candidate)>) -> Result<Tried, ReduceError> {
        let oracle = self.oracle;
        let verdicts: Vec<io::Result<Verdict>> =
            self.pool.install(|| batch.par_iter().map(|(_, c)| oracle.judge(&c.text)).collect());
        self.tries += batch.len() as u64;
        let mut outcome = Tried::Nothing;
        for ((at, c), v) in batch.into_iter().zip(verdicts) {
            match v.map_err(ReduceError::Run)? {
                Verdict::Interesting => {
                    self.observer.better(&c.text).map_err(ReduceError::Keep)?;
                    self.best = c;
                    outcome = Tried::Accepted(at);
                    break;
                }
                Verdict::Cancelled => return Ok(Tried::Interrupted),
                Verdict::Boring(_) | Verdict::TimedOut => {}
            }
        }
        if oracle.cancelled() {
            return Ok(Tried::Interrupted);
        }
        self.observer.progress(&Progress { pass: shrink.name, size: self.best.size, tries: self.tries });
        Ok(outcome)
    }
}

enum Step {
    Changed,
    Unchanged,
    Interrupted,
}

enum Tried {
    Accepted(usize),
    Nothing,
    Interrupted,
}

#[cfg(test)]
mod tests;
