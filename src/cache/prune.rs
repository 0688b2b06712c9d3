//! The prune policy: what `kiln-cache-inspect prune` removes, and why,
//! decided from a scan of the cache alone.
//!
//! Owns: [`PrunePlan`] (the criteria), [`PruneReason`], and
//! [`plan_prune`], a pure function from a scan (what is on disk, with
//! sizes and times) to the ordered list of removals; unit-tested here on
//! scans built by hand.
//!
//! Must never: touch the file system. The executor
//! (`repair`, `Cache::execute_prune`) removes what the plan lists, and
//! only if each file is still what the scan saw.

use super::fs::Identity;
use super::layout::{is_temp_name, STATS_FILE};
use super::scan::{file_name, unix_secs, At, DirEntry, FileEntry, RecordEntry, Scan, ScopeScan};
use serde::Serialize;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// What `prune` removes (each criterion adds to the others).
#[derive(Clone, Debug, Default)]
pub struct PrunePlan {
    /// Remove least recently used records until all records fit.
    pub max_size: Option<u64>,
    /// Remove records not used for this long.
    pub older_than: Option<Duration>,
    /// Remove the scopes of other hosts, whole.
    pub foreign_scopes: bool,
    /// Remove temporary files older than this (a live writer's are
    /// younger).
    pub temp_older_than: Option<Duration>,
    /// Report, remove nothing.
    pub dry_run: bool,
    /// Remove every record of this host's scope (`clear`, ccache's `-C`).
    pub clear: bool,
}

/// Why `prune` removed something.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PruneReason {
    ForeignScope,
    StaleTemp,
    OlderThan,
    MaxSize,
    Clear,
}

impl PruneReason {
    /// The name printed in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            PruneReason::ForeignScope => "foreign-scope",
            PruneReason::StaleTemp => "stale-temp",
            PruneReason::OlderThan => "older-than",
            PruneReason::MaxSize => "max-size",
            PruneReason::Clear => "clear",
        }
    }
}

/// One thing `prune` removed (or would remove).
#[derive(Clone, Debug, Serialize)]
pub struct Removal {
    pub path: PathBuf,
    /// `record`, `temp`, `host-file`, `stats-file` or `directory`.
    pub kind: &'static str,
    pub size: u64,
    pub reason: PruneReason,
    /// The record's last use (records only).
    pub last_use_unix: Option<u64>,
    #[serde(skip)]
    pub(super) expect: Option<Identity>,
    /// Where the walk found it (`None` for a directory, removed from
    /// [`Planned::dirs`]).
    #[serde(skip)]
    pub(super) at: Option<At>,
}

/// What a prune would remove, in the order it goes: files first, then the
/// directories of foreign scopes (shards before their scope).
#[derive(Debug, Default)]
pub(super) struct Planned {
    pub(super) files: Vec<Removal>,
    pub(super) dirs: Vec<DirEntry>,
}

/// A dry run reports the whole plan as removed and keeps nothing.
pub(super) fn dry_run(planned: Planned) -> (Vec<Removal>, Vec<PathBuf>) {
    let mut removed = planned.files;
    removed.extend(planned.dirs.into_iter().map(dir_removal));
    (removed, Vec::new())
}

/// The removal of a foreign scope's directory.
pub(super) fn dir_removal(dir: DirEntry) -> Removal {
    let path = dir.path;
    Removal {
        path,
        kind: "directory",
        size: 0,
        reason: PruneReason::ForeignScope,
        last_use_unix: None,
        expect: None,
        at: None,
    }
}

/// The prune policy, from a scan alone (no file system access): foreign
/// scopes whole; in the others, temporaries older than
/// `temp_older_than`, then records older than `older_than` (least
/// recently used first), then the least recently used of the rest until
/// they fit in `max_size`; last, the stale temporaries at the root.
pub(super) fn plan_prune(scan: &Scan, plan: &PrunePlan, this_host: Option<&str>, now: SystemTime) -> Planned {
    let older = |f: &FileEntry, d: Duration| now.duration_since(f.mtime).is_ok_and(|age| age > d);
    let mut out = Planned::default();
    let mut live: Vec<&RecordEntry> = Vec::new();
    let mut stale: Vec<&RecordEntry> = Vec::new();
    for s in &scan.scopes {
        if plan.foreign_scopes && this_host != Some(s.name.as_str()) {
            plan_foreign_scope(s, &mut out);
            continue;
        }
        let temp_age = plan.temp_older_than;
        for f in s.temps.iter().filter(|f| temp_age.is_some_and(|d| older(f, d))) {
            out.files.push(removal(f, "temp", PruneReason::StaleTemp));
        }
        if plan.clear && this_host == Some(s.name.as_str()) {
            out.files.extend(s.records.iter().map(|r| record_removal(r, PruneReason::Clear)));
            continue;
        }
        let (old, young): (Vec<&RecordEntry>, Vec<&RecordEntry>) =
            s.records.iter().partition(|r| plan.older_than.is_some_and(|d| older(&r.file, d)));
        stale.extend(old);
        live.extend(young);
    }
    for f in scan.root_temps.iter().filter(|f| plan.temp_older_than.is_some_and(|d| older(f, d))) {
        out.files.push(removal(f, "temp", PruneReason::StaleTemp));
    }
    // Least recently used first, ties by path: reports read in the order
    // records go, and a run is reproducible.
    let lru = |a: &&RecordEntry, b: &&RecordEntry| (a.file.mtime, &a.file.path).cmp(&(b.file.mtime, &b.file.path));
    stale.sort_by(lru);
    out.files.extend(stale.iter().map(|r| record_removal(r, PruneReason::OlderThan)));
    // 0 is no limit, here as for every size (docs/cache.md, "Sizes and
    // durations"): never "remove everything".
    if let Some(max) = plan.max_size.filter(|&m| m != 0) {
        live.sort_by(lru);
        let mut total: u64 = live.iter().map(|r| r.file.size).sum();
        for r in live {
            if total <= max {
                break;
            }
            out.files.push(record_removal(r, PruneReason::MaxSize));
            total -= r.file.size;
        }
    }
    out
}

/// A foreign scope goes whole: records, temporaries, its layout files,
/// then its shards and itself (if empty by then).
fn plan_foreign_scope(s: &ScopeScan, out: &mut Planned) {
    out.files.extend(s.records.iter().map(|r| record_removal(r, PruneReason::ForeignScope)));
    for f in s.temps.iter().chain(&s.layout_files) {
        let name = file_name(&f.path);
        let kind = if is_temp_name(&name) {
            "temp"
        } else if name == STATS_FILE {
            "stats-file"
        } else {
            "host-file"
        };
        out.files.push(removal(f, kind, PruneReason::ForeignScope));
    }
    out.dirs.extend(s.shards.iter().cloned());
    out.dirs.push(DirEntry { path: s.dir.clone(), at: s.at.clone() });
}

/// The planned removal of a file that is not a record.
fn removal(f: &FileEntry, kind: &'static str, reason: PruneReason) -> Removal {
    Removal {
        path: f.path.clone(),
        kind,
        size: f.size,
        reason,
        last_use_unix: None,
        expect: Some(f.identity()),
        at: Some(f.at.clone()),
    }
}

/// The planned removal of a record (with its last use).
fn record_removal(r: &RecordEntry, reason: PruneReason) -> Removal {
    Removal { last_use_unix: Some(unix_secs(r.file.mtime)), ..removal(&r.file, "record", reason) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::record::Key;
    use std::path::Path;

    const NOW: u64 = 1_000_000;

    fn at(secs_ago: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(NOW - secs_ago)
    }

    /// Where the made-up entries are: the plan only carries it to the
    /// executor, which these tests do not run.
    fn nowhere(name: &str) -> At {
        let dir = rustix::fs::open(
            "/",
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        );
        At { dir: std::sync::Arc::new(dir.expect("open /")), name: name.into() }
    }

    fn file(path: &str, size: u64, secs_ago: u64) -> FileEntry {
        FileEntry {
            path: PathBuf::from(path),
            at: nowhere(path),
            size,
            mtime: at(secs_ago),
            dev: 0,
            ino: size + secs_ago,
        }
    }

    fn record(path: &str, size: u64, secs_ago: u64) -> RecordEntry {
        RecordEntry {
            key: Key::from(blake3::hash(path.as_bytes())),
            file: file(path, size, secs_ago),
            not_a_file: false,
        }
    }

    fn scope(name: &str, records: Vec<RecordEntry>, temps: Vec<FileEntry>) -> ScopeScan {
        let dir = PathBuf::from(format!("/c/{name}"));
        ScopeScan {
            name: name.into(),
            records,
            temps,
            layout_files: vec![file(&format!("/c/{name}/host.json"), 10, 0), file(&format!("/c/{name}/stats"), 10, 0)],
            shards: vec![DirEntry { path: dir.join("00"), at: nowhere("00") }],
            at: nowhere(name),
            dir,
        }
    }

    /// A cache of two scopes: `a` (this host) with three records used 30,
    /// 20 and 10 hours ago and a temporary two hours old; `b` (another
    /// host) with one record; and a temporary at the root.
    fn scan() -> Scan {
        let h = 3600;
        let a = scope(
            "a",
            vec![
                record("/c/a/00/r1", 100, 30 * h),
                record("/c/a/00/r2", 200, 20 * h),
                record("/c/a/00/r3", 300, 10 * h),
            ],
            vec![file("/c/a/00/r1.tmp-1-0000000000000000", 5, 2 * h)],
        );
        let b = scope("b", vec![record("/c/b/00/r9", 900, h)], vec![]);
        Scan {
            scopes: vec![a, b],
            root_temps: vec![file("/c/x.tmp-1-0000000000000000", 7, 2 * h)],
            misplaced: vec![],
            old_counters: None,
        }
    }

    fn plan(p: PrunePlan) -> Vec<(String, &'static str, PruneReason)> {
        let planned = plan_prune(&scan(), &p, Some("a"), at(0));
        let mut out: Vec<_> = planned.files.iter().map(|r| (r.path.display().to_string(), r.kind, r.reason)).collect();
        out.extend(planned.dirs.iter().map(|d| (d.path.display().to_string(), "directory", PruneReason::ForeignScope)));
        out
    }

    fn paths(p: PrunePlan) -> Vec<String> {
        plan(p).into_iter().map(|(p, ..)| p).collect()
    }

    #[test]
    fn no_criterion_plans_nothing() {
        assert!(plan(PrunePlan::default()).is_empty());
        assert!(plan(PrunePlan { dry_run: true, ..Default::default() }).is_empty());
    }

    #[test]
    fn max_size_removes_least_recently_used_first_until_the_rest_fits() {
        // 100 + 200 + 300 (+ 900 in scope b) = 1500: 1400 fits after r1,
        // 1000 only after r1, r2 and r3 (900 left).
        assert_eq!(paths(PrunePlan { max_size: Some(1400), ..Default::default() }), ["/c/a/00/r1"]);
        let got = plan(PrunePlan { max_size: Some(1000), ..Default::default() });
        let want: Vec<(String, &str, PruneReason)> = ["/c/a/00/r1", "/c/a/00/r2", "/c/a/00/r3"]
            .iter()
            .map(|p| (p.to_string(), "record", PruneReason::MaxSize))
            .collect();
        assert_eq!(got, want);
        // The other host's record counts towards the bound and can go.
        assert_eq!(paths(PrunePlan { max_size: Some(1), ..Default::default() }).len(), 4);
        // 0 is no limit, as for every size: nothing goes (issue 46: it
        // emptied the cache).
        assert!(paths(PrunePlan { max_size: Some(0), ..Default::default() }).is_empty());
        assert!(paths(PrunePlan { max_size: Some(1500), ..Default::default() }).is_empty());
    }

    #[test]
    fn ties_in_last_use_go_by_path() {
        let mut s = scan();
        s.scopes[0].records = vec![record("/c/a/00/z", 1, 5), record("/c/a/00/m", 1, 5), record("/c/a/00/b", 1, 5)];
        s.scopes.truncate(1);
        let planned = plan_prune(&s, &PrunePlan { max_size: Some(1), ..Default::default() }, Some("a"), at(0));
        let got: Vec<&Path> = planned.files.iter().map(|r| r.path.as_path()).collect();
        assert_eq!(got, [Path::new("/c/a/00/b"), Path::new("/c/a/00/m")]);
    }

    #[test]
    fn older_than_goes_first_and_is_not_counted_again_for_the_size() {
        let h = 3600;
        let p = PrunePlan { older_than: Some(Duration::from_secs(15 * h)), max_size: Some(1000), ..Default::default() };
        // r1 and r2 are older than 15 h; r3 + r9 = 1200 > 1000, so r3 goes too.
        assert_eq!(
            plan(p),
            [
                ("/c/a/00/r1".into(), "record", PruneReason::OlderThan),
                ("/c/a/00/r2".into(), "record", PruneReason::OlderThan),
                ("/c/a/00/r3".into(), "record", PruneReason::MaxSize),
            ]
        );
    }

    #[test]
    fn stale_temporaries_in_scopes_and_at_the_root() {
        let h = 3600;
        let p = PrunePlan { temp_older_than: Some(Duration::from_secs(h)), ..Default::default() };
        assert_eq!(
            plan(p),
            [
                ("/c/a/00/r1.tmp-1-0000000000000000".into(), "temp", PruneReason::StaleTemp),
                ("/c/x.tmp-1-0000000000000000".into(), "temp", PruneReason::StaleTemp),
            ]
        );
        // A writer's temporary younger than the age stays.
        assert!(plan(PrunePlan { temp_older_than: Some(Duration::from_secs(3 * h)), ..Default::default() }).is_empty());
    }

    #[test]
    fn a_foreign_scope_goes_whole_and_this_hosts_stays() {
        let got = plan(PrunePlan { foreign_scopes: true, ..Default::default() });
        assert_eq!(
            got,
            [
                ("/c/b/00/r9".into(), "record", PruneReason::ForeignScope),
                ("/c/b/host.json".into(), "host-file", PruneReason::ForeignScope),
                ("/c/b/stats".into(), "stats-file", PruneReason::ForeignScope),
                ("/c/b/00".into(), "directory", PruneReason::ForeignScope),
                ("/c/b".into(), "directory", PruneReason::ForeignScope),
            ]
        );
        // Records record their last use; other files do not.
        let planned = plan_prune(&scan(), &PrunePlan { foreign_scopes: true, ..Default::default() }, Some("a"), at(0));
        assert_eq!(planned.files[0].last_use_unix, Some(NOW - 3600));
        assert_eq!(planned.files[1].last_use_unix, None);
        assert_eq!(planned.files[0].expect, Some(Identity { dev: 0, ino: 900 + 3600, mtime: at(3600) }));
    }

    #[test]
    fn a_dry_run_reports_the_whole_plan() {
        let planned = plan_prune(&scan(), &PrunePlan { foreign_scopes: true, ..Default::default() }, Some("a"), at(0));
        let n = planned.files.len() + planned.dirs.len();
        let (removed, kept) = dry_run(planned);
        assert_eq!((removed.len(), kept.len()), (n, 0));
        assert_eq!(removed.last().map(|r| r.kind), Some("directory"));
    }
}
