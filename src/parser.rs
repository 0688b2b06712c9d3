//! The KIR parser: text to a [`Stream`] of modules, or diagnostics with spans.
//!
//! Owns: driving the lalrpop grammar (`src/grammar.lalrpop`) over the logos
//! lexer, and lowering its syntax tree to the IR — name resolution (scoped,
//! with forward references kept for the verifier to report), result type
//! inference, and the meaning of literals for the type they are given.
//!
//! How: the text is cut into top-level chunks ([`split_items`]); each chunk
//! is parsed on its own, so a syntax error costs one item and the rest is
//! still checked; within a broken item, further errors are found by
//! blanking the line of each error and parsing again. Lowering runs in two phases: first the chunks that
//! declare signatures (fields, functions, whole `module` blocks) are
//! parsed, so that items may be used before they are declared; then every
//! chunk is lowered, in parallel for large inputs (rayon). A chunk's syntax
//! tree lives only while that chunk is lowered.
//!
//! Must never: panic on any input, print, or judge well-formedness beyond
//! syntax and literals (use before definition, unknown fields and
//! functions, type errors are the verifier's; the parser keeps what was
//! written so the verifier can point at it).

pub mod ast;
mod errors;

lalrpop_util::lalrpop_mod!(
    #[allow(clippy::all, unused_parens, dead_code)]
    grammar,
    "/grammar.rs"
);

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::*;
use crate::lexer::{decode_string, split_items, ChunkKind, Lexer};
use ast::{BoundAst, LitKind, LitTok, Name as AName, PieceAst, RangeAst, SKind, StmtAst, Sym, TaskKindAst, Top};
use errors::{more_syntax_errors, syntax_error, unclosed_delimiter};
use rayon::prelude::*;

/// Inputs at least this large are parsed on all cores (here and by
/// [`crate::frontend`]).
pub const PARALLEL_THRESHOLD: usize = 1 << 20;

/// Parses KIR text into a stream of modules.
///
/// A file holds either bare items (one unnamed module) or only
/// `module @name { ... }` blocks. Every syntax error and bad literal is
/// reported (at least one per top-level item); names are resolved but not
/// checked (see the module doc).
pub fn parse(text: &str) -> Result<Stream, Diagnostics> {
    parse_with(text, text.len() >= PARALLEL_THRESHOLD)
}

/// [`parse`] on the calling thread only (for callers that already run in
/// parallel, and for measurements).
pub fn parse_sequential(text: &str) -> Result<Stream, Diagnostics> {
    parse_with(text, false)
}

/// Runs only the lexer and the grammar over one chunk and returns how many
/// top-level forms it holds (0 on a syntax error); for profiling.
#[doc(hidden)]
pub fn parse_syntax_only(text: &str, chunk: &crate::lexer::Chunk) -> usize {
    parse_chunk(text, chunk).map(|t| t.len()).unwrap_or(0)
}

fn parse_with(text: &str, parallel: bool) -> Result<Stream, Diagnostics> {
    if text.len() > u32::MAX as usize {
        return Err(Diagnostic::error_nospan("input is larger than 4 GiB").into());
    }
    let chunks = split_items(text);

    // Phase 1: the chunks that declare signatures.
    let declares = |c: &crate::lexer::Chunk| matches!(c.kind, ChunkKind::Field | ChunkKind::Func | ChunkKind::Module);
    let parse_decl = |c: &crate::lexer::Chunk| declares(c).then(|| parse_chunk(text, c));
    let mut early: Vec<Option<Parsed>> =
        if parallel { chunks.par_iter().map(parse_decl).collect() } else { chunks.iter().map(parse_decl).collect() };
    let mut sigs = Sigs::default();
    for tops in early.iter().flatten().flatten() {
        for top in tops {
            if let Top::Item(item) = top {
                sigs.declare(item, text);
            }
        }
    }

    // Phase 2: parse what is left and lower everything, chunk by chunk.
    let lower = |(c, early): (&crate::lexer::Chunk, Option<Parsed>)| {
        let tops = match early.unwrap_or_else(|| parse_chunk(text, c)) {
            Ok(tops) => tops,
            Err(ds) => return (Vec::new(), ds),
        };
        let mut diags = Vec::new();
        let out = tops.into_iter().map(|t| lower_top(t, text, &sigs, &mut diags)).collect::<Vec<_>>();
        (out, diags)
    };
    let pairs = chunks.iter().zip(early.drain(..));
    let lowered: Vec<(Vec<Lowered>, Vec<Diagnostic>)> = if parallel {
        pairs.collect::<Vec<_>>().into_par_iter().map(lower).collect()
    } else {
        pairs.map(lower).collect()
    };

    let mut diags = Diagnostics::default();
    let mut bare = Module { name: None, items: Vec::new(), span: Span::new(0, text.len()) };
    let mut modules = Vec::new();
    let mut first_form: Option<bool> = None;
    for (forms, ds) in lowered {
        for d in ds {
            diags.push(d);
        }
        for form in forms {
            let (is_module, span) = match &form {
                Lowered::Item(i) => (false, i.span()),
                Lowered::Module(m) => (true, m.span),
            };
            match first_form {
                None => first_form = Some(is_module),
                Some(m) if m != is_module => diags.push(Diagnostic::error(
                    if m {
                        "expected `module`, found an item outside a module block: a file holds either bare items or only `module` blocks"
                    } else {
                        "unexpected `module` block after bare items: a file holds either bare items or only `module` blocks"
                    },
                    span,
                )),
                Some(_) => {}
            }
            match form {
                Lowered::Item(i) => bare.items.push(i),
                Lowered::Module(m) => modules.push(m),
            }
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    if modules.is_empty() {
        modules.push(bare);
    }
    Ok(Stream { modules })
}

/// A chunk's syntax tree, or its syntax errors.
pub(crate) type Parsed = Result<Vec<Top>, Vec<Diagnostic>>;

/// A top-level form after lowering. Short-lived (moved once into its
/// module), so boxing the large variant would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum Lowered {
    Item(Item),
    Module(Module),
}

/// Parses one chunk with the grammar; on a syntax error, also looks for
/// more errors in the same chunk (see [`more_syntax_errors`]).
pub(crate) fn parse_chunk(text: &str, c: &crate::lexer::Chunk) -> Parsed {
    if let Some(at) = c.too_deep {
        return Err(vec![Diagnostic::error(
            format!("blocks are nested too deeply (more than {} levels)", crate::lexer::MAX_DEPTH),
            Span::new(at, at + 1),
        )]);
    }
    let piece = &text[c.start..c.end];
    grammar::ChunkParser::new().parse(Lexer::new(piece, c.start)).map_err(|e| {
        let first = syntax_error(text, e);
        match unclosed_delimiter(text, c, &first) {
            Some(d) => vec![d],
            None => more_syntax_errors(text, c, first),
        }
    })
}

/// Parses only the header of the chunk `c` — its text up to the `{` at
/// `open` that starts its body (or block), closed right after by `}` — so
/// that a signature costs a few tokens however long the body is. Spans are
/// those of the header in `text`. No error recovery: a header that does not
/// parse is reported by parsing the whole chunk.
pub(crate) fn parse_header(text: &str, c: &crate::lexer::Chunk, open: usize) -> Option<Vec<Top>> {
    let mut header = String::with_capacity(open + 2 - c.start);
    header.push_str(text.get(c.start..=open)?);
    header.push('}');
    grammar::ChunkParser::new().parse(Lexer::new(&header, c.start)).ok()
}

/// A hash map keyed by short names: FxHash (name lookups dominate
/// lowering, and SipHash's DoS resistance buys nothing here).
pub(crate) type FxMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// What bodies need to know about the items of their module: field element
/// types (for `load`/`atomic` results) and function return types (for
/// `call` results). The first declaration of a name wins; the verifier
/// reports duplicates.
#[derive(Default)]
pub(crate) struct Sigs<'a> {
    fields: FxMap<&'a str, Scalar>,
    funcs: FxMap<&'a str, Option<Scalar>>,
}

impl<'a> Sigs<'a> {
    pub(crate) fn declare(&mut self, item: &ast::Item, src: &'a str) {
        match item {
            ast::Item::Field(f) => {
                self.fields.entry(f.name.text(src)).or_insert(f.elem);
            }
            ast::Item::Func(f) => {
                self.funcs.entry(f.name.text(src)).or_insert(f.ret);
            }
            ast::Item::Kernel(_) | ast::Item::Task(_) => {}
        }
    }
}

fn lower_top<'a>(top: Top, src: &'a str, sigs: &Sigs<'a>, diags: &mut Vec<Diagnostic>) -> Lowered {
    match top {
        Top::Item(item) => Lowered::Item(lower_item(item, src, sigs, diags)),
        Top::Module(name, items, span) => {
            let mut local = Sigs::default();
            for it in &items {
                local.declare(it, src);
            }
            let items = items.into_iter().map(|it| lower_item(it, src, &local, diags)).collect();
            Lowered::Module(Module { name: Some(name.text(src).into()), items, span })
        }
    }
}

fn lower_item<'a>(item: ast::Item, src: &'a str, sigs: &Sigs<'a>, diags: &mut Vec<Diagnostic>) -> Item {
    lower_item_as(item, src, sigs, diags, Keep::Resident)
}

/// How long a lowered body lives, which decides how its arenas are sized.
#[derive(Clone, Copy)]
pub(crate) enum Keep {
    /// With every other body of the input: the arenas' slack is given back.
    Resident,
    /// Only until it is printed: the arenas are sized up front from the
    /// item's text (`bytes` long) and never shrunk.
    Transient { bytes: usize },
}

/// Lowers one item (see [`Keep`]).
pub(crate) fn lower_item_as<'a>(
    item: ast::Item,
    src: &'a str,
    sigs: &Sigs<'a>,
    diags: &mut Vec<Diagnostic>,
    keep: Keep,
) -> Item {
    match item {
        ast::Item::Field(f) => {
            let shape = f
                .shape
                .iter()
                .map(|d| {
                    lit_u64(&d.with_text(src)).unwrap_or_else(|e| {
                        diags.push(e);
                        0
                    })
                })
                .collect();
            Item::Field(Field { name: f.name.text(src).into(), elem: f.elem, shape, span: f.span })
        }
        ast::Item::Func(f) => {
            let mut lw = BodyLower::new(src, sigs, diags, keep);
            let params = lw.params(&f.params);
            lw.stmts(f.body, lw.body.entry);
            Item::Func(
                Func { name: f.name.text(src).into(), params, ret: f.ret, body: lw.finish(), span: f.span }.into(),
            )
        }
        ast::Item::Kernel(k) => {
            let mut lw = BodyLower::new(src, sigs, diags, keep);
            let params = lw.params(&k.params);
            lw.stmts(k.body, lw.body.entry);
            Item::Kernel(Kernel { name: k.name.text(src).into(), params, body: lw.finish(), span: k.span })
        }
        ast::Item::Task(t) => {
            let mut lw = BodyLower::new(src, sigs, diags, keep);
            let params = lw.params(&t.params);
            let kind = lw.task_kind(*t.kind, Stmt::HEADER);
            // The header is not a statement: its uses have no entry.
            lw.uses.clear();
            lw.stmts(t.body, lw.body.entry);
            Item::Task(TaskItem {
                name: t.name.text(src).into(),
                kernel: t.kernel.text(src).into(),
                params,
                kind,
                body: lw.finish(),
                span: t.span,
            })
        }
    }
}

/// Lowers one body. Values, statements and blocks are numbered in print
/// order (pre-order): a statement's operands that are undefined names
/// first, then the statement, then its result or loop variables, then each
/// of its blocks followed by that block's contents.
struct BodyLower<'a, 's, 'd> {
    /// The whole input (the syntax tree holds spans into it).
    src: &'a str,
    sigs: &'s Sigs<'a>,
    diags: &'d mut Vec<Diagnostic>,
    keep: Keep,
    body: Body,
    /// The names in scope.
    scope: FxMap<&'a str, Value>,
    /// What each binding replaced, so leaving a scope can restore it.
    undo: Vec<(&'a str, Option<Value>)>,
    /// Uses of names not (yet) in scope: each an `Undefined` value, which
    /// becomes the definition if the name is defined later in the body.
    pending: FxMap<&'a str, Vec<Value>>,
    /// Undefined uses that a later definition resolved: (use, definition).
    resolved: Vec<(Value, Value)>,
    /// The spans of the uses since the last statement was made: its
    /// operands, for [`Body::operand_spans`].
    uses: Vec<Span>,
    /// How many `random` statements the body has so far (the default
    /// `site` of the next).
    randoms: u32,
}

impl crate::ir::TypeEnv for BodyLower<'_, '_, '_> {
    fn value_type(&self, v: Value) -> Option<Type> {
        self.body.values().get(v).map(|d| d.ty)
    }
    fn field_elem(&self, name: &str) -> Option<Scalar> {
        self.sigs.fields.get(name).copied()
    }
    fn func_ret(&self, name: &str) -> Option<Option<Scalar>> {
        self.sigs.funcs.get(name).copied()
    }
}

impl<'a, 's, 'd> BodyLower<'a, 's, 'd> {
    fn new(src: &'a str, sigs: &'s Sigs<'a>, diags: &'d mut Vec<Diagnostic>, keep: Keep) -> Self {
        let mut body = Body::new();
        if let Keep::Transient { bytes } = keep {
            // A statement line is 25 to 35 bytes of text and defines at
            // most one value; a little too much is cheaper than regrowing.
            body.reserve(bytes / 24, bytes / 24);
            body.operand_spans.reserve(bytes / 24, bytes / 16);
        }
        // Names in scope at once are few (a block's definitions and those
        // of its enclosing blocks): room for 64 saves the regrowth from 3.
        let names = match keep {
            Keep::Transient { .. } => 64,
            Keep::Resident => 0,
        };
        BodyLower {
            src,
            sigs,
            diags,
            keep,
            body,
            scope: FxMap::with_capacity_and_hasher(names, Default::default()),
            undo: Vec::with_capacity(names),
            pending: FxMap::default(),
            resolved: Vec::new(),
            uses: Vec::with_capacity(8),
            randoms: 0,
        }
    }

    fn params(&mut self, params: &[ast::ParamAst]) -> Vec<Param> {
        params
            .iter()
            .map(|p| {
                let name = p.name.text(self.src);
                let v = self.body.add_param(name, p.ty, p.name.span);
                self.bind(name, v);
                let default = p.default.as_ref().map(|d| self.lit(d, p.ty));
                Param { ty: p.ty, default, span: p.span }
            })
            .collect()
    }

    fn finish(mut self) -> Body {
        if !self.resolved.is_empty() {
            // Every use resolved by a later definition points at it, and
            // the placeholders go, so no unreferenced `Undefined` is left.
            self.body.replace_values(&self.resolved);
        }
        if let Keep::Transient { .. } = self.keep {
            return self.body;
        }
        // The arenas grew by doubling; a whole module's IR is resident at
        // once, so give the slack back (glibc shrinks in place).
        self.body.shrink_to_fit();
        self.body.operand_spans.shrink_to_fit();
        self.body
    }

    fn bind(&mut self, name: &'a str, v: Value) {
        let old = self.scope.insert(name, v);
        self.undo.push((name, old));
        if !self.pending.is_empty() {
            if let Some(uses) = self.pending.remove(name) {
                self.resolved.extend(uses.into_iter().map(|u| (u, v)));
            }
        }
    }

    fn leave_scope(&mut self, mark: usize) {
        while self.undo.len() > mark {
            let Some((name, old)) = self.undo.pop() else { break };
            match old {
                Some(v) => self.scope.insert(name, v),
                None => self.scope.remove(name),
            };
        }
    }

    fn nm(&self, s: Sym) -> AName<'a> {
        AName { text: s.text(self.src), span: s.span }
    }

    fn define(&mut self, n: Sym, ty: Type, def: ValueDef) -> Value {
        let n = self.nm(n);
        let v = self.body.new_value(n.text, ty, def, n.span);
        self.bind(n.text, v);
        v
    }

    /// The text of the string literal at `m` (quotes included), its
    /// escapes decoded; a bad escape is an error at it.
    fn string(&mut self, m: Span) -> String {
        let quoted = self.src.get(m.range()).unwrap_or("\"\"");
        decode_string(&quoted[1..quoted.len() - 1]).unwrap_or_else(|e| {
            self.diags.push(Diagnostic::error(e, m));
            String::new()
        })
    }

    fn use_(&mut self, n: Sym) -> Value {
        let n = self.nm(n);
        self.uses.push(n.span);
        if let Some(&v) = self.scope.get(n.text) {
            return v;
        }
        let v = self.body.new_value(n.text, Type::Scalar(Scalar::I32), ValueDef::Undefined, n.span);
        self.pending.entry(n.text).or_default().push(v);
        v
    }

    fn lit(&mut self, l: &LitTok, ty: Scalar) -> Const {
        lit_const(&l.with_text(self.src), ty).unwrap_or_else(|e| {
            self.diags.push(e);
            Const::int(ty, 0)
        })
    }

    /// Makes a statement whose operands have all been used: they are its
    /// operand spans.
    fn new_stmt(&mut self, kind: StmtKind, span: Span) -> Stmt {
        let st = self.body.new_stmt(kind, span);
        self.operands_of(st);
        st
    }

    /// Records the uses since the last statement as `st`'s operand spans.
    fn operands_of(&mut self, st: Stmt) {
        self.body.operand_spans.record(st, self.uses.drain(..));
    }

    fn field_ref(&mut self, r: ast::FieldRefAst) -> FieldRef {
        let indices = r.indices.into_iter().map(|i| self.use_(i)).collect();
        FieldRef { field: r.field.text(self.src).into(), indices, span: r.field.span }
    }

    fn stmts(&mut self, stmts: Vec<StmtAst>, b: Block) {
        let mark = self.undo.len();
        // The block's length is known: no regrowth while it fills.
        self.body[b].reserve_exact(stmts.len());
        for s in stmts {
            self.stmt(s, b);
        }
        self.leave_scope(mark);
    }

    /// Lowers one statement into block `b`, with its location if it has
    /// one. The statement is the first one [`BodyLower::stmt_kind`] makes
    /// (a statement with blocks is made before what they hold).
    fn stmt(&mut self, mut s: StmtAst, b: Block) {
        let loc = s.loc.take().and_then(|l| self.loc(l));
        let first = self.body.next_stmt();
        self.stmt_kind(s, b);
        if let (Some(loc), true) = (loc, self.body.stmts().get(first).is_some()) {
            self.body[first].loc = Some(loc);
        }
    }

    /// A location's file, line and column; `None` (and an error) when one
    /// of them is not valid.
    fn loc(&mut self, l: ast::LocAst) -> Option<Box<Loc>> {
        let quoted = self.src.get(l.file.range()).unwrap_or("\"\"");
        let file =
            decode_string(&quoted[1..quoted.len() - 1]).map_err(|e| self.diags.push(Diagnostic::error(e, l.file)));
        let mut number = |t: &LitTok, what: &str| {
            let n = lit_const(&t.with_text(self.src), Scalar::I64).ok().and_then(|c| c.as_i64());
            let n = n.and_then(|n| u32::try_from(n).ok()).filter(|&n| n >= 1);
            if n.is_none() {
                self.diags.push(Diagnostic::error(
                    format!("a location's {what} must be a number from 1 to {}", u32::MAX),
                    t.span,
                ));
            }
            n
        };
        let (line, col) = (number(&l.line, "line"), number(&l.col, "column"));
        Some(Box::new(Loc { file: file.ok()?.into(), line: line?, col: col? }))
    }

    fn stmt_kind(&mut self, s: StmtAst, b: Block) {
        let span = s.span;
        // Simple statements: the kind; its result's type is the IR's rule.
        let kind = match s.kind {
            SKind::Const(l, t) => StmtKind::Const(self.lit(&l, t)),
            SKind::Binary(op, a, c) => StmtKind::Binary(op, self.use_(a), self.use_(c)),
            SKind::Unary(op, a) => StmtKind::Unary(op, self.use_(a)),
            SKind::Cmp(op, a, c) => StmtKind::Cmp(op, self.use_(a), self.use_(c)),
            SKind::Cast(a, t) => StmtKind::Cast(self.use_(a), t),
            SKind::BitCast(a, t) => StmtKind::BitCast(self.use_(a), t),
            SKind::Select(c, x, y) => StmtKind::Select(self.use_(c), self.use_(x), self.use_(y)),
            SKind::Load(r) => StmtKind::Load(self.field_ref(r)),
            SKind::LoadSlot(p) => StmtKind::LoadSlot(self.use_(p)),
            SKind::Store(r, v) => {
                let r = self.field_ref(r);
                StmtKind::Store(r, self.use_(v))
            }
            SKind::StoreSlot(p, v) => StmtKind::StoreSlot(self.use_(p), self.use_(v)),
            SKind::Atomic(op, op_span, r, v) => {
                let op = self.atomic_op(op, op_span);
                let r = self.field_ref(r);
                StmtKind::Atomic(op, r, self.use_(v))
            }
            SKind::Alloca(t) => StmtKind::Alloca(t),
            SKind::Random(ty, site) => StmtKind::Random { ty, site: self.random_site(site) },
            SKind::Call(f, args) => {
                let args = args.into_iter().map(|a| self.use_(a)).collect();
                let f = self.nm(f);
                StmtKind::Call(f.text.into(), args, f.span)
            }
            SKind::Ret(v) => StmtKind::Ret(v.map(|v| self.use_(v))),
            SKind::Break => StmtKind::Break,
            SKind::Continue => StmtKind::Continue,
            SKind::Launch(t) => StmtKind::Launch(t.text(self.src).into()),
            SKind::Assert(c, m, args) => {
                let message = self.string(m);
                // Operands in print order: their spans are recorded so.
                let cond = self.use_(c);
                let args = args.into_iter().map(|a| self.use_(a)).collect();
                StmtKind::Assert { cond, message, args }
            }
            SKind::Print(pieces) => {
                let pieces = pieces
                    .into_iter()
                    .map(|p| match p {
                        PieceAst::Str(m) => PrintPiece::Str(self.string(m)),
                        PieceAst::Value(v) => PrintPiece::Value(self.use_(v)),
                    })
                    .collect();
                StmtKind::Print { pieces }
            }

            // Statements with blocks.
            SKind::If(c, then_s, else_s) => {
                let cond = self.use_(c);
                let then_blk = self.body.new_block();
                let st = self.new_stmt(StmtKind::If { cond, then_blk, else_blk: None }, span);
                self.body.push(b, st);
                self.stmts(then_s, then_blk);
                if let Some(else_s) = else_s {
                    let e = self.body.new_block();
                    if let StmtKind::If { else_blk, .. } = &mut self.body[st].kind {
                        *else_blk = Some(e);
                    }
                    self.stmts(else_s, e);
                }
                return;
            }
            SKind::For(range, serial, body_s) => {
                if let BoundAst::Field(f) = &range.lo {
                    self.field_bound_error(f);
                }
                if let BoundAst::Field(f) = &range.hi {
                    self.field_bound_error(f);
                }
                let (lo, hi) = (self.bound(&range.lo), self.bound(&range.hi));
                let ty = self.range_type(&range, &lo, &hi);
                let blk = self.body.new_block();
                let st = self.new_stmt(StmtKind::For { var: Value::RESERVED, lo, hi, body: blk, serial }, span);
                self.body.push(b, st);
                let mark = self.undo.len();
                let var = self.define(range.var, Type::Scalar(ty), ValueDef::LoopVar(st, 0));
                if let StmtKind::For { var: v, .. } = &mut self.body[st].kind {
                    *v = var;
                }
                self.stmts(body_s, blk);
                self.leave_scope(mark);
                return;
            }
            SKind::While(body_s) => {
                let blk = self.body.new_block();
                let st = self.new_stmt(StmtKind::While { body: blk }, span);
                self.body.push(b, st);
                self.stmts(body_s, blk);
                return;
            }
            SKind::Task(name, kind, body_s) => {
                let blk = self.body.new_block();
                let st = self.body.new_stmt(
                    StmtKind::Task { name: name.text(self.src).into(), kind: TaskKind::Serial, body: blk },
                    span,
                );
                self.body.push(b, st);
                let mark = self.undo.len();
                let k = self.task_kind(*kind, st);
                self.operands_of(st);
                if let StmtKind::Task { kind, .. } = &mut self.body[st].kind {
                    *kind = k;
                }
                self.stmts(body_s, blk);
                self.leave_scope(mark);
                return;
            }
        };
        // A result of a kind that defines none, or of an unknown field or
        // function, is typed i32 here; the verifier reports why.
        let ty = crate::ir::result_type(&kind, &*self).unwrap_or(Type::Scalar(Scalar::I32));
        let st = self.new_stmt(kind, span);
        if let Some(r) = s.result {
            let v = self.define(r, ty, ValueDef::Result(st));
            self.body[st].result = Some(v);
        }
        self.body.push(b, st);
    }

    fn field_bound_error(&mut self, f: &Sym) {
        self.diags.push(Diagnostic::error(
            format!("a field bound (`@{}[]`) is only allowed in a task header, not in `for`", f.text(self.src)),
            f.span,
        ));
    }

    fn bound(&mut self, b: &BoundAst) -> Bound {
        match b {
            BoundAst::Lit(l) => Bound::Const(lit_i64(&l.with_text(self.src)).unwrap_or_else(|e| {
                self.diags.push(e);
                0
            })),
            BoundAst::Value(n) => Bound::Value(self.use_(*n)),
            BoundAst::Field(n) => Bound::Field(n.text(self.src).into(), n.span),
        }
    }

    /// The loop variable's type: as written, else the IR's rule.
    fn range_type(&self, r: &RangeAst, lo: &Bound, hi: &Bound) -> Scalar {
        r.ty.unwrap_or_else(|| crate::ir::loop_var_type(lo, hi, |v| self.body.values().get(v).map(|d| d.ty)))
    }

    fn atomic_op(&mut self, op: BinOp, op_span: Span) -> AtomicOp {
        AtomicOp::from_keyword(op.keyword()).unwrap_or_else(|| {
            self.diags.push(Diagnostic::error(
                format!(
                    "expected an atomic operator (`add`, `min`, `max`, `and`, `or` or `xor`), found `{}`",
                    op.keyword()
                ),
                op_span,
            ));
            AtomicOp::Add
        })
    }

    /// Lowers a task header; its variables are bound by `st` and stay in
    /// scope until the caller leaves the scope.
    fn task_kind(&mut self, kind: TaskKindAst, st: Stmt) -> TaskKind {
        match kind {
            TaskKindAst::Serial => TaskKind::Serial,
            TaskKindAst::RangeFor(range, dim) => {
                let (lo, hi) = (self.bound(&range.lo), self.bound(&range.hi));
                let ty = self.range_type(&range, &lo, &hi);
                let var = self.define(range.var, Type::Scalar(ty), ValueDef::LoopVar(st, 0));
                TaskKind::RangeFor { var, lo, hi, block_dim: self.block_dim(dim) }
            }
            TaskKindAst::StructFor(vars, field, dim) => {
                let vars = vars
                    .into_iter()
                    .enumerate()
                    .map(|(i, n)| self.define(n, Type::Scalar(Scalar::I32), ValueDef::LoopVar(st, i as u32)))
                    .collect();
                TaskKind::StructFor {
                    vars,
                    field: field.text(self.src).into(),
                    field_span: field.span,
                    block_dim: self.block_dim(dim),
                }
            }
        }
    }

    /// A `random`'s site: as written, or its ordinal among the item's
    /// `random` statements (`docs/language.md`, "random").
    fn random_site(&mut self, site: Option<LitTok>) -> u32 {
        let ordinal = self.randoms;
        self.randoms += 1;
        let Some(l) = site else { return ordinal };
        let l = l.with_text(self.src);
        match lit_u64(&l) {
            Ok(n) if n <= u64::from(crate::random::MAX_SITE) => n as u32,
            Ok(_) => {
                let max = crate::random::MAX_SITE;
                self.diags
                    .push(Diagnostic::error(format!("site must be between 0 and {max}, found `{}`", l.text), l.span));
                ordinal
            }
            Err(e) => {
                self.diags.push(e);
                ordinal
            }
        }
    }

    fn block_dim(&mut self, dim: Option<LitTok>) -> u32 {
        let Some(l) = dim else { return DEFAULT_BLOCK_DIM };
        let l = l.with_text(self.src);
        match lit_u64(&l) {
            Ok(d) if (1..=u32::MAX as u64).contains(&d) => d as u32,
            Ok(_) => {
                self.diags.push(Diagnostic::error(
                    format!("block_dim must be between 1 and {}, found `{}`", u32::MAX, l.text),
                    l.span,
                ));
                DEFAULT_BLOCK_DIM
            }
            Err(e) => {
                self.diags.push(e);
                DEFAULT_BLOCK_DIM
            }
        }
    }
}

/// The value of a literal given type `ty`. Integers must fit the type
/// (decimal: its signed range; hex: its width, as raw bits); `i1` takes
/// `true`, `false`, `0` and `1`; floats parse directly in the type's
/// precision (no double rounding); a hex literal with a float type is the
/// value's raw bits and must have exactly the type's width in digits.
pub fn lit_const(l: &ast::Lit<'_>, ty: Scalar) -> Result<Const, Diagnostic> {
    let out_of_range = || Diagnostic::error(format!("literal `{}` is out of range for {ty}", l.text), l.span);
    match (l.kind, ty) {
        (LitKind::True, Scalar::I1) => Ok(Const::bool(true)),
        (LitKind::False, Scalar::I1) => Ok(Const::bool(false)),
        (LitKind::True | LitKind::False, _) => Err(Diagnostic::error(
            format!(
                "expected {} literal for {ty}, found `{}`",
                if ty.is_int() { "an integer" } else { "a float" },
                l.text
            ),
            l.span,
        )),
        (LitKind::Float, t) if t.is_int() => Err(Diagnostic::error(
            format!(
                "expected {} literal for {ty}, found float `{}`",
                if t == Scalar::I1 { "a `true`/`false`" } else { "an integer" },
                l.text
            ),
            l.span,
        )),
        (LitKind::Int | LitKind::Hex, Scalar::I1) => match parse_int(l) {
            Some((false, 0)) => Ok(Const::bool(false)),
            Some((false, 1)) => Ok(Const::bool(true)),
            _ => Err(out_of_range()),
        },
        (LitKind::Int, t) if t.is_int() => {
            // A decimal literal is a number, which must be one of the type's.
            let (lo, hi) = t.int_range();
            match l.text.parse::<i128>() {
                Ok(v) if (lo..=hi).contains(&v) => Ok(Const::int(t, v as i64)),
                _ => Err(out_of_range()),
            }
        }
        (LitKind::Hex, t) if t.is_int() => {
            let bits = t.bits();
            let max = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            match parse_int(l) {
                Some((false, m)) if m <= max => Ok(Const::int(t, m as i64)),
                Some((true, m)) if m <= 1u64 << (bits - 1) => Ok(Const::int(t, (m as i64).wrapping_neg())),
                _ => Err(out_of_range()),
            }
        }
        (LitKind::Hex, t) => {
            let digits = l.text.trim_start_matches("0x").trim_start_matches("0X");
            let want = t.bits() as usize / 4;
            if l.text.starts_with('-') {
                return Err(Diagnostic::error(
                    format!("a hex literal for {t} gives its raw bits and cannot be negative, found `{}`", l.text),
                    l.span,
                ));
            }
            if digits.len() != want {
                return Err(Diagnostic::error(
                    format!(
                        "a hex literal for {t} gives its raw bits and must have exactly {want} hex digits, found `{}`",
                        l.text
                    ),
                    l.span,
                ));
            }
            let bits = u64::from_str_radix(digits, 16).map_err(|_| out_of_range())?;
            Ok(Const { ty: t, bits })
        }
        (LitKind::Int | LitKind::Float, Scalar::F32) => {
            let v = if l.text == "nan" { f32::NAN } else { l.text.parse::<f32>().map_err(|_| out_of_range())? };
            if v.is_infinite() && !l.text.ends_with("inf") {
                return Err(out_of_range());
            }
            Ok(Const::f32(v))
        }
        (LitKind::Int | LitKind::Float, Scalar::F16) => {
            let v = if l.text == "nan" { f64::NAN } else { l.text.parse::<f64>().map_err(|_| out_of_range())? };
            let h = f16_nearest(l.text, v);
            if h.is_infinite() && !l.text.ends_with("inf") {
                return Err(out_of_range());
            }
            Ok(Const::f16(h))
        }
        (LitKind::Int | LitKind::Float, _) => {
            let v = if l.text == "nan" { f64::NAN } else { l.text.parse::<f64>().map_err(|_| out_of_range())? };
            if v.is_infinite() && !l.text.ends_with("inf") {
                return Err(out_of_range());
            }
            Ok(Const::f64(v))
        }
    }
}

/// The `f16` nearest the decimal `text` (ties to even), given `v`, the
/// `f64` nearest it: rounding `v` again is exact unless `v` lies halfway
/// between two `f16`s while `text` does not, and then `text`'s digits,
/// compared with `v`'s exact ones, say which way.
fn f16_nearest(text: &str, v: f64) -> half::f16 {
    use half::f16;
    let h = f16::from_f64(v);
    // An f16's value, infinity standing for 2^16, where the rounding puts it.
    let at = |x: f16| if x.is_infinite() { 65536f64.copysign(x.to_f64()) } else { x.to_f64() };
    if !v.is_finite() || at(h) == v {
        return h;
    }
    // The neighbour on v's other side: one step up or down in magnitude.
    let away = at(h).abs() < v.abs();
    let other = f16::from_bits(if away { h.to_bits() + 1 } else { h.to_bits() - 1 });
    if (v - at(h)).abs() != (at(other) - v).abs() {
        return h;
    }
    let (nearer, farther) = if away { (h, other) } else { (other, h) };
    match decimal_magnitude(text).cmp(&decimal_magnitude(&format!("{v:.60e}"))) {
        std::cmp::Ordering::Less => nearer,
        std::cmp::Ordering::Greater => farther,
        std::cmp::Ordering::Equal => h,
    }
}

/// A decimal's magnitude in a form that orders as the numbers do: the
/// power of ten of its first significant digit, then its significant
/// digits (no trailing zeros); zero is `(i64::MIN, "")`.
fn decimal_magnitude(text: &str) -> (i64, String) {
    let t = text.trim_start_matches('-');
    let (mantissa, exp) = t.split_once(['e', 'E']).unwrap_or((t, "0"));
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let exp: i64 = exp.parse().unwrap_or(0);
    let digits = format!("{int}{frac}");
    let lead = digits.len() - digits.trim_start_matches('0').len();
    let digits = digits.trim_start_matches('0').trim_end_matches('0');
    if digits.is_empty() {
        return (i64::MIN, String::new());
    }
    (exp + int.len() as i64 - 1 - lead as i64, digits.to_string())
}

/// An integer or hex literal's sign and magnitude; None if it overflows
/// 64 bits (or is not an integer).
fn parse_int(l: &ast::Lit<'_>) -> Option<(bool, u64)> {
    let (neg, t) = match l.text.strip_prefix('-') {
        Some(t) => (true, t),
        None => (false, l.text),
    };
    let m = match l.kind {
        LitKind::Hex => u64::from_str_radix(&t[2..], 16).ok()?,
        LitKind::Int => t.parse::<u64>().ok()?,
        _ => return None,
    };
    Some((neg && m != 0, m))
}

/// A loop bound literal (any 64-bit signed value).
fn lit_i64(l: &ast::Lit<'_>) -> Result<i64, Diagnostic> {
    match parse_int(l) {
        Some((false, m)) if m <= i64::MAX as u64 => Ok(m as i64),
        Some((true, m)) if m <= 1u64 << 63 => Ok((m as i64).wrapping_neg()),
        _ => Err(Diagnostic::error(format!("loop bound `{}` is out of range for i64", l.text), l.span)),
    }
}

/// A field extent or block size: a non-negative integer.
fn lit_u64(l: &ast::Lit<'_>) -> Result<u64, Diagnostic> {
    match parse_int(l) {
        Some((false, m)) => Ok(m),
        Some((true, _)) => {
            Err(Diagnostic::error(format!("expected a non-negative integer, found `{}`", l.text), l.span))
        }
        None => Err(Diagnostic::error(format!("integer `{}` is out of range", l.text), l.span)),
    }
}

#[cfg(test)]
mod tests;
