//! The store: get, put and erase records in one host scope of a cache
//! root, safely under many concurrent processes.
//!
//! Owns: opening a root ([`CacheRoot`]; its set-up is `root`'s), reading
//! this machine's host back from its `hosts/` entry, opening a scope of it
//! and its trust checks, the record paths, the temporary-file-then-rename
//! write protocol, the [`CacheStats`] a store counts (and their flush into
//! the scope's lasting statistics), and the accounting of every rename and
//! unlink in its shard group's size counter, under the group's lock
//! (`counters`). Every system call goes through `fs`.
//!
//! Must never: follow a symbolic link below the scope directory (every
//! open below it is an `openat` relative to the scope directory's handle
//! with `O_NOFOLLOW`), let a reader see a partly written record, store an
//! empty object, or turn damage on disk into anything but
//! [`Lookup::Corrupt`] (or a vanished file into anything but a miss).

use super::access::Access;
use super::counters::{self, CacheStats, GroupSize, Locked};
use super::fs::{self as cfs, Identity};
use super::host::{self, HostFile, HostScope, NativeFile, HOSTS_DIR, HOST_FILE};
pub use super::layout::{is_record_name, is_shard_name, is_temp_name, key_of};
use super::layout::{packed_name, temp_name, PACKED_DIR, PACK_TEMP_BASE};
use super::lock::{Claim, KeyLock};
use super::pack::{self, PackError};
use super::record::{self, Corrupt, Key, Producer, Record, MAX_RECORD_LEN};
use super::root::{check_dir, open_root, write_json};
pub use super::root::{check_markers, check_trusted, init_root, is_unfinished_root};
use super::CacheError;
use crate::config::LaunchMeta;
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How to open a store.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Accept a root or scope directory that another user owns or that is
    /// group- or world-writable (`--allow-insecure-cache`).
    pub allow_insecure: bool,
    /// The LLVM version stamped into the producer of each record.
    pub llvm_version: String,
    /// Sync each record to disk before renaming it into place. Turn off
    /// only for throwaway caches (benchmark fills).
    pub fsync: bool,
    /// Look up only: create nothing, write nothing, remove nothing, touch
    /// nothing (`read_only` / `KILN_CACHE_READ_ONLY`).
    pub read_only: bool,
    /// The Unix group sharing the cache (`shared_group`), by name or gid.
    pub shared_group: Option<String>,
    /// The size bound of the whole cache, in bytes of records (0: none;
    /// `max_size`): a store that takes a shard group over its share evicts
    /// that group's least recently used records (see `docs/cache.md`).
    pub max_size: u64,
}

/// The default size bound: 5 GiB, as ccache's.
pub const DEFAULT_MAX_SIZE: u64 = 5 << 30;

impl Default for StoreOptions {
    fn default() -> StoreOptions {
        StoreOptions {
            allow_insecure: false,
            llvm_version: "none".into(),
            fsync: true,
            read_only: false,
            shared_group: None,
            max_size: DEFAULT_MAX_SIZE,
        }
    }
}

impl StoreOptions {
    /// Who may use the cache, the group resolved.
    pub fn access(&self) -> Result<Access, CacheError> {
        Access::new(self.allow_insecure, self.shared_group.as_deref())
    }
}

/// What a lookup found.
// A lookup is returned once and matched at once, never stored in bulk:
// boxing the record would only add an allocation per hit.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Lookup {
    /// A verified record.
    Hit(Record),
    /// No record under the key (including one removed while reading).
    Miss,
    /// A damaged record: it has been removed and counted.
    Corrupt(Corrupt),
}

/// The counters of one store: everything so far, and what of it has been
/// merged into the scope's lasting statistics; and the root's handle,
/// which the `sizes` file is opened below, opened on first use.
#[derive(Default)]
struct Counters {
    now: Mutex<(CacheStats, CacheStats)>,
    root: OnceLock<OwnedFd>,
    /// Why the size counters could not be locked, the first time they
    /// could not (no count is kept, so the size bound is not either),
    /// and whether that was said.
    problem: OnceLock<String>,
    problem_said: std::sync::atomic::AtomicBool,
}

impl Counters {
    fn bump(&self, f: impl FnOnce(&mut CacheStats)) {
        // A poisoned lock only means another thread panicked mid-update of
        // plain numbers: keep counting.
        let mut g = self.now.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g.0);
    }
}

/// One host scope of a cache root, open for reading and writing.
pub struct Store {
    root: PathBuf,
    scope: HostScope,
    scope_name: String,
    scope_dir: PathBuf,
    scope_fd: OwnedFd,
    options: StoreOptions,
    access: Access,
    counters: Counters,
}

/// Where a record of the scope may be: its own file in its shard, or its
/// link into a pack in the pack directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Shard,
    Packed,
}

impl Place {
    /// The directory below the scope.
    fn dir(self, key: &Key) -> String {
        match self {
            Place::Shard => key.shard(),
            Place::Packed => PACKED_DIR.to_string(),
        }
    }

    /// The file's name in that directory.
    fn name(self, key: &Key) -> String {
        match self {
            Place::Shard => key.file_name(),
            Place::Packed => packed_name(key),
        }
    }
}

/// A decoded record, if it holds `key`.
fn checked(decoded: Result<Record, Corrupt>, key: &Key) -> Result<Record, Corrupt> {
    match decoded {
        Ok(r) if r.key == *key => Ok(r),
        Ok(r) => Err(Corrupt::KeyMismatch { found: r.key.to_hex() }),
        Err(c) => Err(c),
    }
}

/// A fetched record to store: its key, launch metadata, object and the
/// time it took to compile where it was made.
pub type Fetched<'a> = (&'a Key, &'a LaunchMeta, &'a [u8], Duration);

/// A temporary file that is removed when dropped (a pack's name of its
/// own, once its links are made or its write failed).
struct TempName<'a> {
    dir: &'a OwnedFd,
    name: String,
}

impl Drop for TempName<'_> {
    fn drop(&mut self) {
        let _ = cfs::unlink_at(self.dir, &self.name);
    }
}

/// Whether an I/O error means "the file is not there (any more)".
fn vanished(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
}

/// Whether a scope a store opens is this machine's own, for its `hosts/`
/// entry.
#[derive(Clone, Copy, Debug)]
pub enum Native<'a> {
    /// A simulated host (or one not known to be this machine): nothing is
    /// recorded.
    No,
    /// This machine as LLVM detected it: recorded with what was detected,
    /// for the later processes of this boot to recall.
    Detected(&'a host::DetectedHost),
    /// This machine's own by the caller's word (a test's stand-in for the
    /// detected host): recorded with nothing to recall.
    Told,
}

/// A cache root, opened after its trust checks: what a store of one of
/// its scopes is opened from, and where this machine's host is recalled
/// from before its scope is known ([`CacheRoot::recall_host`]).
pub struct CacheRoot {
    root: PathBuf,
    options: StoreOptions,
    access: Access,
    /// The `hosts/` entry this machine's host was recalled from, which
    /// then needs no rewriting when it names that host's scope.
    recalled: Option<NativeFile>,
}

impl CacheRoot {
    /// Opens (creating if needed, unless read-only) the cache at `root`,
    /// after the trust checks. A read-only open creates nothing: a missing
    /// root is [`CacheError::NoCache`].
    pub fn open(root: &Path, options: StoreOptions) -> Result<CacheRoot, CacheError> {
        let access = options.access()?;
        let root = if options.read_only { open_root(root, &access)? } else { init_root(root, &access)? };
        if options.read_only {
            check_markers(&root).map_err(|reason| CacheError::NotACache { path: root.clone(), reason })?;
        }
        Ok(CacheRoot { root, options, access, recalled: None })
    }

    /// This machine's host as its `hosts/` entry recalls it
    /// ([`NativeFile::recall`]): what a process of this build detected in
    /// this boot. Read with the checks a record gets (no link followed, the
    /// directory's and the file's owners and modes); `None` when there is
    /// no such entry, or it cannot be read or trusted.
    pub fn recall_host(&mut self) -> Option<host::DetectedHost> {
        let entry = self.read_entry()?;
        let host = entry.recall()?;
        self.recalled = Some(entry);
        Some(host)
    }

    fn read_entry(&self) -> Option<NativeFile> {
        let tag = host::machine_tag()?;
        let trusted = |st: &cfs::FileStat| self.access.check_ids(&self.root, st.uid, st.gid, st.mode).is_ok();
        let dir = cfs::open_dir(cfs::open_dir_path(&self.root).ok()?, HOSTS_DIR).ok()?;
        let file = cfs::open_read(&dir, &format!("{tag}.json")).ok()?;
        let (dir_stat, file_stat) = (cfs::stat_fd(&dir).ok()?, cfs::stat_fd(&file).ok()?);
        if !(trusted(&dir_stat) && file_stat.is_file() && trusted(&file_stat)) {
            return None;
        }
        let mut text = Vec::new();
        file.take(MAX_NATIVE_FILE_LEN).read_to_end(&mut text).ok()?;
        serde_json::from_slice::<NativeFile>(&text).ok()
    }

    /// Opens (creating if needed) the root's directory for `scope`, after
    /// the trust checks. A scope that is this machine's own (`native`) is
    /// recorded under `hosts/` (unless it was recalled from there), for
    /// LLVM-free tools to tell it apart and, with what was detected, for
    /// the later processes of this boot to recall. A read-only store
    /// creates and writes nothing: a missing scope is
    /// [`CacheError::NoCache`].
    pub fn scope(self, scope: HostScope, native: Native) -> Result<Store, CacheError> {
        let CacheRoot { root, options, access, recalled } = self;
        let ro = options.read_only;
        let scope_name = scope.name();
        let scope_dir = root.join(&scope_name);
        if !ro {
            access.make_dir(&scope_dir)?;
        }
        let meta = fs::symlink_metadata(&scope_dir).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => CacheError::NoCache { path: scope_dir.clone() },
            _ => CacheError::io(&scope_dir, "inspect", e),
        })?;
        if meta.file_type().is_symlink() {
            return Err(CacheError::Untrusted { path: scope_dir, reason: "is a symbolic link".into() });
        }
        check_dir(&access, &scope_dir, &meta)?;
        let scope_fd = cfs::open_dir_path(&scope_dir).map_err(|e| CacheError::io(&scope_dir, "open", e))?;

        let host_file = HostFile::of(&scope);
        match fs::read(scope_dir.join(HOST_FILE)) {
            Ok(bytes) => match serde_json::from_slice::<HostFile>(&bytes) {
                Ok(found) if found.host() == scope => {}
                Ok(found) => {
                    return Err(CacheError::ScopeMismatch {
                        path: scope_dir,
                        found: format!("{} {} {}", found.triple, found.cpu, found.features.join(",")),
                        expected: format!("{} {} {}", scope.triple, scope.cpu, scope.features.join(",")),
                    })
                }
                // A damaged description is rewritten: it only describes.
                Err(_) if !ro => write_json(&access, &scope_fd, &scope_dir, HOST_FILE, &host_file)?,
                Err(_) => {}
            },
            Err(e) if vanished(&e) && !ro => write_json(&access, &scope_fd, &scope_dir, HOST_FILE, &host_file)?,
            Err(e) if vanished(&e) => {}
            Err(e) => return Err(CacheError::io(scope_dir.join(HOST_FILE), "read", e)),
        }
        let entry = match native {
            Native::Detected(host)
                if recalled.is_some_and(|e| e.scope == scope_name && e.detected.is_some_and(|d| d.host == *host)) =>
            {
                None
            }
            Native::Detected(host) => Some(NativeFile::of(host)),
            Native::Told => Some(NativeFile::told(&scope_name)),
            Native::No => None,
        };
        if let (Some(entry), Some(tag), false) = (entry, host::machine_tag(), ro) {
            let hosts = root.join(HOSTS_DIR);
            access.make_dir(&hosts)?;
            let fd = cfs::open_dir_path(&hosts).map_err(|e| CacheError::io(&hosts, "open", e))?;
            write_json(&access, &fd, &hosts, &format!("{tag}.json"), &entry)?;
        }
        Ok(Store { root, scope, scope_name, scope_dir, scope_fd, options, access, counters: Counters::default() })
    }
}

/// The most of a machine's `hosts/` entry read (about 2.5 KB, most of it
/// the detected features).
const MAX_NATIVE_FILE_LEN: u64 = 64 << 10;

impl Store {
    /// Opens (creating if needed) the cache at `root` and its directory for
    /// `scope`, after the trust checks, as a simulated host (nothing
    /// recorded under `hosts/`; see [`CacheRoot`]). A read-only store
    /// creates and writes nothing: a missing root or scope is
    /// [`CacheError::NoCache`].
    pub fn open(root: &Path, scope: HostScope, options: StoreOptions) -> Result<Store, CacheError> {
        CacheRoot::open(root, options)?.scope(scope, Native::No)
    }

    /// The canonical cache root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The host scope this store reads and writes.
    pub fn scope(&self) -> &HostScope {
        &self.scope
    }

    /// The scope directory's name.
    pub fn scope_name(&self) -> &str {
        &self.scope_name
    }

    /// Where the record for `key` lives (whether or not it exists).
    pub fn record_path(&self, key: &Key) -> PathBuf {
        super::layout::record_path(&self.scope_dir, key)
    }

    /// Whether a record of `key` is there, in its shard or linked into a
    /// pack (a look by name, not a lookup: it may still prove damaged).
    pub fn holds(&self, key: &Key) -> bool {
        // One `fstatat` a place, relative to the scope (a warm run asks
        // this of every task).
        let there = |p: Place| cfs::stat_at(&self.scope_fd, &format!("{}/{}", p.dir(key), p.name(key))).is_ok();
        there(Place::Shard) || there(Place::Packed)
    }

    /// Where the link of `key` into a pack lives (whether or not it
    /// exists).
    pub fn packed_path(&self, key: &Key) -> PathBuf {
        self.scope_dir.join(PACKED_DIR).join(packed_name(key))
    }

    /// The counters so far.
    pub fn stats(&self) -> CacheStats {
        self.counters.now.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    /// Adds what this store counted since the last flush to its scope's
    /// lasting statistics (one short locked update). Tools call it when
    /// they finish; dropping the store does it too, ignoring errors.
    /// A read-only store keeps its counters to itself.
    pub fn flush_stats(&self) -> Result<(), CacheError> {
        if self.options.read_only {
            return Ok(());
        }
        let mut g = self.counters.now.lock().unwrap_or_else(|p| p.into_inner());
        let delta = g.0.zip(&g.1, u64::saturating_sub);
        if delta == CacheStats::default() {
            return Ok(());
        }
        counters::merge_stats(&self.scope_fd, &delta, &self.access)
            .map_err(|e| CacheError::io(self.scope_dir.join(counters::STATS_FILE), "update", e))?;
        g.1 = g.0;
        Ok(())
    }

    /// Locks the size counter of the shard group of `shard` (creating the
    /// `sizes` file when missing).
    fn lock_group(&self, shard: &str) -> io::Result<(u8, Locked)> {
        let g = counters::group_of_shard(shard);
        if self.counters.root.get().is_none() {
            // Two threads may race here; the loser's handle is dropped.
            let _ = self.counters.root.set(cfs::open_dir_path(&self.root)?);
        }
        let root = self.counters.root.get().ok_or_else(|| io::Error::other("no root handle"))?;
        let locked = counters::lock_group(root, g, &self.access);
        if let Err(e) = &locked {
            let why = crate::diag::io_reason(e);
            let _ = self.counters.problem.set(format!("{}: {why}", self.root.join(counters::SIZES_FILE).display()));
        }
        Ok((g, locked?))
    }

    /// Once a store: why its size counters could not be used, if they
    /// could not (the stores went on uncounted, and nothing was evicted
    /// for the size bound), for the tool's one warning.
    pub fn take_counter_problem(&self) -> Option<String> {
        let why = self.counters.problem.get()?;
        if self.counters.problem_said.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        Some(format!(
            "the cache's size counters cannot be used ({why}); the size bound is not kept until `kiln-cache-inspect verify --fix` mends them"
        ))
    }

    /// Changes group `g`'s counter by `added` less `removed` (under its
    /// lock), recounting a damaged counter, and evicts when the group is
    /// over its share of the bound. Best effort: a counter that cannot be
    /// updated is recounted by the next eviction or `verify --fix`.
    fn account(&self, g: u8, lock: &Locked, added: Option<u64>, removed: Option<u64>) {
        // A new counter (a cache older than the counters, or a first
        // store) or a damaged one is recounted from the group's records,
        // which already include this change.
        let size = match lock.read_written::<GroupSize>() {
            Some(mut size) => {
                let one = |b: Option<u64>| GroupSize { records: b.is_some() as u64, bytes: b.unwrap_or(0) };
                let (plus, minus) = (one(added), one(removed));
                size.records = (size.records + plus.records).saturating_sub(minus.records);
                size.bytes = (size.bytes + plus.bytes).saturating_sub(minus.bytes);
                size
            }
            None => match counters::size_of_group(&self.root, g) {
                Ok(size) => size,
                Err(_) => return,
            },
        };
        let limit = counters::group_limit(self.options.max_size);
        if limit > 0 && size.bytes > limit {
            if let Ok(ev) = counters::evict(&self.root, g, limit, lock) {
                self.count_evictions(&ev.evicted);
            }
        } else {
            let _ = lock.write(&size);
        }
    }

    /// Counts evictions: this scope's in the store's counters, another
    /// scope's straight into that scope's lasting statistics.
    fn count_evictions(&self, evicted: &[(String, u64)]) {
        for (scope, n) in evicted {
            if *scope == self.scope_name {
                self.counters.bump(|s| s.evicted += n);
            } else if let Ok(fd) = cfs::open_dir_path(&self.root).and_then(|r| cfs::open_dir(r, scope)) {
                let _ = counters::merge_stats(&fd, &CacheStats { evicted: *n, ..Default::default() }, &self.access);
            }
        }
    }

    /// Unlinks the record of `key` at `place` in `dir` (only if it is
    /// still `identity`, when given: `fs::remove_if_unchanged`) and takes
    /// what it counted off its group's counter; whether it was there.
    fn remove_counted(&self, dir: &OwnedFd, place: Place, key: &Key, identity: Option<Identity>) -> io::Result<bool> {
        let name = place.name(key);
        let lock = self.lock_group(&key.shard());
        // A link into a pack counts its own record's length, read before
        // the link goes (packs never change once linked).
        let packed = match place {
            Place::Packed => cfs::stat_at(dir, &name).ok().map(|st| pack::counted_len(dir, &name, key, st.size)),
            Place::Shard => None,
        };
        let Some(st) = cfs::remove_if_unchanged(dir, &name, identity)? else { return Ok(false) };
        if let Ok((g, lock)) = &lock {
            self.account(*g, lock, None, st.is_file().then(|| packed.unwrap_or(st.size)));
        }
        Ok(true)
    }

    /// Looks a key up: a verified record, a miss, or a damaged record
    /// (removed and counted). The record's own file in its shard is
    /// looked for first, then its link into a pack. On a hit the record's
    /// mtime becomes now, its recency for LRU pruning (a pack's records
    /// share theirs). Errors are for what is neither: a shard that is a
    /// symlink, or a file the process may not read.
    pub fn get(&self, key: &Key) -> Result<Lookup, CacheError> {
        for place in [Place::Shard, Place::Packed] {
            if let Some(found) = self.find(key, place)? {
                return Ok(found);
            }
        }
        Ok(self.miss())
    }

    /// The lookup of `key` at one place: `None` when nothing is there (no
    /// directory, no file, or one removed while reading).
    fn find(&self, key: &Key, place: Place) -> Result<Option<Lookup>, CacheError> {
        let dir_name = place.dir(key);
        let dir_path = self.scope_dir.join(&dir_name);
        let dir = match cfs::open_dir(&self.scope_fd, &dir_name) {
            Ok(fd) => fd,
            Err(e) if vanished(&e) => return Ok(None),
            Err(e) => return Err(CacheError::io(dir_path, "open", e)),
        };
        self.check_fd(&dir, &dir_path)?;
        let name = place.name(key);
        let path = || dir_path.join(&name);
        let corrupt = |identity, why| Ok(Some(self.corrupt_at(&dir, place, key, identity, why)));
        // O_NONBLOCK: a FIFO planted under a record's name must not hang us.
        let file = match cfs::open_read(&dir, &name) {
            Ok(file) => file,
            Err(e) if vanished(&e) => return Ok(None),
            Err(e) if cfs::is_link_error(&e) => return corrupt(None, Corrupt::NotAFile),
            Err(e) => return Err(CacheError::io(path(), "open", e)),
        };
        let meta = cfs::stat_fd(&file).map_err(|e| CacheError::io(path(), "inspect", e))?;
        let identity = Some(meta.identity());
        if !meta.is_file() {
            return corrupt(identity, Corrupt::NotAFile);
        }
        self.access.check_ids(&path(), meta.uid, meta.gid, meta.mode)?;
        if meta.size > MAX_RECORD_LEN {
            return corrupt(identity, Corrupt::TooLarge { len: meta.size });
        }
        let record = match self.read_record(&file, meta.size, key).map_err(|e| CacheError::io(path(), "read", e))? {
            Ok(r) => r,
            Err(c) => return corrupt(identity, c),
        };
        // Recency is best effort: a record another user wrote into a
        // shared cache cannot be touched, and is still a hit.
        if !self.options.read_only {
            let _ = cfs::touch(&file);
        }
        self.counters.bump(|s| {
            s.hits += 1;
            s.compile_ms_saved += record.producer.compile_ms;
        });
        Ok(Some(Lookup::Hit(record)))
    }

    /// Reads and verifies `key`'s record from the open `file` of `len`
    /// bytes: a record file, or a pack holding it.
    fn read_record(&self, mut file: &fs::File, len: u64, key: &Key) -> io::Result<Result<Record, Corrupt>> {
        // The header first: its magic, version, lengths (against fstat's)
        // and key are checked before the body is read, and the body is
        // read no further than the length both agree on.
        let mut bytes = Vec::new();
        (&mut file).take(record::HEADER_LEN as u64).read_to_end(&mut bytes)?;
        self.counters.bump(|s| s.bytes_read += bytes.len() as u64);
        if pack::is_pack(&bytes) {
            let bytes = match pack::locate(file, len, key).and_then(|slice| pack::read_slice(file, slice, len)) {
                Ok(bytes) => bytes,
                Err(PackError::Io(e)) => return Err(e),
                Err(PackError::Corrupt(c)) => return Ok(Err(c)),
            };
            self.counters.bump(|s| s.bytes_read += bytes.len() as u64);
            return Ok(checked(record::decode(&bytes), key));
        }
        let head = bytes.len();
        match record::decode_header(&bytes, len) {
            Ok(h) if h.key == *key => {}
            Ok(h) => return Ok(Err(Corrupt::KeyMismatch { found: h.key.to_hex() })),
            Err(c) => return Ok(Err(c)),
        };
        if bytes.try_reserve_exact((len as usize).saturating_sub(bytes.len())).is_err() {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        (&mut file).take(len - bytes.len() as u64).read_to_end(&mut bytes)?;
        self.counters.bump(|s| s.bytes_read += (bytes.len() - head) as u64);
        Ok(checked(record::decode(&bytes), key))
    }

    /// The owner and mode check of a shard directory, as of the root and
    /// the scope.
    fn check_fd(&self, fd: &OwnedFd, path: &Path) -> Result<(), CacheError> {
        let st = cfs::stat_fd(fd).map_err(|e| CacheError::io(path, "inspect", e))?;
        self.access.check_ids(path, st.uid, st.gid, st.mode)
    }

    /// In a shared cache, gives a directory this user just made the shared
    /// group and mode, whatever the umask.
    fn share_fd(&self, fd: &OwnedFd, path: &Path) -> Result<(), CacheError> {
        let Some(group) = &self.access.group else { return Ok(()) };
        let st = cfs::stat_fd(fd).map_err(|e| CacheError::io(path, "inspect", e))?;
        if st.uid != cfs::euid() {
            return Ok(());
        }
        if st.gid != group.gid {
            cfs::set_group(fd, group.gid).map_err(|e| CacheError::io(path, "change the group of", e))?;
        }
        if st.mode != self.access.dir_mode() {
            cfs::set_mode(fd, self.access.dir_mode()).map_err(|e| CacheError::io(path, "change the mode of", e))?;
        }
        Ok(())
    }

    /// Whether the store only looks records up.
    pub fn read_only(&self) -> bool {
        self.options.read_only
    }

    fn miss(&self) -> Lookup {
        self.counters.bump(|s| s.misses += 1);
        Lookup::Miss
    }

    /// Removes the damaged record of `key` at `place` in `dir` (unless
    /// another writer replaced it since it was read: `identity` is what
    /// was read) and counts it.
    fn corrupt_at(&self, dir: &OwnedFd, place: Place, key: &Key, identity: Option<Identity>, why: Corrupt) -> Lookup {
        // Already gone or replaced is fine; any other failure leaves the
        // record to be found damaged again, which is still correct. A
        // read-only store removes nothing.
        if !self.options.read_only {
            let _ = self.remove_counted(dir, place, key, identity);
        }
        self.counters.bump(|s| s.corrupt += 1);
        Lookup::Corrupt(why)
    }

    /// Removes a record its consumer rejected (an object that failed to
    /// add or to link) and counts it as corrupt.
    pub fn discard(&self, key: &Key) -> Result<(), CacheError> {
        self.erase(key)?;
        self.counters.bump(|s| s.corrupt += 1);
        Ok(())
    }

    /// Removes the record for `key`, its own file and its link into a
    /// pack; whether there was one.
    /// A read-only store removes nothing: the record stays for its owner
    /// to replace.
    pub fn erase(&self, key: &Key) -> Result<bool, CacheError> {
        if self.options.read_only {
            return Ok(false);
        }
        let mut erased = false;
        for place in [Place::Shard, Place::Packed] {
            let dir_name = place.dir(key);
            let dir = match cfs::open_dir(&self.scope_fd, &dir_name) {
                Ok(fd) => fd,
                Err(e) if vanished(&e) => continue,
                Err(e) => return Err(CacheError::io(self.scope_dir.join(dir_name), "open", e)),
            };
            erased |= self
                .remove_counted(&dir, place, key, None)
                .map_err(|e| CacheError::io(self.scope_dir.join(&dir_name).join(place.name(key)), "remove", e))?;
        }
        Ok(erased)
    }

    /// Stores a record: written whole to a temporary file in the record's
    /// shard, synced, then renamed into place, so readers see the old
    /// record, no record, or the new one, never part of one. Racing
    /// writers of one key each rename a complete record; the last wins.
    pub fn put(&self, key: &Key, meta: &LaunchMeta, object: &[u8]) -> Result<(), CacheError> {
        self.stage(key, meta, object)?.commit()
    }

    /// [`Store::put`] of an object that took `compile` to compile: the time
    /// is kept in the record and credited as saved on each hit.
    pub fn put_compiled(
        &self,
        key: &Key,
        meta: &LaunchMeta,
        object: &[u8],
        compile: Duration,
    ) -> Result<(), CacheError> {
        self.stage_compiled(key, meta, object, compile)?.commit()
    }

    /// The first half of [`Store::put`]: the record written and synced
    /// under its temporary name. Dropping the result without
    /// [`Staged::commit`] removes the temporary file.
    pub fn stage(&self, key: &Key, meta: &LaunchMeta, object: &[u8]) -> Result<Staged<'_>, CacheError> {
        self.stage_compiled(key, meta, object, Duration::ZERO)
    }

    /// Stores records fetched from the remote tier together, at the cost
    /// of one inode per pack rather than one file (and shard directory)
    /// per record: their encodings are written as one pack file under a
    /// temporary name
    /// in the scope's pack directory, linked under each record's name
    /// there (each link counted in its group, under the group's lock),
    /// and the temporary name removed. A reader sees a record's link only
    /// once the whole pack is written; a writer killed before its links
    /// leaves a temporary file only (`prune --temp` removes it). A record
    /// already linked (another process's copy) is kept. On a file system
    /// without hard links each record is stored in a file of its own.
    /// Nothing is synced: a fetched record can be fetched again, so a
    /// power cut costs one fetch, and a torn pack fails its index's or
    /// its records' checksums, and each link is removed and replaced like
    /// any damaged record. Returns how many records were stored.
    pub fn put_fetched_all<'a>(&self, records: impl IntoIterator<Item = Fetched<'a>>) -> Result<usize, CacheError> {
        if self.options.read_only {
            return Err(CacheError::ReadOnly);
        }
        let mut encoded = Vec::new();
        for (key, meta, object, compile) in records {
            encoded.push((*key, self.encode(key, meta, object, compile)?));
        }
        let lens: Vec<u64> = encoded.iter().map(|(_, b)| b.len() as u64).collect();
        let mut stored = 0;
        for run in pack::chunks(&lens) {
            stored += self.write_pack(&encoded[run])?;
        }
        Ok(stored)
    }

    /// Writes one pack of encoded records and links it under each one's
    /// name; how many links were made.
    fn write_pack(&self, records: &[(Key, Vec<u8>)]) -> Result<usize, CacheError> {
        let refs: Vec<(Key, &[u8])> = records.iter().map(|(k, b)| (*k, b.as_slice())).collect();
        let bytes = pack::encode(&refs);
        let (dir, dir_path) = self.make_dir(PACKED_DIR)?;
        let (tmp, mut file) = cfs::create_temp(&dir, PACK_TEMP_BASE, self.access.new_file_mode())
            .map_err(|e| CacheError::io(dir_path.join(temp_name(PACK_TEMP_BASE)), "create", e))?;
        let temp = TempName { dir: &dir, name: tmp };
        file.write_all(&bytes).map_err(|e| CacheError::io(dir_path.join(&temp.name), "write", e))?;
        drop(file);
        let mut stored = 0;
        for (i, (key, record)) in records.iter().enumerate() {
            match self.link_counted(&dir, &temp.name, key, record.len() as u64) {
                Ok(linked) => stored += linked as usize,
                // No hard links here (the first link fails): each record
                // in a file of its own.
                Err(_) if i == 0 => return self.put_each(records),
                Err(e) => return Err(CacheError::io(dir_path.join(packed_name(key)), "link", e)),
            }
        }
        Ok(stored)
    }

    /// Links the pack `tmp` in `dir` under `key`'s name and counts the
    /// record's `len` bytes in its group; `false` when a link of that name
    /// is there already (kept: a whole record of the same key).
    fn link_counted(&self, dir: &OwnedFd, tmp: &str, key: &Key, len: u64) -> io::Result<bool> {
        let lock = self.lock_group(&key.shard());
        match cfs::link_at(dir, tmp, &packed_name(key)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(e),
        }
        self.counters.bump(|s| {
            s.puts += 1;
            s.bytes_written += len;
        });
        if let Ok((g, lock)) = &lock {
            self.account(*g, lock, Some(len), None);
        }
        Ok(true)
    }

    /// Stores encoded records each in its own file, unsynced.
    fn put_each(&self, records: &[(Key, Vec<u8>)]) -> Result<usize, CacheError> {
        for (key, bytes) in records {
            self.stage_bytes(key, bytes, false)?.commit()?;
        }
        Ok(records.len())
    }

    /// [`Store::stage`] of an object that took `compile` to compile.
    pub fn stage_compiled(
        &self,
        key: &Key,
        meta: &LaunchMeta,
        object: &[u8],
        compile: Duration,
    ) -> Result<Staged<'_>, CacheError> {
        self.stage_with(key, meta, object, compile, self.options.fsync)
    }

    fn stage_with(
        &self,
        key: &Key,
        meta: &LaunchMeta,
        object: &[u8],
        compile: Duration,
        fsync: bool,
    ) -> Result<Staged<'_>, CacheError> {
        if self.options.read_only {
            return Err(CacheError::ReadOnly);
        }
        let bytes = self.encode(key, meta, object, compile)?;
        self.stage_bytes(key, &bytes, fsync)
    }

    /// A record's encoding, stamped with this store's producer; an empty
    /// object is refused.
    fn encode(&self, key: &Key, meta: &LaunchMeta, object: &[u8], compile: Duration) -> Result<Vec<u8>, CacheError> {
        if object.is_empty() {
            return Err(CacheError::EmptyObject);
        }
        let compile_ms = compile.as_millis().try_into().unwrap_or(u64::MAX);
        let producer = Producer { compile_ms, ..Producer::now(&self.options.llvm_version) };
        record::encode(key, meta, &producer, object).map_err(CacheError::Encode)
    }

    /// An encoded record written (and synced when `fsync`) under a
    /// temporary name in its shard.
    fn stage_bytes(&self, key: &Key, bytes: &[u8], fsync: bool) -> Result<Staged<'_>, CacheError> {
        let (shard, shard_path) = self.make_dir(&key.shard())?;
        let final_name = key.file_name();
        // In a shared cache the mode is set whatever the umask (which may
        // have taken the group's write bit).
        let (tmp, mut file) = cfs::create_temp(&shard, &final_name, self.access.new_file_mode())
            .map_err(|e| CacheError::io(shard_path.join(temp_name(&final_name)), "create", e))?;
        let staged =
            Staged { store: self, shard, shard_path, tmp, final_name, len: bytes.len() as u64, committed: false };
        file.write_all(bytes).map_err(|e| CacheError::io(staged.shard_path.join(&staged.tmp), "write", e))?;
        if fsync {
            file.sync_all().map_err(|e| CacheError::io(staged.shard_path.join(&staged.tmp), "sync", e))?;
        }
        Ok(staged)
    }

    /// The directory `name` below the scope (a shard, the pack
    /// directory), created (with the cache's group and mode) when
    /// missing, opened and checked.
    fn make_dir(&self, name: &str) -> Result<(OwnedFd, PathBuf), CacheError> {
        let path = self.scope_dir.join(name);
        let created = cfs::mkdir_at(&self.scope_fd, name, self.access.dir_mode())
            .map_err(|e| CacheError::io(&path, "create directory", e))?;
        let dir = cfs::open_dir(&self.scope_fd, name).map_err(|e| CacheError::io(&path, "open", e))?;
        if created {
            self.share_fd(&dir, &path)?;
        }
        self.check_fd(&dir, &path)?;
        Ok((dir, path))
    }

    /// Tries the compile lock of `key` (see `lock`): held by this process,
    /// busy (another is compiling it), or unavailable (a read-only store,
    /// a shard or lock file that cannot be made: compile without a lock).
    pub fn claim(&self, key: &Key) -> Claim {
        if self.options.read_only {
            return Claim::Unavailable;
        }
        match self.make_dir(&key.shard()) {
            Ok((shard, _)) => KeyLock::claim(shard, key, self.access.file_mode()),
            Err(_) => Claim::Unavailable,
        }
    }
}

impl Drop for Store {
    /// What was counted reaches the scope's lasting statistics.
    fn drop(&mut self) {
        let _ = self.flush_stats();
    }
}

/// A record written under its temporary name, waiting to be renamed into
/// place.
pub struct Staged<'a> {
    store: &'a Store,
    shard: OwnedFd,
    shard_path: PathBuf,
    tmp: String,
    final_name: String,
    len: u64,
    committed: bool,
}

impl Staged<'_> {
    /// The temporary file's path.
    pub fn temp_path(&self) -> PathBuf {
        self.shard_path.join(&self.tmp)
    }

    /// Renames the record into place, and counts it in its shard group's
    /// size (under the group's lock, so the size a replaced record had is
    /// the one taken off); evicts when the group is over its share.
    pub fn commit(mut self) -> Result<(), CacheError> {
        let store = self.store;
        let shard_name = self.shard_path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let lock = store.lock_group(&shard_name);
        let replaced = cfs::stat_at(&self.shard, &self.final_name).ok().filter(|st| st.is_file()).map(|st| st.size);
        cfs::rename_at(&self.shard, &self.tmp, &self.final_name)
            .map_err(|e| CacheError::io(self.shard_path.join(&self.final_name), "rename into", e))?;
        self.committed = true;
        store.counters.bump(|s| {
            s.puts += 1;
            s.bytes_written += self.len;
        });
        if let Ok((g, lock)) = &lock {
            store.account(*g, lock, Some(self.len), replaced);
        }
        Ok(())
    }
}

impl Drop for Staged<'_> {
    fn drop(&mut self) {
        if !self.committed {
            let _ = cfs::unlink_at(&self.shard, &self.tmp);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cache::{CACHEDIR_TAG, MARKER};
    use crate::config::{MetaBound, MetaKind};
    use std::fs::File;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    pub(crate) fn meta(task: &str) -> LaunchMeta {
        LaunchMeta {
            task: task.into(),
            entry_symbol: format!("kiln_{task}"),
            kind: MetaKind::RangeFor { lo: MetaBound::Const(0), hi: MetaBound::Const(64), block_dim: 64 },
            params: vec![],
            fields: vec![],
        }
    }

    fn scope() -> HostScope {
        HostScope::new("x86_64-unknown-linux-gnu", "test", ["+a"])
    }

    fn key(n: u32) -> Key {
        Key::from(blake3::hash(&n.to_le_bytes()))
    }

    #[test]
    fn this_host_is_recalled_from_a_trusted_entry_of_its_own_only() {
        if host::boot_id().is_none() || host::machine_tag().is_none() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cache");
        let detected =
            host::DetectedHost { triple: "x86_64-unknown-linux-gnu".into(), cpu: "test".into(), features: "+a".into() };
        let open = |options: StoreOptions| CacheRoot::open(&root, StoreOptions { fsync: false, ..options }).unwrap();
        let recall = |options: StoreOptions| open(options).recall_host();
        // A simulated host's store records nothing to recall.
        open(StoreOptions::default()).scope(scope(), Native::No).unwrap();
        assert_eq!(recall(StoreOptions::default()), None);
        open(StoreOptions::default()).scope(detected.scope(), Native::Detected(&detected)).unwrap();
        assert_eq!(recall(StoreOptions::default()), Some(detected.clone()));
        let ro = StoreOptions { read_only: true, ..Default::default() };
        assert_eq!(recall(ro), Some(detected.clone()));
        // An entry anyone may write is not believed, unless told to.
        let entry = root.join(HOSTS_DIR).join(format!("{}.json", host::machine_tag().unwrap()));
        fs::set_permissions(&entry, fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(recall(StoreOptions::default()), None);
        let insecure = StoreOptions { allow_insecure: true, ..Default::default() };
        assert_eq!(recall(insecure), Some(detected.clone()));
        // Nor is a damaged one, which the next native open makes again.
        fs::write(&entry, b"{\"scope\": ").unwrap();
        fs::set_permissions(&entry, fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(recall(StoreOptions::default()), None);
        open(StoreOptions::default()).scope(detected.scope(), Native::Detected(&detected)).unwrap();
        assert_eq!(recall(StoreOptions::default()), Some(detected.clone()));
        // An entry whose scope is not its host's gives its host, and the
        // open of that host's scope writes it again.
        let mut root = open(StoreOptions::default());
        let good = fs::read_to_string(&entry).unwrap();
        fs::write(&entry, good.replace(&detected.scope().name(), "x86_64-a-b-0123456789ab")).unwrap();
        assert_eq!(root.recall_host().as_ref(), Some(&detected));
        root.scope(detected.scope(), Native::Detected(&detected)).unwrap();
        assert_eq!(fs::read_to_string(&entry).unwrap(), good);
        // A recalled entry is not written again.
        let text = fs::read_to_string(&entry).unwrap();
        let edited =
            text.replace(&format!("\"hostname\": \"{}\"", host::hostname().unwrap()), "\"hostname\": \"edited\"");
        assert_ne!(text, edited);
        fs::write(&entry, &edited).unwrap();
        let mut root = open(StoreOptions::default());
        assert_eq!(root.recall_host().as_ref(), Some(&detected));
        root.scope(detected.scope(), Native::Detected(&detected)).unwrap();
        assert_eq!(fs::read_to_string(&entry).unwrap(), edited);
    }

    #[test]
    fn put_get_erase() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cache");
        let store = Store::open(&root, scope(), StoreOptions::default()).unwrap();
        assert!(root.join(CACHEDIR_TAG).is_file() && root.join(MARKER).is_file());
        assert!(check_markers(&root).is_ok());
        assert!(matches!(store.get(&key(1)).unwrap(), Lookup::Miss));
        store.put(&key(1), &meta("t1"), b"object one").unwrap();
        match store.get(&key(1)).unwrap() {
            Lookup::Hit(r) => assert_eq!((r.object.as_slice(), r.meta.task.as_str()), (&b"object one"[..], "t1")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(store.put(&key(2), &meta("t2"), b""), Err(CacheError::EmptyObject)));
        assert!(!store.record_path(&key(2)).exists());
        assert!(store.erase(&key(1)).unwrap());
        assert!(!store.erase(&key(1)).unwrap());
        assert!(matches!(store.get(&key(1)).unwrap(), Lookup::Miss));
        let s = store.stats();
        assert_eq!((s.hits, s.misses, s.puts, s.corrupt), (1, 2, 1, 0));
        assert!(s.bytes_read > 10 && s.bytes_written == s.bytes_read);
        // The scope directory records its host.
        let host: HostFile =
            serde_json::from_slice(&fs::read(root.join(scope().name()).join(HOST_FILE)).unwrap()).unwrap();
        assert_eq!(host.host(), scope());
    }

    /// A `sizes` that cannot be locked (here a directory) leaves the
    /// stores right and uncounted, and is said once, also when an earlier
    /// finish of the same store had nothing to say.
    #[test]
    fn counters_that_cannot_be_used_are_said_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), scope(), StoreOptions::default()).unwrap();
        store.put(&key(1), &meta("t"), b"obj").unwrap();
        assert_eq!(store.take_counter_problem(), None);
        fs::remove_file(dir.path().join(counters::SIZES_FILE)).unwrap();
        fs::create_dir(dir.path().join(counters::SIZES_FILE)).unwrap();
        store.put(&key(2), &meta("t"), b"obj").unwrap();
        assert!(matches!(store.get(&key(2)).unwrap(), Lookup::Hit(_)));
        let said = store.take_counter_problem().expect("said");
        assert!(said.contains("sizes: is a directory") && said.contains("verify --fix"), "{said}");
        store.put(&key(3), &meta("t"), b"obj").unwrap();
        assert_eq!(store.take_counter_problem(), None, "once");
    }

    #[test]
    fn hit_refreshes_mtime() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), scope(), StoreOptions::default()).unwrap();
        store.put(&key(1), &meta("t"), b"obj").unwrap();
        let path = store.record_path(&key(1));
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400);
        File::options().write(true).open(&path).unwrap().set_modified(old).unwrap();
        assert!(matches!(store.get(&key(1)).unwrap(), Lookup::Hit(_)));
        let mtime = fs::metadata(&path).unwrap().modified().unwrap();
        assert!(mtime.elapsed().unwrap() < std::time::Duration::from_secs(60));
    }

    #[test]
    fn damaged_records_are_removed_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), scope(), StoreOptions::default()).unwrap();
        type Damage = fn(&mut Vec<u8>);
        let damage: [(&str, Damage); 5] = [
            ("zero length", |b| b.clear()),
            ("truncated", |b| b.truncate(b.len() / 2)),
            ("flipped", |b| {
                let n = b.len() - 40;
                b[n] ^= 1
            }),
            ("wrong magic", |b| b[0] = b'X'),
            ("wrong version", |b| b[8] = 99),
        ];
        for (i, (what, damage)) in damage.iter().enumerate() {
            let k = key(10 + i as u32);
            store.put(&k, &meta(what), b"some object bytes").unwrap();
            let path = store.record_path(&k);
            let mut bytes = fs::read(&path).unwrap();
            damage(&mut bytes);
            fs::write(&path, &bytes).unwrap();
            assert!(matches!(store.get(&k).unwrap(), Lookup::Corrupt(_)), "{what}");
            assert!(!path.exists(), "{what}: not removed");
            assert!(matches!(store.get(&k).unwrap(), Lookup::Miss));
        }
        // A record copied under another key's name.
        store.put(&key(1), &meta("a"), b"obj").unwrap();
        fs::create_dir_all(store.record_path(&key(2)).parent().unwrap()).unwrap();
        fs::copy(store.record_path(&key(1)), store.record_path(&key(2))).unwrap();
        assert!(matches!(store.get(&key(2)).unwrap(), Lookup::Corrupt(Corrupt::KeyMismatch { .. })));
        // A symlink and a directory where a record should be.
        let link = store.record_path(&key(3));
        fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
        assert!(matches!(store.get(&key(3)).unwrap(), Lookup::Corrupt(Corrupt::NotAFile)));
        assert!(fs::symlink_metadata(&link).is_err() && Path::new("/etc/passwd").exists());
        store.discard(&key(1)).unwrap();
        assert_eq!(store.stats().corrupt, 5 + 2 + 1);
    }

    #[test]
    fn symlinked_shard_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), scope(), StoreOptions::default()).unwrap();
        let k = key(1);
        std::os::unix::fs::symlink(outside.path(), dir.path().join(scope().name()).join(k.shard())).unwrap();
        assert!(store.get(&k).is_err());
        assert!(store.put(&k, &meta("t"), b"obj").is_err());
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn staged_record_is_invisible_until_committed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), scope(), StoreOptions::default()).unwrap();
        let staged = store.stage(&key(1), &meta("t"), b"obj").unwrap();
        let tmp = staged.temp_path();
        assert!(tmp.is_file() && is_temp_name(tmp.file_name().unwrap().to_str().unwrap()));
        assert!(matches!(store.get(&key(1)).unwrap(), Lookup::Miss));
        staged.commit().unwrap();
        assert!(!tmp.exists());
        assert!(matches!(store.get(&key(1)).unwrap(), Lookup::Hit(_)));
        let dropped = store.stage(&key(2), &meta("t"), b"obj").unwrap();
        let tmp = dropped.temp_path();
        drop(dropped);
        assert!(!tmp.exists());
    }

    #[test]
    fn trust_checks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("c");
        Store::open(&root, scope(), StoreOptions::default()).unwrap();
        for mode in [0o777, 0o770, 0o702] {
            fs::set_permissions(&root, fs::Permissions::from_mode(mode)).unwrap();
            let err = Store::open(&root, scope(), StoreOptions::default()).err().expect("insecure root accepted");
            assert!(matches!(err, CacheError::Untrusted { .. }), "{err}");
            assert!(err.to_string().contains("writable"), "{err}");
            Store::open(&root, scope(), StoreOptions { allow_insecure: true, ..Default::default() }).unwrap();
        }
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755)).unwrap();
        let scope_dir = root.join(scope().name());
        fs::set_permissions(&scope_dir, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(Store::open(&root, scope(), StoreOptions::default()), Err(CacheError::Untrusted { .. })));
        fs::set_permissions(&scope_dir, fs::Permissions::from_mode(0o700)).unwrap();
        Store::open(&root, scope(), StoreOptions::default()).unwrap();

        // Another owner: root can give the directory away; anyone else
        // finds `/` owned by root.
        if cfs::euid() == 0 {
            std::os::unix::fs::chown(&scope_dir, Some(65534), Some(65534)).unwrap();
            let err = Store::open(&root, scope(), StoreOptions::default()).err().expect("foreign owner accepted");
            assert!(err.to_string().contains("owned by uid 65534"), "{err}");
        } else {
            let meta = fs::symlink_metadata("/").unwrap();
            assert!(check_trusted(Path::new("/"), &meta).unwrap_err().to_string().contains("owned by uid 0"));
        }

        // A scope directory that is a symlink.
        let other = tempfile::tempdir().unwrap();
        let s2 = HostScope::new("x86_64-unknown-linux-gnu", "other", ["+a"]);
        std::os::unix::fs::symlink(other.path(), root.join(s2.name())).unwrap();
        let err = Store::open(&root, s2, StoreOptions { allow_insecure: true, ..Default::default() }).err().unwrap();
        assert!(err.to_string().contains("symbolic link"), "{err}");
    }

    #[test]
    fn read_only_store_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("c");
        let ro = StoreOptions { read_only: true, ..Default::default() };
        assert!(matches!(Store::open(&root, scope(), ro.clone()), Err(CacheError::NoCache { .. })));
        assert!(!root.exists(), "a read-only open creates nothing");
        let rw = Store::open(&root, scope(), StoreOptions::default()).unwrap();
        rw.put(&key(1), &meta("t"), b"obj").unwrap();
        rw.put(&key(2), &meta("t"), b"obj").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400);
        File::options().write(true).open(rw.record_path(&key(1))).unwrap().set_modified(old).unwrap();
        fs::write(rw.record_path(&key(2)), b"damaged").unwrap();
        let store = Store::open(&root, scope(), ro.clone()).unwrap();
        assert!(store.read_only());
        assert!(matches!(store.get(&key(1)).unwrap(), Lookup::Hit(_)));
        assert_eq!(fs::metadata(rw.record_path(&key(1))).unwrap().modified().unwrap(), old, "recency untouched");
        assert!(matches!(store.get(&key(2)).unwrap(), Lookup::Corrupt(_)));
        assert!(rw.record_path(&key(2)).exists(), "damage left in place");
        store.discard(&key(1)).unwrap();
        assert!(rw.record_path(&key(1)).exists(), "a rejected record is left in place too");
        assert!(matches!(store.put(&key(3), &meta("t"), b"obj"), Err(CacheError::ReadOnly)));
        assert!(!store.record_path(&key(3)).parent().unwrap().exists());
        // Another scope that does not exist yet: nothing to look up.
        let other = HostScope::new("x86_64-unknown-linux-gnu", "other", ["+a"]);
        assert!(matches!(Store::open(&root, other, ro), Err(CacheError::NoCache { .. })));
    }

    #[test]
    fn shared_group_trust_and_modes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("c");
        // The process's own group serves as the declared group.
        let gid = rustix::process::getegid().as_raw();
        let shared = StoreOptions { shared_group: Some(gid.to_string()), ..Default::default() };
        // The umask is this process's; restored below.
        let old_umask = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
        let store = Store::open(&root, scope(), shared.clone()).unwrap();
        store.put(&key(1), &meta("t"), b"obj").unwrap();
        rustix::process::umask(old_umask);
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        let record = store.record_path(&key(1));
        for d in [root.clone(), root.join(scope().name()), record.parent().unwrap().to_path_buf()] {
            assert_eq!(mode(&d), 0o2770, "{}: the umask does not decide", d.display());
            assert_eq!(fs::metadata(&d).unwrap().gid(), gid);
        }
        assert_eq!(mode(&record), 0o664);
        assert_eq!(mode(&root.join(MARKER)), 0o664);
        // A private store refuses the group-writable tree; the declared
        // group's is accepted; world-writable never.
        assert!(matches!(Store::open(&root, scope(), StoreOptions::default()), Err(CacheError::Untrusted { .. })));
        Store::open(&root, scope(), shared.clone()).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o2777)).unwrap();
        let err = Store::open(&root, scope(), shared.clone()).err().expect("world-writable accepted");
        assert!(err.to_string().contains("world-writable"), "{err}");
        fs::set_permissions(&root, fs::Permissions::from_mode(0o2770)).unwrap();
        // A shard or a record others may write is refused (finding 8).
        let store = Store::open(&root, scope(), shared.clone()).unwrap();
        fs::set_permissions(&record, fs::Permissions::from_mode(0o666)).unwrap();
        assert!(matches!(store.get(&key(1)), Err(CacheError::Untrusted { .. })));
        fs::set_permissions(&record, fs::Permissions::from_mode(0o664)).unwrap();
        fs::set_permissions(record.parent().unwrap(), fs::Permissions::from_mode(0o2777)).unwrap();
        assert!(matches!(store.get(&key(1)), Err(CacheError::Untrusted { .. })));
        fs::set_permissions(record.parent().unwrap(), fs::Permissions::from_mode(0o2770)).unwrap();
        assert!(matches!(store.get(&key(1)).unwrap(), Lookup::Hit(_)));
        let unknown = StoreOptions { shared_group: Some("no-such-group-kiln".into()), ..Default::default() };
        assert!(matches!(Store::open(&root, scope(), unknown), Err(CacheError::BadSetting(_))));
    }

    #[test]
    fn private_shard_and_record_checks() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), scope(), StoreOptions::default()).unwrap();
        store.put(&key(1), &meta("t"), b"obj").unwrap();
        let record = store.record_path(&key(1));
        fs::set_permissions(&record, fs::Permissions::from_mode(0o664)).unwrap();
        let err = store.get(&key(1)).expect_err("group-writable record accepted");
        assert!(err.to_string().contains("group-writable"), "{err}");
        fs::set_permissions(&record, fs::Permissions::from_mode(0o644)).unwrap();
        fs::set_permissions(record.parent().unwrap(), fs::Permissions::from_mode(0o770)).unwrap();
        assert!(matches!(store.get(&key(1)), Err(CacheError::Untrusted { .. })));
        assert!(matches!(store.put(&key(1), &meta("t"), b"obj"), Err(CacheError::Untrusted { .. })));
    }

    #[test]
    fn refuses_a_directory_that_is_not_a_cache() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("thesis.tex"), "precious").unwrap();
        let err = Store::open(dir.path(), scope(), StoreOptions::default()).err().unwrap();
        assert!(matches!(err, CacheError::NotACache { .. }), "{err}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn scope_collision_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        // Both CPU names sanitise to the same directory name.
        let a = HostScope::new("x86_64-unknown-linux-gnu", "x86-64", ["+a"]);
        let b = HostScope::new("x86_64-unknown-linux-gnu", "x86_64", ["+a"]);
        assert_eq!(a.name(), b.name());
        Store::open(dir.path(), a, StoreOptions::default()).unwrap();
        assert!(matches!(Store::open(dir.path(), b, StoreOptions::default()), Err(CacheError::ScopeMismatch { .. })));
    }

    #[test]
    fn name_patterns() {
        let k = key(7);
        let name = k.file_name();
        assert!(is_record_name(&name));
        assert_eq!(key_of(&k.shard(), &name), Some(k));
        assert!(is_temp_name(&format!("{name}.tmp-123-0123456789abcdef")));
        assert!(is_temp_name("CACHEDIR.TAG.tmp-1-0123456789abcdef"));
        for bad in [
            "notes.txt".to_string(),
            format!("{name}.tmp-12-xyz"),
            format!("{name}.tmp--0123456789abcdef"),
            "passwd.tmp-1-0123456789abcdef".into(),
            name.to_uppercase(),
        ] {
            assert!(!is_temp_name(&bad) && !is_record_name(&bad), "{bad}");
        }
    }
}
