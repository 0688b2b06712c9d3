//! The operators of an imported statement: bit casts, unary and binary arithmetic
//! (with the expansions KIR needs: `floordiv`, `sgn`, `rsqrt`, an ordered
//! float `cmp_ne`) and atomics (on a field, or on a local by load and
//! store).
//!
//! Owns: what each Quadrants operator becomes in KIR, and the refusal of
//! one without a KIR form.
//!
//! Must never: build a statement other than its operator's, or panic on
//! any input.

use super::*;

impl Module<'_> {
    /// A unary operator, component-wise on a vector.
    /// `reinterpret_cast_bits<T>` (`qd.bit_cast`): KIR's `bitcast`, of
    /// each component of a vector; the types have one width.
    pub(super) fn bitcast(&mut self, b: &mut Body, s: &Stmt, to: &str, a: u32) -> Result<(), Error> {
        let to = stmt_scalar(to, s)?;
        self.each(b, s, [a], |_, b, [x], n| {
            let from = b.ty(x);
            if from.bits() != to.bits() {
                return Err(located(format!("reinterpret_cast_bits of {from} to {to}, another width"), s));
            }
            Ok(b.bld.ins(n).bitcast(x, to))
        })
    }

    pub(super) fn unary(&mut self, b: &mut Body, s: &Stmt, op: &str, a: u32, ty: Option<Scalar>) -> Result<(), Error> {
        self.each(b, s, [a], |_, b, [x], n| unary_of(b, s, op, x, ty, n))
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
        self.each(b, s, [a, c], |m, b, [x, y], n| m.binary_of(b, s, op, (x, y), ty, n))
    }
}

/// The KIR operator of a Quadrants unary operator on a `vt` that is one
/// statement of the operand's type.
fn plain_unary(op: &str, vt: Scalar) -> Option<UnOp> {
    match op {
        "neg" | "abs" if vt != Scalar::I1 => UnOp::from_keyword(op),
        "sqrt" | "sin" | "cos" | "tan" | "asin" | "acos" | "tanh" | "exp" | "log" | "floor" | "ceil" | "round"
            if vt.is_float() =>
        {
            UnOp::from_keyword(op)
        }
        "bit_not" if vt.is_int() => Some(UnOp::Not),
        _ => None,
    }
}

/// `n = op x`, of the type `ty` the statement's hint gives (or the
/// operand's).
fn unary_of(b: &mut Body, s: &Stmt, op: &str, x: Value, ty: Option<Scalar>, n: Name) -> Result<Value, Error> {
    let (v, vt) = (x, b.ty(x));
    let rt = ty.unwrap_or(vt);
    let one = |b: &mut Body| b.at(s.id).konst(Const::int(vt, 1));
    if let Some(u) = plain_unary(op, vt) {
        return Ok(b.bld.ins(n).unary(u, v));
    }
    // What the KIR built computes: the operand's type for an operator,
    // the hint's for what ends in a cast.
    let r = match op {
        "floor" | "ceil" | "round" if vt.is_int() => return Ok(x),
        "logic_not" => {
            let z = b.at(s.id).konst(Const::int(vt, 0));
            if rt == Scalar::I1 {
                b.bld.ins(n).cmp(CmpOp::Eq, v, z)
            } else {
                let c = b.at(s.id).cmp(CmpOp::Eq, v, z);
                b.bld.ins(n).cast(c, rt)
            }
        }
        "rsqrt" if vt.is_float() => {
            let r = b.at(s.id).unary(UnOp::Sqrt, v);
            let o = one(b);
            return Ok(b.bld.ins(n).binary(BinOp::Div, o, r));
        }
        "inv" | "rcp" if vt.is_float() => {
            let o = one(b);
            return Ok(b.bld.ins(n).binary(BinOp::Div, o, v));
        }
        "sgn" if vt != Scalar::I1 => {
            let [z, p, m, pf, mf] = [(); 5].map(|_| b.fresh(s.id));
            let z = b.bld.ins(z).konst(Const::int(vt, 0));
            let p = b.bld.ins(p).cmp(CmpOp::Gt, v, z);
            let m = b.bld.ins(m).cmp(CmpOp::Lt, v, z);
            let pf = b.bld.ins(pf).cast(p, rt);
            let mf = b.bld.ins(mf).cast(m, rt);
            b.bld.ins(n).binary(BinOp::Sub, pf, mf)
        }
        _ => return Err(refused_stmt(format!("{op} of {vt}"), s).with_why("KIR has no such operator")),
    };
    Ok(r)
}

/// What a Quadrants binary operator is in KIR when it is one statement.
#[derive(Clone, Copy)]
enum Plain {
    Bin(BinOp),
    Cmp(CmpOp),
}

/// The one KIR statement of a Quadrants binary operator on operands of
/// type `t`, if it is one.
fn plain_binary(op: &str, t: Scalar) -> Option<Plain> {
    let shift = t.is_int() && t != Scalar::I1;
    Some(match op {
        "add" | "sub" | "mul" | "min" | "max" if t != Scalar::I1 => Plain::Bin(BinOp::from_keyword(op)?),
        "div" | "truediv" if t != Scalar::I1 => Plain::Bin(BinOp::Div),
        "mod" if t != Scalar::I1 => Plain::Bin(BinOp::Rem),
        "pow" | "atan2" if t.is_float() => Plain::Bin(BinOp::from_keyword(op)?),
        "bit_and" if t.is_int() => Plain::Bin(BinOp::And),
        "bit_or" if t.is_int() => Plain::Bin(BinOp::Or),
        "bit_xor" if t.is_int() => Plain::Bin(BinOp::Xor),
        "bit_shl" if shift => Plain::Bin(BinOp::Shl),
        // Quadrants shifts an unsigned number right with zeros.
        "bit_sar" if t.is_unsigned() => Plain::Bin(BinOp::Ushr),
        "bit_sar" if shift => Plain::Bin(BinOp::Shr),
        "bit_shr" if shift => Plain::Bin(BinOp::Ushr),
        _ => Plain::Cmp(CmpOp::from_keyword(op.strip_prefix("cmp_")?)?),
    })
}

impl Module<'_> {
    /// `n = x op y`, of the type `ty` the statement's hint gives (or the
    /// operands').
    fn binary_of(
        &mut self,
        b: &mut Body,
        s: &Stmt,
        op: &str,
        (x, y): (Value, Value),
        ty: Option<Scalar>,
        n: Name,
    ) -> Result<Value, Error> {
        let (xt, yt) = (b.ty(x), b.ty(y));
        if op == "pow" && xt.is_float() && yt.is_int() && yt != Scalar::I1 {
            // A float to an integer power: Quadrants multiplies it out.
            return Ok(float_int_pow(b, s.id, n, (x, y), (xt, yt)));
        }
        if xt != yt {
            return Err(located(format!("'{op}' of {xt} and {yt}"), s));
        }
        let t = xt;
        // The type of what is built: the operands' for arithmetic, i1 for
        // a comparison, the hint's where a cast ends it.
        let rt = ty.unwrap_or(t);
        if op == "cmp_ne" && t.is_float() {
            // Quadrants compares floats for inequality ordered (LLVM's `one`:
            // false when either is NaN); KIR's `ne` is unordered. Ordered
            // inequality is `lt or gt`.
            let [lt, gt, r] = [(); 3].map(|_| b.fresh(s.id));
            let lt = b.bld.ins(lt).cmp(CmpOp::Lt, x, y);
            let gt = b.bld.ins(gt).cmp(CmpOp::Gt, x, y);
            return Ok(or_cast(b, (n, r), BinOp::Or, (lt, gt), rt));
        }
        match plain_binary(op, t) {
            Some(Plain::Cmp(c)) if rt != Scalar::I1 => {
                let c = b.at(s.id).cmp(c, x, y);
                Ok(b.bld.ins(n).cast(c, rt))
            }
            Some(Plain::Cmp(c)) => Ok(b.bld.ins(n).cmp(c, x, y)),
            Some(Plain::Bin(o)) => Ok(b.bld.ins(n).binary(o, x, y)),
            None => self.expanded(b, s, op, (x, y), rt, n),
        }
    }

    /// The binary operators KIR computes in more than one statement.
    fn expanded(
        &mut self,
        b: &mut Body,
        s: &Stmt,
        op: &str,
        (x, y): (Value, Value),
        rt: Scalar,
        n: Name,
    ) -> Result<Value, Error> {
        let t = b.ty(x);
        match op {
            "floordiv" if t.is_float() => {
                let d = b.at(s.id).binary(BinOp::Div, x, y);
                Ok(b.bld.ins(n).unary(UnOp::Floor, d))
            }
            "floordiv" if t != Scalar::I1 => Ok(int_floordiv(b, s.id, n, (x, y), t)),
            "pow" if t == Scalar::I32 || t == Scalar::I64 => Ok(int_pow(b, s.id, n, (x, y), t)),
            "logical_and" | "logical_or" => {
                let cx = self.cond_of(b, x, s);
                let cy = self.cond_of(b, y, s);
                let k = if op == "logical_and" { BinOp::And } else { BinOp::Or };
                let r = if rt == Scalar::I1 { Name::default() } else { b.fresh(s.id) };
                Ok(or_cast(b, (n, r), k, (cx, cy), rt))
            }
            _ => Err(refused_stmt(format!("{op} of {t}"), s).with_why("KIR has no such operator")),
        }
    }

    /// `atomic OP($dest, $val)`: on a scalar pointer, or component-wise on
    /// a whole vector's (its old values a vector).
    pub(super) fn atomic(&mut self, b: &mut Body, s: &Stmt, op: &str, dest: u32, val: u32) -> Result<(), Error> {
        let Some(p) = b.vals.get(&dest).cloned() else {
            return Err(located(format!("${dest} is used before it is defined"), s));
        };
        let whole = matches!(p, V::Tensor(_));
        let ptrs = tensor::components(b, s, p);
        let vals: Vec<Value> = match b.vals.get(&val).cloned() {
            Some(V::Vec(c)) if whole && c.len() == ptrs.len() => c,
            Some(V::Val(v)) if !whole => vec![v],
            _ => return Err(located(format!("atomic {op} of ${val} into ${dest} of another shape"), s)),
        };
        let mut olds = Vec::with_capacity(vals.len());
        for (k, (p, v)) in ptrs.iter().zip(&vals).enumerate() {
            let n = if whole { tensor::comp_name(s.id, k) } else { Name::from(s.id.to_string()) };
            olds.push(atomic_of(b, s, op, p, *v, n)?);
        }
        let v = if whole { V::Vec(olds) } else { V::Val(olds.remove(0)) };
        b.vals.insert(s.id, v);
        Ok(())
    }
}

/// `n = k(x, y)` when `rt` is `i1`, else `r = k(x, y)` and `n` its cast
/// to `rt`.
fn or_cast(b: &mut Body, (n, r): (Name, Name), k: BinOp, (x, y): (Value, Value), rt: Scalar) -> Value {
    if rt == Scalar::I1 {
        return b.bld.ins(n).binary(k, x, y);
    }
    let r = b.bld.ins(r).binary(k, x, y);
    b.bld.ins(n).cast(r, rt)
}

/// Python's floor division of integers: C's quotient, one less when the
/// remainder is not zero and its sign differs from the divisor's.
fn int_floordiv(b: &mut Body, id: u32, n: Name, (x, y): (Value, Value), t: Scalar) -> Value {
    let [q, r, z, rnz, rneg, yneg, diff, adj, one, qm] = [(); 10].map(|_| b.fresh(id));
    let q = b.bld.ins(q).binary(BinOp::Div, x, y);
    let r = b.bld.ins(r).binary(BinOp::Rem, x, y);
    let z = b.bld.ins(z).konst(Const::int(t, 0));
    let rnz = b.bld.ins(rnz).cmp(CmpOp::Ne, r, z);
    let rneg = b.bld.ins(rneg).cmp(CmpOp::Lt, r, z);
    let yneg = b.bld.ins(yneg).cmp(CmpOp::Lt, y, z);
    let diff = b.bld.ins(diff).binary(BinOp::Xor, rneg, yneg);
    let adj = b.bld.ins(adj).binary(BinOp::And, rnz, diff);
    let one = b.bld.ins(one).konst(Const::int(t, 1));
    let qm = b.bld.ins(qm).binary(BinOp::Sub, q, one);
    b.bld.ins(n).select(adj, qm, q)
}

/// The KIR atomic of a Quadrants atomic on a field, if KIR has it (`sub`
/// is an `add` of the negation).
fn field_atomic(op: &str) -> Option<AtomicOp> {
    match op {
        "add" | "min" | "max" => AtomicOp::from_keyword(op),
        "bit_and" => Some(AtomicOp::And),
        "bit_or" => Some(AtomicOp::Or),
        "bit_xor" => Some(AtomicOp::Xor),
        "sub" => Some(AtomicOp::Add),
        _ => None,
    }
}

/// One scalar atomic, its old value named `n`.
fn atomic_of(b: &mut Body, s: &Stmt, op: &str, p: &V, x: Value, n: Name) -> Result<Value, Error> {
    let xt = b.ty(x);
    let elem = match p {
        V::Ptr { elem, .. } | V::Slot { elem, .. } | V::DynSlot { elem, .. } => *elem,
        _ => return Err(located("an atomic on what is not a pointer".to_string(), s)),
    };
    if let V::Ptr { field, idx, .. } = p {
        if elem != xt {
            return Err(located(format!("atomic {op} of {xt} into a field of {elem}"), s));
        }
        let fits = match op {
            "bit_and" | "bit_or" | "bit_xor" => matches!(elem, Scalar::I32 | Scalar::I64),
            _ => elem != Scalar::I1,
        };
        if !fits {
            return Err(refused_stmt(format!("atomic {op} on {elem}"), s).with_why("KIR has no such atomic"));
        }
        let Some(k) = field_atomic(op) else {
            return Err(
                refused_stmt(format!("atomic {op}"), s).with_why("KIR's atomics are add, min, max, and, or and xor")
            );
        };
        let v = if op == "sub" { b.at(s.id).unary(UnOp::Neg, x) } else { x };
        let r = FieldRef { field: field.clone(), indices: idx.clone(), span: Span::DUMMY };
        return Ok(b.bld.ins(n).atomic(k, r, v, elem));
    }
    // A local is private to its iteration: the atomic is a load, the
    // operation and a store; it yields the old value.
    let Some(k) = ["add", "sub", "mul", "min", "max", "bit_and", "bit_or", "bit_xor"]
        .contains(&op)
        .then(|| BinOp::from_keyword(op.strip_prefix("bit_").unwrap_or(op)))
        .flatten()
    else {
        return Err(refused_stmt(format!("atomic {op}"), s).with_why("KIR has no such operator"));
    };
    let fits = match k {
        BinOp::And | BinOp::Or | BinOp::Xor => elem.is_int(),
        _ => elem != Scalar::I1,
    };
    if !fits || elem != xt {
        return Err(located(format!("atomic {op} of {xt} on a local of {elem}"), s));
    }
    let old = tensor::load_at(b, s, p, n)?;
    let new = b.at(s.id).binary(k, old, x);
    tensor::store_scalar(b, s, p, new)?;
    Ok(old)
}

/// `n = x ** y` on integers as Quadrants computes it: `x` to the power of
/// `|y|` (a negative exponent counts as its magnitude; `MIN`'s as 2^(w-1)),
/// wrapping, by squaring over the exponent's `w` bits: a loop of `w`
/// iterations over three slots, so the IR stays small.
fn int_pow(b: &mut Body, id: u32, n: Name, (x, y): (Value, Value), t: Scalar) -> Value {
    let mag = b.at(id).unary(UnOp::Abs, y);
    pow_by_squaring(b, id, n, (x, mag), (t, t))
}

/// `n = x ** y` for a float `x` (of `tx`) and an integer `y` (of `ty`), as
/// Quadrants' `demote_operations` computes it: the product of squarings
/// over the bits of `|y|` (none when `|y|` is not above 0: 0, or `MIN`,
/// whose magnitude is itself), in the same order, then its reciprocal
/// when `y` is not above 0.
fn float_int_pow(b: &mut Body, id: u32, n: Name, (x, y): (Value, Value), (tx, ty): (Scalar, Scalar)) -> Value {
    let mag = b.at(id).unary(UnOp::Abs, y);
    let product = b.fresh(id);
    let product = pow_by_squaring(b, id, product, (x, mag), (tx, ty));
    let zero = b.at(id).konst(Const::int(ty, 0));
    let one = b.at(id).konst(Const::int(tx, 1));
    let ran = b.at(id).cmp(CmpOp::Gt, mag, zero);
    let r = b.at(id).select(ran, product, one);
    let inverse = b.at(id).binary(BinOp::Div, one, r);
    let not_above = b.at(id).cmp(CmpOp::Le, y, zero);
    b.bld.ins(n).select(not_above, inverse, r)
}

/// `n = x ** mag` (`x` of `tx`, `mag` of `te`, its bits read as unsigned):
/// by squaring over `mag`'s `w` bits, a loop of `w` iterations over three
/// slots, so the IR stays small; each set bit multiplies the result by
/// the base (`result * base`, as Quadrants orders it).
fn pow_by_squaring(b: &mut Body, id: u32, n: Name, (x, mag): (Value, Value), (tx, te): (Scalar, Scalar)) -> Value {
    let [ans, base, exp, one, zero, i] = [(); 6].map(|_| b.fresh(id));
    let [ev, bit, odd, av, bv, prod, next, sq, shifted] = [(); 9].map(|_| b.fresh(id));
    let ans = b.bld.ins(ans).alloca(tx);
    let base = b.bld.ins(base).alloca(tx);
    let exp = b.bld.ins(exp).alloca(te);
    let one_x = b.at(id).konst(Const::int(tx, 1));
    let one = b.bld.ins(one).konst(Const::int(te, 1));
    let zero = b.bld.ins(zero).konst(Const::int(te, 0));
    b.bld.store_slot(ans, one_x);
    b.bld.store_slot(base, x);
    b.bld.store_slot(exp, mag);
    let (_, body) = b.bld.for_(i, ir::Bound::Const(0), ir::Bound::Const(i64::from(te.bits())));
    let outer = b.enter(body);
    let ev = b.bld.ins(ev).load_slot(exp);
    let bit = b.bld.ins(bit).binary(BinOp::And, ev, one);
    let odd = b.bld.ins(odd).cmp(CmpOp::Ne, bit, zero);
    let av = b.bld.ins(av).load_slot(ans);
    let bv = b.bld.ins(bv).load_slot(base);
    let prod = b.bld.ins(prod).binary(BinOp::Mul, av, bv);
    let next = b.bld.ins(next).select(odd, prod, av);
    b.bld.store_slot(ans, next);
    let sq = b.bld.ins(sq).binary(BinOp::Mul, bv, bv);
    b.bld.store_slot(base, sq);
    let shifted = b.bld.ins(shifted).binary(BinOp::Ushr, ev, one);
    b.bld.store_slot(exp, shifted);
    b.leave(outer);
    b.bld.ins(n).load_slot(ans)
}
