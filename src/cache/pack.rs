//! Packs: several whole records in one file, so that the records one
//! process fetched from the remote cost one inode, not one each (and no
//! shard directory): the file is linked under each record's name in the
//! scope's pack directory (`layout::PACKED_DIR`), and a reader of a link
//! finds its own record through the pack's index.
//!
//! Owns: the pack format (magic, version, the index of keys, offsets and
//! lengths with its blake3, then the records, each in the record format
//! with its own checksum), how records are split into packs, finding a
//! key's record in a pack, reading a record's bytes from a file that is a
//! record or a pack, and the size a link into a pack counts (its own
//! record's length, whatever the links' number).
//!
//! Must never: trust a count, offset or length read from a file (each is
//! checked against the file's length and the bounds here), read more
//! than a record's bounded length, or decide anything about a record's
//! contents (the record's own checksum and key check are `record`'s).

use super::fs as cfs;
use super::record::{Corrupt, Key, MAX_RECORD_LEN};
use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;

/// The first eight bytes of a pack.
pub const PACK_MAGIC: [u8; 8] = *b"KILNPACK";
/// The pack format this build writes and reads.
pub const PACK_VERSION: u32 = 1;
/// The most records one pack holds.
pub const MAX_PACK_RECORDS: usize = 4096;
/// The most bytes of records a writer puts in one pack (a larger record
/// goes alone); far below [`MAX_RECORD_LEN`], which bounds any file read.
pub const MAX_PACK_LEN: u64 = 64 << 20;

/// Magic, version and count.
const FIXED_LEN: usize = 16;
/// One index entry: key, offset, length.
const ENTRY_LEN: usize = 48;
/// The index's blake3.
const SUM_LEN: usize = 32;

/// Where a record lies in a pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    pub offset: u64,
    pub len: u64,
}

/// Why a record could not be read from a file.
#[derive(Debug)]
pub enum PackError {
    /// The file could not be read.
    Io(io::Error),
    /// The file is damaged (or holds no record of the key).
    Corrupt(Corrupt),
}

impl From<Corrupt> for PackError {
    fn from(c: Corrupt) -> PackError {
        PackError::Corrupt(c)
    }
}

/// Whether bytes read from the start of a file begin a pack.
pub fn is_pack(prefix: &[u8]) -> bool {
    prefix.starts_with(&PACK_MAGIC)
}

/// The length of a pack's index (fixed part, entries, checksum).
fn index_len(count: usize) -> usize {
    FIXED_LEN + count * ENTRY_LEN + SUM_LEN
}

/// A pack of encoded records, each under its key, in the order given.
/// The caller keeps within [`MAX_PACK_RECORDS`] (see [`chunks`]).
pub fn encode(records: &[(Key, &[u8])]) -> Vec<u8> {
    let head = index_len(records.len());
    let total = head + records.iter().map(|(_, r)| r.len()).sum::<usize>();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&PACK_MAGIC);
    out.extend_from_slice(&PACK_VERSION.to_le_bytes());
    out.extend_from_slice(&(records.len() as u32).to_le_bytes());
    let mut offset = head as u64;
    for (key, bytes) in records {
        out.extend_from_slice(&key.0);
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        offset += bytes.len() as u64;
    }
    let sum = blake3::hash(&out);
    out.extend_from_slice(sum.as_bytes());
    for (_, bytes) in records {
        out.extend_from_slice(bytes);
    }
    out
}

/// Splits records of these lengths, in order, into the runs a writer
/// packs: at most [`MAX_PACK_RECORDS`] records and [`MAX_PACK_LEN`] bytes
/// each (a larger record alone).
pub fn chunks(lens: &[u64]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0u64);
    for (i, &len) in lens.iter().enumerate() {
        let full = i - start == MAX_PACK_RECORDS || (i > start && bytes + len > MAX_PACK_LEN);
        if full {
            out.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += len;
    }
    if start < lens.len() {
        out.push(start..lens.len());
    }
    out
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

/// Reads `len` bytes at `offset`; a file shorter than that (cut short
/// meanwhile) is damage, not an I/O error.
fn read_at(file: &File, offset: u64, len: usize, file_len: u64) -> Result<Vec<u8>, PackError> {
    let mut buf = vec![0u8; len];
    match file.read_exact_at(&mut buf, offset) {
        Ok(()) => Ok(buf),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(Corrupt::TooShort { len: file_len }.into()),
        Err(e) => Err(PackError::Io(e)),
    }
}

/// Where `key`'s record lies in the pack `file` of `file_len` bytes: the
/// index checked (magic, version, count, checksum), the entry's offset
/// and length within the file, after the index and no longer than a
/// record may be.
pub fn locate(file: &File, file_len: u64, key: &Key) -> Result<Slice, PackError> {
    if file_len < index_len(0) as u64 {
        return Err(Corrupt::TooShort { len: file_len }.into());
    }
    let fixed = read_at(file, 0, FIXED_LEN, file_len)?;
    if !is_pack(&fixed) {
        return Err(Corrupt::BadMagic.into());
    }
    let version = u32_at(&fixed, 8);
    if version != PACK_VERSION {
        return Err(Corrupt::BadVersion { found: version }.into());
    }
    let count = u32_at(&fixed, 12) as usize;
    let head = index_len(count.min(MAX_PACK_RECORDS + 1)) as u64;
    if count > MAX_PACK_RECORDS || head > file_len {
        return Err(Corrupt::LengthMismatch { declared: head, actual: file_len }.into());
    }
    let index = read_at(file, 0, head as usize, file_len)?;
    let body = head as usize - SUM_LEN;
    if blake3::hash(&index[..body]).as_bytes()[..] != index[body..] {
        return Err(Corrupt::Checksum.into());
    }
    let entry = (0..count).map(|i| FIXED_LEN + i * ENTRY_LEN).find(|&at| index[at..at + 32] == key.0);
    let Some(at) = entry else {
        return Err(Corrupt::KeyMismatch { found: "none (a pack without this key)".into() }.into());
    };
    let slice = Slice { offset: u64_at(&index, at + 32), len: u64_at(&index, at + 40) };
    let end = slice.offset.saturating_add(slice.len);
    if slice.offset < head || end > file_len || slice.len > MAX_RECORD_LEN {
        return Err(Corrupt::LengthMismatch { declared: end, actual: file_len }.into());
    }
    Ok(slice)
}

/// The bytes of a record at `slice` of a pack of `file_len` bytes.
pub fn read_slice(file: &File, slice: Slice, file_len: u64) -> Result<Vec<u8>, PackError> {
    read_at(file, slice.offset, slice.len as usize, file_len)
}

/// The bytes of `key`'s record in the open `file` of `file_len` bytes:
/// its record's slice when the file is a pack, else the file's first
/// `limit` bytes (a plain record; the caller decodes and checks it).
pub fn read_record(file: &File, file_len: u64, key: &Key, limit: u64) -> Result<Vec<u8>, PackError> {
    let mut magic = [0u8; 8];
    let got = read_up_to(file, &mut magic).map_err(PackError::Io)?;
    if is_pack(&magic[..got]) {
        return read_slice(file, locate(file, file_len, key)?, file_len);
    }
    let len = file_len.min(limit);
    let mut buf = vec![0u8; len as usize];
    let got = read_up_to_at(file, &mut buf, 0).map_err(PackError::Io)?;
    buf.truncate(got);
    Ok(buf)
}

/// Reads from the start until `buf` is full or the file ends; how much.
fn read_up_to(file: &File, buf: &mut [u8]) -> io::Result<usize> {
    read_up_to_at(file, buf, 0)
}

fn read_up_to_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The size a link into a pack counts in the cache's size (the scan, the
/// counters, eviction): its own record's length in the pack's index, so
/// that each record of a pack counts once whatever the number of links
/// left; when the index cannot be read (a damaged pack, which its next
/// reader removes), the file's size.
pub fn counted_len(dir: impl AsFd, name: &str, key: &Key, file_size: u64) -> u64 {
    let len = cfs::open_read(dir, name).ok().and_then(|f| locate(&f, file_size, key).ok()).map(|s| s.len);
    len.unwrap_or(file_size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn key(n: u8) -> Key {
        Key([n; 32])
    }

    fn file_of(bytes: &[u8]) -> File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    fn two() -> Vec<u8> {
        encode(&[(key(1), b"first record"), (key(2), b"second")])
    }

    #[test]
    fn each_key_finds_its_own_record() {
        let pack = two();
        let f = file_of(&pack);
        let len = pack.len() as u64;
        assert_eq!(read_record(&f, len, &key(1), MAX_RECORD_LEN).unwrap(), b"first record");
        assert_eq!(read_record(&f, len, &key(2), MAX_RECORD_LEN).unwrap(), b"second");
        assert_eq!(locate(&f, len, &key(2)).unwrap(), Slice { offset: len - 6, len: 6 });
        let missing = locate(&f, len, &key(3)).unwrap_err();
        assert!(matches!(missing, PackError::Corrupt(Corrupt::KeyMismatch { .. })), "{missing:?}");
        // A plain file is read as it is, up to the limit.
        let plain = file_of(b"KILNOBJ\0 and the rest");
        assert_eq!(read_record(&plain, 22, &key(1), 7).unwrap(), b"KILNOBJ");
    }

    #[test]
    fn damage_to_the_index_is_detected_never_trusted() {
        let pack = two();
        let len = pack.len() as u64;
        let corrupt = |bytes: &[u8], file_len: u64| match locate(&file_of(bytes), file_len, &key(1)) {
            Err(PackError::Corrupt(c)) => c,
            other => panic!("{other:?}"),
        };
        // A flipped byte anywhere in the index fails its checksum.
        for at in [8, 12, 20, 16 + 32, 16 + 48 + 40, index_len(2) - 1] {
            let mut b = pack.clone();
            b[at] ^= 0x40;
            let c = corrupt(&b, len);
            assert!(
                matches!(c, Corrupt::Checksum | Corrupt::BadVersion { .. } | Corrupt::LengthMismatch { .. }),
                "{at}: {c:?}"
            );
        }
        // A count past the bound, or an index longer than the file.
        let mut huge = pack.clone();
        huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(corrupt(&huge, len), Corrupt::LengthMismatch { .. }));
        assert!(matches!(corrupt(&pack[..40], 40), Corrupt::TooShort { .. }));
        assert!(matches!(corrupt(&pack[..100], 100), Corrupt::LengthMismatch { .. }));
        // Cut short after the index: the entry runs past the end.
        let cut = index_len(2) as u64 + 5;
        assert!(matches!(corrupt(&pack[..cut as usize], cut), Corrupt::LengthMismatch { .. }));
        // An entry that points into the index, with a valid checksum.
        let mut inward = pack[..index_len(2) - SUM_LEN].to_vec();
        inward[16 + 32..16 + 40].copy_from_slice(&0u64.to_le_bytes());
        let sum = blake3::hash(&inward);
        inward.extend_from_slice(sum.as_bytes());
        inward.extend_from_slice(&pack[index_len(2)..]);
        assert!(matches!(corrupt(&inward, len), Corrupt::LengthMismatch { .. }));
        assert!(matches!(
            corrupt(b"KILNOBJ\0 not a pack at all, long enough to hold an index.", 56),
            Corrupt::BadMagic
        ));
    }

    #[test]
    fn records_are_split_by_count_and_bytes() {
        assert_eq!(chunks(&[]), Vec::<Range<usize>>::new());
        assert_eq!(chunks(&[5, 5, 5]).iter().map(|r| (r.start, r.end)).collect::<Vec<_>>(), [(0, 3)]);
        let big = MAX_PACK_LEN / 2 + 1;
        assert_eq!(chunks(&[big, big, 1, MAX_PACK_LEN * 2, 1]), [0..1, 1..3, 3..4, 4..5]);
        let many = vec![1u64; MAX_PACK_RECORDS * 2 + 1];
        assert_eq!(
            chunks(&many),
            [0..MAX_PACK_RECORDS, MAX_PACK_RECORDS..MAX_PACK_RECORDS * 2, MAX_PACK_RECORDS * 2..many.len()]
        );
    }
}
