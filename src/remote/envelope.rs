//! What a remote value is: a record in an envelope that binds it to the
//! name it is stored under, and optionally signs it.
//!
//! Owns: the key names ([`key_name`], [`parse_key_name`]), the envelope
//! layout ([`seal`], [`open`]), the signing key type ([`MacKey`]; the
//! settings derive it from the secret file), the longest value
//! ([`MAX_VALUE_LEN`], what `remote_max_record_size = 0` reads) and the [`Rejected`]
//! reasons. It uses `cache::record` and nothing of the settings, so the
//! settings may use it. The layout:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0      | 8    | magic `KILNREM\0` |
//! | 8      | 1    | flags: bit 0 set when signed |
//! | 9      | 32   | blake3 of `name_len (u32 LE) ‖ name ‖ record` |
//! | 41     | 32   | keyed blake3 of the same bytes (zero when unsigned) |
//! | 73     | ...  | the record (`cache::record`'s format) |
//!
//! Must never: hand back a record that has not passed, in this order, the
//! size limit, the envelope digest (so a value copied under another
//! scope's or key's name fails), the signature when a key is configured,
//! and the record decoder's own checks (lengths, checksum, metadata) with
//! the key it holds equal to the one asked for; or panic on any bytes.

use crate::cache::record::{self, Corrupt, Key, Record, MAX_RECORD_LEN};
use crate::config::RECORD_VERSION;
use serde::Serialize;
use std::fmt;

/// The first eight bytes of every remote value.
pub const MAGIC: [u8; 8] = *b"KILNREM\0";
/// Bytes before the record.
pub const ENVELOPE_LEN: usize = 73;
/// The flag bit of a signed value.
const SIGNED: u8 = 1;
/// Every Kiln key on a server starts with this.
pub const NAME_PREFIX: &str = "kiln:";

/// The key that signs and verifies records (derived from the secret by
/// `settings::read_secret`).
#[derive(Clone, PartialEq, Eq)]
pub struct MacKey(pub [u8; 32]);

impl fmt::Debug for MacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MacKey(..)")
    }
}

/// The largest value a reader accepts by default (a client may set a
/// lower limit, `KILN_REMOTE_MAX_RECORD_SIZE`).
pub const MAX_VALUE_LEN: u64 = MAX_RECORD_LEN + ENVELOPE_LEN as u64;

/// The server key of a record: `kiln:r<format>:<scope>:<key hex>`. The
/// scope is in the name, so a machine never asks for another CPU's
/// objects; the whole name is hashed for the cluster slot, so a kernel's
/// records spread over the nodes.
pub fn key_name(scope: &str, key: &Key) -> String {
    format!("{NAME_PREFIX}r{RECORD_VERSION}:{scope}:{}", key.to_hex())
}

/// The server key of the compile lease of a record: `kiln-lease:{NAME}`
/// with the record's [`key_name`] as its hash tag, so on a cluster the
/// lease lives in the record's slot; outside `kiln:*`, so inspection's
/// listing of records never meets one.
pub fn lease_name(scope: &str, key: &Key) -> String {
    format!("kiln-lease:{{{}}}", key_name(scope, key))
}

/// The value of this process's leases: `kiln-lease HOST PID RANDOM`.
pub fn lease_owner() -> String {
    let host = crate::cache::host::hostname().unwrap_or_default();
    let pid = std::process::id();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let random = blake3::hash(format!("{host} {pid} {}", now.as_nanos()).as_bytes()).to_hex();
    format!("kiln-lease {host} {pid} {}", &random[..16])
}

/// The scope and key of a server key written by [`key_name`] (any record
/// format version); `None` for anything else.
pub fn parse_key_name(name: &[u8]) -> Option<(String, Key)> {
    let name = std::str::from_utf8(name).ok()?;
    let rest = name.strip_prefix(NAME_PREFIX)?.strip_prefix('r')?;
    let (_version, rest) = rest.split_once(':')?;
    let (scope, hex) = rest.rsplit_once(':')?;
    if scope.is_empty() {
        return None;
    }
    Some((scope.to_string(), hex.parse().ok()?))
}

/// Why a remote value is not loaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Rejected {
    /// Longer than the client's limit ([`MAX_VALUE_LEN`] at most).
    Oversized { len: u64, limit: u64 },
    /// Not an envelope: too short or the wrong magic.
    NotAnEnvelope,
    /// The digest does not match: damaged, or stored under another name.
    WrongName,
    /// A secret is configured and the value is not signed.
    Unsigned,
    /// Signed, but not with this client's secret (or altered since).
    BadSignature,
    /// The record inside fails the record checks.
    Record { reason: Corrupt },
    /// The record holds another key than its name says.
    KeyMismatch { found: String },
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejected::Oversized { len, limit } => write!(f, "{len} bytes, over the limit of {limit}"),
            Rejected::NotAnEnvelope => write!(f, "not a Kiln remote value"),
            Rejected::WrongName => write!(f, "digest mismatch: damaged, or stored under another name"),
            Rejected::Unsigned => write!(f, "unsigned, and this client requires signed records"),
            Rejected::BadSignature => write!(f, "signature does not verify with this client's secret"),
            Rejected::Record { reason } => write!(f, "bad record: {reason}"),
            Rejected::KeyMismatch { found } => write!(f, "record holds key {found}, not the one its name says"),
        }
    }
}

fn digest_input(name: &str, record: &[u8], mut h: blake3::Hasher) -> [u8; 32] {
    h.update(&(name.len() as u32).to_le_bytes());
    h.update(name.as_bytes());
    h.update(record);
    *h.finalize().as_bytes()
}

/// The value stored under `name` for the encoded `record`: signed when
/// `mac` is given.
pub fn seal(name: &str, record: &[u8], mac: Option<&MacKey>) -> Vec<u8> {
    let mut out = Vec::with_capacity(ENVELOPE_LEN + record.len());
    out.extend_from_slice(&MAGIC);
    out.push(if mac.is_some() { SIGNED } else { 0 });
    out.extend_from_slice(&digest_input(name, record, blake3::Hasher::new()));
    match mac {
        Some(k) => out.extend_from_slice(&digest_input(name, record, blake3::Hasher::new_keyed(&k.0))),
        None => out.extend_from_slice(&[0u8; 32]),
    }
    out.extend_from_slice(record);
    out
}

/// What a reader checks a value against.
#[derive(Clone, Copy, Debug)]
pub struct Expect<'a> {
    /// The key the signature must verify with, when signing is on.
    pub mac: Option<&'a MacKey>,
    /// The longest value accepted.
    pub limit: u64,
}

/// Opens the value found under the name of `(scope, key)`: every check of
/// the module header, in order, then the record.
pub fn open(scope: &str, key: &Key, value: &[u8], expect: Expect<'_>) -> Result<Record, Rejected> {
    check(&key_name(scope, key), value, expect)?;
    let record = record::decode(&value[ENVELOPE_LEN..]).map_err(|reason| Rejected::Record { reason })?;
    if record.key != *key {
        return Err(Rejected::KeyMismatch { found: record.key.to_hex() });
    }
    Ok(record)
}

/// The envelope checks alone (size, magic, digest, signature) of `value`
/// stored under `name`.
pub fn check(name: &str, value: &[u8], expect: Expect<'_>) -> Result<(), Rejected> {
    let limit = expect.limit.min(MAX_VALUE_LEN);
    if value.len() as u64 > limit {
        return Err(Rejected::Oversized { len: value.len() as u64, limit });
    }
    if value.len() < ENVELOPE_LEN || value[..8] != MAGIC {
        return Err(Rejected::NotAnEnvelope);
    }
    let record = &value[ENVELOPE_LEN..];
    if value[9..41] != digest_input(name, record, blake3::Hasher::new()) {
        return Err(Rejected::WrongName);
    }
    if let Some(k) = expect.mac {
        if value[8] & SIGNED == 0 {
            return Err(Rejected::Unsigned);
        }
        // blake3::Hash compares in constant time.
        let want = blake3::Hash::from(digest_input(name, record, blake3::Hasher::new_keyed(&k.0)));
        let mut got = [0u8; 32];
        got.copy_from_slice(&value[41..73]);
        if want != blake3::Hash::from(got) {
            return Err(Rejected::BadSignature);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::record::Producer;
    use crate::config::{LaunchMeta, MetaKind};

    fn record(key: &Key) -> Vec<u8> {
        let meta = LaunchMeta {
            task: "t".into(),
            entry_symbol: "e".into(),
            kind: MetaKind::Serial,
            params: vec![],
            fields: vec![],
        };
        let producer = Producer { kiln_version: "0".into(), llvm_version: "22".into(), created_unix: 1, compile_ms: 0 };
        record::encode(key, &meta, &producer, b"\x7fELF object").unwrap()
    }

    #[test]
    fn names_round_trip() {
        let key = Key::from(blake3::hash(b"k"));
        let name = key_name("x86_64-linux-znver3-0123", &key);
        assert!(name.starts_with("kiln:r"));
        assert_eq!(parse_key_name(name.as_bytes()), Some(("x86_64-linux-znver3-0123".into(), key)));
        for bad in ["kiln:r1::00", "other:r1:s:00", "kiln:r1:s:zz", "kiln:"] {
            assert_eq!(parse_key_name(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn sealed_values_open_and_every_kind_of_bad_one_is_rejected() {
        let key = Key::from(blake3::hash(b"k"));
        let other = Key::from(blake3::hash(b"other"));
        let (mine, theirs) = (MacKey([1; 32]), MacKey([2; 32]));
        let rec = record(&key);
        let name = key_name("s", &key);
        let none = Expect { mac: None, limit: MAX_VALUE_LEN };
        let with = |k| Expect { mac: Some(k), limit: MAX_VALUE_LEN };
        let unsigned = seal(&name, &rec, None);
        let signed = seal(&name, &rec, Some(&mine));
        assert_eq!(open("s", &key, &unsigned, none).unwrap().key, key);
        assert_eq!(open("s", &key, &signed, none).unwrap().key, key);
        assert_eq!(open("s", &key, &signed, with(&mine)).unwrap().key, key);
        assert_eq!(open("s", &key, &unsigned, with(&mine)), Err(Rejected::Unsigned));
        assert_eq!(open("s", &key, &seal(&name, &rec, Some(&theirs)), with(&mine)), Err(Rejected::BadSignature));
        // Another scope's or another key's name.
        assert_eq!(open("t", &key, &unsigned, none), Err(Rejected::WrongName));
        assert_eq!(open("s", &other, &unsigned, none), Err(Rejected::WrongName));
        // A record of another key sealed under this key's name.
        assert_eq!(
            open("s", &key, &seal(&name, &record(&other), None), none),
            Err(Rejected::KeyMismatch { found: other.to_hex() })
        );
        assert_eq!(open("s", &key, b"garbage", none), Err(Rejected::NotAnEnvelope));
        for len in [0, 8, ENVELOPE_LEN, unsigned.len() - 1] {
            assert!(open("s", &key, &unsigned[..len], none).is_err(), "{len}");
        }
        let mut flipped = signed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(open("s", &key, &flipped, none), Err(Rejected::WrongName));
        // A value whose digest was recomputed over a damaged record: the
        // record checks still catch it.
        let mut damaged = rec.clone();
        damaged[70] ^= 1;
        assert!(matches!(open("s", &key, &seal(&name, &damaged, None), none), Err(Rejected::Record { .. })));
        let small = Expect { mac: None, limit: unsigned.len() as u64 - 1 };
        assert_eq!(
            open("s", &key, &unsigned, small),
            Err(Rejected::Oversized { len: unsigned.len() as u64, limit: small.limit })
        );
    }
}
