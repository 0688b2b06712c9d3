//! Looking inside a cache and cleaning it: the logic of
//! `kiln-cache-inspect`'s `list`, `stats`, `zero-stats`, `show`,
//! `extract`, `verify` and `prune`, returning plain data that the tool
//! formats as text or JSON.
//!
//! Owns: the scan of a cache root (scopes, records, temporary files, by
//! Kiln's name patterns only, and the links and files found where Kiln
//! keeps a directory), which scope is this host's, what `verify` checks
//! (records in full, misplaced entries, the size counters against a
//! recount), and the prune policy (foreign scopes, stale temporaries, age,
//! then least recently used down to a size).
//!
//! Must never: touch a directory that is not a Kiln cache (`CACHEDIR.TAG`
//! and Kiln's marker), follow a symbolic link (every walk lists
//! directories without following links, and only names that match Kiln's
//! patterns are considered), remove anything outside the root or anything
//! that does not match a Kiln pattern (a directory under a record's name
//! only when empty), or remove anything on a dry run.

use super::access::Access;
use super::counters::{self, GroupSize, Locked, GROUPS};
use super::host::{self, HostFile};
use super::layout::{is_scope_name, HOST_FILE};
use super::layout::{is_shard_name, is_temp_name, key_of};
use super::layout::{COUNTERS_DIR, STATS_FILE};
use super::prune::{dir_removal, dry_run, plan_prune, Planned};
pub use super::prune::{PrunePlan, PruneReason, Removal};
use super::record::{self, Corrupt, Header, Key, Producer, Record, MAX_RECORD_LEN};
use super::store::{check_markers, is_unfinished_root};
use super::{CacheError, CacheStats};
use crate::config::{LaunchMeta, MetaKind};
use rayon::prelude::*;
use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use serde::Serialize;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How to open a cache for inspection.
#[derive(Clone, Debug, Default)]
pub struct InspectOptions {
    /// Accept a root another user owns or others may write to.
    pub allow_insecure: bool,
    /// This host's scope, when the caller knows better than the record
    /// under `hosts/` (`--host-scope`).
    pub host_scope: Option<String>,
    /// The group sharing the cache (`shared_group`), whose group-writable
    /// directories are trusted.
    pub shared_group: Option<String>,
}

/// A cache root open for inspection.
pub struct Cache {
    root: PathBuf,
    native: Option<String>,
    /// Who may use the cache: the modes of the counter files it writes.
    access: Access,
}

/// Where an entry of the cache is: the directory the walk opened
/// (relative to its parent, never through a link) and the entry's name in
/// it. Every read and removal goes through it, so a directory replaced by
/// a link after the walk listed it is never followed.
#[derive(Clone, Debug)]
pub(super) struct At {
    pub(super) dir: Arc<OwnedFd>,
    pub(super) name: String,
}

/// A regular file found in the cache.
#[derive(Clone, Debug)]
pub(super) struct FileEntry {
    /// For messages and reports only; `at` is what is opened.
    pub(super) path: PathBuf,
    pub(super) at: At,
    pub(super) size: u64,
    pub(super) mtime: SystemTime,
    pub(super) ino: u64,
}

impl FileEntry {
    /// What the file must still be for a removal to go ahead.
    pub(super) fn identity(&self) -> Identity {
        Identity { ino: self.ino, mtime: self.mtime }
    }
}

/// A file as the scan saw it: a removal skips a file that was replaced
/// (another inode) or used (a newer mtime) since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Identity {
    pub(super) ino: u64,
    pub(super) mtime: SystemTime,
}

/// A record found in a shard (by name; its bytes are not read yet).
#[derive(Clone, Debug)]
pub(super) struct RecordEntry {
    pub(super) key: Key,
    pub(super) file: FileEntry,
    /// Something other than a regular file sits under the record's name.
    pub(super) not_a_file: bool,
}

/// One scope directory as found on disk.
#[derive(Debug)]
pub(super) struct ScopeScan {
    pub(super) name: String,
    pub(super) dir: PathBuf,
    pub(super) host: Option<HostFile>,
    pub(super) records: Vec<RecordEntry>,
    /// Temporary files in shards and next to `host.json`.
    pub(super) temps: Vec<FileEntry>,
    /// Files of the layout other than records (`host.json`).
    pub(super) layout_files: Vec<FileEntry>,
    pub(super) shards: Vec<DirEntry>,
    /// The scope directory itself, in the root.
    pub(super) at: At,
}

/// A directory of the cache: its path (for reports), where it is, and the
/// handle the walk opened.
#[derive(Clone, Debug)]
pub(super) struct DirEntry {
    pub(super) path: PathBuf,
    pub(super) at: At,
}

/// The records and temporary files of one shard.
type ShardScan = (Vec<RecordEntry>, Vec<FileEntry>);

#[derive(Debug)]
pub(super) struct Scan {
    pub(super) scopes: Vec<ScopeScan>,
    pub(super) root_temps: Vec<FileEntry>,
    /// Entries with the name of a scope, a shard or the counter directory
    /// that are not real directories (a link, a file): the store cannot
    /// use them, and they are Kiln's to remove.
    pub(super) misplaced: Vec<Misplaced>,
}

/// A link or a file where Kiln keeps a directory.
#[derive(Clone, Debug)]
pub(super) struct Misplaced {
    path: PathBuf,
    at: At,
    /// `scope`, `shard` or `counter directory`.
    role: &'static str,
    link: bool,
}

/// What a [`Misplaced`] entry is, in words.
fn misplaced_text(m: &Misplaced) -> String {
    format!("{} that is {}", m.role, if m.link { "a symbolic link" } else { "not a directory" })
}

pub(super) fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// What `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)` says of an entry.
#[derive(Clone, Debug)]
struct Entry {
    name: String,
    kind: FileType,
    size: u64,
    mtime: SystemTime,
    ino: u64,
}

impl Entry {
    fn is_dir(&self) -> bool {
        self.kind == FileType::Directory
    }
    fn is_file(&self) -> bool {
        self.kind == FileType::RegularFile
    }
    fn is_symlink(&self) -> bool {
        self.kind == FileType::Symlink
    }
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`.
fn stat_at(dir: &OwnedFd, name: &str) -> io::Result<Entry> {
    let st = rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    let secs = u64::try_from(st.st_mtime).unwrap_or(0);
    let nanos = u32::try_from(st.st_mtime_nsec).unwrap_or(0);
    Ok(Entry {
        name: name.to_string(),
        kind: FileType::from_raw_mode(st.st_mode),
        size: u64::try_from(st.st_size).unwrap_or(0),
        mtime: UNIX_EPOCH + Duration::new(secs, nanos),
        ino: st.st_ino,
    })
}

/// Opens the directory `name` below `dir`, refusing a link (`O_NOFOLLOW`)
/// and anything but a directory.
fn open_dir_at(dir: &OwnedFd, name: &str) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rfs::openat(dir, name, flags, Mode::empty())?)
}

fn file_entry(dir: &Arc<OwnedFd>, dir_path: &Path, e: &Entry) -> FileEntry {
    FileEntry {
        path: dir_path.join(&e.name),
        at: At { dir: dir.clone(), name: e.name.clone() },
        size: e.size,
        mtime: e.mtime,
        ino: e.ino,
    }
}

/// Lists an open directory without following links: the `fstatat` of
/// each entry whose name is UTF-8, by name. An entry that vanished
/// meanwhile is left out.
fn list_dir(dir: &OwnedFd, path: &Path) -> Result<Vec<Entry>, CacheError> {
    let mut listing = rfs::Dir::read_from(dir).map_err(|e| CacheError::io(path, "read", e.into()))?;
    let mut out = Vec::new();
    while let Some(entry) = listing.read() {
        let entry = entry.map_err(|e| CacheError::io(path, "read", e.into()))?;
        let Ok(name) = entry.file_name().to_str() else { continue };
        if name == "." || name == ".." {
            continue;
        }
        match stat_at(dir, name) {
            Ok(e) => out.push(e),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(CacheError::io(path.join(name), "inspect", e)),
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Reads at most `limit` bytes from the start of a record file, never
/// following a link or blocking on a FIFO.
fn read_prefix(at: &At, limit: u64) -> io::Result<Vec<u8>> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = File::from(rfs::openat(&*at.dir, at.name.as_str(), flags, Mode::empty())?);
    let mut buf = Vec::with_capacity(limit.min(1 << 20) as usize);
    file.take(limit).read_to_end(&mut buf)?;
    Ok(buf)
}

/// The header, metadata and producer of a record file, unverified.
fn peek_file(f: &FileEntry) -> Result<(Header, LaunchMeta, Producer), Corrupt> {
    let first = read_prefix(&f.at, 4096.min(f.size)).map_err(|_| Corrupt::TooShort { len: 0 })?;
    let header = record::decode_header(&first, f.size)?;
    let need = record::peek_len(Some(&header)) as u64;
    let bytes = if need as usize <= first.len() {
        first
    } else {
        read_prefix(&f.at, need).map_err(|_| Corrupt::TooShort { len: 0 })?
    };
    record::peek(&bytes, f.size)
}

/// Reads and fully verifies the record file of `key`.
fn verify_file(at: &At, key: &Key) -> Result<record::Record, Corrupt> {
    let bytes = match read_prefix(at, MAX_RECORD_LEN + 1) {
        Ok(b) => b,
        // A link (ELOOP), or unreadable: either way not a record here.
        Err(_) => return Err(Corrupt::NotAFile),
    };
    if bytes.len() as u64 > MAX_RECORD_LEN {
        return Err(Corrupt::TooLarge { len: bytes.len() as u64 });
    }
    let r = record::decode(&bytes)?;
    if r.key != *key {
        return Err(Corrupt::KeyMismatch { found: r.key.to_hex() });
    }
    Ok(r)
}

/// The short name of a task kind.
pub fn kind_name(kind: &MetaKind) -> &'static str {
    match kind {
        MetaKind::Serial => "serial",
        MetaKind::RangeFor { .. } => "range_for",
        MetaKind::StructFor { .. } => "struct_for",
    }
}

/// One record in a listing.
#[derive(Clone, Debug, Serialize)]
pub struct RecordSummary {
    pub key: Key,
    /// The task name, unless the record's header is damaged.
    pub task: Option<String>,
    pub kind: Option<&'static str>,
    pub size: u64,
    pub created_unix: Option<u64>,
    /// Last use: the record's mtime, refreshed on every hit.
    pub last_use_unix: u64,
    /// Why the header could not be read, if it could not (the checksum is
    /// not checked by a listing; `verify` does that).
    pub problem: Option<String>,
}

/// One scope in a listing.
#[derive(Clone, Debug, Serialize)]
pub struct ScopeListing {
    pub name: String,
    pub this_host: bool,
    pub host: Option<HostFile>,
    pub records: Vec<RecordSummary>,
    pub temp_files: u64,
}

/// `list`: every scope and its records, by key.
#[derive(Clone, Debug, Serialize)]
pub struct Listing {
    pub root: PathBuf,
    /// This host's scope, when known.
    pub this_host: Option<String>,
    pub scopes: Vec<ScopeListing>,
}

/// Counts over some records and temporary files.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Totals {
    pub records: u64,
    pub bytes: u64,
    /// The least recently used record's last use.
    pub oldest_unix: Option<u64>,
    /// The most recently used record's last use.
    pub newest_unix: Option<u64>,
    pub temp_files: u64,
    pub temp_bytes: u64,
}

impl Totals {
    fn add_record(&mut self, size: u64, mtime: SystemTime) {
        let t = unix_secs(mtime);
        self.records += 1;
        self.bytes += size;
        self.oldest_unix = Some(self.oldest_unix.map_or(t, |o| o.min(t)));
        self.newest_unix = Some(self.newest_unix.map_or(t, |n| n.max(t)));
    }

    fn add_temp(&mut self, size: u64) {
        self.temp_files += 1;
        self.temp_bytes += size;
    }

    fn merge(&mut self, o: &Totals) {
        self.records += o.records;
        self.bytes += o.bytes;
        self.oldest_unix = match (self.oldest_unix, o.oldest_unix) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.newest_unix = match (self.newest_unix, o.newest_unix) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.temp_files += o.temp_files;
        self.temp_bytes += o.temp_bytes;
    }
}

/// Totals of one scope.
#[derive(Clone, Debug, Serialize)]
pub struct ScopeStats {
    pub name: String,
    pub this_host: bool,
    #[serde(flatten)]
    pub totals: Totals,
    /// What every process using the scope counted since the last
    /// `zero-stats`.
    pub lasting: CacheStats,
    /// Hits over lookups, from `lasting` (none before the first lookup).
    pub hit_rate: Option<f64>,
}

/// `stats`: totals per scope and overall.
#[derive(Clone, Debug, Serialize)]
pub struct Stats {
    pub root: PathBuf,
    /// Whether the cache exists yet (a missing cache shows zeros).
    pub exists: bool,
    pub this_host: Option<String>,
    pub scopes: Vec<ScopeStats>,
    /// Everything, including temporary files at the root.
    pub total: Totals,
    /// The lasting statistics of every scope, added up.
    pub lasting: CacheStats,
    pub hit_rate: Option<f64>,
    /// What the size counters of the bound hold (records and bytes of
    /// records, every scope); `verify` checks them against `total`.
    pub counted: GroupSize,
}

impl Stats {
    /// The statistics of a cache that does not exist yet: zeros.
    pub fn missing(root: &Path) -> Stats {
        Stats {
            root: root.to_path_buf(),
            exists: false,
            this_host: None,
            scopes: vec![],
            total: Totals::default(),
            lasting: CacheStats::default(),
            hit_rate: None,
            counted: GroupSize::default(),
        }
    }
}

/// `show`: one record in full.
#[derive(Clone, Debug, Serialize)]
pub struct Shown {
    pub key: Key,
    pub scope: String,
    pub path: PathBuf,
    pub size: u64,
    pub last_use_unix: u64,
    pub producer: Producer,
    pub meta: LaunchMeta,
    pub object_size: u64,
    /// blake3 of the object bytes alone.
    pub object_blake3: String,
}

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

/// `verify`: every record checked in full, the tree's directories, and
/// the size counters.
#[derive(Clone, Debug, Serialize)]
pub struct VerifyReport {
    pub checked: u64,
    pub healthy: u64,
    pub bad: Vec<BadRecord>,
    pub bad_entries: Vec<BadEntry>,
    pub counter_drift: Vec<CounterDrift>,
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

/// Opens a directory the listing showed, relative to its parent: `None`
/// (and the entry reported as misplaced) when something else took its
/// place since, or when it vanished.
fn open_child(
    at: &At,
    path: &Path,
    role: &'static str,
    misplaced: &mut Vec<Misplaced>,
) -> Result<Option<Arc<OwnedFd>>, CacheError> {
    match open_dir_at(&at.dir, &at.name) {
        Ok(fd) => Ok(Some(Arc::new(fd))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) => {
            let link = e.raw_os_error() == Some(libc::ELOOP);
            misplaced.push(Misplaced { path: path.to_path_buf(), at: at.clone(), role, link });
            Ok(None)
        }
        Err(e) => Err(CacheError::io(path, "open", e)),
    }
}

/// The records and temporary files of one open shard.
fn scan_shard(shard: &DirEntry, fd: &Arc<OwnedFd>) -> Result<ShardScan, CacheError> {
    let mut records = Vec::new();
    let mut temps = Vec::new();
    for e in list_dir(fd, &shard.path)? {
        if let Some(key) = key_of(&shard.at.name, &e.name) {
            records.push(RecordEntry { key, not_a_file: !e.is_file(), file: file_entry(fd, &shard.path, &e) });
        } else if e.is_file() && is_temp_name(&e.name) {
            temps.push(file_entry(fd, &shard.path, &e));
        }
    }
    Ok((records, temps))
}

impl Cache {
    /// Opens an existing cache root: it must exist, carry `CACHEDIR.TAG`
    /// and Kiln's marker, and pass the trust checks.
    pub fn open(root: &Path, options: &InspectOptions) -> Result<Cache, CacheError> {
        match fs::symlink_metadata(root) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(CacheError::NoCache { path: root.into() }),
            Err(e) => return Err(CacheError::io(root, "inspect", e)),
        }
        let canonical = fs::canonicalize(root).map_err(|e| CacheError::io(root, "resolve", e))?;
        let meta = fs::symlink_metadata(&canonical).map_err(|e| CacheError::io(&canonical, "inspect", e))?;
        if !meta.is_dir() {
            return Err(CacheError::NotADirectory { path: root.into() });
        }
        // A root whose set-up was cut short (a full disk) is an empty
        // cache here; the next process that writes finishes it.
        if let Err(reason) = check_markers(&canonical) {
            let tagged = fs::read(canonical.join(super::CACHEDIR_TAG))
                .is_ok_and(|t| t.starts_with(super::CACHEDIR_TAG_SIGNATURE.as_bytes()));
            if !(tagged && is_unfinished_root(&canonical)?) {
                return Err(CacheError::NotACache { path: root.into(), reason });
            }
        }
        let access = Access::new(options.allow_insecure, options.shared_group.as_deref())?;
        access.check(&canonical, &meta)?;
        let native = options.host_scope.clone().or_else(|| host::native_scope(&canonical));
        Ok(Cache { root: canonical, native, access })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// This host's scope, when known (see [`host::native_scope`]).
    pub fn this_host(&self) -> Option<&str> {
        self.native.as_deref()
    }

    fn is_this_host(&self, scope: &str) -> bool {
        self.native.as_deref() == Some(scope)
    }

    /// Scans scopes, shards (only those named in `only_shard` if given),
    /// records and temporaries; shards in parallel. Every directory is
    /// opened relative to its parent's handle with `O_NOFOLLOW`, so a
    /// link put in place of one after it was listed is not followed (it
    /// fails to open, and is reported as misplaced).
    fn scan(&self, only_shard: Option<&str>) -> Result<Scan, CacheError> {
        let root = Arc::new(counters::open_root(&self.root).map_err(|e| CacheError::io(&self.root, "open", e))?);
        let mut scan = Scan { scopes: Vec::new(), root_temps: Vec::new(), misplaced: Vec::new() };
        for e in list_dir(&root, &self.root)? {
            let role = if is_scope_name(&e.name) {
                Some("scope")
            } else {
                (e.name == COUNTERS_DIR).then_some("counter directory")
            };
            let at = At { dir: root.clone(), name: e.name.clone() };
            let path = self.root.join(&e.name);
            if e.is_dir() && role == Some("scope") {
                match open_child(&at, &path, "scope", &mut scan.misplaced)? {
                    Some(dir) => scan.scopes.push(self.scan_scope(
                        DirEntry { path, at },
                        dir,
                        only_shard,
                        &mut scan.misplaced,
                    )?),
                    None => continue,
                }
            } else if e.is_file() && is_temp_name(&e.name) {
                scan.root_temps.push(file_entry(&root, &self.root, &e));
            } else if let Some(role) = role.filter(|_| !e.is_dir()) {
                scan.misplaced.push(Misplaced { path, at, role, link: e.is_symlink() });
            }
        }
        Ok(scan)
    }

    fn scan_scope(
        &self,
        entry: DirEntry,
        dir: Arc<OwnedFd>,
        only_shard: Option<&str>,
        misplaced: &mut Vec<Misplaced>,
    ) -> Result<ScopeScan, CacheError> {
        let mut scope = ScopeScan {
            name: entry.at.name.clone(),
            dir: entry.path,
            host: None,
            records: vec![],
            temps: vec![],
            layout_files: vec![],
            shards: vec![],
            at: entry.at,
        };
        let mut shard_dirs = Vec::new();
        for e in list_dir(&dir, &scope.dir)? {
            let path = scope.dir.join(&e.name);
            let at = At { dir: dir.clone(), name: e.name.clone() };
            if is_shard_name(&e.name) && !e.is_dir() {
                misplaced.push(Misplaced { path, at, role: "shard", link: e.is_symlink() });
            } else if e.is_dir() && is_shard_name(&e.name) {
                if only_shard.is_none_or(|s| s == e.name) {
                    if let Some(fd) = open_child(&at, &path, "shard", misplaced)? {
                        shard_dirs.push((DirEntry { path, at }, fd));
                    }
                }
            } else if e.is_file() && e.name == HOST_FILE {
                scope.host = read_prefix(&at, 1 << 20).ok().and_then(|b| serde_json::from_slice(&b).ok());
                scope.layout_files.push(file_entry(&dir, &scope.dir, &e));
            } else if e.is_file() && e.name == STATS_FILE {
                scope.layout_files.push(file_entry(&dir, &scope.dir, &e));
            } else if e.is_file() && is_temp_name(&e.name) {
                scope.temps.push(file_entry(&dir, &scope.dir, &e));
            }
        }
        let per_shard: Vec<Result<ShardScan, CacheError>> =
            shard_dirs.par_iter().map(|(shard, fd)| scan_shard(shard, fd)).collect();
        for r in per_shard {
            let (records, temps) = r?;
            scope.records.extend(records);
            scope.temps.extend(temps);
        }
        scope.shards = shard_dirs.into_iter().map(|(d, _)| d).collect();
        Ok(scope)
    }

    /// `list`: scopes (marking this host's) and their records.
    pub fn list(&self) -> Result<Listing, CacheError> {
        let scan = self.scan(None)?;
        let scopes = scan
            .scopes
            .into_iter()
            .map(|s| {
                let records = s
                    .records
                    .par_iter()
                    .map(|r| {
                        let mut summary = RecordSummary {
                            key: r.key,
                            task: None,
                            kind: None,
                            size: r.file.size,
                            created_unix: None,
                            last_use_unix: unix_secs(r.file.mtime),
                            problem: None,
                        };
                        let peeked = if r.not_a_file { Err(Corrupt::NotAFile) } else { peek_file(&r.file) };
                        match peeked {
                            Ok((_, meta, producer)) => {
                                summary.kind = Some(kind_name(&meta.kind));
                                summary.task = Some(meta.task);
                                summary.created_unix = Some(producer.created_unix);
                            }
                            Err(c) => summary.problem = Some(c.to_string()),
                        }
                        summary
                    })
                    .collect();
                ScopeListing {
                    this_host: self.is_this_host(&s.name),
                    name: s.name,
                    host: s.host,
                    records,
                    temp_files: s.temps.len() as u64,
                }
            })
            .collect();
        Ok(Listing { root: self.root.clone(), this_host: self.native.clone(), scopes })
    }

    /// `stats`: totals per scope and overall, from file sizes and times
    /// alone (no record is read), with each scope's lasting statistics
    /// and what the size counters hold.
    pub fn stats(&self) -> Result<Stats, CacheError> {
        let scan = self.scan(None)?;
        let mut stats = Stats::missing(&self.root);
        (stats.exists, stats.this_host) = (true, self.native.clone());
        for s in &scan.scopes {
            let mut t = Totals::default();
            for r in &s.records {
                t.add_record(r.file.size, r.file.mtime);
            }
            for f in &s.temps {
                t.add_temp(f.size);
            }
            stats.total.merge(&t);
            let lasting =
                counters::read_stats(&s.dir).map_err(|e| CacheError::io(s.dir.join(STATS_FILE), "read", e))?;
            stats.lasting.add(&lasting);
            stats.scopes.push(ScopeStats {
                name: s.name.clone(),
                this_host: self.is_this_host(&s.name),
                totals: t,
                lasting,
                hit_rate: lasting.hit_rate(),
            });
        }
        for f in &scan.root_temps {
            stats.total.add_temp(f.size);
        }
        stats.hit_rate = stats.lasting.hit_rate();
        let sizes =
            counters::read_sizes(&self.root).map_err(|e| CacheError::io(self.root.join(COUNTERS_DIR), "read", e))?;
        stats.counted = counters::total(&sizes);
        Ok(stats)
    }

    /// `zero-stats`: sets every scope's lasting statistics to zero (the
    /// size counters stay: they describe what is stored); the scopes
    /// zeroed.
    pub fn zero_stats(&self) -> Result<Vec<String>, CacheError> {
        let root_fd = counters::open_root(&self.root).map_err(|e| CacheError::io(&self.root, "open", e))?;
        let mut zeroed = Vec::new();
        for s in self.scan(Some(""))?.scopes {
            let path = s.dir.join(STATS_FILE);
            let zero = || -> io::Result<()> {
                let scope = super::store::sys::open_dir(&root_fd, &s.name)?;
                Locked::exclusive(&scope, STATS_FILE, &self.access)?.write(&CacheStats::default())
            };
            zero().map_err(|e| CacheError::io(&path, "reset", e))?;
            zeroed.push(s.name);
        }
        Ok(zeroed)
    }

    /// The one record whose key starts with `prefix` (hex, any case),
    /// verified: its scope, what the scan saw, and the record.
    fn find_verified(&self, prefix: &str) -> Result<(String, RecordEntry, Record), CacheError> {
        let prefix = prefix.to_ascii_lowercase();
        if prefix.is_empty() || prefix.len() > 64 || !prefix.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(CacheError::Lookup(format!("'{prefix}' is not a key or a prefix of one (hex digits)")));
        }
        let scan = self.scan(prefix.get(..2))?;
        let mut matches: Vec<(&ScopeScan, &RecordEntry)> = Vec::new();
        for s in &scan.scopes {
            for r in &s.records {
                if r.key.to_hex().starts_with(&prefix) {
                    matches.push((s, r));
                }
            }
        }
        match matches.as_slice() {
            [] => Err(CacheError::Lookup(format!("no record has a key starting with {prefix}"))),
            [(scope, r)] => {
                let record = verify_file(&r.file.at, &r.key)
                    .map_err(|c| CacheError::Lookup(format!("record {} is damaged: {c}", r.key)))?;
                Ok((scope.name.clone(), (*r).clone(), record))
            }
            many => {
                let names: Vec<String> = many.iter().take(8).map(|(s, r)| format!("{} in {}", r.key, s.name)).collect();
                Err(CacheError::Lookup(format!(
                    "{} records match {prefix}: {}{}",
                    many.len(),
                    names.join(", "),
                    if many.len() > 8 { ", ..." } else { "" }
                )))
            }
        }
    }

    /// `show`: the one record whose key starts with `prefix` (hex, any
    /// case), verified, with its full metadata.
    pub fn show(&self, prefix: &str) -> Result<Shown, CacheError> {
        let (scope, r, record) = self.find_verified(prefix)?;
        Ok(Shown {
            key: r.key,
            scope,
            path: r.file.path,
            size: r.file.size,
            last_use_unix: unix_secs(r.file.mtime),
            object_size: record.object.len() as u64,
            object_blake3: blake3::hash(&record.object).to_hex().to_string(),
            producer: record.producer,
            meta: record.meta,
        })
    }

    /// `extract`: the verified record whose key starts with `prefix` (as
    /// [`Cache::show`] finds it), object and launch metadata.
    pub fn extract(&self, prefix: &str) -> Result<Record, CacheError> {
        self.find_verified(prefix).map(|(_, _, record)| record)
    }

    /// `verify`: reads and checks every record in full, reports links and
    /// files where Kiln keeps directories, and checks the size counters;
    /// with `fix`, removes the damaged records and the misplaced entries,
    /// and recounts the counters that are off.
    pub fn verify(&self, fix: bool) -> Result<VerifyReport, CacheError> {
        let scan = self.scan(None)?;
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
                    Err(_) if stat_at(&r.file.at.dir, &r.file.at.name).is_err() => Ok(None),
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
            let removed = fix && remove_entry(&m.at, &m.path, None)?;
            bad_entries.push(BadEntry { path: m.path.clone(), problem: misplaced_text(m), removed });
        }
        let counter_drift = self.check_counters(fix)?;
        let checked = all.len() as u64;
        Ok(VerifyReport { checked, healthy: checked - bad.len() as u64, bad, bad_entries, counter_drift, fixed: fix })
    }

    /// Compares each group's size counter with the records on disk, under
    /// the group's lock (so no store changes the group meanwhile); with
    /// `fix`, rewrites those that are off.
    fn check_counters(&self, fix: bool) -> Result<Vec<CounterDrift>, CacheError> {
        let dir = self.root.join(COUNTERS_DIR);
        let io_err = |e| CacheError::io(&dir, "check counters in", e);
        // A link or a file in its place is reported (and removed by
        // `--fix`) as misplaced; nothing is read through it.
        if !fix && fs::symlink_metadata(&dir).is_ok_and(|m| !m.is_dir()) {
            return Ok(Vec::new());
        }
        let fd = if fix { Some(counters::open_counters_dir(&self.root, &self.access).map_err(io_err)?) } else { None };
        let mut drift = Vec::new();
        for g in 0..GROUPS {
            let name = counters::group_file(g);
            let lock = match &fd {
                Some(fd) => Some(Locked::exclusive(fd, &name, &self.access)),
                None => Locked::shared(&dir.join(&name)).transpose(),
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
                drift.push(CounterDrift { group: name, counted, actual, fixed });
            }
        }
        Ok(drift)
    }

    /// Recounts every group's size counter (after a prune removed records
    /// behind the stores' backs), each under its lock.
    fn recount_all(&self) -> Result<(), CacheError> {
        let dir = self.root.join(COUNTERS_DIR);
        let fd = counters::open_counters_dir(&self.root, &self.access).map_err(|e| CacheError::io(&dir, "open", e))?;
        for g in 0..GROUPS {
            let name = counters::group_file(g);
            let lock =
                Locked::exclusive(&fd, &name, &self.access).map_err(|e| CacheError::io(dir.join(&name), "lock", e))?;
            counters::recount(&self.root, g, &lock).map_err(|e| CacheError::io(dir.join(&name), "recount", e))?;
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
        let scan = self.scan(None)?;
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
        let mut removed = remove_all(planned.files)?;
        if !removed.is_empty() {
            self.recount_all()?;
        }
        let mut kept_dirs = Vec::new();
        for dir in planned.dirs {
            match rfs::unlinkat(&*dir.at.dir, dir.at.name.as_str(), AtFlags::REMOVEDIR) {
                Ok(()) => removed.push(dir_removal(dir)),
                Err(e) if e == rustix::io::Errno::NOENT => {}
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

pub(super) fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Removes what sits under a record's name (`verify --fix`): a file as
/// [`remove_entry`] does, or a directory if it is empty (one holding
/// anything is not Kiln's to empty, and stays, reported).
fn remove_in_place_of_record(f: &FileEntry) -> Result<bool, CacheError> {
    match stat_at(&f.at.dir, &f.at.name) {
        Ok(e) if e.is_dir() => match rfs::unlinkat(&*f.at.dir, f.at.name.as_str(), AtFlags::REMOVEDIR) {
            Ok(()) => Ok(true),
            Err(e) if e == rustix::io::Errno::NOENT || e == rustix::io::Errno::NOTEMPTY => Ok(false),
            Err(e) => Err(CacheError::io(&f.path, "remove", e.into())),
        },
        _ => remove_entry(&f.at, &f.path, Some(f.identity())),
    }
}

/// Removes an entry the scan found, relative to the directory the scan
/// opened, if it is still what the scan saw (not a directory and, given
/// `expect`, the same inode with the same mtime: a record rewritten by a
/// writer or used by a reader since the scan stays); whether it was
/// removed. An entry already gone is not an error. `path` is for
/// messages.
fn remove_entry(at: &At, path: &Path, expect: Option<Identity>) -> Result<bool, CacheError> {
    match stat_at(&at.dir, &at.name) {
        Ok(e) if e.is_dir() => return Ok(false),
        Ok(e) if expect.is_some_and(|x| x != Identity { ino: e.ino, mtime: e.mtime }) => return Ok(false),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(CacheError::io(path, "inspect", e)),
    }
    // `unlinkat` removes a symlink itself, never its target.
    match rfs::unlinkat(&*at.dir, at.name.as_str(), AtFlags::empty()) {
        Ok(()) => Ok(true),
        Err(e) if e == rustix::io::Errno::NOENT => Ok(false),
        Err(e) => Err(CacheError::io(path, "remove", e.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::store::tests::meta;
    use crate::cache::{HostScope, Store, StoreOptions};
    use std::os::unix::fs::MetadataExt;

    fn key(n: u32) -> Key {
        Key::from(blake3::hash(&n.to_le_bytes()))
    }

    fn scope(cpu: &str) -> HostScope {
        HostScope::new("x86_64-unknown-linux-gnu", cpu, ["+a"])
    }

    /// A cache with `n` records of `size` object bytes in scope `cpu`,
    /// record `i` last used `n - i` hours ago.
    fn filled(dir: &Path, cpu: &str, n: u32, size: usize) -> Store {
        let store = Store::open(dir, scope(cpu), StoreOptions { fsync: false, ..Default::default() }).unwrap();
        let now = SystemTime::now();
        for i in 0..n {
            let k = key(i + cpu.len() as u32 * 1000);
            store.put(&k, &meta(&format!("t{i}")), &vec![i as u8; size]).unwrap();
            let t = now - Duration::from_secs(3600 * (n - i) as u64);
            File::options().write(true).open(store.record_path(&k)).unwrap().set_modified(t).unwrap();
        }
        store
    }

    fn ino(path: &Path) -> u64 {
        fs::symlink_metadata(path).unwrap().ino()
    }

    fn opts(host: &str) -> InspectOptions {
        InspectOptions { allow_insecure: false, host_scope: Some(scope(host).name()), shared_group: None }
    }

    #[test]
    fn list_and_stats() {
        let dir = tempfile::tempdir().unwrap();
        filled(dir.path(), "a", 3, 100);
        filled(dir.path(), "bb", 2, 50);
        let cache = Cache::open(dir.path(), &opts("a")).unwrap();
        let l = cache.list().unwrap();
        assert_eq!(l.scopes.len(), 2);
        let a = l.scopes.iter().find(|s| s.this_host).unwrap();
        assert_eq!(a.name, scope("a").name());
        assert_eq!(a.records.len(), 3);
        assert!(a.records.iter().all(|r| r.task.as_deref().is_some_and(|t| t.starts_with('t')) && r.problem.is_none()));
        let s = cache.stats().unwrap();
        assert_eq!(s.total.records, 5);
        let a_bytes: u64 = a.records.iter().map(|r| r.size).sum();
        assert_eq!(s.scopes.iter().find(|s| s.this_host).unwrap().totals.bytes, a_bytes);
        assert!(s.total.oldest_unix < s.total.newest_unix);
    }

    #[test]
    fn show_by_prefix() {
        let dir = tempfile::tempdir().unwrap();
        filled(dir.path(), "a", 3, 100);
        let cache = Cache::open(dir.path(), &InspectOptions::default()).unwrap();
        let k = key(1001);
        let shown = cache.show(&k.to_hex()[..10]).unwrap();
        assert_eq!((shown.key, shown.meta.task.as_str(), shown.object_size), (k, "t1", 100));
        assert!(matches!(cache.show("zz"), Err(CacheError::Lookup(_))));
        assert!(matches!(cache.show(&"0".repeat(64)), Err(CacheError::Lookup(_))));
    }

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
        cache.prune(&PrunePlan { max_size: Some(0), older_than: Some(Duration::ZERO), ..Default::default() }).unwrap();
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
        let seen = |at: &At| {
            let e = stat_at(&at.dir, &at.name).unwrap();
            Identity { ino: e.ino, mtime: e.mtime }
        };
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

    /// Where `p` is, as the walk holds it: its directory open, its name.
    fn at_of(p: &Path) -> At {
        let dir = rfs::open(p.parent().unwrap(), OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        At { dir: Arc::new(dir), name: p.file_name().unwrap().to_str().unwrap().into() }
    }

    /// After the walk, the shard of `key(1000)` is moved away and a link
    /// to a directory outside the root takes its place, holding a file of
    /// the record's name. Returns the moved record and that file.
    fn swap_shard_for_link(store: &Store, root: &Path, outside: &Path, bytes: &[u8]) -> (PathBuf, PathBuf) {
        let rec = store.record_path(&key(1000));
        let name = rec.file_name().unwrap();
        let moved = root.join("moved-away");
        fs::rename(rec.parent().unwrap(), &moved).unwrap();
        std::os::unix::fs::symlink(outside, rec.parent().unwrap()).unwrap();
        fs::write(outside.join(name), bytes).unwrap();
        (moved.join(name), outside.join(name))
    }

    #[test]
    fn reads_go_to_the_directory_the_walk_opened_not_to_a_link_swapped_in() {
        let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let store = filled(dir.path(), "a", 2, 10);
        let cache = Cache::open(dir.path(), &InspectOptions::default()).unwrap();
        let scan = cache.scan(None).unwrap();
        swap_shard_for_link(&store, dir.path(), outside.path(), b"not a record");
        let r = scan.scopes[0].records.iter().find(|r| r.key == key(1000)).expect("scanned");
        // The record the walk found, in its own directory: sound.
        assert_eq!(verify_file(&r.file.at, &r.key).unwrap().meta.task, "t0");
        assert!(peek_file(&r.file).is_ok());
        // A walk from now on sees the link, and reports it.
        let report = cache.verify(false).unwrap();
        assert_eq!(report.bad_entries.len(), 1, "{:?}", report.bad_entries);
        assert_eq!(report.bad_entries[0].problem, "shard that is a symbolic link");
    }

    #[test]
    fn removals_go_to_the_directory_the_walk_opened_not_to_a_link_swapped_in() {
        let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let store = filled(dir.path(), "a", 2, 10);
        let cache = Cache::open(dir.path(), &InspectOptions::default()).unwrap();
        let scan = cache.scan(None).unwrap();
        let (moved, victim) = swap_shard_for_link(&store, dir.path(), outside.path(), b"precious");
        let planned = plan_prune(
            &scan,
            &PrunePlan { max_size: Some(0), ..Default::default() },
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

    #[test]
    fn refuses_what_is_not_a_cache() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            Cache::open(&dir.path().join("none"), &InspectOptions::default()),
            Err(CacheError::NoCache { .. })
        ));
        assert!(matches!(Cache::open(dir.path(), &InspectOptions::default()), Err(CacheError::NotACache { .. })));
        // A tag and a file that is not Kiln's: not a cache.
        fs::write(dir.path().join(crate::cache::CACHEDIR_TAG), crate::cache::CACHEDIR_TAG_SIGNATURE).unwrap();
        fs::write(dir.path().join("notes.txt"), "mine").unwrap();
        let err = Cache::open(dir.path(), &InspectOptions::default()).err().unwrap();
        assert!(err.to_string().contains("no .kiln-cache marker"), "{err}");
    }

    #[test]
    fn a_half_made_root_is_an_empty_cache_and_the_next_writer_finishes_it() {
        // What a full disk leaves: the tag, a temporary of the marker.
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(crate::cache::CACHEDIR_TAG), crate::cache::CACHEDIR_TAG_SIGNATURE).unwrap();
        fs::write(dir.path().join(".kiln-cache.tmp-12-0123456789abcdef"), "kiln-ca").unwrap();
        let cache = Cache::open(dir.path(), &InspectOptions::default()).unwrap();
        assert_eq!(cache.stats().unwrap().total.records, 0);
        let store = Store::open(dir.path(), scope("a"), StoreOptions::default()).unwrap();
        store.put(&key(1), &meta("t"), b"obj").unwrap();
        assert!(check_markers(dir.path()).is_ok());
        assert_eq!(Cache::open(dir.path(), &opts("a")).unwrap().stats().unwrap().total.records, 1);
    }
}
