//! From Quadrants' offloaded tasks to task-form KIR: one KIR kernel
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
//! The IR is built through [`Builder`], so the importer spells no KIR
//! syntax: the one printer writes what it makes.
//!
//! Must never: verify KIR (the caller does), or panic on any input.

use super::chi::{self, Bound, Error, Kind, PyLoc, Refusal, Stmt, Task, TaskKind, Ty};
use super::table::{self, Table};
use crate::ir::{
    self, AtomicOp, BinOp, Builder, CmpOp, Const, FieldRef, Ins, Item, Loc, Name, PrintPiece, Scalar, Span, Stream,
    UnOp, Value, MAX_RANK,
};
use std::collections::{BTreeMap, HashMap, HashSet};

mod call;
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

/// Why a type is refused: the scalar types KIR has (`Scalar::ALL`).
const KIR_TYPES: &str = "KIR's types are i1, i8 to i64, u8 to u64, f16, f32 and f64";

/// One real function (a `qd.real_func`) the kernels may call: its body as
/// its dump before Quadrants lowers field accesses.
pub struct FuncIn {
    /// Quadrants' name (`sq_143_0`), what a `call` names.
    pub quadrants_name: String,
    pub body: Vec<Stmt>,
}

/// The KIR of all kernels, with the fields they use and the functions
/// they call: one module, built through [`Builder`] (the caller verifies
/// it). `funcs` are the real functions of the log by Quadrants' name;
/// only those called are lowered.
pub fn lower(table: &Table, kernels: &[KernelIn], funcs: &HashMap<String, FuncIn>) -> Result<Stream, Error> {
    let mut names = Names::default();
    for k in kernels {
        names.reserve(&k.kir_name);
        for i in 0..k.tasks.len() {
            names.reserve(&format!("{}.{i}", k.kir_name));
        }
    }
    let field_names: Vec<String> = table.fields.iter().map(|f| names.unique(&sanitize(&f.name))).collect();
    let mut m = Module {
        table,
        field_names,
        used: BTreeMap::new(),
        extra: Vec::new(),
        names,
        funcs,
        lowered: HashMap::new(),
        active: Vec::new(),
        func_items: Vec::new(),
    };
    let mut kernel_items = Vec::new();
    for k in kernels {
        kernel_items.push(Item::Kernel(m.kernel(k)?));
    }
    let field = |name: &str, elem: Scalar, shape: Vec<u64>| {
        Item::Field(ir::Field { name: name.into(), elem, shape, span: Span::DUMMY })
    };
    let mut items: Vec<Item> =
        m.used.iter().map(|(&i, &ty)| field(&m.field_names[i], ty, kir_shape(&table.fields[i]))).collect();
    items.extend(m.extra.iter().map(|(name, ty, sh)| field(name, *ty, sh.clone())));
    items.append(&mut m.func_items);
    items.extend(kernel_items);
    Ok(Stream { modules: vec![ir::Module { name: None, items, span: Span::DUMMY }] })
}

/// A table field's KIR shape: its own axes, then its components' (a
/// vector's `n`, a matrix's `n, m`), as its numpy value has them.
fn kir_shape(f: &table::Field) -> Vec<u64> {
    let mut s = f.shape.clone();
    s.extend(f.component_axes());
    s
}

/// A shape as messages write it: `[2, 3]`, nothing for a 0-D field.
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
    /// The KIR field's name.
    name: String,
    elem: Scalar,
    /// The ndarray's shape at the call (without its elements' axes).
    shape: Vec<u64>,
    /// The axes of its elements when they are vectors or matrices.
    axes: Vec<u64>,
}

/// A table field as a global pointer names it.
struct FieldAt {
    /// The KIR field's name.
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
    /// The log's real functions, by Quadrants' name.
    funcs: &'t HashMap<String, FuncIn>,
    /// The functions lowered so far, by Quadrants' name.
    lowered: HashMap<String, FuncSig>,
    /// The functions being lowered, outermost first: a call of one of
    /// them is recursion.
    active: Vec<String>,
    func_items: Vec<Item>,
}

/// A real function lowered: its KIR name and signature.
struct FuncSig {
    name: String,
    params: Vec<Scalar>,
    ret: Option<Scalar>,
}

/// The pieces of a vector or matrix as Quadrants prints it: its
/// components (row-major over `axes`) in brackets, one pair per axis,
/// separated by `, ` (`[1, 2]`, `[[1, 2], [3, 4]]`).
fn print_tensor(out: &mut Vec<PrintPiece>, comps: &[Value], axes: &[u64]) {
    let Some((&n, inner)) = axes.split_first() else {
        out.extend(comps.first().map(|&c| PrintPiece::Value(c)));
        return;
    };
    let step = comps.len() / (n.max(1) as usize);
    out.push(PrintPiece::Str("[".into()));
    for k in 0..n as usize {
        if k > 0 {
            out.push(PrintPiece::Str(", ".into()));
        }
        print_tensor(out, comps.get(k * step..(k + 1) * step).unwrap_or_default(), inner);
    }
    out.push(PrintPiece::Str("]".into()));
}

/// What a Quadrants statement stands for in KIR.
#[derive(Clone, Debug)]
enum V {
    /// A scalar KIR value (its type and, for a constant, its value are
    /// the body's: [`Body::ty`], [`Body::konst`]).
    Val(Value),
    /// A field element: `@f[%i, %j]`; `comp` when it is a component of a
    /// matrix field's element that Quadrants may shift in bytes.
    Ptr { field: Name, idx: Vec<Value>, elem: Scalar, comp: Option<Box<Comp>> },
    /// A vector or matrix value: its components' KIR values, row-major.
    Vec(Vec<Value>),
    /// A pointer to a whole vector or matrix.
    Tensor(Place),
    /// A component of a local vector chosen at run time: `index` (an
    /// `i32` value) picks one of `slots`.
    DynSlot { slots: Vec<Value>, index: Value, elem: Scalar },
    /// An `alloca` slot.
    Slot { slot: Value, elem: Scalar },
    /// An ndarray argument's address (`argaddr[i]`).
    NdBase { arg: u32 },
    /// A struct argument's address: the Python argument's index, and the
    /// path of each of its scalars (its parameters' order).
    Struct { arg: usize, paths: Vec<Vec<u32>> },
    /// A loop (task or `for`), for `loop $L index K`.
    Loop { vars: Vec<Value> },
    /// A call's results, for `get_element($call, 0)`: its one value, or
    /// none.
    Results(Option<Value>),
}

/// A task statement built: its body, its variables, and the shape of the
/// cells they count when a body must compute the cell's indices.
type TaskHead = (ir::Block, Vec<Value>, Option<Vec<u64>>);

/// The loops around a statement: (Quadrants statement, is a `while`).
type Loops = Vec<(u32, bool)>;

/// One kernel being lowered.
struct Kernel<'k> {
    k: &'k KernelIn,
    /// Each Python argument's KIR parameters: one for a scalar, one per
    /// scalar of a struct, none for the others.
    params: Vec<Vec<Value>>,
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
    /// When this is a real function rather than a kernel: its return type.
    func_ret: Option<Option<Scalar>>,
}

/// One task's body being built.
struct Body<'a> {
    bld: Builder<'a>,
    vals: HashMap<u32, V>,
    /// The axes of each vector or matrix value (its statement's type).
    axes: HashMap<u32, Vec<u64>>,
    fresh: usize,
    /// Every statement number seen in the task: the printer numbers each
    /// once (`re_id`), so a second one is a damaged log.
    seen: HashSet<u32>,
    /// An index constant over `i32` that the statement being built asked
    /// for (a table's axis or stride), reported once the statement ends.
    too_big: Option<u64>,
}

impl<'a> Body<'a> {
    /// A fresh name for a value made for statement `id`: `t.ID.N`.
    fn fresh(&mut self, id: u32) -> Name {
        self.fresh += 1;
        ir::Name::from(format!("t.{id}.{}", self.fresh))
    }
    /// A statement defining a value of a fresh name ([`Body::fresh`]).
    fn at(&mut self, id: u32) -> Ins<'_, 'a> {
        let n = self.fresh(id);
        self.bld.ins(n)
    }
    /// The `i32` constant `v`, an index along a component axis or a
    /// stride; one over `i32` is remembered in `too_big`.
    fn index_const(&mut self, id: u32, v: u64) -> Value {
        let k = i32::try_from(v).unwrap_or_else(|_| {
            self.too_big = Some(v);
            0
        });
        self.at(id).konst(Const::i32(k))
    }
    /// Builds into `block` until [`Body::leave`] with what this returns.
    fn enter(&mut self, block: ir::Block) -> ir::Block {
        let outer = self.bld.block();
        self.bld.switch_to(block);
        outer
    }
    fn leave(&mut self, outer: ir::Block) {
        self.bld.switch_to(outer);
    }
    /// The type of a value built.
    fn ty(&self, v: Value) -> Scalar {
        self.bld.body().ty(v).elem()
    }
    /// The constant a value built is, if a `const` statement defines it.
    fn konst(&self, v: Value) -> Option<Const> {
        let body = self.bld.body();
        match body.value(v).def {
            ir::ValueDef::Result(s) => match body.stmt(s).kind {
                ir::StmtKind::Const(c) => Some(c),
                _ => None,
            },
            _ => None,
        }
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
    table::scalar(prim).ok_or_else(|| refused(format!("type {prim}"), KIR_TYPES, span, loc))
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
/// `1.5`, `1e+20`, `inf`, `-nan`) as a constant of its exact bits.
fn float_const(text: &str, ty: Scalar) -> Option<Const> {
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
    let f32 = || -> Option<f32> {
        if mag == "inf" || mag == "nan" {
            Some(v as f32)
        } else {
            text.parse().ok()
        }
    };
    Some(match ty {
        // Quadrants keeps an f16 constant as the f32 it prints, and rounds
        // it to f16 where it is used.
        Scalar::F16 => Const::f16(half::f16::from_f32(f32()?)),
        Scalar::F32 => Const::f32(f32()?),
        _ => Const::f64(v),
    })
}

impl Module<'_> {
    fn kernel(&mut self, k: &KernelIn) -> Result<ir::Kernel, Error> {
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
        let mut body = ir::Body::new();
        let mut bld = Builder::new(&mut body);
        let kparams = params.iter().flatten().map(|&(_, ty)| ir::Param { ty, default: None, span: Span::DUMMY });
        let kparams = kparams.collect();
        let params: Vec<Vec<Value>> =
            params.into_iter().map(|ps| ps.into_iter().map(|(n, t)| bld.param(n, t)).collect()).collect();
        let mut kc = Kernel {
            k,
            params,
            ndarrays: HashMap::new(),
            tmps: BTreeMap::new(),
            rets: BTreeMap::new(),
            components: BTreeMap::new(),
            func_ret: None,
        };
        for (i, t) in k.tasks.iter().enumerate() {
            self.task(&mut kc, &mut body, i, t)?;
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
        Ok(ir::Kernel { name: k.kir_name.as_str().into(), params: kparams, body, span: Span::DUMMY })
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
        if let Some(want) = kc.func_ret {
            return self.func_ret(b, vals, want, s);
        }
        for (i, id) in vals.iter().enumerate() {
            // A vector or matrix is returned in a field of its axes.
            let (comps, axes) = match b.vals.get(id) {
                Some(V::Vec(c)) => (c.clone(), b.axes.get(id).cloned().unwrap_or(vec![c.len() as u64])),
                _ => (vec![self.val(b, *id, s)?.0], Vec::new()),
            };
            let ty = b.ty(comps[0]);
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
            let place = Place::Field { field: field.into(), lead: Vec::new(), axes, elem: ty };
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

    fn task(&mut self, kc: &mut Kernel, body: &mut ir::Body, i: usize, t: &Task) -> Result<(), Error> {
        let mut b = Body {
            bld: Builder::new(body),
            vals: HashMap::new(),
            axes: HashMap::new(),
            fresh: 0,
            seen: HashSet::from([t.id]),
            too_big: None,
        };
        let name = format!("{}.{i}", kc.k.kir_name);
        let mut loops: Loops = Vec::new();
        b.bld.set_loc(py_loc(t.loc.as_ref(), false));
        let (block, vars, cells) = match &t.kind {
            TaskKind::Serial => (b.bld.task_serial(name), Vec::new(), None),
            TaskKind::RangeFor { begin, end, block_dim } => {
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
                let mut bound = |bd: &Bound| -> Result<ir::Bound, Error> {
                    Ok(match bd {
                        Bound::Const(v) => ir::Bound::Const(*v),
                        Bound::Tmp(off) => {
                            ir::Bound::Field(self.tmp(kc, *off, Scalar::I32, &[], t.span)?.into(), Span::DUMMY)
                        }
                    })
                };
                let range = (bound(begin)?, bound(end)?);
                let var = (Name::from(format!("i.{}", t.id)), Scalar::I32);
                let (var, block) = b.bld.task_range_for(name, var, range, block_size(*block_dim));
                (block, vec![var], None)
            }
            TaskKind::StructFor { snode, block_dim } => self.struct_for(&mut b, t, name, *snode, *block_dim)?,
        };
        b.enter(block);
        b.bld.set_loc(None);
        if !matches!(t.kind, TaskKind::Serial) {
            // A walk over a vector field's cells computes each cell's
            // indices from the one variable.
            let vars = match (cells, vars.as_slice()) {
                (Some(shape), [flat]) => tensor::cell_indices(&mut b, t.id, *flat, &shape),
                _ => vars,
            };
            if let Some(v) = b.too_big.take() {
                return Err(Error::Syntax {
                    message: format!("a field extent of {v}, over KIR's i32 indices"),
                    span: t.span,
                });
            }
            b.vals.insert(t.id, V::Loop { vars });
            loops.push((t.id, false));
        }
        self.block(kc, &mut b, &mut loops, &t.body)
    }

    /// A `struct_for` task over SNode `snode`: its body, its variables,
    /// and the shape of the field's cells when they are vectors or
    /// matrices (KIR's struct_for would walk the components too, so the
    /// task is a `range_for` over the cells, whose one variable the body
    /// turns into the cell's indices).
    fn struct_for(
        &mut self,
        b: &mut Body,
        t: &Task,
        name: String,
        snode: u32,
        block_dim: u32,
    ) -> Result<TaskHead, Error> {
        let fi = self.table.fields.iter().position(|f| f.ancestors.first() == Some(&snode));
        if fi.is_some() {
            self.unique_field(|f| f.ancestors.first() == Some(&snode), t.span, &format!("under SNode {snode}"))?;
        }
        let Some(fi) = fi else {
            let nested = self.table.fields.iter().any(|f| f.ancestors.contains(&snode));
            return Err(if nested {
                refused(
                    format!("struct_for over S{snode}dense, which is not a place's parent"),
                    "KIR's struct_for walks one field's whole index space",
                    t.span,
                    t.loc.as_ref(),
                )
            } else {
                Error::Syntax { message: format!("no field of the field table is under SNode {snode}"), span: t.span }
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
        if f.component_axes().is_empty() {
            let vars = (0..f.shape.len()).map(|k| Name::from(format!("i.{}.{k}", t.id))).collect();
            let field = self.field_names[fi].as_str().into();
            let (vars, block) = b.bld.task_struct_for(name, vars, field, block_size(block_dim));
            return Ok((block, vars, None));
        }
        let total: u64 = f.shape.iter().product();
        let range = (ir::Bound::Const(0), ir::Bound::Const(total as i64));
        let var = (Name::from(format!("i.{}", t.id)), Scalar::I32);
        let (var, block) = b.bld.task_range_for(name, var, range, block_size(block_dim));
        Ok((block, vec![var], Some(f.shape.clone())))
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

    fn val(&self, b: &Body, id: u32, s: &Stmt) -> Result<(Value, Scalar), Error> {
        match b.vals.get(&id) {
            Some(&V::Val(v)) => Ok((v, b.ty(v))),
            Some(_) => Err(located(format!("${id} is not a value here"), s)),
            None => Err(located(format!("${id} is used before it is defined"), s)),
        }
    }

    /// `id` as an `i1` condition (`cmp ne %x, 0` for an integer).
    fn cond(&self, b: &mut Body, id: u32, s: &Stmt) -> Result<Value, Error> {
        let (v, _) = self.val(b, id, s)?;
        Ok(self.cond_of(b, v, s))
    }

    /// `x` as an `i1` condition.
    fn cond_of(&self, b: &mut Body, x: Value, s: &Stmt) -> Value {
        let ty = b.ty(x);
        if ty == Scalar::I1 {
            return x;
        }
        let z = b.at(s.id).konst(Const::int(ty, 0));
        b.at(s.id).cmp(CmpOp::Ne, x, z)
    }

    fn stmt(&mut self, kc: &mut Kernel, b: &mut Body, loops: &mut Loops, s: &Stmt) -> Result<(), Error> {
        if s.id != chi::NO_ID && !b.seen.insert(s.id) {
            return Err(located(format!("${} is numbered twice in this task (is the log damaged?)", s.id), s));
        }
        let n = Name::from(s.id.to_string());
        // An ndarray's address is typed as the ndarray's struct.
        let ty = if matches!(s.kind, Kind::ArgAddr(_) | Kind::Call { .. }) { None } else { hint(s)? };
        let outer = b.bld.set_loc(py_loc(s.loc.as_ref(), s.near));
        let done = self.stmt_kind(kc, b, loops, s, &n, ty);
        b.bld.set_loc(outer);
        done?;
        if let Some(v) = b.too_big.take() {
            return Err(located(format!("a component index or stride of {v}, over KIR's i32 indices"), s));
        }
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
            Some(&V::Val(v)) => vec![b.ty(v)],
            Some(V::Vec(c)) => c.iter().map(|&c| b.ty(c)).collect(),
            _ => Vec::new(),
        };
        if let (Some(t), Some(vt)) = (ty, written.iter().find(|w| Some(**w) != ty)) {
            if !matches!(s.kind, Kind::LoopIndex { .. }) {
                return Err(located(format!("${} is typed <{t}> but computes {vt} (is the log damaged?)", s.id), s));
            }
        }
        Ok(())
    }

    /// What `stmt` builds for `s`, whose KIR value is named `n` and hint
    /// `ty`: the statements that hold blocks here, the others in
    /// [`Self::value`] (out of line, so that this recursive frame stays
    /// small: blocks nest 64 deep on a test thread's stack).
    fn stmt_kind(
        &mut self,
        kc: &mut Kernel,
        b: &mut Body,
        loops: &mut Loops,
        s: &Stmt,
        n: &Name,
        ty: Option<Scalar>,
    ) -> Result<(), Error> {
        match &s.kind {
            Kind::If { cond, then, els } => {
                let c = self.cond(b, *cond, s)?;
                let (then_blk, else_blk) = b.bld.if_(c, els.is_some());
                let outer = b.enter(then_blk);
                self.block(kc, b, loops, then)?;
                if let (Some(els), Some(else_blk)) = (els, else_blk) {
                    b.bld.switch_to(else_blk);
                    self.block(kc, b, loops, els)?;
                }
                b.leave(outer);
            }
            Kind::While(body) => {
                let body_blk = b.bld.while_();
                let outer = b.enter(body_blk);
                loops.push((s.id, true));
                self.block(kc, b, loops, body)?;
                loops.pop();
                b.leave(outer);
            }
            Kind::WhileControl { cond } => self.while_control(b, loops, *cond, s)?,
            // A kernel's return values: 0-D fields `@k.ret0`, `@k.ret1`, ...
            // (KIR kernels return nothing; a caller reads the fields).
            Kind::Return(vals) => self.ret(kc, b, vals, s)?,
            Kind::Continue { scope } => match (loops.last(), scope) {
                (None, _) => return Err(located("'continue' outside a loop".to_string(), s)),
                (Some((inner, _)), Some(sc)) if inner != sc => {
                    return Err(refused_stmt("continue of an outer loop", s)
                        .with_why("KIR's continue ends the innermost loop's iteration"))
                }
                _ => b.bld.continue_(),
            },
            Kind::RangeFor { begin, end, reversed, body } => {
                let (lo, lt) = self.val(b, *begin, s)?;
                let (hi, ht) = self.val(b, *end, s)?;
                if lt != ht || !matches!(lt, Scalar::I32 | Scalar::I64) {
                    return Err(located(format!("a for over {lt} .. {ht}"), s));
                }
                let var = Name::from(format!("i.{}", s.id));
                let range = (ir::Bound::Value(lo), ir::Bound::Value(hi));
                let (var, outer) = if *reversed {
                    // `hi - 1 - r` for `r` counting up.
                    let (sum, one, last) = (b.fresh(s.id), b.fresh(s.id), b.fresh(s.id));
                    let sum = b.bld.ins(sum).binary(BinOp::Add, lo, hi);
                    let one = b.bld.ins(one).konst(Const::int(lt, 1));
                    let last = b.bld.ins(last).binary(BinOp::Sub, sum, one);
                    let (r, blk) = b.bld.for_(format!("r.{}", s.id), range.0, range.1);
                    let outer = b.enter(blk);
                    (b.bld.ins(var).binary(BinOp::Sub, last, r), outer)
                } else {
                    let (v, blk) = b.bld.for_(var, range.0, range.1);
                    (v, b.enter(blk))
                };
                b.vals.insert(s.id, V::Loop { vars: vec![var] });
                loops.push((s.id, false));
                self.block(kc, b, loops, body)?;
                loops.pop();
                b.leave(outer);
            }
            _ => self.value(kc, b, s, n, ty)?,
        }
        Ok(())
    }

    /// `while control $c`: a `break` when `$c` is zero (nothing when it
    /// is a constant that is not).
    fn while_control(&self, b: &mut Body, loops: &Loops, cond: u32, s: &Stmt) -> Result<(), Error> {
        if !loops.last().is_some_and(|l| l.1) {
            return Err(located("'while control' outside a while loop".to_string(), s));
        }
        let (v, cty) = self.val(b, cond, s)?;
        match b.konst(v) {
            Some(k) if is_zero(k) => b.bld.break_(),
            Some(_) => {}
            None => {
                let z = b.at(s.id).konst(Const::int(cty, 0));
                let c = b.at(s.id).cmp(CmpOp::Eq, v, z);
                let then_blk = b.bld.if_(c, false).0;
                let outer = b.enter(then_blk);
                b.bld.break_();
                b.leave(outer);
            }
        }
        Ok(())
    }

    /// What `stmt` writes for a statement that holds no block.
    #[inline(never)]
    fn value(&mut self, kc: &mut Kernel, b: &mut Body, s: &Stmt, n: &Name, ty: Option<Scalar>) -> Result<(), Error> {
        let need_ty = || ty.ok_or_else(|| located("a statement without its type".to_string(), s));
        match &s.kind {
            Kind::Const(text) => self.constant(b, s, n, text, need_ty()?)?,
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
                let k = Const::int(ty, extent as i64);
                let v = b.bld.ins(n.clone()).konst(k);
                b.vals.insert(s.id, V::Val(v));
            }
            Kind::LoopIndex { lp, index } => match b.vals.get(lp) {
                Some(V::Loop { vars }) if (*index as usize) < vars.len() => {
                    let v = vars[*index as usize];
                    b.vals.insert(s.id, V::Val(v));
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
            Kind::GlobalTmp { .. } if kc.func_ret.is_some() => {
                return Err(refused_stmt("global tmp var in a qd.real_func", s)
                    .with_why("a real function's KIR is one function for every kernel that calls it"))
            }
            Kind::GlobalTmp { offset } => {
                let elem = need_ty()?;
                let axes = tensor::axes_of(s);
                let field = Name::from(self.tmp(kc, *offset, elem, &axes, s.span)?);
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
                let args = args.iter().map(|a| self.val(b, *a, s).map(|v| v.0)).collect::<Result<_, _>>()?;
                b.bld.assert(c, message.clone(), args);
            }
            Kind::Rand => {
                let v = b.bld.ins(n.clone()).random(need_ty()?);
                b.vals.insert(s.id, V::Val(v));
            }
            Kind::Print(pieces) => {
                let mut out = Vec::new();
                for p in pieces {
                    match p {
                        chi::Piece::Str(t) => out.push(PrintPiece::Str(t.clone())),
                        chi::Piece::Value(id) => match b.vals.get(id) {
                            Some(V::Vec(c)) => {
                                let axes = b.axes.get(id).cloned().unwrap_or(vec![c.len() as u64]);
                                print_tensor(&mut out, c, &axes);
                            }
                            _ => out.push(PrintPiece::Value(self.val(b, *id, s)?.0)),
                        },
                    }
                }
                b.bld.print(out);
            }
            Kind::Alloca => {
                let elem = need_ty()?;
                let v = tensor::alloca(b, s, elem, n);
                b.vals.insert(s.id, v);
            }
            Kind::MatrixInit(comps) => {
                let v = tensor::matrix_init(b, s, comps)?;
                b.vals.insert(s.id, v);
            }
            Kind::ShiftPtr { base, offset } => {
                let (names, kir_name) = (&mut self.names, &kc.k.kir_name);
                let mut check = |n: u64| -> Name {
                    let name =
                        kc.components.entry(n).or_insert_with(|| names.unique(&format!("{kir_name}.components{n}")));
                    name.as_str().into()
                };
                let v = tensor::shift(b, s, *base, *offset, &mut check)?;
                b.vals.insert(s.id, v);
            }
            Kind::Call { func, args } => self.call(b, s, func, args, n)?,
            Kind::GetElement { base, path } => get_element(kc, b, s, *base, path)?,
            Kind::Unary { op, a } => self.unary(b, s, op, *a, ty)?,
            Kind::Cast { to, a } => {
                let to = stmt_scalar(to, s)?;
                self.each(b, s, [*a], |_, b, [x], n| Ok(b.bld.ins(n).cast(x, to)))?;
            }
            Kind::BitCast { to, a } => self.bitcast(b, s, to, *a)?,
            Kind::Binary { op, a, b: rhs } => self.binary(b, s, op, *a, *rhs, ty)?,
            Kind::Select { c, a, b: other } => {
                self.each(b, s, [*c, *a, *other], |m, b, [c, x, y], n| {
                    let c = m.cond_of(b, c, s);
                    let (xt, yt) = (b.ty(x), b.ty(y));
                    if xt != yt {
                        return Err(located(format!("select of {xt} and {yt}"), s));
                    }
                    Ok(b.bld.ins(n).select(c, x, y))
                })?;
            }
            Kind::Atomic { op, dest, val } => self.atomic(b, s, op, *dest, *val)?,
            _ => return Err(located("a statement with a block here (a bug of kiln-import)".to_string(), s)),
        }
        Ok(())
    }

    /// `const`: the literal as its type reads it (either reading of an
    /// integer's bits; a float's exact bits).
    fn constant(&mut self, b: &mut Body, s: &Stmt, n: &Name, text: &str, ty: Scalar) -> Result<(), Error> {
        let k = match ty {
            Scalar::I1 => match text {
                "true" | "1" => Some(Const::bool(true)),
                "false" | "0" => Some(Const::bool(false)),
                _ => None,
            },
            Scalar::F16 | Scalar::F32 | Scalar::F64 => float_const(text, ty),
            // The printer writes an integer as its type reads it;
            // take either reading of its bits.
            t => text
                .parse::<i128>()
                .ok()
                .filter(|v| *v >= -(1i128 << (t.bits() - 1)) && *v < (1i128 << t.bits()))
                .map(|v| Const { ty: t, bits: t.wrap_bits(v as u64) }),
        };
        let Some(k) = k else {
            return Err(located(format!("'{text}' is not a constant of type {ty}"), s));
        };
        let v = b.bld.ins(n.clone()).konst(k);
        b.vals.insert(s.id, V::Val(v));
        Ok(())
    }

    /// `argload`: a scalar parameter, numbered as Quadrants numbers the
    /// runtime arguments; anything else is refused by name.
    fn arg_load(&mut self, kc: &mut Kernel, b: &mut Body, s: &Stmt, i: u32, ty: Option<Scalar>) -> Result<(), Error> {
        if kc.func_ret.is_some() {
            return call::func_arg(kc, b, s, i, ty);
        }
        let j = self.runtime_arg(kc, i, s)?;
        let a = &self.args_of(kc)[j];
        let (Some(&[v]), "scalar") = (kc.params.get(j).map(Vec::as_slice), a.kind.as_str()) else {
            let a = &self.args_of(kc)[j];
            if a.kind == "scalar" {
                return Err(stmt_scalar(&a.dtype, s)
                    .err()
                    .unwrap_or_else(|| located(format!("argument {i} ('{}') cannot be a parameter", a.name), s)));
            }
            return Err(refused_stmt(format!("argument '{}' of kind {}", a.name, a.kind), s)
                .with_why("KIR parameters are scalars (templates and structs are not imported)"));
        };
        let pty = b.ty(v);
        if let Some(t) = ty.filter(|t| *t != pty) {
            return Err(located(format!("argument {i} is {pty} in the field table but loaded as {t}"), s));
        }
        b.vals.insert(s.id, V::Val(v));
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
        let v = tensor::ndarray_ptr(b, s, &nd, element_shape, idx)?;
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
        if kc.func_ret.is_some() {
            return Err(refused_stmt(format!("argument {i} of a qd.real_func that is not a scalar"), s)
                .with_why("KIR function parameters are scalars"));
        }
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
            return Err(
                refused_stmt(format!("struct argument '{}' with a member of type {d}", a.name), s).with_why(KIR_TYPES)
            );
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

/// `get_element($base, path...)`: a scalar of a struct argument, or a
/// call's result.
fn get_element(kc: &Kernel, b: &mut Body, s: &Stmt, base: u32, path: &[u32]) -> Result<(), Error> {
    let v = match b.vals.get(&base) {
        Some(&V::Results(r)) => match (r, path) {
            (Some(v), [0]) => v,
            _ => return Err(located(format!("the call ${base} has no result {path:?}"), s)),
        },
        Some(V::Struct { arg, paths }) => {
            let Some(i) = paths.iter().position(|p| p == path) else {
                return Err(located(format!("the struct argument has no scalar member at {path:?}"), s));
            };
            kc.params[*arg][i]
        }
        _ => return Err(located(format!("${base} is not a struct argument"), s)),
    };
    b.vals.insert(s.id, V::Val(v));
    Ok(())
}

/// The KIR location of a statement's own Python location; none for a
/// guess (`near`, the nearest statement's) or a location without a
/// column, which KIR's `loc` cannot say.
fn py_loc(loc: Option<&PyLoc>, near: bool) -> Option<Loc> {
    match loc {
        Some(l) if !near && l.line >= 1 && l.col >= 1 => {
            Some(Loc { file: l.file.as_str().into(), line: l.line, col: l.col })
        }
        _ => None,
    }
}

/// Whether a constant is zero (a float's either zero).
fn is_zero(k: Const) -> bool {
    k.as_f64().map_or(k.bits == 0, |f| f == 0.0)
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

/// A shape of the table KIR can declare for a field of `dtype`: rank at
/// most [`MAX_RANK`], at most 2^40 bytes (a dtype KIR lacks is refused
/// where it is used; its size counts as one byte here). An extent may be 0
/// (an ndarray of no elements).
fn check_shape(name: &str, shape: &[u64], dtype: &str) -> Result<(), String> {
    if shape.len() > MAX_RANK {
        return Err(format!(
            "'{name}' has the shape {shape:?} in the field table; KIR fields have 0 to {MAX_RANK} extents"
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

/// A task's block size: none (KIR's default) where Quadrants says 0.
fn block_size(block_dim: u32) -> Option<u32> {
    (block_dim != 0).then_some(block_dim)
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
