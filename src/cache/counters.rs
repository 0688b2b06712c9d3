//! Lasting counters of a cache, and the automatic size bound they keep:
//! the size of each shard group (for `max_size`) and each scope's
//! statistics, in small files that every process updates under a short
//! lock, and least-recently-used eviction of one shard group.
//!
//! Owns: [`CacheStats`] (what a store counts, and a scope's lasting
//! statistics), the counter files (`sizes` at the root: slot `g` holds
//! the records and bytes of shard group `g` over every scope; `stats` in
//! each scope: its lasting [`CacheStats`] in slot 0), their fixed-size
//! JSON slots, the lock of one slot held around each update (an open
//! file description lock of the slot's bytes, `fs::lock_range`), the
//! recount of a group from disk (the walk of `scan`, one group), and the
//! eviction of a group down to 90 % of its share of `max_size`.
//!
//! Must never: hold a lock while compiling or reading a record (only a
//! rename, an unlink, a counter update or one group's directory walk
//! happens under one), follow a link below the root (the walk and the
//! removals go through directory handles opened with `O_NOFOLLOW`),
//! remove anything but a record file that is still the one the walk saw
//! (`fs::remove_if_unchanged`), fail a store because a counter slot is
//! damaged (the group is recounted instead), open a counter file through
//! a link or block on a FIFO (`O_NOFOLLOW`, `O_NONBLOCK`, and anything
//! but a regular file is refused), or lock more than one slot.

use super::access::Access;
use super::fs::{self as cfs, OFlags, RangeLock};
pub use super::layout::{group_of_shard, SIZES_FILE, STATS_FILE};
use super::scan::{self, RecordEntry, Scan, Shards};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Shard groups: records are grouped by the first hex digit of their key,
/// each group with its own size counter, lock and share of `max_size`.
pub const GROUPS: u8 = 16;
/// Every slot of a counter file is exactly this long: JSON padded with
/// spaces, so an update is one write of the slot and never leaves a
/// shorter tail.
const SLOT_LEN: usize = 512;
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

/// The name of group `g` in reports: its hex digit.
pub fn group_name(g: u8) -> String {
    format!("{g:x}")
}

/// A group's share of `max_size` (0: no bound).
pub fn group_limit(max_size: u64) -> u64 {
    max_size.div_ceil(GROUPS as u64)
}

/// One slot of a counter file, open and locked (exclusively, or shared
/// for readers) until dropped: slot `g` of the `sizes` file holds group
/// `g`'s size, slot 0 of a scope's `stats` file its statistics. Each slot
/// is a lock of its own (an open file description lock on its
/// [`SLOT_LEN`] bytes, `fs::lock_range`), so groups never wait for each
/// other, and every open is a holder of its own, as with `flock`. The
/// lock goes with the file: when it is dropped, or its process dies.
pub struct Locked {
    file: File,
    slot: u8,
}

impl Locked {
    /// Opens (creating, with `access`'s file mode whatever the umask)
    /// `name` below `dir` for update and locks its slot `slot`
    /// exclusively. Refuses a link or anything but a regular file.
    pub fn exclusive(dir: &OwnedFd, name: &str, slot: u8, access: &Access) -> io::Result<Locked> {
        let fd = cfs::open_at(dir, name, OFlags::RDWR | OFlags::CREATE | OFlags::NONBLOCK, access.file_mode())?;
        let st = regular(&fd)?;
        // A shared cache's file must be the group's to update, whoever
        // made it and whatever their umask: its maker (only they may)
        // gives it the group and the mode.
        if let Some(group) = access.group.as_ref().filter(|_| st.uid == cfs::euid()) {
            if st.gid != group.gid {
                cfs::set_group(&fd, group.gid)?;
            }
            if st.mode != access.file_mode() {
                cfs::set_mode(&fd, access.file_mode())?;
            }
        }
        Self::lock(File::from(fd), slot, RangeLock::Exclusive)
    }

    /// Opens an existing `path` for reading under a shared lock of slot
    /// `slot`; `None` when there is no such file.
    pub fn shared(path: &Path, slot: u8) -> io::Result<Option<Locked>> {
        match cfs::open_read_path(path) {
            Ok(file) => {
                regular(&file)?;
                Self::lock(file, slot, RangeLock::Shared).map(Some)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn lock(file: File, slot: u8, how: RangeLock) -> io::Result<Locked> {
        cfs::lock_range(&file, slot_start(slot), SLOT_LEN as u64, how, true)?;
        Ok(Locked { file, slot })
    }

    /// The slot's bytes: fewer than [`SLOT_LEN`] (none) past the end of
    /// the file.
    fn bytes(&self) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; SLOT_LEN];
        let mut n = 0;
        while n < SLOT_LEN {
            match self.file.read_at(&mut buf[n..], slot_start(self.slot) + n as u64) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        buf.truncate(n);
        Ok(buf)
    }

    /// The value in the slot: the default for a new one (never written:
    /// past the end of the file, or blank: spaces, or the zeros of a hole
    /// a later slot's write left), `None` for a damaged one.
    pub fn read<T: DeserializeOwned + Default>(&self) -> Option<T> {
        let text = self.bytes().ok()?;
        if is_blank(&text) {
            return Some(T::default());
        }
        serde_json::from_slice(&text).ok()
    }

    /// The value written in the slot: `None` for a new slot as for a
    /// damaged one (one read).
    pub fn read_written<T: DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_slice(&self.bytes().ok()?).ok()
    }

    /// Replaces the value: one write of [`SLOT_LEN`] bytes at the slot.
    pub fn write<T: Serialize>(&self, value: &T) -> io::Result<()> {
        let mut text = serde_json::to_vec(value).map_err(io::Error::other)?;
        if text.len() >= SLOT_LEN {
            return Err(io::Error::other("counters do not fit their slot"));
        }
        text.resize(SLOT_LEN - 1, b' ');
        text.push(b'\n');
        self.file.write_all_at(&text, slot_start(self.slot))
    }
}

/// Where slot `slot` starts.
fn slot_start(slot: u8) -> u64 {
    slot as u64 * SLOT_LEN as u64
}

/// Whether a slot's bytes say nothing: none, spaces or zeros.
fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == 0 || b.is_ascii_whitespace())
}

/// Refuses anything but a regular file.
fn regular(fd: impl AsFd) -> io::Result<cfs::FileStat> {
    let st = cfs::stat_fd(fd)?;
    if !st.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "a counter file is not a regular file"));
    }
    Ok(st)
}

/// Adds `delta` to the statistics of the scope whose directory handle is
/// `scope`, under its lock.
pub fn merge_stats(scope: &OwnedFd, delta: &CacheStats, access: &Access) -> io::Result<()> {
    let file = Locked::exclusive(scope, STATS_FILE, 0, access)?;
    // A damaged file starts again from zero: statistics only inform.
    let mut stats: CacheStats = file.read().unwrap_or_default();
    stats.add(delta);
    file.write(&stats)
}

/// Locks group `g`'s slot of the `sizes` file below the root's handle
/// `root` (creating the file with `access`'s mode and group when
/// missing: one inode for all sixteen groups, made by the cache's first
/// store).
pub fn lock_group(root: &OwnedFd, g: u8, access: &Access) -> io::Result<Locked> {
    Locked::exclusive(root, SIZES_FILE, g, access)
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
/// `lock`, the group's slot.
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
/// same scan; the caller holds `lock`, the group's slot, so no
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

/// Every group's counter of `root` (shared locks; a missing file or slot
/// counts as zero, a damaged slot as `None`).
pub fn read_sizes(root: &Path) -> io::Result<Vec<Option<GroupSize>>> {
    (0..GROUPS)
        .map(|g| match Locked::shared(&root.join(SIZES_FILE), g)? {
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
    Ok(Locked::shared(&scope_dir.join(STATS_FILE), 0)?.and_then(|f| f.read()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::store::tests::meta;
    use crate::cache::{HostScope, Key, Lookup, Store, StoreOptions};
    use std::fs;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
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
        let sizes = File::options().write(true).open(dir.path().join(SIZES_FILE)).unwrap();
        sizes.write_all_at(b"{damaged", slot_start(3)).unwrap();
        assert_eq!(read_sizes(dir.path()).unwrap()[3], None);
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
        fs::remove_file(dir.path().join(SIZES_FILE)).unwrap();
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
        let f = Locked::exclusive(&fd, "c", 0, &Access::default()).unwrap();
        assert_eq!(f.read::<GroupSize>(), Some(GroupSize::default()));
        f.write(&GroupSize { records: 3, bytes: 12345 }).unwrap();
        f.write(&GroupSize { records: 1, bytes: 7 }).unwrap();
        assert_eq!(fs::metadata(dir.path().join("c")).unwrap().len(), SLOT_LEN as u64);
        assert_eq!(f.read::<GroupSize>(), Some(GroupSize { records: 1, bytes: 7 }));
        drop(f);
        fs::write(dir.path().join("c"), "{\"records\": 1, \"by").unwrap();
        assert_eq!(Locked::exclusive(&fd, "c", 0, &Access::default()).unwrap().read::<GroupSize>(), None);
    }

    #[test]
    fn anything_but_a_regular_file_is_refused_without_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let fd = cfs::open_dir_path(dir.path()).unwrap();
        fs::write(dir.path().join("target"), "").unwrap();
        std::os::unix::fs::symlink(dir.path().join("target"), dir.path().join("l")).unwrap();
        fs::create_dir(dir.path().join("d")).unwrap();
        nix::unistd::mkfifo(&dir.path().join("p"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        for name in ["l", "d", "p"] {
            assert!(Locked::exclusive(&fd, name, 2, &Access::default()).is_err(), "{name} locked for update");
            assert!(Locked::shared(&dir.path().join(name), 2).is_err(), "{name} locked for reading");
        }
        assert_eq!(fs::metadata(dir.path().join("target")).unwrap().len(), 0, "nothing written through the link");
    }

    /// Tries (never waits for) group `g`'s slot through `file`, an open of
    /// its own: whether the lock was had.
    fn try_slot(file: &File, g: u8, how: RangeLock) -> bool {
        match cfs::lock_range(file, slot_start(g), SLOT_LEN as u64, how, false) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => false,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn each_group_is_a_lock_of_its_own_and_each_open_a_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SIZES_FILE);
        let root = cfs::open_dir_path(dir.path()).unwrap();
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            let root = &root;
            s.spawn(move || {
                let lock = lock_group(root, 3, &Access::default()).unwrap();
                lock.write(&GroupSize { records: 3, bytes: 3 }).unwrap();
                held_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                drop(lock);
                held_tx.send(()).unwrap();
            });
            held_rx.recv().unwrap();
            // Group 4 is free while another thread holds group 3 ...
            let four = lock_group(root, 4, &Access::default()).unwrap();
            four.write(&GroupSize { records: 4, bytes: 4 }).unwrap();
            drop(four);
            // ... and another open of the same file, in the same process,
            // may have group 4 but neither group 3 nor a read of it.
            let other = File::options().read(true).write(true).open(&path).unwrap();
            assert!(try_slot(&other, 4, RangeLock::Exclusive));
            assert!(!try_slot(&other, 3, RangeLock::Exclusive) && !try_slot(&other, 3, RangeLock::Shared));
            go_tx.send(()).unwrap();
            held_rx.recv().unwrap();
            // Dropped: free at once.
            assert!(try_slot(&other, 3, RangeLock::Exclusive));
            // Readers share a slot with each other, not with a writer.
            drop(other);
            let reader = Locked::shared(&path, 3).unwrap().unwrap();
            let other = File::open(&path).unwrap();
            assert!(try_slot(&other, 3, RangeLock::Shared));
            let writer = File::options().read(true).write(true).open(&path).unwrap();
            assert!(!try_slot(&writer, 3, RangeLock::Exclusive));
            assert_eq!(reader.read::<GroupSize>(), Some(GroupSize { records: 3, bytes: 3 }));
        });
        let sizes = read_sizes(dir.path()).unwrap();
        assert_eq!(
            (sizes[3], sizes[4]),
            (Some(GroupSize { records: 3, bytes: 3 }), Some(GroupSize { records: 4, bytes: 4 }))
        );
    }

    #[test]
    fn a_short_file_or_a_blank_slot_is_new_and_recounted_on_first_use() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), "a", 0);
        let keys = keys_in_group(7, 0, 2);
        store.put(&keys[0], &meta("t"), b"one").unwrap();
        // Only slot 0 is left, holding a value of its own: group 7's slot
        // is past the end.
        let path = dir.path().join(SIZES_FILE);
        let zero = GroupSize { records: 5, bytes: 50 };
        let mut text = serde_json::to_vec(&zero).unwrap();
        text.resize(SLOT_LEN, b' ');
        fs::write(&path, &text).unwrap();
        let root = cfs::open_dir_path(dir.path()).unwrap();
        let is_new = |g| {
            let lock = lock_group(&root, g, &Access::default()).unwrap();
            lock.read::<GroupSize>() == Some(GroupSize::default()) && lock.read_written::<GroupSize>().is_none()
        };
        assert!(is_new(7));
        store.put(&keys[1], &meta("t"), b"two").unwrap();
        let sizes = read_sizes(dir.path()).unwrap();
        assert_eq!((sizes[0], sizes[7]), (Some(zero), Some(recounted(dir.path())[7])));
        assert_eq!(sizes[7].unwrap().records, 2, "recounted from disk, both records");
        // The slots between (a hole: zeros) are new too, and read as zero.
        assert_eq!(fs::metadata(&path).unwrap().len(), 8 * SLOT_LEN as u64);
        assert!((1..7).all(is_new) && !is_new(0) && !is_new(7));
        assert_eq!(sizes[1..7], [Some(GroupSize::default()); 6]);
    }

    #[test]
    fn a_shared_caches_counter_file_is_the_groups_whoever_made_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = cfs::open_dir_path(dir.path()).unwrap();
        let gid = rustix::process::getegid().as_raw();
        let shared =
            Access { group: Some(super::super::access::Group { name: gid.to_string(), gid }), ..Default::default() };
        // Made by a process whose umask left it private, another slot
        // already written.
        lock_group(&root, 9, &Access::default()).unwrap().write(&GroupSize { records: 1, bytes: 1 }).unwrap();
        let path = dir.path().join(SIZES_FILE);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        lock_group(&root, 2, &shared).unwrap();
        let meta = fs::metadata(&path).unwrap();
        assert_eq!((meta.permissions().mode() & 0o7777, meta.gid()), (0o664, gid));
        // A private cache's file stays as its maker's umask left it.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        lock_group(&root, 2, &Access::default()).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o7777, 0o600);
    }

    #[test]
    fn an_older_builds_counter_directory_is_ignored_and_verify_fix_removes_it() {
        use crate::cache::inspect::{Cache, InspectOptions};
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), "a", 0);
        let keys: Vec<Key> = (0..20u32).map(|i| Key::from(blake3::hash(&i.to_le_bytes()))).collect();
        store.put(&keys[0], &meta("t"), b"zero").unwrap();
        // What a layout-1 build before the `sizes` file keeps, all wrong.
        let old = dir.path().join(super::super::layout::OLD_COUNTERS_DIR);
        fs::create_dir(&old).unwrap();
        for g in 0..GROUPS {
            fs::write(old.join(group_name(g)), "{\"records\":99,\"bytes\":99}").unwrap();
        }
        for k in &keys[1..] {
            store.put(k, &meta("t"), b"object").unwrap();
        }
        let counted: Vec<GroupSize> = read_sizes(dir.path()).unwrap().into_iter().map(Option::unwrap).collect();
        assert_eq!(counted, recounted(dir.path()), "the old files are neither read nor written");
        let cache = Cache::open(dir.path(), &InspectOptions::default()).unwrap();
        let report = cache.verify(false).unwrap();
        assert!(report.bad_entries.is_empty() && report.counter_drift.is_empty(), "{report:?}");
        assert!(report.old_counters.as_ref().is_some_and(|o| o.path.ends_with("counters") && !o.removed));
        // Something not Kiln's inside keeps the directory (its counters go).
        fs::write(old.join("README"), "mine").unwrap();
        assert!(!cache.verify(true).unwrap().old_counters.unwrap().removed);
        assert_eq!(fs::read_dir(&old).unwrap().count(), 1);
        fs::remove_file(old.join("README")).unwrap();
        assert!(cache.verify(true).unwrap().old_counters.unwrap().removed);
        assert!(!old.exists() && cache.verify(false).unwrap().old_counters.is_none());
        // A link under its name goes, never what it points to.
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("0"), "precious").unwrap();
        std::os::unix::fs::symlink(outside.path(), &old).unwrap();
        assert!(cache.verify(true).unwrap().old_counters.unwrap().removed);
        assert!(fs::symlink_metadata(&old).is_err() && outside.path().join("0").exists());
    }

    #[test]
    fn groups_and_limits() {
        assert_eq!((group_of_shard("00"), group_of_shard("a7"), group_of_shard("ff")), (0, 10, 15));
        assert_eq!(group_name(11), "b");
        assert_eq!((group_limit(0), group_limit(16), group_limit(17)), (0, 1, 2));
    }
}
