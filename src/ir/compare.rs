//! Equality up to layout.
//!
//! Owns: [`Stream::same_as`] (and [`Func::same_as`]), what "the same module" means for the round
//! trip `parse(print(m))`: the same items, and bodies whose statements
//! reachable from their entry blocks are the same, with entities numbered
//! in print order and spans left out. A pass may leave statements or
//! values it no longer uses in a body's arenas, and creates entities in
//! another order than the parser would; neither is part of what the module
//! says, so neither takes part.
//!
//! Must never: be the IR's `PartialEq`, which stays structural (derived,
//! spans and arena numbering included).

use super::body::{Body, ValueData, ValueDef};
use super::entities::{Block, Numbered, Stmt, Value};
use super::module::{Func, Item, Module, Stream};
use super::span::Span;
use super::stmt::{Bound, StmtData, StmtKind, TaskKind};

impl Stream {
    /// Whether two streams say the same thing (see the module doc).
    pub fn same_as(&self, other: &Stream) -> bool {
        self.without_layout() == other.without_layout()
    }

    /// A copy without spans, with every body reduced to what its entry
    /// block reaches, renumbered in print order.
    pub fn without_layout(&self) -> Stream {
        Stream { modules: self.modules.iter().map(Module::without_layout).collect() }
    }
}

impl Module {
    /// See [`Stream::without_layout`].
    pub fn without_layout(&self) -> Module {
        Module {
            name: self.name.clone(),
            items: self.items.iter().map(Item::without_layout).collect(),
            span: Span::DUMMY,
        }
    }
}

impl Item {
    /// See [`Stream::without_layout`].
    pub fn without_layout(&self) -> Item {
        let mut it = self.clone();
        match &mut it {
            Item::Field(f) => f.span = Span::DUMMY,
            Item::Func(f) => {
                let f = std::sync::Arc::make_mut(f);
                f.span = Span::DUMMY;
                f.params.iter_mut().for_each(|p| p.span = Span::DUMMY);
                f.body = f.body.without_layout(&[]);
            }
            Item::Kernel(k) => {
                k.span = Span::DUMMY;
                k.params.iter_mut().for_each(|p| p.span = Span::DUMMY);
                k.body = k.body.without_layout(&[]);
            }
            Item::Task(t) => {
                t.span = Span::DUMMY;
                t.params.iter_mut().for_each(|p| p.span = Span::DUMMY);
                let header: Vec<Value> = t.kind.vars().to_vec();
                let map = t.body.print_order(&header);
                strip_task_kind(&mut t.kind);
                t.kind_values_mut(|v| *v = map.value(*v));
                t.body = t.body.renumbered(&map);
            }
        }
        it
    }
}

impl Func {
    /// Whether two functions say the same thing (see the module doc): the
    /// copies of one function in the per-task modules of a kernel, read
    /// back from text, are laid out differently.
    pub fn same_as(&self, other: &Func) -> bool {
        let item = |f: &Func| Item::Func(std::sync::Arc::new(f.clone())).without_layout();
        item(self) == item(other)
    }
}

impl super::module::TaskItem {
    fn kind_values_mut(&mut self, mut f: impl FnMut(&mut Value)) {
        match &mut self.kind {
            TaskKind::Serial => {}
            TaskKind::RangeFor { var, lo, hi, .. } => {
                f(var);
                for b in [lo, hi] {
                    if let Bound::Value(v) = b {
                        f(v)
                    }
                }
            }
            TaskKind::StructFor { vars, .. } => vars.iter_mut().for_each(f),
        }
    }
}

/// New numbers of the reachable entities of a body, in print order.
struct Renumbering {
    values: Vec<Option<u32>>,
    stmts: Vec<Option<u32>>,
    blocks: Vec<Option<u32>>,
    counts: [u32; 3],
    /// The reachable statements in pre-order.
    order: Vec<Stmt>,
    /// The reachable blocks in pre-order.
    block_order: Vec<Block>,
}

impl Renumbering {
    fn number(table: &mut [Option<u32>], count: &mut u32, i: usize) {
        if let Some(slot) = table.get_mut(i) {
            if slot.is_none() {
                *slot = Some(*count);
                *count += 1;
            }
        }
    }
    fn see_value(&mut self, v: Value) {
        Self::number(&mut self.values, &mut self.counts[0], v.index())
    }
    /// The new number of a value (an out-of-range value keeps its own).
    fn value(&self, v: Value) -> Value {
        self.values.get(v.index()).copied().flatten().map_or(v, Value)
    }
    fn stmt(&self, s: Stmt) -> Stmt {
        if s == Stmt::HEADER {
            return s;
        }
        self.stmts.get(s.index()).copied().flatten().map_or(s, Stmt)
    }
    fn block(&self, b: Block) -> Block {
        self.blocks.get(b.index()).copied().flatten().map_or(b, Block)
    }
}

impl Body {
    /// See [`Stream::without_layout`]; `header` are a task item's header
    /// variables.
    fn without_layout(&self, header: &[Value]) -> Body {
        self.renumbered(&self.print_order(header))
    }

    fn print_order(&self, header: &[Value]) -> Renumbering {
        let mut r = Renumbering {
            values: vec![None; self.values.len()],
            stmts: vec![None; self.stmts.len()],
            blocks: vec![None; self.blocks.len()],
            counts: [0; 3],
            order: Vec::new(),
            block_order: Vec::new(),
        };
        for &v in self.params.iter().chain(header) {
            r.see_value(v);
        }
        let mut stack = vec![self.entry];
        while let Some(b) = stack.pop() {
            let Some(stmts) = self.blocks.get(b) else {
                continue;
            };
            if r.blocks.get(b.index()).copied().flatten().is_some() {
                continue;
            }
            Renumbering::number(&mut r.blocks, &mut r.counts[2], b.index());
            r.block_order.push(b);
            let mut children = Vec::new();
            for &s in stmts {
                let Some(sd) = self.stmts.get(s) else {
                    continue;
                };
                Renumbering::number(&mut r.stmts, &mut r.counts[1], s.index());
                r.order.push(s);
                if let Some(v) = sd.result {
                    r.see_value(v);
                }
                sd.kind.for_each_value(|v| r.see_value(v));
                children.extend(sd.kind.child_blocks());
            }
            stack.extend(children.into_iter().rev());
        }
        r
    }

    fn renumbered(&self, r: &Renumbering) -> Body {
        let mut values: Vec<Option<ValueData>> = vec![None; r.counts[0] as usize];
        for (v, vd) in self.values.enumerate() {
            if let Some(n) = r.values[v.index()] {
                let def = match vd.def {
                    ValueDef::Result(s) => ValueDef::Result(r.stmt(s)),
                    ValueDef::LoopVar(s, k) => ValueDef::LoopVar(r.stmt(s), k),
                    d => d,
                };
                values[n as usize] = Some(ValueData { name: vd.name.clone(), ty: vd.ty, def, span: Span::DUMMY });
            }
        }
        let stmts = r.order.iter().map(|&s| {
            let sd = &self.stmts[s];
            let mut kind = sd.kind.clone();
            strip_spans(&mut kind);
            kind.values_mut(|v| *v = r.value(*v));
            kind.visit_mut(|_| {}, |b| *b = r.block(*b), |_| {});
            StmtData {
                kind,
                result: sd.result.map(|v| r.value(v)),
                span: Span::DUMMY,
                // Where a statement came from is not what it means.
                loc: None,
            }
        });
        let blocks = r.block_order.iter().map(|&b| self.blocks[b].iter().map(|&s| r.stmt(s)).collect());
        Body {
            values: values.into_iter().flatten().collect(),
            stmts: stmts.collect(),
            blocks: blocks.collect(),
            params: self.params.iter().map(|&v| r.value(v)).collect(),
            entry: r.block(self.entry),
            // Where operands were written is layout, as spans are.
            operand_spans: Default::default(),
        }
    }
}

fn strip_spans(kind: &mut StmtKind) {
    match kind {
        StmtKind::Load(r) | StmtKind::Store(r, _) | StmtKind::Atomic(_, r, _) => r.span = Span::DUMMY,
        StmtKind::Call(_, _, span) => *span = Span::DUMMY,
        StmtKind::For { lo, hi, .. } => {
            strip_bound(lo);
            strip_bound(hi);
        }
        StmtKind::Task { kind, .. } => strip_task_kind(kind),
        _ => {}
    }
}

fn strip_task_kind(kind: &mut TaskKind) {
    match kind {
        TaskKind::Serial => {}
        TaskKind::RangeFor { lo, hi, .. } => {
            strip_bound(lo);
            strip_bound(hi);
        }
        TaskKind::StructFor { field_span, .. } => *field_span = Span::DUMMY,
    }
}

fn strip_bound(b: &mut Bound) {
    if let Bound::Field(_, span) = b {
        *span = Span::DUMMY
    }
}
