//! A cursor over the tokens of one CHI line, and the small phrases every
//! statement is made of (ids, type hints, lists).
//!
//! Owns: stepping through one line's tokens and reading its common
//! phrases, with errors that point into the line.
//!
//! Must never: know which statement a line holds (that is the parser's),
//! or look past its own line.

use super::*;

/// A cursor over the tokens of one line.
pub(super) struct Cursor<'l, 'a> {
    pub(super) line: Line<'a>,
    pub(super) toks: Vec<lexer::Spanned<'a>>,
    pub(super) i: usize,
    pub(super) _l: std::marker::PhantomData<&'l ()>,
}

impl<'a> Cursor<'_, 'a> {
    pub(super) fn new(line: Line<'a>) -> Self {
        Cursor { line, toks: lexer::tokens(line.text), i: 0, _l: std::marker::PhantomData }
    }
    pub(super) fn peek(&self) -> Option<Tok<'a>> {
        self.toks.get(self.i).and_then(|t| t.tok)
    }
    pub(super) fn peek2(&self) -> (Option<Tok<'a>>, Option<Tok<'a>>) {
        (self.peek(), self.toks.get(self.i + 1).and_then(|t| t.tok))
    }
    pub(super) fn bump(&mut self) -> Option<Tok<'a>> {
        let t = self.peek();
        if self.i < self.toks.len() {
            self.i += 1;
        }
        t
    }
    pub(super) fn eat(&mut self, t: Tok<'_>) -> bool {
        if self.peek() == Some(t) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    pub(super) fn eat_word(&mut self, w: &str) -> bool {
        if self.peek() == Some(Tok::Word(w)) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    pub(super) fn word(&mut self) -> Option<&'a str> {
        match self.peek() {
            Some(Tok::Word(w)) => {
                self.i += 1;
                Some(w)
            }
            _ => None,
        }
    }
    /// Consecutive words from here (`stack alloc`, `matrix of global ptr`),
    /// up to an operand: an SNode (`S3pointer`) or a value (`tmp4`).
    pub(super) fn phrase(&mut self) -> String {
        let operand = |w: &str| {
            let digit_after = |p: &str| w.strip_prefix(p).is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
            digit_after("S") || digit_after("tmp")
        };
        let mut words = Vec::new();
        while let Some(Tok::Word(w)) = self.peek() {
            if operand(w) {
                break;
            }
            self.i += 1;
            words.push(w);
        }
        words.join(" ")
    }
    /// The span of the current token (or the line's end).
    pub(super) fn here(&self) -> Span {
        match self.toks.get(self.i) {
            Some(t) => span(self.line.start + t.start, self.line.start + t.end),
            None => {
                let end = self.line.start + self.line.text.trim_end().len();
                span(end, end)
            }
        }
    }
    pub(super) fn unexpected(&self, want: &str) -> Error {
        let found = match self.toks.get(self.i) {
            None => "the end of the line".to_string(),
            Some(t) => format!("'{}'", &self.line.text[t.start..t.end]),
        };
        syntax(format!("expected {want}, found {found}"), self.here())
    }
    pub(super) fn expect(&mut self, t: Tok<'_>, what: &str) -> Result<(), Error> {
        if self.eat(t) {
            Ok(())
        } else {
            Err(self.unexpected(what))
        }
    }
    pub(super) fn expect_word(&mut self, w: &str) -> Result<(), Error> {
        if self.eat_word(w) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("'{w}'")))
        }
    }
    pub(super) fn end(&self) -> Result<(), Error> {
        if self.i == self.toks.len() {
            Ok(())
        } else {
            Err(self.unexpected("the end of the statement"))
        }
    }
    pub(super) fn id(&mut self) -> Result<u32, Error> {
        match self.peek() {
            Some(Tok::Id(n)) => match n.parse() {
                Ok(v) => {
                    self.i += 1;
                    Ok(v)
                }
                Err(_) => Err(syntax(format!("statement number ${n} is too large"), self.here())),
            },
            _ => Err(self.unexpected("a statement ($N)")),
        }
    }
    pub(super) fn int(&mut self) -> Result<u64, Error> {
        match self.peek() {
            Some(Tok::Num(n)) => match n.parse() {
                Ok(v) => {
                    self.i += 1;
                    Ok(v)
                }
                Err(_) => Err(syntax(format!("expected an integer, found '{n}'"), self.here())),
            },
            _ => Err(self.unexpected("an integer")),
        }
    }
    /// `[1, 2]` of integers.
    pub(super) fn num_list(&mut self) -> Result<Vec<u32>, Error> {
        self.expect(Tok::LBracket, "'['")?;
        let mut out = Vec::new();
        while !self.eat(Tok::RBracket) {
            if !out.is_empty() {
                self.expect(Tok::Comma, "','")?;
            }
            out.push(u32::try_from(self.int()?).map_err(|_| syntax("index too large", self.here()))?);
        }
        Ok(out)
    }
    /// `[$1, $2]` of statements.
    pub(super) fn id_list(&mut self) -> Result<Vec<u32>, Error> {
        self.ids_between((Tok::LBracket, "'['"), Tok::RBracket)
    }
    /// `{$1, $2}` of statements (a call's arguments).
    pub(super) fn id_set(&mut self) -> Result<Vec<u32>, Error> {
        self.ids_between((Tok::LBrace, "'{'"), Tok::RBrace)
    }
    fn ids_between(&mut self, (open, what): (Tok<'_>, &str), close: Tok<'_>) -> Result<Vec<u32>, Error> {
        self.expect(open, what)?;
        let mut out = Vec::new();
        while !self.eat(close) {
            if !out.is_empty() {
                self.expect(Tok::Comma, "','")?;
            }
            out.push(self.id()?);
        }
        Ok(out)
    }
    /// `S12dense`: the SNode's id and kind.
    pub(super) fn snode(&mut self) -> Result<(u32, &'a str), Error> {
        let here = self.here();
        let Some(w) = self.word() else { return Err(self.unexpected("an SNode (S<id><kind>)")) };
        let digits = w.strip_prefix('S').map(|r| r.len() - r.trim_start_matches(|c: char| c.is_ascii_digit()).len());
        match digits {
            Some(n) if n > 0 => {
                let id = w[1..1 + n].parse().map_err(|_| syntax("SNode id too large", here))?;
                Ok((id, &w[1 + n..]))
            }
            _ => Err(syntax(format!("expected an SNode (S<id><kind>), found '{w}'"), here)),
        }
    }
    /// A range_for bound: an integer, or `tmp(offset=NB)`.
    pub(super) fn bound(&mut self) -> Result<Bound, Error> {
        let neg = self.eat(Tok::Minus);
        match self.peek() {
            Some(Tok::Num(_)) => {
                let here = self.here();
                let v = self.int()?;
                let v = i64::try_from(v).map_err(|_| syntax("bound out of range", here))?;
                Ok(Bound::Const(if neg { -v } else { v }))
            }
            Some(Tok::Word("tmp")) => {
                self.i += 1;
                self.expect(Tok::LParen, "'('")?;
                self.expect_word("offset")?;
                self.expect(Tok::Eq, "'='")?;
                let off = self.int()?;
                self.expect_word("B")?;
                self.expect(Tok::RParen, "')'")?;
                Ok(Bound::Tmp(off))
            }
            Some(Tok::Id(_)) => Err(Error::Refused {
                refusal: Refusal {
                    name: "range_for bound computed in the task".into(),
                    why: "KIR task bounds are literals, parameters or 0-D fields",
                },
                span: self.line.span(),
                loc: None,
                near: false,
            }),
            _ => Err(self.unexpected("a bound")),
        }
    }
    /// `<...>` at the cursor: `None` when absent.
    pub(super) fn type_hint(&mut self) -> Result<Option<Ty>, Error> {
        if self.peek() != Some(Tok::Lt) {
            return Ok(None);
        }
        let open = self.toks[self.i].end;
        let mut depth = 0usize;
        while let Some(t) = self.toks.get(self.i) {
            match t.tok {
                Some(Tok::Lt) => depth += 1,
                Some(Tok::Gt) => {
                    depth -= 1;
                    if depth == 0 {
                        let text = self.line.text[open..t.start].trim();
                        self.i += 1;
                        return Ok(Some(parse_ty(text)));
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
        Err(syntax("a type without its closing '>'", self.here()))
    }
    /// The optional type hint and the `$N` name that start a statement.
    pub(super) fn head(&mut self) -> Result<(u32, Option<Ty>), Error> {
        let ty = self.type_hint()?;
        let id = self.id()?;
        Ok((id, ty))
    }
}

/// A type hint's text: `f32`, `*i32`, `[Tensor (3) f32]`,
/// `*[Tensor (2, 2) f32]`, or anything else as [`Ty::Other`].
pub(super) fn parse_ty(text: &str) -> Ty {
    let simple = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let (ptr, t) = match text.strip_prefix('*') {
        Some(p) => (true, p),
        None => (false, text),
    };
    if simple(t) {
        return if ptr { Ty::Ptr(t.to_string()) } else { Ty::Prim(t.to_string()) };
    }
    tensor_ty(t).map_or_else(|| Ty::Other(text.to_string()), |(shape, prim)| Ty::Tensor { shape, prim, ptr })
}

/// `[Tensor (3, 3) f32]`'s shape and element type.
fn tensor_ty(t: &str) -> Option<(Vec<u32>, String)> {
    let inner = t.strip_prefix("[Tensor (")?.strip_suffix(']')?;
    let (dims, prim) = inner.split_once(')')?;
    let prim = prim.trim();
    let shape = dims.split(',').map(|d| d.trim().parse().ok()).collect::<Option<Vec<u32>>>()?;
    let simple = !prim.is_empty() && prim.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    simple.then(|| (shape, prim.to_string()))
}
