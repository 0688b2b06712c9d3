//! The cache root: creating it, adopting a half-made one, and telling a
//! Kiln cache from any other directory.
//!
//! Owns: the root's set-up (`CACHEDIR.TAG`, then Kiln's marker with the
//! layout version, each written whole), the check of both markers, which
//! roots count as unfinished (only the tag, temporaries and the cache's
//! `kiln.toml`), the root's and scope's directory trust check, and the
//! small JSON files of the layout written the same way.
//!
//! Must never: adopt a directory holding anything that is not Kiln's,
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

/// Whether `root` carries both `CACHEDIR.TAG` with the standard signature
/// and Kiln's marker; the reason it is not a Kiln cache otherwise.
pub fn check_markers(root: &Path) -> Result<(), String> {
    let read_start = |name: &str| -> Option<Vec<u8>> {
        let meta = fs::symlink_metadata(root.join(name)).ok()?;
        if !meta.is_file() {
            return None;
        }
        let mut buf = Vec::new();
        File::open(root.join(name)).ok()?.take(256).read_to_end(&mut buf).ok()?;
        Some(buf)
    };
    match read_start(CACHEDIR_TAG) {
        Some(b) if b.starts_with(CACHEDIR_TAG_SIGNATURE.as_bytes()) => {}
        Some(_) => return Err(format!("{CACHEDIR_TAG} lacks the standard signature")),
        None => return Err(format!("no {CACHEDIR_TAG}")),
    }
    match read_start(MARKER) {
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
    }
}

/// Writes a small file of the layout whole (`fs::write_atomic`, with the
/// access's file mode), unless it already holds exactly `bytes`. `dir` is
/// the handle of the directory at `dir_path`.
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
    cfs::write_atomic(dir, name, bytes, access.new_file_mode())
        .map_err(|e| CacheError::io(dir_path.join(name), "write", e))
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
    if let Err(reason) = check_markers(&root) {
        // Adopt an empty directory, or one that another process is
        // initialising right now or left half-made (a full disk).
        if !is_unfinished_root(&root)? {
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
        let fd = cfs::open_dir_path(&root).map_err(|e| CacheError::io(&root, "open", e))?;
        write_small_file(access, &fd, &root, CACHEDIR_TAG, cachedir_tag().as_bytes())?;
        write_small_file(access, &fd, &root, MARKER, format!("{MARKER_PREFIX}{LAYOUT_VERSION}\n").as_bytes())?;
    }
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
