//! The cache record: one compiled task object with its launch metadata,
//! in a self-checking binary format.
//!
//! Owns: [`Key`], the record layout, [`encode`] and [`decode`], and the
//! [`Corrupt`] reasons a decode can give. The layout, all integers little
//! endian (`docs/cache.md` has the same table):
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0      | 8    | magic `KILNOBJ\0` |
//! | 8      | 4    | format version (`config::RECORD_VERSION`) |
//! | 12     | 4    | `meta_len`: bytes of launch metadata |
//! | 16     | 4    | `producer_len`: bytes of producer |
//! | 20     | 8    | `object_len`: bytes of object |
//! | 28     | 32   | key |
//! | 60     | `meta_len` | launch metadata ([`LaunchMeta`], JSON) |
//! | ...    | `producer_len` | producer ([`Producer`], JSON) |
//! | ...    | `object_len` | the relocatable object |
//! | end-32 | 32   | blake3 of every byte before it |
//!
//! Must never: trust a length from the bytes (each is checked, with
//! overflow-free arithmetic, against the real length before anything is
//! sliced or allocated), or panic on any input.

use crate::config::{LaunchMeta, RECORD_VERSION};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The first eight bytes of every record.
pub const MAGIC: [u8; 8] = *b"KILNOBJ\0";
/// Bytes of the fixed header, up to and including the key.
pub const HEADER_LEN: usize = 60;
/// Bytes of the trailing checksum.
pub const CHECKSUM_LEN: usize = 32;
/// The largest record a reader accepts; anything longer is corrupt (no
/// task object comes near it, and it bounds what a reader allocates).
pub const MAX_RECORD_LEN: u64 = 1 << 30;

/// A cache key: the blake3 digest of everything that determines a task's
/// object (see `key`). Displayed and parsed as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(pub [u8; 32]);

const HEX: &[u8; 16] = b"0123456789abcdef";

impl Key {
    /// The 64 hex digits.
    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(HEX[(b >> 4) as usize] as char);
            s.push(HEX[(b & 15) as usize] as char);
        }
        s
    }
}

/// The extension of a record file.
pub const RECORD_EXT: &str = "kobj";

impl From<blake3::Hash> for Key {
    fn from(h: blake3::Hash) -> Key {
        Key(*h.as_bytes())
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({})", self.to_hex())
    }
}

/// The value of one lowercase or uppercase hex digit.
pub(crate) fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl FromStr for Key {
    type Err = String;
    fn from_str(s: &str) -> Result<Key, String> {
        let b = s.as_bytes();
        if b.len() != 64 {
            return Err(format!("a key is 64 hex digits, got {} characters", s.chars().count()));
        }
        let mut out = [0u8; 32];
        for (i, pair) in b.chunks_exact(2).enumerate() {
            match (hex_digit(pair[0]), hex_digit(pair[1])) {
                (Some(h), Some(l)) => out[i] = h << 4 | l,
                _ => return Err(format!("'{s}' is not a hex key")),
            }
        }
        Ok(Key(out))
    }
}

impl Serialize for Key {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

/// Who made a record and when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Producer {
    /// Kiln's version ([`crate::VERSION`]).
    pub kiln_version: String,
    /// The LLVM version that compiled the object.
    pub llvm_version: String,
    /// Creation time, seconds since the Unix epoch.
    pub created_unix: u64,
    /// How long the object took to compile, in milliseconds (0 when not
    /// known; absent in records of older builds).
    #[serde(default)]
    pub compile_ms: u64,
}

impl Producer {
    /// A producer stamped now by this build of Kiln.
    pub fn now(llvm_version: &str) -> Producer {
        Producer {
            kiln_version: crate::VERSION.to_string(),
            llvm_version: llvm_version.to_string(),
            created_unix: unix_now(),
            compile_ms: 0,
        }
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A decoded, verified record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: Key,
    pub meta: LaunchMeta,
    pub producer: Producer,
    pub object: Vec<u8>,
}

/// Why bytes are not a valid record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Corrupt {
    /// Zero bytes.
    Empty,
    /// Shorter than a header and a checksum.
    TooShort { len: u64 },
    /// Longer than [`MAX_RECORD_LEN`].
    TooLarge { len: u64 },
    /// The first eight bytes are not [`MAGIC`].
    BadMagic,
    /// A format version this build does not read.
    BadVersion { found: u32 },
    /// The lengths in the header do not add up to the file's length.
    LengthMismatch { declared: u64, actual: u64 },
    /// The trailing blake3 does not match the bytes.
    Checksum,
    /// The checksum holds but the object is empty.
    EmptyObject,
    /// The launch metadata does not decode.
    BadMeta { error: String },
    /// The producer does not decode.
    BadProducer { error: String },
    /// The record holds another key than its file name says.
    KeyMismatch { found: String },
    /// The record's path is not a regular file (a symlink, a directory...).
    NotAFile,
    /// The object was rejected by its consumer (it failed to add or link);
    /// reported by the JIT through [`crate::cache::Store::discard`].
    Rejected { reason: String },
}

impl fmt::Display for Corrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Corrupt::Empty => write!(f, "empty file"),
            Corrupt::TooShort { len } => {
                write!(f, "truncated: {len} bytes, shorter than a header and checksum ({})", HEADER_LEN + CHECKSUM_LEN)
            }
            Corrupt::TooLarge { len } => write!(f, "{len} bytes, larger than any record ({MAX_RECORD_LEN})"),
            Corrupt::BadMagic => write!(f, "bad magic: not a Kiln record"),
            Corrupt::BadVersion { found } => {
                write!(f, "record format version {found}, this build reads version {RECORD_VERSION}")
            }
            Corrupt::LengthMismatch { declared, actual } => {
                write!(f, "header declares {declared} bytes, file has {actual}")
            }
            Corrupt::Checksum => write!(f, "checksum mismatch"),
            Corrupt::EmptyObject => write!(f, "empty object"),
            Corrupt::BadMeta { error } => write!(f, "bad launch metadata: {error}"),
            Corrupt::BadProducer { error } => write!(f, "bad producer: {error}"),
            Corrupt::KeyMismatch { found } => write!(f, "record holds key {found}, not the one its name says"),
            Corrupt::NotAFile => write!(f, "not a regular file"),
            Corrupt::Rejected { reason } => write!(f, "object rejected: {reason}"),
        }
    }
}

/// The fixed header, decoded but not yet checked against anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u32,
    pub meta_len: u32,
    pub producer_len: u32,
    pub object_len: u64,
    pub key: Key,
}

impl Header {
    /// The record length these lengths declare, `None` on overflow.
    pub fn declared_len(&self) -> Option<u64> {
        (HEADER_LEN as u64 + CHECKSUM_LEN as u64)
            .checked_add(self.meta_len as u64)?
            .checked_add(self.producer_len as u64)?
            .checked_add(self.object_len)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Encodes a record. The object must not be empty (the store refuses
/// empty objects before this).
pub fn encode(key: &Key, meta: &LaunchMeta, producer: &Producer, object: &[u8]) -> Result<Vec<u8>, String> {
    let meta_json = serde_json::to_vec(meta).map_err(|e| e.to_string())?;
    let producer_json = serde_json::to_vec(producer).map_err(|e| e.to_string())?;
    let meta_len = u32::try_from(meta_json.len()).map_err(|_| "launch metadata larger than 4 GiB".to_string())?;
    let producer_len = u32::try_from(producer_json.len()).map_err(|_| "producer larger than 4 GiB".to_string())?;
    let total = HEADER_LEN + meta_json.len() + producer_json.len() + object.len() + CHECKSUM_LEN;
    if total as u64 > MAX_RECORD_LEN {
        return Err(format!("record of {total} bytes exceeds the limit of {MAX_RECORD_LEN}"));
    }
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&RECORD_VERSION.to_le_bytes());
    out.extend_from_slice(&meta_len.to_le_bytes());
    out.extend_from_slice(&producer_len.to_le_bytes());
    out.extend_from_slice(&(object.len() as u64).to_le_bytes());
    out.extend_from_slice(&key.0);
    out.extend_from_slice(&meta_json);
    out.extend_from_slice(&producer_json);
    out.extend_from_slice(object);
    let sum = blake3::hash(&out);
    out.extend_from_slice(sum.as_bytes());
    Ok(out)
}

/// Decodes the header at the start of `bytes` (at least a header and a
/// checksum long: a shorter file cannot be a record), checking magic and
/// version. `file_len` is the whole record's length.
pub fn decode_header(bytes: &[u8], file_len: u64) -> Result<Header, Corrupt> {
    if file_len == 0 {
        return Err(Corrupt::Empty);
    }
    if file_len > MAX_RECORD_LEN {
        return Err(Corrupt::TooLarge { len: file_len });
    }
    if file_len < (HEADER_LEN + CHECKSUM_LEN) as u64 || bytes.len() < HEADER_LEN {
        return Err(Corrupt::TooShort { len: file_len });
    }
    if bytes[..8] != MAGIC {
        return Err(Corrupt::BadMagic);
    }
    let version = u32_at(bytes, 8);
    if version != RECORD_VERSION {
        return Err(Corrupt::BadVersion { found: version });
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(&bytes[28..60]);
    let header = Header {
        version,
        meta_len: u32_at(bytes, 12),
        producer_len: u32_at(bytes, 16),
        object_len: u64_at(bytes, 20),
        key: Key(key),
    };
    match header.declared_len() {
        Some(n) if n == file_len => Ok(header),
        declared => Err(Corrupt::LengthMismatch { declared: declared.unwrap_or(u64::MAX), actual: file_len }),
    }
}

/// The metadata and producer of a record from its first bytes, without
/// verifying the checksum (for listings; [`decode`] is what loading uses).
/// `prefix` must hold at least the header, metadata and producer.
pub fn peek(prefix: &[u8], file_len: u64) -> Result<(Header, LaunchMeta, Producer), Corrupt> {
    let header = decode_header(prefix, file_len)?;
    let meta_end = HEADER_LEN + header.meta_len as usize;
    let producer_end = meta_end + header.producer_len as usize;
    if prefix.len() < producer_end {
        return Err(Corrupt::TooShort { len: prefix.len() as u64 });
    }
    let (meta, producer) = decode_json(&prefix[HEADER_LEN..meta_end], &prefix[meta_end..producer_end])?;
    Ok((header, meta, producer))
}

/// How many leading bytes [`peek`] needs for a header (the header alone
/// if `None`).
pub fn peek_len(header: Option<&Header>) -> usize {
    match header {
        None => HEADER_LEN,
        Some(h) => HEADER_LEN + h.meta_len as usize + h.producer_len as usize,
    }
}

fn decode_json(meta: &[u8], producer: &[u8]) -> Result<(LaunchMeta, Producer), Corrupt> {
    let meta = serde_json::from_slice(meta).map_err(|e| Corrupt::BadMeta { error: e.to_string() })?;
    let producer = serde_json::from_slice(producer).map_err(|e| Corrupt::BadProducer { error: e.to_string() })?;
    Ok((meta, producer))
}

/// Decodes and verifies a whole record: magic, version, lengths against
/// `bytes.len()`, checksum, then the metadata.
pub fn decode(bytes: &[u8]) -> Result<Record, Corrupt> {
    let header = decode_header(bytes, bytes.len() as u64)?;
    // From here every length is known to add up to `bytes.len()`, which
    // bounds all the slicing below.
    let body_end = bytes.len() - CHECKSUM_LEN;
    if blake3::hash(&bytes[..body_end]).as_bytes() != &bytes[body_end..] {
        return Err(Corrupt::Checksum);
    }
    if header.object_len == 0 {
        return Err(Corrupt::EmptyObject);
    }
    let meta_end = HEADER_LEN + header.meta_len as usize;
    let producer_end = meta_end + header.producer_len as usize;
    let (meta, producer) = decode_json(&bytes[HEADER_LEN..meta_end], &bytes[meta_end..producer_end])?;
    Ok(Record { key: header.key, meta, producer, object: bytes[producer_end..body_end].to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MetaBound, MetaField, MetaKind, MetaParam};
    use crate::ir::Scalar;

    fn meta() -> LaunchMeta {
        LaunchMeta {
            task: "@step.1".into(),
            entry_symbol: "kiln_task_step_1".into(),
            kind: MetaKind::RangeFor { lo: MetaBound::Const(0), hi: MetaBound::Param(1), block_dim: 64 },
            params: vec![
                MetaParam { name: "%dt".into(), ty: Scalar::F32 },
                MetaParam { name: "%n".into(), ty: Scalar::I32 },
            ],
            fields: vec![MetaField { name: "@x".into(), elem: Scalar::F32, shape: vec![1024] }],
        }
    }

    fn record(object: &[u8]) -> (Key, Producer, Vec<u8>) {
        let key = Key::from(blake3::hash(b"k"));
        let producer = Producer {
            kiln_version: "0.1.0".into(),
            llvm_version: "22.1.0".into(),
            created_unix: 1_700_000_000,
            compile_ms: 42,
        };
        let bytes = encode(&key, &meta(), &producer, object).unwrap();
        (key, producer, bytes)
    }

    #[test]
    fn round_trip() {
        let object: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        let (key, producer, bytes) = record(&object);
        let r = decode(&bytes).unwrap();
        assert_eq!(r, Record { key, meta: meta(), producer: producer.clone(), object });
        let (h, m, p) = peek(&bytes, bytes.len() as u64).unwrap();
        assert_eq!((h.key, m, p), (key, meta(), producer));
        assert_eq!(&bytes[..8], b"KILNOBJ\0");
    }

    #[test]
    fn key_hex_round_trip() {
        let key = Key::from(blake3::hash(b"x"));
        assert_eq!(key.to_hex().parse::<Key>().unwrap(), key);
        assert_eq!(key.to_hex().to_uppercase().parse::<Key>().unwrap(), key);
        assert_eq!(format!("{}{}", key.shard(), key.file_name()), format!("{}.kobj", key.to_hex()));
        assert!("abc".parse::<Key>().is_err());
        assert!("g".repeat(64).parse::<Key>().is_err());
        assert!("é".repeat(32).parse::<Key>().is_err());
    }

    #[test]
    fn every_truncation_is_corrupt() {
        let (_, _, bytes) = record(b"\x7fELF tiny object");
        for len in 0..bytes.len() {
            let err = decode(&bytes[..len]).unwrap_err();
            match len {
                0 => assert_eq!(err, Corrupt::Empty),
                n if n < HEADER_LEN + CHECKSUM_LEN => assert_eq!(err, Corrupt::TooShort { len: n as u64 }),
                n => assert_eq!(err, Corrupt::LengthMismatch { declared: bytes.len() as u64, actual: n as u64 }),
            }
        }
    }

    #[test]
    fn every_flipped_byte_is_corrupt() {
        let (_, _, bytes) = record(b"\x7fELF tiny object");
        for i in 0..bytes.len() {
            for bit in [0x01u8, 0x80] {
                let mut damaged = bytes.clone();
                damaged[i] ^= bit;
                let err = decode(&damaged).unwrap_err();
                match i {
                    0..=7 => assert_eq!(err, Corrupt::BadMagic, "byte {i}"),
                    8..=11 => assert!(matches!(err, Corrupt::BadVersion { .. }), "byte {i}: {err}"),
                    12..=27 => assert!(matches!(err, Corrupt::LengthMismatch { .. }), "byte {i}: {err}"),
                    _ => assert_eq!(err, Corrupt::Checksum, "byte {i}"),
                }
            }
        }
    }

    #[test]
    fn wrong_version_and_magic() {
        let (_, _, bytes) = record(b"obj");
        let mut v = bytes.clone();
        v[8..12].copy_from_slice(&(RECORD_VERSION + 1).to_le_bytes());
        assert_eq!(decode(&v).unwrap_err(), Corrupt::BadVersion { found: RECORD_VERSION + 1 });
        let mut m = bytes.clone();
        m[..8].copy_from_slice(b"\x7fELF\x02\x01\x01\x00");
        assert_eq!(decode(&m).unwrap_err(), Corrupt::BadMagic);
    }

    #[test]
    fn huge_declared_lengths_never_allocate() {
        let (_, _, bytes) = record(b"obj");
        for (at, width) in [(12, 4), (16, 4), (20, 8)] {
            let mut d = bytes.clone();
            d[at..at + width].fill(0xff);
            assert!(matches!(decode(&d).unwrap_err(), Corrupt::LengthMismatch { .. }));
            assert!(peek(&d, d.len() as u64).is_err());
        }
    }

    #[test]
    fn checksummed_damage_inside_is_still_corrupt() {
        // A writer with a valid checksum but garbage metadata, or an empty
        // object: the checksum is not the only line of defence.
        let key = Key::from(blake3::hash(b"k"));
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&MAGIC);
        bytes.extend_from_slice(&RECORD_VERSION.to_le_bytes());
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(&2u32.to_le_bytes());
        bytes.extend_from_slice(&1u64.to_le_bytes());
        bytes.extend_from_slice(&key.0);
        bytes.extend_from_slice(b"{x}{}o");
        let sum = blake3::hash(&bytes);
        bytes.extend_from_slice(sum.as_bytes());
        assert!(matches!(decode(&bytes).unwrap_err(), Corrupt::BadMeta { .. }));
        let empty = {
            let mut b = bytes[..HEADER_LEN].to_vec();
            b[12..28].fill(0);
            let sum = blake3::hash(&b);
            b.extend_from_slice(sum.as_bytes());
            b
        };
        assert_eq!(decode(&empty).unwrap_err(), Corrupt::EmptyObject);
    }

    #[test]
    fn garbage_never_panics() {
        // A deterministic pseudo-random stream of inputs of many lengths,
        // some starting with a valid header.
        let (_, _, good) = record(b"object bytes");
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..4000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 300) as usize;
            let mut bytes: Vec<u8> = (0..len).map(|i| (state >> (i % 56)) as u8 ^ i as u8).collect();
            if round % 2 == 0 {
                let n = len.min(HEADER_LEN);
                bytes[..n].copy_from_slice(&good[..n]);
            }
            assert!(decode(&bytes).is_err());
            let _ = peek(&bytes, bytes.len() as u64);
        }
    }
}
