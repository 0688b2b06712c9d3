//! The KIR lexer: text to tokens with byte spans (a logos state machine).
//!
//! Owns: the lexical structure of KIR — comments (`;` to end of line),
//! sigil names (`%x`, `@f.1`, `%0`), integer and float literals, keywords
//! and punctuation — and [`split_items`], the cheap scan that cuts a file
//! into top-level chunks for error recovery and parallel parsing.
//!
//! Must never: allocate per token (every token borrows its text from the
//! input), interpret literals (their meaning depends on the type they are
//! given, which is the parser's business), or panic on any input.

use crate::ir::{BinOp, CmpOp, Scalar, Span, UnOp};
use logos::Logos;
use std::fmt;

/// One token. Names and literals borrow their text from the input; names
/// exclude the sigil.
#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(skip r"[ \t\r\n\f]+")]
#[logos(skip(r";[^\n]*", allow_greedy = true))]
pub enum Tok<'a> {
    /// `%name` or `%0` (text without the `%`).
    #[regex(r"%[A-Za-z_][A-Za-z0-9_.]*", |lex| &lex.slice()[1..])]
    #[regex(r"%[0-9]+", |lex| &lex.slice()[1..])]
    Local(&'a str),
    /// `@name` or `@0` (text without the `@`).
    #[regex(r"@[A-Za-z_][A-Za-z0-9_.]*", |lex| &lex.slice()[1..])]
    #[regex(r"@[0-9]+", |lex| &lex.slice()[1..])]
    Global(&'a str),
    /// A decimal integer literal, possibly negative: `42`, `-7`.
    #[regex(r"-?[0-9]+", |lex| lex.slice())]
    Int(&'a str),
    /// A hexadecimal literal, possibly negative: `0x2a`, `0x7fc00001`.
    #[regex(r"-?0[xX][0-9A-Fa-f]+", |lex| lex.slice())]
    Hex(&'a str),
    /// A decimal float literal: `1.0`, `-2.5e-3`, `1e20`, `inf`, `-inf`,
    /// `nan`.
    #[regex(r"-?[0-9]+\.[0-9]+([eE][+-]?[0-9]+)?", |lex| lex.slice())]
    #[regex(r"-?[0-9]+[eE][+-]?[0-9]+", |lex| lex.slice())]
    #[token("inf", |lex| lex.slice())]
    #[token("-inf", |lex| lex.slice())]
    #[token("nan", |lex| lex.slice())]
    Float(&'a str),
    #[token("true")]
    True,
    #[token("false")]
    False,

    /// A scalar type keyword.
    #[token("i1", |_| Scalar::I1)]
    #[token("i8", |_| Scalar::I8)]
    #[token("i16", |_| Scalar::I16)]
    #[token("i32", |_| Scalar::I32)]
    #[token("i64", |_| Scalar::I64)]
    #[token("u8", |_| Scalar::U8)]
    #[token("u16", |_| Scalar::U16)]
    #[token("u32", |_| Scalar::U32)]
    #[token("u64", |_| Scalar::U64)]
    #[token("f16", |_| Scalar::F16)]
    #[token("f32", |_| Scalar::F32)]
    #[token("f64", |_| Scalar::F64)]
    Type(Scalar),
    /// A binary operator keyword (`add` .. `atan2`); `atomic` accepts the
    /// ones that have an atomic form.
    #[token("add", |_| BinOp::Add)]
    #[token("sub", |_| BinOp::Sub)]
    #[token("mul", |_| BinOp::Mul)]
    #[token("div", |_| BinOp::Div)]
    #[token("rem", |_| BinOp::Rem)]
    #[token("min", |_| BinOp::Min)]
    #[token("max", |_| BinOp::Max)]
    #[token("and", |_| BinOp::And)]
    #[token("or", |_| BinOp::Or)]
    #[token("xor", |_| BinOp::Xor)]
    #[token("shl", |_| BinOp::Shl)]
    #[token("shr", |_| BinOp::Shr)]
    #[token("ushr", |_| BinOp::Ushr)]
    #[token("pow", |_| BinOp::Pow)]
    #[token("atan2", |_| BinOp::Atan2)]
    BinOp(BinOp),
    /// A unary operator keyword (`neg` .. `round`).
    #[token("neg", |_| UnOp::Neg)]
    #[token("not", |_| UnOp::Not)]
    #[token("abs", |_| UnOp::Abs)]
    #[token("sqrt", |_| UnOp::Sqrt)]
    #[token("sin", |_| UnOp::Sin)]
    #[token("cos", |_| UnOp::Cos)]
    #[token("tan", |_| UnOp::Tan)]
    #[token("asin", |_| UnOp::Asin)]
    #[token("acos", |_| UnOp::Acos)]
    #[token("atan", |_| UnOp::Atan)]
    #[token("tanh", |_| UnOp::Tanh)]
    #[token("exp", |_| UnOp::Exp)]
    #[token("log", |_| UnOp::Log)]
    #[token("floor", |_| UnOp::Floor)]
    #[token("ceil", |_| UnOp::Ceil)]
    #[token("round", |_| UnOp::Round)]
    UnOp(UnOp),
    /// A comparison predicate keyword (`lt` .. `ne`).
    #[token("lt", |_| CmpOp::Lt)]
    #[token("le", |_| CmpOp::Le)]
    #[token("gt", |_| CmpOp::Gt)]
    #[token("ge", |_| CmpOp::Ge)]
    #[token("eq", |_| CmpOp::Eq)]
    #[token("ne", |_| CmpOp::Ne)]
    Pred(CmpOp),

    #[token("module")]
    Module,
    #[token("field")]
    Field,
    #[token("func")]
    Func,
    #[token("kernel")]
    Kernel,
    #[token("task")]
    Task,
    #[token("of")]
    Of,
    #[token("serial")]
    Serial,
    #[token("range_for")]
    RangeFor,
    #[token("struct_for")]
    StructFor,
    #[token("block_dim")]
    BlockDim,
    #[token("launch")]
    Launch,
    #[token("assert")]
    Assert,
    #[token("print")]
    Print,
    #[token("const")]
    Const,
    #[token("cmp")]
    Cmp,
    #[token("cast")]
    Cast,
    #[token("bitcast")]
    Bitcast,
    #[token("to")]
    To,
    #[token("select")]
    Select,
    #[token("load")]
    Load,
    #[token("store")]
    Store,
    #[token("atomic")]
    Atomic,
    #[token("alloca")]
    Alloca,
    #[token("random")]
    Random,
    #[token("site")]
    Site,
    #[token("call")]
    Call,
    /// `ret` followed by its operand (the lexer looks ahead, see [`Lexer`]).
    #[token("ret")]
    Ret,
    /// `ret` without an operand: what `ret` becomes when the next tokens
    /// are not a value that is then not assigned (`ret` `%x` `=` is a bare
    /// `ret` followed by a statement). This keeps the grammar LR(1).
    RetVoid,
    #[token("if")]
    If,
    #[token("else")]
    Else,
    #[token("for")]
    For,
    #[token("in")]
    In,
    #[token("while")]
    While,
    #[token("break")]
    Break,
    #[token("continue")]
    Continue,
    /// `loc`, which starts a statement's source location.
    #[token("loc")]
    Loc,
    /// A string literal, without its quotes and undecoded: any character
    /// but `"`, `\`, `{`, `}`, `;` and control characters, or `\XX`, two
    /// hex digits of an ASCII byte (so that the byte scans of
    /// [`split_items`] never meet a brace or a comment inside one).
    #[regex(r#""([^"\\{};\x00-\x1f\x7f]|\\[0-9A-Fa-f][0-9A-Fa-f])*""#, |lex| { let s = lex.slice(); &s[1..s.len() - 1] })]
    Str(&'a str),
    /// Any other bare word (never valid; kept whole so that errors can
    /// name it, e.g. an unknown type `f128`).
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice(), priority = 1)]
    Word(&'a str),

    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token("=")]
    Eq,
    #[token("->")]
    Arrow,
    #[token("..")]
    DotDot,
}

impl fmt::Display for Tok<'_> {
    /// How a token is named in "found X" messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Local(n) => write!(f, "`%{n}`"),
            Tok::Global(n) => write!(f, "`@{n}`"),
            Tok::Int(s) | Tok::Hex(s) => write!(f, "integer `{s}`"),
            Tok::Float(s) => write!(f, "float `{s}`"),
            Tok::True => f.write_str("`true`"),
            Tok::False => f.write_str("`false`"),
            Tok::Type(t) => write!(f, "`{t}`"),
            Tok::BinOp(o) => write!(f, "`{}`", o.keyword()),
            Tok::UnOp(o) => write!(f, "`{}`", o.keyword()),
            Tok::Pred(o) => write!(f, "`{}`", o.keyword()),
            Tok::Word(w) => write!(f, "`{w}`"),
            Tok::Str(s) => write!(f, "string \"{s}\""),
            other => write!(f, "`{}`", other.keyword_text()),
        }
    }
}

impl Tok<'_> {
    /// The fixed text of a keyword or punctuation token ("" for the others).
    fn keyword_text(&self) -> &'static str {
        match self {
            Tok::Module => "module",
            Tok::Field => "field",
            Tok::Func => "func",
            Tok::Kernel => "kernel",
            Tok::Task => "task",
            Tok::Of => "of",
            Tok::Serial => "serial",
            Tok::RangeFor => "range_for",
            Tok::StructFor => "struct_for",
            Tok::BlockDim => "block_dim",
            Tok::Launch => "launch",
            Tok::Assert => "assert",
            Tok::Print => "print",
            Tok::Const => "const",
            Tok::Cmp => "cmp",
            Tok::Cast => "cast",
            Tok::Bitcast => "bitcast",
            Tok::To => "to",
            Tok::Select => "select",
            Tok::Load => "load",
            Tok::Store => "store",
            Tok::Atomic => "atomic",
            Tok::Alloca => "alloca",
            Tok::Random => "random",
            Tok::Site => "site",
            Tok::Call => "call",
            Tok::Ret | Tok::RetVoid => "ret",
            Tok::If => "if",
            Tok::Else => "else",
            Tok::For => "for",
            Tok::In => "in",
            Tok::While => "while",
            Tok::Break => "break",
            Tok::Continue => "continue",
            Tok::Loc => "loc",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::Comma => ",",
            Tok::Colon => ":",
            Tok::Eq => "=",
            Tok::Arrow => "->",
            Tok::DotDot => "..",
            _ => "",
        }
    }
}

/// A character sequence that is no token, with its span.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LexError {
    pub span: Span,
}

/// The lexer over one piece of the input; spans are offsets into the whole
/// input (`base` is where the piece starts). Yields what lalrpop's external
/// lexer interface expects.
///
/// `ret` is the one place where KIR needs two tokens of lookahead (is
/// `ret %x` a return of `%x`, or a bare `ret` followed by `%x = ...`?); the
/// lexer resolves it by peeking and emitting [`Tok::Ret`] or
/// [`Tok::RetVoid`].
pub struct Lexer<'a> {
    inner: logos::Lexer<'a, Tok<'a>>,
    base: usize,
    /// Tokens lexed while peeking after `ret`, next first.
    peeked: std::collections::VecDeque<LexItem<'a>>,
}

/// What the lexer yields: a token with its span, or a lexical error.
pub type LexItem<'a> = Result<(usize, Tok<'a>, usize), LexError>;

impl<'a> Lexer<'a> {
    /// Lexes `text`, which starts at byte `base` of the whole input.
    pub fn new(text: &'a str, base: usize) -> Lexer<'a> {
        Lexer { inner: Tok::lexer(text), base, peeked: Default::default() }
    }

    fn raw(&mut self) -> Option<LexItem<'a>> {
        match self.peeked.pop_front() {
            Some(t) => Some(t),
            None => self.raw_fresh(),
        }
    }

    fn peek(&mut self, n: usize) -> Option<&LexItem<'a>> {
        while self.peeked.len() <= n {
            let t = self.raw_fresh()?;
            self.peeked.push_back(t);
        }
        self.peeked.get(n)
    }

    /// The next token from the input itself, bypassing the peek buffer.
    fn raw_fresh(&mut self) -> Option<LexItem<'a>> {
        let tok = self.inner.next()?;
        let r = self.inner.span();
        let (start, end) = (self.base + r.start, self.base + r.end);
        Some(match tok {
            Ok(t) => Ok((start, t, end)),
            Err(()) => Err(LexError { span: Span::new(start, end) }),
        })
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = LexItem<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        let t = self.raw()?;
        if let Ok((s, Tok::Ret, e)) = t {
            let operand = matches!(self.peek(0), Some(Ok((_, Tok::Local(_), _))))
                && !matches!(self.peek(1), Some(Ok((_, Tok::Eq, _))));
            if !operand {
                return Some(Ok((s, Tok::RetVoid, e)));
            }
        }
        Some(t)
    }
}

/// How deeply blocks may nest. Deeper input is rejected before parsing:
/// lowering and dropping a syntax tree recurse once per level.
pub const MAX_DEPTH: usize = 256;

/// What a top-level chunk starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkKind {
    Field,
    Func,
    Kernel,
    Task,
    Module,
    /// Anything else (an empty file, or text that is no item).
    Other,
}

/// A piece of the input holding one top-level form (or garbage before the
/// first one).
#[derive(Clone, Debug, PartialEq)]
pub struct Chunk {
    pub start: usize,
    pub end: usize,
    pub kind: ChunkKind,
    /// Where blocks first nest deeper than [`MAX_DEPTH`], if they do.
    pub too_deep: Option<usize>,
}

/// Cuts `text` into top-level chunks: a new chunk starts at each item
/// keyword (`field`, `func`, `kernel`, `task`, `module`) outside braces.
/// Each chunk parses on its own, so one syntax error costs one item, and
/// chunks can be parsed in parallel. The scan is byte-level (braces only
/// ever appear as tokens or in comments), far cheaper than lexing.
///
/// The chunks cover the text; there is always at least one.
pub fn split_items(text: &str) -> Vec<Chunk> {
    let b = text.as_bytes();
    let mut chunks = vec![Chunk { start: 0, end: b.len(), kind: ChunkKind::Other, too_deep: None }];
    // Whether the current chunk holds anything but blanks and comments.
    let mut content = false;
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        if depth > 0 {
            // Inside a block only braces and comments matter.
            i = skip_to_brace_or_comment(b, i);
            if i == b.len() {
                break;
            }
        }
        let c = b[i];
        match c {
            b';' => {
                i = match b[i..].iter().position(|&c| c == b'\n') {
                    Some(n) => i + n,
                    None => b.len(),
                };
                continue;
            }
            b' ' | b'\t' | b'\r' | b'\n' => {
                i += 1;
                continue;
            }
            b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    if let Some(last) = chunks.last_mut() {
                        last.too_deep.get_or_insert(i);
                    }
                }
            }
            b'}' => depth = depth.saturating_sub(1),
            _ if c.is_ascii_alphanumeric() || matches!(c, b'%' | b'@' | b'_' | b'-' | b'.') => {
                // A word, name or number: skip it whole so that the letters
                // of `%field` or `1e5` are not mistaken for a keyword.
                let start = i;
                i += 1;
                while i < b.len() && is_name_byte(b[i]) {
                    i += 1;
                }
                let kind = match &b[start..i] {
                    b"field" => ChunkKind::Field,
                    b"func" => ChunkKind::Func,
                    b"kernel" => ChunkKind::Kernel,
                    b"task" => ChunkKind::Task,
                    b"module" => ChunkKind::Module,
                    _ => ChunkKind::Other,
                };
                if depth == 0 && kind != ChunkKind::Other {
                    if content {
                        if let Some(last) = chunks.last_mut() {
                            last.end = start;
                        }
                        chunks.push(Chunk { start, end: b.len(), kind, too_deep: None });
                    } else if let Some(last) = chunks.last_mut() {
                        last.kind = kind;
                    }
                }
                content = true;
                continue;
            }
            _ => {}
        }
        content = true;
        i += 1;
    }
    chunks
}

/// The index of the first `{`, `}` or `;` at or after `i` (or the end),
/// eight bytes at a time: most of a module's text is inside blocks.
fn skip_to_brace_or_comment(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Non-zero iff some byte of `w` equals `c` (the classic zero-byte test).
    let has = |w: u64, c: u8| {
        let x = w ^ (ONES * c as u64);
        x.wrapping_sub(ONES) & !x & HIGHS
    };
    while let Some(word) = b.get(i..i + 8) {
        let mut a = [0u8; 8];
        a.copy_from_slice(word);
        let w = u64::from_le_bytes(a);
        if has(w, b'{') | has(w, b'}') | has(w, b';') != 0 {
            break;
        }
        i += 8;
    }
    while i < b.len() && !matches!(b[i], b'{' | b'}' | b';') {
        i += 1;
    }
    i
}

/// The first `{` in `text[start..end]`, skipping comments.
pub fn first_brace(text: &str, start: usize, end: usize) -> Option<usize> {
    let b = text.as_bytes().get(start..end)?;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b';' => i += b[i..].iter().position(|&c| c == b'\n').unwrap_or(b.len() - i),
            b'{' => return Some(start + i),
            _ => i += 1,
        }
    }
    None
}

/// The first `{` in `text[start..end]` and the `}` that closes it, skipping
/// comments (the same byte scan as [`split_items`]); None if there is no
/// `{` or it is not closed before `end`.
pub fn body_braces(text: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes().get(start..end)?;
    let mut open = None;
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b';' => {
                i += b[i..].iter().position(|&c| c == b'\n').unwrap_or(b.len() - i);
                continue;
            }
            b'{' => {
                open.get_or_insert(start + i);
                depth += 1;
            }
            b'}' if open.is_some() => {
                depth -= 1;
                if depth == 0 {
                    return open.map(|o| (o, start + i));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Whether `text` holds nothing but blanks and comments.
pub fn is_blank(text: &str) -> bool {
    text.lines().all(|l| {
        let l = l.trim_start_matches([' ', '\t', '\r']);
        l.is_empty() || l.starts_with(';')
    })
}

fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.'
}

/// Whether a string literal writes `c` as an escape (`\XX`): the quote,
/// the backslash, what the byte scans of [`split_items`] look for (braces
/// and the comment sign) and control characters.
fn escaped_in_strings(c: char) -> bool {
    matches!(c, '"' | '\\' | '{' | '}' | ';') || c.is_ascii_control()
}

/// `s` as a string literal, quotes included: every character that
/// [`escaped_in_strings`] names written `\XX`, the rest as it is. What
/// [`decode_string`] reads back.
pub fn quote_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if escaped_in_strings(c) {
            out.push_str(&format!("\\{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// The text of a string literal's body (its quotes stripped, as
/// [`Tok::Str`] holds it), its escapes decoded; why not, when an escape
/// names a byte that is not ASCII.
pub fn decode_string(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let hex = rest.get(at + 1..at + 3).unwrap_or("");
        match u8::from_str_radix(hex, 16) {
            Ok(b) if b.is_ascii() => out.push(b as char),
            _ => {
                return Err(format!(
                    "invalid escape `\\{hex}` in a string: an escape is `\\` and two hex digits of an ASCII character"
                ))
            }
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok<'_>> {
        Lexer::new(s, 0).map(|t| t.map(|(_, t, _)| t).unwrap()).collect()
    }

    #[test]
    fn names_and_sigils() {
        assert_eq!(
            toks("%a.1 @step.0 %0 @12"),
            vec![Tok::Local("a.1"), Tok::Global("step.0"), Tok::Local("0"), Tok::Global("12")]
        );
    }

    #[test]
    fn literals() {
        assert_eq!(
            toks("42 -7 0x2a 1.0 -2.5e-3 1e20 inf -inf nan true false"),
            vec![
                Tok::Int("42"),
                Tok::Int("-7"),
                Tok::Hex("0x2a"),
                Tok::Float("1.0"),
                Tok::Float("-2.5e-3"),
                Tok::Float("1e20"),
                Tok::Float("inf"),
                Tok::Float("-inf"),
                Tok::Float("nan"),
                Tok::True,
                Tok::False,
            ]
        );
    }

    #[test]
    fn ranges_without_spaces() {
        assert_eq!(toks("0..10"), vec![Tok::Int("0"), Tok::DotDot, Tok::Int("10")]);
    }

    #[test]
    fn keywords_words_and_comments() {
        assert_eq!(
            toks("add atan2 f32 f128 range_for ; a comment { }\n->"),
            vec![
                Tok::BinOp(BinOp::Add),
                Tok::BinOp(BinOp::Atan2),
                Tok::Type(Scalar::F32),
                Tok::Word("f128"),
                Tok::RangeFor,
                Tok::Arrow
            ]
        );
    }

    #[test]
    fn spans_are_offset_by_base() {
        let t: Vec<_> = Lexer::new(" %x", 10).collect();
        assert_eq!(t, vec![Ok((11, Tok::Local("x"), 13))]);
    }

    #[test]
    fn bad_character_is_an_error() {
        let t: Vec<_> = Lexer::new("%x $", 0).collect();
        assert_eq!(t[1], Err(LexError { span: Span::new(3, 4) }));
    }

    #[test]
    fn split_at_top_level_items() {
        let s = "; c\nfield @x : f32\nfunc @f() {\n  task ; kernel {\n}\nkernel @k() { }\nmodule @m { field @y : i32 }";
        let chunks = split_items(s);
        let kinds: Vec<ChunkKind> = chunks.iter().map(|c| c.kind).collect();
        use ChunkKind::*;
        assert_eq!(kinds, vec![Field, Func, Kernel, Module]);
        assert_eq!(chunks[0].start, 0);
        assert!(s[chunks[1].start..chunks[1].end].starts_with("func"));
        assert!(chunks.windows(2).all(|w| w[0].end == w[1].start));
        assert_eq!(chunks[3].end, s.len());
    }
}
