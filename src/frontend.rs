//! The streaming front end: parse, verify and print a whole input in
//! canonical form without ever holding the whole input's IR.
//!
//! Owns: [`parse_verify_print`], what `kiln-opt` does when no pass runs.
//! The result is byte for byte what `parse`, `verify` and `Display for
//! Stream` give, and so are the diagnostics; only the peak memory differs
//! (the input, the output and the items in flight, instead of the input
//! and the IR of every item, which is 5 to 7 times the input). An item
//! whose text would be more than 8 times its source (blocks nested deep:
//! every line indented) is held as IR and printed only as the output is
//! written, as is the whole-module path's stream: the text never has to
//! exist whole in memory, so peak memory is bounded by the input's size.
//!
//! How: the input is cut into top-level items by the lexer's byte scan (and
//! `module` blocks into their items). First the *signatures* are gathered:
//! each item's header alone (the text up to its body's `{`, closed by `}`)
//! is parsed and lowered, giving items with empty bodies that hold what
//! other items may need of them (field types and shapes, parameter and
//! return types, names). Then every item, in parallel, is parsed, lowered
//! against its module's signatures, verified with
//! [`ItemVerifier::verify_item`], printed to a string, and dropped. The
//! module-wide checks (duplicates, fields across a stream, `launch`
//! targets, recursion) run on the signatures and on what each item's check
//! returned.
//!
//! If anything is wrong, or the input is not shaped as this path expects
//! (no items, text outside items, items mixed with modules), the whole
//! input goes through the whole-module path instead: errors are rare and
//! must read exactly as that path reports them, in its order.
//!
//! Must never: print, panic on any input, or give a result the whole-module
//! path would not give.

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::{Item, Module, Span, Stream};
use crate::lexer::{body_braces, first_brace, is_blank, split_items, Chunk, ChunkKind, Lexer, Tok};
use crate::parser::{self, ast, Keep, Sigs};
use crate::printer;
use crate::verifier::{self, ItemFacts, ItemVerifier};
use rayon::prelude::*;
use std::fmt;
use std::io;

use crate::parser::PARALLEL_THRESHOLD;

/// The canonical text of a stream, held as the printed items in order;
/// what would print to many times its source is held as IR and printed
/// only as it is written, so the text never needs to exist whole in
/// memory (24 MB of input nested 250 deep prints 2 GB).
#[derive(Debug)]
pub struct Canonical {
    pieces: Vec<Piece>,
}

/// A printed item or the text between items, or what is printed when
/// written: an item (at its depth), or a whole stream (the whole-module
/// path).
#[derive(Debug)]
enum Piece {
    Owned(String),
    Static(&'static str),
    Item(Box<Item>, usize),
    Stream(Box<Stream>),
}

impl Piece {
    fn write_to(&self, w: &mut dyn io::Write) -> io::Result<()> {
        match self {
            Piece::Owned(s) => w.write_all(s.as_bytes()),
            Piece::Static(s) => w.write_all(s.as_bytes()),
            Piece::Item(item, depth) => write!(w, "{}", printer::Indented(item, *depth)),
            Piece::Stream(stream) => write!(w, "{stream}"),
        }
    }
}

impl Canonical {
    /// Writes the text, printing what is held as IR as it goes.
    pub fn write_to(&self, w: &mut dyn io::Write) -> io::Result<()> {
        self.pieces.iter().try_for_each(|p| p.write_to(w))
    }

    /// The length of the text in bytes (what is held as IR is printed to
    /// be counted).
    pub fn len(&self) -> usize {
        let mut n = Count(0);
        let _ = self.write_to(&mut n);
        n.0
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A writer that only counts bytes.
struct Count(usize);

impl io::Write for Count {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0 += b.len();
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl fmt::Display for Canonical {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = Vec::new();
        self.write_to(&mut text).map_err(|_| fmt::Error)?;
        f.write_str(&String::from_utf8_lossy(&text))
    }
}

/// Parses, verifies and prints `text`: the canonical text of the stream,
/// or every diagnostic of parsing, else of verifying — exactly what
/// [`parser::parse`], [`verifier::verify`] and `Display for Stream` give.
pub fn parse_verify_print(text: &str) -> Result<Canonical, Diagnostics> {
    streaming(text, text.len() >= PARALLEL_THRESHOLD, true).or_else(|NotHere| whole(text))
}

/// [`parse_verify_print`] through the whole-module path.
fn whole(text: &str) -> Result<Canonical, Diagnostics> {
    let stream = parser::parse(text)?;
    verifier::verify(&stream)?;
    Ok(Canonical { pieces: vec![Piece::Stream(Box::new(stream))] })
}

/// The streaming path found an error, or input it does not handle: the
/// whole-module path decides.
struct NotHere;

/// One module of the input: its name (None for bare items) and its items.
struct Layout {
    name: Option<String>,
    items: Vec<Chunk>,
}

/// Cuts the input into modules of items, or says it is not shaped for the
/// streaming path.
fn layout(text: &str) -> Result<Vec<Layout>, NotHere> {
    let chunks = split_items(text);
    let bad = |c: &Chunk| c.too_deep.is_some() || c.kind == ChunkKind::Other;
    if chunks.iter().any(bad) {
        return Err(NotHere);
    }
    let modules = chunks.iter().filter(|c| c.kind == ChunkKind::Module).count();
    if modules == 0 {
        return Ok(vec![Layout { name: None, items: chunks }]);
    }
    if modules != chunks.len() {
        return Err(NotHere);
    }
    chunks
        .iter()
        .map(|c| {
            let (open, close) = body_braces(text, c.start, c.end).ok_or(NotHere)?;
            if !is_blank(&text[close + 1..c.end]) {
                return Err(NotHere);
            }
            let name = match parser::parse_header(text, c, open).as_deref() {
                Some([ast::Top::Module(name, items, _)]) if items.is_empty() => name.text(text).to_string(),
                _ => return Err(NotHere),
            };
            let inner = &text[open + 1..close];
            let mut items: Vec<Chunk> = split_items(inner)
                .into_iter()
                .map(|i| Chunk { start: i.start + open + 1, end: i.end + open + 1, ..i })
                .collect();
            if items.len() == 1 && items[0].kind == ChunkKind::Other && is_blank(inner) {
                items.clear();
            }
            if items.iter().any(|i| bad(i) || i.kind == ChunkKind::Module) {
                return Err(NotHere);
            }
            Ok(Layout { name: Some(name), items })
        })
        .collect()
}

/// Runs `f` over `xs` in order, on all cores if `parallel`.
fn map_all<T: Sync, R: Send>(
    xs: &[T],
    parallel: bool,
    f: impl Fn(&T) -> Result<R, NotHere> + Sync + Send,
) -> Result<Vec<R>, NotHere> {
    if parallel {
        xs.par_iter().map(f).collect()
    } else {
        xs.iter().map(f).collect()
    }
}

/// The only top-level item of a parsed chunk.
fn only_item(tops: Vec<ast::Top>) -> Result<ast::Item, NotHere> {
    let mut tops = tops.into_iter();
    match (tops.next(), tops.next()) {
        (Some(ast::Top::Item(item)), None) => Ok(item),
        _ => Err(NotHere),
    }
}

/// An item's signature: its header's syntax tree (a field is all header).
fn signature(text: &str, c: &Chunk) -> Result<ast::Item, NotHere> {
    let tops = match c.kind {
        ChunkKind::Field => parser::parse_chunk(text, c).map_err(|_| NotHere)?,
        _ => {
            let open = first_brace(text, c.start, c.end).ok_or(NotHere)?;
            parser::parse_header(text, c, open).ok_or(NotHere)?
        }
    };
    only_item(tops)
}

/// What one item leaves behind: its text, whether it is a field (for the
/// blank lines between items) and what the module-wide checks need of it.
struct Done {
    text: Piece,
    is_field: bool,
    facts: ItemFacts,
}

/// How many bytes of text an item's source byte may print to before the
/// item is held as IR instead (IR is 5 to 7 times its text).
const MAX_TEXT_PER_BYTE: usize = 8;

/// The streaming path; with `print` false it only checks, and the text it
/// returns is empty.
fn streaming(text: &str, parallel: bool, print: bool) -> Result<Canonical, NotHere> {
    if text.len() > u32::MAX as usize {
        return Err(NotHere);
    }
    let modules = layout(text)?;

    // Signatures: parsed in parallel, declared in source order (the first
    // declaration of a name wins, as in the parser), then lowered.
    let mut sigs: Vec<Sigs<'_>> = Vec::with_capacity(modules.len());
    let mut sig_modules = Vec::with_capacity(modules.len());
    for m in &modules {
        let headers = map_all(&m.items, parallel, |c| signature(text, c))?;
        let mut s = Sigs::default();
        for h in &headers {
            s.declare(h, text);
        }
        let mut diags: Vec<Diagnostic> = Vec::new();
        let empty = Sigs::default();
        let items: Vec<Item> =
            headers.into_iter().map(|h| parser::lower_item_as(h, text, &empty, &mut diags, Keep::Resident)).collect();
        if !diags.is_empty() {
            return Err(NotHere);
        }
        sigs.push(s);
        sig_modules.push(Module { name: m.name.as_deref().map(Into::into), items, span: Span::new(0, 0) });
    }
    let sig_stream = Stream { modules: sig_modules };
    let mut checker = ItemVerifier::new(&sig_stream);
    if checker.has_errors() {
        return Err(NotHere);
    }

    // Every item on its own: parse, lower, verify, print, drop.
    let units: Vec<(usize, &Chunk)> =
        modules.iter().enumerate().flat_map(|(k, m)| m.items.iter().map(move |c| (k, c))).collect();
    let checker_ref = &checker;
    let sigs_ref = &sigs;
    let done = map_all(&units, parallel, |&(k, c)| {
        let item = only_item(parser::parse_chunk(text, c).map_err(|_| NotHere)?)?;
        let mut diags = Vec::new();
        let keep = Keep::Transient { bytes: c.end - c.start };
        let item = parser::lower_item_as(item, text, &sigs_ref[k], &mut diags, keep);
        if !diags.is_empty() {
            return Err(NotHere);
        }
        let (diags, facts) = checker_ref.verify_item(k, &item);
        if !diags.is_empty() {
            return Err(NotHere);
        }
        let depth = usize::from(modules[k].name.is_some());
        let is_field = matches!(item, Item::Field(_));
        let mut out = String::new();
        if print {
            let bytes = c.end - c.start;
            out.reserve(bytes + 64);
            if !printer::print_item_within(&mut out, &item, depth, MAX_TEXT_PER_BYTE * bytes + 4096) {
                return Ok(Done { text: Piece::Item(Box::new(item), depth), is_field, facts });
            }
        }
        Ok(Done { text: Piece::Owned(out), is_field, facts })
    })?;

    // The module-wide checks, then the text in order.
    let mut pieces = Vec::with_capacity(done.len() * 2 + 3 * modules.len());
    let mut done = done.into_iter();
    for (k, m) in modules.iter().enumerate() {
        if k > 0 {
            pieces.push(Piece::Static(printer::MODULE_SEPARATOR));
        }
        if let Some(name) = &m.name {
            let mut open = String::new();
            printer::module_open(&mut open, name).map_err(|_| NotHere)?;
            pieces.push(Piece::Owned(open));
        }
        let mut prev_field = None;
        for d in done.by_ref().take(m.items.len()) {
            checker.add_facts(k, d.facts);
            if prev_field.is_some_and(|p| printer::blank_line_between(p, d.is_field)) {
                pieces.push(Piece::Static("\n"));
            }
            prev_field = Some(d.is_field);
            pieces.push(d.text);
        }
        if m.name.is_some() {
            pieces.push(Piece::Static(printer::MODULE_CLOSE));
        }
    }
    checker.finish(Vec::new()).map_err(|_| NotHere)?;
    Ok(Canonical { pieces })
}

/// For input of bare items (fields, functions and kernels, the form a
/// front end emits) that is free of errors: calls `f` once per batch of
/// consecutive kernels, in parallel for large inputs, with a module that
/// holds, in source order, every field, the functions the batch's kernels
/// call (transitively), the kernels in full, and as signatures the items
/// whose names start with a kernel's name and a dot: the only names the
/// passes could generate for those kernels (`@k.0`, `@k.tmp0`) and so must
/// avoid. Whatever the whole-module passes make of a kernel's tasks, they
/// make of its batch's module's. Returns the results in kernel order.
///
/// A batch holds kernels until their text is at least that of the fields
/// and of the functions they reach, up to 4 MiB, or until its tasks will
/// list 2^18 function items ([`batches`]), so the fields and functions
/// that each batch's module repeats cost at most as much work as the
/// kernels themselves or their tasks' own items: the work is linear in the
/// input and the tasks' modules, not kernels × functions. Peak memory is
/// the input, the functions' IR and the batches in flight.
/// `None` when the input is not of that form or has any error: the caller
/// takes the whole-module path, which reports errors exactly.
pub fn per_kernel<R: Send>(text: &str, f: impl Fn(Module) -> R + Sync + Send) -> Option<Vec<R>> {
    in_batches(text, Batching::Linear, f)
}

/// How [`in_batches`] groups kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batching {
    /// As [`per_kernel`] does: linear work ([`batches`]).
    Linear,
    /// One kernel per module: the least memory, and work that grows with
    /// kernels × shared items (tests compare it with the whole stream).
    One,
}

/// [`per_kernel`] with the kernels grouped as `batching` says.
pub fn in_batches<R: Send>(text: &str, batching: Batching, f: impl Fn(Module) -> R + Sync + Send) -> Option<Vec<R>> {
    let parallel = text.len() >= PARALLEL_THRESHOLD;
    streaming(text, parallel, false).ok()?;
    let modules = layout(text).ok()?;
    let [Layout { name: None, items: chunks }] = modules.as_slice() else { return None };
    if chunks.iter().any(|c| !matches!(c.kind, ChunkKind::Field | ChunkKind::Func | ChunkKind::Kernel)) {
        return None;
    }
    let headers = map_all(chunks, parallel, |c| signature(text, c)).ok()?;
    let mut sigs = Sigs::default();
    for h in &headers {
        sigs.declare(h, text);
    }
    let lower = |item: ast::Item, sigs: &Sigs<'_>, keep: Keep| -> Result<Item, NotHere> {
        let mut diags = Vec::new();
        let item = parser::lower_item_as(item, text, sigs, &mut diags, keep);
        if diags.is_empty() {
            Ok(item)
        } else {
            Err(NotHere)
        }
    };
    let empty = Sigs::default();
    let sig_items: Vec<Item> =
        headers.into_iter().map(|h| lower(h, &empty, Keep::Resident)).collect::<Result<_, _>>().ok()?;
    let full =
        |c: &Chunk, keep: Keep| lower(only_item(parser::parse_chunk(text, c).map_err(|_| NotHere)?)?, &sigs, keep);
    // Every function in full, by name (names are unique: the input checked).
    let funcs =
        map_all(
            chunks,
            parallel,
            |c| if c.kind == ChunkKind::Func { full(c, Keep::Resident).map(Some) } else { Ok(None) },
        )
        .ok()?;
    let by_name: std::collections::HashMap<&str, &Item> = funcs.iter().flatten().map(|it| (it.name(), it)).collect();
    let index: std::collections::HashMap<&str, usize> =
        sig_items.iter().enumerate().map(|(i, it)| (it.name(), i)).collect();
    let sorted: std::collections::BTreeMap<&str, usize> = index.iter().map(|(&n, &i)| (n, i)).collect();
    let fields: Vec<usize> = (0..chunks.len()).filter(|&i| chunks[i].kind == ChunkKind::Field).collect();
    map_all(&batches(text, chunks, batching, &by_name, parallel), parallel, |batch| {
        let mut kernels = std::collections::HashMap::new();
        let mut wanted: Vec<usize> = fields.clone();
        for &k in batch {
            let c = &chunks[k];
            let kernel = full(c, Keep::Transient { bytes: c.end - c.start })?;
            let prefix = format!("{}.", kernel.name());
            wanted.extend(sorted.range(prefix.as_str()..).take_while(|(n, _)| n.starts_with(&prefix)).map(|(_, &i)| i));
            wanted.push(k);
            kernels.insert(k, kernel);
        }
        let called = callees(kernels.values(), &by_name);
        wanted.extend(called.into_iter().filter_map(|n| index.get(n).copied()));
        wanted.sort_unstable();
        wanted.dedup();
        let items = wanted
            .into_iter()
            .map(|i| match kernels.remove(&i) {
                Some(kernel) => kernel,
                None => by_name.get(sig_items[i].name()).map_or_else(|| sig_items[i].clone(), |&f| f.clone()),
            })
            .collect();
        Ok(f(Module { name: None, items, span: Span::new(0, text.len()) }))
    })
    .ok()
}

/// The most kernel text in one batch: what bounds a batch's IR in memory
/// (`kiln-key` of a 200 MB module stays within 3× its input) when the
/// fields and functions are larger still.
const BATCH_CAP: usize = 4 << 20;

/// The most function items a batch's split modules may list, by
/// [`func_reach`]'s bound (each a few hundred bytes in memory): kernels
/// that all reach a large tree of functions go in small batches.
const ITEM_CAP: usize = 1 << 18;

/// The kernels' chunk indices in source order, cut into batches of
/// consecutive kernels: a batch closes once its kernels' text is at least
/// that of the fields and the functions they reach (the part the batch's
/// module repeats; at most all fields and functions, or [`BATCH_CAP`]),
/// or once the function items its tasks list (an upper bound: [`called`],
/// [`func_reach`]) pass [`ITEM_CAP`]. So there are never more batches than
/// kernels; the text a batch repeats is at most
/// its own kernels' text or the functions its tasks list anyway (which
/// their keys hash); and a batch's memory is bounded.
/// [`Batching::One`] closes each batch at its first kernel.
fn batches(
    text: &str,
    chunks: &[Chunk],
    batching: Batching,
    funcs: &std::collections::HashMap<&str, &Item>,
    parallel: bool,
) -> Vec<Vec<usize>> {
    let kernels: Vec<usize> = (0..chunks.len()).filter(|&i| chunks[i].kind == ChunkKind::Kernel).collect();
    let shared: usize = match batching {
        Batching::Linear => chunks.iter().filter(|c| c.kind != ChunkKind::Kernel).map(|c| c.end - c.start).sum(),
        Batching::One => 0,
    }
    .min(BATCH_CAP);
    // The functions each kernel calls, lexed in parallel (none to count
    // when there are no functions, or every batch is one kernel).
    let calls: Vec<Vec<&str>> = if shared > 0 && !funcs.is_empty() {
        map_all(&kernels, parallel, |&k| Ok(called(text, &chunks[k]))).unwrap_or_default()
    } else {
        Vec::new()
    };
    let fields: usize = chunks.iter().filter(|c| c.kind == ChunkKind::Field).map(|c| c.end - c.start).sum();
    let mut memo = ReachMemo::default();
    let mut out: Vec<Vec<usize>> = Vec::new();
    let (mut open, mut bytes, mut reach) = (Vec::new(), 0usize, Reach { items: 0, bytes: fields });
    for (n, &k) in kernels.iter().enumerate() {
        open.push(k);
        bytes += chunks[k].end - chunks[k].start;
        for name in calls.get(n).into_iter().flatten() {
            if let Some((&name, _)) = funcs.get_key_value(name) {
                let r = func_reach(name, funcs, &mut memo);
                reach =
                    Reach { items: reach.items.saturating_add(r.items), bytes: reach.bytes.saturating_add(r.bytes) };
            }
        }
        // What the batch repeats is at most its fields and the functions
        // its kernels reach, and at most all of them. With no calls
        // lexed (no functions, or one kernel a batch) it is `shared`.
        if bytes >= reach.bytes.min(shared) || reach.items >= ITEM_CAP {
            out.push(std::mem::take(&mut open));
            (bytes, reach) = (0, Reach { items: 0, bytes: fields });
        }
    }
    if !open.is_empty() {
        out.push(open);
    }
    out
}

/// Each function's [`func_reach`], once computed.
type ReachMemo<'t> = std::collections::HashMap<&'t str, Reach>;

/// The functions the kernel in chunk `c` calls, once per call, found by
/// the lexer (the input was checked). For each of them, [`func_reach`]
/// bounds what the call adds to the function items of the kernel's tasks.
fn called<'t>(text: &'t str, c: &Chunk) -> Vec<&'t str> {
    let mut names = Vec::new();
    let mut after_call = false;
    for (_, tok, _) in Lexer::new(&text[c.start..c.end], c.start).flatten() {
        if let (true, Tok::Global(name)) = (after_call, &tok) {
            names.push(*name);
        }
        after_call = matches!(tok, Tok::Call);
    }
    names
}

/// What a call can add to the tasks of a batch, bounded from above: the
/// function items their split modules list, and the text of the functions
/// the batch's module repeats.
#[derive(Clone, Copy, Default)]
struct Reach {
    items: usize,
    bytes: usize,
}

/// An upper bound of what function `name` reaches, itself included: its
/// own item and text plus its callees' bounds, a callee counted at each
/// of its calls, and at most every function. Recursion is as deep as the
/// verifier's call depth.
fn func_reach<'f>(
    name: &'f str,
    funcs: &std::collections::HashMap<&'f str, &'f Item>,
    memo: &mut ReachMemo<'f>,
) -> Reach {
    if let Some(&r) = memo.get(name) {
        return r;
    }
    let Some(Item::Func(f)) = funcs.get(name) else { return Reach::default() };
    let mut calls = Vec::new();
    f.body.each_call(&mut |callee| calls.push(callee));
    let mut r = Reach { items: 1, bytes: f.span.end.saturating_sub(f.span.start) as usize };
    for callee in calls {
        let c = func_reach(callee, funcs, memo);
        r = Reach { items: r.items.saturating_add(c.items), bytes: r.bytes.saturating_add(c.bytes) };
    }
    let r = Reach { items: r.items.min(funcs.len()), bytes: r.bytes };
    memo.insert(name, r);
    r
}

/// The names of the functions `items` call, transitively.
fn callees<'a>(
    items: impl IntoIterator<Item = &'a Item>,
    funcs: &std::collections::HashMap<&str, &'a Item>,
) -> std::collections::HashSet<&'a str> {
    let mut seen = std::collections::HashSet::new();
    let mut todo: Vec<&Item> = items.into_iter().collect();
    while let Some(it) = todo.pop() {
        let body = match it {
            Item::Func(f) => &f.body,
            Item::Kernel(k) => &k.body,
            _ => continue,
        };
        body.each_call(&mut |name| {
            if seen.insert(name) {
                todo.extend(funcs.get(name).copied());
            }
        });
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The streaming path itself (not the fallback) on well-formed input.
    fn streams(text: &str) -> String {
        match streaming(text, false, true) {
            Ok(c) => c.to_string(),
            Err(NotHere) => panic!("the streaming path declined:\n{text}"),
        }
    }

    #[test]
    fn handles_bare_items_and_module_streams_itself() {
        let bare = "field @x : f32[4]\nfield @n : i32\n\nfunc @f(%a: f32) -> f32 {\n  ret %a\n}\n\nkernel @k(%s: f32 = 2.0) {\n  for %i in 0 .. 4 {\n    %v = load @x[%i]\n    %w = call @f(%v)\n    store @x[%i], %w\n  }\n}\n";
        assert_eq!(streams(bare), bare);
        let stream = "module @k.0 {\n  field @x : f32[4]\n\n  task @k.0 of @k(%s: f32) range_for %i in 0 .. 4 block_dim 64 {\n    %v = load @x[%i]\n    store @x[%i], %v\n  }\n}\n\nmodule @main {\n  field @x : f32[4]\n\n  kernel @k(%s: f32 = 2.0) {\n    launch @k.0\n  }\n}\n\nmodule @empty {\n}\n";
        assert_eq!(streams(stream), stream);
    }

    /// Every valid file of the repository, and the stream `split-tasks`
    /// makes of it, goes through the streaming path itself (on one core
    /// and on all), not through the fallback.
    #[test]
    fn streams_every_valid_file() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let pipeline = crate::passes::resolve(&["offload", "split-tasks"]).expect("registered");
        let mut streamed = 0;
        for dir in ["testdata", "lit-tests"] {
            for entry in walkdir::WalkDir::new(root.join(dir)).sort_by_file_name() {
                let path = entry.expect("walk").into_path();
                if path.extension().is_none_or(|e| e != "kir") || path.components().any(|c| c.as_os_str() == "Output") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).expect("read");
                let Ok(mut stream) = parser::parse(&text) else { continue };
                if verifier::verify(&stream).is_err() || stream.modules.iter().all(|m| m.items.is_empty()) {
                    continue;
                }
                let mut texts = vec![stream.to_string()];
                let opts = crate::passes::PipelineOptions::default();
                if crate::passes::run_pipeline(&mut stream, &pipeline, &opts, &mut crate::passes::NoObserver).is_ok() {
                    texts.push(stream.to_string());
                }
                for t in &texts {
                    for parallel in [false, true] {
                        match streaming(t, parallel, true) {
                            Ok(c) => assert_eq!(&c.to_string(), t, "{}", path.display()),
                            Err(NotHere) => panic!("{}: the streaming path declined", path.display()),
                        }
                    }
                    streamed += 1;
                }
            }
        }
        assert!(streamed >= 40, "only {streamed} inputs streamed");
    }

    #[test]
    fn declines_what_it_does_not_handle() {
        for text in ["", "; only a comment\n", "junk field @x : f32\n", "field @x : f32\nmodule @m {\n}\n"] {
            assert!(streaming(text, false, true).is_err(), "{text:?}");
        }
    }

    #[test]
    fn declines_errors_found_only_across_items() {
        for text in [
            "field @x : f32\nfield @x : f32\n",
            "func @f() {\n  call @g()\n  ret\n}\n\nfunc @g() {\n  call @f()\n  ret\n}\n",
            "kernel @k() {\n  task @t serial {\n  }\n}\n\nkernel @j() {\n  task @t serial {\n  }\n}\n",
            "module @a {\n  field @x : f32\n}\n\nmodule @b {\n  field @x : i32\n}\n",
            "module @a {\n}\n\nmodule @a {\n}\n",
        ] {
            assert!(streaming(text, false, true).is_err(), "{text:?}");
            assert!(parse_verify_print(text).is_err(), "{text:?}");
        }
    }

    /// Kernels `k0..k{n}` each calling `f0` of a 3-function chain.
    fn shared_chain(kernels: usize) -> String {
        let mut t = String::from("field @out : i32[64]\n\n");
        t += "func @f0(%x: i32) -> i32 {\n  %r = call @f1(%x)\n  ret %r\n}\n\n";
        t += "func @f1(%x: i32) -> i32 {\n  %r = call @f2(%x)\n  ret %r\n}\n\n";
        t += "func @f2(%x: i32) -> i32 {\n  ret %x\n}\n";
        for k in 0..kernels {
            t += &format!(
                "\nkernel @k{k}() {{\n  %j = const {k} : i32\n  %v = call @f0(%j)\n  store @out[%j], %v\n}}\n"
            );
        }
        t
    }

    /// [`batches`] of `text`, with its functions parsed.
    fn batches_of(text: &str, batching: Batching) -> (Vec<Chunk>, Vec<Vec<usize>>) {
        let chunks = split_items(text);
        let stream = parser::parse(text).unwrap();
        let funcs: std::collections::HashMap<&str, &Item> =
            stream.modules[0].items.iter().filter(|i| matches!(i, Item::Func(_))).map(|i| (i.name(), i)).collect();
        let b = batches(text, &chunks, batching, &funcs, false);
        (chunks, b)
    }

    #[test]
    fn a_batch_closes_once_its_kernels_outweigh_the_shared_items() {
        let text = shared_chain(40);
        let (chunks, linear) = batches_of(&text, Batching::Linear);
        let shared: usize = chunks.iter().filter(|c| c.kind != ChunkKind::Kernel).map(|c| c.end - c.start).sum();
        assert!(linear.len() > 2, "{} batches", linear.len());
        assert_eq!(linear.concat(), (4..44).collect::<Vec<_>>(), "every kernel once, in order");
        for b in &linear[..linear.len() - 1] {
            let own: usize = b.iter().map(|&i| chunks[i].end - chunks[i].start).sum();
            let without_last = own - (chunks[*b.last().unwrap()].end - chunks[*b.last().unwrap()].start);
            assert!(own >= shared && without_last < shared, "{b:?}: {own} against {shared}");
        }
        assert_eq!(batches_of(&text, Batching::One).1.len(), 40);
    }

    #[test]
    fn kernels_that_reach_a_large_tree_of_functions_go_in_small_batches() {
        // f0 reaches all 1,023 functions of a binary tree: 300 kernels
        // that call it list 306,900 function items once split, more than
        // one batch may hold, though their text is less than the tree's.
        let mut text = String::from("field @out : i32[300]\n");
        for i in 0..1023 {
            if 2 * i + 2 < 1023 {
                let (a, b) = (2 * i + 1, 2 * i + 2);
                text += &format!(
                    "func @f{i}(%x: i32) -> i32 {{\n  %a = call @f{a}(%x)\n  %b = call @f{b}(%a)\n  ret %b\n}}\n"
                );
            } else {
                text += &format!("func @f{i}(%x: i32) -> i32 {{\n  ret %x\n}}\n");
            }
        }
        for k in 0..300 {
            text +=
                &format!("kernel @k{k}() {{\n  %j = const {k} : i32\n  %v = call @f0(%j)\n  store @out[%j], %v\n}}\n");
        }
        let (_, b) = batches_of(&text, Batching::Linear);
        let most = ITEM_CAP.div_ceil(1023);
        assert_eq!(b.iter().map(Vec::len).collect::<Vec<_>>(), [most, 300 - most], "kernels per batch");
    }

    #[test]
    fn batches_hold_their_kernels_callees_and_fields_in_source_order() {
        let text = shared_chain(40);
        let names = per_kernel(&text, |m| m.items.iter().map(|i| i.name().to_string()).collect::<Vec<_>>()).unwrap();
        assert!(names.len() > 2);
        let mut kernels = Vec::new();
        for batch in &names {
            assert_eq!(batch[..4], ["out", "f0", "f1", "f2"], "{batch:?}");
            kernels.extend(batch[4..].iter().cloned());
        }
        assert_eq!(kernels, (0..40).map(|k| format!("k{k}")).collect::<Vec<_>>());
    }

    #[test]
    fn a_batch_weighs_only_the_functions_its_kernels_reach() {
        // Each kernel calls a small function of its own beside a large one
        // no kernel calls: nothing large is repeated, so no batch waits
        // for the large one's text.
        let mut text = String::from("field @out : i32[8]\n");
        text += "func @unused(%x: i32) -> i32 {\n";
        for i in 0..400 {
            text += &format!("  %v{i} = add %x, %x\n");
        }
        text += "  ret %x\n}\n";
        for k in 0..8 {
            text += &format!("func @g{k}(%x: i32) -> i32 {{\n  ret %x\n}}\n");
            text += &format!(
                "kernel @k{k}() {{\n  %j = const {k} : i32\n  %v = call @g{k}(%j)\n  store @out[%j], %v\n}}\n"
            );
        }
        let (_, b) = batches_of(&text, Batching::Linear);
        assert_eq!(b.len(), 8, "{b:?}");
    }
}
