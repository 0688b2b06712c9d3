//! What the engines share: field storage, kernel arguments and run-time
//! errors.
//!
//! Owns: [`Fields`] (every field of a program as little-endian bytes, the
//! layout both the interpreter and the JIT read and write), the digest of a
//! field, the [`Engine`] trait `kiln-run` drives, and the text of a
//! `print` ([`print_text`]) with the bound on a run's lines
//! ([`MAX_PRINT_LINES`]), which both engines use.
//!
//! Must never: execute anything itself, or print.

use crate::ir::{Const, Field, Name, Scalar, Span, Stream};
use std::collections::BTreeMap;
use std::fmt;

/// Fields with more elements than this are summarised by `--print`
/// (numpy's default threshold).
pub const SUMMARY_THRESHOLD: usize = 1000;

/// One field's storage: dense, row-major, little-endian elements.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldData {
    pub elem: Scalar,
    pub shape: Vec<u64>,
    pub bytes: Storage,
}

/// A field's bytes: owned, or memory its caller lends for a run (a numpy
/// array's, through the Python module), which the engines read and write
/// in place. Either reads as a `[u8]`.
pub struct Storage(Repr);

enum Repr {
    Owned(Vec<u8>),
    /// `len` bytes at `ptr`, lent by the caller of [`Storage::lent`].
    Lent {
        ptr: std::ptr::NonNull<u8>,
        len: usize,
    },
}

// SAFETY: a lent storage is an exclusive loan of its bytes, as a
// `&mut [u8]` is, which may move to and be used from another thread.
unsafe impl Send for Storage {}
// SAFETY: shared access only reads the bytes, as a `&[u8]` does.
unsafe impl Sync for Storage {}

impl Storage {
    /// The `len` bytes at `ptr`, lent: reads and writes go to them.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes of `len` bytes, and
    /// nothing else may read or write them, for as long as this storage
    /// (or a value it is moved into) lives.
    pub unsafe fn lent(ptr: std::ptr::NonNull<u8>, len: usize) -> Storage {
        Storage(Repr::Lent { ptr, len })
    }
    /// Whether the bytes are lent (see [`Storage::lent`]).
    pub fn is_lent(&self) -> bool {
        matches!(self.0, Repr::Lent { .. })
    }
}

impl From<Vec<u8>> for Storage {
    fn from(v: Vec<u8>) -> Storage {
        Storage(Repr::Owned(v))
    }
}

impl Default for Storage {
    fn default() -> Storage {
        Storage(Repr::Owned(Vec::new()))
    }
}

impl std::ops::Deref for Storage {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Owned(v) => v,
            // SAFETY: `lent`'s contract: valid, and ours alone, while we live.
            Repr::Lent { ptr, len } => unsafe { std::slice::from_raw_parts(ptr.as_ptr(), *len) },
        }
    }
}

impl std::ops::DerefMut for Storage {
    fn deref_mut(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Repr::Owned(v) => v,
            // SAFETY: as in `deref`; `&mut self` makes the access exclusive.
            Repr::Lent { ptr, len } => unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), *len) },
        }
    }
}

/// A copy is owned: a loan is never shared.
impl Clone for Storage {
    fn clone(&self) -> Storage {
        Storage::from(self.to_vec())
    }
}

impl PartialEq for Storage {
    fn eq(&self, other: &Storage) -> bool {
        **self == **other
    }
}

impl fmt::Debug for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_lent() { "lent" } else { "owned" };
        write!(f, "Storage({kind}, {} bytes)", self.len())
    }
}

impl FieldData {
    /// A zero-filled field of this declaration.
    pub fn zeroed(f: &Field) -> FieldData {
        FieldData { elem: f.elem, shape: f.shape.clone(), bytes: vec![0; f.size_bytes() as usize].into() }
    }
    /// A zero-filled field, or an error naming it when its bytes cannot be
    /// allocated: a field the verifier accepts (up to 1 TiB) may still not
    /// fit in this machine's memory, and that is bad input, not an abort.
    pub fn try_zeroed(f: &Field) -> Result<FieldData, String> {
        let n = f.size_bytes();
        let bytes = usize::try_from(n).ok().and_then(zeroed_bytes).ok_or_else(|| {
            let data = FieldData { elem: f.elem, shape: f.shape.clone(), bytes: Storage::default() };
            format!("cannot allocate field @{} : {} ({n} bytes): out of memory", f.name, data.type_string())
        })?;
        Ok(FieldData { elem: f.elem, shape: f.shape.clone(), bytes: bytes.into() })
    }
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product::<u64>() as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `blake3:HEX` over the little-endian bytes.
    pub fn digest(&self) -> String {
        format!("blake3:{}", blake3::hash(&self.bytes).to_hex())
    }
    /// The type as printed in digests and listings: `f32[64, 64]`, `f64`.
    pub fn type_string(&self) -> String {
        if self.shape.is_empty() {
            self.elem.to_string()
        } else {
            let dims: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
            format!("{}[{}]", self.elem, dims.join(", "))
        }
    }
}

/// `n` zero bytes, or `None` when the allocator refuses them. Like
/// `vec![0; n]` the memory comes zeroed from the allocator (untouched pages
/// cost nothing), but a refusal is returned instead of aborting the process.
fn zeroed_bytes(n: usize) -> Option<Vec<u8>> {
    if n == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(n).ok()?;
    // SAFETY: `layout` has a non-zero size. On success the pointer owns `n`
    // initialised (zero) bytes allocated by the global allocator with the
    // layout `Vec<u8>` of capacity `n` uses, so the Vec may own and free it.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout);
        if p.is_null() {
            None
        } else {
            Some(Vec::from_raw_parts(p, n, n))
        }
    }
}

/// Every field of a program, by name (sorted, so listings never churn).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fields {
    pub map: BTreeMap<Name, FieldData>,
}

impl Fields {
    /// Zeroed storage for every field declared in any module of the stream
    /// (modules of a split stream repeat the fields they share; the first
    /// declaration wins, and the verifier checks that they agree).
    pub fn zeroed(stream: &Stream) -> Fields {
        let mut map = BTreeMap::new();
        for m in &stream.modules {
            for f in m.fields() {
                map.entry(f.name.clone()).or_insert_with(|| FieldData::zeroed(f));
            }
        }
        Fields { map }
    }
    /// Every field of the stream, zero-filled, or an error naming the first
    /// that cannot be allocated (see [`FieldData::try_zeroed`]).
    pub fn try_zeroed(stream: &Stream) -> Result<Fields, String> {
        let mut map = BTreeMap::new();
        for m in &stream.modules {
            for f in m.fields() {
                if !map.contains_key(&f.name) {
                    map.insert(f.name.clone(), FieldData::try_zeroed(f)?);
                }
            }
        }
        Ok(Fields { map })
    }
    /// Adds zeroed storage for each field of `used` (name, element type,
    /// shape) the map lacks: the kernel-scoped temporaries offload made,
    /// which exist for one run. Returns their names, for
    /// [`Fields::drop_temporaries`] after it.
    pub fn add_temporaries<'a>(
        &mut self,
        used: impl IntoIterator<Item = (&'a str, Scalar, &'a [u64])>,
    ) -> Result<Vec<Name>, RunError> {
        let mut temps = Vec::new();
        for (name, elem, shape) in used {
            if self.map.contains_key(name) {
                continue;
            }
            let decl = Field { name: name.into(), elem, shape: shape.to_vec(), span: Span::DUMMY };
            self.map.insert(decl.name.clone(), FieldData::try_zeroed(&decl).map_err(RunError::new)?);
            temps.push(decl.name);
        }
        Ok(temps)
    }
    /// Drops what [`Fields::add_temporaries`] added.
    pub fn drop_temporaries(&mut self, temps: Vec<Name>) {
        for n in temps {
            self.map.remove(&n);
        }
    }
    /// The value of the 0-D field `name` (`@n[]`), if it has storage.
    pub fn scalar(&self, name: &str) -> Option<Const> {
        self.map.get(name).filter(|d| d.shape.is_empty()).and_then(|d| d.element(0))
    }
    pub fn get(&self, name: &str) -> Option<&FieldData> {
        self.map.get(name)
    }
    /// The fields' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(|k| k.as_ref())
    }
    pub fn get_mut(&mut self, name: &str) -> Option<&mut FieldData> {
        self.map.get_mut(name)
    }
}

/// An error while running a kernel (out-of-bounds access, a bad argument).
#[derive(Clone, Debug, PartialEq)]
pub struct RunError {
    pub message: String,
    /// The statement that failed, for an error of one statement (an
    /// out-of-bounds access): its span in the text the stream was parsed
    /// from. `None` for errors of a launch or a run as a whole, and for
    /// statements a pass made without source text.
    pub at: Option<Span>,
    /// The data races the interpreter's `--check-races` found, when they
    /// are the error (a tool renders them against the source).
    pub races: Option<Box<crate::races::RaceReport>>,
}

impl RunError {
    pub fn new(message: impl Into<String>) -> RunError {
        RunError { message: message.into(), at: None, races: None }
    }
    /// The error of a launch in which data races were found.
    pub fn races(report: crate::races::RaceReport) -> RunError {
        RunError { message: report.to_string(), at: None, races: Some(Box::new(report)) }
    }

    /// This error located at statement span `at` (a dummy span, which has
    /// no text, leaves it unlocated).
    pub fn at(mut self, at: Option<Span>) -> RunError {
        self.at = at.filter(|s| s.end > s.start);
        self
    }

    /// The error as a diagnostic of the source the stream was parsed from
    /// (`FILE:LINE:COL: error: ...` with the statement's line and a caret
    /// when it is located).
    pub fn diagnostic(&self) -> crate::diag::Diagnostic {
        match self.at {
            Some(span) => crate::diag::Diagnostic::error(self.message.clone(), span),
            None => crate::diag::Diagnostic::error_nospan(self.message.clone()),
        }
    }

    /// The error as diagnostics of the source the stream was parsed from:
    /// a race report's (one per race), or this one's; each statement it
    /// names also at the place `origin` says it came from (the Python line
    /// of a statement with a `loc`, see [`crate::ir::Stream::locs`]).
    pub fn diagnostics(
        &self,
        src: &crate::diag::SourceFile,
        origin: &dyn Fn(Span) -> Option<crate::diag::Elsewhere>,
    ) -> crate::diag::Diagnostics {
        if let Some(report) = &self.races {
            return report.diagnostics_with(src, origin);
        }
        let d = self.diagnostic();
        match self.at.and_then(origin) {
            Some(place) => d.with_note_elsewhere("the statement was imported from here", place).into(),
            None => d.into(),
        }
    }
}

/// The out-of-bounds error both engines report, in one wording: `index`
/// is the first out-of-range index of the access (dimension `dim`); `task`
/// is `None` outside tasks (printed `-`).
pub fn out_of_bounds(kernel: &str, task: Option<&str>, field: &str, shape: &[u64], index: i64, dim: usize) -> RunError {
    let task = task.map_or_else(|| "-".to_string(), |t| format!("@{t}"));
    let shape: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    RunError::new(format!(
        "kernel @{kernel}, task {task}: index {index} out of bounds for field @{field} of shape [{}] (dimension {dim})",
        shape.join(", ")
    ))
}

/// A failed `assert` of `kernel` (in `task`, when in one), worded the same
/// by every engine.
pub fn assertion_failed(kernel: &str, task: Option<&str>, message: &str) -> RunError {
    let task = task.map_or_else(|| "-".to_string(), |t| format!("@{t}"));
    RunError::new(format!("kernel @{kernel}, task {task}: assertion failed: {message}"))
}

/// An `assert`'s message with its `%` conversions filled from `args`
/// (each a value's type and its bits), in order, as printf would: flags,
/// width, precision and length letters are read and ignored; an integer
/// conversion shows the value in decimal (`%x`/`%X` in hex, of its bits), a
/// float one (`%f %e %g`, any case) as KIR writes the literal (the shortest
/// text that reads back), whatever the conversion letter says of the
/// type; `%%` is a `%`. A conversion with no value left stays as written.
pub fn assert_message(message: &str, args: &[(Scalar, u64)]) -> String {
    let mut out = String::with_capacity(message.len());
    let mut args = args.iter();
    let mut rest = message;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let spec = &rest[at + 1..];
        let len = spec.find(|c: char| c.is_ascii_alphabetic() && !"hljztL".contains(c) || c == '%').map(|i| i + 1);
        let Some(len) = len.filter(|&n| spec[..n - 1].bytes().all(|b| b"-+ #0123456789.hljztL".contains(&b))) else {
            out.push('%');
            rest = spec;
            continue;
        };
        let conv = spec.as_bytes()[len - 1];
        if conv == b'%' {
            // `%%`, or a `%` the next conversion's `%` ends: kept as text.
            out.push_str(if len == 1 { "%" } else { &rest[at..at + len] });
            rest = &spec[len - usize::from(len > 1)..];
            continue;
        }
        match (conv, args.next()) {
            (b'x' | b'X', Some(&(ty, bits))) if ty.is_int() => {
                let v = ty.wrap_bits(bits);
                out.push_str(&if conv == b'x' { format!("{v:x}") } else { format!("{v:X}") });
            }
            (_, Some(&(ty, bits))) => out.push_str(&scalar_text(ty, bits)),
            (_, None) => out.push_str(&rest[at..at + 1 + len]),
        }
        rest = &spec[len..];
    }
    out.push_str(rest);
    out
}

/// A value of type `ty` with `bits` (an integer's at least zero-extended
/// to its width), as KIR writes a literal (`printer::fmt_const`).
fn scalar_text(ty: Scalar, bits: u64) -> String {
    let bits = if ty.is_float() { bits } else { ty.wrap_bits(bits) };
    crate::printer::fmt_const(Const { ty, bits })
}

/// The most lines (executed `print` statements) one run of a kernel may
/// print, all its launches together. A run that prints more fails with
/// [`too_much_output`] and none of its lines are kept: the bound keeps
/// memory finite (a launch's lines are held until it ends, to be put in
/// iteration order), and an error says so where a silent cut would lose
/// lines. Per run, not per launch, so that the interpreter (which runs a
/// kernel without splitting it into launches) fails exactly when the JIT
/// does, with the same lines (none).
pub const MAX_PRINT_LINES: usize = 1 << 20;

/// The error of a run of `kernel` that printed more than
/// [`MAX_PRINT_LINES`] lines.
pub fn too_much_output(kernel: &str) -> RunError {
    RunError::new(format!(
        "kernel @{kernel}: printed more than {MAX_PRINT_LINES} lines in one run (none of them is kept)"
    ))
}

/// The text a `print` appends: its pieces in order, each string as it is
/// and each value (its type and bits, from `values` in order) as
/// [`print_value`] writes it. A value missing from `values` is written
/// as nothing.
pub fn print_text(pieces: &[crate::ir::PrintPiece], mut values: impl Iterator<Item = (Scalar, u64)>) -> String {
    let mut out = String::new();
    for p in pieces {
        match p {
            crate::ir::PrintPiece::Str(text) => out.push_str(text),
            crate::ir::PrintPiece::Value(_) => {
                if let Some((ty, bits)) = values.next() {
                    out.push_str(&print_value(ty, bits))
                }
            }
        }
    }
    out
}

/// A value as Quadrants' `print` writes it (printf's conversions on the
/// CPU): an integer in decimal (`i1` as 0 or 1), an `f32` as `%f` and an
/// `f64` as `%.12f` of its value, infinities as `inf`/`-inf` and NaN as
/// `nan` (`-nan` with its sign bit set), as glibc's printf does. `bits`
/// are an integer's at least zero-extended to its width, or a float's.
pub fn print_value(ty: Scalar, bits: u64) -> String {
    if !ty.is_float() {
        return ty.int_value(bits).to_string();
    }
    let (v, digits) = match ty {
        // Quadrants prints an f16 as the f32 it widens to.
        Scalar::F16 => (half::f16::from_bits(bits as u16).to_f64(), 6),
        Scalar::F32 => (f32::from_bits(bits as u32) as f64, 6),
        _ => (f64::from_bits(bits), 12),
    };
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if v.is_nan() {
        format!("{sign}nan")
    } else if v.is_infinite() {
        format!("{sign}inf")
    } else {
        // Rust's fixed-precision formatting is exact and rounds half to
        // even, as glibc's printf does (in its default rounding mode).
        format!("{v:.digits$}")
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RunError {}

/// Something that runs kernels of a verified stream over field storage.
pub trait Engine {
    /// Runs kernel `kernel` of `stream` with `args` (one per kernel
    /// parameter, in order, already of the parameter's type).
    fn run_kernel(
        &mut self,
        stream: &Stream,
        kernel: &str,
        args: &[Const],
        fields: &mut Fields,
    ) -> Result<(), RunError>;

    /// Runs each of `runs` (a kernel of `stream` and its arguments) in
    /// order, up to the first error. An engine may work out what the runs
    /// share once, not once per run: a program of many kernels then costs
    /// what its kernels cost, not their number times the program's size.
    fn run_kernels(&mut self, stream: &Stream, runs: &[(&str, &[Const])], fields: &mut Fields) -> Result<(), RunError> {
        runs.iter().try_for_each(|(kernel, args)| self.run_kernel(stream, kernel, args, fields))
    }

    /// The text each `print` executed since the last call appended, in
    /// order (`docs/runtime.md`, "Printing"): launches in the order they
    /// ran, a parallel launch's lines in iteration order, one iteration's
    /// in program order. A run that failed keeps the lines of its launches
    /// before the failure, and of the failed launch those it printed before
    /// (none after [`too_much_output`]).
    fn take_printed(&mut self) -> Vec<String>;
}

// ---------------------------------------------------------------------------
// Reading and showing field values: digests, text, `.npy` files, arguments.

impl FieldData {
    /// One `--digest` line: `@y f32[1024] blake3:HEX`.
    pub fn digest_line(&self, name: &str) -> String {
        format!("@{name} {} {}", self.type_string(), self.digest())
    }

    /// Element `i` (row-major) as a constant; `None` past the end.
    pub fn element(&self, i: usize) -> Option<Const> {
        let size = self.elem.size_bytes();
        let b = self.bytes.get(i * size..(i + 1) * size)?;
        let mut raw = [0u8; 8];
        raw[..size].copy_from_slice(b);
        let bits = u64::from_le_bytes(raw);
        Some(Const { ty: self.elem, bits: if self.elem == Scalar::I1 { (bits != 0) as u64 } else { bits } })
    }

    /// The values as text, nested by dimension: `[[1, 2], [3, 4]]`, a bare
    /// literal for a 0-D field. Literals are KIR's (`printer::fmt_const`), so
    /// floats read back to the same bits.
    pub fn format_values(&self) -> String {
        self.format_summary(None)
    }

    /// [`FieldData::format_values`], summarised as numpy prints a large
    /// array when `edge` is `Some(n)`: in every dimension longer than `2n`,
    /// the first and last `n` entries with `...` between them. `None`
    /// prints every value.
    pub fn format_summary(&self, edge: Option<usize>) -> String {
        fn go(d: &FieldData, edge: Option<usize>, dim: usize, start: usize, out: &mut String) {
            if dim == d.shape.len() {
                let c = d.element(start).unwrap_or(Const { ty: d.elem, bits: 0 });
                out.push_str(&crate::printer::fmt_const(c));
                return;
            }
            let inner: usize = d.shape[dim + 1..].iter().product::<u64>() as usize;
            let n = d.shape[dim] as usize;
            let elided = edge.filter(|e| n > 2 * e);
            out.push('[');
            for k in 0..n {
                if let Some(e) = elided {
                    if k == e {
                        out.push_str(", ...");
                    }
                    if k >= e && k < n - e {
                        continue;
                    }
                }
                if k > 0 {
                    out.push_str(", ");
                }
                go(d, edge, dim + 1, start + k * inner, out);
            }
            out.push(']');
        }
        let mut out = String::new();
        go(self, edge, 0, 0, &mut out);
        out
    }

    /// What `kiln-run --print` shows: every value up to
    /// [`SUMMARY_THRESHOLD`] elements, else numpy's summary with three
    /// entries at each end of every dimension.
    pub fn format_for_print(&self) -> String {
        self.format_summary((self.len() > SUMMARY_THRESHOLD).then_some(3))
    }

    /// The field as a numpy `.npy` file (little-endian, C order; `i1` as
    /// numpy's `bool`).
    pub fn to_npy(&self) -> Result<Vec<u8>, String> {
        use npyz::WriterBuilder;
        fn write<T: npyz::AutoSerialize>(shape: &[u64], items: impl Iterator<Item = T>) -> std::io::Result<Vec<u8>> {
            let mut buf = Vec::new();
            let mut w = npyz::WriteOptions::new().default_dtype().shape(shape).writer(&mut buf).begin_nd()?;
            w.extend(items)?;
            w.finish()?;
            Ok(buf)
        }
        let n = self.len();
        let bits = (0..n).map(|i| self.element(i).map(|c| c.bits).unwrap_or(0));
        let shape = &self.shape[..];
        match self.elem {
            Scalar::I1 => write(shape, bits.map(|b| b != 0)),
            Scalar::I8 => write(shape, bits.map(|b| b as i8)),
            Scalar::I16 => write(shape, bits.map(|b| b as i16)),
            Scalar::I32 => write(shape, bits.map(|b| b as u32 as i32)),
            Scalar::I64 => write(shape, bits.map(|b| b as i64)),
            Scalar::U8 => write(shape, bits.map(|b| b as u8)),
            Scalar::U16 => write(shape, bits.map(|b| b as u16)),
            Scalar::U32 => write(shape, bits.map(|b| b as u32)),
            Scalar::U64 => write(shape, bits),
            Scalar::F16 => write(shape, bits.map(|b| half::f16::from_bits(b as u16))),
            Scalar::F32 => write(shape, bits.map(|b| f32::from_bits(b as u32))),
            Scalar::F64 => write(shape, bits.map(f64::from_bits)),
        }
        .map_err(|e| format!("cannot encode .npy: {e}"))
    }

    /// Replaces the values with those of a `.npy` file for field `name`,
    /// whose dtype and shape must match the field exactly (`@x: expected
    /// f32[1024], file has f64[1024]`) and whose length must be what its
    /// header says. The header passes [`crate::npy::header`] before npyz
    /// sees it. Fortran-ordered arrays are reordered to row-major.
    pub fn load_npy(&mut self, name: &str, file: &[u8]) -> Result<(), String> {
        let h = crate::npy::header(file).map_err(|e| format!("@{name}: not a valid .npy file: {e}"))?;
        self.check_npy_header(name, &h)?;
        let want = h.data_len().map(|n| n + h.data_start as u64);
        if want != Some(file.len() as u64) {
            return Err(format!(
                "@{name}: not a valid .npy file: it is {} bytes long, its header describes {}",
                file.len(),
                want.unwrap_or(0)
            ));
        }
        let npy = npyz::NpyFile::new(file).map_err(|e| format!("@{name}: not a valid .npy file: {e}"))?;
        let fortran = npy.order() == npyz::Order::Fortran;
        let bad = |e: String| format!("@{name}: cannot read the .npy data: {e}");
        // Straight into the field's own storage, element by element: a
        // 512 MiB `bool` file becomes 512 MiB of `i1`, never 8 bytes an
        // element on the way.
        let n = self.len();
        let mut bytes = match self.elem {
            Scalar::I1 => le_bytes(npy, n, |b: bool| [b as u8]),
            Scalar::I8 => le_bytes(npy, n, i8::to_le_bytes),
            Scalar::I16 => le_bytes(npy, n, i16::to_le_bytes),
            Scalar::I32 => le_bytes(npy, n, i32::to_le_bytes),
            Scalar::I64 => le_bytes(npy, n, i64::to_le_bytes),
            Scalar::U8 => le_bytes(npy, n, u8::to_le_bytes),
            Scalar::U16 => le_bytes(npy, n, u16::to_le_bytes),
            Scalar::U32 => le_bytes(npy, n, u32::to_le_bytes),
            Scalar::U64 => le_bytes(npy, n, u64::to_le_bytes),
            Scalar::F16 => le_bytes(npy, n, half::f16::to_le_bytes),
            Scalar::F32 => le_bytes(npy, n, f32::to_le_bytes),
            Scalar::F64 => le_bytes(npy, n, f64::to_le_bytes),
        }
        .map_err(bad)?;
        let size = self.elem.size_bytes();
        if bytes.len() != n * size {
            return Err(format!("@{name}: the file holds {} elements, not {n}", bytes.len() / size));
        }
        if fortran && self.shape.len() > 1 {
            bytes = fortran_to_c(&bytes, &self.shape, size);
        }
        // Lent memory stays lent (its length is the field's, checked when
        // it was lent); owned bytes are replaced, not copied.
        if self.bytes.is_lent() {
            self.bytes.copy_from_slice(&bytes);
        } else {
            self.bytes = bytes.into();
        }
        Ok(())
    }

    /// Whether a checked `.npy` header is for this field: a shape whose
    /// size fits in 64 bits, and exactly the field's element type and shape.
    pub fn check_npy_header(&self, name: &str, h: &crate::npy::Header) -> Result<(), String> {
        h.check_count().map_err(|e| format!("@{name}: not a valid .npy file: {e}"))?;
        if h.elem != Some(self.elem) || h.shape != self.shape {
            return Err(format!("@{name}: expected {}, file has {}", self.type_string(), h.type_string()));
        }
        Ok(())
    }

    /// [`Self::load_npy`] from a file, read only as far as its header,
    /// checked against this field, and `fstat` allow
    /// ([`crate::npy::read_file`]): a device, a FIFO or a file longer or
    /// shorter than its header says is refused before its data is read.
    pub fn load_npy_file(&mut self, name: &str, path: &std::path::Path) -> Result<(), crate::npy::ReadError> {
        use crate::npy::ReadError;
        let bytes = crate::npy::read_file(path, |h| self.check_npy_header(name, h)).map_err(|e| match e {
            ReadError::Invalid(m) if !m.starts_with('@') => ReadError::Invalid(format!("@{name}: {m}")),
            e => e,
        })?;
        Ok(self.load_npy(name, &bytes)?)
    }
}

/// The little-endian bytes of the `n` elements of a `.npy` file's data, as
/// `to_le` writes each.
fn le_bytes<T: npyz::Deserialize, const K: usize>(
    npy: npyz::NpyFile<&[u8]>,
    n: usize,
    to_le: impl Fn(T) -> [u8; K],
) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(n.saturating_mul(K));
    for v in npy.data::<T>().map_err(|e| e.to_string())? {
        out.extend_from_slice(&to_le(v.map_err(|e| e.to_string())?));
    }
    Ok(out)
}

/// Reorders elements of `size` bytes stored column-major (first index
/// fastest) into row-major order.
fn fortran_to_c(data: &[u8], shape: &[u64], size: usize) -> Vec<u8> {
    let n = data.len() / size;
    let mut out = Vec::with_capacity(data.len());
    let mut idx = vec![0u64; shape.len()];
    for _ in 0..n {
        // `idx` walks row-major; its column-major offset is where the
        // element sits in the file.
        let mut off = 0u64;
        let mut stride = 1u64;
        for (d, &ext) in shape.iter().enumerate() {
            off += idx[d] * stride;
            stride *= ext;
        }
        let at = off as usize * size;
        out.extend_from_slice(&data[at..at + size]);
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

impl Fields {
    /// The `--digest` listing: one line per field, sorted by name.
    pub fn digest_lines(&self) -> String {
        self.map.iter().map(|(n, d)| d.digest_line(n) + "\n").collect()
    }
}

/// Parses a kernel argument's text as a value of type `ty`, exactly as a
/// KIR literal of that type (`docs/language.md`, "Literals"): `true`/`false`
/// (or `1`/`0`) for `i1`; a decimal integer within the signed range, or
/// `0x` hex raw bits within the width, for `i32`/`i64`; for floats a
/// decimal that does not overflow, `inf`, `-inf`, `nan`, or `0x` hex raw
/// bits of exactly the type's width.
pub fn parse_value(text: &str, ty: Scalar) -> Result<Const, String> {
    use crate::lexer::{Lexer, Tok};
    use crate::parser::ast::{Lit, LitKind};
    // Read exactly as a KIR literal of the type (one token, then the
    // parser's own rules), so a value means on the command line what it
    // means in KIR text: `0xffffffff` is i32 -1, `1e40` is out of range for
    // f32, a float's hex bits have the type's full width.
    let t = text.trim();
    let bad = || format!("'{text}' is not a valid {ty} value");
    let mut toks = Lexer::new(t, 0);
    let kind = match (toks.next(), toks.next()) {
        (Some(Ok((_, tok, _))), None) => match tok {
            Tok::Int(_) => LitKind::Int,
            Tok::Hex(_) => LitKind::Hex,
            Tok::Float(_) => LitKind::Float,
            Tok::True => LitKind::True,
            Tok::False => LitKind::False,
            _ => return Err(bad()),
        },
        _ => return Err(bad()),
    };
    let lit = Lit { kind, text: t, span: crate::ir::Span::new(0, t.len()) };
    crate::parser::lit_const(&lit, ty).map_err(|d| {
        if d.message.contains("out of range") {
            format!("'{text}' is out of range for {ty}")
        } else if d.message.starts_with("expected") {
            // A literal of the wrong kind (`1.5` for an integer, `true` for
            // a float).
            bad()
        } else {
            d.message
        }
    })
}

#[cfg(test)]
mod assert_tests {
    use super::*;
    use crate::ir::Scalar;

    #[test]
    fn conversions_take_the_values_in_order() {
        let args = [(Scalar::I32, (-3i32) as u32 as u64), (Scalar::F32, 2.5f32.to_bits() as u64)];
        assert_eq!(assert_message("i=%d x=%.3f done", &args), "i=-3 x=2.5 done");
        assert_eq!(assert_message("100%% sure, %ld", &args[..1]), "100% sure, -3");
        assert_eq!(assert_message("hex %x", &[(Scalar::U8, 255)]), "hex ff");
        assert_eq!(assert_message("missing %d and %d", &args[..1]), "missing -3 and %d");
        assert_eq!(assert_message("a lone % sign", &[]), "a lone % sign");
        assert_eq!(assert_message("ends with %", &[]), "ends with %");
        assert_eq!(assert_message("%s", &[(Scalar::I1, 1)]), "true");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        fn snprintf(buf: *mut std::ffi::c_char, n: usize, format: *const std::ffi::c_char, ...) -> std::ffi::c_int;
    }

    /// `format` (a printf conversion of one double) of `v`, as the C
    /// library writes it: what Quadrants' print calls on the CPU.
    fn c_printf(format: &std::ffi::CStr, v: f64) -> String {
        let mut buf = vec![0u8; 512];
        // SAFETY: `buf` holds `buf.len()` writable bytes; `format` is a
        // NUL-terminated conversion of exactly one double, which is passed.
        let n = unsafe { snprintf(buf.as_mut_ptr().cast(), buf.len(), format.as_ptr(), v) };
        buf.truncate(n.clamp(0, 511) as usize);
        String::from_utf8(buf).unwrap()
    }

    /// A print's float text is the C library's `%f` (f32) and `%.12f`
    /// (f64), digit for digit: exact ties (round half to even), huge and
    /// tiny magnitudes, signed zeros, infinities and NaNs of either sign.
    #[test]
    fn print_floats_as_printf_does() {
        let mut f64s = vec![0.0, -0.0, 0.5, 2.5, 0.0078125, 1e-7, 5e-7, 0.1, 1.0 / 3.0, 123_456_789.987_654_3, 1e300];
        f64s.extend([f64::MAX, f64::MIN_POSITIVE, 5e-324, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -f64::NAN]);
        // A fixed pseudo-random walk over bit patterns.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x);
            // Magnitudes printf writes in under 512 bytes, plus every scale.
            f64s.push(if v.abs() < 1e200 { v } else { v / 1e200 });
            f64s.push((x % 2_000_000) as f64 / 64.0 - 15625.0);
        }
        for &v in &f64s {
            assert_eq!(print_value(Scalar::F64, v.to_bits()), c_printf(c"%.12f", v), "{v:e}");
            let f = v as f32;
            assert_eq!(print_value(Scalar::F32, f.to_bits() as u64), c_printf(c"%f", f as f64), "{f:e}");
        }
    }

    #[test]
    fn print_integers_in_decimal_by_their_signedness() {
        assert_eq!(print_value(Scalar::I32, (-3i32) as u32 as u64), "-3");
        assert_eq!(print_value(Scalar::I32, (-3i64) as u64), "-3");
        assert_eq!(print_value(Scalar::U32, 4_000_000_000), "4000000000");
        assert_eq!(print_value(Scalar::U64, u64::MAX), "18446744073709551615");
        assert_eq!(print_value(Scalar::I64, i64::MIN as u64), "-9223372036854775808");
        assert_eq!(print_value(Scalar::I8, 0x80), "-128");
        assert_eq!(print_value(Scalar::U8, 0xff), "255");
        assert_eq!(print_value(Scalar::I1, 1), "1");
        let pieces =
            [crate::ir::PrintPiece::Str("a=".into()), crate::ir::PrintPiece::Value(crate::ir::Value::numbered(0))];
        assert_eq!(print_text(&pieces, [(Scalar::I16, 0xffff)].into_iter()), "a=-1");
    }

    #[test]
    fn lent_storage_reads_and_writes_the_lenders_memory() {
        let mut memory = [1u8, 2, 3, 4];
        let ptr = std::ptr::NonNull::from(&mut memory).cast::<u8>();
        // SAFETY: `memory` outlives `lent`, and nothing else touches it meanwhile.
        let mut lent = unsafe { Storage::lent(ptr, 4) };
        assert!(lent.is_lent());
        assert_eq!(*lent, [1, 2, 3, 4]);
        lent[2] = 9;
        let copy = lent.clone();
        lent[0] = 7;
        assert!(!copy.is_lent());
        assert_eq!(*copy, [1, 2, 9, 4]);
        drop(lent);
        assert_eq!(memory, [7, 2, 9, 4]);
    }

    fn data(elem: Scalar, shape: &[u64], vals: &[u64]) -> FieldData {
        let size = elem.size_bytes();
        FieldData {
            elem,
            shape: shape.to_vec(),
            bytes: vals.iter().flat_map(|v| v.to_le_bytes().into_iter().take(size)).collect::<Vec<u8>>().into(),
        }
    }

    #[test]
    fn npy_round_trips_every_type() {
        for elem in Scalar::ALL {
            let vals: Vec<u64> = match elem {
                Scalar::I1 => vec![0, 1, 1, 0, 1, 0],
                Scalar::F32 => {
                    [1.5f32, -0.0, f32::INFINITY, 2.0, 3.0, 4.0].iter().map(|v| v.to_bits() as u64).collect()
                }
                Scalar::F64 => [1.5f64, -0.0, f64::NAN, 2.0, 3.0, 4.0].iter().map(|v| v.to_bits()).collect(),
                // 1.5, -0.0, inf, a payload NaN, the least subnormal, 65504.
                Scalar::F16 => vec![0x3e00, 0x8000, 0x7c00, 0x7d01, 0x0001, 0x7bff],
                Scalar::I32 => [1i32, -1, i32::MIN, 4, 5, 6].iter().map(|v| *v as u32 as u64).collect(),
                Scalar::I64 => [1i64, -1, i64::MIN, 4, 5, 6].iter().map(|v| *v as u64).collect(),
                t => [1i64, -1, 127, -128, 255, 6].iter().map(|v| t.wrap_bits(*v as u64)).collect(),
            };
            let d = data(elem, &[2, 3], &vals);
            let bytes = d.to_npy().unwrap();
            let mut back = FieldData { elem, shape: vec![2, 3], bytes: vec![0; d.bytes.len()].into() };
            back.load_npy("x", &bytes).unwrap();
            assert_eq!(back, d, "{elem}");
        }
    }

    #[test]
    fn npy_zero_d_round_trips() {
        let d = data(Scalar::F64, &[], &[2.5f64.to_bits()]);
        let mut back = FieldData { elem: Scalar::F64, shape: vec![], bytes: vec![0; 8].into() };
        back.load_npy("t", &d.to_npy().unwrap()).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn npy_dtype_and_shape_mismatches_are_clear_errors() {
        let f64s = data(Scalar::F64, &[4], &[0; 4]).to_npy().unwrap();
        let mut x = FieldData { elem: Scalar::F32, shape: vec![4], bytes: vec![0; 16].into() };
        assert_eq!(x.load_npy("x", &f64s).unwrap_err(), "@x: expected f32[4], file has f64[4]");
        let f32s = data(Scalar::F32, &[2, 2], &[0; 4]).to_npy().unwrap();
        assert_eq!(x.load_npy("x", &f32s).unwrap_err(), "@x: expected f32[4], file has f32[2, 2]");
        assert!(x.load_npy("x", b"garbage").unwrap_err().starts_with("@x: not a valid .npy file"));
        assert_eq!(*x.bytes, [0; 16]);
    }

    #[test]
    fn fortran_order_is_reordered() {
        // A 2x3 array [[0,1,2],[3,4,5]] stored column-major: 0,3,1,4,2,5.
        assert_eq!(fortran_to_c(&[0, 3, 1, 4, 2, 5], &[2, 3], 1), [0, 1, 2, 3, 4, 5]);
        assert_eq!(fortran_to_c(&[0, 0, 3, 0, 1, 0, 4, 0], &[2, 2], 2), [0, 0, 1, 0, 3, 0, 4, 0]);
    }

    #[test]
    fn values_print_nested_with_kir_literals() {
        let d = data(Scalar::I32, &[2, 2], &[1, 2, 3, (-4i32) as u32 as u64]);
        assert_eq!(d.format_values(), "[[1, 2], [3, -4]]");
        let f =
            data(Scalar::F32, &[3], &[1.0f32.to_bits() as u64, f32::NAN.to_bits() as u64, (-0.0f32).to_bits() as u64]);
        assert_eq!(f.format_values(), "[1.0, nan, -0.0]");
        assert_eq!(data(Scalar::I1, &[], &[1]).format_values(), "true");
        assert_eq!(data(Scalar::F64, &[0], &[]).format_values(), "[]");
    }

    #[test]
    fn large_fields_are_summarised_as_numpy_does() {
        let v: Vec<u64> = (0..8 * 1000).collect();
        let d = data(Scalar::I32, &[8, 1000], &v);
        assert_eq!(
            d.format_for_print(),
            "[[0, 1, 2, ..., 997, 998, 999], [1000, 1001, 1002, ..., 1997, 1998, 1999], \
             [2000, 2001, 2002, ..., 2997, 2998, 2999], ..., [5000, 5001, 5002, ..., 5997, 5998, 5999], \
             [6000, 6001, 6002, ..., 6997, 6998, 6999], [7000, 7001, 7002, ..., 7997, 7998, 7999]]"
        );
        assert_eq!(d.format_summary(None).matches(", ").count(), 8 * 1000 - 1);
        // Small ones print whole.
        let small = data(Scalar::I32, &[1000], &(0..1000).collect::<Vec<u64>>());
        assert!(!small.format_for_print().contains("..."));
    }

    #[test]
    fn digest_lines_are_sorted_and_hash_the_bytes() {
        let mut fields = Fields::default();
        fields.map.insert("y".into(), data(Scalar::F32, &[2], &[0, 0]));
        fields.map.insert("a".into(), data(Scalar::I64, &[], &[0]));
        let text = fields.digest_lines();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("@a i64 blake3:{}", blake3::hash(&[0; 8]).to_hex()));
        assert!(lines[1].starts_with("@y f32[2] blake3:"));
    }

    #[test]
    fn arguments_parse_per_type() {
        assert_eq!(parse_value("-7", Scalar::I32), Ok(Const::i32(-7)));
        assert_eq!(parse_value("0x2a", Scalar::I64), Ok(Const::i64(42)));
        assert_eq!(parse_value("2147483648", Scalar::I32).unwrap_err(), "'2147483648' is out of range for i32");
        assert_eq!(parse_value("1.5", Scalar::F32), Ok(Const::f32(1.5)));
        assert_eq!(parse_value("-inf", Scalar::F64), Ok(Const::f64(f64::NEG_INFINITY)));
        assert_eq!(parse_value("0x7fc00001", Scalar::F32), Ok(Const { ty: Scalar::F32, bits: 0x7fc00001 }));
        assert_eq!(parse_value("true", Scalar::I1), Ok(Const::bool(true)));
        assert_eq!(parse_value("abc", Scalar::F32).unwrap_err(), "'abc' is not a valid f32 value");
        assert_eq!(parse_value("1.5", Scalar::I32).unwrap_err(), "'1.5' is not a valid i32 value");
        assert!(parse_value("infinity", Scalar::F32).is_err());
    }
}
