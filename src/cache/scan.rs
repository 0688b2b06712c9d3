//! The one walk of a cache tree: its scopes, shards, records and
//! temporary files, by Kiln's names only, every directory opened relative
//! to its parent's handle.
//!
//! Owns: [`Scan`] and its entries (records in shards and links into
//! packs in the pack directory alike; at the root, a `sizes` that is not
//! a regular file and an older build's `counters`), each with where the
//! walk found it
//! ([`At`]: the directory handle it opened and the entry's name, through
//! which every later read and removal goes), [`Shards`] (which shards a
//! walk visits), and [`scan`], the walk that eviction (one shard group,
//! `counters`), inspection (`list`, `stats`, `show`, `verify`) and
//! pruning (the plan is made from a scan, `prune`) all use.
//!
//! Must never: follow a symbolic link (each directory is opened with
//! `O_NOFOLLOW` relative to its parent's handle; a link or a file where
//! Kiln keeps a directory is reported as misplaced, never entered), read
//! a file's contents (but a pack's index, for the size of a link into
//! it), consider a name that is not Kiln's, or run a shard
//! group's walk on the rayon pool (it runs under the group's lock, and a
//! job the pool's work stealing ran meanwhile could wait on that lock).

use super::fs::{self, Entry, FileStat, Identity};
use super::layout::{group_of_shard, is_scope_name, is_shard_name, is_temp_name, key_of};
use super::layout::{packed_key_of, HOST_FILE, OLD_COUNTERS_DIR, PACKED_DIR, SIZES_FILE, STATS_FILE};
use super::pack;
use super::record::Key;
use super::CacheError;
use rayon::prelude::*;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where an entry of the cache is: the directory the walk opened
/// (relative to its parent, never through a link) and the entry's name in
/// it. Every read and removal goes through it, so a directory replaced by
/// a link after the walk listed it is never followed.
#[derive(Clone, Debug)]
pub struct At {
    pub dir: Arc<OwnedFd>,
    pub name: String,
}

/// A regular file found in the cache.
#[derive(Clone, Debug)]
pub struct FileEntry {
    /// For messages and reports only; `at` is what is opened.
    pub path: PathBuf,
    pub at: At,
    pub size: u64,
    pub mtime: SystemTime,
    pub dev: u64,
    pub ino: u64,
}

impl FileEntry {
    fn new(dir: &Arc<OwnedFd>, dir_path: &Path, e: &Entry) -> FileEntry {
        let st: &FileStat = &e.stat;
        FileEntry {
            path: dir_path.join(&e.name),
            at: At { dir: dir.clone(), name: e.name.clone() },
            size: st.size,
            mtime: st.mtime,
            dev: st.dev,
            ino: st.ino,
        }
    }

    /// What the file must still be for a removal to go ahead.
    pub fn identity(&self) -> Identity {
        Identity { dev: self.dev, ino: self.ino, mtime: self.mtime }
    }
}

/// A record found in a shard (by name; its bytes are not read).
#[derive(Clone, Debug)]
pub struct RecordEntry {
    pub key: Key,
    pub file: FileEntry,
    /// Something other than a regular file sits under the record's name.
    pub not_a_file: bool,
}

/// One scope directory as found on disk.
#[derive(Debug)]
pub struct ScopeScan {
    pub name: String,
    pub dir: PathBuf,
    pub records: Vec<RecordEntry>,
    /// Temporary files in shards and next to `host.json`.
    pub temps: Vec<FileEntry>,
    /// Files of the layout other than records (`host.json`, `stats`).
    pub layout_files: Vec<FileEntry>,
    /// The shard directories, and the pack directory last.
    pub shards: Vec<DirEntry>,
    /// The scope directory itself, in the root.
    pub at: At,
}

/// A directory of the cache: its path (for reports) and where it is.
#[derive(Clone, Debug)]
pub struct DirEntry {
    pub path: PathBuf,
    pub at: At,
}

/// What a walk found.
#[derive(Debug)]
pub struct Scan {
    pub scopes: Vec<ScopeScan>,
    pub root_temps: Vec<FileEntry>,
    /// Entries with the name of a scope, a shard or the pack directory
    /// that are not real directories (a link, a file), or with the name of
    /// the `sizes` file that are not a regular file: the store cannot use
    /// them, and they are Kiln's to remove.
    pub misplaced: Vec<Misplaced>,
    /// The counter directory of an older Kiln build (`counters`, or
    /// whatever took its name), which this build does not use.
    pub old_counters: Option<DirEntry>,
}

impl Scan {
    /// Every record with its scope's name.
    pub fn records(&self) -> impl Iterator<Item = (&str, &RecordEntry)> {
        self.scopes.iter().flat_map(|s| s.records.iter().map(move |r| (s.name.as_str(), r)))
    }
}

/// A link or a file where Kiln keeps a directory, or anything but a
/// regular file where it keeps the `sizes` file.
#[derive(Clone, Debug)]
pub struct Misplaced {
    pub path: PathBuf,
    pub at: At,
    /// `scope`, `shard`, `pack directory` or `size counter file`.
    pub role: &'static str,
    pub link: bool,
}

/// The role of the `sizes` file, the one misplaced entry that should be a
/// regular file.
const SIZES_ROLE: &str = "size counter file";

impl Misplaced {
    /// What the entry is, in words.
    pub fn text(&self) -> String {
        let not = if self.role == SIZES_ROLE { "not a regular file" } else { "not a directory" };
        format!("{} that is {}", self.role, if self.link { "a symbolic link" } else { not })
    }
}

/// Which shards a walk visits (in every scope).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shards<'a> {
    /// Every shard, listed in parallel (inspection).
    All,
    /// The shard of this name only (`show` of a key prefix).
    Named(&'a str),
    /// None: scopes and their own files only (`zero-stats`).
    None,
    /// The sixteen shards of one group, in the calling thread (eviction
    /// and the counter checks, under the group's lock).
    Group(u8),
}

impl Shards<'_> {
    fn wants(self, shard: &str) -> bool {
        match self {
            Shards::All => true,
            Shards::Named(name) => name == shard,
            Shards::None => false,
            Shards::Group(g) => group_of_shard(shard) == g,
        }
    }
}

/// Seconds since the epoch (0 before it).
pub fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The last component of a path, for reports.
pub fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// [`fs::list`] with its error located, of the entries whose names pass
/// `keep`.
fn list(dir: &OwnedFd, path: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<Entry>, CacheError> {
    fs::list(dir, keep).map_err(|(name, e)| match name {
        Some(name) => CacheError::io(path.join(name), "inspect", e),
        None => CacheError::io(path, "read", e),
    })
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
    match fs::open_dir(&*at.dir, &at.name) {
        Ok(fd) => Ok(Some(Arc::new(fd))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if fs::is_link_error(&e) || fs::is_not_dir_error(&e) => {
            let link = fs::is_link_error(&e);
            misplaced.push(Misplaced { path: path.to_path_buf(), at: at.clone(), role, link });
            Ok(None)
        }
        Err(e) => Err(CacheError::io(path, "open", e)),
    }
}

/// Walks the cache at `root` (its canonical path): scopes, the `shards`
/// asked for, their records and temporaries. Every directory is opened
/// relative to its parent's handle with `O_NOFOLLOW`, so a link put in
/// place of one after it was listed is not followed (it fails to open,
/// and is reported as misplaced).
pub fn scan(root: &Path, shards: Shards) -> Result<Scan, CacheError> {
    let root_fd = Arc::new(fs::open_dir_path(root).map_err(|e| CacheError::io(root, "open", e))?);
    let mut scan = Scan { scopes: Vec::new(), root_temps: Vec::new(), misplaced: Vec::new(), old_counters: None };
    for e in list(&root_fd, root, |_| true)? {
        let at = At { dir: root_fd.clone(), name: e.name.clone() };
        let path = root.join(&e.name);
        let link = e.stat.is_symlink();
        if is_scope_name(&e.name) && e.stat.is_dir() {
            if let Some(dir) = open_child(&at, &path, "scope", &mut scan.misplaced)? {
                let scope = scan_scope(DirEntry { path, at }, dir, shards, &mut scan.misplaced)?;
                scan.scopes.push(scope);
            }
        } else if is_scope_name(&e.name) {
            scan.misplaced.push(Misplaced { path, at, role: "scope", link });
        } else if e.name == SIZES_FILE && !e.stat.is_file() {
            scan.misplaced.push(Misplaced { path, at, role: SIZES_ROLE, link });
        } else if e.name == OLD_COUNTERS_DIR {
            scan.old_counters = Some(DirEntry { path, at });
        } else if e.stat.is_file() && is_temp_name(&e.name) {
            scan.root_temps.push(FileEntry::new(&root_fd, root, &e));
        }
    }
    Ok(scan)
}

/// One scope: its own files, then its shards (in parallel unless a group
/// is asked for).
fn scan_scope(
    entry: DirEntry,
    dir: Arc<OwnedFd>,
    shards: Shards,
    misplaced: &mut Vec<Misplaced>,
) -> Result<ScopeScan, CacheError> {
    let mut scope = ScopeScan {
        name: entry.at.name.clone(),
        dir: entry.path,
        records: vec![],
        temps: vec![],
        layout_files: vec![],
        shards: vec![],
        at: entry.at,
    };
    let mut shard_dirs = Vec::new();
    let mut packed = None;
    for e in list(&dir, &scope.dir, |name| !is_shard_name(name) || shards.wants(name))? {
        let path = scope.dir.join(&e.name);
        let at = At { dir: dir.clone(), name: e.name.clone() };
        if e.name == PACKED_DIR && !e.stat.is_dir() {
            misplaced.push(Misplaced { path, at, role: "pack directory", link: e.stat.is_symlink() });
        } else if e.name == PACKED_DIR {
            if let Some(fd) = open_child(&at, &path, "pack directory", misplaced)? {
                packed = Some((DirEntry { path, at }, fd));
            }
        } else if is_shard_name(&e.name) && !e.stat.is_dir() {
            misplaced.push(Misplaced { path, at, role: "shard", link: e.stat.is_symlink() });
        } else if is_shard_name(&e.name) {
            if let Some(fd) = open_child(&at, &path, "shard", misplaced)? {
                shard_dirs.push((DirEntry { path, at }, fd));
            }
        } else if e.stat.is_file() && (e.name == HOST_FILE || e.name == STATS_FILE) {
            scope.layout_files.push(FileEntry::new(&dir, &scope.dir, &e));
        } else if e.stat.is_file() && is_temp_name(&e.name) {
            scope.temps.push(FileEntry::new(&dir, &scope.dir, &e));
        }
    }
    let one = |(shard, fd): &(DirEntry, Arc<OwnedFd>)| scan_shard(shard, fd);
    let per_shard: Vec<Result<ShardScan, CacheError>> = match shards {
        Shards::Group(_) => shard_dirs.iter().map(one).collect(),
        _ => shard_dirs.par_iter().map(one).collect(),
    };
    for r in per_shard {
        let (records, temps) = r?;
        scope.records.extend(records);
        scope.temps.extend(temps);
    }
    if let Some((entry, fd)) = &packed {
        let (records, temps) = scan_packed(entry, fd, shards)?;
        scope.records.extend(records);
        scope.temps.extend(temps);
    }
    scope.shards = shard_dirs.into_iter().chain(packed).map(|(d, _)| d).collect();
    Ok(scope)
}

/// The links into packs (of the shards asked for) and the temporary
/// files of the open pack directory. A link's size is its own record's
/// length in its pack's index (`pack::counted_len`).
fn scan_packed(dir: &DirEntry, fd: &Arc<OwnedFd>, shards: Shards) -> Result<ShardScan, CacheError> {
    let mut records = Vec::new();
    let mut temps = Vec::new();
    for e in list(fd, &dir.path, |_| true)? {
        if let Some(key) = packed_key_of(&e.name).filter(|k| shards.wants(&k.shard())) {
            let mut file = FileEntry::new(fd, &dir.path, &e);
            if e.stat.is_file() {
                file.size = pack::counted_len(&**fd, &e.name, &key, e.stat.size);
            }
            records.push(RecordEntry { key, not_a_file: !e.stat.is_file(), file });
        } else if e.stat.is_file() && is_temp_name(&e.name) {
            temps.push(FileEntry::new(fd, &dir.path, &e));
        }
    }
    Ok((records, temps))
}

/// The records and temporary files of one shard.
type ShardScan = (Vec<RecordEntry>, Vec<FileEntry>);

/// The records and temporary files of one open shard.
fn scan_shard(shard: &DirEntry, fd: &Arc<OwnedFd>) -> Result<ShardScan, CacheError> {
    let mut records = Vec::new();
    let mut temps = Vec::new();
    for e in list(fd, &shard.path, |_| true)? {
        if let Some(key) = key_of(&shard.at.name, &e.name) {
            records.push(RecordEntry { key, not_a_file: !e.stat.is_file(), file: FileEntry::new(fd, &shard.path, &e) });
        } else if e.stat.is_file() && is_temp_name(&e.name) {
            temps.push(FileEntry::new(fd, &shard.path, &e));
        }
    }
    Ok((records, temps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::store::tests::meta;
    use crate::cache::{HostScope, Store, StoreOptions};
    use std::fs as sfs;
    use std::os::unix::fs::symlink;

    fn key(n: u32) -> Key {
        Key::from(blake3::hash(&n.to_le_bytes()))
    }

    #[test]
    fn the_walk_never_follows_a_link_and_reports_it() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let scope = HostScope::new("x86_64-unknown-linux-gnu", "walk", ["+a"]);
        let store =
            Store::open(dir.path(), scope.clone(), StoreOptions { fsync: false, ..Default::default() }).unwrap();
        store.put(&key(1), &meta("t"), b"object").unwrap();
        // A directory outside the root full of record-like names, linked
        // in as a shard and as a scope, and a link in place of the
        // counters' file.
        let shard = outside.path().join("ff");
        sfs::create_dir(&shard).unwrap();
        sfs::write(shard.join(key(2).file_name()), "not yours").unwrap();
        let root = sfs::canonicalize(dir.path()).unwrap();
        symlink(&shard, root.join(scope.name()).join("ff")).unwrap();
        let other = HostScope::new("x86_64-unknown-linux-gnu", "linked", ["+a"]);
        symlink(outside.path(), root.join(other.name())).unwrap();
        sfs::remove_file(root.join(SIZES_FILE)).unwrap();
        symlink(outside.path().join("sizes"), root.join(SIZES_FILE)).unwrap();
        let scan = scan(&root, Shards::All).unwrap();
        let keys: Vec<Key> = scan.records().map(|(_, r)| r.key).collect();
        assert_eq!(keys, [key(1)]);
        let mut misplaced: Vec<String> = scan.misplaced.iter().map(Misplaced::text).collect();
        misplaced.sort();
        assert_eq!(
            misplaced,
            [
                "scope that is a symbolic link",
                "shard that is a symbolic link",
                "size counter file that is a symbolic link"
            ]
        );
        // A group's walk sees only its own shards.
        let g = group_of_shard(&key(1).shard());
        assert_eq!(super::scan(&root, Shards::Group(g)).unwrap().records().count(), 1);
        let other_group = (g + 1) % 16;
        assert_eq!(super::scan(&root, Shards::Group(other_group)).unwrap().records().count(), 0);
        assert_eq!(super::scan(&root, Shards::None).unwrap().scopes[0].layout_files.len(), 1);
    }
}
