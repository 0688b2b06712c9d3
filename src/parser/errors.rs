//! The parser's syntax errors: what a grammar error says, and the errors
//! after the first.
//!
//! Owns: turning lalrpop's error into one diagnostic in the user's words
//! (expected tokens grouped and named, a near keyword suggested), the one
//! `unclosed delimiter` error of a chunk whose delimiters do not balance,
//! and finding further errors in a broken chunk by blanking the line of
//! each error and parsing again.
//!
//! Must never: report an error the grammar did not find, or more than one
//! per line blanked.

use super::grammar;
use crate::diag::Diagnostic;
use crate::ir::{BinOp, CmpOp, Scalar, Span, UnOp};
use crate::lexer::{LexError, Lexer, Tok};
use lalrpop_util::ParseError;

/// When a chunk's delimiters do not balance, the one error that matters:
/// `unclosed delimiter` at the opening `{`, `(` or `[` that was never closed,
/// with a note where the parser gave up (`gave_up`), as rustc reports it.
/// Which opener: a `(` or `[` still open where the parser gave up (it
/// wanted its closer); else one closed by a delimiter of another kind
/// (`(` ... `}`); else the first `{` whose `}` stands on a line indented differently from
/// its own (the `}` that closed it belonged to an outer block); else the
/// innermost one left open at the chunk's end. `None` when every delimiter
/// is closed (or a stray closer, which the parser's error already names).
pub(super) fn unclosed_delimiter(text: &str, c: &crate::lexer::Chunk, gave_up: &Diagnostic) -> Option<Diagnostic> {
    let mut open: Vec<(Tok<'_>, usize)> = Vec::new();
    let mut misplaced: Option<(Tok<'_>, usize)> = None;
    let closes = |o: &Tok<'_>, t: &Tok<'_>| {
        matches!((o, t), (Tok::LBrace, Tok::RBrace) | (Tok::LParen, Tok::RParen) | (Tok::LBracket, Tok::RBracket))
    };
    let mut stop = gave_up.span.map(|s| s.start as usize);
    for tok in Lexer::new(&text[c.start..c.end], c.start) {
        let (at, t, _) = tok.ok()?;
        if stop.is_some_and(|s| at >= s) {
            stop = None;
            if let Some(&(o @ (Tok::LParen | Tok::LBracket), from)) = open.last() {
                return Some(unclosed_at((o, from), gave_up));
            }
        }
        match t {
            Tok::LBrace | Tok::LParen | Tok::LBracket => open.push((t, at)),
            Tok::RBrace | Tok::RParen | Tok::RBracket => match open.pop() {
                Some((o, from)) if closes(&o, &t) => {
                    if misplaced.is_none() && o == Tok::LBrace && indentation(text, from) != indentation(text, at) {
                        misplaced = Some((o, from));
                    }
                }
                Some(unclosed) => return Some(unclosed_at(unclosed, gave_up)),
                None => return None,
            },
            _ => {}
        }
    }
    let last = *open.last()?;
    Some(unclosed_at(misplaced.unwrap_or(last), gave_up))
}

fn unclosed_at((t, at): (Tok<'_>, usize), gave_up: &Diagnostic) -> Diagnostic {
    let d = Diagnostic::error(format!("unclosed delimiter {t}"), Span::new(at, at + 1));
    match gave_up.span {
        Some(s) => d.with_note_at(format!("the parser gave up here: {}", gave_up.message), s),
        None => d,
    }
}

/// The leading blanks of the line holding byte `at`.
fn indentation(text: &str, at: usize) -> &str {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// How many further syntax errors one chunk may report.
const MAX_RECOVERIES: usize = 20;

/// Error recovery inside an item: blanks the line of the last error
/// (keeping its braces, so that blocks stay balanced; a brace that opened a
/// block gets a `while` in front of it) and parses the chunk again, keeping
/// each new error that lies on a later line. Statements are line-shaped in
/// practice, so this finds one error per broken statement without the
/// follow-on errors that token-skipping recovery produces. It stops at an
/// error in the item's header, at the end of input, or when no progress is
/// made, where a blanked line could only cause follow-on errors.
pub(super) fn more_syntax_errors(text: &str, c: &crate::lexer::Chunk, first: Diagnostic) -> Vec<Diagnostic> {
    let piece = &text[c.start..c.end];
    // Where the item's body begins: errors before it are in the header.
    let body_start = Lexer::new(piece, c.start)
        .find_map(|t| match t {
            Ok((s, Tok::LBrace, _)) => Some(s),
            _ => None,
        })
        .unwrap_or(usize::MAX);
    let mut errors = vec![first];
    let mut buf = piece.as_bytes().to_vec();
    for _ in 0..MAX_RECOVERIES {
        let Some(last) = errors.last() else { break };
        let Some(span) = last.span else { break };
        let at = span.start as usize;
        if at <= body_start || at >= c.end || last.message.ends_with("found end of input") {
            break;
        }
        let mut line = blank_line(&mut buf, at - c.start);
        if line.is_none() {
            // The error is at a brace (`found `}``): the statement before
            // it is what is incomplete, so blank that instead.
            let prev =
                buf[..(at - c.start)].iter().rposition(|&b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b'{' | b'}'));
            if let Some(p) = prev {
                blank_line(&mut buf, p);
            }
            line = Some(line_range(&buf, at - c.start));
        }
        let Some(line) = line else { break };
        let Ok(again) = std::str::from_utf8(&buf) else { break };
        let e = match grammar::ChunkParser::new().parse(Lexer::new(again, c.start)) {
            Ok(_) => break,
            Err(e) => syntax_error(text, e),
        };
        match e.span {
            Some(s) if s.start as usize >= c.start + line.end => errors.push(e),
            _ => break,
        }
    }
    errors
}

/// The range of the line around `at`.
fn line_range(buf: &[u8], at: usize) -> std::ops::Range<usize> {
    let start = buf[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let end = buf[at..].iter().position(|&b| b == b'\n').map_or(buf.len(), |i| at + i);
    start..end
}

/// Replaces the line around `at` with blanks except for its braces and
/// returns the line's range, or None if there was nothing to blank; a `{`
/// with room before it gets `while `, so that the block it opens still
/// parses as a statement.
fn blank_line(buf: &mut [u8], at: usize) -> Option<std::ops::Range<usize>> {
    let r = line_range(buf, at);
    let mut changed = false;
    for i in r.clone() {
        if !matches!(buf[i], b'{' | b'}' | b' ') {
            buf[i] = b' ';
            changed = true;
        }
    }
    const WHILE: &[u8] = b"while ";
    for i in r.clone() {
        if buf[i] == b'{' && i >= r.start + WHILE.len() && buf[i - WHILE.len()..i].iter().all(|&b| b == b' ') {
            buf[i - WHILE.len()..i].copy_from_slice(WHILE);
        }
    }
    changed.then_some(r)
}

/// Turns a grammar error into `expected X, found Y`.
pub(super) fn syntax_error(text: &str, e: ParseError<usize, Tok<'_>, LexError>) -> Diagnostic {
    match e {
        ParseError::InvalidToken { location } => Diagnostic::error("invalid token", Span::new(location, location + 1)),
        ParseError::UnrecognizedEof { location, expected } => Diagnostic::error(
            format!("expected {}, found end of input", describe_expected(&expected)),
            Span::new(location, location),
        ),
        ParseError::UnrecognizedToken { token: (l, t, r), expected } => {
            let hint = match t {
                Tok::Word(w) => {
                    nearest_keyword(w, &expected).map(|k| format!("; did you mean `{k}`?")).unwrap_or_default()
                }
                _ => String::new(),
            };
            Diagnostic::error(format!("expected {}, found {t}{hint}", describe_expected(&expected)), Span::new(l, r))
        }
        ParseError::ExtraToken { token: (l, t, r) } => Diagnostic::error(format!("unexpected {t}"), Span::new(l, r)),
        ParseError::User { error } => {
            let found = text.get(error.span.range()).and_then(|s| s.chars().next()).unwrap_or('?');
            let next = text.get(error.span.end as usize..).and_then(|s| s.chars().next());
            match (found, next) {
                // A sigil whose name does not start right: blame what follows.
                ('%' | '@', Some(c)) if !c.is_ascii_whitespace() => Diagnostic::error(
                    format!("`{found}` must be followed by a name (a letter, digit or `_`), found {}", show_char(c)),
                    Span::new(error.span.start as usize, error.span.end as usize + c.len_utf8()),
                ),
                _ => Diagnostic::error(format!("unexpected character {}", show_char(found)), error.span),
            }
        }
    }
}

/// A character as an error message shows it: in backquotes when it can be
/// seen, else by its code point (a byte order mark, a control character).
fn show_char(c: char) -> String {
    if c.is_ascii_graphic() || (!c.is_ascii() && c.is_alphanumeric()) {
        format!("`{c}`")
    } else {
        format!("U+{:04X}", c as u32)
    }
}

/// The keyword among what the grammar expected nearest to the bare word
/// `w` (a misspelt keyword, operator or type), by Damerau-Levenshtein
/// distance, when it is close: at most a third of the longer word, and at
/// least one edit.
fn nearest_keyword(w: &str, expected: &[String]) -> Option<String> {
    let mut words: Vec<String> = Vec::new();
    for e in expected.iter().map(|s| s.trim_matches('"')) {
        match e {
            "type" => words.extend(Scalar::ALL.iter().map(|t| t.keyword().to_string())),
            "binary operator" => words.extend(BinOp::ALL.iter().map(|o| o.keyword().to_string())),
            "unary operator" => words.extend(UnOp::ALL.iter().map(|o| o.keyword().to_string())),
            "predicate" => words.extend(CmpOp::ALL.iter().map(|o| o.keyword().to_string())),
            "ret " => words.push("ret".into()),
            k if k.chars().all(|c| c.is_ascii_lowercase() || c == '_') && !k.is_empty() => words.push(k.to_string()),
            _ => {}
        }
    }
    // Ties go to the longer common prefix (`sqr`: `sqrt`, not `shr`).
    let prefix = |k: &str| w.chars().zip(k.chars()).take_while(|(a, b)| a == b).count();
    words
        .into_iter()
        .map(|k| (strsim::damerau_levenshtein(w, &k), std::cmp::Reverse(prefix(&k)), k))
        .filter(|(d, _, k)| *d >= 1 && *d <= (w.len().max(k.len()) / 3).max(1))
        .min()
        .map(|(_, _, k)| k)
}

/// Names what the grammar expected, in words: a whole class where the set
/// is one ("a statement"), else the list of tokens.
fn describe_expected(expected: &[String]) -> String {
    let names: Vec<&str> = expected.iter().map(|s| s.trim_matches('"')).collect();
    let has = |n: &str| names.contains(&n);
    if has("store") && has("ret ") && has("%name") {
        return if has("}") { "a statement or `}`".into() } else { "a statement".into() };
    }
    if has("const") && has("binary operator") && has("load") {
        return "an operation (`const`, `add`, `load`, `call`, ...)".into();
    }
    if has("field") && has("kernel") && has("func") {
        return if has("module") {
            "an item or `module`".into()
        } else {
            "an item (`field`, `func`, `kernel` or `task`)".into()
        };
    }
    if has("integer") && has("float") && has("true") {
        return "a literal".into();
    }
    let mut words: Vec<String> = Vec::new();
    for n in names {
        let w = match n {
            "%name" => "a value name (`%...`)".to_string(),
            "@name" => "a global name (`@...`)".to_string(),
            "integer" => "an integer".to_string(),
            "hex integer" => continue,
            "float" => "a float".to_string(),
            "type" => format!(
                "a type ({})",
                Scalar::ALL.iter().map(|t| format!("`{}`", t.keyword())).collect::<Vec<_>>().join(", ")
            ),
            "binary operator" => "a binary operator".to_string(),
            "unary operator" => "a unary operator".to_string(),
            "predicate" => "a predicate (`lt`, `le`, `gt`, `ge`, `eq`, `ne`)".to_string(),
            "word" => continue,
            "ret " => "`ret`".to_string(),
            other => format!("`{other}`"),
        };
        if !words.contains(&w) {
            words.push(w);
        }
    }
    match words.len() {
        0 => "nothing more".into(),
        1 => words.pop().unwrap_or_default(),
        n => format!("{} or {}", words[..n - 1].join(", "), words[n - 1]),
    }
}
