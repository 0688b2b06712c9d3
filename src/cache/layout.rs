//! The cache's layout: how every file and directory under a root is
//! named, the one place the store, the counters, the scan, inspection,
//! pruning and the settings writer read it from.
//!
//! Owns: a record's place (`<scope>/<shard>/<file>`: the key's first two
//! hex digits name the shard, the other 62 and `.kobj` the file; [`Key`]'s
//! `shard` and `file_name`), the names of the small files (`CACHEDIR.TAG`
//! and Kiln's marker with the layout version they carry, the `sizes`
//! file of the size counters (and the counter directory older builds
//! kept) and `stats`, the cache's `kiln.toml`; `host.json` and scope
//! names are `host`'s, re-exported here), the patterns that tell Kiln's
//! names from anything else (records, shards, temporary files
//! `NAME.tmp-PID-RANDOM`, compile locks `<62 hex>.lock` beside their
//! records, the pack directory and its links `<64 hex>.kpack`), and the
//! key a record's name stands for.
//!
//! Must never: touch the file system, or use a module of the cache other
//! than `record` (the key) and `host` (scope names): everything else
//! reads its names from here.

pub use super::host::{is_scope_name, HOSTS_DIR, HOST_FILE};
use super::record::{Key, RECORD_EXT};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The file name of the standard cache directory tag at the root.
pub const CACHEDIR_TAG: &str = "CACHEDIR.TAG";
/// The signature line a `CACHEDIR.TAG` must start with
/// (<https://bford.info/cachedir/>).
pub const CACHEDIR_TAG_SIGNATURE: &str = "Signature: 8a477f597d28d172789f06886806bc55";
/// Kiln's own marker file at the root.
pub const MARKER: &str = ".kiln-cache";
/// The first line of Kiln's marker file; the layout version follows it.
pub const MARKER_PREFIX: &str = "kiln-cache layout ";
/// The directory layout this build writes and reads.
pub const LAYOUT_VERSION: u32 = 1;
/// The file at the root holding the size counters of the sixteen shard
/// groups, one fixed slot each (`counters`).
pub const SIZES_FILE: &str = "sizes";
/// The directory of one size counter file per group (`counters/0` ..
/// `counters/f`) that Kiln kept before the `sizes` file. Counters are
/// state derived from the records, so the layout stays 1: a newer build
/// ignores a leftover directory and `verify --fix` removes it (an older
/// build still using the cache makes it again, and keeps its own counts).
pub const OLD_COUNTERS_DIR: &str = "counters";
/// The file in each scope directory holding its lasting statistics.
pub const STATS_FILE: &str = "stats";
/// The settings file: the cache's own at its root, and the user's in
/// their configuration directory (`settings` reads both).
pub const SETTINGS_FILE: &str = "kiln.toml";

impl Key {
    /// The shard directory: the first two hex digits.
    pub fn shard(&self) -> String {
        shard_name(self)
    }

    /// The record's file name inside its shard: the other 62 hex digits
    /// and `.kobj`.
    pub fn file_name(&self) -> String {
        record_file_name(self)
    }
}

/// The shard directory of a record: the key's first two hex digits.
pub fn shard_name(key: &Key) -> String {
    key.to_hex()[..2].to_string()
}

/// A record's file name inside its shard: the key's other 62 hex digits
/// and `.kobj`.
pub fn record_file_name(key: &Key) -> String {
    format!("{}.{RECORD_EXT}", &key.to_hex()[2..])
}

/// The directory of a scope holding the links into packs: records a
/// process fetched from the remote, written together as one file (one
/// inode) and linked under each record's name (see `pack`).
pub const PACKED_DIR: &str = "packed";

/// The extension of a link into a pack.
pub const PACKED_EXT: &str = "kpack";

/// The name a pack's temporary file is made from (`pack.tmp-PID-RANDOM`).
pub const PACK_TEMP_BASE: &str = "pack";

/// The name of `key`'s link into a pack, in the pack directory: the
/// key's 64 hex digits and `.kpack`.
pub fn packed_name(key: &Key) -> String {
    format!("{}.{PACKED_EXT}", key.to_hex())
}

/// The key of the link `name` in a pack directory, if the name is Kiln's.
pub fn packed_key_of(name: &str) -> Option<Key> {
    let stem = name.strip_suffix(PACKED_EXT)?.strip_suffix('.')?;
    let hex = stem.len() == 64 && stem.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    if hex {
        stem.parse().ok()
    } else {
        None
    }
}

/// The extension of a compile lock's file (see `lock`).
pub const LOCK_EXT: &str = "lock";

/// The file name of the compile lock of `key` inside its shard, beside
/// the record: the key's other 62 hex digits and `.lock`. An empty file,
/// not a record, a temporary or anything the scan counts.
pub fn lock_file_name(key: &Key) -> String {
    format!("{}.{LOCK_EXT}", &key.to_hex()[2..])
}

/// Where the record of `key` lives under a scope directory.
pub fn record_path(scope_dir: &Path, key: &Key) -> PathBuf {
    scope_dir.join(shard_name(key)).join(record_file_name(key))
}

/// The name of a temporary file for `final_name`: `NAME.tmp-PID-RANDOM`.
pub fn temp_name(final_name: &str) -> String {
    format!("{final_name}.tmp-{}-{:016x}", std::process::id(), random_u64())
}

/// A value no other call in any process is likely to produce: the
/// process id, the time and a counter, mixed by blake3.
fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = blake3::Hasher::new();
    h.update(&std::process::id().to_le_bytes());
    h.update(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    h.update(&now.as_nanos().to_le_bytes());
    let mut out = [0u8; 8];
    out.copy_from_slice(&h.finalize().as_bytes()[..8]);
    u64::from_le_bytes(out)
}

/// Whether `name` is one of Kiln's temporary files:
/// `<Kiln name>.tmp-<pid>-<16 hex>`, where the Kiln name is a record's
/// file name or one of the small files of the layout.
pub fn is_temp_name(name: &str) -> bool {
    let Some((base, rest)) = name.split_once(".tmp-") else { return false };
    let Some((pid, random)) = rest.split_once('-') else { return false };
    let base_ok = is_record_name(base)
        || [CACHEDIR_TAG, MARKER, HOST_FILE, SETTINGS_FILE, PACK_TEMP_BASE].contains(&base)
        || base.strip_suffix(".json").is_some_and(|m| m.len() == 16 && m.bytes().all(|c| c.is_ascii_hexdigit()));
    base_ok
        && !pid.is_empty()
        && pid.bytes().all(|c| c.is_ascii_digit())
        && random.len() == 16
        && random.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `name` is a record's file name: 62 lowercase hex digits and
/// `.kobj`.
pub fn is_record_name(name: &str) -> bool {
    name.strip_suffix(RECORD_EXT)
        .and_then(|n| n.strip_suffix('.'))
        .is_some_and(|stem| stem.len() == 62 && stem.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')))
}

/// Whether `name` is a shard directory's name: two lowercase hex digits.
pub fn is_shard_name(name: &str) -> bool {
    name.len() == 2 && name.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// The shard group of a shard directory's name (its first hex digit):
/// records are grouped so, each group with its own size counter, lock and
/// share of `max_size` (`counters`).
pub fn group_of_shard(shard: &str) -> u8 {
    shard.get(..1).and_then(|c| u8::from_str_radix(c, 16).ok()).unwrap_or(0)
}

/// The key of the record at `shard/name`, if both names are Kiln's.
pub fn key_of(shard: &str, name: &str) -> Option<Key> {
    if !is_shard_name(shard) || !is_record_name(name) {
        return None;
    }
    format!("{shard}{}", &name[..62]).parse().ok()
}
