//! The operators of an imported statement: unary and binary arithmetic
//! (with the expansions KIR needs: `floordiv`, `sgn`, `rsqrt`, an ordered
//! float `cmp_ne`) and atomics (on a field, or on a local by load and
//! store).
//!
//! Owns: what each Quadrants operator becomes in KIR, and the refusal of
//! one without a KIR form.
//!
//! Must never: emit a statement other than its operator's, or panic on
//! any input.

use super::*;

impl Module<'_> {
    /// A unary operator, component-wise on a vector.
    pub(super) fn unary(&mut self, b: &mut Body, s: &Stmt, op: &str, a: u32, ty: Option<Scalar>) -> Result<(), Error> {
        self.each(b, s, [a], |_, b, [x], n| unary_of(b, s, op, &x, ty, n))
    }

    /// A binary operator, component-wise on vectors.
    pub(super) fn binary(
        &mut self,
        b: &mut Body,
        s: &Stmt,
        op: &str,
        a: u32,
        c: u32,
        ty: Option<Scalar>,
    ) -> Result<(), Error> {
        self.each(b, s, [a, c], |m, b, [x, y], n| m.binary_of(b, s, op, (&x, &y), ty, n))
    }
}

/// `n = op x`, of the type `ty` the statement's hint gives (or the
/// operand's).
fn unary_of(b: &mut Body, s: &Stmt, op: &str, x: &Sv, ty: Option<Scalar>, n: &str) -> Result<Sv, Error> {
    {
        let (v, vt) = (x.name.clone(), x.ty);
        let rt = ty.unwrap_or(vt);
        let one = |b: &mut Body| {
            let c = b.fresh(s.id);
            b.line(format!("{c} = const 1.0 : {vt}"));
            c
        };
        // What the KIR written computes: the operand's type for an
        // operator, the hint's for what ends in a cast.
        let mut actual = rt;
        match op {
            "neg" | "abs" if vt != Scalar::I1 => {
                b.line(format!("{n} = {op} {v}"));
                actual = vt;
            }
            "floor" | "ceil" | "round" if vt.is_int() => return Ok(x.clone()),
            "sqrt" | "sin" | "cos" | "tan" | "asin" | "acos" | "tanh" | "exp" | "log" | "floor" | "ceil" | "round"
                if vt.is_float() =>
            {
                b.line(format!("{n} = {op} {v}"));
                actual = vt;
            }
            "bit_not" if vt.is_int() => {
                b.line(format!("{n} = not {v}"));
                actual = vt;
            }
            "logic_not" => {
                let z = b.fresh(s.id);
                let zero = match vt {
                    Scalar::I1 => "false",
                    t if t.is_float() => "0.0",
                    _ => "0",
                };
                b.line(format!("{z} = const {zero} : {vt}"));
                if rt == Scalar::I1 {
                    b.line(format!("{n} = cmp eq {v}, {z}"));
                } else {
                    let c = b.fresh(s.id);
                    b.line(format!("{c} = cmp eq {v}, {z}"));
                    b.line(format!("{n} = cast {c} to {rt}"));
                }
            }
            "rsqrt" if vt.is_float() => {
                let r = b.fresh(s.id);
                b.line(format!("{r} = sqrt {v}"));
                let o = one(b);
                b.line(format!("{n} = div {o}, {r}"));
                actual = vt;
            }
            "inv" | "rcp" if vt.is_float() => {
                let o = one(b);
                b.line(format!("{n} = div {o}, {v}"));
                actual = vt;
            }
            "sgn" if vt != Scalar::I1 => {
                let z = b.fresh(s.id);
                let (p, m, pf, mf) = (b.fresh(s.id), b.fresh(s.id), b.fresh(s.id), b.fresh(s.id));
                b.line(format!("{z} = const {} : {vt}", if vt.is_float() { "0.0" } else { "0" }));
                b.line(format!("{p} = cmp gt {v}, {z}"));
                b.line(format!("{m} = cmp lt {v}, {z}"));
                b.line(format!("{pf} = cast {p} to {rt}"));
                b.line(format!("{mf} = cast {m} to {rt}"));
                b.line(format!("{n} = sub {pf}, {mf}"));
            }
            _ => return Err(refused_stmt(format!("{op} of {vt}"), s).with_why("KIR has no such operator")),
        }
        Ok(Sv { name: n.to_string(), ty: actual, konst: None })
    }
}

impl Module<'_> {
    /// `n = x op y`, of the type `ty` the statement's hint gives (or the
    /// operands').
    fn binary_of(
        &mut self,
        b: &mut Body,
        s: &Stmt,
        op: &str,
        (xv, yv): (&Sv, &Sv),
        ty: Option<Scalar>,
        n: &str,
    ) -> Result<Sv, Error> {
        let (x, xt) = (xv.name.clone(), xv.ty);
        let (y, yt) = (yv.name.clone(), yv.ty);
        if xt != yt {
            return Err(located(format!("'{op}' of {xt} and {yt}"), s));
        }
        let t = xt;
        let hint_ty = ty.unwrap_or(t);
        // The type of what is written: the operands' for arithmetic, i1 for
        // a comparison, the hint's where a cast ends it.
        let mut rt = hint_ty;
        let cmp = |p: &str| format!("cmp {p}");
        let kir: Option<String> = match op {
            "add" | "sub" | "mul" | "min" | "max" if t != Scalar::I1 => Some(op.to_string()),
            "div" | "truediv" if t != Scalar::I1 => Some("div".into()),
            "mod" if t != Scalar::I1 => Some("rem".into()),
            "pow" | "atan2" if t.is_float() => Some(op.to_string()),
            "bit_and" if t.is_int() => Some("and".into()),
            "bit_or" if t.is_int() => Some("or".into()),
            "bit_xor" if t.is_int() => Some("xor".into()),
            "bit_shl" if t.is_int() && t != Scalar::I1 => Some("shl".into()),
            // Quadrants shifts an unsigned number right with zeros.
            "bit_sar" if t.is_unsigned() => Some("ushr".into()),
            "bit_sar" if t.is_int() && t != Scalar::I1 => Some("shr".into()),
            "bit_shr" if t.is_int() && t != Scalar::I1 => Some("ushr".into()),
            "cmp_lt" => Some(cmp("lt")),
            "cmp_le" => Some(cmp("le")),
            "cmp_gt" => Some(cmp("gt")),
            "cmp_ge" => Some(cmp("ge")),
            "cmp_eq" => Some(cmp("eq")),
            "cmp_ne" => Some(cmp("ne")),
            _ => None,
        };
        if op == "cmp_ne" && t.is_float() {
            // Quadrants compares floats for inequality ordered (LLVM's `one`:
            // false when either is NaN); KIR's `ne` is unordered. Ordered
            // inequality is `lt or gt`.
            let [lt, gt, r] = [(); 3].map(|_| b.fresh(s.id));
            b.line(format!("{lt} = cmp lt {x}, {y}"));
            b.line(format!("{gt} = cmp gt {x}, {y}"));
            if rt == Scalar::I1 {
                b.line(format!("{n} = or {lt}, {gt}"));
            } else {
                b.line(format!("{r} = or {lt}, {gt}"));
                b.line(format!("{n} = cast {r} to {rt}"));
            }
        } else if let Some(k) = kir {
            if k.starts_with("cmp") && rt != Scalar::I1 {
                let c = b.fresh(s.id);
                b.line(format!("{c} = {k} {x}, {y}"));
                b.line(format!("{n} = cast {c} to {rt}"));
            } else {
                rt = if k.starts_with("cmp") { Scalar::I1 } else { t };
                b.line(format!("{n} = {k} {x}, {y}"));
            }
        } else {
            match op {
                "floordiv" if t.is_float() => {
                    let d = b.fresh(s.id);
                    b.line(format!("{d} = div {x}, {y}"));
                    b.line(format!("{n} = floor {d}"));
                    rt = t;
                }
                "floordiv" if t != Scalar::I1 => {
                    // Python's floor division: C's quotient, one less when the
                    // remainder is not zero and its sign differs from the divisor's.
                    let [q, r, z, rnz, rneg, yneg, diff, adj, one, qm] = [(); 10].map(|_| b.fresh(s.id));
                    b.line(format!("{q} = div {x}, {y}"));
                    b.line(format!("{r} = rem {x}, {y}"));
                    b.line(format!("{z} = const 0 : {t}"));
                    b.line(format!("{rnz} = cmp ne {r}, {z}"));
                    b.line(format!("{rneg} = cmp lt {r}, {z}"));
                    b.line(format!("{yneg} = cmp lt {y}, {z}"));
                    b.line(format!("{diff} = xor {rneg}, {yneg}"));
                    b.line(format!("{adj} = and {rnz}, {diff}"));
                    b.line(format!("{one} = const 1 : {t}"));
                    b.line(format!("{qm} = sub {q}, {one}"));
                    b.line(format!("{n} = select {adj}, {qm}, {q}"));
                    rt = t;
                }
                "pow" if t == Scalar::I32 || t == Scalar::I64 => {
                    int_pow(b, s.id, n, (&x, &y), t);
                    rt = t;
                }
                "logical_and" | "logical_or" => {
                    let cx = self.cond_of(b, xv, s);
                    let cy = self.cond_of(b, yv, s);
                    let k = if op == "logical_and" { "and" } else { "or" };
                    if rt == Scalar::I1 {
                        b.line(format!("{n} = {k} {cx}, {cy}"));
                    } else {
                        let r = b.fresh(s.id);
                        b.line(format!("{r} = {k} {cx}, {cy}"));
                        b.line(format!("{n} = cast {r} to {rt}"));
                    }
                }
                _ => return Err(refused_stmt(format!("{op} of {t}"), s).with_why("KIR has no such operator")),
            }
        }
        Ok(Sv { name: n.to_string(), ty: rt, konst: None })
    }

    /// `atomic OP($dest, $val)`: on a scalar pointer, or component-wise on
    /// a whole vector's (its old values a vector).
    pub(super) fn atomic(&mut self, b: &mut Body, s: &Stmt, op: &str, dest: u32, val: u32) -> Result<(), Error> {
        let Some(p) = b.vals.get(&dest).cloned() else {
            return Err(located(format!("${dest} is used before it is defined"), s));
        };
        let whole = matches!(p, V::Tensor(_));
        let ptrs = tensor::components(b, s, p);
        let vals: Vec<Sv> = match b.vals.get(&val).cloned() {
            Some(V::Vec(c)) if whole && c.len() == ptrs.len() => c,
            Some(V::Val { name, ty, konst }) if !whole => vec![Sv { name, ty, konst }],
            _ => return Err(located(format!("atomic {op} of ${val} into ${dest} of another shape"), s)),
        };
        let mut olds = Vec::with_capacity(vals.len());
        for (k, (p, v)) in ptrs.iter().zip(&vals).enumerate() {
            let n = if whole { tensor::comp_name(s.id, k) } else { format!("%{}", s.id) };
            olds.push(atomic_of(b, s, op, p, v, n)?);
        }
        let v = if whole { V::Vec(olds) } else { olds.remove(0).into_v() };
        b.vals.insert(s.id, v);
        Ok(())
    }
}

/// One scalar atomic, its old value written as `n`.
fn atomic_of(b: &mut Body, s: &Stmt, op: &str, p: &V, x: &Sv, n: String) -> Result<Sv, Error> {
    let v = &x.name;
    let elem = match p {
        V::Ptr { elem, .. } | V::Slot { elem, .. } | V::DynSlot { elem, .. } => *elem,
        _ => return Err(located("an atomic on what is not a pointer".to_string(), s)),
    };
    if let V::Ptr { field, idx, .. } = p {
        if elem != x.ty {
            return Err(located(format!("atomic {op} of {} into a field of {elem}", x.ty), s));
        }
        let idx = idx.join(", ");
        let fits = match op {
            "bit_and" | "bit_or" | "bit_xor" => matches!(elem, Scalar::I32 | Scalar::I64),
            _ => elem != Scalar::I1,
        };
        if !fits {
            return Err(refused_stmt(format!("atomic {op} on {elem}"), s).with_why("KIR has no such atomic"));
        }
        let kop = match op {
            "add" | "min" | "max" => op,
            "bit_and" => "and",
            "bit_or" => "or",
            "bit_xor" => "xor",
            "sub" => {
                let m = b.fresh(s.id);
                b.line(format!("{m} = neg {v}"));
                b.line(format!("{n} = atomic add {field}[{idx}], {m}"));
                return Ok(Sv { name: n, ty: elem, konst: None });
            }
            _ => {
                return Err(refused_stmt(format!("atomic {op}"), s)
                    .with_why("KIR's atomics are add, min, max, and, or and xor"))
            }
        };
        b.line(format!("{n} = atomic {kop} {field}[{idx}], {v}"));
        return Ok(Sv { name: n, ty: elem, konst: None });
    }
    // A local is private to its iteration: the atomic is a load, the
    // operation and a store; it yields the old value.
    let kop = match op {
        "add" | "sub" | "mul" | "min" | "max" => op,
        "bit_and" => "and",
        "bit_or" => "or",
        "bit_xor" => "xor",
        _ => return Err(refused_stmt(format!("atomic {op}"), s).with_why("KIR has no such operator")),
    };
    let fits = match kop {
        "and" | "or" | "xor" => elem.is_int(),
        _ => elem != Scalar::I1,
    };
    if !fits || elem != x.ty {
        return Err(located(format!("atomic {op} of {} on a local of {elem}", x.ty), s));
    }
    let old = tensor::load_at(b, s, p, n)?;
    let new = Sv { name: b.fresh(s.id), ty: elem, konst: None };
    b.line(format!("{} = {kop} {}, {v}", new.name, old.name));
    tensor::store_scalar(b, s, p, &new)?;
    Ok(old)
}

/// `n = x ** y` on integers as Quadrants computes it: `x` to the power of
/// `|y|` (a negative exponent counts as its magnitude; `MIN`'s as 2^(w-1)),
/// wrapping, by squaring over the exponent's `w` bits: a loop of `w`
/// iterations over three slots, so the text stays small.
fn int_pow(b: &mut Body, id: u32, n: &str, (x, y): (&str, &str), t: Scalar) {
    let [ans, base, exp, one, zero, mag, i] = [(); 7].map(|_| b.fresh(id));
    let [ev, bit, odd, av, bv, prod, next, sq, shifted] = [(); 9].map(|_| b.fresh(id));
    for slot in [&ans, &base, &exp] {
        b.line(format!("{slot} = alloca {t}"));
    }
    b.line(format!("{one} = const 1 : {t}"));
    b.line(format!("{zero} = const 0 : {t}"));
    b.line(format!("store {ans}, {one}"));
    b.line(format!("store {base}, {x}"));
    b.line(format!("{mag} = abs {y}"));
    b.line(format!("store {exp}, {mag}"));
    b.line(format!("for {i} in 0 .. {} {{", t.bits()));
    b.depth += 1;
    b.line(format!("{ev} = load {exp}"));
    b.line(format!("{bit} = and {ev}, {one}"));
    b.line(format!("{odd} = cmp ne {bit}, {zero}"));
    b.line(format!("{av} = load {ans}"));
    b.line(format!("{bv} = load {base}"));
    b.line(format!("{prod} = mul {av}, {bv}"));
    b.line(format!("{next} = select {odd}, {prod}, {av}"));
    b.line(format!("store {ans}, {next}"));
    b.line(format!("{sq} = mul {bv}, {bv}"));
    b.line(format!("store {base}, {sq}"));
    b.line(format!("{shifted} = ushr {ev}, {one}"));
    b.line(format!("store {exp}, {shifted}"));
    b.depth -= 1;
    b.line("}");
    b.line(format!("{n} = load {ans}"));
}
