//! The printer: the canonical KIR text of a module is its `Display`.
//!
//! Owns: the one text form every tool writes. Two spaces of indentation, one
//! blank line between items and between modules, operands separated by
//! `, `, floats printed so that they parse back to the same bits (see
//! [`fmt_const`]). `parse(print(m)) == m` for every module, and printing
//! what was parsed from printed text gives the same text.
//!
//! Values are named through a [`Namer`]: the source names for `Display`
//! ([`SourceNames`]), or a renumbering for the task key's canonical text
//! (`crate::key`), which is this printer's output and no other's (as
//! Cranelift's `FuncWriter` takes a naming hook).
//!
//! Must never: change the module, or depend on spans or source layout.

use crate::ir::*;
use std::fmt::{self, Write};

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, m) in self.modules.iter().enumerate() {
            if i > 0 {
                f.write_str(MODULE_SEPARATOR)?;
            }
            write!(f, "{m}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Printer::new(f, 0, SourceNames).module(self)
    }
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Printer::new(f, 0, SourceNames).item(ItemRef::of(self))
    }
}

/// What a value prints as after its `%`.
pub enum ValueName<'a> {
    Text(&'a str),
    Number(u32),
}

/// The naming hook: how values, and a task item's own names, print.
pub trait Namer {
    /// A body starts printing (its parameters come first).
    fn begin_body(&mut self, _body: &Body) {}
    /// `v` is defined here: a parameter, a task header's variable, a
    /// statement's result or a loop's variable, in print order.
    fn define(&mut self, _v: Value) {}
    /// The name of `v` at a definition or a use.
    fn name<'b>(&self, body: &'b Body, v: Value) -> ValueName<'b>;
    /// A task item's name and its kernel's name.
    fn task_names<'b>(&self, t: &'b TaskItem) -> (&'b str, &'b str) {
        (&t.name, &t.kernel)
    }
    /// Whether statements' source locations (`loc(...)`) are printed.
    fn locations(&self) -> bool {
        true
    }
}

/// The names the values have in the module: what `Display` prints.
pub struct SourceNames;

impl Namer for SourceNames {
    fn name<'b>(&self, body: &'b Body, v: Value) -> ValueName<'b> {
        ValueName::Text(body.name(v))
    }
}

/// An item of any kind, by reference: what [`write_items`] prints.
#[derive(Clone, Copy)]
pub enum ItemRef<'a> {
    Field(&'a Field),
    Func(&'a Func),
    Kernel(&'a Kernel),
    Task(&'a TaskItem),
}

impl<'a> ItemRef<'a> {
    pub fn of(it: &'a Item) -> ItemRef<'a> {
        match it {
            Item::Field(x) => ItemRef::Field(x),
            Item::Func(x) => ItemRef::Func(x),
            Item::Kernel(x) => ItemRef::Kernel(x),
            Item::Task(x) => ItemRef::Task(x),
        }
    }
}

/// Appends `items` to `out` as the top level of a module without a name
/// prints them, values named by `namer`.
pub fn write_items<'i, N: Namer>(out: &mut String, items: impl IntoIterator<Item = ItemRef<'i>>, namer: N) {
    // Writing to a String cannot fail.
    let _ = Printer::new(out, 0, namer).items(items);
}

/// An item printed `depth` levels deep (one level inside a `module` block),
/// exactly as `Display for Module` prints it there; for front ends that
/// print items one at a time (see [`blank_line_between`], [`module_open`]).
pub struct Indented<'a>(pub &'a Item, pub usize);

impl fmt::Display for Indented<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Printer::new(f, self.1, SourceNames).item(ItemRef::of(self.0))
    }
}

/// Appends `item` printed `depth` levels deep to `out`, as [`Indented`]
/// prints it; writing to the `String` directly, not through a
/// `fmt::Formatter`, lets every small write inline.
pub fn print_item(out: &mut String, item: &Item, depth: usize) {
    // Writing to a String cannot fail.
    let _ = Printer::new(out, depth, SourceNames).item(ItemRef::of(item));
}

/// [`print_item`] as long as `out` stays within `limit` bytes: false (and
/// `out` holding a cut text) when the item's text would be longer. The
/// streaming front end keeps an item whose text is many times its source
/// (blocks nested deep, each line indented) as IR instead, and prints it
/// only when the output is written.
pub fn print_item_within(out: &mut String, item: &Item, depth: usize, limit: usize) -> bool {
    let mut w = Within { out, limit };
    Printer::new(&mut w, depth, SourceNames).item(ItemRef::of(item)).is_ok()
}

/// A `String` that refuses to grow past `limit` bytes.
struct Within<'a> {
    out: &'a mut String,
    limit: usize,
}

impl Write for Within<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.out.len() + s.len() > self.limit {
            return Err(fmt::Error);
        }
        self.out.push_str(s);
        Ok(())
    }
}

/// Whether a blank line sets an item apart from the one before it in a
/// module: consecutive fields stay together, everything else is set apart.
pub fn blank_line_between(prev_is_field: bool, is_field: bool) -> bool {
    !(prev_is_field && is_field)
}

/// The line that opens a named module's block.
pub fn module_open(out: &mut (impl Write + ?Sized), name: &str) -> fmt::Result {
    writeln!(out, "module @{name} {{")
}

/// The line that closes a module's block.
pub const MODULE_CLOSE: &str = "}\n";

/// What separates two modules of a stream.
pub const MODULE_SEPARATOR: &str = "\n";

/// Prints a constant's literal (without its type): integers in decimal
/// (signed or unsigned as their type is), `i1` as `true`/`false`, floats in the shortest decimal form that
/// reads back to the same bits (`1.0`, `-2.5e-3`, `1e20`), `inf`, `-inf`,
/// `nan` for the canonical quiet NaN, and any other NaN as its raw bits in
/// hex (`0x7fc00001`), which the parser reads as bits for a float type.
pub fn fmt_const(c: Const) -> String {
    match c.ty {
        Scalar::I1 => if c.bits & 1 != 0 { "true" } else { "false" }.to_string(),
        Scalar::F16 => {
            let v = half::f16::from_bits(c.bits as u16);
            if v.is_nan() {
                if v.to_bits() == half::f16::NAN.to_bits() {
                    "nan".into()
                } else {
                    format!("0x{:04x}", v.to_bits())
                }
            } else {
                fmt_finite_or_inf(v.is_infinite(), v.is_sign_negative(), || shortest_f16(v))
            }
        }
        Scalar::F32 => {
            let v = f32::from_bits(c.bits as u32);
            if v.is_nan() {
                if c.bits as u32 == f32::NAN.to_bits() {
                    "nan".into()
                } else {
                    format!("0x{:08x}", c.bits as u32)
                }
            } else {
                fmt_finite_or_inf(v.is_infinite(), v.is_sign_negative(), || format!("{v:?}"))
            }
        }
        Scalar::F64 => {
            let v = f64::from_bits(c.bits);
            if v.is_nan() {
                if c.bits == f64::NAN.to_bits() {
                    "nan".into()
                } else {
                    format!("0x{:016x}", c.bits)
                }
            } else {
                fmt_finite_or_inf(v.is_infinite(), v.is_sign_negative(), || format!("{v:?}"))
            }
        }
        t => t.int_value(c.bits).to_string(),
    }
}

/// The shortest decimal that the parser reads back as `v` (at most five
/// significant digits, the most an `f16` needs), printed as `{:?}` prints
/// the `f64` it reads as: `0.1` for the `f16` nearest 0.1, whose exact
/// value is 0.0999755859375.
fn shortest_f16(v: half::f16) -> String {
    let exact = v.to_f64();
    (0..5)
        .filter_map(|digits| format!("{exact:.digits$e}").parse::<f64>().ok())
        .find(|&d| half::f16::from_f64(d).to_bits() == v.to_bits())
        .map_or_else(|| format!("{exact:?}"), |d| format!("{d:?}"))
}

fn fmt_finite_or_inf(inf: bool, neg: bool, finite: impl FnOnce() -> String) -> String {
    match (inf, neg) {
        (true, false) => "inf".into(),
        (true, true) => "-inf".into(),
        // Rust's `{:?}` for floats is the shortest text that round-trips and
        // always has a `.` or an exponent, so it never reads as an integer.
        _ => finite(),
    }
}

struct Printer<'a, W: Write + ?Sized, N: Namer> {
    out: &'a mut W,
    indent: usize,
    namer: N,
    /// How many `random` statements of the body were printed: the site a
    /// `random` has when it prints without `site N`.
    randoms: u32,
}

impl<'a, W: Write + ?Sized, N: Namer> Printer<'a, W, N> {
    fn new(out: &'a mut W, indent: usize, namer: N) -> Self {
        Printer { out, indent, namer, randoms: 0 }
    }

    fn line_start(&mut self) -> fmt::Result {
        // One write for the usual depths instead of one per level.
        const SPACES: &str = "                                ";
        let mut n = 2 * self.indent;
        while n > 0 {
            let k = n.min(SPACES.len());
            self.out.write_str(&SPACES[..k])?;
            n -= k;
        }
        Ok(())
    }

    fn module(&mut self, m: &Module) -> fmt::Result {
        if let Some(name) = &m.name {
            module_open(self.out, name)?;
            self.indent += 1;
            self.items(m.items.iter().map(ItemRef::of))?;
            self.indent -= 1;
            self.out.write_str(MODULE_CLOSE)
        } else {
            self.items(m.items.iter().map(ItemRef::of))
        }
    }

    fn items<'i>(&mut self, items: impl IntoIterator<Item = ItemRef<'i>>) -> fmt::Result {
        let mut prev_field = false;
        for (i, it) in items.into_iter().enumerate() {
            let is_field = matches!(it, ItemRef::Field(_));
            // Consecutive fields stay together; everything else is set apart
            // by one blank line.
            if i > 0 && blank_line_between(prev_field, is_field) {
                writeln!(self.out)?;
            }
            self.item(it)?;
            prev_field = is_field;
        }
        Ok(())
    }

    fn item(&mut self, it: ItemRef<'_>) -> fmt::Result {
        self.line_start()?;
        match it {
            ItemRef::Field(fl) => {
                self.out.write_str("field @")?;
                self.out.write_str(&fl.name)?;
                self.out.write_str(" : ")?;
                self.out.write_str(fl.elem.keyword())?;
                if !fl.shape.is_empty() {
                    self.out.write_char('[')?;
                    for (i, d) in fl.shape.iter().enumerate() {
                        if i > 0 {
                            self.out.write_str(", ")?;
                        }
                        self.uint(*d)?;
                    }
                    self.out.write_char(']')?;
                }
            }
            ItemRef::Func(func) => {
                self.out.write_str("func @")?;
                self.out.write_str(&func.name)?;
                self.params(&func.body, &func.params)?;
                if let Some(r) = func.ret {
                    self.out.write_str(" -> ")?;
                    self.out.write_str(r.keyword())?;
                }
                self.block_braced(&func.body, func.body.entry)?;
            }
            ItemRef::Kernel(k) => {
                self.out.write_str("kernel @")?;
                self.out.write_str(&k.name)?;
                self.params(&k.body, &k.params)?;
                self.block_braced(&k.body, k.body.entry)?;
            }
            ItemRef::Task(t) => {
                let (name, kernel) = self.namer.task_names(t);
                self.out.write_str("task @")?;
                self.out.write_str(name)?;
                self.out.write_str(" of @")?;
                self.out.write_str(kernel)?;
                self.params(&t.body, &t.params)?;
                self.out.write_char(' ')?;
                self.task_kind(&t.body, &t.kind)?;
                self.block_braced(&t.body, t.body.entry)?;
            }
        }
        self.out.write_char('\n')
    }

    /// The parameter list; a body begins with it, so it also tells the
    /// namer the body begins.
    fn params(&mut self, body: &Body, params: &[Param]) -> fmt::Result {
        self.namer.begin_body(body);
        self.randoms = 0;
        self.out.write_char('(')?;
        for (i, p) in params.iter().enumerate() {
            if i > 0 {
                self.out.write_str(", ")?;
            }
            match body.params.get(i) {
                Some(&v) => self.def(body, v)?,
                None => self.out.write_str("%?")?,
            }
            self.out.write_str(": ")?;
            self.out.write_str(p.ty.keyword())?;
            if let Some(d) = p.default {
                self.out.write_str(" = ")?;
                self.out.write_str(&fmt_const(d))?;
            }
        }
        self.out.write_char(')')
    }

    /// ` {`, the block's statements one level deeper, then the closing
    /// brace at the current level (no newline after it).
    fn block_braced(&mut self, body: &Body, b: Block) -> fmt::Result {
        self.out.write_str(" {\n")?;
        self.indent += 1;
        for &s in body.block(b) {
            self.stmt(body, s)?;
        }
        self.indent -= 1;
        self.line_start()?;
        self.out.write_char('}')
    }

    fn v(&mut self, body: &Body, v: Value) -> fmt::Result {
        self.out.write_char('%')?;
        match self.namer.name(body, v) {
            ValueName::Text(t) => self.out.write_str(t),
            ValueName::Number(n) => self.uint(n as u64),
        }
    }

    /// A value at its definition.
    fn def(&mut self, body: &Body, v: Value) -> fmt::Result {
        self.namer.define(v);
        self.v(body, v)
    }

    fn vals(&mut self, body: &Body, vs: &[Value]) -> fmt::Result {
        for (i, &v) in vs.iter().enumerate() {
            if i > 0 {
                self.out.write_str(", ")?;
            }
            self.v(body, v)?;
        }
        Ok(())
    }

    fn field_ref(&mut self, body: &Body, r: &FieldRef) -> fmt::Result {
        self.out.write_char('@')?;
        self.out.write_str(&r.field)?;
        self.out.write_char('[')?;
        self.vals(body, &r.indices)?;
        self.out.write_char(']')
    }

    fn bound(&mut self, body: &Body, b: &Bound) -> fmt::Result {
        match b {
            Bound::Const(c) => self.int(*c),
            Bound::Value(v) => self.v(body, *v),
            Bound::Field(name, _) => write!(self.out, "@{name}[]"),
        }
    }

    /// `%i in LO .. HI`, with `: TYPE` after the variable when the type
    /// differs from the one the parser infers ([`loop_var_type`]).
    fn range(&mut self, body: &Body, var: Value, lo: &Bound, hi: &Bound) -> fmt::Result {
        self.def(body, var)?;
        let ty = body.ty(var);
        let inferred = loop_var_type(lo, hi, |v| body.values().get(v).map(|d| d.ty));
        if ty != Type::Scalar(inferred) {
            write!(self.out, " : {ty}")?;
        }
        self.out.write_str(" in ")?;
        self.bound(body, lo)?;
        self.out.write_str(" .. ")?;
        self.bound(body, hi)
    }

    fn task_kind(&mut self, body: &Body, k: &TaskKind) -> fmt::Result {
        match k {
            TaskKind::Serial => self.out.write_str("serial"),
            TaskKind::RangeFor { var, lo, hi, block_dim } => {
                self.out.write_str("range_for ")?;
                self.range(body, *var, lo, hi)?;
                self.out.write_str(" block_dim ")?;
                self.uint(*block_dim as u64)
            }
            TaskKind::StructFor { vars, field, block_dim, .. } => {
                self.out.write_str("struct_for ")?;
                for (i, &v) in vars.iter().enumerate() {
                    if i > 0 {
                        self.out.write_str(", ")?;
                    }
                    self.def(body, v)?;
                }
                self.out.write_str(" in @")?;
                self.out.write_str(field)?;
                self.out.write_str(" block_dim ")?;
                self.uint(*block_dim as u64)
            }
        }
    }

    fn stmt(&mut self, body: &Body, s: Stmt) -> fmt::Result {
        let data = body.stmt(s);
        self.line_start()?;
        if let Some(r) = data.result {
            self.def(body, r)?;
            self.out.write_str(" = ")?;
        }
        match &data.kind {
            StmtKind::Const(c) => {
                self.out.write_str("const ")?;
                self.const_lit(*c)?;
                self.out.write_str(" : ")?;
                self.out.write_str(c.ty.keyword())?
            }
            StmtKind::Binary(op, a, b) => {
                self.out.write_str(op.keyword())?;
                self.out.write_char(' ')?;
                self.vals(body, &[*a, *b])?
            }
            StmtKind::Unary(op, a) => {
                self.out.write_str(op.keyword())?;
                self.out.write_char(' ')?;
                self.v(body, *a)?
            }
            StmtKind::Cmp(op, a, b) => {
                self.out.write_str("cmp ")?;
                self.out.write_str(op.keyword())?;
                self.out.write_char(' ')?;
                self.vals(body, &[*a, *b])?
            }
            StmtKind::Cast(a, ty) | StmtKind::BitCast(a, ty) => {
                let bit = matches!(data.kind, StmtKind::BitCast(..));
                self.out.write_str(if bit { "bitcast " } else { "cast " })?;
                self.v(body, *a)?;
                self.out.write_str(" to ")?;
                self.out.write_str(ty.keyword())?
            }
            StmtKind::Select(c, a, b) => {
                self.out.write_str("select ")?;
                self.vals(body, &[*c, *a, *b])?
            }
            StmtKind::Load(r) => {
                self.out.write_str("load ")?;
                self.field_ref(body, r)?
            }
            StmtKind::Store(r, v) => {
                self.out.write_str("store ")?;
                self.field_ref(body, r)?;
                self.out.write_str(", ")?;
                self.v(body, *v)?
            }
            StmtKind::Atomic(op, r, v) => {
                self.out.write_str("atomic ")?;
                self.out.write_str(op.keyword())?;
                self.out.write_char(' ')?;
                self.field_ref(body, r)?;
                self.out.write_str(", ")?;
                self.v(body, *v)?
            }
            StmtKind::Alloca(ty) => write!(self.out, "alloca {ty}")?,
            StmtKind::Random { ty, site } => {
                write!(self.out, "random {ty}")?;
                // The parser's default site is the statement's ordinal.
                if *site != self.randoms {
                    write!(self.out, " site {site}")?;
                }
                self.randoms += 1;
            }
            StmtKind::LoadSlot(p) => {
                self.out.write_str("load ")?;
                self.v(body, *p)?
            }
            StmtKind::StoreSlot(p, v) => {
                self.out.write_str("store ")?;
                self.vals(body, &[*p, *v])?
            }
            StmtKind::Assert { cond, message, args } => {
                self.out.write_str("assert ")?;
                self.v(body, *cond)?;
                self.out.write_str(", ")?;
                self.out.write_str(&crate::lexer::quote_string(message))?;
                for a in args {
                    self.out.write_str(", ")?;
                    self.v(body, *a)?;
                }
            }
            StmtKind::Print { pieces } => {
                self.out.write_str("print ")?;
                for (i, p) in pieces.iter().enumerate() {
                    if i > 0 {
                        self.out.write_str(", ")?;
                    }
                    match p {
                        PrintPiece::Str(text) => self.out.write_str(&crate::lexer::quote_string(text))?,
                        PrintPiece::Value(v) => self.v(body, *v)?,
                    }
                }
            }
            StmtKind::Call(name, args, _) => {
                self.out.write_str("call @")?;
                self.out.write_str(name)?;
                self.out.write_char('(')?;
                self.vals(body, args)?;
                self.out.write_char(')')?
            }
            StmtKind::Ret(v) => {
                self.out.write_str("ret")?;
                if let Some(v) = v {
                    self.out.write_char(' ')?;
                    self.v(body, *v)?
                }
            }
            StmtKind::If { cond, then_blk, else_blk } => {
                self.out.write_str("if ")?;
                self.v(body, *cond)?;
                self.block_braced(body, *then_blk)?;
                if let Some(e) = else_blk {
                    self.out.write_str(" else")?;
                    self.block_braced(body, *e)?;
                }
            }
            StmtKind::For { var, lo, hi, body: b, serial } => {
                self.out.write_str("for ")?;
                self.range(body, *var, lo, hi)?;
                if *serial {
                    self.out.write_str(" serial")?;
                }
                self.block_braced(body, *b)?
            }
            StmtKind::While { body: b } => {
                self.out.write_str("while")?;
                self.block_braced(body, *b)?
            }
            StmtKind::Break => self.out.write_str("break")?,
            StmtKind::Continue => self.out.write_str("continue")?,
            StmtKind::Task { name, kind, body: b } => {
                write!(self.out, "task @{name} ")?;
                self.task_kind(body, kind)?;
                self.block_braced(body, *b)?
            }
            StmtKind::Launch(name) => write!(self.out, "launch @{name}")?,
        }
        if let Some(loc) = data.loc.as_deref().filter(|_| self.namer.locations()) {
            write!(self.out, " loc({}:{}:{})", crate::lexer::quote_string(&loc.file), loc.line, loc.col)?;
        }
        self.out.write_char('\n')
    }

    /// A constant's literal ([`fmt_const`]); integers and the common
    /// floats without an intermediate string.
    fn const_lit(&mut self, c: Const) -> fmt::Result {
        match c.ty {
            Scalar::I32 | Scalar::I64 => self.int(c.as_i64().unwrap_or_default()),
            // Finite floats print as `{:?}` (see `fmt_finite_or_inf`).
            Scalar::F32 if f32::from_bits(c.bits as u32).is_finite() => {
                write!(self.out, "{:?}", f32::from_bits(c.bits as u32))
            }
            Scalar::F64 if f64::from_bits(c.bits).is_finite() => {
                write!(self.out, "{:?}", f64::from_bits(c.bits))
            }
            _ => self.out.write_str(&fmt_const(c)),
        }
    }

    /// A signed decimal integer, as `Display for i64` prints it, without
    /// the formatting machinery.
    fn int(&mut self, v: i64) -> fmt::Result {
        if v < 0 {
            self.out.write_char('-')?;
        }
        self.uint(v.unsigned_abs())
    }

    /// An unsigned decimal integer, without the formatting machinery.
    fn uint(&mut self, mut m: u64) -> fmt::Result {
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (m % 10) as u8;
            m /= 10;
            if m == 0 {
                break;
            }
        }
        // Only ASCII digits were written.
        self.out.write_str(std::str::from_utf8(&buf[i..]).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_to_round_trip() {
        assert_eq!(fmt_const(Const::f32(1.0)), "1.0");
        assert_eq!(fmt_const(Const::f32(-0.0)), "-0.0");
        assert_eq!(fmt_const(Const::f32(f32::INFINITY)), "inf");
        assert_eq!(fmt_const(Const::f64(f64::NEG_INFINITY)), "-inf");
        assert_eq!(fmt_const(Const::f32(f32::NAN)), "nan");
        assert_eq!(fmt_const(Const { ty: Scalar::F32, bits: 0x7fc0_0001 }), "0x7fc00001");
        assert_eq!(fmt_const(Const::f64(1e300)), "1e300");
        assert_eq!(fmt_const(Const::f32(0.1)), "0.1");
        let h = |v: f64| fmt_const(Const::f16(half::f16::from_f64(v)));
        assert_eq!(
            (h(0.1), h(65504.0), h(-0.0), h(1.0), h(f64::INFINITY)),
            ("0.1".into(), "65500.0".into(), "-0.0".into(), "1.0".into(), "inf".into())
        );
        assert_eq!(h(5.960464477539063e-8), "6e-8");
        assert_eq!(fmt_const(Const { ty: Scalar::F16, bits: 0x7e00 }), "nan");
        assert_eq!(fmt_const(Const { ty: Scalar::F16, bits: 0xfe01 }), "0xfe01");
        assert_eq!(fmt_const(Const::i32(-7)), "-7");
        assert_eq!(fmt_const(Const::bool(true)), "true");
    }

    #[test]
    fn prints_a_function() {
        let mut body = Body::new();
        let a = body.add_param("a", Scalar::I32, Span::DUMMY);
        let (s, r) =
            body.new_stmt_with_result(StmtKind::Binary(BinOp::Add, a, a), "r", Type::Scalar(Scalar::I32), Span::DUMMY);
        body.push(body.entry, s);
        let ret = body.new_stmt(StmtKind::Ret(Some(r)), Span::DUMMY);
        body.push(body.entry, ret);
        let f = Func {
            name: "double".into(),
            params: vec![Param { ty: Scalar::I32, default: None, span: Span::DUMMY }],
            ret: Some(Scalar::I32),
            body,
            span: Span::DUMMY,
        };
        let m = Module { name: None, items: vec![Item::Func(f.into())], span: Span::DUMMY };
        assert_eq!(m.to_string(), "func @double(%a: i32) -> i32 {\n  %r = add %a, %a\n  ret %r\n}\n");
    }
}
