//! The shape of a captured Quadrants log (standard output and standard
//! error in one file, `print_ir=True`): the version banner, the pass
//! headers spdlog writes to standard error
//! (`[I date time thread] [ir_printer.cpp:operator()@912] [KERNEL] LABEL:`)
//! and, after each, the IR dump the printer writes to standard output
//! (`kernel {` ... `}` at column 0). Everything else (the program's own
//! output, Python warnings, other log lines) is left alone.
//!
//! Owns: cutting a log into lines with byte offsets, finding the banner,
//! the headers and the extent of every dump; the errors of a log of
//! another version or shape, a truncated one and an interleaved one.
//!
//! Must never: read a statement inside a dump (that is `chi`'s), or panic
//! on any input.

use crate::diag::Diagnostic;
use crate::ir::Span;

/// The Quadrants release whose printer this importer reads.
pub const QUADRANTS_VERSION: &str = "1.3.3";

/// One line of the log: its text (without the newline), where it starts,
/// and its number (1-based).
#[derive(Clone, Copy, Debug)]
pub struct Line<'a> {
    pub text: &'a str,
    pub start: usize,
    pub number: usize,
}

impl Line<'_> {
    /// The span of the line's text, from its first non-blank character.
    pub fn span(&self) -> Span {
        let lead = self.text.len() - self.text.trim_start().len();
        span(self.start + lead, self.start + self.text.trim_end().len().max(lead))
    }
}

/// A byte range as a span (a log is limited to 4 GiB by [`scan`]).
pub fn span(start: usize, end: usize) -> Span {
    Span { start: start as u32, end: end.max(start) as u32 }
}

/// One pass header and the dump that follows it.
#[derive(Clone, Debug)]
pub struct Dump {
    /// Quadrants' name of the compiled kernel (`saxpy_c60_0`).
    pub kernel: String,
    /// The pass label without its colon (`Start offload_to_executable`).
    pub label: String,
    /// The thread that printed the header (spdlog's thread id; empty in a
    /// short label).
    pub thread: String,
    /// Index of the header line.
    pub header: usize,
    /// Indices of the dump's `kernel {` and closing `}` lines; `None` when
    /// the header was not followed by a dump.
    pub body: Option<(usize, usize)>,
}

/// A scanned log.
pub struct Log<'a> {
    pub lines: Vec<Line<'a>>,
    pub dumps: Vec<Dump>,
}

/// A header written by the IR printer's pass printer: (thread, kernel,
/// label). Other spdlog lines are `None`. The capture's per-call logs keep
/// only the label's last part, `[saxpy_c62_0] Start offload_to_executable:`
/// (no thread then).
fn header(text: &str) -> Option<(&str, &str, &str)> {
    short_header(text).or_else(|| long_header(text))
}

/// `[KERNEL] LABEL:`, KERNEL a Python identifier with Quadrants' suffixes.
fn short_header(text: &str) -> Option<(&str, &str, &str)> {
    let rest = text.strip_prefix('[')?;
    let (kernel, rest) = rest.split_once("] ")?;
    let ident = kernel.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && kernel.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let label = rest.strip_suffix(':')?;
    (ident && !label.is_empty() && !label.contains(':') && kernel != "Quadrants" && kernel != "Taichi")
        .then_some(("", kernel, label))
}

fn long_header(text: &str) -> Option<(&str, &str, &str)> {
    let rest = text.strip_prefix('[')?;
    let close = rest.find("] [")?;
    let thread = rest[..close].rsplit(' ').next().unwrap_or("");
    let rest = rest[close + 2..].strip_prefix('[')?;
    let close = rest.find("] ")?;
    if !rest[..close].starts_with("ir_printer.cpp:") {
        return None;
    }
    let rest = rest[close + 2..].strip_prefix('[')?;
    let close = rest.find("] ")?;
    let label = rest[close + 2..].trim_end().strip_suffix(':')?;
    Some((thread, &rest[..close], label))
}

/// The version a banner line names, and the product (`Quadrants`,
/// `Taichi`).
fn banner(text: &str) -> Option<(&str, &str)> {
    for product in ["Quadrants", "Taichi"] {
        if let Some(rest) = text.strip_prefix(&format!("[{product}] version ")) {
            let version = rest.split([',', ' ']).next().unwrap_or("");
            return Some((product, version));
        }
    }
    None
}

/// Cuts `text` into lines and dumps, and checks the banner. Errors: a log
/// over 4 GiB, another product or version, a dump that never ends
/// (truncated), a header inside a dump (interleaved), dumps without any
/// header (standard error not captured).
pub fn scan(text: &str) -> Result<Log<'_>, Diagnostic> {
    if text.len() > u32::MAX as usize {
        return Err(Diagnostic::error_nospan("the log is larger than 4 GiB"));
    }
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        let t = l.strip_suffix('\n').unwrap_or(l);
        let t = t.strip_suffix('\r').unwrap_or(t);
        lines.push(Line { text: t, start, number: i + 1 });
        start += l.len();
    }
    let mut dumps: Vec<Dump> = Vec::new();
    // The dump being read: (index of its `kernel {` line, its dump entry).
    let mut open: Option<(usize, Option<usize>)> = None;
    let mut headers = 0usize;
    for (i, line) in lines.iter().enumerate() {
        let h = header(line.text);
        let b = banner(line.text);
        if let Some((first, owner)) = open {
            if line.text == "}" {
                if let Some(d) = owner {
                    dumps[d].body = Some((first, i));
                }
                open = None;
            } else if h.is_some() || b.is_some() {
                let what = match owner {
                    Some(d) => format!("the dump of kernel '{}' ({})", dumps[d].kernel, dumps[d].label),
                    None => "an IR dump".to_string(),
                };
                return Err(Diagnostic::error(
                    format!(
                        "interleaved log: a new log message starts inside {what}, which began at line {}",
                        lines[first].number
                    ),
                    line.span(),
                ));
            }
            continue;
        }
        if let Some((product, version)) = b {
            if product != "Quadrants" {
                return Err(Diagnostic::error(
                    format!("this is a {product} log; kiln-import reads logs of Quadrants {QUADRANTS_VERSION}"),
                    line.span(),
                ));
            }
            if version != QUADRANTS_VERSION {
                return Err(Diagnostic::error(
                    format!("this log is from Quadrants {version}; kiln-import reads the IR printer of Quadrants {QUADRANTS_VERSION}"),
                    line.span(),
                ));
            }
        } else if let Some((thread, kernel, label)) = h {
            headers += 1;
            dumps.push(Dump {
                kernel: kernel.to_string(),
                label: label.to_string(),
                thread: thread.to_string(),
                header: i,
                body: None,
            });
        } else if line.text == "kernel {" {
            // A dump belongs to the header right before it (only noise
            // between them); another dump after that one has no header.
            let owner = dumps.last().filter(|d| d.body.is_none()).map(|_| dumps.len() - 1);
            if owner.is_none() && headers == 0 {
                return Err(Diagnostic::error(
                    "an IR dump without a pass header: the log must hold standard error too (run the program with 2>&1)",
                    line.span(),
                ));
            }
            open = Some((i, owner));
        }
    }
    if let Some((first, owner)) = open {
        let what = match owner {
            Some(d) => format!("the dump of kernel '{}' ({})", dumps[d].kernel, dumps[d].label),
            None => "an IR dump".to_string(),
        };
        let last = lines.last().map_or(0, |l| l.number);
        return Err(Diagnostic::error(
            format!("truncated log: {what} that begins here has no closing '}}' (the log ends at line {last})"),
            lines[first].span(),
        ));
    }
    Ok(Log { lines, dumps })
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str =
        "[I 12/01/26 23:28:20.309 6361] [ir_printer.cpp:operator()@912] [saxpy_c60_0] Start offload_to_executable:";

    #[test]
    fn headers_and_dumps() {
        let text = format!(
            "[Quadrants] version 1.3.3, llvm 22.1.0\nnoise\n{H}\nkernel {{\n  $0 = offloaded  \n}}\nmore noise\n"
        );
        let log = scan(&text).expect("scans");
        assert_eq!(log.dumps.len(), 1);
        let d = &log.dumps[0];
        assert_eq!(
            (d.kernel.as_str(), d.label.as_str(), d.thread.as_str()),
            ("saxpy_c60_0", "Start offload_to_executable", "6361")
        );
        assert_eq!(d.body, Some((3, 5)));
    }

    #[test]
    fn short_labels_of_the_capture() {
        let log = scan("[saxpy_c62_0] Start offload_to_executable:\nkernel {\n}\n").expect("scans");
        assert_eq!(
            (log.dumps[0].kernel.as_str(), log.dumps[0].label.as_str()),
            ("saxpy_c62_0", "Start offload_to_executable")
        );
        assert!(header("[Quadrants] Starting on arch=x64").is_none());
        assert!(header("[x y] z:").is_none());
    }

    #[test]
    fn another_version_or_product() {
        let e = scan("[Quadrants] version 1.3.2, llvm 22.1.0\n").err().expect("refused");
        assert!(e.message.contains("Quadrants 1.3.2"), "{}", e.message);
        let e = scan("[Taichi] version 1.7.3, llvm 15.0.4\n").err().expect("refused");
        assert!(e.message.contains("Taichi log"), "{}", e.message);
    }

    #[test]
    fn truncated_and_interleaved() {
        let e = scan(&format!("{H}\nkernel {{\n  $0 = offloaded  \n")).err().expect("truncated");
        assert!(e.message.starts_with("truncated log"), "{}", e.message);
        let e = scan(&format!("{H}\nkernel {{\n{H}\n}}\n")).err().expect("interleaved");
        assert!(e.message.starts_with("interleaved log"), "{}", e.message);
        let e = scan("kernel {\n}\n").err().expect("no header");
        assert!(e.message.contains("2>&1"), "{}", e.message);
    }
}
