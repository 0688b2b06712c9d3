//! Quadrants' IR (CHI) as its printer writes it after offloading: the
//! statements of one dump, their types, their nesting and the Python
//! location (`File "F", line N, in K:`, the source line and a caret line)
//! printed after each, read by a recursive-descent parser over the
//! `lexer`'s tokens, one line at a time.
//!
//! Owns: the syntax tree of a task-form dump ([`Task`], [`Stmt`], [`Kind`])
//! and of a real function's dump (its statements), and their parser; the names of the statements kiln-import refuses
//! ([`Refusal`]), found here when their syntax alone says so.
//!
//! Must never: decide what a statement becomes in KIR (that is `lower`'s),
//! or panic on any input.

use super::lexer::{self, Tok};
use super::log::{span, Line};
use crate::diag::Diagnostic;
use crate::ir::Span;
use cursor::Cursor;
use std::fmt;

mod cursor;

/// Where a statement came from in the Python program.
#[derive(Clone, Debug, PartialEq)]
pub struct PyLoc {
    pub file: String,
    pub line: u32,
    /// 1-based column of the caret; 0 when the printer gave none.
    pub col: u32,
    /// The Python function.
    pub func: String,
}

impl fmt::Display for PyLoc {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.col {
            0 => write!(f, "{}:{}", self.file, self.line),
            c => write!(f, "{}:{}:{}", self.file, self.line, c),
        }
    }
}

/// A type hint (`<f32>`, `<*i32>`, `<u1>`, `<*[Tensor (3) f32]>`).
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    /// A primitive by Quadrants' name (`f32`, `u1`, `u8`).
    Prim(String),
    /// A pointer to a primitive.
    Ptr(String),
    /// A vector or matrix of a primitive (`[Tensor (3, 3) f32]`), or a
    /// pointer to one (`*[Tensor (3) f32]`).
    Tensor { shape: Vec<u32>, prim: String, ptr: bool },
    /// Anything else (tensors, structs), as printed.
    Other(String),
}

/// A range_for task's bound.
#[derive(Clone, Debug, PartialEq)]
pub enum Bound {
    Const(i64),
    /// `tmp(offset=NB)`: a global temporary written by an earlier task.
    Tmp(u64),
}

/// What an offloaded task is.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskKind {
    Serial,
    RangeFor {
        begin: Bound,
        end: Bound,
        block_dim: u32,
    },
    /// Over the dense SNode `S<snode>dense`.
    StructFor {
        snode: u32,
        block_dim: u32,
    },
}

/// One offloaded task of a dump.
#[derive(Clone, Debug)]
pub struct Task {
    /// The offloaded statement's own number (what `loop $N index K` names).
    pub id: u32,
    pub kind: TaskKind,
    pub body: Vec<Stmt>,
    pub span: Span,
    pub loc: Option<PyLoc>,
}

/// One statement, with its number, type hint, the span of its line in the
/// log and its Python location.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub id: u32,
    pub ty: Option<Ty>,
    pub kind: Kind,
    pub span: Span,
    pub loc: Option<PyLoc>,
    /// `loc` is the nearest statement's before this one (the printer gave
    /// this one none).
    pub near: bool,
}

/// The statements kiln-import reads (operands are statement numbers).
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// `const V` (the literal as printed: `3`, `-1.5`, `1e+20`, `true`, `nan`).
    Const(String),
    /// `argload[i]`: a scalar argument.
    ArgLoad(u32),
    /// `argaddr[i]`: an ndarray argument's address.
    ArgAddr(u32),
    /// `external_tensor_shape_along_axis A, arg_id [i]`.
    ShapeAlongAxis {
        axis: u32,
        arg: u32,
    },
    /// `loop $L index K`.
    LoopIndex {
        lp: u32,
        index: u32,
    },
    /// `global ptr [S<place>place<T>], index [...]`.
    GlobalPtr {
        place: u32,
        indices: Vec<u32>,
    },
    /// `global tmp var (offset = N B)`.
    GlobalTmp {
        offset: u64,
    },
    /// `external_ptr $base, [...]`, or `external_ptr $base, [...], (3)`
    /// into an ndarray of vectors or matrices (`element_shape` non-empty).
    ExternalPtr {
        base: u32,
        indices: Vec<u32>,
        element_shape: Vec<u32>,
    },
    /// `[$a, $b, ...]`: a vector or matrix from its components, row-major
    /// (Quadrants' `matrix init`).
    MatrixInit(Vec<u32>),
    /// `shift ptr [$base + $offset]`: a component of what `$base` points
    /// to (Quadrants' `MatrixPtrStmt`).
    ShiftPtr {
        base: u32,
        offset: u32,
    },
    /// `get_element($arg, i, j, ...)`: a scalar member of a struct
    /// argument, by its path of member numbers.
    GetElement {
        base: u32,
        path: Vec<u32>,
    },
    GlobalLoad(u32),
    GlobalStore {
        dest: u32,
        val: u32,
    },
    Alloca,
    /// `rand()`: a random number of the statement's type.
    Rand,
    LocalLoad(u32),
    LocalStore {
        dest: u32,
        val: u32,
    },
    /// A unary operator by Quadrants' name (`neg`, `sin`, `bit_not`, ...).
    Unary {
        op: String,
        a: u32,
    },
    /// `cast_value<T> $a`.
    Cast {
        to: String,
        a: u32,
    },
    /// `reinterpret_cast_bits<T> $a` (from `qd.bit_cast`).
    BitCast {
        to: String,
        a: u32,
    },
    /// A binary operator by Quadrants' name (`add`, `floordiv`, `cmp_lt`, ...).
    Binary {
        op: String,
        a: u32,
        b: u32,
    },
    Select {
        c: u32,
        a: u32,
        b: u32,
    },
    /// `atomic OP($dest, $val)`.
    Atomic {
        op: String,
        dest: u32,
        val: u32,
    },
    If {
        cond: u32,
        then: Vec<Stmt>,
        els: Option<Vec<Stmt>>,
    },
    /// `while true { ... }`.
    While(Vec<Stmt>),
    /// `while control MASK, $cond`: leaves the loop when `cond` is zero.
    WhileControl {
        cond: u32,
    },
    /// `continue`, of the loop `scope` when printed.
    Continue {
        scope: Option<u32>,
    },
    /// A serial `for in range($a, $b)` inside a task.
    RangeFor {
        begin: u32,
        end: u32,
        reversed: bool,
        body: Vec<Stmt>,
    },
    /// `return tmpA, tmpB`: the kernel's return values (`tmpN` is `$N`).
    Return(Vec<u32>),
    /// `N : assert $C, "MESSAGE", $A, $B`: the message as printed (a
    /// message Quadrants made, a bounds check's, spans lines: its
    /// traceback).
    Assert {
        cond: u32,
        message: String,
        args: Vec<u32>,
    },
    /// `print "TEXT", $A, ...`: its pieces, strings unquoted. Quadrants
    /// prints it without a number; its statement's `id` is [`NO_ID`].
    Print(Vec<Piece>),
    /// `call "F", args = {$a, $b}`: a call of the real function (a
    /// `qd.real_func`) compiled as `F`. Its type is a pointer to the struct
    /// of its results (`{}` when it returns nothing), which `get_element`
    /// reads.
    Call {
        func: String,
        args: Vec<u32>,
    },
}

/// The `id` of a statement Quadrants prints without a `$N` (`print`).
pub const NO_ID: u32 = u32::MAX;

/// A piece of a `print`: a string or a value `$N`.
#[derive(Clone, Debug, PartialEq)]
pub enum Piece {
    Str(String),
    Value(u32),
}

/// A statement kiln-import does not import, by name, with why.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// The statement as Quadrants names it (`print`, `stack alloc`).
    pub name: String,
    pub why: &'static str,
}

/// Why a statement (or type) by this name cannot be imported.
pub fn refusal(name: &str) -> Refusal {
    let why = match name {
        n if n.starts_with("stack") => "an autodiff stack (reverse-mode AD); KIR has no stacks",
        n if n.contains("Tensor") || n.starts_with("matrix") || n == "shift ptr" || n == "get_element" => {
            "a matrix or vector held as one value; KIR values are scalars"
        }
        n if n.starts_with("mesh") => "a mesh-for; KIR has no meshes",
        "clear_list" | "offloaded listgen" | "offloaded garbage" | "get root" | "get child" | "lookup"
        | "linearized" | "offset" => "a sparse SNode (or a lowered SNode access); KIR fields are dense",
        n if n.starts_with("sparse SNode") => "KIR fields are dense arrays",
        "internal call" | "so" | "asm" | "bc" => "KIR cannot call into Quadrants' runtime or external code",
        "tls prologue" | "tls_epilogue" | "bls prologue" | "bls_epilogue" => {
            "thread- or block-local storage of a later stage; import the 'offload_to_executable' stage"
        }
        _ => "KIR has no equivalent",
    };
    Refusal { name: name.to_string(), why }
}

/// A parse error or a refusal, at a line of the log.
#[derive(Clone, Debug)]
pub enum Error {
    Syntax {
        message: String,
        span: Span,
    },
    /// `near`: the location is the nearest statement's before it (the
    /// printer gave this one none).
    Refused {
        refusal: Refusal,
        span: Span,
        loc: Option<PyLoc>,
        near: bool,
    },
}

impl Error {
    /// The diagnostic: refusals name the statement, its line (the span) and
    /// its Python location.
    pub fn diagnostic(&self) -> Diagnostic {
        match self {
            Error::Syntax { message, span } => Diagnostic::error(message.clone(), *span),
            Error::Refused { refusal, span, loc, near } => {
                let from = if *near { "near" } else { "from" };
                let at = loc.as_ref().map(|l| format!(" ({from} {l})")).unwrap_or_default();
                Diagnostic::error(format!("cannot import '{}'{at}: {}", refusal.name, refusal.why), *span)
            }
        }
    }
}

fn syntax(message: impl Into<String>, span: Span) -> Error {
    Error::Syntax { message: message.into(), span }
}

/// Quadrants' binary operators (`quadrants/inc/binary_op.inc.h`).
pub const BINARY_OPS: &[&str] = &[
    "mul",
    "add",
    "sub",
    "truediv",
    "floordiv",
    "div",
    "mod",
    "max",
    "min",
    "bit_and",
    "bit_or",
    "bit_xor",
    "bit_shl",
    "bit_shr",
    "bit_sar",
    "cmp_lt",
    "cmp_le",
    "cmp_gt",
    "cmp_ge",
    "cmp_eq",
    "cmp_ne",
    "atan2",
    "pow",
    "logical_or",
    "logical_and",
];

/// Quadrants' unary operators (`quadrants/inc/unary_op.inc.h`), casts apart.
pub const UNARY_OPS: &[&str] = &[
    "neg",
    "sqrt",
    "round",
    "floor",
    "frexp",
    "ceil",
    "abs",
    "sgn",
    "sin",
    "asin",
    "cos",
    "acos",
    "tan",
    "tanh",
    "inv",
    "rcp",
    "exp",
    "log",
    "popcnt",
    "clz",
    "ffs",
    "rsqrt",
    "bit_not",
    "logic_not",
];

/// The tasks of one dump: the lines strictly inside its `kernel {` ... `}`.
pub fn parse_dump(lines: &[Line<'_>]) -> Result<Vec<Task>, Error> {
    let mut p = Parser { lines, pos: 0, last_loc: None, depth: 0, top_level_body: false };
    let mut tasks = Vec::new();
    while p.pos < lines.len() {
        let line = lines[p.pos];
        let mut c = Cursor::new(line);
        let (id, ty) = c.head()?;
        let is_offloaded = ty.is_none() && c.eat(Tok::Eq) && c.eat_word("offloaded");
        if !is_offloaded {
            return Err(syntax(
                "not an offloaded task: this stage is not in task form (import a stage from 'offload_to_executable' on)",
                line.span(),
            ));
        }
        p.pos += 1;
        tasks.push(p.task(id, c)?);
    }
    Ok(tasks)
}

/// The statements of a real function's dump (a `qd.real_func`'s body in
/// statement form, not offloaded): the lines strictly inside its
/// `kernel {` ... `}`.
pub fn parse_function(lines: &[Line<'_>]) -> Result<Vec<Stmt>, Error> {
    let mut p = Parser { lines, pos: 0, last_loc: None, depth: 0, top_level_body: true };
    let body = p.block()?;
    match lines.get(p.pos) {
        Some(line) => Err(syntax("a '}' that closes no block", line.span())),
        None => Ok(body),
    }
}

struct Parser<'l, 'a> {
    lines: &'l [Line<'a>],
    pos: usize,
    /// The last Python location read, for a refused statement without one.
    last_loc: Option<PyLoc>,
    /// Blocks open around the line being read.
    depth: usize,
    /// The lines are a real function's body (statements at the top
    /// level), not offloaded tasks.
    top_level_body: bool,
}

/// How deeply blocks may nest in a dump: KIR's own limit (253 levels in a
/// body) is far above what Quadrants prints, and a bound keeps the
/// recursive parser and lowering off the end of the stack on any input.
pub const MAX_DEPTH: usize = 64;

impl<'a> Parser<'_, 'a> {
    fn at_end_line(&self) -> Line<'a> {
        let none = Line { text: "", start: 0, number: 0 };
        self.lines.get(self.pos).or(self.lines.last()).copied().unwrap_or(none)
    }

    /// The rest of an offloaded statement (its header tokens in `c`), its
    /// blocks and its location.
    fn task(&mut self, id: u32, mut c: Cursor<'_, 'a>) -> Result<Task, Error> {
        let line = c.line;
        let kind = match c.word() {
            None => TaskKind::Serial,
            Some("range_for") => {
                c.expect(Tok::LParen, "'('")?;
                let begin = c.bound()?;
                c.expect(Tok::Comma, "','")?;
                let end = c.bound()?;
                c.expect(Tok::RParen, "')'")?;
                TaskKind::RangeFor { begin, end, block_dim: 0 }
            }
            Some("struct_for") => {
                c.expect(Tok::LParen, "'('")?;
                let (snode, kind) = c.snode()?;
                c.expect(Tok::RParen, "')'")?;
                if kind != "dense" {
                    return Err(self.refuse(&format!("sparse SNode ({kind})"), line));
                }
                TaskKind::StructFor { snode, block_dim: 0 }
            }
            Some("listgen") => return Err(self.refuse("offloaded listgen", line)),
            Some("garbage") => return Err(self.refuse("offloaded garbage", line)),
            Some(w) if w.starts_with("mesh") => return Err(self.refuse("mesh_for", line)),
            Some(w) => return Err(syntax(format!("unknown task kind '{w}'"), line.span())),
        };
        let mut block_dim = 0;
        // key=value options; a serial task has none.
        while let Some(key) = c.word() {
            c.expect(Tok::Eq, "'='")?;
            match key {
                "grid_dim" => {
                    c.int()?;
                }
                "block_dim" => {
                    let here = c.here();
                    block_dim = u32::try_from(c.int()?).map_err(|_| syntax("block_dim out of range", here))?;
                }
                "bls" => {
                    if c.word() != Some("none") {
                        return Err(self.refuse("block-local storage", line));
                    }
                }
                "loop_name" => {
                    c.word();
                }
                "gdw_level" => return Err(self.refuse("graph do-while", line)),
                _ => return Err(syntax(format!("unknown task option '{key}'"), line.span())),
            }
        }
        c.end()?;
        let kind = match kind {
            TaskKind::RangeFor { begin, end, .. } => TaskKind::RangeFor { begin, end, block_dim },
            TaskKind::StructFor { snode, .. } => TaskKind::StructFor { snode, block_dim },
            k => k,
        };
        let mut body = None;
        while self.pos < self.lines.len() {
            let t = self.lines[self.pos].text.trim();
            match t {
                "body {" => {
                    self.pos += 1;
                    body = Some(self.block()?);
                    self.close("}")?;
                }
                "tls prologue {" | "bls prologue {" | "bls_epilogue {" | "tls_epilogue {" => {
                    return Err(self.refuse(t.trim_end_matches(" {"), self.lines[self.pos]))
                }
                _ => break,
            }
        }
        let Some(body) = body else {
            return Err(syntax("an offloaded task without a body", line.span()));
        };
        let loc = self.location();
        Ok(Task { id, kind, body, span: line.span(), loc })
    }

    /// Expects the line `want` (`}` or `} else {`) and steps over it.
    fn close(&mut self, want: &str) -> Result<(), Error> {
        let line = self.at_end_line();
        if self.pos < self.lines.len() && line.text.trim() == want {
            self.pos += 1;
            Ok(())
        } else {
            Err(syntax(format!("expected '{want}'"), line.span()))
        }
    }

    /// Statements up to (not including) a line starting with `}`.
    fn block(&mut self) -> Result<Vec<Stmt>, Error> {
        if self.depth >= MAX_DEPTH {
            return Err(syntax(format!("blocks nested more than {MAX_DEPTH} deep"), self.at_end_line().span()));
        }
        self.depth += 1;
        let r = self.block_inner();
        self.depth -= 1;
        r
    }

    fn block_inner(&mut self) -> Result<Vec<Stmt>, Error> {
        let mut out = Vec::new();
        // A real function's body is the dump's top level: it ends with the
        // lines.
        let top = self.depth == 1 && self.top_level_body;
        while self.pos < self.lines.len() {
            let line = self.lines[self.pos];
            if line.text.trim_start().starts_with('}') {
                return Ok(out);
            }
            self.pos += 1;
            // `decorate $4 : Loop-unique 1`: an analysis fact, no effect.
            if line.text.trim_start().starts_with("decorate ") {
                self.location();
                continue;
            }
            out.push(self.stmt(line)?);
        }
        if top {
            return Ok(out);
        }
        Err(syntax("a block without its closing '}'", self.at_end_line().span()))
    }

    /// A refusal at `line`, with the Python location printed after it (for
    /// a statement that opens a block, after the block).
    fn refuse(&mut self, name: &str, line: Line<'_>) -> Error {
        if line.text.trim_end().ends_with('{') {
            let indent = line.text.len() - line.text.trim_start().len();
            while self.pos < self.lines.len() {
                let l = self.lines[self.pos];
                self.pos += 1;
                if l.text.trim() == "}" && l.text.len() - l.text.trim_start().len() == indent {
                    break;
                }
            }
        }
        match self.location() {
            Some(loc) => Error::Refused { refusal: refusal(name), span: line.span(), loc: Some(loc), near: false },
            None => {
                Error::Refused { refusal: refusal(name), span: line.span(), loc: self.last_loc.clone(), near: true }
            }
        }
    }

    /// The Python location printed after a statement, if any: the `File`
    /// line, then pairs of a source line and a caret line.
    fn location(&mut self) -> Option<PyLoc> {
        let line = self.lines.get(self.pos)?;
        let mut loc = file_line(line.text.trim_start())?;
        self.pos += 1;
        let mut first = true;
        while self.pos + 1 < self.lines.len() {
            let hint = self.lines[self.pos + 1].text;
            if !hint.chars().all(|ch| ch == ' ' || ch == '^') {
                break;
            }
            if first {
                loc.col = hint.find('^').map_or(0, |c| c as u32 + 1);
                first = false;
            }
            self.pos += 2;
        }
        self.last_loc = Some(loc.clone());
        Some(loc)
    }

    /// One statement whose first line is `line` (already consumed), its
    /// blocks and location.
    fn stmt(&mut self, line: Line<'a>) -> Result<Stmt, Error> {
        let mut c = Cursor::new(line);
        // Statements printed without a `$N` name: `print ...`, `N : assert`.
        match c.peek() {
            Some(Tok::Word("print")) => return self.print(&mut c, line),
            Some(Tok::Word(w @ ("so" | "asm" | "bc"))) => return Err(self.refuse(w, line)),
            Some(Tok::Word(_)) => {
                return Err(syntax("not a statement of Quadrants' IR (is the log interleaved?)", line.span()))
            }
            Some(Tok::Num(_)) => {
                c.bump();
                c.eat(Tok::Colon);
                if c.peek() == Some(Tok::Word("assert")) {
                    return self.assert(line);
                }
                let name = c.phrase();
                return Err(self.refuse(if name.is_empty() { "statement" } else { &name }, line));
            }
            _ => {}
        }
        let (id, ty) = c.head()?;
        let kind = if c.eat(Tok::Eq) {
            self.value(&mut c, line)?
        } else if c.eat(Tok::Colon) {
            self.effect(&mut c, line)?
        } else if c.eat_word("continue") {
            let scope = if c.eat(Tok::LParen) {
                c.expect_word("scope")?;
                c.expect(Tok::Eq, "'='")?;
                let s = c.id()?;
                c.expect(Tok::RParen, "')'")?;
                Some(s)
            } else {
                None
            };
            c.end()?;
            Kind::Continue { scope }
        } else {
            return Err(c.unexpected("'=', ':' or 'continue'"));
        };
        // Only an ndarray's address and a call's results have a type that
        // is no scalar or pointer.
        if let (Some(Ty::Other(t)), false) = (&ty, matches!(kind, Kind::ArgAddr(_) | Kind::Call { .. })) {
            return Err(self.refuse_type(t, line));
        }
        let (loc, near) = match self.location() {
            Some(l) => (Some(l), false),
            None => (self.last_loc.clone(), true),
        };
        Ok(Stmt { id, ty, kind, span: line.span(), loc, near })
    }

    /// `N : assert $C, "MESSAGE", $A, ...` (its first line `line`, already
    /// consumed), the message read up to its closing quote, on this line or
    /// a later one (at most [`MAX_ASSERT_LINES`]: Quadrants prints it as it
    /// is, newlines and all).
    fn assert(&mut self, line: Line<'a>) -> Result<Stmt, Error> {
        let bad = |what: &str| {
            syntax(format!("{what} (expected 'N : assert $C, \"MESSAGE\"', then ', $A' each)"), line.span())
        };
        let (num, rest) = line.text.trim_start().split_once(" : assert ").ok_or_else(|| bad("an assert"))?;
        let id = num.trim().parse::<u32>().map_err(|_| bad("an assert's number"))?;
        let (cond, first) = rest.split_once(", \"").ok_or_else(|| bad("an assert without its message"))?;
        let cond = cond
            .trim()
            .strip_prefix('$')
            .and_then(|n| n.parse::<u32>().ok())
            .ok_or_else(|| bad("an assert's condition"))?;
        // On one line, the message ends at the last quote; over several
        // (a traceback, which ends with a newline), at a line that starts
        // with the quote: a traceback's source lines may hold quotes.
        let (message, args) = match first.rfind('"').and_then(|q| Some((q, values_after(&first[q + 1..])?))) {
            Some((q, args)) => (first[..q].to_string(), args),
            None => {
                let mut text = first.to_string();
                let mut closed = None;
                for _ in 0..MAX_ASSERT_LINES {
                    let Some(next) = self.lines.get(self.pos) else { break };
                    self.pos += 1;
                    text.push('\n');
                    if let Some(args) = next.text.strip_prefix('"').and_then(values_after) {
                        closed = Some(args);
                        break;
                    }
                    text.push_str(next.text);
                }
                (text, closed.ok_or_else(|| bad("an assert's message that does not close"))?)
            }
        };
        let (loc, near) = match self.location() {
            Some(l) => (Some(l), false),
            None => (self.last_loc.clone(), true),
        };
        Ok(Stmt { id, ty: None, kind: Kind::Assert { cond, message, args }, span: line.span(), loc, near })
    }

    /// `print "TEXT", $A, ...` (`c` at `print`): strings and values,
    /// separated by commas.
    fn print(&mut self, c: &mut Cursor<'_, 'a>, line: Line<'a>) -> Result<Stmt, Error> {
        c.bump();
        let mut pieces = Vec::new();
        loop {
            match c.peek() {
                Some(Tok::Str(q)) => {
                    c.bump();
                    pieces.push(Piece::Str(super::lexer::c_unquote(q)));
                }
                Some(Tok::Id(_)) => pieces.push(Piece::Value(c.id()?)),
                _ => return Err(c.unexpected("a string or '$N'")),
            }
            if !c.eat(Tok::Comma) {
                break;
            }
        }
        c.end()?;
        let (loc, near) = match self.location() {
            Some(l) => (Some(l), false),
            None => (self.last_loc.clone(), true),
        };
        Ok(Stmt { id: NO_ID, ty: None, kind: Kind::Print(pieces), span: line.span(), loc, near })
    }

    fn refuse_type(&mut self, ty: &str, line: Line<'_>) -> Error {
        let name = if ty.contains("Tensor") { format!("type <{ty}> (matrix)") } else { format!("type <{ty}>") };
        let mut e = self.refuse(&name, line);
        if let Error::Refused { refusal, .. } = &mut e {
            refusal.why = if ty.contains("Tensor") {
                "a matrix or vector held as one value; KIR values are scalars"
            } else {
                "KIR has no such type"
            };
        }
        e
    }

    /// What follows `$N =`.
    fn value(&mut self, c: &mut Cursor<'_, 'a>, line: Line<'a>) -> Result<Kind, Error> {
        if c.peek() == Some(Tok::LBracket) {
            let comps = c.id_list()?;
            c.end()?;
            return Ok(Kind::MatrixInit(comps));
        }
        let start = c.i;
        let Some(w) = c.word() else { return Err(c.unexpected("an operation")) };
        let kind = match w {
            "const" => {
                let neg = c.eat(Tok::Minus);
                let v = match c.bump() {
                    Some(Tok::Num(n)) | Some(Tok::Word(n)) => n,
                    _ => return Err(c.unexpected("a constant")),
                };
                Kind::Const(if neg { format!("-{v}") } else { v.to_string() })
            }
            "rand" => {
                c.expect(Tok::LParen, "'('")?;
                c.expect(Tok::RParen, "')'")?;
                Kind::Rand
            }
            "alloca" => {
                if c.eat(Tok::LParen) {
                    return Err(self.refuse("alloca(shared)", line));
                }
                Kind::Alloca
            }
            "argload" | "argaddr" => {
                let ids = c.num_list()?;
                if ids.len() != 1 {
                    return Err(self.refuse(&format!("{w} of a struct argument"), line));
                }
                if w == "argload" {
                    Kind::ArgLoad(ids[0])
                } else {
                    Kind::ArgAddr(ids[0])
                }
            }
            "external_tensor_shape_along_axis" => {
                let axis = c.int()? as u32;
                c.expect(Tok::Comma, "','")?;
                c.expect_word("arg_id")?;
                let ids = c.num_list()?;
                if ids.len() != 1 {
                    return Err(self.refuse("external_tensor_shape_along_axis of a struct argument", line));
                }
                Kind::ShapeAlongAxis { axis, arg: ids[0] }
            }
            "loop" => {
                let lp = c.id()?;
                match c.word() {
                    Some("index") => match c.peek() {
                        Some(Tok::Num(_)) => Kind::LoopIndex { lp, index: c.int()? as u32 },
                        _ => return Err(self.refuse("loop index linear", line)),
                    },
                    Some("block") => return Err(self.refuse("loop block corner index", line)),
                    _ => return Err(c.unexpected("'index'")),
                }
            }
            "global" => self.global(c, line, start)?,
            "local" => {
                c.expect_word("load")?;
                c.expect(Tok::LBracket, "'['")?;
                let a = c.id()?;
                c.expect(Tok::RBracket, "']'")?;
                Kind::LocalLoad(a)
            }
            "external_ptr" => self.external_ptr(c, line)?,
            "shift" => {
                c.expect_word("ptr")?;
                c.expect(Tok::LBracket, "'['")?;
                let base = c.id()?;
                c.expect(Tok::Plus, "'+'")?;
                let offset = c.id()?;
                c.expect(Tok::RBracket, "']'")?;
                Kind::ShiftPtr { base, offset }
            }
            "call" => {
                let Some(Tok::Str(q)) = c.bump() else { return Err(c.unexpected("the called function's name")) };
                let func = super::lexer::c_unquote(q);
                c.expect(Tok::Comma, "','")?;
                c.expect_word("args")?;
                c.expect(Tok::Eq, "'='")?;
                Kind::Call { func, args: c.id_set()? }
            }
            "get_element" => {
                c.expect(Tok::LParen, "'('")?;
                let base = c.id()?;
                let mut path = Vec::new();
                while c.eat(Tok::Comma) {
                    path.push(u32::try_from(c.int()?).map_err(|_| syntax("member number too large", c.here()))?);
                }
                c.expect(Tok::RParen, "')'")?;
                Kind::GetElement { base, path }
            }
            "select" => {
                c.expect(Tok::LParen, "'('")?;
                let cnd = c.id()?;
                c.expect(Tok::Comma, "','")?;
                let a = c.id()?;
                c.expect(Tok::Comma, "','")?;
                let b = c.id()?;
                c.expect(Tok::RParen, "')'")?;
                Kind::Select { c: cnd, a, b }
            }
            "atomic" => {
                let Some(op) = c.word() else { return Err(c.unexpected("an atomic operator")) };
                c.expect(Tok::LParen, "'('")?;
                let dest = c.id()?;
                c.expect(Tok::Comma, "','")?;
                let val = c.id()?;
                if !c.eat(Tok::RParen) {
                    return Err(self.refuse(&format!("atomic {op}"), line));
                }
                Kind::Atomic { op: op.to_string(), dest, val }
            }
            op @ ("cast_value" | "reinterpret_cast_bits") => {
                // A vector's cast is its components', each to the element type.
                let (Some(Ty::Prim(to)) | Some(Ty::Tensor { prim: to, ptr: false, .. })) = c.type_hint()? else {
                    return Err(self.refuse(&format!("{op} to a non-scalar type"), line));
                };
                let a = c.id()?;
                if op == "cast_value" {
                    Kind::Cast { to, a }
                } else {
                    Kind::BitCast { to, a }
                }
            }
            op if BINARY_OPS.contains(&op) && matches!(c.peek2(), (Some(Tok::Id(_)), Some(Tok::Id(_)))) => {
                let a = c.id()?;
                let b = c.id()?;
                Kind::Binary { op: op.to_string(), a, b }
            }
            op if UNARY_OPS.contains(&op) && matches!(c.peek(), Some(Tok::Id(_))) => {
                Kind::Unary { op: op.to_string(), a: c.id()? }
            }
            _ => {
                c.i = start;
                return Err(self.refuse(&c.phrase(), line));
            }
        };
        c.end()?;
        Ok(kind)
    }

    /// What follows `global` in a value: a pointer to a place, a load, or
    /// a temporary.
    fn global(&mut self, c: &mut Cursor<'_, 'a>, line: Line<'a>, start: usize) -> Result<Kind, Error> {
        Ok(match c.word() {
            Some("ptr") => {
                c.expect(Tok::LBracket, "'['")?;
                let (place, kind) = c.snode()?;
                if kind != "place" {
                    return Err(syntax(format!("a global pointer to S{place}{kind}, not to a place"), line.span()));
                }
                // The place's element type: `<f32>`.
                c.type_hint()?;
                c.expect(Tok::RBracket, "']'")?;
                c.expect(Tok::Comma, "','")?;
                c.expect_word("index")?;
                let indices = c.id_list()?;
                c.expect_word("activate")?;
                c.expect(Tok::Eq, "'='")?;
                c.word();
                Kind::GlobalPtr { place, indices }
            }
            Some("load") => {
                c.eat_word("volatile");
                Kind::GlobalLoad(c.id()?)
            }
            Some("tmp") => {
                c.expect_word("var")?;
                c.expect(Tok::LParen, "'('")?;
                c.expect_word("offset")?;
                c.expect(Tok::Eq, "'='")?;
                let offset = c.int()?;
                c.expect_word("B")?;
                c.expect(Tok::RParen, "')'")?;
                Kind::GlobalTmp { offset }
            }
            _ => {
                c.i = start;
                return Err(self.refuse(&c.phrase(), line));
            }
        })
    }

    /// What follows `external_ptr`: the ndarray's base, its indices, the
    /// element shape, and the layout (a gradient's is refused).
    fn external_ptr(&mut self, c: &mut Cursor<'_, 'a>, line: Line<'a>) -> Result<Kind, Error> {
        let base = c.id()?;
        c.expect(Tok::Comma, "','")?;
        let indices = c.id_list()?;
        let mut element_shape = Vec::new();
        if c.eat(Tok::Comma) {
            c.expect(Tok::LParen, "'('")?;
            while !c.eat(Tok::RParen) {
                if !element_shape.is_empty() {
                    c.expect(Tok::Comma, "','")?;
                }
                element_shape.push(u32::try_from(c.int()?).map_err(|_| syntax("extent too large", c.here()))?);
            }
        }
        c.expect_word("layout")?;
        c.expect(Tok::Eq, "'='")?;
        c.word();
        c.expect_word("is_grad")?;
        c.expect(Tok::Eq, "'='")?;
        if c.word() != Some("false") {
            return Err(self.refuse("external_ptr to a gradient", line));
        }
        Ok(Kind::ExternalPtr { base, indices, element_shape })
    }

    /// What follows `$N :`.
    fn effect(&mut self, c: &mut Cursor<'_, 'a>, line: Line<'a>) -> Result<Kind, Error> {
        let start = c.i;
        let kind = match c.word() {
            Some(w @ ("global" | "local")) => {
                c.expect_word("store")?;
                c.expect(Tok::LBracket, "'['")?;
                let dest = c.id()?;
                c.expect(Tok::Arrow, "'<-'")?;
                let val = c.id()?;
                c.expect(Tok::RBracket, "']'")?;
                c.end()?;
                if w == "global" {
                    Kind::GlobalStore { dest, val }
                } else {
                    Kind::LocalStore { dest, val }
                }
            }
            Some("if") => {
                let cond = c.id()?;
                c.expect(Tok::LBrace, "'{'")?;
                c.end()?;
                let then = self.block()?;
                let els = if self.at_end_line().text.trim() == "} else {" {
                    self.pos += 1;
                    Some(self.block()?)
                } else {
                    None
                };
                self.close("}")?;
                Kind::If { cond, then, els }
            }
            Some("while") => match c.word() {
                Some("true") => {
                    c.expect(Tok::LBrace, "'{'")?;
                    c.end()?;
                    let body = self.block()?;
                    self.close("}")?;
                    Kind::While(body)
                }
                Some("control") => {
                    // The mask (`nullptr` once simplified; an `alloca` of -1
                    // in a real function's dump, which is not) matters
                    // only to a SIMD backend: Quadrants' LLVM code
                    // generator breaks when the condition is zero.
                    if !c.eat_word("nullptr") {
                        c.id()?;
                    }
                    c.expect(Tok::Comma, "','")?;
                    let cond = c.id()?;
                    c.end()?;
                    Kind::WhileControl { cond }
                }
                _ => return Err(c.unexpected("'true' or 'control'")),
            },
            Some("return") => {
                let mut vals = Vec::new();
                loop {
                    let Some(n) = c.word().and_then(|w| w.strip_prefix("tmp")).and_then(|n| n.parse().ok()) else {
                        return Err(c.unexpected("a returned value ('tmpN')"));
                    };
                    vals.push(n);
                    if !c.eat(Tok::Comma) {
                        break;
                    }
                }
                c.end()?;
                Kind::Return(vals)
            }
            Some(w @ ("for" | "reversed")) => {
                let reversed = w == "reversed";
                if reversed {
                    c.expect_word("for")?;
                }
                c.expect_word("in")?;
                c.expect_word("range")?;
                c.expect(Tok::LParen, "'('")?;
                let begin = c.id()?;
                c.expect(Tok::Comma, "','")?;
                let end = c.id()?;
                c.expect(Tok::RParen, "')'")?;
                if c.peek() == Some(Tok::LParen) {
                    return Err(self.refuse("bit-vectorized for", line));
                }
                c.expect_word("block_dim")?;
                c.expect(Tok::Eq, "'='")?;
                c.bump();
                if c.eat_word("loop_name") {
                    c.expect(Tok::Eq, "'='")?;
                    c.word();
                }
                c.expect(Tok::LBrace, "'{'")?;
                c.end()?;
                let body = self.block()?;
                self.close("}")?;
                Kind::RangeFor { begin, end, reversed, body }
            }
            _ => {
                c.i = start;
                let name = c.phrase();
                return Err(self.refuse(if name.is_empty() { "statement" } else { &name }, line));
            }
        };
        Ok(kind)
    }
}

/// `File "F", line N, in K:` as a location (column still unknown).
fn file_line(t: &str) -> Option<PyLoc> {
    let rest = t.strip_prefix("File \"")?;
    let q = rest.rfind("\", line ")?;
    let file = &rest[..q];
    let rest = &rest[q + "\", line ".len()..];
    let comma = rest.find(", in ")?;
    let line = rest[..comma].parse().ok()?;
    let func = rest[comma + ", in ".len()..].strip_suffix(':')?;
    Some(PyLoc { file: file.to_string(), line, col: 0, func: func.to_string() })
}

#[cfg(test)]
mod tests;

/// The scalar members of a struct type as the printer writes it
/// (`*struct[none]{0(x, at 0B): f32, 1(v, at 4B): struct[none]{0(v_0, at
/// 0B): f32, ...}}`), depth first: each one's path of member numbers (what
/// `get_element` names) and its primitive type. `None` when the text is
/// not such a type.
pub fn struct_leaves(text: &str) -> Option<Vec<(Vec<u32>, String)>> {
    let mut out = Vec::new();
    let rest = struct_members(text.strip_prefix('*').unwrap_or(text).trim(), &mut Vec::new(), &mut out)?;
    rest.trim().is_empty().then_some(out)
}

/// One `struct[...]{...}` at the start of `t`, its leaves pushed under
/// `path`; the text after it.
fn struct_members<'t>(t: &'t str, path: &mut Vec<u32>, out: &mut Vec<(Vec<u32>, String)>) -> Option<&'t str> {
    let t = t.strip_prefix("struct[")?;
    let t = &t[t.find(']')? + 1..];
    let mut t = t.strip_prefix('{')?;
    for first in std::iter::successors(Some(true), |_| Some(false)) {
        t = t.trim_start();
        if let Some(r) = t.strip_prefix('}') {
            return Some(r);
        }
        if !first {
            t = t.strip_prefix(',')?.trim_start();
        }
        let open = t.find('(')?;
        let number: u32 = t[..open].trim().parse().ok()?;
        let close = t.find("):")?;
        t = t[close + 2..].trim_start();
        path.push(number);
        if t.starts_with("struct[") {
            t = struct_members(t, path, out)?;
        } else {
            let end = t.find([',', '}'])?;
            let prim = t[..end].trim();
            if prim.is_empty() || !prim.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return None;
            }
            out.push((path.clone(), prim.to_string()));
            t = &t[end..];
        }
        path.pop();
    }
    None
}

/// The most lines an assert's message spans (a bounds check's is its
/// message and a traceback of a few lines).
const MAX_ASSERT_LINES: usize = 64;

/// The values after an assert's closing quote (`, $A, $B`), when that is
/// all the rest of its line holds.
fn values_after(tail: &str) -> Option<Vec<u32>> {
    let mut args = Vec::new();
    let mut tail = tail.trim_end();
    while !tail.is_empty() {
        let rest = tail.strip_prefix(", $")?;
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        args.push(rest[..digits].parse().ok()?);
        tail = &rest[digits..];
    }
    Some(args)
}
