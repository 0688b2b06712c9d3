//! Diagnostics: errors with spans, and their rendering in LLVM's style.
//!
//! Owns: the [`Diagnostic`] value every library layer returns for bad user
//! input, and [`SourceFile`] + [`header`], which print
//! `FILE:LINE:COL: error: MESSAGE`, the source line and a caret under the
//! span (the way LLVM's `SMDiagnostic` prints), coloured or not as the
//! caller says ([`Palette`]: clang's colours); each [`Note`] with a span
//! gets its own `FILE:LINE:COL: note: …` line, source line and caret. Line and column arithmetic
//! come from `codespan-reporting`. Also [`io_reason`], how an I/O error
//! reads inside any message (libraries and tools alike).
//!
//! Must never: print or exit, or decide by itself whether to colour (it
//! never looks at the terminal). Only a tool's `main` writes what it renders.

use crate::ir::Span;
use anstyle::{AnsiColor, Style};
use codespan_reporting::files::{self as csfiles, Files};
use std::fmt;
use std::io;

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

/// One message about the input, optionally located by a span.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    /// Where in the source; `None` for whole-input problems.
    pub span: Option<Span>,
    /// Notes printed after the source excerpt (`note: ...`), each with
    /// its own location and caret when it has a span.
    pub notes: Vec<Note>,
}

/// A note attached to a diagnostic: `note: previous definition is here`,
/// located by its own span (or about the diagnostic as a whole).
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub message: String,
    pub span: Option<Span>,
    /// A place in another file (the Python source a statement came from):
    /// printed instead of `span`.
    pub elsewhere: Option<Elsewhere>,
}

/// A place in a file other than the one a diagnostic is rendered against,
/// with the text of its line when it could be read.
#[derive(Clone, Debug, PartialEq)]
pub struct Elsewhere {
    pub file: String,
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub col: u32,
    pub line_text: Option<String>,
}

impl Elsewhere {
    /// `file:line:col`, with the line's text read from `file` (as the path
    /// is written, relative to the working directory) when it can be: a
    /// file that is gone or unreadable only loses the excerpt.
    pub fn read(file: &str, line: u32, col: u32) -> Elsewhere {
        let line_text = std::fs::read(file).ok().and_then(|bytes| {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            text.lines().nth((line as usize).checked_sub(1)?).map(str::to_string)
        });
        Elsewhere { file: file.to_string(), line, col, line_text }
    }
}

impl Diagnostic {
    pub fn error(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic { severity: Severity::Error, message: message.into(), span: Some(span), notes: Vec::new() }
    }
    /// An error about the input as a whole (no location in it).
    pub fn error_nospan(message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Error, message: message.into(), span: None, notes: Vec::new() }
    }
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(Note { message: note.into(), span: None, elsewhere: None });
        self
    }
    /// Adds a note with its own location (`FILE:LINE:COL: note: …`, its
    /// source line and caret).
    pub fn with_note_at(mut self, note: impl Into<String>, span: Span) -> Diagnostic {
        self.notes.push(Note { message: note.into(), span: Some(span), elsewhere: None });
        self
    }
    /// Adds a note located in another file (`FILE:LINE:COL: note: …`, with
    /// that line and a caret when its text is known).
    pub fn with_note_elsewhere(mut self, note: impl Into<String>, at: Elsewhere) -> Diagnostic {
        self.notes.push(Note { message: note.into(), span: None, elsewhere: Some(at) });
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}

/// A list of diagnostics returned by a phase that reports all it finds.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d)
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(|d| d.severity == Severity::Error)
    }
    /// The diagnostics to show under an error limit (0: none): all of them
    /// up to the one error past the limit, and whether any were left out.
    /// Warnings and an error's notes do not count.
    pub fn within_limit(&self, limit: usize) -> (&[Diagnostic], bool) {
        let mut errors = 0;
        for (i, d) in self.0.iter().enumerate() {
            if d.severity == Severity::Error {
                if limit != 0 && errors == limit {
                    return (&self.0[..i], true);
                }
                errors += 1;
            }
        }
        (&self.0, false)
    }

    /// `Ok(())` when there is no error, else `Err(self)`.
    pub fn into_result(self) -> Result<(), Diagnostics> {
        if self.has_errors() {
            Err(self)
        } else {
            Ok(())
        }
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Diagnostics {
        Diagnostics(vec![d])
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// A named source text (`<stdin>` for piped input). The line index is
/// built on first use, so reading a large input that turns out to be valid
/// never pays for it.
pub struct SourceFile {
    name: String,
    text: String,
    line_starts: std::sync::OnceLock<Vec<usize>>,
    /// The last column found: (byte offset, its line's start, its
    /// column), so that columns asked for in order along one long line
    /// cost the distance between them, not the line's length each.
    last_col: std::sync::Mutex<(usize, usize, usize)>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        SourceFile {
            name: name.into(),
            text: text.into(),
            line_starts: std::sync::OnceLock::new(),
            last_col: std::sync::Mutex::new((0, 0, 1)),
        }
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn text(&self) -> &str {
        &self.text
    }
    fn line_starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| csfiles::line_starts(&self.text).collect())
    }
    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, byte: usize) -> (usize, usize) {
        let text = self.text();
        let mut byte = byte.min(text.len());
        while !text.is_char_boundary(byte) {
            byte -= 1;
        }
        let Ok(line) = self.line_index((), byte) else { return (1, 1) };
        let start = self.line_starts()[line];
        let mut last = self.last_col.lock().unwrap_or_else(|e| e.into_inner());
        let (from, col) = if last.1 == start && last.0 <= byte { (last.0, last.2) } else { (start, 1) };
        let col = col + text[from..byte].chars().count();
        *last = (byte, start, col);
        (line + 1, col)
    }

    /// Renders one diagnostic as LLVM does, without colour:
    ///
    /// ```text
    /// FILE:LINE:COL: error: MESSAGE
    ///   %x = add %a, %b
    ///        ^~~~~~~~~~
    /// ```
    pub fn render(&self, d: &Diagnostic) -> String {
        self.render_styled(d, false)
    }

    /// [`SourceFile::render`], coloured as clang and LLVM's tools colour
    /// when `color` is true (the caller decides; see [`Palette`]).
    pub fn render_styled(&self, d: &Diagnostic, color: bool) -> String {
        let mut out = self.located(d.span, d.severity, &d.message, color);
        for n in &d.notes {
            match &n.elsewhere {
                Some(at) => out.push_str(&elsewhere(at, &n.message, color)),
                None => out.push_str(&self.located(n.span, Severity::Note, &n.message, color)),
            }
        }
        out
    }

    /// One header, with the source line and caret when `span` is given.
    fn located(&self, span: Option<Span>, severity: Severity, message: &str, color: bool) -> String {
        let location = span.map(|span| {
            let (line, col) = self.line_col(clamp(span, self.text().len()).start);
            format!("{}:{line}:{col}", self.name())
        });
        let mut out = header(location.as_deref(), severity, message, color);
        if let Some(span) = span {
            out.push_str(&self.excerpt(span, color));
        }
        out
    }

    /// Renders every diagnostic, in order.
    pub fn render_all(&self, ds: &Diagnostics) -> String {
        self.render_all_styled(ds, false)
    }

    /// [`SourceFile::render_all`], coloured when `color` is true.
    pub fn render_all_styled(&self, ds: &Diagnostics, color: bool) -> String {
        self.render_limited(ds, color, 0)
    }

    /// Renders the diagnostics in order, up to `limit` errors (0: no
    /// limit; warnings and an error's notes do not count), then, when
    /// errors are left out, one `FILE: error: too many errors emitted,
    /// stopping now [-ferror-limit=]`, as clang ends. The output is bounded
    /// by the limit whatever the input: each excerpt is a window of its
    /// line ([`EXCERPT_WIDTH`]).
    pub fn render_limited(&self, ds: &Diagnostics, color: bool, limit: usize) -> String {
        let (shown, cut) = ds.within_limit(limit);
        let mut out: String = shown.iter().map(|d| self.render_styled(d, color)).collect();
        if cut {
            out.push_str(&header(Some(self.name()), Severity::Error, TOO_MANY_ERRORS, color));
        }
        out
    }

    /// The source line of `span`'s start, and a caret line under the span
    /// (`^` then `~` to the span's end on that line). A line wider than
    /// [`EXCERPT_WIDTH`] characters is shown as a window of that width
    /// around the caret, each cut end marked `...`; the work is bounded by
    /// the window, not the line.
    fn excerpt(&self, span: Span, color: bool) -> String {
        let text = self.text();
        let r = clamp(span, text.len());
        let Ok(line_idx) = self.line_index((), r.start) else { return String::new() };
        let Ok(line_range) = self.line_range((), line_idx) else { return String::new() };
        let line_start = line_range.start;
        let line_end = line_start + text[line_range].trim_end_matches(['\n', '\r']).len();
        let line = &text[line_start..line_end];
        line_excerpt(line, r.start.min(line_end) - line_start, r.end.min(line_end).max(r.start) - line_start, color)
    }
}

/// A note at another file's place: its header, and its line with a caret
/// under the column when the line's text is known.
fn elsewhere(at: &Elsewhere, message: &str, color: bool) -> String {
    let location = format!("{}:{}:{}", at.file, at.line, at.col);
    let mut out = header(Some(&location), Severity::Note, message, color);
    if let Some(line) = &at.line_text {
        let line = line.trim_end_matches(['\n', '\r']);
        let byte = line.char_indices().nth((at.col as usize).saturating_sub(1)).map_or(line.len(), |(i, _)| i);
        out.push_str(&line_excerpt(line, byte, byte, color));
    }
    out
}

/// `line` (or a window of it around the caret, see [`excerpt_window`])
/// and a caret line under the bytes `at..end` of it (`^` then `~`).
fn line_excerpt(line: &str, at: usize, end: usize, color: bool) -> String {
    let (from, to) = excerpt_window(line, 0, line.len(), at);
    let (cut_left, cut_right) = (if from > 0 { "..." } else { "" }, if to < line.len() { "..." } else { "" });
    let end = end.min(to).max(at);
    // Columns as shown: a character the terminal must not see is shown
    // escaped, as wide as its escape.
    let width = line[at..end].chars().map(shown_width).sum::<usize>().max(1);
    let mut pad = " ".repeat(cut_left.len());
    for c in line[from..at].chars() {
        pad.extend(std::iter::repeat_n(if c == '\t' { '\t' } else { ' ' }, shown_width(c)));
    }
    let caret = Palette::new(color).caret;
    let shown = printable(&line[from..to]);
    format!("{cut_left}{shown}{cut_right}\n{pad}{caret}^{}{caret:#}\n", "~".repeat(width - 1))
}

/// Whether a character would act on a terminal rather than show: the C0
/// and C1 controls but the tab, and the bidirectional overrides and
/// isolates (which reorder what follows them).
fn is_unprintable(c: char) -> bool {
    (c.is_control() && c != '\t' && c != '\n') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// How a character is written in human diagnostics: itself, or its escape.
fn escaped(c: char) -> String {
    if (c as u32) < 0x80 {
        format!("\\x{:02x}", c as u32)
    } else {
        format!("\\u{{{:x}}}", c as u32)
    }
}

fn shown_width(c: char) -> usize {
    if is_unprintable(c) {
        escaped(c).len()
    } else {
        1
    }
}

/// `text` with every character that would act on a terminal (an escape
/// sequence's ESC, a carriage return, a bell, a bidirectional override)
/// written as its escape (`\x1b`, `\u{202e}`), whatever the colour
/// choice: an untrusted file name, source line or message can neither
/// retitle nor clear a terminal, nor hide what follows it. JSON output
/// escapes them itself.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_unprintable) {
        return text.into();
    }
    text.chars().map(|c| if is_unprintable(c) { escaped(c) } else { c.to_string() }).collect::<String>().into()
}

/// A severity's name in JSON diagnostics: `error`, `warning`, `note`.
pub fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// One diagnostic without a place in a source as a line of JSON (the
/// machine-readable twin of [`header`]): `file` is the location, if any.
pub fn json_line(location: Option<&str>, severity: Severity, message: &str) -> String {
    let mut v = serde_json::json!({"severity": severity_name(severity), "message": bounded(message), "file": location});
    v["notes"] = serde_json::json!([]);
    format!("{v}\n")
}

impl SourceFile {
    /// The diagnostics as JSON, one object per line, in the manner of
    /// rustc's `--error-format=json`, up to `limit` errors (0: all) as
    /// [`SourceFile::render_limited`] counts them: `severity`, `message`,
    /// `file`, `line`, `column`, `end_line`, `end_column` (1-based, columns
    /// in characters; the end is exclusive), `span` (`start`, `end`: byte
    /// offsets) and `notes` (each with the same keys; a note in another file
    /// names it). Unlocated: `line`, `column` and `span` are null.
    pub fn render_json(&self, ds: &Diagnostics, limit: usize) -> String {
        let (shown, cut) = ds.within_limit(limit);
        let mut out = String::new();
        for d in shown {
            let mut v = self.json_of(d.severity, &d.message, d.span);
            v["notes"] = d
                .notes
                .iter()
                .map(|n| match &n.elsewhere {
                    Some(at) => serde_json::json!({
                        "severity": "note", "message": n.message, "file": at.file, "line": at.line,
                        "column": at.col, "end_line": at.line, "end_column": at.col + 1, "span": null,
                    }),
                    None => self.json_of(Severity::Note, &n.message, n.span),
                })
                .collect();
            out.push_str(&format!("{v}\n"));
        }
        if cut {
            out.push_str(&json_line(Some(self.name()), Severity::Error, TOO_MANY_ERRORS));
        }
        out
    }

    fn json_of(&self, severity: Severity, message: &str, span: Option<Span>) -> serde_json::Value {
        let mut v =
            serde_json::json!({"severity": severity_name(severity), "message": bounded(message), "file": self.name()});
        let located = span.map(|s| clamp(s, self.text().len()));
        let (start, end) =
            located.clone().map_or((None, None), |r| (Some(self.line_col(r.start)), Some(self.line_col(r.end))));
        v["line"] = serde_json::json!(start.map(|p| p.0));
        v["column"] = serde_json::json!(start.map(|p| p.1));
        v["end_line"] = serde_json::json!(end.map(|p| p.0));
        v["end_column"] = serde_json::json!(end.map(|p| p.1));
        v["span"] = match located {
            Some(r) => serde_json::json!({"start": r.start, "end": r.end}),
            None => serde_json::Value::Null,
        };
        v
    }
}

/// The last line of diagnostics cut short by an error limit.
pub const TOO_MANY_ERRORS: &str = "too many errors emitted, stopping now [-ferror-limit=]";

/// The widest part of a source line an excerpt shows, in characters.
pub const EXCERPT_WIDTH: usize = 120;

/// How many characters of a cut line an excerpt shows before the caret.
const EXCERPT_BEFORE: usize = 40;

/// The byte range of the line `line_start..line_end` of `text` that an
/// excerpt with its caret at `at` shows: the whole line when it is at most
/// [`EXCERPT_WIDTH`] characters, else a window of that many characters
/// that starts [`EXCERPT_BEFORE`] characters before the caret (or at the
/// line's start). Looks at no more than the window's characters.
fn excerpt_window(text: &str, line_start: usize, line_end: usize, at: usize) -> (usize, usize) {
    let line = &text[line_start..line_end];
    if line.chars().take(EXCERPT_WIDTH + 1).count() <= EXCERPT_WIDTH {
        return (line_start, line_end);
    }
    let from =
        text[line_start..at].char_indices().rev().nth(EXCERPT_BEFORE - 1).map_or(line_start, |(i, _)| line_start + i);
    let to = text[from..line_end].char_indices().nth(EXCERPT_WIDTH).map_or(line_end, |(i, _)| from + i);
    (from, to)
}

/// codespan-reporting reads locations through this, with the lazily built
/// line index.
impl<'a> Files<'a> for SourceFile {
    type FileId = ();
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, (): ()) -> Result<&'a str, csfiles::Error> {
        Ok(&self.name)
    }
    fn source(&'a self, (): ()) -> Result<&'a str, csfiles::Error> {
        Ok(&self.text)
    }
    fn line_index(&'a self, (): (), byte_index: usize) -> Result<usize, csfiles::Error> {
        Ok(self.line_starts().binary_search(&byte_index).unwrap_or_else(|next| next - 1))
    }
    fn line_range(&'a self, (): (), line_index: usize) -> Result<std::ops::Range<usize>, csfiles::Error> {
        let starts = self.line_starts();
        let start = *starts
            .get(line_index)
            .ok_or(csfiles::Error::LineTooLarge { given: line_index, max: starts.len().saturating_sub(1) })?;
        let end = starts.get(line_index + 1).copied().unwrap_or(self.text.len());
        Ok(start..end)
    }
}

/// The styles of a diagnostic, as clang and LLVM's `WithColor` use them:
/// the location and message bold, `error:` red, `warning:` magenta,
/// `note:` grey (all bold), the caret line green. With colour off every
/// style is empty, so rendering is the same code either way.
#[derive(Clone, Copy, Debug)]
pub struct Palette {
    pub bold: Style,
    pub error: Style,
    pub warning: Style,
    pub note: Style,
    pub caret: Style,
}

impl Palette {
    pub fn new(color: bool) -> Palette {
        let fg = |c: AnsiColor| if color { Style::new().bold().fg_color(Some(c.into())) } else { Style::new() };
        Palette {
            bold: if color { Style::new().bold() } else { Style::new() },
            error: fg(AnsiColor::Red),
            warning: fg(AnsiColor::Magenta),
            note: fg(AnsiColor::BrightBlack),
            caret: fg(AnsiColor::Green),
        }
    }

    /// The style of a severity's label.
    pub fn of(&self, severity: Severity) -> Style {
        match severity {
            Severity::Error => self.error,
            Severity::Warning => self.warning,
            Severity::Note => self.note,
        }
    }
}

/// The label of a severity as printed: `error:`, `warning:`, `note:`.
pub fn severity_label(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error:",
        Severity::Warning => "warning:",
        Severity::Note => "note:",
    }
}

/// The longest run of non-space characters a message shows whole, in
/// bytes (a literal, a word, a name, a value; paths are usually shorter).
pub const MAX_WORD: usize = 256;

/// The longest message shown whole, in bytes (after long words are cut).
pub const MAX_MESSAGE: usize = 1024;

/// `message` as every renderer shows it, bounded whatever the input: a
/// run of non-space characters over [`MAX_WORD`] bytes becomes its first
/// 64 bytes, `…` and its length (`999…[1000000 bytes]`: a 1 MB literal),
/// and a message still over [`MAX_MESSAGE`] bytes its first part, `…` and
/// its whole length (the members of a long recursion cycle).
pub fn bounded(message: &str) -> std::borrow::Cow<'_, str> {
    let long_word = message.split(' ').any(|w| w.len() > MAX_WORD);
    if !long_word && message.len() <= MAX_MESSAGE {
        return message.into();
    }
    let words: Vec<String> = message.split(' ').map(|w| cut(w, MAX_WORD, 64, "bytes")).collect();
    cut(&words.join(" "), MAX_MESSAGE, MAX_MESSAGE - 64, "bytes in all").into()
}

/// `text` if it is at most `max` bytes long, else its first `keep` bytes
/// (on a character boundary), `…` and its length.
fn cut(text: &str, max: usize, keep: usize, unit: &str) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut at = keep;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}…[{} {unit}]", &text[..at], text.len())
}

/// One header line, `LOCATION: error: MESSAGE` (`error: MESSAGE` without a
/// location; a tool's name is a location too), coloured when `color` is
/// true. Every line a tool prints about bad input starts with one.
pub fn header(location: Option<&str>, severity: Severity, message: &str, color: bool) -> String {
    let p = Palette::new(color);
    let (bold, label) = (p.bold, p.of(severity));
    let at = location.map(|l| format!("{bold}{}:{bold:#} ", printable(l))).unwrap_or_default();
    format!("{at}{label}{}{label:#} {bold}{}{bold:#}\n", severity_label(severity), printable(&bounded(message)))
}

fn clamp(span: Span, len: usize) -> std::ops::Range<usize> {
    let s = (span.start as usize).min(len);
    let e = (span.end as usize).clamp(s, len);
    s..e
}

/// A short reason for an I/O error, without Rust's `(os error N)` noise,
/// starting in lower case like every other message (`Is a directory` from
/// the OS becomes `is a directory`).
pub fn io_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file or directory".into(),
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => {
            let s = e.to_string();
            let s = match s.find(" (os error") {
                Some(i) => &s[..i],
                None => &s[..],
            };
            let mut chars = s.chars();
            match chars.next() {
                Some(c) => c.to_lowercase().chain(chars).collect(),
                None => String::new(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_that_acts_on_a_terminal_reaches_it() {
        // A file name, a message and a source line with an escape sequence
        // that would retitle the terminal, a carriage return, a bell and a
        // right-to-left override: each shown escaped, the caret still under
        // the statement.
        let src = SourceFile::new("evil\x1b]0;pwned\x07.kir", "\x1b[2J\u{202e} %x = bad\n");
        let d = Diagnostic::error("unknown \x1b[31mthing\r", Span { start: 8, end: 10 });
        let out = src.render(&d);
        assert!(!out.chars().any(|c| is_unprintable(c) || c == '\r'), "{out:?}");
        let want = format!(
            "evil\\x1b]0;pwned\\x07.kir:1:7: error: unknown \\x1b[31mthing\\x0d\n\\x1b[2J\\u{{202e}} %x = bad\n{}^~\n",
            " ".repeat(16)
        );
        assert_eq!(out, want);
        let h = header(Some("a\u{9b}b"), Severity::Warning, "tab\tkept", false);
        assert_eq!(h, "a\\u{9b}b: warning: tab\tkept\n");
    }

    #[test]
    fn renders_llvm_style() {
        let src = SourceFile::new("t.kir", "kernel @k() {\n  %x = add %a, %b\n}\n");
        let d = Diagnostic::error("use of undefined value %a", Span::new(25, 27));
        assert_eq!(src.render(&d), "t.kir:2:12: error: use of undefined value %a\n  %x = add %a, %b\n           ^~\n");
    }

    #[test]
    fn colour_is_clangs() {
        let src = SourceFile::new("t.kir", "%x = add %a, %b\n");
        let d = Diagnostic::error("bad", Span::new(9, 11)).with_note("see here");
        assert_eq!(
            src.render_styled(&d, true),
            "\x1b[1mt.kir:1:10:\x1b[0m \x1b[1m\x1b[31merror:\x1b[0m \x1b[1mbad\x1b[0m\n\
             %x = add %a, %b\n         \x1b[1m\x1b[32m^~\x1b[0m\n\
             \x1b[1m\x1b[90mnote:\x1b[0m \x1b[1msee here\x1b[0m\n"
        );
        // Without colour: the same text, no escape.
        assert_eq!(src.render(&d), "t.kir:1:10: error: bad\n%x = add %a, %b\n         ^~\nnote: see here\n");
        assert_eq!(header(Some("kiln-run"), Severity::Warning, "w", false), "kiln-run: warning: w\n");
    }

    #[test]
    fn long_words_and_messages_are_cut_with_their_length() {
        assert_eq!(bounded("short words stay"), "short words stay");
        let literal = format!("literal `{}` is out of range", "9".repeat(1_000_000));
        let want = format!("literal `{}…[1000002 bytes] is out of range", "9".repeat(63));
        assert_eq!(bounded(&literal), want);
        let cycle: Vec<String> = (0..3000).map(|i| format!("@f{i}")).collect();
        let cycle = format!("recursive call: {}", cycle.join(" -> "));
        let shown = bounded(&cycle);
        assert!(shown.len() <= MAX_MESSAGE + 32, "{}", shown.len());
        assert!(shown.starts_with("recursive call: @f0 -> @f1 -> "));
        assert!(shown.ends_with(&format!("…[{} bytes in all]", cycle.len())), "{shown}");
        // A cut never splits a character.
        assert!(bounded(&"é".repeat(200)).starts_with(&"é".repeat(32)));
    }

    #[test]
    fn a_long_line_is_shown_as_a_window_around_the_caret() {
        let line = format!("{}%bad{}", "a".repeat(1000), "b".repeat(1000));
        let src = SourceFile::new("t.kir", format!("{line}\n"));
        let out = src.render(&Diagnostic::error("bad", Span::new(1000, 1004)));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "t.kir:1:1001: error: bad");
        let shown =
            format!("...{}%bad{}...", "a".repeat(EXCERPT_BEFORE), "b".repeat(EXCERPT_WIDTH - EXCERPT_BEFORE - 4));
        assert_eq!(lines[1], shown);
        assert_eq!(lines[2], format!("{}^~~~", " ".repeat(3 + EXCERPT_BEFORE)));
        // Near the start: cut on the right only; a short line whole.
        let out = src.render(&Diagnostic::error("bad", Span::new(2, 3)));
        assert_eq!(out.lines().nth(1).unwrap(), format!("{}...", "a".repeat(EXCERPT_WIDTH)));
        assert_eq!(out.lines().nth(2).unwrap(), "  ^");
        let src = SourceFile::new("t.kir", format!("{}\n", "é".repeat(EXCERPT_WIDTH)));
        let out = src.render(&Diagnostic::error("bad", Span::new(4, 6)));
        assert_eq!(out.lines().nth(1).unwrap(), "é".repeat(EXCERPT_WIDTH));
    }

    #[test]
    fn the_error_limit_counts_errors_and_says_it_stopped() {
        let src = SourceFile::new("t.kir", "%x\n");
        let mut ds = Diagnostics::default();
        for i in 0..5 {
            ds.push(Diagnostic::error(format!("e{i}"), Span::new(0, 2)).with_note("n"));
            ds.push(Diagnostic {
                severity: Severity::Warning,
                message: format!("w{i}"),
                span: None,
                notes: Vec::new(),
            });
        }
        let out = src.render_limited(&ds, false, 2);
        let heads: Vec<&str> = out.lines().filter(|l| l.contains(": ") && !l.starts_with("%")).collect();
        assert_eq!(
            heads,
            [
                "t.kir:1:1: error: e0",
                "note: n",
                "warning: w0",
                "t.kir:1:1: error: e1",
                "note: n",
                "warning: w1",
                &format!("t.kir: error: {TOO_MANY_ERRORS}")
            ]
        );
        // Exactly at the limit, or no limit: no stop line.
        assert!(!src.render_limited(&ds, false, 5).contains(TOO_MANY_ERRORS));
        assert_eq!(src.render_limited(&ds, false, 0), src.render_all(&ds));
        assert_eq!(src.render_all(&ds).matches("error: e").count(), 5);
    }

    #[test]
    fn note_with_its_own_caret() {
        let src = SourceFile::new("t.kir", "%x = add %a, %b\n%x = neg %a\n");
        let d = Diagnostic::error("duplicate value name %x", Span::new(16, 18))
            .with_note_at("previous definition is here", Span::new(0, 2));
        assert_eq!(
            src.render(&d),
            "t.kir:2:1: error: duplicate value name %x\n%x = neg %a\n^~\n\
             t.kir:1:1: note: previous definition is here\n%x = add %a, %b\n^~\n"
        );
        assert_eq!(
            src.render_styled(&d, true),
            "\x1b[1mt.kir:2:1:\x1b[0m \x1b[1m\x1b[31merror:\x1b[0m \x1b[1mduplicate value name %x\x1b[0m\n\
             %x = neg %a\n\x1b[1m\x1b[32m^~\x1b[0m\n\
             \x1b[1mt.kir:1:1:\x1b[0m \x1b[1m\x1b[90mnote:\x1b[0m \x1b[1mprevious definition is here\x1b[0m\n\
             %x = add %a, %b\n\x1b[1m\x1b[32m^~\x1b[0m\n"
        );
    }

    #[test]
    fn span_past_end_is_clamped() {
        let src = SourceFile::new("<stdin>", "field");
        let d = Diagnostic::error("unexpected end of input", Span::new(5, 9));
        assert_eq!(src.render(&d), "<stdin>:1:6: error: unexpected end of input\nfield\n     ^\n");
    }
}
