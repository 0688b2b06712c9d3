//! Looking inside a cache: the logic of `kiln-cache-inspect`'s `list`,
//! `stats`, `zero-stats`, `show` and `extract`, returning plain data that
//! the tool formats as text or JSON (`verify` and `prune`, which may
//! remove, are methods of the same [`Cache`] in `repair`).
//!
//! Owns: opening a cache root for inspection (the markers, a half-made
//! root as an empty cache, the trust check), which scope is this host's,
//! reading records found by the walk (`scan`) without trusting them: a
//! header peek for `list`, a full verification for `show`, `extract` and
//! `verify`.
//!
//! Must never: touch a directory that is not a Kiln cache (`CACHEDIR.TAG`
//! and Kiln's marker), follow a symbolic link (the walk is `scan`'s, and
//! every read goes through the handle it opened), or remove anything.

use super::access::Access;
use super::counters::{self, GroupSize, Locked};
use super::fs as cfs;
use super::host::{self, HostFile};
use super::layout::{HOST_FILE, SIZES_FILE, STATS_FILE};
use super::pack::{self, PackError};
pub use super::prune::{PrunePlan, PruneReason, Removal};
use super::record::{self, Corrupt, Header, Key, Producer, Record, MAX_RECORD_LEN};
use super::root::{check_markers, is_unfinished_root};
use super::scan::{self, unix_secs, At, FileEntry, RecordEntry, Scan, ScopeScan, Shards};
use super::{CacheError, CacheStats};
use crate::config::{LaunchMeta, MetaKind};
use rayon::prelude::*;
use serde::Serialize;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

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
    pub(super) root: PathBuf,
    pub(super) native: Option<String>,
    /// Who may use the cache: the modes of the counter files it writes.
    pub(super) access: Access,
}

/// Reads at most `limit` bytes from the start of a file the walk found,
/// never following a link or blocking on a FIFO.
fn read_prefix(at: &At, limit: u64) -> io::Result<Vec<u8>> {
    cfs::read_prefix(&*at.dir, &at.name, limit)
}

/// The bytes of `key`'s record in the file the walk found (its slice,
/// when the file is a pack), at most `limit` bytes of a plain record.
fn read_record(at: &At, key: &Key, limit: u64) -> Result<Vec<u8>, Corrupt> {
    // A link (ELOOP), or unreadable: either way not a record here.
    let file = cfs::open_read(&*at.dir, &at.name).map_err(|_| Corrupt::NotAFile)?;
    let len = cfs::stat_fd(&file).map_err(|_| Corrupt::NotAFile)?.size;
    match pack::read_record(&file, len, key, limit) {
        Ok(bytes) => Ok(bytes),
        Err(PackError::Corrupt(c)) => Err(c),
        Err(PackError::Io(_)) => Err(Corrupt::NotAFile),
    }
}

/// The header, metadata and producer of a record file, unverified; a
/// damaged one's reason is the one `verify` gives (a pack's broken index
/// was "truncated: 0 bytes").
fn peek_file(f: &FileEntry, key: &Key) -> Result<(Header, LaunchMeta, Producer), Corrupt> {
    let first = read_record(&f.at, key, 4096.min(f.size))?;
    let header = record::decode_header(&first, f.size)?;
    let need = record::peek_len(Some(&header)) as u64;
    let bytes = if need as usize <= first.len() { first } else { read_record(&f.at, key, need)? };
    record::peek(&bytes, f.size)
}

/// Reads and fully verifies the record file of `key` (or its record in
/// the pack it links to).
pub(super) fn verify_file(at: &At, key: &Key) -> Result<record::Record, Corrupt> {
    let bytes = read_record(at, key, MAX_RECORD_LEN + 1)?;
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
        MetaKind::Function => "function",
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
    pub(super) fn add_record(&mut self, size: u64, mtime: SystemTime) {
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

    /// The walk of this cache (see [`scan::scan`]).
    pub(super) fn scan(&self, shards: Shards) -> Result<Scan, CacheError> {
        scan::scan(&self.root, shards)
    }
    /// `list`: scopes (marking this host's) and their records.
    pub fn list(&self) -> Result<Listing, CacheError> {
        let scan = self.scan(Shards::All)?;
        let scopes = scan
            .scopes
            .into_iter()
            .map(|s| {
                let host = host_of(&s);
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
                        let peeked = if r.not_a_file { Err(Corrupt::NotAFile) } else { peek_file(&r.file, &r.key) };
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
                    host,
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
        let scan = self.scan(Shards::All)?;
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
            counters::read_sizes(&self.root).map_err(|e| CacheError::io(self.root.join(SIZES_FILE), "read", e))?;
        stats.counted = counters::total(&sizes);
        Ok(stats)
    }

    /// `zero-stats`: sets every scope's lasting statistics to zero (the
    /// size counters stay: they describe what is stored); the scopes
    /// zeroed.
    pub fn zero_stats(&self) -> Result<Vec<String>, CacheError> {
        let mut zeroed = Vec::new();
        for s in self.scan(Shards::None)?.scopes {
            let path = s.dir.join(STATS_FILE);
            let zero = || -> io::Result<()> {
                let scope = cfs::open_dir(&*s.at.dir, &s.at.name)?;
                Locked::exclusive(&scope, STATS_FILE, 0, &self.access)?.write(&CacheStats::default())
            };
            zero().map_err(|e| CacheError::io(&path, "reset", e))?;
            zeroed.push(s.name);
        }
        Ok(zeroed)
    }

    /// What follows "no record has a key starting with PREFIX": the key
    /// one typo away (the same edit distance as every "did you mean"), the
    /// keys when there are a few, else where to find them.
    fn near_keys(&self, prefix: &str) -> Result<String, CacheError> {
        let scan = self.scan(Shards::All)?;
        let keys: Vec<String> = scan.scopes.iter().flat_map(|s| &s.records).map(|r| r.key.to_hex()).collect();
        let heads: Vec<&str> = keys.iter().map(|k| &k[..prefix.len().min(k.len())]).collect();
        let mut text = String::new();
        if let Some(near) = crate::cli::nearest(prefix, heads.iter().copied()) {
            text.push_str(&format!("; did you mean {near}?"));
        }
        match keys.len() {
            0 => text.push_str(" (the cache has no records)"),
            1..=8 => {
                let short: Vec<&str> = keys.iter().map(|k| &k[..16]).collect();
                text.push_str(&format!(" (records: {})", short.join(", ")));
            }
            n => text.push_str(&format!(" ({n} records: kiln-cache-inspect list shows their keys)")),
        }
        Ok(text)
    }

    /// The one record whose key starts with `prefix` (hex, any case),
    /// verified: its scope, what the scan saw, and the record.
    fn find_verified(&self, prefix: &str) -> Result<(String, RecordEntry, Record), CacheError> {
        let prefix = prefix.to_ascii_lowercase();
        if prefix.is_empty() || prefix.len() > 64 || !prefix.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(CacheError::Lookup(format!("'{prefix}' is not a key or a prefix of one (hex digits)")));
        }
        let scan = self.scan(prefix.get(..2).map_or(Shards::All, Shards::Named))?;
        let mut matches: Vec<(&ScopeScan, &RecordEntry)> = Vec::new();
        for s in &scan.scopes {
            for r in &s.records {
                if r.key.to_hex().starts_with(&prefix) {
                    matches.push((s, r));
                }
            }
        }
        match matches.as_slice() {
            [] => Err(CacheError::Lookup(format!(
                "no record has a key starting with {prefix}{}",
                self.near_keys(&prefix)?
            ))),
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
}

/// The host a scope's `host.json` describes, if it is readable.
fn host_of(s: &ScopeScan) -> Option<HostFile> {
    let f = s.layout_files.iter().find(|f| f.at.name == HOST_FILE)?;
    read_prefix(&f.at, 1 << 20).ok().and_then(|b| serde_json::from_slice(&b).ok())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cache::store::tests::meta;
    use crate::cache::{HostScope, Store, StoreOptions};
    use std::fs::File;
    use std::os::unix::fs::MetadataExt;
    use std::time::Duration;

    pub(crate) fn key(n: u32) -> Key {
        Key::from(blake3::hash(&n.to_le_bytes()))
    }

    pub(crate) fn scope(cpu: &str) -> HostScope {
        HostScope::new("x86_64-unknown-linux-gnu", cpu, ["+a"])
    }

    /// A cache with `n` records of `size` object bytes in scope `cpu`,
    /// record `i` last used `n - i` hours ago.
    pub(crate) fn filled(dir: &Path, cpu: &str, n: u32, size: usize) -> Store {
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

    pub(crate) fn ino(path: &Path) -> u64 {
        fs::symlink_metadata(path).unwrap().ino()
    }

    pub(crate) fn opts(host: &str) -> InspectOptions {
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

    /// Where `p` is, as the walk holds it: its directory open, its name.
    pub(crate) fn at_of(p: &Path) -> At {
        let dir = cfs::open_dir_path(p.parent().unwrap()).unwrap();
        At { dir: std::sync::Arc::new(dir), name: p.file_name().unwrap().to_str().unwrap().into() }
    }

    /// After the walk, the shard of `key(1000)` is moved away and a link
    /// to a directory outside the root takes its place, holding a file of
    /// the record's name. Returns the moved record and that file.
    pub(crate) fn swap_shard_for_link(store: &Store, root: &Path, outside: &Path, bytes: &[u8]) -> (PathBuf, PathBuf) {
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
        let scan = cache.scan(Shards::All).unwrap();
        swap_shard_for_link(&store, dir.path(), outside.path(), b"not a record");
        let r = scan.scopes[0].records.iter().find(|r| r.key == key(1000)).expect("scanned");
        // The record the walk found, in its own directory: sound.
        assert_eq!(verify_file(&r.file.at, &r.key).unwrap().meta.task, "t0");
        assert!(peek_file(&r.file, &r.key).is_ok());
        // A walk from now on sees the link, and reports it.
        let report = cache.verify(false).unwrap();
        assert_eq!(report.bad_entries.len(), 1, "{:?}", report.bad_entries);
        assert_eq!(report.bad_entries[0].problem, "shard that is a symbolic link");
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
