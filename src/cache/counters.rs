//! Lasting counters of a cache, and the automatic size bound they keep:
//! the size of each shard group (for `max_size`) and each scope's
//! statistics, in small files that every process updates under a short
//! lock, and least-recently-used eviction of one shard group.
//!
//! Owns: [`CacheStats`] (what a store counts, and a scope's lasting
//! statistics), the counter files (`counters/<g>` at the root: records
//! and bytes of shard group `g` over every scope; `stats` in each scope:
//! its lasting [`CacheStats`]), their fixed-size JSON format, the `flock`
//! held around each update (`std::fs::File::lock`), the recount of a
//! group from disk (the walk of `scan`, one group), and the eviction of a
//! group down to 90 % of its share of `max_size`.
//!
//! Must never: hold a lock while compiling or reading a record (only a
//! rename, an unlink, a counter update or one group's directory walk
//! happens under one), follow a link below the root (the walk and the
//! removals go through directory handles opened with `O_NOFOLLOW`),
//! remove anything but a record file that is still the one the walk saw
//! (`fs::remove_if_unchanged`), or fail a store because a counter file is
//! damaged (the group is recounted instead).

use super::access::Access;
use super::fs::{self as cfs, OFlags};
pub use super::layout::{group_of_shard, COUNTERS_DIR, STATS_FILE};
use super::scan::{self, RecordEntry, Scan, Shards};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Shard groups: records are grouped by the first hex digit of their key,
/// each group with its own size counter, lock and share of `max_size`.
pub const GROUPS: u8 = 16;
/// Every counter file is exactly this long: JSON padded with spaces, so
/// an update is one write at offset 0 and never leaves a shorter tail.
const FILE_LEN: usize = 512;
/// Eviction brings a group down to this fraction of its share (percent).
const EVICT_TO_PERCENT: u64 = 90;

/// The records and bytes of one shard group (over every scope).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupSize {
    pub records: u64,
    pub bytes: u64,
}

impl GroupSize {
    fn add(&mut self, o: GroupSize) {
        self.records += o.records;
        self.bytes += o.bytes;
    }
}

/// What one store has done since it was opened; also the lasting
/// statistics of a scope, which every process adds its own to when it
/// finishes ([`Store::flush_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// Damaged or rejected records removed.
    pub corrupt: u64,
    /// Records written.
    pub puts: u64,
    /// Records removed by the size bound.
    pub evicted: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Compile time saved: the compile milliseconds recorded in each record
    /// that was a hit.
    pub compile_ms_saved: u64,
}

impl CacheStats {
    /// Applies `f` to each pair of fields (the one list of the fields).
    pub(super) fn zip(&self, o: &CacheStats, f: impl Fn(u64, u64) -> u64) -> CacheStats {
        CacheStats {
            hits: f(self.hits, o.hits),
            misses: f(self.misses, o.misses),
            corrupt: f(self.corrupt, o.corrupt),
            puts: f(self.puts, o.puts),
            evicted: f(self.evicted, o.evicted),
            bytes_read: f(self.bytes_read, o.bytes_read),
            bytes_written: f(self.bytes_written, o.bytes_written),
            compile_ms_saved: f(self.compile_ms_saved, o.compile_ms_saved),
        }
    }

    /// Adds `o` field by field.
    pub fn add(&mut self, o: &CacheStats) {
        *self = self.zip(o, u64::saturating_add);
    }

    /// The share of lookups that hit, if there were any.
    pub fn hit_rate(&self) -> Option<f64> {
        let lookups = self.hits + self.misses + self.corrupt;
        (lookups > 0).then(|| self.hits as f64 / lookups as f64)
    }
}

/// The file name of group `g`'s size counter.
pub fn group_file(g: u8) -> String {
    format!("{g:x}")
}

/// A group's share of `max_size` (0: no bound).
pub fn group_limit(max_size: u64) -> u64 {
    max_size.div_ceil(GROUPS as u64)
}

/// A counter file, open and locked (exclusively, or shared for readers)
/// until dropped.
pub struct Locked(File);

impl Locked {
    /// Opens (creating, with `access`'s file mode whatever the umask)
    /// `name` below `dir` for update and locks it exclusively. Refuses a
    /// link or anything but a regular file.
    pub fn exclusive(dir: &OwnedFd, name: &str, access: &Access) -> io::Result<Locked> {
        let mode = access.file_mode();
        let fd = cfs::open_at(dir, name, OFlags::RDWR | OFlags::CREATE | OFlags::NONBLOCK, mode)?;
        let locked = Self::checked(File::from(fd), true)?;
        // A new file of a shared cache: group-writable for the others.
        if access.group.is_some() && locked.is_new() {
            cfs::set_mode(&locked.0, mode)?;
        }
        Ok(locked)
    }

    /// Opens an existing `path` for reading under a shared lock; `None`
    /// when there is no such file.
    pub fn shared(path: &Path) -> io::Result<Option<Locked>> {
        match cfs::open_read_path(path) {
            Ok(file) => Self::checked(file, false).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn checked(file: File, exclusive: bool) -> io::Result<Locked> {
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a counter file is not a regular file"));
        }
        if exclusive {
            file.lock()?;
        } else {
            file.lock_shared()?;
        }
        Ok(Locked(file))
    }

    /// Whether the file is empty: just created, never written.
    pub fn is_new(&self) -> bool {
        self.0.metadata().is_ok_and(|m| m.len() == 0)
    }

    /// The value in the file: the default for an empty (new) file, `None`
    /// for a damaged one.
    pub fn read<T: DeserializeOwned + Default>(&self) -> Option<T> {
        let mut buf = vec![0u8; FILE_LEN];
        let mut n = 0;
        while n < FILE_LEN {
            match self.0.read_at(&mut buf[n..], n as u64) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        let text = &buf[..n];
        if text.iter().all(|b| b.is_ascii_whitespace()) {
            return Some(T::default());
        }
        serde_json::from_slice(text).ok()
    }

    /// Replaces the value: one write of [`FILE_LEN`] bytes at offset 0.
    pub fn write<T: Serialize>(&self, value: &T) -> io::Result<()> {
        let mut text = serde_json::to_vec(value).map_err(io::Error::other)?;
        if text.len() >= FILE_LEN {
            return Err(io::Error::other("counters do not fit their file"));
        }
        text.resize(FILE_LEN - 1, b' ');
        text.push(b'\n');
        self.0.write_all_at(&text, 0)
    }
}

/// Adds `delta` to the statistics of the scope whose directory handle is
/// `scope`, under its lock.
pub fn merge_stats(scope: &OwnedFd, delta: &CacheStats, access: &Access) -> io::Result<()> {
    let file = Locked::exclusive(scope, STATS_FILE, access)?;
    // A damaged file starts again from zero: statistics only inform.
    let mut stats: CacheStats = file.read().unwrap_or_default();
    stats.add(delta);
    file.write(&stats)
}

/// Opens the root's counter directory (creating it with `access`'s
/// mode and group), refusing a link. The process that creates it creates
/// the sixteen (empty, so new: recounted on first use) counter files with
/// it, so that later stores, a fetched kernel's pack among them, make no
/// inode for a group they are the first to touch; a file that cannot be
/// made now is made by its group's first store, as before.
pub fn open_counters_dir(root: &Path, access: &Access) -> io::Result<OwnedFd> {
    let created = access.make_dir(&root.join(COUNTERS_DIR)).map_err(super::CacheError::into_io)?;
    let dir = cfs::open_dir(cfs::open_dir_path(root)?, COUNTERS_DIR)?;
    if created {
        for g in 0..GROUPS {
            let made = cfs::open_at(
                &dir,
                &group_file(g),
                OFlags::RDWR | OFlags::CREATE | OFlags::NONBLOCK,
                access.file_mode(),
            );
            if let (Ok(fd), Some(_)) = (made, &access.group) {
                let _ = cfs::set_mode(&fd, access.file_mode());
            }
        }
    }
    Ok(dir)
}

/// Every record of group `g` in every scope of `root` (the walk of
/// `scan`, in the calling thread: the caller holds the group's lock).
pub fn scan_group(root: &Path, g: u8) -> io::Result<Scan> {
    scan::scan(root, Shards::Group(g)).map_err(super::CacheError::into_io)
}

/// The regular files among a scan's records (what the size counts).
fn sized(scan: &Scan) -> impl Iterator<Item = (&str, &RecordEntry)> {
    scan.records().filter(|(_, r)| !r.not_a_file)
}

/// The size of the records a scan found.
pub fn size_of(scan: &Scan) -> GroupSize {
    let mut size = GroupSize::default();
    for (_, r) in sized(scan) {
        size.add(GroupSize { records: 1, bytes: r.file.size });
    }
    size
}

/// The records and bytes of group `g` on disk.
pub fn size_of_group(root: &Path, g: u8) -> io::Result<GroupSize> {
    Ok(size_of(&scan_group(root, g)?))
}

/// Recounts group `g` from disk and writes its counter; the caller holds
/// `lock`, the group's counter file.
pub fn recount(root: &Path, g: u8, lock: &Locked) -> io::Result<GroupSize> {
    let size = size_of_group(root, g)?;
    lock.write(&size)?;
    Ok(size)
}

/// What one eviction did.
#[derive(Clone, Debug, Default)]
pub struct Eviction {
    /// Records removed, per scope.
    pub evicted: Vec<(String, u64)>,
    /// The group afterwards.
    pub size: GroupSize,
}

/// Removes group `g`'s least recently used records (over every scope)
/// until it holds at most 90 % of `limit` bytes, recounting it from the
/// same scan; the caller holds `lock`, the group's counter file, so no
/// store renames or removes a record of the group meanwhile. A record
/// changed since the scan (another inode, or used: a newer mtime) stays.
pub fn evict(root: &Path, g: u8, limit: u64, lock: &Locked) -> io::Result<Eviction> {
    let scan = scan_group(root, g)?;
    let mut size = size_of(&scan);
    let target = (limit as u128 * EVICT_TO_PERCENT as u128 / 100) as u64;
    let mut evicted: Vec<(String, u64)> = Vec::new();
    if size.bytes > limit {
        let mut all: Vec<(&str, &RecordEntry)> = sized(&scan).collect();
        // Least recently used first, ties by scope and key (the order of
        // their paths: a key's hex digits are its shard and file name).
        all.sort_by(|a, b| (a.1.file.mtime, a.0, a.1.key).cmp(&(b.1.file.mtime, b.0, b.1.key)));
        for (scope, r) in all {
            if size.bytes <= target {
                break;
            }
            if remove_if_unchanged(r)? {
                size.records -= 1;
                size.bytes -= r.file.size;
                match evicted.last_mut() {
                    Some((s, n)) if s == scope => *n += 1,
                    _ => evicted.push((scope.to_string(), 1)),
                }
            }
        }
    }
    lock.write(&size)?;
    Ok(Eviction { evicted: merge_counts(evicted), size })
}

/// Sums the counts of each scope (an eviction's list names a scope once
/// per run of its records in LRU order).
fn merge_counts(list: Vec<(String, u64)>) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for (scope, n) in list {
        match out.iter_mut().find(|(s, _)| *s == scope) {
            Some((_, m)) => *m += n,
            None => out.push((scope, n)),
        }
    }
    out
}

/// Unlinks the record `r` if it is still the file the scan saw, through
/// the shard handle the scan opened; whether it did.
fn remove_if_unchanged(r: &RecordEntry) -> io::Result<bool> {
    match cfs::remove_if_unchanged(&*r.file.at.dir, &r.file.at.name, Some(r.file.identity())) {
        Ok(removed) => Ok(removed.is_some()),
        // Another user's record in a shared cache: it stays.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Ok(false),
        Err(e) => Err(e),
    }
}

/// The sum of every group's counter of `root` (shared locks; a missing
/// file counts as zero, a damaged one as `None`).
pub fn read_sizes(root: &Path) -> io::Result<Vec<Option<GroupSize>>> {
    (0..GROUPS)
        .map(|g| match Locked::shared(&root.join(COUNTERS_DIR).join(group_file(g)))? {
            Some(f) => Ok(f.read::<GroupSize>()),
            None => Ok(Some(GroupSize::default())),
        })
        .collect()
}

/// The total of some group sizes (damaged ones count as zero).
pub fn total(sizes: &[Option<GroupSize>]) -> GroupSize {
    let mut t = GroupSize::default();
    for s in sizes.iter().flatten() {
        t.add(*s);
    }
    t
}

/// Reads a scope's lasting statistics (zero when it has none yet).
pub fn read_stats(scope_dir: &Path) -> io::Result<CacheStats> {
    Ok(Locked::shared(&scope_dir.join(STATS_FILE))?.and_then(|f| f.read()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::store::tests::meta;
    use crate::cache::{HostScope, Key, Lookup, Store, StoreOptions};
    use std::fs;
    use std::time::{Duration, SystemTime};

    fn scope(cpu: &str) -> HostScope {
        HostScope::new("x86_64-unknown-linux-gnu", cpu, ["+a"])
    }

    fn open(root: &Path, cpu: &str, max_size: u64) -> Store {
        Store::open(root, scope(cpu), StoreOptions { fsync: false, max_size, ..Default::default() }).unwrap()
    }

    /// The first `n` keys (from `from` on) whose shard is in group `g`.
    fn keys_in_group(g: u8, from: u32, n: usize) -> Vec<Key> {
        (from..)
            .map(|i| Key::from(blake3::hash(&i.to_le_bytes())))
            .filter(|k| group_of_shard(&k.shard()) == g)
            .take(n)
            .collect()
    }

    /// What the files on disk add up to, per group.
    fn recounted(root: &Path) -> Vec<GroupSize> {
        (0..GROUPS).map(|g| size_of(&scan_group(root, g).unwrap())).collect()
    }

    fn set_last_use(path: &Path, ago_secs: u64) {
        let t = SystemTime::now() - Duration::from_secs(ago_secs);
        File::options().write(true).open(path).unwrap().set_modified(t).unwrap();
    }

    #[test]
    fn counters_follow_puts_replacements_and_removals() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (open(dir.path(), "a", 0), open(dir.path(), "bb", 0));
        let keys: Vec<Key> = (0..40u32).map(|i| Key::from(blake3::hash(&i.to_le_bytes()))).collect();
        for (i, k) in keys.iter().enumerate() {
            let store = if i % 3 == 0 { &b } else { &a };
            store.put(k, &meta("t"), &vec![1; 100 + i]).unwrap();
        }
        // Replaced by a longer record, removed, found damaged.
        a.put(&keys[1], &meta("t"), &[2; 5000]).unwrap();
        assert!(a.erase(&keys[2]).unwrap());
        let mut bytes = fs::read(a.record_path(&keys[4])).unwrap();
        bytes[70] ^= 1;
        fs::write(a.record_path(&keys[4]), bytes).unwrap();
        assert!(matches!(a.get(&keys[4]).unwrap(), Lookup::Corrupt(_)));
        let counted: Vec<GroupSize> = read_sizes(dir.path()).unwrap().into_iter().map(Option::unwrap).collect();
        assert_eq!(counted, recounted(dir.path()));
        assert_eq!(total(&read_sizes(dir.path()).unwrap()).records, 38);
    }

    #[test]
    fn a_damaged_counter_is_recounted_by_the_next_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), "a", 0);
        let keys = keys_in_group(3, 0, 3);
        store.put(&keys[0], &meta("t"), b"one").unwrap();
        fs::write(dir.path().join(COUNTERS_DIR).join("3"), "{damaged").unwrap();
        store.put(&keys[1], &meta("t"), b"two").unwrap();
        assert_eq!(read_sizes(dir.path()).unwrap()[3], Some(recounted(dir.path())[3]));
        assert_eq!(recounted(dir.path())[3].records, 2);
    }

    #[test]
    fn a_cache_older_than_the_counters_is_recounted_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let keys = keys_in_group(9, 0, 12);
        let store = open(dir.path(), "a", 0);
        for k in &keys[..10] {
            store.put(k, &meta("t"), &[1; 1000]).unwrap();
        }
        let one = fs::metadata(store.record_path(&keys[0])).unwrap().len();
        drop(store);
        // As if written by a build without counters.
        fs::remove_dir_all(dir.path().join(COUNTERS_DIR)).unwrap();
        let store = open(dir.path(), "a", one * 10 * GROUPS as u64);
        store.put(&keys[10], &meta("t"), &[1; 1000]).unwrap();
        let after = recounted(dir.path())[9];
        assert_eq!(after.records, 9, "the recount saw eleven records and evicted two");
        assert_eq!(read_sizes(dir.path()).unwrap()[9], Some(after));
    }

    #[test]
    fn the_bound_evicts_least_recently_used_records_down_to_90_percent() {
        let dir = tempfile::tempdir().unwrap();
        let keys = keys_in_group(5, 0, 12);
        let probe = open(dir.path(), "a", 0);
        probe.put(&keys[0], &meta("t"), &[7; 1000]).unwrap();
        let one = fs::metadata(probe.record_path(&keys[0])).unwrap().len();
        drop(probe);
        // Group 5's share: ten records and a half.
        let max_size = (one * 21 / 2) * GROUPS as u64;
        let store = open(dir.path(), "a", max_size);
        for (i, k) in keys.iter().enumerate().take(10) {
            store.put(k, &meta("t"), &[7; 1000]).unwrap();
            set_last_use(&store.record_path(k), 1000 - i as u64);
        }
        assert_eq!(recounted(dir.path())[5].records, 10);
        // The oldest is used: it is recent now.
        assert!(matches!(store.get(&keys[0]).unwrap(), Lookup::Hit(_)));
        // The 11th record takes the group over its share: down to 90 %
        // (9 records and a half): records 1 and 2, the least recently used,
        // go.
        store.put(&keys[10], &meta("t"), &[7; 1000]).unwrap();
        let limit = group_limit(max_size);
        let after = recounted(dir.path())[5];
        assert!(after.bytes <= limit * 9 / 10, "{after:?} over 90 % of {limit}");
        assert_eq!(after.records, 9);
        for (i, k) in keys.iter().enumerate().take(11) {
            assert_eq!(store.record_path(k).exists(), !(1..=2).contains(&i), "record {i}");
        }
        assert_eq!(read_sizes(dir.path()).unwrap()[5], Some(after));
        assert_eq!(store.stats().evicted, 2);
        // Another scope's records are evicted too (the bound is the
        // cache's), and counted in that scope's statistics.
        let other = open(dir.path(), "bb", max_size);
        for k in keys_in_group(5, 100_000, 3) {
            other.put(&k, &meta("t"), &[7; 1000]).unwrap();
        }
        assert!(recounted(dir.path())[5].bytes <= limit);
        drop(store);
        let stats = read_stats(&dir.path().join(scope("a").name())).unwrap();
        assert!(stats.evicted >= 3, "{stats:?}");
    }

    #[test]
    fn statistics_last_across_processes() {
        let dir = tempfile::tempdir().unwrap();
        let k = Key::from(blake3::hash(b"k"));
        for round in 0..3u64 {
            let store = open(dir.path(), "a", 0);
            match store.get(&k).unwrap() {
                Lookup::Miss => store.put_compiled(&k, &meta("t"), b"obj", Duration::from_millis(250)).unwrap(),
                Lookup::Hit(r) => assert_eq!(r.producer.compile_ms, 250),
                other => panic!("{other:?}"),
            }
            store.flush_stats().unwrap();
            // A second flush adds nothing; dropping the store neither.
            store.flush_stats().unwrap();
            drop(store);
            let s = read_stats(&dir.path().join(scope("a").name())).unwrap();
            assert_eq!((s.hits, s.misses, s.puts, s.compile_ms_saved), (round, 1, 1, 250 * round));
        }
        let s = read_stats(&dir.path().join(scope("a").name())).unwrap();
        assert_eq!(s.hit_rate(), Some(2.0 / 3.0));
        assert!(s.bytes_read > 0 && s.bytes_written > 0);
    }

    #[test]
    fn a_counter_file_round_trips_and_damage_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let fd = cfs::open_dir_path(dir.path()).unwrap();
        let f = Locked::exclusive(&fd, "c", &Access::default()).unwrap();
        assert_eq!(f.read::<GroupSize>(), Some(GroupSize::default()));
        f.write(&GroupSize { records: 3, bytes: 12345 }).unwrap();
        f.write(&GroupSize { records: 1, bytes: 7 }).unwrap();
        assert_eq!(fs::metadata(dir.path().join("c")).unwrap().len(), FILE_LEN as u64);
        assert_eq!(f.read::<GroupSize>(), Some(GroupSize { records: 1, bytes: 7 }));
        drop(f);
        fs::write(dir.path().join("c"), "{\"records\": 1, \"by").unwrap();
        assert_eq!(Locked::exclusive(&fd, "c", &Access::default()).unwrap().read::<GroupSize>(), None);
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("l")).unwrap();
        assert!(Locked::exclusive(&fd, "l", &Access::default()).is_err());
        fs::create_dir(dir.path().join("d")).unwrap();
        assert!(Locked::exclusive(&fd, "d", &Access::default()).is_err());
    }

    #[test]
    fn groups_and_limits() {
        assert_eq!((group_of_shard("00"), group_of_shard("a7"), group_of_shard("ff")), (0, 10, 15));
        assert_eq!(group_file(11), "b");
        assert_eq!((group_limit(0), group_limit(16), group_limit(17)), (0, 1, 2));
    }
}
