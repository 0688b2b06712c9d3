//! The cache's layout: how every file and directory under a root is
//! named, the one place the store, the counters, inspection and pruning
//! read it from.
//!
//! Owns: a record's place (`<scope>/<shard>/<file>`: the key's first two
//! hex digits name the shard, the other 62 and `.kobj` the file), the
//! patterns that tell Kiln's names from anything else (records, shards,
//! temporary files `NAME.tmp-PID-RANDOM`), and the key a record's name
//! stands for. The names of the small files live with their owners
//! (`CACHEDIR.TAG` and the marker in `cache`, `host.json` and scope names
//! in `host`, the counter directory and `stats` in `counters`) and are
//! re-exported here.
//!
//! Must never: touch the file system.

pub use super::counters::{COUNTERS_DIR, STATS_FILE};
pub use super::host::{is_scope_name, HOSTS_DIR, HOST_FILE};
use super::record::{Key, RECORD_EXT};
pub use super::{CACHEDIR_TAG, MARKER};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The shard directory of a record: the key's first two hex digits.
pub fn shard_name(key: &Key) -> String {
    key.to_hex()[..2].to_string()
}

/// A record's file name inside its shard: the key's other 62 hex digits
/// and `.kobj`.
pub fn record_file_name(key: &Key) -> String {
    format!("{}.{RECORD_EXT}", &key.to_hex()[2..])
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
        || [CACHEDIR_TAG, MARKER, HOST_FILE, crate::settings::FILE_NAME].contains(&base)
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

/// The key of the record at `shard/name`, if both names are Kiln's.
pub fn key_of(shard: &str, name: &str) -> Option<Key> {
    if !is_shard_name(shard) || !is_record_name(name) {
        return None;
    }
    format!("{shard}{}", &name[..62]).parse().ok()
}
