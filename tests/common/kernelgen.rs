//! A bounded random-kernel generator: from a seed, a small well-typed KIR
//! module as text (so it exercises the parser too) that uses every
//! statement kind, for differential tests (passes against the interpreter
//! here; the JIT against the interpreter in codegen's tests).
//!
//! Every generated module:
//! - terminates quickly (loops have small constant or clamped bounds,
//!   `while` loops count to at most 4 before `break`);
//! - never indexes out of bounds (indices are `rem`'d into range and made
//!   non-negative);
//! - is race-free when its top-level `for` loops run in parallel in any
//!   order (what `offload` makes of them): in such a loop a field is either
//!   written and read only at the iteration's own row (`[%i]`, `[%i, j]`;
//!   in a nest that becomes a `struct_for`, only at its own element
//!   `[%i, %j]`), or only read; a loop in serial code at a kernel's top
//!   level says `serial`; the only other writes are integer atomics on
//!   `@cnt`/`@acc`, whose results are then unused;
//! - never stores a NaN (float values are replaced by 0.0 when NaN before a
//!   store): NaN payloads and signs are not specified by KIR, so a digest
//!   must not depend on them.
//!
//! With [`GenConfig::transcendentals`] off, every float operation is an
//! exactly rounded IEEE operation, so any two correct engines agree bit for
//! bit; with it on, `sin cos tan exp log pow atan2` appear too, whose libm
//! results may differ between engines by an ulp.

#![allow(dead_code)]

use kiln::ir::{Const, Scalar};
use kiln::printer::fmt_const;
use std::fmt::Write;

/// What to generate.
#[derive(Clone, Copy, Debug)]
pub struct GenConfig {
    /// Use transcendental functions (`sin` .. `atan2`).
    pub transcendentals: bool,
}

impl Default for GenConfig {
    fn default() -> GenConfig {
        GenConfig { transcendentals: true }
    }
}

/// SplitMix64: small, fast and fixed, so a seed means the same module on
/// every platform and every run. The robustness test drives its mutations
/// with it too, from the raw state (`Rng(seed)`).
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n`; 0 when `n` is 0 (an empty range to pick from).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

const INT_TYPES: [Scalar; 2] = [Scalar::I32, Scalar::I64];
const ALL_TYPES: [Scalar; 12] = Scalar::ALL;

/// A field of the generated module.
struct FieldDecl {
    name: &'static str,
    elem: Scalar,
    shape: Vec<u64>,
    /// Only integer atomics touch it (never a load or store).
    atomic_only: bool,
    /// Written only in serial code.
    serial_only: bool,
}

#[derive(Clone)]
struct Val {
    name: String,
    ty: Scalar,
}

/// The top-level parallel loop being generated.
#[derive(Clone)]
struct Par {
    var: String,
    /// Fields this loop writes (at its own row only).
    owned: Vec<&'static str>,
    /// In a loop nest over a 2-D index space: the inner variable, used as
    /// the column of owned 2-D fields (so the nest is `struct_for`-shaped).
    col: Option<String>,
}

struct Func {
    name: String,
    params: Vec<Scalar>,
    ret: Option<Scalar>,
}

struct Gen<'c> {
    rng: Rng,
    cfg: &'c GenConfig,
    out: String,
    indent: usize,
    next_id: usize,
    fields: Vec<FieldDecl>,
    funcs: Vec<Func>,
    /// Values in scope, innermost scope last.
    scopes: Vec<Vec<Val>>,
    /// Slots in scope (name, type, scope depth).
    slots: Vec<(String, Scalar, usize)>,
    /// Slots below this scope depth are invisible (they belong to another
    /// task once the kernel is offloaded).
    slot_floor: usize,
    par: Option<Par>,
    /// Inside a loop that `break`/`continue` may leave.
    in_loop: bool,
    /// In a function body: no field access except the void helper's atomics.
    in_func: bool,
    budget: usize,
    depth: usize,
    extent: u64,
}

fn edge_const(rng: &mut Rng, ty: Scalar) -> Const {
    let r = rng.next();
    match ty {
        Scalar::I1 => Const::bool(rng.chance(50)),
        Scalar::I32 => Const::i32(*rng.pick(&[
            0,
            1,
            -1,
            2,
            3,
            7,
            31,
            32,
            33,
            -32,
            100,
            -100,
            i32::MIN,
            i32::MAX,
            0x5555_5555,
            r as i32,
        ])),
        Scalar::I64 => Const::i64(*rng.pick(&[
            0,
            1,
            -1,
            5,
            63,
            64,
            65,
            -3,
            1 << 40,
            i64::MIN,
            i64::MAX,
            i32::MIN as i64,
            r as i64,
        ])),
        Scalar::F32 => Const::f32(*rng.pick(&[
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            2.5,
            -2.5,
            0.1,
            1e10,
            -1e10,
            3.4e38,
            1e-45,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            (r % 2000) as f32 / 16.0 - 60.0,
        ])),
        Scalar::F64 => Const::f64(*rng.pick(&[
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -2.5,
            0.1,
            1e300,
            -1e-300,
            4e9,
            -3e18,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            (r % 2000) as f64 / 8.0 - 120.0,
        ])),
        // Halves, subnormals (6e-8 the least), the greatest, and values
        // that round on the way to f16.
        Scalar::F16 => kiln::semantics::eval_cast(
            Const::f64(*rng.pick(&[
                0.0,
                -0.0,
                1.0,
                -1.0,
                0.5,
                -2.5,
                0.1,
                65504.0,
                -6e-8,
                1e-5,
                2049.0,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                (r % 2000) as f64 / 16.0 - 60.0,
            ])),
            Scalar::F16,
        ),
        // The narrow and unsigned integers: around zero, the sign bit and
        // all ones of their width.
        t => Const::int(
            t,
            *rng.pick(&[0, 1, -1, 2, 3, 7, 8, 9, 15, 16, 17, 100, 127, -128, 255, 32767, -32768, 65535, r as i64]),
        ),
    }
}

impl<'c> Gen<'c> {
    fn line(&mut self, text: impl AsRef<str>) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text.as_ref());
        self.out.push('\n');
    }
    fn fresh(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}{}", self.next_id)
    }
    fn define(&mut self, ty: Scalar, rhs: String) -> Val {
        let name = self.fresh("v");
        self.line(format!("%{name} = {rhs}"));
        self.budget = self.budget.saturating_sub(1);
        let v = Val { name, ty };
        if let Some(s) = self.scopes.last_mut() {
            s.push(v.clone());
        }
        v
    }
    fn konst(&mut self, c: Const) -> Val {
        self.define(c.ty, format!("const {} : {}", fmt_const(c), c.ty))
    }
    /// Puts a value (a loop variable) in the innermost scope.
    fn bind(&mut self, name: String, ty: Scalar) {
        if let Some(s) = self.scopes.last_mut() {
            s.push(Val { name, ty });
        }
    }
    fn values_of(&self, ty: Scalar) -> Vec<Val> {
        self.scopes.iter().flatten().filter(|v| v.ty == ty).cloned().collect()
    }
    /// A value of type `ty`: one in scope, or a fresh constant.
    fn value(&mut self, ty: Scalar) -> Val {
        let vs = self.values_of(ty);
        if vs.is_empty() || self.rng.chance(15) {
            let c = edge_const(&mut self.rng, ty);
            self.konst(c)
        } else {
            self.rng.pick(&vs).clone()
        }
    }
    /// An integer value of type i32 or i64 in `0 .. n`.
    fn index(&mut self, n: u64) -> Val {
        let ty = *self.rng.pick(&INT_TYPES);
        let v = self.value(ty);
        if self.rng.chance(10) {
            let c = Const::int(ty, self.rng.below(n as usize) as i64);
            return self.konst(c);
        }
        let n = self.konst(Const::int(v.ty, n as i64));
        let r = self.define(v.ty, format!("rem %{}, %{}", v.name, n.name));
        let s = self.define(v.ty, format!("add %{}, %{}", r.name, n.name));
        self.define(v.ty, format!("rem %{}, %{}", s.name, n.name))
    }

    fn field(&self, name: &str) -> &FieldDecl {
        self.fields.iter().find(|f| f.name == name).expect("generated field")
    }

    /// Indices for an element of `field`: the own row in a parallel loop
    /// that owns the field, anything in bounds otherwise.
    fn indices(&mut self, field: &'static str) -> Vec<Val> {
        let shape = self.field(field).shape.clone();
        let own = self.par.as_ref().filter(|p| p.owned.contains(&field)).map(|p| (p.var.clone(), p.col.clone()));
        let var_val = |g: &Self, var: &String| {
            let ty = g.scopes.iter().flatten().find(|v| &v.name == var).map(|v| v.ty).unwrap_or(Scalar::I32);
            Val { name: var.clone(), ty }
        };
        shape
            .iter()
            .enumerate()
            .map(|(d, &ext)| match (&own, d) {
                (Some((var, _)), 0) => var_val(self, var),
                (Some((_, Some(col))), 1) if ext == 4 => var_val(self, col),
                _ => self.index(ext),
            })
            .collect()
    }

    fn fref(&self, field: &str, idx: &[Val]) -> String {
        let is: Vec<String> = idx.iter().map(|v| format!("%{}", v.name)).collect();
        format!("@{field}[{}]", is.join(", "))
    }

    /// Fields that plain loads may read here.
    fn readable(&self) -> Vec<&'static str> {
        self.fields.iter().filter(|f| !f.atomic_only).map(|f| f.name).collect()
    }
    /// Fields that plain stores may write here.
    fn writable(&self) -> Vec<&'static str> {
        match &self.par {
            Some(p) => p.owned.clone(),
            None => self.fields.iter().filter(|f| !f.atomic_only).map(|f| f.name).collect(),
        }
    }

    fn stmt(&mut self) {
        let choice = self.rng.below(100);
        let fields_ok = !self.in_func;
        match choice {
            0..=7 => {
                let ty = *self.rng.pick(&ALL_TYPES);
                let c = edge_const(&mut self.rng, ty);
                self.konst(c);
            }
            8..=29 => self.binary(),
            30..=37 => self.unary(),
            38..=43 => {
                let ty = *self.rng.pick(&ALL_TYPES);
                let (a, b) = (self.value(ty), self.value(ty));
                let op = self.rng.pick(&["lt", "le", "gt", "ge", "eq", "ne"]);
                self.define(Scalar::I1, format!("cmp {op} %{}, %{}", a.name, b.name));
            }
            44..=51 => {
                let from = *self.rng.pick(&ALL_TYPES);
                let to = *self.rng.pick(&ALL_TYPES);
                let a = self.value(from);
                self.define(to, format!("cast %{} to {to}", a.name));
            }
            52..=56 => {
                let ty = *self.rng.pick(&ALL_TYPES);
                let c = self.value(Scalar::I1);
                let (a, b) = (self.value(ty), self.value(ty));
                self.define(ty, format!("select %{}, %{}, %{}", c.name, a.name, b.name));
            }
            57..=63 if fields_ok => {
                let f = *self.rng.pick(&self.readable());
                let idx = self.indices(f);
                let ty = self.field(f).elem;
                let r = self.fref(f, &idx);
                self.define(ty, format!("load {r}"));
            }
            64..=71 if fields_ok => {
                let ws = self.writable();
                if !ws.is_empty() {
                    let f = *self.rng.pick(&ws);
                    self.store(f);
                }
            }
            72..=76 if fields_ok => self.atomic(),
            77..=81 => self.slot_stmt(),
            82..=86 => self.call(),
            87..=91 if self.depth < 2 => self.if_stmt(),
            92..=95 if self.depth < 2 => self.inner_for(),
            96..=98 if self.depth < 2 => self.while_stmt(),
            _ => {
                if self.in_loop && self.rng.chance(50) {
                    let c = self.value(Scalar::I1);
                    let kw = if self.rng.chance(50) { "break" } else { "continue" };
                    self.line(format!("if %{} {{", c.name));
                    self.line(format!("  {kw}"));
                    self.line("}");
                } else {
                    self.binary();
                }
            }
        }
    }

    fn binary(&mut self) {
        let ty = *self.rng.pick(&ALL_TYPES);
        let ops: &[&str] = match ty {
            Scalar::I1 => &["and", "or", "xor"],
            t if t.is_int() => {
                &["add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr", "ushr"]
            }
            _ if self.cfg.transcendentals => &["add", "sub", "mul", "div", "rem", "min", "max", "pow", "atan2"],
            _ => &["add", "sub", "mul", "div", "rem", "min", "max"],
        };
        let op = *self.rng.pick(ops);
        let (a, b) = (self.value(ty), self.value(ty));
        self.define(ty, format!("{op} %{}, %{}", a.name, b.name));
    }

    fn unary(&mut self) {
        let ty = *self.rng.pick(&[
            Scalar::I1,
            Scalar::I32,
            Scalar::I64,
            Scalar::F32,
            Scalar::F64,
            Scalar::F32,
            Scalar::F64,
            Scalar::I8,
            Scalar::U16,
            Scalar::U64,
            Scalar::F16,
        ]);
        let ops: &[&str] = match ty {
            Scalar::I1 => &["not"],
            t if t.is_int() => &["neg", "not", "abs"],
            _ if self.cfg.transcendentals => {
                &["neg", "abs", "sqrt", "floor", "ceil", "round", "sin", "cos", "tan", "exp", "log"]
            }
            _ => &["neg", "abs", "sqrt", "floor", "ceil", "round"],
        };
        let op = *self.rng.pick(ops);
        let a = self.value(ty);
        self.define(ty, format!("{op} %{}", a.name));
    }

    /// A float value with NaN replaced by 0.0 (digests must not depend on
    /// NaN payloads).
    fn sanitized(&mut self, v: Val) -> Val {
        if !v.ty.is_float() {
            return v;
        }
        let isnan = self.define(Scalar::I1, format!("cmp ne %{}, %{}", v.name, v.name));
        let zero = self.konst(Const::int(v.ty, 0));
        self.define(v.ty, format!("select %{}, %{}, %{}", isnan.name, zero.name, v.name))
    }

    fn store(&mut self, f: &'static str) {
        let ty = self.field(f).elem;
        let v = self.value(ty);
        let v = self.sanitized(v);
        let idx = self.indices(f);
        let r = self.fref(f, &idx);
        self.line(format!("store {r}, %{}", v.name));
        self.budget = self.budget.saturating_sub(1);
    }

    fn atomic(&mut self) {
        // In parallel code only the atomic-only fields, results unused; in
        // serial code any integer field, results used.
        let fs: Vec<&'static str> = self
            .fields
            .iter()
            .filter(|f| f.elem.is_int() && f.elem != Scalar::I1 && (f.atomic_only || self.par.is_none()))
            .map(|f| f.name)
            .collect();
        let f = *self.rng.pick(&fs);
        let ty = self.field(f).elem;
        let op = self.rng.pick(&["add", "min", "max", "and", "or", "xor"]);
        let v = self.value(ty);
        let idx = if self.field(f).atomic_only {
            let shape = self.field(f).shape.clone();
            shape.iter().map(|&e| self.index(e)).collect()
        } else {
            self.indices(f)
        };
        let r = self.fref(f, &idx);
        let name = self.fresh("old");
        self.line(format!("%{name} = atomic {op} {r}, %{}", v.name));
        self.budget = self.budget.saturating_sub(1);
        if self.par.is_none() {
            if let Some(s) = self.scopes.last_mut() {
                s.push(Val { name, ty });
            }
        }
    }

    fn slot_stmt(&mut self) {
        let depth = self.scopes.len();
        let visible: Vec<(String, Scalar)> =
            self.slots.iter().filter(|s| s.2 >= self.slot_floor && s.2 <= depth).map(|s| (s.0.clone(), s.1)).collect();
        if visible.is_empty() || self.rng.chance(30) {
            let ty = *self.rng.pick(&ALL_TYPES);
            let name = self.fresh("p");
            self.line(format!("%{name} = alloca {ty}"));
            self.slots.push((name, ty, depth));
            return;
        }
        let (name, ty) = self.rng.pick(&visible).clone();
        if self.rng.chance(50) {
            let v = self.value(ty);
            self.line(format!("store %{name}, %{}", v.name));
        } else {
            self.define(ty, format!("load %{name}"));
        }
    }

    fn call(&mut self) {
        if self.funcs.is_empty() {
            return self.binary();
        }
        let k = self.rng.below(self.funcs.len());
        let (name, params, ret) = {
            let f = &self.funcs[k];
            (f.name.clone(), f.params.clone(), f.ret)
        };
        let args: Vec<String> = params.iter().map(|&t| format!("%{}", self.value(t).name)).collect();
        let call = format!("call @{name}({})", args.join(", "));
        match ret {
            Some(t) => {
                self.define(t, call);
            }
            None => {
                self.line(call);
                self.budget = self.budget.saturating_sub(1);
            }
        }
    }

    fn open_scope(&mut self) {
        self.scopes.push(Vec::new());
        self.indent += 1;
        self.depth += 1;
    }
    fn close_scope(&mut self) {
        let depth = self.scopes.len();
        self.slots.retain(|s| s.2 < depth);
        self.scopes.pop();
        self.indent -= 1;
        self.depth -= 1;
    }
    fn stmts(&mut self, n: usize) {
        for _ in 0..n {
            if self.budget == 0 {
                break;
            }
            self.stmt();
        }
    }

    fn if_stmt(&mut self) {
        let c = self.value(Scalar::I1);
        self.line(format!("if %{} {{", c.name));
        self.open_scope();
        let n = 1 + self.rng.below(3);
        self.stmts(n);
        self.close_scope();
        if self.rng.chance(50) {
            self.line("} else {");
            self.open_scope();
            let n = 1 + self.rng.below(3);
            self.stmts(n);
            self.close_scope();
        }
        self.line("}");
    }

    fn inner_for(&mut self) {
        let var = self.fresh("j");
        // A loop of serial code at a kernel's top level would become a
        // parallel task (its body is not written to be one): say `serial`.
        let serial = if self.par.is_none() && !self.in_func && self.depth == 0 { " serial" } else { "" };
        if self.rng.chance(50) {
            let hi = 1 + self.rng.below(4);
            let ty = *self.rng.pick(&INT_TYPES);
            let tyann = if ty == Scalar::I64 { " : i64" } else { "" };
            self.line(format!("for %{var}{tyann} in 0 .. {hi}{serial} {{"));
            self.open_scope();
            self.bind(var, ty);
        } else {
            // Bounds from values: lo in -2..2, hi in -2..5 (at most 6 trips).
            let ty = *self.rng.pick(&INT_TYPES);
            let lo = self.small(ty, 4, -2);
            let hi = self.small(ty, 7, -2);
            self.line(format!("for %{var} in %{} .. %{}{serial} {{", lo.name, hi.name));
            self.open_scope();
            self.bind(var, ty);
        }
        let saved = std::mem::replace(&mut self.in_loop, true);
        let n = 1 + self.rng.below(4);
        self.stmts(n);
        self.in_loop = saved;
        self.close_scope();
        self.line("}");
    }

    /// A value of type `ty` in `base .. base + n`.
    fn small(&mut self, ty: Scalar, n: u64, base: i64) -> Val {
        let i = self.index(n);
        let i = if i.ty == ty { i } else { self.define(ty, format!("cast %{} to {ty}", i.name)) };
        let b = self.konst(Const::int(ty, base));
        self.define(ty, format!("add %{}, %{}", i.name, b.name))
    }

    fn while_stmt(&mut self) {
        let counter = self.fresh("n");
        let limit = 1 + self.rng.below(4);
        self.line(format!("%{counter} = alloca i32"));
        self.line("while {");
        self.open_scope();
        // The counter goes first, so a `continue` below cannot loop forever.
        let c0 = self.define(Scalar::I32, format!("load %{counter}"));
        let one = self.konst(Const::i32(1));
        let c1 = self.define(Scalar::I32, format!("add %{}, %{}", c0.name, one.name));
        self.line(format!("store %{counter}, %{}", c1.name));
        let lim = self.konst(Const::i32(limit as i32));
        let done = self.define(Scalar::I1, format!("cmp gt %{}, %{}", c1.name, lim.name));
        self.line(format!("if %{} {{", done.name));
        self.line("  break");
        self.line("}");
        let saved = std::mem::replace(&mut self.in_loop, true);
        let n = 1 + self.rng.below(4);
        self.stmts(n);
        self.in_loop = saved;
        self.close_scope();
        self.line("}");
    }

    /// A top-level `for` that `offload` makes a parallel task.
    fn parallel_loop(&mut self) {
        let e = self.extent;
        let var = self.fresh("i");
        let mut owned: Vec<&'static str> =
            self.fields.iter().filter(|f| !f.atomic_only && !f.serial_only).map(|f| f.name).collect();
        owned.retain(|_| self.rng.chance(40));
        let nest = self.rng.chance(25);
        if nest {
            // A nest becomes a `struct_for` whose iterations are the (row,
            // column) pairs: a 1-D field's element at the row is shared by
            // the row's iterations, so only 2-D fields can be owned (the
            // race detector found this; tests/races.rs).
            owned.retain(|f| matches!(*f, "ma" | "mb"));
        }
        // Every loop writes something of its own: a 2-D field in a nest.
        let choices: &[&'static str] = if nest { &["ma", "mb"] } else { &["fa", "fb", "ia", "ib", "bz"] };
        let must = *self.rng.pick(choices);
        if !owned.contains(&must) {
            owned.insert(0, must);
        }
        let ty;
        if nest || self.rng.chance(50) {
            ty = if self.rng.chance(25) { Scalar::I64 } else { Scalar::I32 };
            let tyann = if ty == Scalar::I64 { " : i64" } else { "" };
            self.line(format!("for %{var}{tyann} in 0 .. {e} {{"));
        } else {
            // Bounds computed before the loop: offload carries them to the
            // task (through a temporary field when they are not parameters).
            ty = Scalar::I32;
            let p = self.value(Scalar::I32);
            let lim = self.konst(Const::i32(e as i32));
            let hi = self.define(Scalar::I32, format!("min %{}, %{}", p.name, lim.name));
            let lo = 1 + self.rng.below(2);
            self.line(format!("for %{var} in {lo} .. %{} {{", hi.name));
        }
        self.open_scope();
        self.bind(var.clone(), ty);
        let saved_floor = std::mem::replace(&mut self.slot_floor, self.scopes.len());
        self.par = Some(Par { var: var.clone(), owned, col: None });
        if nest {
            // A loop nest over a 2-D field's whole index space.
            let j = self.fresh("j");
            self.line(format!("for %{j} in 0 .. 4 {{"));
            self.open_scope();
            self.bind(j.clone(), Scalar::I32);
            if let Some(p) = self.par.as_mut() {
                p.col = Some(j);
            }
            let n = 2 + self.rng.below(6);
            self.stmts(n);
            for f in ["ma", "mb"] {
                if self.par.as_ref().is_some_and(|p| p.owned.first() == Some(&f))
                    || self.rng.chance(30) && self.par.as_ref().is_some_and(|p| p.owned.contains(&f))
                {
                    self.store(f);
                }
            }
            self.close_scope();
            self.line("}");
        } else {
            let n = 3 + self.rng.below(8);
            self.stmts(n);
            // Make sure the loop writes something it owns.
            if let Some(f) = self.par.as_ref().and_then(|p| p.owned.first().copied()) {
                self.store(f);
            }
        }
        self.par = None;
        self.slot_floor = saved_floor;
        self.close_scope();
        self.line("}");
    }

    fn serial_region(&mut self) {
        // Slots of an earlier region belong to another task after offload.
        self.slots.clear();
        self.slot_floor = self.scopes.len();
        let n = 2 + self.rng.below(6);
        self.stmts(n);
        if self.rng.chance(40) {
            let f = *self.rng.pick(&["sc", "fa", "ib", "bz"]);
            self.store(f);
        }
    }

    fn func(&mut self, k: usize) {
        let void = k == 0;
        let name = format!("h{k}");
        let nparams = 1 + self.rng.below(3);
        let params: Vec<Scalar> = (0..nparams).map(|_| *self.rng.pick(&ALL_TYPES)).collect();
        let ret = if void { None } else { Some(*self.rng.pick(&ALL_TYPES)) };
        let mut scope = Vec::new();
        let mut ps = Vec::new();
        for &t in &params {
            let p = self.fresh("a");
            ps.push(format!("%{p}: {t}"));
            scope.push(Val { name: p, ty: t });
        }
        let sig = match ret {
            Some(t) => format!("func @{name}({}) -> {t} {{", ps.join(", ")),
            None => format!("func @{name}({}) {{", ps.join(", ")),
        };
        self.line(sig);
        self.indent += 1;
        self.scopes = vec![scope];
        self.slots.clear();
        self.in_func = true;
        self.budget = 8;
        if void {
            // The void helper does order-independent integer atomics, so
            // parallel loops may call it.
            let a = self.value(Scalar::I32);
            let old = self.fresh("old");
            self.line(format!("%{old} = atomic add @cnt[], %{}", a.name));
            let b = self.value(Scalar::I64);
            let i = self.index(4);
            let old2 = self.fresh("old");
            self.line(format!("%{old2} = atomic xor @acc[%{}], %{}", i.name, b.name));
            let n = self.rng.below(4);
            self.stmts(n);
            self.line("ret");
        } else {
            let n = 2 + self.rng.below(5);
            self.stmts(n);
            let t = ret.unwrap_or(Scalar::I32);
            let v = self.value(t);
            self.line(format!("ret %{}", v.name));
        }
        self.in_func = false;
        self.indent -= 1;
        self.line("}");
        self.line("");
        self.funcs.push(Func { name, params, ret });
    }

    fn kernel(&mut self, k: usize) {
        let defaults = [
            (Scalar::I32, Const::i32(self.rng.below(self.extent as usize + 4) as i32)),
            (Scalar::F32, edge_const(&mut self.rng, Scalar::F32)),
            (Scalar::I64, edge_const(&mut self.rng, Scalar::I64)),
        ];
        let mut scope = Vec::new();
        let mut ps = Vec::new();
        for (ty, d) in defaults {
            let name = self.fresh("q");
            ps.push(format!("%{name}: {ty} = {}", fmt_const(d)));
            scope.push(Val { name, ty });
        }
        self.line(format!("kernel @k{k}({}) {{", ps.join(", ")));
        self.indent += 1;
        self.scopes = vec![scope];
        self.slots.clear();
        self.budget = 60;
        let regions = 2 + self.rng.below(4);
        for _ in 0..regions {
            if self.rng.chance(55) {
                self.parallel_loop();
            } else {
                self.serial_region();
            }
        }
        self.indent -= 1;
        self.line("}");
    }
}

/// Generates the module of `seed` as KIR text.
pub fn generate(seed: u64, cfg: &GenConfig) -> String {
    let mut rng = Rng::new(seed);
    let extent = *rng.pick(&[4u64, 5, 8, 13]);
    let f = |name, elem, shape: &[u64], atomic_only, serial_only| FieldDecl {
        name,
        elem,
        shape: shape.to_vec(),
        atomic_only,
        serial_only,
    };
    let fields = vec![
        f("fa", Scalar::F32, &[extent], false, false),
        f("fb", Scalar::F64, &[extent], false, false),
        f("ia", Scalar::I32, &[extent], false, false),
        f("ib", Scalar::I64, &[extent], false, false),
        f("bz", Scalar::I1, &[extent], false, false),
        f("ma", Scalar::I32, &[extent, 4], false, false),
        f("mb", Scalar::F32, &[extent, 4], false, false),
        f("sc", Scalar::F64, &[], false, true),
        f("cnt", Scalar::I32, &[], true, false),
        f("acc", Scalar::I64, &[4], true, false),
    ];
    let mut g = Gen {
        rng,
        cfg,
        out: String::new(),
        indent: 0,
        next_id: 0,
        fields,
        funcs: Vec::new(),
        scopes: Vec::new(),
        slots: Vec::new(),
        slot_floor: 0,
        par: None,
        in_loop: false,
        in_func: false,
        budget: 0,
        depth: 0,
        extent,
    };
    let _ = writeln!(g.out, "; generated by tests/common/kernelgen.rs, seed {seed}");
    for fd in &g.fields {
        let shape = if fd.shape.is_empty() {
            String::new()
        } else {
            format!("[{}]", fd.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "))
        };
        let _ = writeln!(g.out, "field @{} : {}{shape}", fd.name, fd.elem);
    }
    g.out.push('\n');
    let nfuncs = 1 + g.rng.below(3);
    for k in 0..nfuncs {
        g.func(k);
    }
    let nkernels = 1 + g.rng.below(2);
    for k in 0..nkernels {
        if k > 0 {
            g.line("");
        }
        g.kernel(k);
    }
    g.out
}
