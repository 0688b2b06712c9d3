//! The on-disk per-task artifact store: records of compiled task objects,
//! scoped by host, safe under many processes at once.
//!
//! Owns: the record format ([`record`]), who may use a cache and the
//! trust check ([`access`]), host scopes and their directory
//! names ([`host`]), how every file under a root is named ([`layout`]),
//! the file-system layer of records, shards, counters, locks and the
//! walk ([`fs`]), packs of fetched records linked under each record's
//! name ([`pack`]), the root's set-up and markers ([`root`]), the store
//! with its trust checks ([`store`]), the per-key compile locks
//! ([`lock`]), the size counters, lasting
//! statistics and size-bound eviction ([`counters`]), the one walk of a
//! cache tree ([`scan`]), the inspection behind `kiln-cache-inspect`
//! ([`inspect`]; `verify` and the prune executor in `repair.rs`, the prune
//! policy in `prune.rs`; the text of its reports in [`render`]), the human
//! sizes and durations they read and write ([`size`]), and the resolution of the default cache directory
//! that every tool shares.
//!
//! The modules form layers, each using only those below it: `record`,
//! `host`, `size`; `layout`; `fs`; `pack`, `access`; `root`, `scan`; `counters`,
//! `lock`; `store`, `prune`; `inspect`; `repair`; `render`.
//!
//! Must never: touch LLVM (codegen hands in the detected host and the
//! object bytes), print, exit or panic on anything found on disk; trust a
//! length read from a file; follow a symbolic link out of the cache root;
//! remove a file that does not match one of Kiln's own name patterns.
//!
//! `docs/cache.md` is the reference for the layout, the record format and
//! the guarantees, and says how each guarantee is tested.

pub mod access;
pub mod counters;
pub mod fs;
pub mod host;
pub mod inspect;
pub mod layout;
pub mod lock;
pub mod pack;
#[cfg(test)]
mod packed_tests;
mod prune;
pub mod record;
pub mod render;
pub mod repair;
pub mod root;
pub mod scan;
pub mod size;
pub mod store;

pub use counters::CacheStats;
pub use host::HostScope;
pub use layout::{CACHEDIR_TAG, CACHEDIR_TAG_SIGNATURE, LAYOUT_VERSION, MARKER, MARKER_PREFIX};
pub use record::{Corrupt, Key, Producer, Record};
pub use store::{CacheRoot, Lookup, Native, Store, StoreOptions, DEFAULT_MAX_SIZE};

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a cache operation failed. Damage to a record is not an error (see
/// [`Lookup::Corrupt`]); these are the conditions a caller must hear about.
#[derive(Debug)]
pub enum CacheError {
    /// A file system operation failed.
    Io { path: PathBuf, op: &'static str, err: io::Error },
    /// A directory the store would load code from is not trustworthy.
    Untrusted { path: PathBuf, reason: String },
    /// The directory exists but is not a Kiln cache.
    NotACache { path: PathBuf, reason: String },
    /// The cache's path names something that is not a directory (a file).
    NotADirectory { path: PathBuf },
    /// The cache directory does not exist.
    NoCache { path: PathBuf },
    /// No cache directory was given and none can be derived from the
    /// environment.
    NoDefaultDir,
    /// `put` was handed an empty object: a failed artifact is never stored.
    EmptyObject,
    /// The record could not be encoded (its metadata does not serialise).
    Encode(String),
    /// `show` found no record, several, or a damaged one.
    Lookup(String),
    /// A setting the store needs does not fit this system (an unknown
    /// group).
    BadSetting(String),
    /// The store is read-only: nothing is written.
    ReadOnly,
    /// This host's scope is needed but unknown.
    UnknownHost { root: PathBuf },
    /// A scope directory's `host.json` describes a different host than the
    /// one whose name maps to it.
    ScopeMismatch { path: PathBuf, found: String, expected: String },
}

impl CacheError {
    pub(crate) fn io(path: impl Into<PathBuf>, op: &'static str, err: io::Error) -> CacheError {
        CacheError::Io { path: path.into(), op, err }
    }

    /// The I/O error inside, for the counters' `io::Result`s (another
    /// error becomes one, with its message).
    pub(crate) fn into_io(self) -> io::Error {
        match self {
            CacheError::Io { err, .. } => err,
            other => io::Error::other(other.to_string()),
        }
    }
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheError::Io { path, op, err } => {
                write!(f, "{}: cannot {op}: {}", path.display(), crate::diag::io_reason(err))
            }
            CacheError::Untrusted { path, reason } => write!(
                f,
                "{}: {reason}; refusing to use it as a cache, since loading a record runs its code \
                 (fix the directory, or opt out with --allow-insecure-cache)",
                path.display()
            ),
            CacheError::NotACache { path, reason } => {
                write!(f, "{}: not a Kiln cache ({reason})", path.display())
            }
            CacheError::NotADirectory { path } => write!(
                f,
                "{}: is not a directory, and a cache is one (name a directory for the cache, or move the file away)",
                path.display()
            ),
            CacheError::NoCache { path } => write!(f, "{}: no cache directory here", path.display()),
            CacheError::NoDefaultDir => {
                write!(f, "no cache directory: set KILN_CACHE_DIR, XDG_CACHE_HOME or HOME, or pass --cache-dir")
            }
            CacheError::EmptyObject => write!(f, "refusing to store an empty object"),
            CacheError::Encode(e) => write!(f, "cannot encode record: {e}"),
            CacheError::Lookup(text) => f.write_str(text),
            CacheError::BadSetting(text) => f.write_str(text),
            CacheError::ReadOnly => f.write_str("the cache is read-only (read_only / KILN_CACHE_READ_ONLY)"),
            CacheError::UnknownHost { root } => write!(
                f,
                "cannot tell this host's scope: no Kiln process with LLVM has recorded it in {} yet \
                 (run a kiln-run or kiln-compile with this cache, or pass --host-scope SCOPE)",
                root.join(host::HOSTS_DIR).display()
            ),
            CacheError::ScopeMismatch { path, found, expected } => {
                write!(f, "{}: scope directory describes host '{found}', not '{expected}'", path.display())
            }
        }
    }
}

impl std::error::Error for CacheError {}

/// The cache root when no setting names one (`cache_dir`, whose
/// `KILN_CACHE_DIR` and `--cache-dir` the settings table handles):
/// `$XDG_CACHE_HOME/kiln`, else `$HOME/.cache/kiln`. Empty variables count
/// as unset, and `XDG_CACHE_HOME` must be absolute (as the XDG base
/// directory specification says).
pub fn default_cache_dir(env: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, CacheError> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(xdg) = var("XDG_CACHE_HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
        return Ok(xdg.join("kiln"));
    }
    if let Some(home) = var("HOME") {
        return Ok(PathBuf::from(home).join(".cache").join("kiln"));
    }
    Err(CacheError::NoDefaultDir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
    }

    #[test]
    fn default_cache_dir_order() {
        let both = [("XDG_CACHE_HOME", "/x"), ("HOME", "/h")];
        assert_eq!(default_cache_dir(env(&both)).unwrap(), PathBuf::from("/x/kiln"));
        let empty_xdg = [("XDG_CACHE_HOME", ""), ("HOME", "/h")];
        assert_eq!(default_cache_dir(env(&empty_xdg)).unwrap(), PathBuf::from("/h/.cache/kiln"));
        let relative_xdg = [("XDG_CACHE_HOME", "rel"), ("HOME", "/h")];
        assert_eq!(default_cache_dir(env(&relative_xdg)).unwrap(), PathBuf::from("/h/.cache/kiln"));
        assert!(matches!(default_cache_dir(env(&[])), Err(CacheError::NoDefaultDir)));
    }
}
