//! The cache root: creating it, adopting a half-made one, and telling a
//! Kiln cache from any other directory.
//!
//! Owns: the root's set-up (`CACHEDIR.TAG`, then Kiln's marker with the
//! layout version, each written whole, without `fsync`: they can be made
//! again), the check of both markers (and of a torn one, [`Markers::Torn`],
//! which a writer makes again), which
//! roots count as unfinished (only the tag, temporaries and the cache's
//! `kiln.toml`), the root's and scope's directory trust check, and the
//! small JSON files of the layout written the same way.
//!
//! Must never: adopt a directory holding anything that is not Kiln's
//! (a torn tag counts only beside Kiln's own marker),
//! write a marker before the tag (a reader must see a complete tag
//! whenever it sees a marker), or leave a partly written small file.

use super::access::Access;
use super::fs as cfs;
use super::layout::SETTINGS_FILE;
use super::layout::{is_temp_name, CACHEDIR_TAG, CACHEDIR_TAG_SIGNATURE, LAYOUT_VERSION, MARKER, MARKER_PREFIX};
use super::CacheError;
use serde::Serialize;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// Refuses a directory the store would load code from if another user
/// owns it or others may write to it (like ssh with its keys); the rules
/// of a private cache (see [`Access::check`] for a shared one).
pub fn check_trusted(path: &Path, meta: &fs::Metadata) -> Result<(), CacheError> {
    check_dir(&Access::default(), path, meta)
}

/// [`Access::check`] of a directory.
pub(super) fn check_dir(access: &Access, path: &Path, meta: &fs::Metadata) -> Result<(), CacheError> {
    if !meta.file_type().is_symlink() && !meta.is_dir() {
        return Err(CacheError::NotADirectory { path: path.into() });
    }
    access.check(path, meta)
}

/// What a Kiln root's markers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Markers {
    /// Both complete.
    Whole,
    /// Kiln's, but one or both cut short: they are written without `fsync`
    /// (their bytes can be made again), so a power cut just after a set-up
    /// may leave one empty, a prefix of what Kiln writes, or zeros where
    /// its data never reached the disk. A writer rewrites them
    /// ([`init_root`]); a reader takes the root for Kiln's.
    Torn,
}

/// Whether `found` is what a write of `expected` cut short by a power cut
/// can leave: no longer, and each byte either `expected`'s or zero.
fn is_torn(found: &[u8], expected: &[u8]) -> bool {
    found != expected && found.len() <= expected.len() && found.iter().zip(expected).all(|(f, e)| f == e || *f == 0)
}

/// Whether `root` carries both `CACHEDIR.TAG` with the standard signature
/// and Kiln's marker, whole or torn (see [`Markers`]); the reason it is
/// not a Kiln cache otherwise. A torn tag counts only beside Kiln's marker
/// (whole or torn), which only Kiln writes.
pub fn check_markers(root: &Path) -> Result<Markers, String> {
    let read_start = |name: &str| -> Option<Vec<u8>> {
        let meta = fs::symlink_metadata(root.join(name)).ok()?;
        if !meta.is_file() {
            return None;
        }
        let mut buf = Vec::new();
        File::open(root.join(name)).ok()?.take(256).read_to_end(&mut buf).ok()?;
        Some(buf)
    };
    let tag = read_start(CACHEDIR_TAG);
    let marker = read_start(MARKER);
    let tag_torn = tag.as_deref().is_some_and(|b| is_torn(b, cachedir_tag().as_bytes()));
    let marker_torn = marker.as_deref().is_some_and(|b| is_torn(b, marker_text().as_bytes()));
    let tag_check = match tag {
        Some(b) if b.starts_with(CACHEDIR_TAG_SIGNATURE.as_bytes()) => Ok(()),
        Some(_) => Err(format!("{CACHEDIR_TAG} lacks the standard signature")),
        None => Err(format!("no {CACHEDIR_TAG}")),
    };
    let marker_check = match marker {
        Some(b) if b.starts_with(MARKER_PREFIX.as_bytes()) => {
            let rest = String::from_utf8_lossy(&b[MARKER_PREFIX.len()..]);
            match rest.trim().parse::<u32>() {
                Ok(LAYOUT_VERSION) => Ok(()),
                Ok(v) => Err(format!("cache layout {v}, this build reads layout {LAYOUT_VERSION}")),
                Err(_) => Err(format!("{MARKER} is damaged")),
            }
        }
        Some(_) => Err(format!("{MARKER} is not Kiln's marker")),
        None => Err(format!("no {MARKER} marker")),
    };
    match (tag_check, marker_check) {
        (Ok(()), Ok(())) => Ok(Markers::Whole),
        (tag, marker) if (tag.is_ok() || tag_torn) && (marker.is_ok() || marker_torn) => Ok(Markers::Torn),
        (tag, marker) => tag.and(marker).map(|()| Markers::Whole),
    }
}

/// Writes a small file of the layout whole (`fs::write_atomic_with`, with
/// the access's file mode), unless it already holds exactly `bytes`. `dir`
/// is the handle of the directory at `dir_path`. Every such file (the
/// markers, `host.json`, a machine's `hosts/` entry) can be made again,
/// so none is synced: a torn one is told and rewritten by its reader.
fn write_small_file(
    access: &Access,
    dir: &OwnedFd,
    dir_path: &Path,
    name: &str,
    bytes: &[u8],
) -> Result<(), CacheError> {
    if cfs::read_prefix(dir, name, bytes.len() as u64 + 1).is_ok_and(|b| b == bytes) {
        return Ok(());
    }
    cfs::write_atomic_with(dir, name, bytes, access.new_file_mode(), false)
        .map_err(|e| CacheError::io(dir_path.join(name), "write", e))
}

fn marker_text() -> String {
    format!("{MARKER_PREFIX}{LAYOUT_VERSION}\n")
}

fn cachedir_tag() -> String {
    format!(
        "{CACHEDIR_TAG_SIGNATURE}\n# This file is a cache directory tag created by Kiln.\n\
         # For information about cache directory tags see https://bford.info/cachedir/\n"
    )
}

/// Creates the cache root if needed (mode 0700, or the shared group's
/// modes; with `CACHEDIR.TAG` and Kiln's marker), checks it, and returns
/// its canonical path. An existing directory without the markers is
/// adopted only when empty (or holding only what an interrupted set-up
/// left: the tag, temporaries, the cache's `kiln.toml`).
pub fn init_root(root: &Path, access: &Access) -> Result<PathBuf, CacheError> {
    if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| CacheError::io(parent, "create directory", e))?;
    }
    access.make_dir(root)?;
    let root = open_root(root, access)?;
    match check_markers(&root) {
        Ok(Markers::Whole) => return Ok(root),
        // Cut short by a power cut after a set-up: made again.
        Ok(Markers::Torn) => {}
        // Adopt an empty directory, or one that another process is
        // initialising right now or left half-made (a full disk).
        Err(reason) if !is_unfinished_root(&root)? => {
            // Another process may have finished initialising between the
            // first check and the scan: it writes the tag, then the marker
            // (each renamed into place), and only then anything else. So
            // whatever made this directory look foreign, a second check
            // sees complete markers if a Kiln process put them there.
            if check_markers(&root).is_ok() {
                return Ok(root);
            }
            return Err(CacheError::NotACache { path: root, reason });
        }
        Err(_) => {}
    }
    let fd = cfs::open_dir_path(&root).map_err(|e| CacheError::io(&root, "open", e))?;
    write_small_file(access, &fd, &root, CACHEDIR_TAG, cachedir_tag().as_bytes())?;
    write_small_file(access, &fd, &root, MARKER, marker_text().as_bytes())?;
    Ok(root)
}

/// Whether `root` holds nothing but what Kiln's set-up writes before its
/// marker: the tag, temporaries and the cache's `kiln.toml` (and no
/// marker). Such a root is finished by the next process that opens it for
/// writing, and is an empty cache to `kiln-cache-inspect`.
pub fn is_unfinished_root(root: &Path) -> Result<bool, CacheError> {
    let entries = fs::read_dir(root).map_err(|e| CacheError::io(root, "read", e))?;
    for entry in entries {
        let entry = entry.map_err(|e| CacheError::io(root, "read", e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name == CACHEDIR_TAG || name == SETTINGS_FILE || is_temp_name(&name)) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The canonical path of an existing root, after its trust check.
pub(super) fn open_root(root: &Path, access: &Access) -> Result<PathBuf, CacheError> {
    // The root itself may be reached through a link the user chose; below
    // it nothing is followed.
    let root = fs::canonicalize(root).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => CacheError::NoCache { path: root.into() },
        _ => CacheError::io(root, "resolve", e),
    })?;
    let meta = fs::symlink_metadata(&root).map_err(|e| CacheError::io(&root, "inspect", e))?;
    check_dir(access, &root, &meta)?;
    Ok(root)
}

/// Writes a small JSON file of the layout (`host.json`, a machine's
/// `hosts/` entry) as [`write_small_file`] does.
pub(super) fn write_json(
    access: &Access,
    dir: &OwnedFd,
    dir_path: &Path,
    name: &str,
    value: &impl Serialize,
) -> Result<(), CacheError> {
    let mut text = serde_json::to_vec_pretty(value).map_err(|e| CacheError::Encode(e.to_string()))?;
    text.push(b'\n');
    write_small_file(access, dir, dir_path, name, &text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::store::tests::meta;
    use crate::cache::{HostScope, Key, Lookup, Store, StoreOptions};

    fn open(root: &Path, read_only: bool) -> Result<Store, CacheError> {
        let scope = HostScope::new("x86_64-unknown-linux-gnu", "root", ["+a"]);
        Store::open(root, scope, StoreOptions { fsync: false, read_only, ..Default::default() })
    }

    #[test]
    fn torn_markers_are_kilns_and_a_writer_makes_them_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cache");
        let key = Key::from(blake3::hash(b"k"));
        open(&root, false).unwrap().put(&key, &meta("t"), b"object").unwrap();
        let (tag, marker) = (cachedir_tag().into_bytes(), marker_text().into_bytes());
        // What a power cut can leave of each: nothing, a prefix, zeros
        // where the data never reached the disk.
        let cut = |whole: &[u8]| [Vec::new(), whole[..whole.len() / 10].to_vec(), vec![0; whole.len()]];
        let cases = cut(&tag).into_iter().map(|t| (t, marker.clone())).chain(cut(&marker).map(|m| (vec![0; 10], m)));
        for (torn_tag, torn_marker) in cases {
            fs::write(root.join(CACHEDIR_TAG), &torn_tag).unwrap();
            fs::write(root.join(MARKER), &torn_marker).unwrap();
            assert_eq!(check_markers(&root), Ok(Markers::Torn));
            // A reader takes it for Kiln's, and finds the record.
            assert!(matches!(open(&root, true).unwrap().get(&key).unwrap(), Lookup::Hit(_)));
            // A writer makes both whole again.
            assert!(matches!(open(&root, false).unwrap().get(&key).unwrap(), Lookup::Hit(_)));
            assert_eq!(
                (fs::read(root.join(CACHEDIR_TAG)).unwrap(), fs::read(root.join(MARKER)).unwrap()),
                (tag.clone(), marker.clone())
            );
            assert_eq!(check_markers(&root), Ok(Markers::Whole));
        }
    }

    #[test]
    fn a_torn_looking_tag_without_kilns_marker_is_not_adopted() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(CACHEDIR_TAG), "").unwrap();
        fs::write(dir.path().join("thesis.tex"), "precious").unwrap();
        assert_eq!(check_markers(dir.path()), Err(format!("{CACHEDIR_TAG} lacks the standard signature")));
        assert!(matches!(open(dir.path(), false), Err(CacheError::NotACache { .. })));
        assert_eq!(fs::read(dir.path().join(CACHEDIR_TAG)).unwrap(), b"", "left alone");
        // Nor is a marker that says something else than a cut-short one.
        let root = dir.path().join("cache");
        open(&root, false).unwrap();
        fs::write(root.join(MARKER), format!("{MARKER_PREFIX}9\n")).unwrap();
        assert!(check_markers(&root).unwrap_err().contains("cache layout 9"));
        assert!(matches!(open(&root, false), Err(CacheError::NotACache { .. })));
    }
}
