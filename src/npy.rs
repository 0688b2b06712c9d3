//! The `.npy` header check and the bounded read of a `.npy` file.
//!
//! Owns: what Kiln accepts as a `.npy` header — the forms numpy (and npyz)
//! write: a flat dict literal with the keys `descr` (a string),
//! `fortran_order` (`True`/`False`) and `shape` (a tuple of decimal
//! integers), in any order, then padding — checked in one left-to-right
//! pass over at most [`MAX_HEADER_LEN`] bytes, before any general parser
//! sees the text. npyz hands the header to `py_literal`, a backtracking
//! parser whose time grows exponentially with nesting (`{{{{...` or
//! `[[[[...`: 12 braces take 1.8 s, 16 more than 20 s; see
//! `docs/fuzzing.md`), so only headers that passed this check reach it.
//! Also owns [`read_file`]: a `.npy` file is read only if it is a regular
//! file, and only as many bytes as its header says it holds.
//!
//! Must never: read more of a file than its header and `fstat` allow, open
//! a device or FIFO for reading (opening is non-blocking, and anything but
//! a regular file is refused before a byte is read), backtrack, or print.

use crate::ir::Scalar;
use std::io::Read;
use std::path::Path;

/// The longest header accepted, in bytes: numpy's own default
/// `max_header_size` (numpy refuses longer headers unless told to trust
/// the file). A header numpy writes for any shape of up to 32 dimensions
/// is a few hundred bytes.
pub const MAX_HEADER_LEN: usize = 10_000;

/// The most dimensions a shape may have (numpy's `NPY_MAXDIMS`).
pub const MAX_DIMS: usize = 64;

const MAGIC: &[u8] = b"\x93NUMPY";

/// What a checked header says.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The dtype as written (`<f4`).
    pub descr: String,
    /// The element type, when the dtype is one of Kiln's (`b1`, `i1` …
    /// `i8`, `u1` … `u8`, `f2`, `f4`, `f8`).
    pub elem: Option<Scalar>,
    pub fortran_order: bool,
    pub shape: Vec<u64>,
    /// Where the data starts: the magic, version, length and header.
    pub data_start: usize,
}

impl Header {
    /// The number of data bytes the header promises, if the dtype is
    /// Kiln's and the count fits in a u64.
    pub fn data_len(&self) -> Option<u64> {
        self.count()?.checked_mul(self.elem?.size_bytes() as u64)
    }

    /// The number of elements, if it fits in a u64.
    pub fn count(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
    }

    /// Checks that the shape's element count fits in a u64 (npyz multiplies
    /// the dimensions unchecked, which panics or wraps).
    pub fn check_count(&self) -> Result<(), String> {
        match self.count() {
            Some(_) => Ok(()),
            None => {
                let dims: Vec<String> = self.shape.iter().map(u64::to_string).collect();
                Err(format!("its shape ({}) has more than 2^64 elements", dims.join(", ")))
            }
        }
    }

    /// `f32[4, 4]`, or `dtype <u2 [4, 4]` for a dtype Kiln does not have.
    pub fn type_string(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(u64::to_string).collect();
        match self.elem {
            Some(e) if dims.is_empty() => e.to_string(),
            Some(e) => format!("{e}[{}]", dims.join(", ")),
            None => format!("dtype {} [{}]", self.descr, dims.join(", ")),
        }
    }
}

/// Checks the header at the start of `file` (the whole file or any prefix
/// that holds the header). Linear in the header's length, which is capped.
pub fn header(file: &[u8]) -> Result<Header, String> {
    if file.get(..MAGIC.len()) != Some(MAGIC) {
        return Err("it does not start with the .npy magic \\x93NUMPY".into());
    }
    let (start, len) = match (file.get(6), file.get(7)) {
        (Some(1), Some(0)) => (10, file.get(8..10).map(|l| u16::from_le_bytes([l[0], l[1]]) as usize)),
        (Some(2 | 3), Some(0)) => (12, file.get(8..12).map(|l| u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize)),
        (Some(major), Some(minor)) => {
            return Err(format!("format version {major}.{minor} is not one numpy writes (1.0, 2.0 or 3.0)"))
        }
        _ => (0, None),
    };
    let len = len.ok_or("it ends inside its preamble")?;
    if len > MAX_HEADER_LEN {
        return Err(format!("its header is {len} bytes long, more than the {MAX_HEADER_LEN} numpy reads"));
    }
    let text = file.get(start..start + len).ok_or("it ends inside its header")?;
    // numpy ends the header with one newline; the rest is spaces.
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let mut h = Dict::parse(text)?;
    h.data_start = start + len;
    Ok(h)
}

/// The header's dict, read by a cursor that never goes back.
struct Dict<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Dict<'a> {
    fn parse(s: &'a [u8]) -> Result<Header, String> {
        let mut c = Dict { s, i: 0 };
        let (mut descr, mut fortran, mut shape) = (None, None, None);
        c.expect(b'{', "the header is not a dict")?;
        while !c.eat(b'}') {
            let key = c.string().map_err(|e| format!("a key of the header dict: {e}"))?;
            c.expect(b':', "a key without ':'")?;
            let dup = match key {
                "descr" => descr.replace(c.descr()?).is_some(),
                "fortran_order" => fortran.replace(c.boolean()?).is_some(),
                "shape" => shape.replace(c.shape()?).is_some(),
                other => return Err(format!("its header has the key '{other}', which numpy does not write")),
            };
            if dup {
                return Err(format!("its header has the key '{key}' twice"));
            }
            if !c.eat(b',') {
                c.expect(b'}', "the header dict does not end with '}'")?;
                break;
            }
        }
        c.ws();
        if c.i != s.len() {
            return Err("its header holds more than a dict and padding".into());
        }
        let missing = |k: &str| format!("its header has no '{k}'");
        let descr: String = descr.ok_or_else(|| missing("descr"))?;
        Ok(Header {
            elem: kiln_elem(&descr),
            descr,
            fortran_order: fortran.ok_or_else(|| missing("fortran_order"))?,
            shape: shape.ok_or_else(|| missing("shape"))?,
            data_start: 0,
        })
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        // Blanks within a line only: npyz's parser takes no line breaks.
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\x0c')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.ws();
        let hit = self.peek() == Some(b);
        self.i += usize::from(hit);
        hit
    }

    fn expect(&mut self, b: u8, what: &str) -> Result<(), String> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(format!("{what} (at byte {} of the header)", self.i))
        }
    }

    /// A quoted string without escapes, as `repr` writes dtype names and
    /// keys.
    fn string(&mut self) -> Result<&'a str, String> {
        self.ws();
        let q = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("not a quoted string (at byte {} of the header)", self.i)),
        };
        let from = self.i + 1;
        let len = self.s[from..].iter().position(|&b| b == q).ok_or("an unterminated string")?;
        let body = &self.s[from..from + len];
        self.i = from + len + 1;
        if body.iter().any(|b| !b.is_ascii_graphic() || *b == b'\\') {
            return Err("a string with escapes or characters numpy does not write".into());
        }
        std::str::from_utf8(body).map_err(|_| "a string that is not ASCII".to_string())
    }

    fn descr(&mut self) -> Result<String, String> {
        self.ws();
        if self.peek() == Some(b'[') {
            return Err("its dtype is a structured (record) dtype, which no field has".into());
        }
        Ok(self.string().map_err(|e| format!("'descr': {e}"))?.to_string())
    }

    fn boolean(&mut self) -> Result<bool, String> {
        self.ws();
        let rest = &self.s[self.i..];
        let (v, n) = match () {
            _ if rest.starts_with(b"True") => (true, 4),
            _ if rest.starts_with(b"False") => (false, 5),
            _ => return Err("'fortran_order' is neither True nor False".into()),
        };
        self.i += n;
        Ok(v)
    }

    /// `()`, `(3,)`, `(3, 4)`, `(3, 4, )`: a tuple of decimal integers.
    fn shape(&mut self) -> Result<Vec<u64>, String> {
        self.expect(b'(', "'shape' is not a tuple")?;
        let mut dims = Vec::new();
        let mut comma = false;
        while !self.eat(b')') {
            if dims.len() == MAX_DIMS {
                return Err(format!("its shape has more than {MAX_DIMS} dimensions"));
            }
            dims.push(self.uint()?);
            comma = self.eat(b',');
            if !comma {
                self.expect(b')', "'shape' is not a tuple of integers")?;
                break;
            }
        }
        if dims.len() == 1 && !comma {
            return Err("'shape' is not a tuple (a one-element tuple needs a comma)".into());
        }
        Ok(dims)
    }

    fn uint(&mut self) -> Result<u64, String> {
        self.ws();
        let from = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) && self.i - from <= 20 {
            self.i += 1;
        }
        let digits = std::str::from_utf8(&self.s[from..self.i]).unwrap_or_default();
        if digits.is_empty() {
            return Err(format!("'shape' holds something other than integers (at byte {from} of the header)"));
        }
        digits.parse().map_err(|_| format!("a dimension of 'shape' ({digits}...) does not fit in 64 bits"))
    }
}

/// The field element type of a dtype name: a byte order (`<`, `>`, or `|`
/// for one-byte types only, as npyz insists; npyz has no `=`) and `b1`,
/// `i1`, `i2`, `i4`, `i8`, `u1`, `u2`, `u4`, `u8`, `f2`, `f4` or `f8` (numpy's
/// `i8` is KIR's `i64`, its `i1` KIR's `i8`).
fn kiln_elem(descr: &str) -> Option<Scalar> {
    let (order, t) = (descr.get(..1)?, descr.get(1..)?);
    // Found by fuzzing: npyz refuses `=`.
    if !matches!(order, "<" | ">" | "|") {
        return None;
    }
    Some(match t {
        "b1" => Scalar::I1,
        "i1" => Scalar::I8,
        "u1" => Scalar::U8,
        // Found by fuzzing: npyz refuses `|` on a multi-byte type.
        _ if order == "|" => return None,
        "i2" => Scalar::I16,
        "i4" => Scalar::I32,
        "i8" => Scalar::I64,
        "u2" => Scalar::U16,
        "u4" => Scalar::U32,
        "u8" => Scalar::U64,
        "f2" => Scalar::F16,
        "f4" => Scalar::F32,
        "f8" => Scalar::F64,
        _ => return None,
    })
}

/// Why [`read_file`] failed: the file could not be read, or it is not
/// what it must be (the message says why).
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    Invalid(String),
}

impl From<String> for ReadError {
    fn from(m: String) -> Self {
        ReadError::Invalid(m)
    }
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// Reads a `.npy` file, bounded by what it can legitimately be: refuses
/// anything but a regular file before reading a byte (opened non-blocking,
/// so a FIFO cannot hang the open), reads at most the longest header,
/// calls `check` on it (to compare it with the field it is for), and then
/// reads exactly the data the header promises, which must be what `fstat`
/// says the file holds. Returns the whole file.
pub fn read_file(path: &Path, check: impl FnOnce(&Header) -> Result<(), String>) -> Result<Vec<u8>, ReadError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let mut f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path)?;
    let meta = f.metadata()?;
    let ft = meta.file_type();
    let kind = match () {
        _ if ft.is_file() => None,
        // What reading a directory says elsewhere (`is a directory`).
        _ if ft.is_dir() => return Err(std::io::Error::from_raw_os_error(libc::EISDIR).into()),
        _ if ft.is_fifo() => Some("a FIFO"),
        _ if ft.is_char_device() => Some("a character device"),
        _ if ft.is_block_device() => Some("a block device"),
        _ if ft.is_socket() => Some("a socket"),
        _ => Some("not a regular file"),
    };
    if let Some(kind) = kind {
        return Err(format!("it is {kind}, not a regular .npy file").into());
    }
    let mut buf = Vec::new();
    (&mut f).take(12 + MAX_HEADER_LEN as u64).read_to_end(&mut buf)?;
    let h = header(&buf).map_err(|e| format!("not a valid .npy file: {e}"))?;
    check(&h)?;
    let total =
        h.data_len().and_then(|n| n.checked_add(h.data_start as u64)).ok_or("its shape is too large".to_string())?;
    if meta.len() != total {
        return Err(format!(
            "not a valid .npy file: it is {} bytes long, its header describes {total} ({} of header, {} of data)",
            meta.len(),
            h.data_start,
            total - h.data_start as u64
        )
        .into());
    }
    let rest = total.saturating_sub(buf.len() as u64);
    buf.try_reserve_exact(rest as usize).map_err(|_| format!("cannot allocate {total} bytes to read it"))?;
    (&mut f).take(rest).read_to_end(&mut buf)?;
    buf.truncate(total as usize);
    if buf.len() as u64 != total {
        return Err("it became shorter while it was read".to_string().into());
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(text: &str) -> Vec<u8> {
        let mut v = b"\x93NUMPY\x01\x00".to_vec();
        v.extend((text.len() as u16).to_le_bytes());
        v.extend(text.as_bytes());
        v
    }

    #[test]
    fn accepts_what_numpy_and_npyz_write() {
        let h = header(&npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }      \n")).unwrap();
        assert_eq!((h.elem, h.fortran_order, h.shape.as_slice()), (Some(Scalar::F32), false, &[3, 4][..]));
        let h = header(&npy("{'descr': '|b1', 'fortran_order': True, 'shape': (5,), }\n")).unwrap();
        assert_eq!((h.elem, h.fortran_order, h.shape.as_slice()), (Some(Scalar::I1), true, &[5][..]));
        let text = "{\"shape\": (), \"descr\": \">i8\", \"fortran_order\": False}";
        let h = header(&npy(text)).unwrap();
        assert_eq!((h.elem, h.shape.len(), h.data_start), (Some(Scalar::I64), 0, 10 + text.len()));
        assert_eq!(
            header(&npy("{'descr': '<c8', 'fortran_order': False, 'shape': (2,)}")).unwrap().type_string(),
            "dtype <c8 [2]"
        );
        assert_eq!(header(&npy("{'descr': '|i4', 'fortran_order': False, 'shape': (2,)}")).unwrap().elem, None);
        assert_eq!(header(&npy("{'descr': '=i4', 'fortran_order': False, 'shape': (2,)}")).unwrap().elem, None);
    }

    #[test]
    fn rejects_what_numpy_does_not_write() {
        for (text, want) in [
            ("{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{", "a key of the header dict"),
            ("[[[[[[[[[[[[[[[[[[[[[[[[[[", "not a dict"),
            ("{'a':{'a':{'a':{'a':{'a':", "the key 'a'"),
            ("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", "structured"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "one-element tuple"),
            ("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "neither True nor False"),
            ("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "twice"),
            ("{'descr': '<f4', 'shape': (2,)}", "no 'fortran_order'"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", "more than a dict"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}", "64 bits"),
            ("{'descr': '<\\x66', 'fortran_order': False, 'shape': (2,)}", "escapes"),
            // Found by the fuzz replay: npyz takes one final newline, no other.
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\n \n", "more than a dict"),
            ("{'descr': '<f4',\n 'fortran_order': False, 'shape': (2,)}", "not a quoted string"),
        ] {
            let e = header(&npy(text)).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
        let long = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}}{}", " ".repeat(MAX_HEADER_LEN));
        assert!(header(&npy(&long)).unwrap_err().contains("more than the 10000"));
        assert!(header(b"\x93NUMPY\x02\x00\xff\xff\xff\xff").unwrap_err().contains("more than the 10000"));
        assert!(header(b"\x93NUMPY\x01").unwrap_err().contains("preamble"));
        // Found by the fuzz replay: npyz refuses any minor version but 0.
        assert!(header(b"\x93NUMPY\x01\x37\x00\x00").unwrap_err().contains("version 1.55"));
        assert!(header(b"PK\x03\x04").unwrap_err().contains("magic"));
    }

    #[test]
    fn data_len_is_checked_arithmetic() {
        let h = header(&npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}")).unwrap();
        assert_eq!(h.data_len(), None);
        let h = header(&npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 0)}")).unwrap();
        assert_eq!(h.data_len(), Some(0));
    }
}
