//! Writes a large, realistic KIR module (and an LLVM IR module of about the
//! same size built from the same random program shapes) for the front-end
//! benchmark (`scripts/bench-frontend.sh`, `docs/performance.md`).
//!
//! `gen-large --kir OUT.kir [--ll OUT.ll] [--mb 50] [--seed N]`
//!
//! The programs are what a front end emits for numeric kernels: fields,
//! helper functions, kernels with default parameters and several top-level
//! loops whose bodies load, compute (float and index arithmetic, casts,
//! calls), branch, nest a loop now and then, accumulate atomically and
//! store. The same seed always gives the same bytes.

use std::fmt::Write as _;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo)
    }
}

const FIELDS: usize = 32;
const LEN: usize = 4096;

/// What the program generator asks a text format to write.
trait Emit {
    fn header(&mut self);
    fn func_begin(&mut self, name: &str);
    fn func_end(&mut self, ret: &str);
    fn kernel_begin(&mut self, name: &str);
    fn kernel_end(&mut self);
    fn fconst(&mut self, r: &str, v: f32);
    fn load(&mut self, r: &str, field: usize, idx: &str);
    fn store(&mut self, field: usize, idx: &str, v: &str);
    fn fbin(&mut self, r: &str, op: usize, a: &str, b: &str);
    fn fun(&mut self, r: &str, op: usize, a: &str);
    fn ibin(&mut self, r: &str, op: usize, a: &str, b: &str);
    fn itof(&mut self, r: &str, a: &str);
    fn call(&mut self, r: &str, f: &str, a: &str, b: &str);
    fn atomic_add(&mut self, r: &str, v: &str);
    fn if_begin(&mut self, c: &str, a: &str, b: &str);
    fn if_else(&mut self);
    fn if_end(&mut self);
    fn loop_begin(&mut self, var: &str, hi: &str);
    fn loop_end(&mut self, var: &str);
    fn len(&self) -> usize;
    fn finish(self: Box<Self>) -> String;
}

const FBIN: [&str; 6] = ["add", "sub", "mul", "div", "min", "max"];
const FUN: [&str; 5] = ["neg", "abs", "sqrt", "sin", "exp"];
const IBIN: [&str; 4] = ["add", "mul", "and", "xor"];

struct Kir {
    out: String,
    indent: usize,
}

impl Kir {
    fn line(&mut self, s: std::fmt::Arguments<'_>) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        let _ = self.out.write_fmt(s);
        self.out.push('\n');
    }
}

impl Emit for Kir {
    fn header(&mut self) {
        for f in 0..FIELDS {
            self.line(format_args!("field @f{f} : f32[{LEN}]"));
        }
        self.line(format_args!("field @sum : f32"));
    }
    fn func_begin(&mut self, name: &str) {
        self.out.push('\n');
        self.line(format_args!("func @{name}(%x: f32, %y: f32) -> f32 {{"));
        self.indent += 1;
    }
    fn func_end(&mut self, ret: &str) {
        self.line(format_args!("ret %{ret}"));
        self.indent -= 1;
        self.line(format_args!("}}"));
    }
    fn kernel_begin(&mut self, name: &str) {
        self.out.push('\n');
        self.line(format_args!("kernel @{name}(%a: f32 = 1.5, %b: f32 = 0.25, %n: i32 = {LEN}) {{"));
        self.indent += 1;
    }
    fn kernel_end(&mut self) {
        self.indent -= 1;
        self.line(format_args!("}}"));
    }
    fn fconst(&mut self, r: &str, v: f32) {
        self.line(format_args!("%{r} = const {v:?} : f32"));
    }
    fn load(&mut self, r: &str, field: usize, idx: &str) {
        self.line(format_args!("%{r} = load @f{field}[%{idx}]"));
    }
    fn store(&mut self, field: usize, idx: &str, v: &str) {
        self.line(format_args!("store @f{field}[%{idx}], %{v}"));
    }
    fn fbin(&mut self, r: &str, op: usize, a: &str, b: &str) {
        self.line(format_args!("%{r} = {} %{a}, %{b}", FBIN[op]));
    }
    fn fun(&mut self, r: &str, op: usize, a: &str) {
        self.line(format_args!("%{r} = {} %{a}", FUN[op]));
    }
    fn ibin(&mut self, r: &str, op: usize, a: &str, b: &str) {
        self.line(format_args!("%{r} = {} %{a}, %{b}", IBIN[op]));
    }
    fn itof(&mut self, r: &str, a: &str) {
        self.line(format_args!("%{r} = cast %{a} to f32"));
    }
    fn call(&mut self, r: &str, f: &str, a: &str, b: &str) {
        self.line(format_args!("%{r} = call @{f}(%{a}, %{b})"));
    }
    fn atomic_add(&mut self, r: &str, v: &str) {
        self.line(format_args!("%{r} = atomic add @sum[], %{v}"));
    }
    fn if_begin(&mut self, c: &str, a: &str, b: &str) {
        self.line(format_args!("%{c} = cmp lt %{a}, %{b}"));
        self.line(format_args!("if %{c} {{"));
        self.indent += 1;
    }
    fn if_else(&mut self) {
        self.indent -= 1;
        self.line(format_args!("}} else {{"));
        self.indent += 1;
    }
    fn if_end(&mut self) {
        self.indent -= 1;
        self.line(format_args!("}}"));
    }
    fn loop_begin(&mut self, var: &str, hi: &str) {
        self.line(format_args!("for %{var} in 0 .. {hi} {{"));
        self.indent += 1;
    }
    fn loop_end(&mut self, _var: &str) {
        self.indent -= 1;
        self.line(format_args!("}}"));
    }
    fn len(&self) -> usize {
        self.out.len()
    }
    fn finish(self: Box<Self>) -> String {
        self.out
    }
}

/// LLVM IR as a front end emits it after mem2reg: globals for fields,
/// loops as header/body/exit blocks with a phi, branches for `if`.
struct Llvm {
    out: String,
    /// Bodies being written (a loop's header needs its latch block, known
    /// only once the body is done).
    bufs: Vec<String>,
    /// The block being appended to.
    cur: String,
    /// Per open loop: the block before it.
    preds: Vec<String>,
    /// Per open `if`: (then, else, join) labels.
    ifs: Vec<(String, String, String)>,
    next: usize,
}

impl Llvm {
    fn buf(&mut self) -> &mut String {
        self.bufs.last_mut().unwrap_or(&mut self.out)
    }
    fn ins(&mut self, s: std::fmt::Arguments<'_>) {
        let b = self.buf();
        b.push_str("  ");
        let _ = b.write_fmt(s);
        b.push('\n');
    }
    fn label(&mut self, l: &str) {
        let b = self.buf();
        let _ = writeln!(b, "{l}:");
        self.cur = l.to_string();
    }
    fn fresh(&mut self, p: &str) -> String {
        self.next += 1;
        format!("{p}{}", self.next)
    }
}

const LL_FBIN: [&str; 6] = ["fadd", "fsub", "fmul", "fdiv", "llvm.minnum.f32", "llvm.maxnum.f32"];
const LL_FUN: [&str; 5] = ["fneg", "llvm.fabs.f32", "llvm.sqrt.f32", "llvm.sin.f32", "llvm.exp.f32"];
const LL_IBIN: [&str; 4] = ["add", "mul", "and", "xor"];

impl Emit for Llvm {
    fn header(&mut self) {
        for f in 0..FIELDS {
            let _ = writeln!(self.out, "@f{f} = global [{LEN} x float] zeroinitializer, align 16");
        }
        let _ = writeln!(self.out, "@sum = global float 0.000000e+00, align 4\n");
        for f in ["minnum", "maxnum"] {
            let _ = writeln!(self.out, "declare float @llvm.{f}.f32(float, float)");
        }
        for f in ["fabs", "sqrt", "sin", "exp"] {
            let _ = writeln!(self.out, "declare float @llvm.{f}.f32(float)");
        }
    }
    fn func_begin(&mut self, name: &str) {
        let _ = writeln!(self.out, "\ndefine float @{name}(float %x, float %y) {{\nentry:");
    }
    fn func_end(&mut self, ret: &str) {
        self.ins(format_args!("ret float %{ret}"));
        self.out.push_str("}\n");
    }
    fn kernel_begin(&mut self, name: &str) {
        let _ = writeln!(self.out, "\ndefine void @{name}(float %a, float %b, i32 %n) {{\nentry:");
        self.cur = "entry".into();
    }
    fn kernel_end(&mut self) {
        self.ins(format_args!("ret void"));
        self.out.push_str("}\n");
    }
    fn fconst(&mut self, r: &str, v: f32) {
        self.ins(format_args!("%{r} = fadd float 0.000000e+00, {:?}", v as f64));
    }
    fn load(&mut self, r: &str, field: usize, idx: &str) {
        self.ins(format_args!("%{r}.p = getelementptr inbounds [{LEN} x float], ptr @f{field}, i64 0, i64 %{idx}.x"));
        self.ins(format_args!("%{r} = load float, ptr %{r}.p, align 4"));
    }
    fn store(&mut self, field: usize, idx: &str, v: &str) {
        let p = self.fresh("p");
        self.ins(format_args!("%{p} = getelementptr inbounds [{LEN} x float], ptr @f{field}, i64 0, i64 %{idx}.x"));
        self.ins(format_args!("store float %{v}, ptr %{p}, align 4"));
    }
    fn fbin(&mut self, r: &str, op: usize, a: &str, b: &str) {
        if op < 4 {
            self.ins(format_args!("%{r} = {} float %{a}, %{b}", LL_FBIN[op]));
        } else {
            self.ins(format_args!("%{r} = call float @{}(float %{a}, float %{b})", LL_FBIN[op]));
        }
    }
    fn fun(&mut self, r: &str, op: usize, a: &str) {
        if op == 0 {
            self.ins(format_args!("%{r} = fneg float %{a}"));
        } else {
            self.ins(format_args!("%{r} = call float @{}(float %{a})", LL_FUN[op]));
        }
    }
    fn ibin(&mut self, r: &str, op: usize, a: &str, b: &str) {
        self.ins(format_args!("%{r} = {} i32 %{a}, %{b}", LL_IBIN[op]));
    }
    fn itof(&mut self, r: &str, a: &str) {
        self.ins(format_args!("%{r} = sitofp i32 %{a} to float"));
    }
    fn call(&mut self, r: &str, f: &str, a: &str, b: &str) {
        self.ins(format_args!("%{r} = call float @{f}(float %{a}, float %{b})"));
    }
    fn atomic_add(&mut self, r: &str, v: &str) {
        self.ins(format_args!("%{r} = atomicrmw fadd ptr @sum, float %{v} monotonic, align 4"));
    }
    fn if_begin(&mut self, c: &str, a: &str, b: &str) {
        let (t, e, j) = (self.fresh("then"), self.fresh("else"), self.fresh("join"));
        self.ins(format_args!("%{c} = fcmp olt float %{a}, %{b}"));
        self.ins(format_args!("br i1 %{c}, label %{t}, label %{e}"));
        self.label(&t);
        self.ifs.push((t, e, j));
    }
    fn if_else(&mut self) {
        let Some((_, e, j)) = self.ifs.last().cloned() else { return };
        self.ins(format_args!("br label %{j}"));
        self.label(&e);
    }
    fn if_end(&mut self) {
        let Some((_, _, j)) = self.ifs.pop() else { return };
        self.ins(format_args!("br label %{j}"));
        self.label(&j);
    }
    fn loop_begin(&mut self, var: &str, hi: &str) {
        let hi = if let Some(p) = hi.strip_prefix('%') { format!("%{p}") } else { hi.to_string() };
        self.ins(format_args!("br label %{var}.h"));
        self.preds.push(std::mem::take(&mut self.cur));
        self.bufs.push(String::new());
        // The header is written at loop_end; the bound goes in front of the body.
        self.buf().push_str(&hi);
        self.buf().push('\n');
        self.label(&format!("{var}.b"));
        self.ins(format_args!("%{var}.x = sext i32 %{var} to i64"));
    }
    fn loop_end(&mut self, var: &str) {
        self.ins(format_args!("%{var}.n = add nsw i32 %{var}, 1"));
        self.ins(format_args!("br label %{var}.h"));
        let latch = std::mem::take(&mut self.cur);
        let body = self.bufs.pop().unwrap_or_default();
        let (hi, body) = body.split_once('\n').unwrap_or(("0", ""));
        let pred = self.preds.pop().unwrap_or_default();
        let b = self.buf();
        let _ = writeln!(b, "{var}.h:");
        let _ = writeln!(b, "  %{var} = phi i32 [ 0, %{pred} ], [ %{var}.n, %{latch} ]");
        let _ = writeln!(b, "  %{var}.c = icmp slt i32 %{var}, {hi}");
        let _ = writeln!(b, "  br i1 %{var}.c, label %{var}.b, label %{var}.e");
        b.push_str(body);
        self.label(&format!("{var}.e"));
    }
    fn len(&self) -> usize {
        self.out.len()
    }
    fn finish(self: Box<Self>) -> String {
        self.out
    }
}

/// Makes the random program shapes and drives an emitter.
struct Gen {
    rng: Rng,
    next: usize,
    /// Float and integer values in scope, one frame per open block.
    floats: Vec<Vec<String>>,
    ints: Vec<Vec<String>>,
    helpers: Vec<String>,
}

impl Gen {
    fn fresh(&mut self, p: &str) -> String {
        self.next += 1;
        format!("{p}{}", self.next)
    }
    fn pick(&mut self, ints: bool) -> String {
        let pool: Vec<&String> =
            if ints { self.ints.iter().flatten().collect() } else { self.floats.iter().flatten().collect() };
        pool[self.rng.below(pool.len())].clone()
    }
    /// The most recent float (what a store or a return writes).
    fn last_float(&self) -> String {
        self.floats.iter().flatten().last().cloned().unwrap_or_default()
    }
    fn push(&mut self) {
        self.floats.push(Vec::new());
        self.ints.push(Vec::new());
    }
    fn pop(&mut self) {
        self.floats.pop();
        self.ints.pop();
    }
    fn def_float(&mut self) -> String {
        let r = self.fresh("v");
        if let Some(f) = self.floats.last_mut() {
            f.push(r.clone());
        }
        r
    }

    fn helper(&mut self, e: &mut dyn Emit) {
        let name = format!("h{}", self.helpers.len());
        e.func_begin(&name);
        self.floats = vec![vec!["x".into(), "y".into()]];
        self.ints = vec![vec![]];
        for _ in 0..self.rng.range(3, 8) {
            let (a, b) = (self.pick(false), self.pick(false));
            let op = self.rng.below(FBIN.len());
            let r = self.def_float();
            e.fbin(&r, op, &a, &b);
        }
        let r = self.last_float();
        e.func_end(&r);
        self.helpers.push(name);
    }

    fn kernel(&mut self, e: &mut dyn Emit, k: usize) {
        e.kernel_begin(&format!("k{k}"));
        self.floats = vec![vec!["a".into(), "b".into()]];
        self.ints = vec![vec!["n".into()]];
        for _ in 0..2 {
            let v = (self.rng.below(64) as f32) * 0.125;
            let r = self.def_float();
            e.fconst(&r, v);
        }
        for _ in 0..self.rng.range(2, 6) {
            self.for_loop(e, 0, "%n");
        }
        e.kernel_end();
    }

    fn for_loop(&mut self, e: &mut dyn Emit, depth: usize, hi: &str) {
        let i = self.fresh("i");
        e.loop_begin(&i, hi);
        self.push();
        if let Some(f) = self.ints.last_mut() {
            f.push(i.clone());
        }
        for _ in 0..self.rng.range(6, 20) {
            self.stmt(e, depth, &i);
        }
        let v = self.last_float();
        let f = self.rng.below(FIELDS);
        e.store(f, &i, &v);
        self.pop();
        e.loop_end(&i);
    }

    fn stmt(&mut self, e: &mut dyn Emit, depth: usize, idx: &str) {
        match self.rng.below(100) {
            0..=24 => {
                let f = self.rng.below(FIELDS);
                let r = self.def_float();
                e.load(&r, f, idx);
            }
            25..=54 => {
                let (a, b) = (self.pick(false), self.pick(false));
                let op = self.rng.below(FBIN.len());
                let r = self.def_float();
                e.fbin(&r, op, &a, &b);
            }
            55..=64 => {
                let a = self.pick(false);
                let op = self.rng.below(FUN.len());
                let r = self.def_float();
                e.fun(&r, op, &a);
            }
            65..=71 => {
                let v = (self.rng.below(256) as f32) * 0.0625 - 4.0;
                let r = self.def_float();
                e.fconst(&r, v);
            }
            72..=77 => {
                let (a, b) = (self.pick(true), self.pick(true));
                let op = self.rng.below(IBIN.len());
                let r = self.fresh("v");
                e.ibin(&r, op, &a, &b);
                if let Some(f) = self.ints.last_mut() {
                    f.push(r);
                }
            }
            78..=82 => {
                let a = self.pick(true);
                let r = self.def_float();
                e.itof(&r, &a);
            }
            83..=89 if depth < 2 => {
                let (a, b) = (self.pick(false), self.pick(false));
                let c = self.fresh("c");
                e.if_begin(&c, &a, &b);
                for arm in 0..2 {
                    if arm == 1 {
                        e.if_else();
                    }
                    self.push();
                    for _ in 0..self.rng.range(1, 4) {
                        self.stmt(e, depth + 1, idx);
                    }
                    let v = self.last_float();
                    let f = self.rng.below(FIELDS);
                    e.store(f, idx, &v);
                    self.pop();
                }
                e.if_end();
            }
            90..=94 if !self.helpers.is_empty() => {
                let h = self.helpers[self.rng.below(self.helpers.len())].clone();
                let (a, b) = (self.pick(false), self.pick(false));
                let r = self.def_float();
                e.call(&r, &h, &a, &b);
            }
            95..=96 => {
                let a = self.pick(false);
                let r = self.fresh("old");
                e.atomic_add(&r, &a);
            }
            97..=99 if depth == 0 => self.for_loop(e, depth + 1, "8"),
            _ => {
                let (a, b) = (self.pick(false), self.pick(false));
                let r = self.def_float();
                e.fbin(&r, 2, &a, &b);
            }
        }
    }
}

fn generate(mut e: Box<dyn Emit>, bytes: usize, seed: u64) -> String {
    let mut g = Gen { rng: Rng(seed), next: 0, floats: vec![], ints: vec![], helpers: vec![] };
    e.header();
    let mut k = 0;
    while e.len() < bytes {
        if k % 8 == 0 {
            g.helper(e.as_mut());
        }
        g.kernel(e.as_mut(), k);
        k += 1;
    }
    e.finish()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut kir = None;
    let mut ll = None;
    let mut mb = 50.0f64;
    let mut seed = 0x6b69_6c6e;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().unwrap_or_default();
        match a.as_str() {
            "--kir" => kir = Some(val()),
            "--ll" => ll = Some(val()),
            "--mb" => mb = val().parse().unwrap_or(mb),
            "--seed" => seed = val().parse().unwrap_or(seed),
            _ => {
                eprintln!("usage: gen-large --kir OUT.kir [--ll OUT.ll] [--mb 50] [--seed N]");
                std::process::exit(2);
            }
        }
    }
    let Some(kir) = kir else {
        eprintln!("usage: gen-large --kir OUT.kir [--ll OUT.ll] [--mb 50] [--seed N]");
        std::process::exit(2);
    };
    let bytes = (mb * 1e6) as usize;
    let outputs: Vec<(String, Box<dyn Emit>)> =
        std::iter::once((kir, Box::new(Kir { out: String::new(), indent: 0 }) as Box<dyn Emit>))
            .chain(ll.map(|p| {
                (
                    p,
                    Box::new(Llvm {
                        out: String::new(),
                        bufs: vec![],
                        cur: String::new(),
                        preds: vec![],
                        ifs: vec![],
                        next: 0,
                    }) as Box<dyn Emit>,
                )
            }))
            .collect();
    for (path, e) in outputs {
        let text = generate(e, bytes, seed);
        if let Err(err) = std::fs::write(&path, &text) {
            eprintln!("gen-large: {path}: {err}");
            std::process::exit(1);
        }
        eprintln!("gen-large: wrote {path} ({:.1} MB)", text.len() as f64 / 1e6);
    }
}
