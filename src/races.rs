//! Parallel iterations under the reference interpreter: the order they run
//! in (`kiln-run --iteration-order`) and the data-race detector
//! (`kiln-run --check-races`).
//!
//! Owns: [`IterationOrder`] and its [`Permutation`] (which iteration of a
//! parallel launch runs k-th: ascending, descending, or a seeded shuffle
//! that needs no memory per iteration); [`Shadow`], the shadow state of the
//! field elements one launch of a parallel task touches, and the rule of
//! what a data race is; [`Race`] and [`RaceReport`], the races found, and
//! their rendering as diagnostics against the source.
//!
//! A data race is two different iterations of one launch accessing one
//! field element, at least one of them writing (a plain `store` or an
//! `atomic`), and not both through `atomic`. The interpreter runs the
//! iterations one after the other, so all accesses of one iteration are
//! contiguous in time; the shadow keeps, per element and per kind of access
//! (read, write, atomic), the latest iteration that made one and the latest
//! before that one's. That is enough to find, at every access, an earlier
//! access of another iteration it conflicts with, if there is one.
//!
//! Must never: print; allocate per iteration; hold shadow state for an
//! element no iteration touched (the shadow grows by pages of
//! [`PAGE`] elements, as they are first touched).

use crate::diag::{Diagnostic, Diagnostics, Elsewhere, SourceFile};
use crate::ir::{Name, Span};
use std::collections::HashMap;
use std::fmt;

/// The order in which the iterations of a parallel task (`range_for`,
/// `struct_for`) run under the interpreter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IterationOrder {
    /// Increasing index order (the default).
    #[default]
    Ascending,
    /// Decreasing index order.
    Descending,
    /// A pseudo-random permutation, fixed by the seed (and the launch's
    /// number of iterations).
    Shuffle(u64),
}

impl std::str::FromStr for IterationOrder {
    type Err = String;
    /// `ascending`, `descending`, `shuffle` (seed 0) or `shuffle:SEED`
    /// (SEED a decimal `u64`).
    fn from_str(s: &str) -> Result<IterationOrder, String> {
        match s {
            "ascending" => Ok(IterationOrder::Ascending),
            "descending" => Ok(IterationOrder::Descending),
            "shuffle" => Ok(IterationOrder::Shuffle(0)),
            _ => match s.strip_prefix("shuffle:") {
                Some(seed) => seed
                    .parse::<u64>()
                    .map(IterationOrder::Shuffle)
                    .map_err(|_| format!("the seed of '{s}' is not a number from 0 to {}", u64::MAX)),
                None => Err(format!("'{s}' is not ascending, descending, shuffle or shuffle:SEED")),
            },
        }
    }
}

impl fmt::Display for IterationOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IterationOrder::Ascending => f.write_str("ascending"),
            IterationOrder::Descending => f.write_str("descending"),
            IterationOrder::Shuffle(seed) => write!(f, "shuffle:{seed}"),
        }
    }
}

impl IterationOrder {
    /// The order of a launch of `n` iterations.
    pub fn permutation(self, n: u64) -> Permutation {
        match self {
            IterationOrder::Ascending => Permutation { n, how: How::Ascending },
            IterationOrder::Descending => Permutation { n, how: How::Descending },
            IterationOrder::Shuffle(seed) => {
                // A balanced Feistel network on 2*half bits (at least n
                // values, fewer than 4n), walked until it lands below n.
                let bits = 64 - n.saturating_sub(1).leading_zeros();
                let half = bits.div_ceil(2).max(1);
                let mut keys = [0u64; ROUNDS];
                let mut k = seed ^ n.rotate_left(17);
                for key in &mut keys {
                    k = splitmix64(k);
                    *key = k;
                }
                Permutation { n, how: How::Shuffle { half, keys } }
            }
        }
    }
}

const ROUNDS: usize = 4;

/// A bijection on `0 .. n`: [`Permutation::index`] of the k-th iteration
/// run is the index of that iteration (row-major for a `struct_for`).
#[derive(Clone, Copy, Debug)]
pub struct Permutation {
    n: u64,
    how: How,
}

#[derive(Clone, Copy, Debug)]
enum How {
    Ascending,
    Descending,
    Shuffle { half: u32, keys: [u64; ROUNDS] },
}

impl Permutation {
    /// The number of iterations.
    pub fn len(&self) -> u64 {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// The index of the `k`-th iteration to run (`k < len()`).
    #[inline]
    pub fn index(&self, k: u64) -> u64 {
        match self.how {
            How::Ascending => k,
            How::Descending => self.n - 1 - k,
            How::Shuffle { half, keys } => {
                // Cycle walking: the Feistel permutation's cycle through k
                // (< n) comes back below n, in fewer than 4 steps on average.
                let mut x = k;
                loop {
                    x = feistel(x, half, &keys);
                    if x < self.n {
                        return x;
                    }
                }
            }
        }
    }
}

fn feistel(x: u64, half: u32, keys: &[u64; ROUNDS]) -> u64 {
    let mask = (1u64 << half) - 1;
    let (mut l, mut r) = (x >> half, x & mask);
    for &k in keys {
        let f = splitmix64(r ^ k) & mask;
        (l, r) = (r, l ^ f);
    }
    (l << half) | r
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What an access to a field element does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// `load`
    Read = 0,
    /// `store`
    Write = 1,
    /// `atomic`
    Atomic = 2,
}

impl AccessKind {
    /// The verb of a report: `iteration 5 reads @s[4]`.
    pub fn verb(self) -> &'static str {
        match self {
            AccessKind::Read => "reads",
            AccessKind::Write => "writes",
            AccessKind::Atomic => "atomically updates",
        }
    }
    /// Whether accesses of kinds `self` and `other` by two different
    /// iterations race: one of them writes, and not both are atomic.
    pub fn races_with(self, other: AccessKind) -> bool {
        !matches!((self, other), (AccessKind::Read, AccessKind::Read) | (AccessKind::Atomic, AccessKind::Atomic))
    }
    const ALL: [AccessKind; 3] = [AccessKind::Write, AccessKind::Atomic, AccessKind::Read];
}

/// Elements per shadow page.
pub const PAGE: usize = 64;

/// The most iterations one checked launch may have (iterations are
/// numbered in a `u32`, 0 meaning none).
pub const MAX_CHECKED_ITERATIONS: u64 = u32::MAX as u64 - 1;

/// How many races a report lists before it only counts.
pub const MAX_REPORTED: usize = 10;

/// One access in the shadow: the iteration (1-based position in the run
/// order; 0: none) and the access site.
#[derive(Clone, Copy, Debug, Default)]
struct Acc {
    epoch: u32,
    site: u32,
}

/// The shadow of one element: per kind, the latest access and the latest
/// one of an earlier iteration than that.
#[derive(Clone, Copy, Debug, Default)]
struct Cell {
    last: [Acc; 3],
    before: [Acc; 3],
    reported: bool,
}

/// A conflict the shadow found, in the interpreter's terms (field number,
/// element's linear index, access sites, positions in the run order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub field: u32,
    pub elem: u64,
    pub kind: AccessKind,
    pub site: u32,
    /// The 1-based position of the iteration in the run order.
    pub epoch: u32,
    pub other_kind: AccessKind,
    pub other_site: u32,
    pub other_epoch: u32,
}

/// The shadow state of one launch of a parallel task.
#[derive(Debug, Default)]
pub struct Shadow {
    /// Page number by (field, page index).
    index: HashMap<u64, u32>,
    /// Boxed, so that growing the list moves no cells.
    pages: Vec<Box<[Cell]>>,
    /// Per field, the last page looked up: its index in the field and its
    /// number (`u64::MAX`: none yet).
    cached: Vec<(u64, u32)>,
    epoch: u32,
    found: Vec<Conflict>,
    more: u64,
}

impl Shadow {
    pub fn new() -> Shadow {
        Shadow::default()
    }

    /// Starts the iteration at (1-based) position `epoch` of the run order.
    #[inline]
    pub fn begin_iteration(&mut self, epoch: u32) {
        self.epoch = epoch;
    }

    /// Records an access of the current iteration to element `elem` of
    /// field `field` from access site `site`, and a conflict with an
    /// earlier access of another iteration if there is one (one per
    /// element: the first found).
    #[inline]
    pub fn access(&mut self, field: u32, elem: u64, kind: AccessKind, site: u32) {
        let e = self.epoch;
        let page = self.page(field, elem);
        let cell = &mut self.pages[page as usize][(elem % PAGE as u64) as usize];
        if !cell.reported {
            let other = AccessKind::ALL.into_iter().filter(|&k| kind.races_with(k)).find_map(|k| {
                let last = cell.last[k as usize];
                let o = if last.epoch != 0 && last.epoch != e { last } else { cell.before[k as usize] };
                (o.epoch != 0).then_some((k, o))
            });
            if let Some((other_kind, o)) = other {
                cell.reported = true;
                let c = Conflict {
                    field,
                    elem,
                    kind,
                    site,
                    epoch: e,
                    other_kind,
                    other_site: o.site,
                    other_epoch: o.epoch,
                };
                if self.found.len() < MAX_REPORTED {
                    self.found.push(c);
                } else {
                    self.more += 1;
                }
            }
        }
        let last = &mut cell.last[kind as usize];
        if last.epoch != e {
            cell.before[kind as usize] = *last;
            *last = Acc { epoch: e, site };
        }
    }

    #[inline]
    fn page(&mut self, field: u32, elem: u64) -> u32 {
        let idx = elem / PAGE as u64;
        if let Some(&(i, p)) = self.cached.get(field as usize) {
            if i == idx {
                return p;
            }
        }
        self.page_slow(field, idx)
    }

    fn page_slow(&mut self, field: u32, idx: u64) -> u32 {
        let key = ((field as u64) << 40) ^ idx;
        let next = self.pages.len() as u32;
        let p = *self.index.entry(key).or_insert(next);
        if p == next {
            self.pages.push(vec![Cell::default(); PAGE].into_boxed_slice());
        }
        let f = field as usize;
        if self.cached.len() <= f {
            self.cached.resize(f + 1, (u64::MAX, 0));
        }
        self.cached[f] = (idx, p);
        p
    }

    /// The first conflicts found (at most [`MAX_REPORTED`]) and how many
    /// more elements raced.
    pub fn conflicts(&self) -> (&[Conflict], u64) {
        (&self.found, self.more)
    }

    /// The bytes the shadow holds for its pages (for the benchmark).
    pub fn shadow_bytes(&self) -> usize {
        self.pages.len() * PAGE * std::mem::size_of::<Cell>()
    }
}

/// One data race, ready to show.
#[derive(Clone, Debug, PartialEq)]
pub struct Race {
    pub kernel: Name,
    pub task: Name,
    /// The element: `@s[4]`.
    pub element: String,
    /// The iteration that made the later access: `5`, or `(1, 2)` for a
    /// `struct_for` of rank 2.
    pub iteration: String,
    pub kind: AccessKind,
    /// The statement of the later access.
    pub span: Span,
    pub other_iteration: String,
    pub other_kind: AccessKind,
    pub other_span: Span,
}

impl Race {
    /// The message, with the other access's location given by `at`.
    fn message(&self, at: &str) -> String {
        format!(
            "data race in task @{} of kernel @{}: iteration {} {} {}, which iteration {} {}{at}",
            self.task,
            self.kernel,
            self.iteration,
            self.kind.verb(),
            self.element,
            self.other_iteration,
            self.other_kind.verb(),
        )
    }
}

/// The races found in one launch: the first [`MAX_REPORTED`] and a count
/// of the others.
#[derive(Clone, Debug, PartialEq)]
pub struct RaceReport {
    pub races: Vec<Race>,
    /// Further elements that raced, not listed.
    pub more: u64,
    /// The task (its statement or item), where the count is reported.
    pub task_span: Span,
}

impl RaceReport {
    /// One error per race at its later access, naming the earlier one's
    /// location (`FILE:LINE:COL`), then one with the count of the others.
    pub fn diagnostics(&self, src: &SourceFile) -> Diagnostics {
        self.diagnostics_with(src, &|_| None)
    }

    /// [`RaceReport::diagnostics`], with a note for each access whose
    /// statement `origin` places in the program the KIR came from (its
    /// Python line, say).
    pub fn diagnostics_with(&self, src: &SourceFile, origin: &dyn Fn(Span) -> Option<Elsewhere>) -> Diagnostics {
        let mut ds = Diagnostics::default();
        for r in &self.races {
            let (line, col) = src.line_col(r.other_span.start as usize);
            let at = format!(" at {}:{line}:{col}", src.name());
            let mut d = Diagnostic::error(r.message(&at), r.span);
            for (span, iteration, kind) in
                [(r.span, &r.iteration, r.kind), (r.other_span, &r.other_iteration, r.other_kind)]
            {
                if let Some(place) = origin(span) {
                    let what = format!("iteration {iteration} {} here", kind.verb());
                    d = d.with_note_elsewhere(what, place);
                }
            }
            ds.push(d);
        }
        if self.more > 0 {
            let first = &self.races[0];
            ds.push(Diagnostic::error(
                format!(
                    "{} more data races in task @{} of kernel @{} (one per element; the first {} are shown)",
                    self.more,
                    first.task,
                    first.kernel,
                    self.races.len()
                ),
                self.task_span,
            ));
        }
        ds
    }
}

impl fmt::Display for RaceReport {
    /// The races without source locations (for a caller without the
    /// source).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.races.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            f.write_str(&r.message(""))?;
        }
        if self.more > 0 {
            write!(f, "; {} more data races", self.more)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AccessKind::*;

    #[test]
    fn orders_are_bijections() {
        for n in [0u64, 1, 2, 3, 5, 64, 100, 1000, 4097] {
            for order in [IterationOrder::Ascending, IterationOrder::Descending, IterationOrder::Shuffle(7)] {
                let p = order.permutation(n);
                let mut seen = vec![false; n as usize];
                for k in 0..n {
                    let i = p.index(k);
                    assert!(i < n && !seen[i as usize], "{order} n={n}");
                    seen[i as usize] = true;
                }
            }
        }
        let d = IterationOrder::Descending.permutation(4);
        assert_eq!((0..4).map(|k| d.index(k)).collect::<Vec<_>>(), [3, 2, 1, 0]);
        // A shuffle moves something, and its seed matters.
        let s1: Vec<u64> = (0..100).map(|k| IterationOrder::Shuffle(1).permutation(100).index(k)).collect();
        let s2: Vec<u64> = (0..100).map(|k| IterationOrder::Shuffle(2).permutation(100).index(k)).collect();
        assert_ne!(s1, (0..100).collect::<Vec<_>>());
        assert_ne!(s1, s2);
    }

    #[test]
    fn parses_orders() {
        assert_eq!("ascending".parse(), Ok(IterationOrder::Ascending));
        assert_eq!("descending".parse(), Ok(IterationOrder::Descending));
        assert_eq!("shuffle".parse(), Ok(IterationOrder::Shuffle(0)));
        assert_eq!("shuffle:42".parse(), Ok(IterationOrder::Shuffle(42)));
        assert!("shuffle:x".parse::<IterationOrder>().is_err());
        assert!("random".parse::<IterationOrder>().is_err());
        assert_eq!(IterationOrder::Shuffle(9).to_string(), "shuffle:9");
    }

    /// Runs `accesses` (iteration, kind, element) in order and returns the
    /// conflicts as (epoch, kind, other epoch, other kind).
    fn run(accesses: &[(u32, AccessKind, u64)]) -> Vec<(u32, AccessKind, u32, AccessKind)> {
        let mut sh = Shadow::new();
        for (site, &(e, k, elem)) in accesses.iter().enumerate() {
            sh.begin_iteration(e);
            sh.access(0, elem, k, site as u32);
        }
        sh.conflicts().0.iter().map(|c| (c.epoch, c.kind, c.other_epoch, c.other_kind)).collect()
    }

    #[test]
    fn race_rule() {
        // Own element read-modify-write, shared reads, shared atomics: none.
        assert!(run(&[(1, Read, 1), (1, Write, 1), (2, Read, 2), (2, Write, 2)]).is_empty());
        assert!(run(&[(1, Read, 0), (2, Read, 0), (3, Read, 0)]).is_empty());
        assert!(run(&[(1, Atomic, 0), (2, Atomic, 0), (3, Atomic, 0)]).is_empty());
        // Write then another iteration's read; read then write; atomic + plain.
        assert_eq!(run(&[(1, Write, 4), (2, Read, 4)]), [(2, Read, 1, Write)]);
        assert_eq!(run(&[(1, Read, 4), (2, Write, 4)]), [(2, Write, 1, Read)]);
        assert_eq!(run(&[(1, Atomic, 0), (2, Read, 0)]), [(2, Read, 1, Atomic)]);
        assert_eq!(run(&[(1, Write, 0), (2, Atomic, 0)]), [(2, Atomic, 1, Write)]);
        // The other iteration is found behind the current one's own access.
        assert_eq!(run(&[(1, Atomic, 0), (2, Atomic, 0), (2, Read, 0)]), [(2, Read, 1, Atomic)]);
        assert_eq!(run(&[(1, Read, 0), (2, Read, 0), (2, Write, 0)]), [(2, Write, 1, Read)]);
        // One report per element.
        assert_eq!(run(&[(1, Write, 0), (2, Write, 0), (3, Write, 0)]).len(), 1);
    }

    #[test]
    fn counts_past_the_limit_and_pages_only_what_is_touched() {
        let mut sh = Shadow::new();
        for e in 1..=2u32 {
            sh.begin_iteration(e);
            for elem in 0..25u64 {
                sh.access(3, elem * 1000, Write, 0);
            }
        }
        let (found, more) = sh.conflicts();
        assert_eq!((found.len(), more), (MAX_REPORTED, 15));
        assert_eq!(sh.shadow_bytes(), 25 * std::mem::size_of::<[Cell; PAGE]>());
    }
}
