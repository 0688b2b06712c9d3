//! From Quadrants' offloaded tasks to task-form KIR text: one KIR kernel
//! per Quadrants kernel, one `task` per offloaded task, fields from the
//! field table, ndarray arguments as fields of their shape at the call,
//! global temporaries as 0-D fields, scalar arguments as parameters.
//!
//! Owns: what each imported statement becomes in KIR (including the few
//! expansions: `floordiv`, `sgn`, `rsqrt`, `while control`, atomics on a
//! local, an ordered float `cmp_ne`), each with the statement's Python
//! location as its `loc`, the names of the items and values it writes,
//! and the refusals that need more than syntax (a dtype KIR lacks, an
//! operator without a KIR form, a `continue` of an outer loop).
//!
//! Must never: parse or verify KIR (the caller reads the text back through
//! the parser and the verifier), or panic on any input.

use super::chi::{self, Bound, Error, Kind, PyLoc, Refusal, Stmt, Task, TaskKind, Ty};
use super::table::{self, Table};
use crate::ir::{Scalar, Span, MAX_RANK};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;

mod ops;
mod tensor;

use tensor::{Comp, Place};

/// One Quadrants kernel to import: its tasks in launch order.
pub struct KernelIn {
    /// Quadrants' name (`saxpy_c60_0`).
    pub quadrants_name: String,
    /// The Python function's name (`saxpy`): the table's key.
    pub python_name: String,
    /// The KIR kernel's name.
    pub kir_name: String,
    pub tasks: Vec<Task>,
}

/// The KIR text of all kernels, with the fields they use.
pub fn lower(table: &Table, kernels: &[KernelIn]) -> Result<String, Error> {
    let mut names = Names::default();
    for k in kernels {
        names.reserve(&k.kir_name);
        for i in 0..k.tasks.len() {
            names.reserve(&format!("{}.{i}", k.kir_name));
        }
    }
    let field_names: Vec<String> = table.fields.iter().map(|f| names.unique(&sanitize(&f.name))).collect();
    let mut m = Module { table, field_names, used: BTreeMap::new(), extra: Vec::new(), names };
    let mut kernels_text = String::new();
    for k in kernels {
        kernels_text += &m.kernel(k)?;
    }
    let mut out = String::new();
    for (&i, &ty) in &m.used {
        let f = &table.fields[i];
        let _ = writeln!(out, "field @{} : {}{}", m.field_names[i], ty, shape(&kir_shape(f)));
    }
    for (name, ty, sh) in &m.extra {
        let _ = writeln!(out, "field @{name} : {ty}{}", shape(sh));
    }
    out += &kernels_text;
    Ok(out)
}

/// A table field's KIR shape: its own axes, then its components' (a
/// vector's `n`, a matrix's `n, m`), as its numpy value has them.
fn kir_shape(f: &table::Field) -> Vec<u64> {
    let mut s = f.shape.clone();
    s.extend(f.component_axes());
    s
}

fn shape(s: &[u64]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("[{}]", s.iter().map(u64::to_string).collect::<Vec<_>>().join(", "))
    }
}

/// A KIR name from any text: `[A-Za-z_][A-Za-z0-9_]*` (no dots, so it can
/// never collide with the names this module makes by adding `.suffix`).
pub fn sanitize(s: &str) -> String {
    let mut out: String = s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        out.insert(0, '_');
    }
    out
}

/// The item names given out so far (one namespace in KIR).
#[derive(Default)]
struct Names(HashSet<String>);

impl Names {
    fn reserve(&mut self, n: &str) {
        self.0.insert(n.to_string());
    }
    fn unique(&mut self, want: &str) -> String {
        let mut name = want.to_string();
        let mut k = 1;
        while self.0.contains(&name) {
            name = format!("{want}.{k}");
            k += 1;
        }
        self.0.insert(name.clone());
        name
    }
}

/// The field of an ndarray argument.
#[derive(Clone)]
struct Nd {
    /// The KIR field's name, without `@`.
    name: String,
    elem: Scalar,
    /// The ndarray's shape at the call (without its elements' axes).
    shape: Vec<u64>,
    /// The axes of its elements when they are vectors or matrices.
    axes: Vec<u64>,
}

/// A table field as a global pointer names it.
struct FieldAt {
    /// The KIR field's name, without `@`.
    name: String,
    elem: Scalar,
    /// The field's own rank (without its components' axes).
    rank: usize,
    /// Its components' axes (none for a scalar field).
    axes: Vec<u64>,
    /// The component the named place holds.
    k: usize,
    stride: Option<u64>,
}

struct Module<'t> {
    table: &'t Table,
    field_names: Vec<String>,
    /// Table fields used, by index, with their KIR element type.
    used: BTreeMap<usize, Scalar>,
    /// Fields made for one kernel: ndarrays and global temporaries.
    extra: Vec<(String, Scalar, Vec<u64>)>,
    names: Names,
}

/// What a Quadrants statement stands for in KIR.
#[derive(Clone, Debug)]
enum V {
    /// A KIR value of a type; `konst` the literal when it is a constant.
    Val { name: String, ty: Scalar, konst: Option<String> },
    /// A field element: `@f[%i, %j]`; `comp` when it is a component of a
    /// matrix field's element that Quadrants may shift in bytes.
    Ptr { field: String, idx: Vec<String>, elem: Scalar, comp: Option<Box<Comp>> },
    /// A vector or matrix value: its components' KIR values, row-major.
    Vec(Vec<Sv>),
    /// A pointer to a whole vector or matrix.
    Tensor(Place),
    /// A component of a local vector chosen at run time: `index` (an
    /// `i32` value) picks one of `slots`.
    DynSlot { slots: Vec<String>, index: String, elem: Scalar },
    /// An `alloca` slot.
    Slot { name: String, elem: Scalar },
    /// An ndarray argument's address (`argaddr[i]`).
    NdBase { arg: u32 },
    /// A struct argument's address: the Python argument's index, and the
    /// path of each of its scalars (its parameters' order).
    Struct { arg: usize, paths: Vec<Vec<u32>> },
    /// A loop (task or `for`), for `loop $L index K`.
    Loop { vars: Vec<String> },
}

/// A scalar KIR value of a type; `konst` the literal when it is a
/// constant (a component of [`V::Vec`]).
#[derive(Clone, Debug)]
struct Sv {
    name: String,
    ty: Scalar,
    konst: Option<String>,
}

impl Sv {
    fn into_v(self) -> V {
        V::Val { name: self.name, ty: self.ty, konst: self.konst }
    }
}

/// The loops around a statement: (Quadrants statement, is a `while`).
type Loops = Vec<(u32, bool)>;

/// One kernel being lowered.
struct Kernel<'k> {
    k: &'k KernelIn,
    /// Each Python argument's KIR parameters: one for a scalar, one per
    /// scalar of a struct, none for the others.
    params: Vec<Vec<(String, Scalar)>>,
    /// ndarray argument index -> its field.
    ndarrays: HashMap<u32, Nd>,
    /// Global temporaries by offset: (field name, element type, the
    /// axes of a vector or matrix temporary).
    tmps: BTreeMap<u64, (String, Scalar, Vec<u64>)>,
    /// Return values by position: (field name, type, the axes of a
    /// vector or matrix).
    rets: BTreeMap<usize, (String, Scalar, Vec<u64>)>,
    /// By a local vector's number of components, the `i1` field of that
    /// length a component chosen at run time is checked against (a load
    /// of it at the index: out of range is the field's bounds error).
    components: BTreeMap<u64, String>,
}

/// One task's body being written.
struct Body {
    out: String,
    depth: usize,
    vals: HashMap<u32, V>,
    /// The axes of each vector or matrix value (its statement's type).
    axes: HashMap<u32, Vec<u64>>,
    fresh: usize,
    /// Every statement number seen in the task: the printer numbers each
    /// once (`re_id`), so a second one is a damaged log.
    seen: HashSet<u32>,
    /// ` loc("file":line:col)` of the statement being written, put after
    /// each KIR statement made for it (after the closing brace of a block
    /// statement, as KIR writes a `for`'s or an `if`'s).
    loc: String,
}

impl Body {
    fn line(&mut self, s: impl AsRef<str>) {
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
        let s = s.as_ref();
        self.out.push_str(s);
        if !s.ends_with('{') {
            self.out.push_str(&self.loc);
        }
        self.out.push('\n');
    }
    fn fresh(&mut self, id: u32) -> String {
        self.fresh += 1;
        format!("%t.{id}.{}", self.fresh)
    }
}

fn located(message: String, s: &Stmt) -> Error {
    let from = if s.near { "near" } else { "from" };
    let at = s.loc.as_ref().map(|l| format!(" ({from} {l})")).unwrap_or_default();
    Error::Syntax { message: format!("{message}{at}"), span: s.span }
}

fn refused(name: impl Into<String>, why: &'static str, span: Span, loc: Option<&PyLoc>) -> Error {
    Error::Refused { refusal: Refusal { name: name.into(), why }, span, loc: loc.cloned(), near: false }
}

fn refused_stmt(name: impl Into<String>, s: &Stmt) -> Error {
    let r = chi::refusal(&name.into());
    Error::Refused { refusal: r, span: s.span, loc: s.loc.clone(), near: s.near }
}

/// KIR's scalar for a Quadrants primitive type, or a refusal naming it.
fn scalar_of(prim: &str, span: Span, loc: Option<&PyLoc>) -> Result<Scalar, Error> {
    table::scalar(prim).ok_or_else(|| {
        refused(format!("type {prim}"), "KIR's types are i1, i8 to i64, u8 to u64, f32 and f64", span, loc)
    })
}

/// [`scalar_of`] for a statement's type, located as the statement is.
fn stmt_scalar(prim: &str, s: &Stmt) -> Result<Scalar, Error> {
    scalar_of(prim, s.span, s.loc.as_ref()).map_err(|e| match e {
        Error::Refused { refusal, span, loc, .. } => Error::Refused { refusal, span, loc, near: s.near },
        e => e,
    })
}

/// The KIR type a statement's hint gives its result (pointers: their
/// element).
fn hint(s: &Stmt) -> Result<Option<Scalar>, Error> {
    match &s.ty {
        None => Ok(None),
        Some(Ty::Prim(p)) | Some(Ty::Ptr(p)) | Some(Ty::Tensor { prim: p, .. }) => stmt_scalar(p, s).map(Some),
        Some(Ty::Other(t)) => Err(refused_stmt(format!("type <{t}>"), s)),
    }
}

/// A float literal as printed by fmt's `{}` (shortest round trip:
/// `1.5`, `1e+20`, `inf`, `-nan`) as KIR's exact hex bits.
fn float_bits(text: &str, ty: Scalar) -> Option<String> {
    let (neg, mag) = match text.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, text),
    };
    let v: f64 = match mag {
        "inf" => f64::INFINITY,
        "nan" => f64::NAN,
        _ if mag.starts_with(|c: char| c.is_ascii_digit()) => mag.parse().ok()?,
        _ => return None,
    };
    let v = if neg { -v } else { v };
    Some(match ty {
        Scalar::F32 => {
            let f: f32 = if mag == "inf" || mag == "nan" { v as f32 } else { text.parse().ok()? };
            format!("0x{:08x}", f.to_bits())
        }
        _ => format!("0x{:016x}", v.to_bits()),
    })
}

impl Module<'_> {
    fn kernel(&mut self, k: &KernelIn) -> Result<String, Error> {
        let args = self.table.kernel_args(&k.quadrants_name).map(|a| a.args.as_slice()).unwrap_or(&[]);
        let mut params = Vec::new();
        let mut param_names = Names::default();
        for a in args {
            params.push(match (a.kind.as_str(), table::scalar(&a.dtype)) {
                ("scalar", Some(t)) => vec![(param_names.unique(&sanitize(&a.name)), t)],
                // A struct's scalars are parameters `%p.0`, `%p.1`, ...
                ("struct", _) => a
                    .members
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        table::scalar(d).map(|t| (param_names.unique(&format!("{}.{i}", sanitize(&a.name))), t))
                    })
                    .collect::<Option<Vec<_>>>()
                    .unwrap_or_default(),
                _ => Vec::new(),
            });
        }
        let mut kc = Kernel {
            k,
            params,
            ndarrays: HashMap::new(),
            tmps: BTreeMap::new(),
            rets: BTreeMap::new(),
            components: BTreeMap::new(),
        };
        let mut tasks = String::new();
        for (i, t) in k.tasks.iter().enumerate() {
            tasks += &self.task(&mut kc, i, t)?;
        }
        for (name, ty, axes) in kc.tmps.values() {
            self.extra.push((name.clone(), *ty, axes.clone()));
        }
        for (name, ty, axes) in kc.rets.values() {
            self.extra.push((name.clone(), *ty, axes.clone()));
        }
        for (n, name) in &kc.components {
            self.extra.push((name.clone(), Scalar::I1, vec![*n]));
        }
        let mut nd: Vec<_> = kc.ndarrays.into_iter().collect();
        nd.sort_by_key(|(i, _)| *i);
        for (_, f) in nd {
            self.extra.push((f.name, f.elem, [f.shape, f.axes].concat()));
        }
        let ps: Vec<String> = kc.params.iter().flatten().map(|(n, t)| format!("%{n}: {t}")).collect();
        Ok(format!("kernel @{}({}) {{\n{tasks}}}\n", k.kir_name, ps.join(", ")))
    }

    /// The table field one of whose places is SNode `place`, marked used.
    fn field_at(&mut self, place: u32, s: &Stmt) -> Result<FieldAt, Error> {
        let what = format!("placed at SNode {place}");
        let i = self.unique_field(|f| f.component_at(place).is_some(), s.span, &what)?;
        let f = &self.table.fields[i];
        field_kind_ok(f).map_err(|(name, why)| refused_stmt(name, s).with_why(why))?;
        check_shape(&f.name, &kir_shape(f), &f.dtype).map_err(|m| located(m, s))?;
        let elem = stmt_scalar(&f.dtype, s)?;
        self.used.insert(i, elem);
        Ok(FieldAt {
            name: self.field_names[i].clone(),
            elem,
            rank: f.shape.len(),
            axes: f.component_axes(),
            k: f.component_at(place).unwrap_or(0),
            stride: f.dynamic_index_stride,
        })
    }

    /// The one field `pick` selects: fields of two Quadrants runtimes
    /// (`init`) may share SNode ids, which is an error here.
    fn unique_field(&self, pick: impl Fn(&table::Field) -> bool, span: Span, what: &str) -> Result<usize, Error> {
        let mut hits = self.table.fields.iter().enumerate().filter(|(_, f)| pick(f));
        let Some((i, first)) = hits.next() else {
            return Err(Error::Syntax { message: format!("no field of the field table is {what}"), span });
        };
        if let Some((_, other)) = hits.find(|(_, f)| f.init != first.init) {
            return Err(Error::Syntax {
                message: format!(
                    "fields of two Quadrants runtimes are {what} ('{}' of init {} and '{}' of init {}): import each runtime's calls with a table of its fields",
                    first.name,
                    first.init.unwrap_or(0),
                    other.name,
                    other.init.unwrap_or(0)
                ),
                span,
            });
        }
        Ok(i)
    }

    /// `return`: each value stored into its 0-D field `@k.retI`. Its own
    /// function, out of line, so that the recursive statement lowering's
    /// frame stays small (blocks nest 64 deep on a test thread's stack).
    #[inline(never)]
    fn ret(&mut self, kc: &mut Kernel, b: &mut Body, vals: &[u32], s: &Stmt) -> Result<(), Error> {
        for (i, id) in vals.iter().enumerate() {
            // A vector or matrix is returned in a field of its axes.
            let (comps, axes) = match b.vals.get(id) {
                Some(V::Vec(c)) => (c.clone(), b.axes.get(id).cloned().unwrap_or(vec![c.len() as u64])),
                _ => {
                    let (name, ty) = self.val(b, *id, s)?;
                    (vec![Sv { name, ty, konst: None }], Vec::new())
                }
            };
            let ty = comps[0].ty;
            let field = match kc.rets.get(&i) {
                Some((name, t, a)) if *t == ty && *a == axes => name.clone(),
                Some((_, t, a)) => {
                    return Err(located(format!("return value {i} is {t}{} and {ty}{}", shape(a), shape(&axes)), s))
                }
                None => {
                    let name = self.names.unique(&format!("{}.ret{i}", kc.k.kir_name));
                    kc.rets.insert(i, (name.clone(), ty, axes.clone()));
                    name
                }
            };
            let place = Place::Field { field: format!("@{field}"), lead: Vec::new(), axes, elem: ty };
            tensor::store_components(b, s, &place, &comps)?;
        }
        Ok(())
    }

    /// The 0-D field of the global temporary at `offset`, of type `ty`.
    /// (A vector or matrix temporary has its components' `axes`.)
    fn tmp(&mut self, kc: &mut Kernel, offset: u64, ty: Scalar, axes: &[u64], span: Span) -> Result<String, Error> {
        if let Some((name, t, a)) = kc.tmps.get(&offset) {
            if *t != ty || a != axes {
                return Err(Error::Syntax {
                    message: format!(
                        "the global temporary at offset {offset} is used as {t}{} and as {ty}{}",
                        shape(a),
                        shape(axes)
                    ),
                    span,
                });
            }
            return Ok(name.clone());
        }
        let name = self.names.unique(&format!("{}.tmp{offset}", kc.k.kir_name));
        kc.tmps.insert(offset, (name.clone(), ty, axes.to_vec()));
        Ok(name)
    }

    fn task(&mut self, kc: &mut Kernel, i: usize, t: &Task) -> Result<String, Error> {
        let mut b = Body {
            out: String::new(),
            depth: 2,
            vals: HashMap::new(),
            axes: HashMap::new(),
            fresh: 0,
            seen: HashSet::from([t.id]),
            loc: String::new(),
        };
        let name = format!("{}.{i}", kc.k.kir_name);
        let mut loops: Loops = Vec::new();
        let head = match &t.kind {
            TaskKind::Serial => "serial".to_string(),
            TaskKind::RangeFor { begin, end, block_dim } => {
                let var = format!("%i.{}", t.id);
                let mut bound = |bd: &Bound| -> Result<String, Error> {
                    Ok(match bd {
                        Bound::Const(v) => v.to_string(),
                        Bound::Tmp(off) => format!("@{}[]", self.tmp(kc, *off, Scalar::I32, &[], t.span)?),
                    })
                };
                for bd in [begin, end] {
                    if let Bound::Const(v) = bd {
                        if i32::try_from(*v).is_err() {
                            return Err(Error::Syntax {
                                message: format!("range_for bound {v} does not fit i32"),
                                span: t.span,
                            });
                        }
                    }
                }
                let (lo, hi) = (bound(begin)?, bound(end)?);
                b.vals.insert(t.id, V::Loop { vars: vec![var.clone()] });
                loops.push((t.id, false));
                format!("range_for {var} : i32 in {lo} .. {hi}{}", block(*block_dim))
            }
            TaskKind::StructFor { snode, block_dim } => {
                let fi = self.table.fields.iter().position(|f| f.ancestors.first() == Some(snode));
                if fi.is_some() {
                    self.unique_field(|f| f.ancestors.first() == Some(snode), t.span, &format!("under SNode {snode}"))?;
                }
                let Some(fi) = fi else {
                    let nested = self.table.fields.iter().any(|f| f.ancestors.contains(snode));
                    return Err(if nested {
                        refused(
                            format!("struct_for over S{snode}dense, which is not a place's parent"),
                            "KIR's struct_for walks one field's whole index space",
                            t.span,
                            t.loc.as_ref(),
                        )
                    } else {
                        Error::Syntax {
                            message: format!("no field of the field table is under SNode {snode}"),
                            span: t.span,
                        }
                    });
                };
                let f = &self.table.fields[fi];
                check_shape(&f.name, &f.shape, &f.dtype).map_err(|message| Error::Syntax { message, span: t.span })?;
                field_kind_ok(f).map_err(|(name, why)| refused(name, why, t.span, t.loc.as_ref()))?;
                if f.shape.is_empty() {
                    return Err(refused(
                        "struct_for over a 0-D field",
                        "KIR's struct_for needs a field of rank 1 or more",
                        t.span,
                        t.loc.as_ref(),
                    ));
                }
                let ty = scalar_of(&f.dtype, t.span, t.loc.as_ref())?;
                self.used.insert(fi, ty);
                let (head, vars) = if f.component_axes().is_empty() {
                    let vars: Vec<String> = (0..f.shape.len()).map(|k| format!("%i.{}.{k}", t.id)).collect();
                    (format!("struct_for {} in @{}{}", vars.join(", "), self.field_names[fi], block(*block_dim)), vars)
                } else {
                    // KIR's struct_for would walk the components too.
                    tensor::cells_loop(&mut b, t.id, &f.shape, block(*block_dim))
                };
                b.vals.insert(t.id, V::Loop { vars });
                loops.push((t.id, false));
                head
            }
        };
        self.block(kc, &mut b, &mut loops, &t.body)?;
        Ok(format!("  task @{name} {head} {{\n{}  }}{}\n", b.out, loc_suffix(t.loc.as_ref(), false)))
    }

    fn block(&mut self, kc: &mut Kernel, b: &mut Body, loops: &mut Loops, stmts: &[Stmt]) -> Result<(), Error> {
        // What a block defines is not visible after it (as in KIR); the
        // printer's IR never uses it there, a damaged log may.
        let outer: HashSet<u32> = b.vals.keys().copied().collect();
        for s in stmts {
            self.stmt(kc, b, loops, s)?;
        }
        b.vals.retain(|k, _| outer.contains(k));
        Ok(())
    }

    fn val(&self, b: &Body, id: u32, s: &Stmt) -> Result<(String, Scalar), Error> {
        match b.vals.get(&id) {
            Some(V::Val { name, ty, .. }) => Ok((name.clone(), *ty)),
            Some(_) => Err(located(format!("${id} is not a value here"), s)),
            None => Err(located(format!("${id} is used before it is defined"), s)),
        }
    }

    /// `id` as an `i1` condition (`cmp ne %x, 0` for an integer).
    fn cond(&self, b: &mut Body, id: u32, s: &Stmt) -> Result<String, Error> {
        let (name, ty) = self.val(b, id, s)?;
        Ok(self.cond_of(b, &Sv { name, ty, konst: None }, s))
    }

    /// `x` as an `i1` condition.
    fn cond_of(&self, b: &mut Body, x: &Sv, s: &Stmt) -> String {
        if x.ty == Scalar::I1 {
            return x.name.clone();
        }
        let z = b.fresh(s.id);
        let c = b.fresh(s.id);
        b.line(format!("{z} = const {} : {}", if x.ty.is_float() { "0.0" } else { "0" }, x.ty));
        b.line(format!("{c} = cmp ne {}, {z}", x.name));
        c
    }

    fn stmt(&mut self, kc: &mut Kernel, b: &mut Body, loops: &mut Loops, s: &Stmt) -> Result<(), Error> {
        if !b.seen.insert(s.id) {
            return Err(located(format!("${} is numbered twice in this task (is the log damaged?)", s.id), s));
        }
        let n = format!("%{}", s.id);
        // An ndarray's address is typed as the ndarray's struct.
        let ty = if matches!(s.kind, Kind::ArgAddr(_)) { None } else { hint(s)? };
        let outer = std::mem::replace(&mut b.loc, loc_suffix(s.loc.as_ref(), s.near));
        let done = self.stmt_kind(kc, b, loops, s, &n, ty);
        b.loc = outer;
        done?;
        if let Some(V::Vec(c)) = b.vals.get(&s.id) {
            let axes = tensor::axes_of(s);
            let axes = if axes.iter().product::<u64>() == c.len() as u64 && !axes.is_empty() {
                axes
            } else {
                vec![c.len() as u64]
            };
            b.axes.insert(s.id, axes);
        }
        // A value's hint must be the type of what was written for it.
        let written: Vec<Scalar> = match b.vals.get(&s.id) {
            Some(V::Val { ty, .. }) => vec![*ty],
            Some(V::Vec(c)) => c.iter().map(|c| c.ty).collect(),
            _ => Vec::new(),
        };
        if let (Some(t), Some(vt)) = (ty, written.iter().find(|w| Some(**w) != ty)) {
            if !matches!(s.kind, Kind::LoopIndex { .. }) {
                return Err(located(format!("${} is typed <{t}> but computes {vt} (is the log damaged?)", s.id), s));
            }
        }
        Ok(())
    }

    /// What `stmt` writes for `s`, whose KIR value is `n` and hint `ty`:
    /// the statements that hold blocks here, the others in [`Self::value`]
    /// (out of line, so that this recursive frame stays small: blocks nest
    /// 64 deep on a test thread's stack).
    fn stmt_kind(
        &mut self,
        kc: &mut Kernel,
        b: &mut Body,
        loops: &mut Loops,
        s: &Stmt,
        n: &str,
        ty: Option<Scalar>,
    ) -> Result<(), Error> {
        match &s.kind {
            Kind::If { cond, then, els } => {
                let c = self.cond(b, *cond, s)?;
                b.line(format!("if {c} {{"));
                b.depth += 1;
                self.block(kc, b, loops, then)?;
                b.depth -= 1;
                if let Some(els) = els {
                    b.line("} else {");
                    b.depth += 1;
                    self.block(kc, b, loops, els)?;
                    b.depth -= 1;
                }
                b.line("}");
            }
            Kind::While(body) => {
                b.line("while {");
                b.depth += 1;
                loops.push((s.id, true));
                self.block(kc, b, loops, body)?;
                loops.pop();
                b.depth -= 1;
                b.line("}");
            }
            Kind::WhileControl { cond } => {
                if !loops.last().is_some_and(|l| l.1) {
                    return Err(located("'while control' outside a while loop".to_string(), s));
                }
                let (v, cty) = self.val(b, *cond, s)?;
                let konst = match b.vals.get(cond) {
                    Some(V::Val { konst, .. }) => konst.clone(),
                    _ => None,
                };
                match konst.as_deref() {
                    Some("0" | "false") => b.line("break"),
                    Some(_) => {}
                    None => {
                        let z = b.fresh(s.id);
                        let c = b.fresh(s.id);
                        let zero = match cty {
                            Scalar::I1 => "false",
                            t if t.is_float() => "0.0",
                            _ => "0",
                        };
                        b.line(format!("{z} = const {zero} : {cty}"));
                        b.line(format!("{c} = cmp eq {v}, {z}"));
                        b.line(format!("if {c} {{"));
                        b.line("  break");
                        b.line("}");
                    }
                }
            }
            // A kernel's return values: 0-D fields `@k.ret0`, `@k.ret1`, ...
            // (KIR kernels return nothing; a caller reads the fields).
            Kind::Return(vals) => self.ret(kc, b, vals, s)?,
            Kind::Continue { scope } => match (loops.last(), scope) {
                (None, _) => return Err(located("'continue' outside a loop".to_string(), s)),
                (Some((inner, _)), Some(sc)) if inner != sc => {
                    return Err(refused_stmt("continue of an outer loop", s)
                        .with_why("KIR's continue ends the innermost loop's iteration"))
                }
                _ => b.line("continue"),
            },
            Kind::RangeFor { begin, end, reversed, body } => {
                let (lo, lt) = self.val(b, *begin, s)?;
                let (hi, ht) = self.val(b, *end, s)?;
                if lt != ht || !matches!(lt, Scalar::I32 | Scalar::I64) {
                    return Err(located(format!("a for over {lt} .. {ht}"), s));
                }
                let var = format!("%i.{}", s.id);
                if *reversed {
                    let sum = b.fresh(s.id);
                    let one = b.fresh(s.id);
                    let last = b.fresh(s.id);
                    let r = format!("%r.{}", s.id);
                    b.line(format!("{sum} = add {lo}, {hi}"));
                    b.line(format!("{one} = const 1 : {lt}"));
                    b.line(format!("{last} = sub {sum}, {one}"));
                    b.line(format!("for {r} in {lo} .. {hi} {{"));
                    b.line(format!("  {var} = sub {last}, {r}"));
                } else {
                    b.line(format!("for {var} in {lo} .. {hi} {{"));
                }
                b.vals.insert(s.id, V::Loop { vars: vec![var] });
                b.depth += 1;
                loops.push((s.id, false));
                self.block(kc, b, loops, body)?;
                loops.pop();
                b.depth -= 1;
                b.line("}");
            }
            _ => self.value(kc, b, s, n, ty)?,
        }
        Ok(())
    }

    /// What `stmt` writes for a statement that holds no block.
    #[inline(never)]
    fn value(&mut self, kc: &mut Kernel, b: &mut Body, s: &Stmt, n: &str, ty: Option<Scalar>) -> Result<(), Error> {
        let n = n.to_string();
        let need_ty = || ty.ok_or_else(|| located("a statement without its type".to_string(), s));
        let def = |b: &mut Body, ty: Scalar, konst: Option<String>| {
            b.vals.insert(s.id, V::Val { name: format!("%{}", s.id), ty, konst });
        };
        match &s.kind {
            Kind::Const(text) => self.constant(b, s, &n, text, need_ty()?)?,
            Kind::ArgLoad(i) => self.arg_load(kc, b, s, *i, ty)?,
            Kind::ArgAddr(i) => {
                let j = self.runtime_arg(kc, *i, s)?;
                let v = if self.args_of(kc)[j].kind == "struct" {
                    self.struct_arg(kc, j, s)?
                } else {
                    self.ndarray(kc, *i, s)?;
                    V::NdBase { arg: *i }
                };
                b.vals.insert(s.id, v);
            }
            Kind::ShapeAlongAxis { axis, arg } => {
                let sh = self.ndarray(kc, *arg, s)?.shape;
                let Some(&extent) = sh.get(*axis as usize) else {
                    return Err(located(format!("ndarray argument {arg} has no axis {axis} in the field table"), s));
                };
                let ty = ty.unwrap_or(Scalar::I32);
                if ty != Scalar::I32 || i32::try_from(extent).is_err() {
                    return Err(located(format!("ndarray axis {axis} of extent {extent} as {ty}"), s));
                }
                b.line(format!("{n} = const {extent} : {ty}"));
                def(b, ty, Some(extent.to_string()));
            }
            Kind::LoopIndex { lp, index } => match b.vals.get(lp) {
                Some(V::Loop { vars }) if (*index as usize) < vars.len() => {
                    let v = vars[*index as usize].clone();
                    b.vals.insert(s.id, V::Val { name: v, ty: Scalar::I32, konst: None });
                }
                _ => return Err(located(format!("${lp} is not a loop with an index {index}"), s)),
            },
            Kind::GlobalPtr { place, indices } => {
                let f = self.field_at(*place, s)?;
                let (field, elem, rank) = (&f.name, f.elem, f.rank);
                if ty.is_some_and(|t| t != elem) {
                    return Err(located(
                        format!("field @{field} is {elem} in the field table but accessed as {}", need_ty()?),
                        s,
                    ));
                }
                if indices.len() != rank {
                    return Err(located(
                        format!("field @{field} has rank {rank} but is indexed with {}", indices.len()),
                        s,
                    ));
                }
                let idx = indices.iter().map(|i| self.val(b, *i, s).map(|v| v.0)).collect::<Result<_, _>>()?;
                let v = tensor::field_ptr(b, s, f, idx)?;
                b.vals.insert(s.id, v);
            }
            Kind::GlobalTmp { offset } => {
                let elem = need_ty()?;
                let axes = tensor::axes_of(s);
                let field = format!("@{}", self.tmp(kc, *offset, elem, &axes, s.span)?);
                b.vals.insert(
                    s.id,
                    match axes.is_empty() {
                        true => V::Ptr { field, idx: Vec::new(), elem, comp: None },
                        false => V::Tensor(Place::Field { field, lead: Vec::new(), axes, elem }),
                    },
                );
            }
            Kind::ExternalPtr { base, indices, element_shape } => {
                self.external_ptr(kc, b, s, (*base, indices, element_shape), ty)?
            }
            Kind::GlobalLoad(p) | Kind::LocalLoad(p) => {
                let v = tensor::load(b, s, *p)?;
                b.vals.insert(s.id, v);
            }
            Kind::GlobalStore { dest, val } | Kind::LocalStore { dest, val } => tensor::store(b, s, *dest, *val)?,
            Kind::Assert { cond, message, args } => {
                let c = self.cond(b, *cond, s)?;
                let mut line = format!("assert {c}, {}", crate::lexer::quote_string(message));
                for a in args {
                    line.push_str(", ");
                    line.push_str(&self.val(b, *a, s)?.0);
                }
                b.line(line);
            }
            Kind::Alloca => {
                let elem = need_ty()?;
                let v = tensor::alloca(b, s, elem);
                b.vals.insert(s.id, v);
            }
            Kind::MatrixInit(comps) => {
                let v = tensor::matrix_init(b, s, comps)?;
                b.vals.insert(s.id, v);
            }
            Kind::ShiftPtr { base, offset } => {
                let (names, kir_name) = (&mut self.names, &kc.k.kir_name);
                let mut check = |n: u64| -> String {
                    let name =
                        kc.components.entry(n).or_insert_with(|| names.unique(&format!("{kir_name}.components{n}")));
                    format!("@{name}")
                };
                let v = tensor::shift(b, s, *base, *offset, &mut check)?;
                b.vals.insert(s.id, v);
            }
            Kind::GetElement { base, path } => {
                let Some(V::Struct { arg, paths }) = b.vals.get(base) else {
                    return Err(located(format!("${base} is not a struct argument"), s));
                };
                let Some(i) = paths.iter().position(|p| p == path) else {
                    return Err(located(format!("the struct argument has no scalar member at {path:?}"), s));
                };
                let (name, ty) = kc.params[*arg][i].clone();
                b.vals.insert(s.id, V::Val { name: format!("%{name}"), ty, konst: None });
            }
            Kind::Unary { op, a } => self.unary(b, s, op, *a, ty)?,
            Kind::Cast { to, a } => {
                let to = stmt_scalar(to, s)?;
                self.each(b, s, [*a], |_, b, [x], n| {
                    b.line(format!("{n} = cast {} to {to}", x.name));
                    Ok(Sv { name: n.to_string(), ty: to, konst: None })
                })?;
            }
            Kind::Binary { op, a, b: rhs } => self.binary(b, s, op, *a, *rhs, ty)?,
            Kind::Select { c, a, b: other } => {
                self.each(b, s, [*c, *a, *other], |m, b, [c, x, y], n| {
                    let c = m.cond_of(b, &c, s);
                    if x.ty != y.ty {
                        return Err(located(format!("select of {} and {}", x.ty, y.ty), s));
                    }
                    b.line(format!("{n} = select {c}, {}, {}", x.name, y.name));
                    Ok(Sv { name: n.to_string(), ty: x.ty, konst: None })
                })?;
            }
            Kind::Atomic { op, dest, val } => self.atomic(b, s, op, *dest, *val)?,
            _ => return Err(located("a statement with a block here (a bug of kiln-import)".to_string(), s)),
        }
        Ok(())
    }

    /// `const`: the literal as its type reads it (either reading of an
    /// integer's bits; a float's exact bits).
    fn constant(&mut self, b: &mut Body, s: &Stmt, n: &str, text: &str, ty: Scalar) -> Result<(), Error> {
        let lit = match ty {
            Scalar::I1 => match text {
                "true" | "1" => Some("true".to_string()),
                "false" | "0" => Some("false".to_string()),
                _ => None,
            },
            Scalar::F32 | Scalar::F64 => float_bits(text, ty),
            // The printer writes an integer as its type reads it;
            // take either reading of its bits.
            t => text
                .parse::<i128>()
                .ok()
                .filter(|v| *v >= -(1i128 << (t.bits() - 1)) && *v < (1i128 << t.bits()))
                .map(|v| t.int_value(t.wrap_bits(v as u64)).to_string()),
        };
        let Some(lit) = lit else {
            return Err(located(format!("'{text}' is not a constant of type {ty}"), s));
        };
        b.line(format!("{n} = const {lit} : {ty}"));
        b.vals.insert(s.id, V::Val { name: format!("%{}", s.id), ty, konst: Some(lit) });
        Ok(())
    }

    /// `argload`: a scalar parameter, numbered as Quadrants numbers the
    /// runtime arguments; anything else is refused by name.
    fn arg_load(&mut self, kc: &mut Kernel, b: &mut Body, s: &Stmt, i: u32, ty: Option<Scalar>) -> Result<(), Error> {
        let j = self.runtime_arg(kc, i, s)?;
        let a = &self.args_of(kc)[j];
        let (Some([(name, pty)]), "scalar") = (kc.params.get(j).map(Vec::as_slice), a.kind.as_str()) else {
            let a = &self.args_of(kc)[j];
            if a.kind == "scalar" {
                return Err(stmt_scalar(&a.dtype, s)
                    .err()
                    .unwrap_or_else(|| located(format!("argument {i} ('{}') cannot be a parameter", a.name), s)));
            }
            return Err(refused_stmt(format!("argument '{}' of kind {}", a.name, a.kind), s)
                .with_why("KIR parameters are scalars (templates and structs are not imported)"));
        };
        if let Some(t) = ty.filter(|t| t != pty) {
            return Err(located(format!("argument {i} is {pty} in the field table but loaded as {t}"), s));
        }
        b.vals.insert(s.id, V::Val { name: format!("%{name}"), ty: *pty, konst: None });
        Ok(())
    }

    /// `external_ptr`: an element of an ndarray argument.
    fn external_ptr(
        &mut self,
        kc: &mut Kernel,
        b: &mut Body,
        s: &Stmt,
        (base, indices, element_shape): (u32, &[u32], &[u32]),
        ty: Option<Scalar>,
    ) -> Result<(), Error> {
        let Some(V::NdBase { arg }) = b.vals.get(&base).cloned() else {
            return Err(located(format!("${base} is not an ndarray argument"), s));
        };
        let nd = self.ndarray(kc, arg, s)?;
        if let Some(t) = ty.filter(|t| *t != nd.elem) {
            let what = format!("ndarray @{} is {} in the field table but accessed as {t}", nd.name, nd.elem);
            return Err(located(what, s));
        }
        let idx = indices.iter().map(|i| self.val(b, *i, s).map(|v| v.0)).collect::<Result<_, _>>()?;
        let v = tensor::ndarray_ptr(s, &nd, element_shape, idx)?;
        b.vals.insert(s.id, v);
        Ok(())
    }

    /// The kernel's Python arguments as the field table lists them.
    fn args_of(&self, kc: &Kernel) -> &[table::Arg] {
        self.table.kernel_args(&kc.k.quadrants_name).map(|a| a.args.as_slice()).unwrap_or(&[])
    }

    /// The index in [`Module::args_of`] of the Python argument behind
    /// Quadrants' runtime parameter `i` (its numbering skips template
    /// arguments and flattens dataclasses: the table records it); a part
    /// of an argument is refused by name, an unknown number is an error.
    fn runtime_arg(&self, kc: &Kernel, i: u32, s: &Stmt) -> Result<usize, Error> {
        let Some(args) = self.table.kernel_args(&kc.k.quadrants_name) else {
            return Err(located(format!("kernel '{}' has no arguments in the field table", kc.k.python_name), s));
        };
        match args.slot(i).map_err(|m| located(m, s))? {
            table::Slot::Arg(j) => Ok(j),
            table::Slot::Part(p) => Err(refused_stmt(format!("argument {i} ('{}', part of an argument)", p.name), s)
                .with_why("a member of a dataclass or an ndarray inside a template argument is not imported yet")),
            table::Slot::None => {
                Err(located(format!("argument {i} of kernel '{}' is not in the field table", kc.k.python_name), s))
            }
        }
    }

    /// The struct argument `j` at its `argaddr`: its scalars must be the
    /// table's, in number and type.
    fn struct_arg(&self, kc: &Kernel, j: usize, s: &Stmt) -> Result<V, Error> {
        let a = &self.args_of(kc)[j];
        let leaves = match &s.ty {
            Some(Ty::Other(t)) => chi::struct_leaves(t),
            _ => None,
        };
        let Some(leaves) = leaves else {
            return Err(located(format!("struct argument '{}' without its struct type", a.name), s));
        };
        if let Some(d) = a.members.iter().find(|d| table::scalar(d).is_none()) {
            return Err(refused_stmt(format!("struct argument '{}' with a member of type {d}", a.name), s)
                .with_why("KIR's types are i1, i8 to i64, u8 to u64, f32 and f64"));
        }
        let table_types: Vec<&str> = a.members.iter().map(String::as_str).collect();
        let logged: Vec<&str> = leaves.iter().map(|(_, t)| t.as_str()).collect();
        if table_types != logged {
            return Err(located(
                format!(
                    "struct argument '{}' has members {table_types:?} in the field table but {logged:?} in the log",
                    a.name
                ),
                s,
            ));
        }
        Ok(V::Struct { arg: j, paths: leaves.into_iter().map(|(p, _)| p).collect() })
    }

    /// The field of ndarray argument `i`.
    fn ndarray(&mut self, kc: &mut Kernel, i: u32, s: &Stmt) -> Result<Nd, Error> {
        if let Some(f) = kc.ndarrays.get(&i) {
            return Ok(f.clone());
        }
        let j = self.runtime_arg(kc, i, s)?;
        let a = &self.args_of(kc)[j];
        if a.kind != "ndarray" {
            return Err(located(format!("argument {i} ('{}') is a {}, not an ndarray", a.name, a.kind), s));
        }
        let elem = stmt_scalar(&a.dtype, s)?;
        check_shape(&a.name, &[a.shape.as_slice(), &a.element_shape].concat(), &a.dtype).map_err(|m| located(m, s))?;
        let wanted = format!("{}.{}", kc.k.kir_name, sanitize(&a.name));
        let (shape, axes) = (a.shape.clone(), a.element_shape.clone());
        let f = Nd { name: self.names.unique(&wanted), elem, shape, axes };
        kc.ndarrays.insert(i, f.clone());
        Ok(f)
    }
}

/// ` loc("file":line:col)` for a statement's own Python location; nothing
/// for a guess (`near`, the nearest statement's) or a location without a
/// column, which KIR's `loc` cannot say.
fn loc_suffix(loc: Option<&PyLoc>, near: bool) -> String {
    match loc {
        Some(l) if !near && l.line >= 1 && l.col >= 1 => {
            format!(" loc({}:{}:{})", crate::lexer::quote_string(&l.file), l.line, l.col)
        }
        _ => String::new(),
    }
}

/// A field KIR can hold: scalar elements, under dense SNodes only (as far
/// as the table says); else the refusal's name and reason.
fn field_kind_ok(f: &table::Field) -> Result<(), (String, &'static str)> {
    if let Some(k) = f.kind.as_deref().filter(|k| *k != "scalar" && *k != "matrix") {
        return Err((format!("{k} field '{}'", f.name), "KIR fields hold scalars, vectors or matrices"));
    }
    if f.kind.as_deref() == Some("matrix") && !matches!(f.element_shape.as_deref(), Some([n, m]) if *n > 0 && *m > 0) {
        return Err((
            format!("matrix field '{}' of element shape {:?}", f.name, f.element_shape.as_deref().unwrap_or(&[])),
            "a vector or matrix field needs its element shape [n, m] in the field table",
        ));
    }
    if let Some(k) = f.ancestor_kinds.iter().find(|k| *k != "dense" && *k != "root") {
        return Err((format!("sparse SNode ({k}) of field '{}'", f.name), "KIR fields are dense arrays"));
    }
    Ok(())
}

/// A shape of the table KIR can declare: rank at most [`MAX_RANK`], extents from 1
/// to 2^40 (the verifier's own bound on a field's bytes is checked after).
/// A shape KIR can hold for a field of `dtype` (a dtype KIR lacks is
/// refused where it is used; its size counts as one byte here).
fn check_shape(name: &str, shape: &[u64], dtype: &str) -> Result<(), String> {
    if shape.len() > MAX_RANK || shape.contains(&0) {
        return Err(format!(
            "'{name}' has the shape {shape:?} in the field table; KIR fields have 0 to {MAX_RANK} extents of at least 1"
        ));
    }
    let elem = table::scalar(dtype).map_or(1, |s| s.size_bytes() as u64);
    let bytes = shape.iter().try_fold(elem, |acc, &e| acc.checked_mul(e));
    if bytes.is_none_or(|b| b > crate::verifier::MAX_FIELD_BYTES) {
        return Err(format!(
            "'{name}' has the shape {shape:?} of {dtype} in the field table, over KIR's limit of 2^40 bytes for a field"
        ));
    }
    Ok(())
}

fn block(block_dim: u32) -> String {
    if block_dim == 0 {
        String::new()
    } else {
        format!(" block_dim {block_dim}")
    }
}

impl Error {
    /// The same refusal with another reason.
    fn with_why(self, why: &'static str) -> Error {
        match self {
            Error::Refused { refusal, span, loc, near } => {
                Error::Refused { refusal: Refusal { why, ..refusal }, span, loc, near }
            }
            e => e,
        }
    }
}
