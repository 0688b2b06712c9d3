//! Checking and cleaning a cache: `kiln-cache-inspect`'s `verify` (with
//! `--fix`) and the execution of `prune`, for [`Cache`].
//!
//! Owns: what `verify` checks (every record in full, the links and files
//! found where Kiln keeps a directory, the size counters against a
//! recount under each group's lock) and repairs, and the prune executor:
//! the scan, the policy's plan (`prune`), the removals (in parallel, each
//! through the handle the walk opened and only if the file is still the
//! one the walk saw: `fs::remove_if_unchanged`), the counters recounted,
//! then the emptied directories.
//!
//! Must never: remove anything outside the root or anything that does not
//! match a Kiln pattern (a directory under a record's name only when
//! empty), remove anything on a dry run, or remove a file used or
//! rewritten since the scan.

use super::counters::{self, GroupSize, Locked, GROUPS};
use super::fs as cfs;
use super::inspect::{verify_file, Cache, Totals};
use super::layout::SIZES_FILE;
use super::prune::{dir_removal, dry_run, plan_prune, Planned, PrunePlan, Removal};
use super::record::{Corrupt, Key};
use super::scan::{At, DirEntry, FileEntry, RecordEntry, ScopeScan, Shards};
use super::CacheError;
use rayon::prelude::*;
use serde::Serialize;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A record `verify` found damaged.
#[derive(Clone, Debug, Serialize)]
pub struct BadRecord {
    pub scope: String,
    pub key: Key,
    pub path: PathBuf,
    pub reason: Corrupt,
    /// Removed by `--fix`.
    pub removed: bool,
}

/// A link or a file where Kiln keeps a directory, that `verify` found.
#[derive(Clone, Debug, Serialize)]
pub struct BadEntry {
    pub path: PathBuf,
    pub problem: String,
    /// Removed by `--fix` (a link itself, never what it points to).
    pub removed: bool,
}

/// A shard group whose size counter disagrees with the records on disk.
#[derive(Clone, Debug, Serialize)]
pub struct CounterDrift {
    pub group: String,
    /// What the counter held (`None`: damaged or unreadable).
    pub counted: Option<GroupSize>,
    /// What the records on disk add up to.
    pub actual: GroupSize,
    /// Rewritten from the records by `--fix`.
    pub fixed: bool,
}

/// The counter directory an older Kiln build kept (`counters/`), which
/// this build neither reads nor writes (see `layout::OLD_COUNTERS_DIR`).
#[derive(Clone, Debug, Serialize)]
pub struct OldCounters {
    pub path: PathBuf,
    /// Removed by `--fix` (its sixteen counter files, then the directory
    /// if that emptied it; a link or a file under its name itself).
    pub removed: bool,
}

/// `verify`: every record checked in full, the tree's directories, and
/// the size counters.
#[derive(Clone, Debug, Serialize)]
pub struct VerifyReport {
    pub checked: u64,
    pub healthy: u64,
    pub bad: Vec<BadRecord>,
    pub bad_entries: Vec<BadEntry>,
    pub counter_drift: Vec<CounterDrift>,
    /// A leftover of an older build: a note, not damage.
    pub old_counters: Option<OldCounters>,
    pub fixed: bool,
}

/// What `prune` did.
#[derive(Clone, Debug, Serialize)]
pub struct PruneReport {
    pub dry_run: bool,
    pub removed: Vec<Removal>,
    /// Records and bytes of records before and after.
    pub before: Totals,
    pub after: Totals,
    /// Directories kept because they hold files that are not Kiln's.
    pub kept_dirs: Vec<PathBuf>,
}

impl Cache {
    /// `verify`: reads and checks every record in full, reports links and
    /// files where Kiln keeps directories, and checks the size counters;
    /// with `fix`, removes the damaged records and the misplaced entries,
    /// and recounts the counters that are off.
    pub fn verify(&self, fix: bool) -> Result<VerifyReport, CacheError> {
        let scan = self.scan(Shards::All)?;
        let mut all: Vec<(&ScopeScan, &RecordEntry)> =
            scan.scopes.iter().flat_map(|s| s.records.iter().map(move |r| (s, r))).collect();
        all.sort_by(|a, b| (&a.0.name, a.1.key).cmp(&(&b.0.name, b.1.key)));
        let results: Vec<Option<BadRecord>> = all
            .par_iter()
            .map(|(s, r)| {
                let outcome =
                    if r.not_a_file { Err(Corrupt::NotAFile) } else { verify_file(&r.file.at, &r.key).map(|_| ()) };
                match outcome {
                    Ok(()) => Ok(None),
                    // Removed by a concurrent prune between scan and read.
                    Err(_) if cfs::stat_at(&*r.file.at.dir, &r.file.at.name).is_err() => Ok(None),
                    Err(reason) => {
                        let removed = fix && remove_in_place_of_record(&r.file)?;
                        Ok(Some(BadRecord {
                            scope: s.name.clone(),
                            key: r.key,
                            path: r.file.path.clone(),
                            reason,
                            removed,
                        }))
                    }
                }
            })
            .collect::<Result<_, CacheError>>()?;
        let bad: Vec<BadRecord> = results.into_iter().flatten().collect();
        let mut bad_entries = Vec::new();
        for m in &scan.misplaced {
            let removed = fix && remove_misplaced(&m.at, &m.path)?;
            bad_entries.push(BadEntry { path: m.path.clone(), problem: m.text(), removed });
        }
        let counter_drift = self.check_counters(fix)?;
        let old_counters = match &scan.old_counters {
            Some(d) => Some(OldCounters { path: d.path.clone(), removed: fix && remove_old_counters(d)? }),
            None => None,
        };
        let checked = all.len() as u64;
        let healthy = checked - bad.len() as u64;
        Ok(VerifyReport { checked, healthy, bad, bad_entries, counter_drift, old_counters, fixed: fix })
    }

    /// Compares each group's size counter with the records on disk, under
    /// the group's lock (so no store changes the group meanwhile); with
    /// `fix`, rewrites those that are off.
    fn check_counters(&self, fix: bool) -> Result<Vec<CounterDrift>, CacheError> {
        let path = self.root.join(SIZES_FILE);
        let io_err = |e| CacheError::io(&path, "check counters in", e);
        // Anything but a regular file in its place is reported (and
        // removed by `--fix`) as misplaced; nothing is read through it.
        if !fix && fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
            return Ok(Vec::new());
        }
        let fd = if fix { Some(cfs::open_dir_path(&self.root).map_err(io_err)?) } else { None };
        let mut drift = Vec::new();
        for g in 0..GROUPS {
            let lock = match &fd {
                Some(fd) => Some(counters::lock_group(fd, g, &self.access)),
                None => Locked::shared(&path, g).transpose(),
            };
            let counted = match &lock {
                Some(Ok(l)) => l.read::<GroupSize>(),
                Some(Err(_)) => None,
                None => Some(GroupSize::default()),
            };
            let actual = counters::size_of(&counters::scan_group(&self.root, g).map_err(io_err)?);
            if counted != Some(actual) {
                let fixed = match &lock {
                    Some(Ok(l)) if fix => l.write(&actual).is_ok(),
                    _ => false,
                };
                drift.push(CounterDrift { group: counters::group_name(g), counted, actual, fixed });
            }
        }
        Ok(drift)
    }

    /// Group `g`'s size counter, locked (the `sizes` file made if
    /// missing); an error names the file and how to mend it.
    fn lock_counter(&self, g: u8) -> Result<counters::Locked, CacheError> {
        let path = self.root.join(SIZES_FILE);
        let fd = cfs::open_dir_path(&self.root).map_err(|e| CacheError::io(&self.root, "open", e))?;
        counters::lock_group(&fd, g, &self.access).map_err(|e| {
            let why = crate::diag::io_reason(&e);
            let hint = format!("{why} (`kiln-cache-inspect verify --fix` removes a {SIZES_FILE} that is not a file)");
            CacheError::io(&path, "lock", std::io::Error::other(hint))
        })
    }

    /// Recounts every group's size counter (after a prune removed records
    /// behind the stores' backs), each under its lock.
    fn recount_all(&self) -> Result<(), CacheError> {
        let path = self.root.join(SIZES_FILE);
        for g in 0..GROUPS {
            let lock = self.lock_counter(g)?;
            counters::recount(&self.root, g, &lock).map_err(|e| CacheError::io(&path, "recount", e))?;
        }
        Ok(())
    }

    /// `prune`: removes (or on a dry run, lists) what the plan selects:
    /// the scan, then [`plan_prune`] (the policy), then
    /// [`Cache::execute_prune`] (the removal).
    pub fn prune(&self, plan: &PrunePlan) -> Result<PruneReport, CacheError> {
        if plan.foreign_scopes && self.native.is_none() {
            return Err(CacheError::UnknownHost { root: self.root.clone() });
        }
        let scan = self.scan(Shards::All)?;
        let planned = plan_prune(&scan, plan, self.native.as_deref(), SystemTime::now());
        let (removed, kept_dirs) = if plan.dry_run { dry_run(planned) } else { self.execute_prune(planned)? };
        // What stays: what was there, less what went (a record used or
        // rewritten since the scan stays, see `remove_entry`).
        let gone: std::collections::HashSet<&Path> = removed.iter().map(|r| r.path.as_path()).collect();
        let records = || scan.scopes.iter().flat_map(|s| &s.records);
        let (mut before, mut after) = (Totals::default(), Totals::default());
        for r in records() {
            before.add_record(r.file.size, r.file.mtime);
        }
        for r in records().filter(|r| !gone.contains(r.file.path.as_path())) {
            after.add_record(r.file.size, r.file.mtime);
        }
        drop(gone);
        Ok(PruneReport { dry_run: plan.dry_run, removed, before, after, kept_dirs })
    }

    /// Carries a prune plan out: the files (if still what the scan saw),
    /// then the size counters recounted, then the emptied directories.
    /// Returns what was removed and the directories kept because they
    /// hold something that is not Kiln's.
    fn execute_prune(&self, planned: Planned) -> Result<(Vec<Removal>, Vec<PathBuf>), CacheError> {
        // The counters must be there to recount before anything goes: a
        // prune that removed records and then could not recount would
        // fail with the records gone and the counters wrong.
        if !planned.files.is_empty() {
            drop(self.lock_counter(0)?);
        }
        let mut removed = remove_all(planned.files)?;
        if !removed.is_empty() {
            self.recount_all()?;
        }
        let mut kept_dirs = Vec::new();
        for dir in planned.dirs {
            match cfs::remove_empty_dir(&*dir.at.dir, &dir.at.name) {
                Ok(true) => removed.push(dir_removal(dir)),
                Ok(false) => {}
                // Not empty: it holds something that is not Kiln's.
                Err(_) => kept_dirs.push(dir.path),
            }
        }
        Ok((removed, kept_dirs))
    }
}

/// Threads that remove files at once. An unlink waits on the file system
/// (a journal, a synchronous discard, a network round trip), not on the
/// CPU, so a prune of many records goes many times faster with several in
/// flight.
const REMOVE_THREADS: usize = 16;

/// Removes the planned files, in parallel when there are many; returns
/// those that were removed (not those already gone), in plan order.
fn remove_all(planned: Vec<Removal>) -> Result<Vec<Removal>, CacheError> {
    let remove = |r: &Removal| match &r.at {
        Some(at) => remove_entry(at, &r.path, r.expect),
        None => Ok(false),
    };
    let pool = if planned.len() > 64 {
        rayon::ThreadPoolBuilder::new().num_threads(REMOVE_THREADS).build().ok()
    } else {
        None
    };
    let done: Vec<Result<bool, CacheError>> = match &pool {
        Some(pool) => pool.install(|| planned.par_iter().map(remove).collect()),
        None => planned.iter().map(remove).collect(),
    };
    let mut removed = Vec::with_capacity(planned.len());
    for (r, ok) in planned.into_iter().zip(done) {
        if ok? {
            removed.push(r);
        }
    }
    Ok(removed)
}

/// Removes an older build's counter directory (`verify --fix`): its
/// sixteen counter files (`0` .. `f`, each if a file), then the
/// directory if that emptied it (one holding anything else stays); a
/// link or a file under its name is removed itself. Whether it went.
fn remove_old_counters(d: &DirEntry) -> Result<bool, CacheError> {
    let dir = match cfs::open_dir(&*d.at.dir, &d.at.name) {
        Ok(dir) => std::sync::Arc::new(dir),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) if cfs::is_link_error(&e) || cfs::is_not_dir_error(&e) => return remove_entry(&d.at, &d.path, None),
        Err(e) => return Err(CacheError::io(&d.path, "open", e)),
    };
    for g in 0..GROUPS {
        let at = At { dir: dir.clone(), name: counters::group_name(g) };
        remove_entry(&at, &d.path.join(&at.name), None)?;
    }
    match cfs::remove_empty_dir(&*d.at.dir, &d.at.name) {
        Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => Ok(false),
        r => r.map_err(|e| CacheError::io(&d.path, "remove", e)),
    }
}

/// Removes what sits under a record's name (`verify --fix`): a file as
/// [`remove_entry`] does, or a directory if it is empty (one holding
/// anything is not Kiln's to empty, and stays, reported).
fn remove_in_place_of_record(f: &FileEntry) -> Result<bool, CacheError> {
    match cfs::stat_at(&*f.at.dir, &f.at.name) {
        Ok(st) if st.is_dir() => match cfs::remove_empty_dir(&*f.at.dir, &f.at.name) {
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => Ok(false),
            r => r.map_err(|e| CacheError::io(&f.path, "remove", e)),
        },
        _ => remove_entry(&f.at, &f.path, Some(f.identity())),
    }
}

/// Removes an entry the scan found, relative to the directory the scan
/// opened, if it is still what the scan saw (`fs::remove_if_unchanged`:
/// not a directory and, given `expect`, the same file with the same
/// mtime: a record rewritten by a writer or used by a reader since the
/// scan stays); whether it was removed. An entry already gone is not an
/// error. `path` is for messages.
fn remove_entry(at: &At, path: &Path, expect: Option<cfs::Identity>) -> Result<bool, CacheError> {
    match cfs::remove_if_unchanged(&*at.dir, &at.name, expect) {
        Ok(removed) => Ok(removed.is_some()),
        Err(e) if e.kind() == io::ErrorKind::IsADirectory => Ok(false),
        Err(e) => Err(CacheError::io(path, "remove", e)),
    }
}

/// Removes an entry found where Kiln keeps something else: a link or a
/// file itself, a directory if it is empty (one that holds anything
/// stays, reported as not removed).
fn remove_misplaced(at: &At, path: &Path) -> Result<bool, CacheError> {
    // What `remove_entry` leaves is a directory, or gone already (then
    // the directory's removal fails too).
    Ok(remove_entry(at, path, None)? || cfs::remove_empty_dir(&*at.dir, &at.name).unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::inspect::tests::{at_of, filled, ino, key, opts, scope, swap_shard_for_link};
    use crate::cache::inspect::InspectOptions;
    use crate::cache::prune::PruneReason;
    use crate::cache::store::tests::meta;
    use std::fs::File;
    use std::time::Duration;

    #[test]
    fn verify_finds_and_fixes_damage() {
        let dir = tempfile::tempdir().unwrap();
        let store = filled(dir.path(), "a", 4, 100);
        let cache = Cache::open(dir.path(), &InspectOptions::default()).unwrap();
        let report = cache.verify(false).unwrap();
        assert_eq!((report.checked, report.healthy, report.bad.len()), (4, 4, 0));
        let damaged = store.record_path(&key(1002));
        let mut bytes = fs::read(&damaged).unwrap();
        bytes[70] ^= 4;
        fs::write(&damaged, &bytes).unwrap();
        let report = cache.verify(false).unwrap();
        assert_eq!(report.bad.len(), 1);
        assert_eq!(report.bad[0].reason, Corrupt::Checksum);
        assert!(damaged.exists());
        let report = cache.verify(true).unwrap();
        assert!(report.bad[0].removed && !damaged.exists());
        assert_eq!(cache.verify(false).unwrap().bad.len(), 0);
    }

    #[test]
    fn prune_lru_down_to_size() {
        let dir = tempfile::tempdir().unwrap();
        let store = filled(dir.path(), "a", 10, 1000);
        let cache = Cache::open(dir.path(), &InspectOptions::default()).unwrap();
        let one = fs::metadata(store.record_path(&key(1000))).unwrap().len();
        // Dry run: reports the four oldest, removes nothing.
        let plan = PrunePlan { max_size: Some(one * 6), dry_run: true, ..Default::default() };
        let dry = cache.prune(&plan).unwrap();
        assert_eq!(dry.removed.len(), 4);
        assert_eq!(cache.stats().unwrap().total.records, 10);
        let report = cache.prune(&PrunePlan { dry_run: false, ..plan }).unwrap();
        let gone: Vec<Key> = (0..4).map(|i| key(1000 + i)).collect();
        for (removal, k) in report.removed.iter().zip(&gone) {
            assert_eq!(removal.path, store.record_path(k));
            assert_eq!(removal.reason, PruneReason::MaxSize);
        }
        assert_eq!((report.before.records, report.after.records, report.after.bytes), (10, 6, one * 6));
        for i in 0..10 {
            assert_eq!(store.record_path(&key(1000 + i)).exists(), i >= 4, "record {i}");
        }
        // A hit makes a record recent: it survives the next cut.
        assert!(matches!(store.get(&key(1004)).unwrap(), crate::cache::Lookup::Hit(_)));
        cache.prune(&PrunePlan { max_size: Some(one * 5), ..Default::default() }).unwrap();
        assert!(store.record_path(&key(1004)).exists() && !store.record_path(&key(1005)).exists());
    }

    /// A prune (by size or by age; a clear is a prune too) whose size
    /// counters cannot be locked (a FIFO
    /// in place of `sizes`) fails before it removes anything, saying how
    /// to mend it: it removed every record and then failed, with no word
    /// of what it had removed.
    #[test]
    fn a_prune_that_could_not_recount_removes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = filled(dir.path(), "a", 4, 100);
        let sizes = dir.path().join(SIZES_FILE);
        fs::remove_file(&sizes).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &sizes,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        let cache = Cache::open(dir.path(), &InspectOptions::default()).unwrap();
        let by_age = PrunePlan { older_than: Some(std::time::Duration::ZERO), ..Default::default() };
        for plan in [PrunePlan { max_size: Some(1), ..Default::default() }, by_age] {
            let e = cache.prune(&plan).unwrap_err().to_string();
            assert!(e.contains("sizes") && e.contains("verify --fix"), "{e}");
            assert!((0..4).all(|i| store.record_path(&key(1000 + i)).exists()), "nothing removed: {e}");
        }
        // Mended, it prunes.
        assert!(!cache.verify(true).unwrap().bad_entries.is_empty());
        assert_eq!(cache.prune(&PrunePlan { max_size: Some(1), ..Default::default() }).unwrap().removed.len(), 4);
    }

    #[test]
    fn prune_by_age_temp_and_foreign_scope() {
        let dir = tempfile::tempdir().unwrap();
        let store = filled(dir.path(), "a", 5, 10);
        filled(dir.path(), "bb", 2, 10);
        let foreign_dir = dir.path().join(scope("bb").name());
        let staged = store.stage(&key(77), &meta("t"), b"obj").unwrap();
        let tmp = staged.temp_path();
        std::mem::forget(staged);
        let stray = dir.path().join(scope("a").name()).join("00").join("notes.txt");
        fs::create_dir_all(stray.parent().unwrap()).unwrap();
        fs::write(&stray, "mine").unwrap();
        let cache = Cache::open(dir.path(), &opts("a")).unwrap();

        // A young temporary file belongs to a live writer: kept.
        let r =
            cache.prune(&PrunePlan { temp_older_than: Some(Duration::from_secs(3600)), ..Default::default() }).unwrap();
        assert!(r.removed.is_empty() && tmp.exists());
        File::options()
            .write(true)
            .open(&tmp)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(7200))
            .unwrap();
        let r =
            cache.prune(&PrunePlan { temp_older_than: Some(Duration::from_secs(3600)), ..Default::default() }).unwrap();
        assert_eq!(r.removed.len(), 1);
        assert!(!tmp.exists());

        // Not used for 3.5 hours: the two oldest of this scope (the other
        // scope's were used 2 and 1 hours ago).
        let r = cache
            .prune(&PrunePlan { older_than: Some(Duration::from_secs(3 * 3600 + 1800)), ..Default::default() })
            .unwrap();
        assert_eq!(r.removed.len(), 2);
        let r = cache.prune(&PrunePlan { foreign_scopes: true, dry_run: true, ..Default::default() }).unwrap();
        assert!(r.removed.iter().any(|x| x.kind == "directory") && foreign_dir.exists());
        // A file that is not Kiln's keeps its directory (and itself).
        let foreign_note = foreign_dir.join("README");
        fs::write(&foreign_note, "someone's").unwrap();
        let r = cache.prune(&PrunePlan { foreign_scopes: true, ..Default::default() }).unwrap();
        assert_eq!(r.kept_dirs, vec![foreign_dir.clone()]);
        assert!(r.removed.iter().filter(|x| x.kind == "directory").count() == 2, "{:?}", r.removed);
        assert_eq!(fs::read_dir(&foreign_dir).unwrap().count(), 1);
        fs::remove_file(&foreign_note).unwrap();
        let r = cache.prune(&PrunePlan { foreign_scopes: true, ..Default::default() }).unwrap();
        assert!(r.kept_dirs.is_empty() && r.removed.len() == 1);
        assert!(!foreign_dir.exists());
        assert_eq!(cache.stats().unwrap().total.records, 3);
        assert_eq!(fs::read_to_string(&stray).unwrap(), "mine");
        let unknown = Cache::open(dir.path(), &InspectOptions::default()).unwrap();
        assert!(matches!(
            unknown.prune(&PrunePlan { foreign_scopes: true, ..Default::default() }),
            Err(CacheError::UnknownHost { .. })
        ));
    }

    #[test]
    fn nothing_outside_the_root_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let store = filled(dir.path(), "a", 2, 10);
        // A shard that is a link to a directory full of record-like names.
        let victim = outside.path().join(key(5).file_name());
        fs::copy(store.record_path(&key(1000)), &victim).unwrap();
        let before = ino(&victim);
        std::os::unix::fs::symlink(outside.path(), dir.path().join(scope("a").name()).join("ff")).unwrap();
        let cache = Cache::open(dir.path(), &InspectOptions::default()).unwrap();
        assert_eq!(cache.stats().unwrap().total.records, 2);
        cache.prune(&PrunePlan { max_size: Some(1), older_than: Some(Duration::ZERO), ..Default::default() }).unwrap();
        cache.verify(true).unwrap();
        assert_eq!(ino(&victim), before);
        assert_eq!(cache.stats().unwrap().total.records, 0);
    }

    #[test]
    fn a_record_used_or_rewritten_since_the_scan_stays() {
        let dir = tempfile::tempdir().unwrap();
        let store = filled(dir.path(), "a", 2, 10);
        let path = store.record_path(&key(1000));
        let at = at_of(&path);
        let seen = |at: &At| cfs::stat_at(&*at.dir, &at.name).unwrap().identity();
        // Used by a reader: its mtime moved on.
        let before = seen(&at);
        assert!(matches!(store.get(&key(1000)).unwrap(), crate::cache::Lookup::Hit(_)));
        assert!(!remove_entry(&at, &path, Some(before)).unwrap() && path.exists());
        // Rewritten by a writer: another inode.
        let before = seen(&at);
        store.put(&key(1000), &meta("t0"), b"new object").unwrap();
        File::options().write(true).open(&path).unwrap().set_modified(before.mtime).unwrap();
        assert!(!remove_entry(&at, &path, Some(before)).unwrap() && path.exists());
        // Unchanged: removed.
        assert!(remove_entry(&at, &path, Some(seen(&at))).unwrap() && !path.exists());
        assert!(!remove_entry(&at, &path, None).unwrap());
    }

    #[test]
    fn removals_go_to_the_directory_the_walk_opened_not_to_a_link_swapped_in() {
        let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let store = filled(dir.path(), "a", 2, 10);
        let cache = Cache::open(dir.path(), &InspectOptions::default()).unwrap();
        let scan = cache.scan(Shards::All).unwrap();
        let (moved, victim) = swap_shard_for_link(&store, dir.path(), outside.path(), b"precious");
        let planned = plan_prune(
            &scan,
            &PrunePlan { max_size: Some(1), ..Default::default() },
            cache.this_host(),
            SystemTime::now(),
        );
        let (removed, _) = cache.execute_prune(planned).unwrap();
        assert_eq!(removed.len(), 2);
        // The record went from where the walk found it; nothing outside
        // the root was touched.
        assert!(!moved.exists());
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
    }
}
