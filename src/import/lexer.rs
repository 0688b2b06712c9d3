//! The tokens of one line of a Quadrants IR (CHI) dump, as
//! `quadrants/transforms/ir_printer.cpp` writes them: statement names
//! (`$5`), type hints (`<*f32>`), words (`global`, `S2place`,
//! `cast_value`), numbers (`-1.5`, `1e+20`), strings, punctuation.
//!
//! Owns: the lexical structure of a CHI statement line (a logos state
//! machine), tokens with byte offsets into the line.
//!
//! Must never: interpret what a line means (that is `chi`'s), allocate per
//! token, or panic on any input (an unknown character is a token of its
//! own, which the parser reports).

use logos::Logos;

/// One token of a CHI line; words and numbers borrow their text.
#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(skip r"[ \t\r]+")]
pub enum Tok<'a> {
    /// `$12`: a statement's name (its number).
    #[regex(r"\$[0-9]+", |lex| &lex.slice()[1..])]
    Id(&'a str),
    /// A word: keywords, operator names, SNode names (`S2place`), types.
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice())]
    Word(&'a str),
    /// A number as the printer writes it (`{}` of fmt): `3`, `-7`, `1.5`,
    /// `1e+20`, `2.5e-07`.
    #[regex(r"[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?", |lex| lex.slice())]
    Num(&'a str),
    /// A C-quoted string (`print`, `assert`), quotes included.
    #[regex(r#""([^"\\]|\\.)*""#, |lex| lex.slice())]
    Str(&'a str),
    #[token("<-")]
    Arrow,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token("*")]
    Star,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token("=")]
    Eq,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("@")]
    At,
    #[token("#")]
    Hash,
}

/// A token and its byte range in the line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spanned<'a> {
    pub tok: Option<Tok<'a>>,
    pub start: usize,
    pub end: usize,
}

/// The tokens of `line`; a character no token starts with becomes a
/// `None` token at its position (the parser names it).
pub fn tokens(line: &str) -> Vec<Spanned<'_>> {
    let mut lex = Tok::lexer(line);
    let mut out = Vec::new();
    while let Some(t) = lex.next() {
        let r = lex.span();
        out.push(Spanned { tok: t.ok(), start: r.start, end: r.end });
    }
    out
}

/// The text of a C-quoted string as Quadrants' IR printer writes it
/// (`c_quoted`: `\n \t \a \b \v \f \? \' \" \\` escaped, every other
/// character as it is), quotes included.
pub fn c_unquote(quoted: &str) -> String {
    let body = quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"')).unwrap_or(quoted);
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('v') => out.push('\u{b}'),
            Some('f') => out.push('\u{c}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok<'_>> {
        tokens(s).into_iter().map(|t| t.tok.expect("lexes")).collect()
    }

    #[test]
    fn a_global_ptr_line() {
        assert_eq!(
            toks("<*f32> $3 = global ptr [S2place<f32>], index [$1] activate=false"),
            vec![
                Tok::Lt,
                Tok::Star,
                Tok::Word("f32"),
                Tok::Gt,
                Tok::Id("3"),
                Tok::Eq,
                Tok::Word("global"),
                Tok::Word("ptr"),
                Tok::LBracket,
                Tok::Word("S2place"),
                Tok::Lt,
                Tok::Word("f32"),
                Tok::Gt,
                Tok::RBracket,
                Tok::Comma,
                Tok::Word("index"),
                Tok::LBracket,
                Tok::Id("1"),
                Tok::RBracket,
                Tok::Word("activate"),
                Tok::Eq,
                Tok::Word("false"),
            ]
        );
    }

    #[test]
    fn numbers_strings_and_arrows() {
        assert_eq!(toks("1e+20 2.5e-07 -3"), vec![Tok::Num("1e+20"), Tok::Num("2.5e-07"), Tok::Minus, Tok::Num("3")]);
        assert_eq!(
            toks(r#"print $3, "a\"b""#),
            vec![Tok::Word("print"), Tok::Id("3"), Tok::Comma, Tok::Str(r#""a\"b""#)]
        );
        assert_eq!(toks("[$6 <- $8]"), vec![Tok::LBracket, Tok::Id("6"), Tok::Arrow, Tok::Id("8"), Tok::RBracket]);
    }

    #[test]
    fn an_unknown_character_is_a_token_of_its_own() {
        let t = tokens("$1 = ? $2");
        assert_eq!(t[2].tok, None);
        assert_eq!((t[2].start, t[2].end), (5, 6));
    }
}
