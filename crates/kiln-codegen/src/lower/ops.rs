//! Operators: KIR's arithmetic, comparisons, casts and math calls lowered
//! to LLVM IR with the semantics of `docs/language.md` (the ones
//! `kiln::semantics` evaluates): wrapping integers, no undefined
//! behaviour on division, shifts or float-to-int casts, float `min` and
//! `max` as IEEE minimumNumber with the second NaN quieted, Kiln's own
//! `f32` math inline (`lower::kmath`) or libm's, as Rust's `f32`/`f64`
//! methods call it, and float constants LLVM cannot fold.
//!
//! Owns: [`FnCx::binary`], [`FnCx::unary`], [`FnCx::cmp`], [`FnCx::cast`],
//! [`FnCx::bitcast`], the intrinsic and libm calls they make, and [`FnCx::float_constant`].
//!
//! Must never: emit an instruction whose result can be undefined on some
//! input, or let LLVM rewrite a libm call into one that is not bit for bit
//! the same (`nobuiltin`).

use super::*;

impl<'a, 'ctx> FnCx<'a, 'ctx> {
    pub(super) fn intrinsic(
        &self,
        l: &Lowering<'a, 'ctx>,
        name: &str,
        ty: BasicTypeEnum<'ctx>,
    ) -> Result<FunctionValue<'ctx>> {
        Intrinsic::find(name)
            .and_then(|i| i.get_declaration(&l.module, &[ty]))
            .ok_or_else(|| bug(format!("intrinsic {name} not found")))
    }

    fn call_intrinsic(
        &self,
        l: &Lowering<'a, 'ctx>,
        name: &str,
        ty: Scalar,
        args: &[BasicMetadataValueEnum<'ctx>],
    ) -> Result<BasicValueEnum<'ctx>> {
        let f = self.intrinsic(l, name, l.reg_ty(ty))?;
        self.call_math(l, f, args, |_| {})
    }

    /// Calls intrinsic `f` with the compile's fast-math flags; `decorate`
    /// may add to the call before its value is taken.
    pub(super) fn call_math(
        &self,
        l: &Lowering<'a, 'ctx>,
        f: FunctionValue<'ctx>,
        args: &[BasicMetadataValueEnum<'ctx>],
        decorate: impl FnOnce(inkwell::values::CallSiteValue<'ctx>),
    ) -> Result<BasicValueEnum<'ctx>> {
        let c = self.b.build_call(f, args, "")?;
        decorate(c);
        self.fmf(l, c);
        c.try_as_basic_value().basic().ok_or_else(|| bug("intrinsic without a result"))
    }

    /// Calls the C library's `name` (`sinf` for f32, `sin` for f64): the
    /// functions Rust's `f32::sin`/`f64::sin` end in, so the interpreter
    /// and the JIT agree bit for bit. `nobuiltin` keeps LLVM from
    /// rewriting the call into a different but not bit-identical one
    /// (e.g. `pow(2, x)` into `exp2(x)`). In fast-math mode on a target
    /// with vector math, the call that vectorises instead
    /// (`lower::vecmath`).
    fn call_libm(
        &self,
        l: &Lowering<'a, 'ctx>,
        name: &str,
        ty: Scalar,
        args: &[BasicMetadataValueEnum<'ctx>],
    ) -> Result<BasicValueEnum<'ctx>> {
        if l.math_calls() == MathCalls::VectorLibm {
            return self.call_vector_math(l, name, ty, args);
        }
        let sym = if ty == Scalar::F32 { format!("{name}f") } else { name.to_string() };
        let t = l.reg_ty(ty);
        let f = match l.module.get_function(&sym) {
            Some(f) => f,
            None => {
                let ps: Vec<BasicMetadataTypeEnum> = args.iter().map(|_| t.into()).collect();
                let f = l.module.add_function(&sym, t.fn_type(&ps, false), Some(Linkage::External));
                f.add_attribute(AttributeLoc::Function, l.enum_attr("nounwind"));
                f
            }
        };
        let c = self.b.build_call(f, args, "")?;
        c.add_attribute(AttributeLoc::Function, l.enum_attr("nobuiltin"));
        self.fmf(l, c);
        c.try_as_basic_value().basic().ok_or_else(|| bug("libm call without a result"))
    }

    /// Calls the runtime's copy of Kiln's `func` on the `f32` value `x`
    /// (`kiln_llvm::abi::MATH_RUNTIME`): what [`FnCx::kiln_math`] would
    /// emit, compiled once.
    fn call_kiln_math(
        &self,
        l: &Lowering<'a, 'ctx>,
        func: kiln::math::MathFunc,
        x: FloatValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let sym = kiln_llvm::abi::math_symbol(func);
        let f = match l.module.get_function(sym) {
            Some(f) => f,
            None => {
                let t = self.cx.f32_type();
                let f = l.module.add_function(sym, t.fn_type(&[t.into()], false), Some(Linkage::External));
                for a in ["nounwind", "willreturn", "nosync"] {
                    f.add_attribute(AttributeLoc::Function, l.enum_attr(a));
                }
                f
            }
        };
        let c = self.b.build_call(f, &[x.into()], "")?;
        c.try_as_basic_value().basic().ok_or_else(|| bug("math call without a result"))
    }

    /// A float constant, passed through an empty inline-asm statement so
    /// that LLVM cannot fold operations on it at compile time. The reason
    /// is NaN: an invalid operation (`0.0 / 0.0`, `inf - inf`) gives the
    /// hardware's default NaN at run time (negative on x86), which is what
    /// the interpreter computes, but LLVM's folder makes the positive one.
    /// Values stay in registers and the statement is hoisted out of loops.
    pub(super) fn float_constant(&mut self, l: &Lowering<'a, 'ctx>, c: Const) -> Result<BasicValueEnum<'ctx>> {
        let v = l.constant(c);
        self.float_barrier(l, v, c.ty)
    }

    /// `v`, a float of type `t`, passed through the empty inline-asm
    /// statement of [`FnCx::float_constant`]: LLVM sees a float it knows
    /// nothing about (on targets without one, `v` itself).
    fn float_barrier(
        &mut self,
        l: &Lowering<'a, 'ctx>,
        v: BasicValueEnum<'ctx>,
        t: Scalar,
    ) -> Result<BasicValueEnum<'ctx>> {
        let Some(constraint) = l.float_barrier else { return Ok(v) };
        if t == Scalar::F16 {
            // No register constraint takes a `half`: its bits go through
            // as the low bits of an `f32`'s.
            let (i16t, i32t) = (self.cx.i16_type(), self.cx.i32_type());
            let bits = self.b.build_bit_cast(v, i16t, "")?.into_int_value();
            let wide = self.b.build_int_z_extend(bits, i32t, "")?;
            let f = self.b.build_bit_cast(wide, self.cx.f32_type(), "")?;
            let f = self.float_barrier(l, f, Scalar::F32)?;
            let wide = self.b.build_bit_cast(f, i32t, "")?.into_int_value();
            let bits = self.b.build_int_truncate(wide, i16t, "")?;
            return Ok(self.b.build_bit_cast(bits, self.cx.f16_type(), "")?);
        }
        let ty = l.reg_ty(t);
        let fn_ty = ty.fn_type(&[ty.into()], false);
        let asm = self.cx.create_inline_asm(fn_ty, String::new(), constraint.to_string(), false, false, None, false);
        let call = self.b.build_indirect_call(fn_ty, asm, &[v.into()], "")?;
        call.add_attribute(AttributeLoc::Function, l.enum_attr("nounwind"));
        call.add_attribute(AttributeLoc::Function, l.enum_attr("willreturn"));
        // memory(none): the statement touches no memory.
        call.add_attribute(
            AttributeLoc::Function,
            self.cx.create_enum_attribute(Attribute::get_named_enum_kind_id("memory"), 0),
        );
        call.try_as_basic_value().basic().ok_or_else(|| bug("inline asm without a result"))
    }

    pub(super) fn binary(
        &mut self,
        l: &Lowering<'a, 'ctx>,
        op: BinOp,
        a: Value,
        b: Value,
    ) -> Result<BasicValueEnum<'ctx>> {
        let ty = self.scalar(a)?;
        if ty.is_float() {
            let x = self.val(a)?.into_float_value();
            let y = self.val(b)?.into_float_value();
            return self.float_binary(l, op, ty, x, y);
        }
        self.int_binary(op, ty, a, b)
    }

    /// `f16` widened to `f32`: exact (a NaN comes out quiet).
    fn widen16(&self, x: FloatValue<'ctx>) -> Result<FloatValue<'ctx>> {
        Ok(self.b.build_float_ext(x, self.cx.f32_type(), "")?)
    }

    /// An `f32` rounded to `f16`, to nearest even. No fast-math flag can
    /// remove it, so fast math rounds every `f16` operation too.
    fn narrow16(&self, x: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        Ok(self.b.build_float_trunc(x.into_float_value(), self.cx.f16_type(), "")?.into())
    }

    /// `f` (an `f32` operation) on `x` and `y`, `f16`s widened, its result
    /// rounded back to `f16`.
    fn in_f32(
        &mut self,
        x: FloatValue<'ctx>,
        y: FloatValue<'ctx>,
        f: impl FnOnce(&mut Self, FloatValue<'ctx>, FloatValue<'ctx>) -> Result<BasicValueEnum<'ctx>>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let (x, y) = (self.widen16(x)?, self.widen16(y)?);
        let r = f(self, x, y)?;
        self.narrow16(r)
    }

    /// A float operator. On `f16` it is the `f32` one on the operands
    /// widened, its result rounded back to `f16` (`kiln::semantics`), in
    /// the IR itself rather than left to LLVM's legalisation of `half`.
    fn float_binary(
        &mut self,
        l: &Lowering<'a, 'ctx>,
        op: BinOp,
        ty: Scalar,
        x: FloatValue<'ctx>,
        y: FloatValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        if ty == Scalar::F16 {
            return self.in_f32(x, y, |me, x, y| me.float_binary(l, op, Scalar::F32, x, y));
        }
        if let Some(name) = op.libm() {
            return self.call_libm(l, name, ty, &[x.into(), y.into()]);
        }
        let r: BasicValueEnum = match op {
            BinOp::Add => self.b.build_float_add(x, y, "")?.into(),
            BinOp::Sub => self.b.build_float_sub(x, y, "")?.into(),
            BinOp::Mul => self.b.build_float_mul(x, y, "")?.into(),
            BinOp::Div => self.b.build_float_div(x, y, "")?.into(),
            // frem is C's fmod, as is Rust's `%` on floats.
            BinOp::Rem => self.b.build_float_rem(x, y, "")?.into(),
            // IEEE 754-2019 minimumNumber: a NaN operand gives the
            // other one, and -0.0 < +0.0, so the result never depends
            // on operand order (unlike minnum).
            BinOp::Min | BinOp::Max => return self.float_min_max(l, op == BinOp::Min, ty, x, y),
            _ => return Err(CodegenError::new(format!("`{}` on {ty}", op.keyword()))),
        };
        self.fmf(l, r);
        Ok(r)
    }

    /// An integer operator, wrapping, with no undefined behaviour.
    fn int_binary(&mut self, op: BinOp, ty: Scalar, a: Value, b: Value) -> Result<BasicValueEnum<'ctx>> {
        let x = self.ival(a)?;
        let y = self.ival(b)?;
        let it = x.get_type();
        let bits = ty.bits() as u64;
        let unsigned = ty.is_unsigned();
        let r = match op {
            BinOp::Add => self.b.build_int_add(x, y, "")?,
            BinOp::Sub => self.b.build_int_sub(x, y, "")?,
            BinOp::Mul => self.b.build_int_mul(x, y, "")?,
            BinOp::Div | BinOp::Rem => {
                // x / 0 = 0 (rem: 0), and signed MIN / -1 = MIN (rem: 0),
                // without undefined behaviour: divide by 1 instead, then
                // fix the x / 0 case.
                let zero = it.const_zero();
                let one = it.const_int(1, false);
                let by0 = self.b.build_int_compare(IntPredicate::EQ, y, zero, "")?;
                let bad = if unsigned {
                    by0
                } else {
                    let min = it.const_int(1u64 << (bits - 1), false);
                    let xmin = self.b.build_int_compare(IntPredicate::EQ, x, min, "")?;
                    let ym1 = self.b.build_int_compare(IntPredicate::EQ, y, it.const_all_ones(), "")?;
                    let ovf = self.b.build_and(xmin, ym1, "")?;
                    self.b.build_or(by0, ovf, "")?
                };
                let d = self.b.build_select(bad, one, y, "")?.into_int_value();
                let q = match (op == BinOp::Div, unsigned) {
                    (true, true) => self.b.build_int_unsigned_div(x, d, "")?,
                    (false, true) => self.b.build_int_unsigned_rem(x, d, "")?,
                    (true, false) => self.b.build_int_signed_div(x, d, "")?,
                    (false, false) => self.b.build_int_signed_rem(x, d, "")?,
                };
                self.b.build_select(by0, zero, q, "")?.into_int_value()
            }
            BinOp::Min | BinOp::Max => {
                let p = match (op == BinOp::Min, unsigned) {
                    (true, false) => IntPredicate::SLT,
                    (false, false) => IntPredicate::SGT,
                    (true, true) => IntPredicate::ULT,
                    (false, true) => IntPredicate::UGT,
                };
                let c = self.b.build_int_compare(p, x, y, "")?;
                self.b.build_select(c, x, y, "")?.into_int_value()
            }
            BinOp::And => self.b.build_and(x, y, "")?,
            BinOp::Or => self.b.build_or(x, y, "")?,
            BinOp::Xor => self.b.build_xor(x, y, "")?,
            BinOp::Shl | BinOp::Shr | BinOp::Ushr => {
                let amt = self.b.build_and(y, it.const_int(bits - 1, false), "")?;
                match op {
                    BinOp::Shl => self.b.build_left_shift(x, amt, "")?,
                    BinOp::Shr => self.b.build_right_shift(x, amt, true, "")?,
                    _ => self.b.build_right_shift(x, amt, false, "")?,
                }
            }
            BinOp::Pow | BinOp::Atan2 => return Err(CodegenError::new(format!("`{}` on {ty}", op.keyword()))),
        };
        Ok(r.into())
    }

    pub(super) fn unary(&mut self, l: &Lowering<'a, 'ctx>, op: UnOp, a: Value) -> Result<BasicValueEnum<'ctx>> {
        let ty = self.scalar(a)?;
        if ty.is_float() {
            let x: FloatValue = self.val(a)?.into_float_value();
            return self.float_unary(l, op, ty, x);
        }
        self.int_unary(l, op, ty, a)
    }

    /// A float operator of one operand; on `f16` as [`FnCx::float_binary`]
    /// says, but `neg` and `abs`, which change the sign bit alone.
    fn float_unary(
        &mut self,
        l: &Lowering<'a, 'ctx>,
        op: UnOp,
        ty: Scalar,
        x: FloatValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        if ty == Scalar::F16 && !matches!(op, UnOp::Neg | UnOp::Abs) {
            return self.in_f32(x, x, |me, x, _| me.float_unary(l, op, Scalar::F32, x));
        }
        if let Some(f) = l.math_calls().kiln_func(op, ty) {
            if l.math_calls() == MathCalls::KilnCalls {
                return self.call_kiln_math(l, f, x);
            }
            return self.kiln_math(l, f, x);
        }
        if let Some(name) = op.libm() {
            return self.call_libm(l, name, ty, &[x.into()]);
        }
        let r: BasicValueEnum = match op {
            UnOp::Neg => self.b.build_float_neg(x, "")?.into(),
            UnOp::Abs => return self.call_intrinsic(l, "llvm.fabs", ty, &[x.into()]),
            UnOp::Sqrt => return self.call_intrinsic(l, "llvm.sqrt", ty, &[x.into()]),
            UnOp::Floor => return self.call_intrinsic(l, "llvm.floor", ty, &[x.into()]),
            UnOp::Ceil => return self.call_intrinsic(l, "llvm.ceil", ty, &[x.into()]),
            // llvm.round rounds half away from zero.
            UnOp::Round => return self.call_intrinsic(l, "llvm.round", ty, &[x.into()]),
            // `not`, and the libm operators handled above.
            _ => return Err(CodegenError::new(format!("`{}` on {ty}", op.keyword()))),
        };
        self.fmf(l, r);
        Ok(r)
    }

    /// An integer operator of one operand.
    fn int_unary(&mut self, l: &Lowering<'a, 'ctx>, op: UnOp, ty: Scalar, a: Value) -> Result<BasicValueEnum<'ctx>> {
        let x = self.ival(a)?;
        let r = match op {
            UnOp::Neg => self.b.build_int_neg(x, "")?,
            UnOp::Not => self.b.build_not(x, "")?,
            // An unsigned number is its own magnitude.
            UnOp::Abs if ty.is_unsigned() => x,
            // abs(MIN) wraps to MIN (the `false`: MIN is not poison).
            UnOp::Abs => {
                let f = self.intrinsic(l, "llvm.abs", l.reg_ty(ty))?;
                let no_poison = self.cx.bool_type().const_zero();
                let c = self.b.build_call(f, &[x.into(), no_poison.into()], "")?;
                return c.try_as_basic_value().basic().ok_or_else(|| bug("llvm.abs without a result"));
            }
            _ => return Err(CodegenError::new(format!("`{}` on {ty}", op.keyword()))),
        };
        Ok(r.into())
    }

    pub(super) fn cmp(&mut self, l: &Lowering<'a, 'ctx>, op: CmpOp, a: Value, b: Value) -> Result<IntValue<'ctx>> {
        let ty = self.scalar(a)?;
        if ty.is_float() {
            let p = match op {
                CmpOp::Lt => FloatPredicate::OLT,
                CmpOp::Le => FloatPredicate::OLE,
                CmpOp::Gt => FloatPredicate::OGT,
                CmpOp::Ge => FloatPredicate::OGE,
                CmpOp::Eq => FloatPredicate::OEQ,
                CmpOp::Ne => FloatPredicate::UNE,
            };
            let r =
                self.b.build_float_compare(p, self.val(a)?.into_float_value(), self.val(b)?.into_float_value(), "")?;
            self.fmf(l, r);
            return Ok(r);
        }
        // i1 compares as 0 < 1 (unsigned), as do the unsigned types.
        let signed = ty.is_signed();
        let p = match (op, signed) {
            (CmpOp::Lt, true) => IntPredicate::SLT,
            (CmpOp::Le, true) => IntPredicate::SLE,
            (CmpOp::Gt, true) => IntPredicate::SGT,
            (CmpOp::Ge, true) => IntPredicate::SGE,
            (CmpOp::Lt, false) => IntPredicate::ULT,
            (CmpOp::Le, false) => IntPredicate::ULE,
            (CmpOp::Gt, false) => IntPredicate::UGT,
            (CmpOp::Ge, false) => IntPredicate::UGE,
            (CmpOp::Eq, _) => IntPredicate::EQ,
            (CmpOp::Ne, _) => IntPredicate::NE,
        };
        Ok(self.b.build_int_compare(p, self.ival(a)?, self.ival(b)?, "")?)
    }

    /// `bitcast`: the verifier admits only types of one width, which LLVM's
    /// `bitcast` reinterprets (a no-op between integers of one width). The
    /// float side goes through [`FnCx::float_barrier`]: LLVM takes a NaN's
    /// sign as unspecified, so it would otherwise turn integer sign-bit
    /// operations on a float's bits into float ones and fold those
    /// (`xor` of the sign into `fneg`, then `fneg (fmul x, y)` into
    /// `fmul x, (fneg y)`), changing the bits of a NaN.
    pub(super) fn bitcast(&mut self, l: &Lowering<'a, 'ctx>, a: Value, to: Scalar) -> Result<BasicValueEnum<'ctx>> {
        let from = self.scalar(a)?;
        let mut v = self.val(a)?;
        if from == to {
            return Ok(v);
        }
        if from.is_float() {
            v = self.float_barrier(l, v, from)?;
        }
        let r = self.b.build_bit_cast(v, l.reg_ty(to), "")?;
        if to.is_float() {
            return self.float_barrier(l, r, to);
        }
        Ok(r)
    }

    pub(super) fn cast(&mut self, l: &Lowering<'a, 'ctx>, a: Value, to: Scalar) -> Result<BasicValueEnum<'ctx>> {
        let from = self.scalar(a)?;
        let v = self.val(a)?;
        self.cast_value(l, v, from, to)
    }

    /// `cast` of `v`, of type `from`, to `to`. Every conversion to `f16` is
    /// to `f32` first, then rounded (`f64` too: twice, as Quadrants does),
    /// and every one from `f16` widens it to `f32` first (exact).
    fn cast_value(
        &mut self,
        l: &Lowering<'a, 'ctx>,
        v: BasicValueEnum<'ctx>,
        from: Scalar,
        to: Scalar,
    ) -> Result<BasicValueEnum<'ctx>> {
        if from == to {
            return Ok(v);
        }
        if to == Scalar::F16 {
            let w = self.cast_value(l, v, from, Scalar::F32)?;
            return self.narrow16(w);
        }
        if from == Scalar::F16 {
            let w = self.extend_quiet(v.into_float_value(), Scalar::F32)?;
            return self.cast_value(l, w.into(), Scalar::F32, to);
        }
        let cx = self.cx;
        Ok(match (from.is_float(), to.is_float()) {
            (false, false) => {
                let x = v.into_int_value();
                let t = fx_int_ty(cx, to);
                if to == Scalar::I1 {
                    self.b.build_int_compare(IntPredicate::NE, x, x.get_type().const_zero(), "")?.into()
                } else {
                    // Widening extends by the source's signedness (i1 and
                    // the unsigned types with zeros); narrowing truncates.
                    self.b.build_int_cast_sign_flag(x, t, from.is_signed(), "")?.into()
                }
            }
            (false, true) => {
                let x = v.into_int_value();
                let t = l.reg_ty(to).into_float_type();
                if from.is_signed() {
                    self.b.build_signed_int_to_float(x, t, "")?.into()
                } else {
                    self.b.build_unsigned_int_to_float(x, t, "")?.into()
                }
            }
            (true, false) => {
                let x = v.into_float_value();
                if to == Scalar::I1 {
                    // `!= 0.0`, true for NaN (like `cmp ne`).
                    let z = x.get_type().const_zero();
                    self.b.build_float_compare(FloatPredicate::UNE, x, z, "")?.into()
                } else {
                    // Saturating to the type's range, NaN to 0.
                    let name = if to.is_signed() { "llvm.fptosi.sat" } else { "llvm.fptoui.sat" };
                    let f = Intrinsic::find(name)
                        .and_then(|i| i.get_declaration(&l.module, &[l.reg_ty(to), l.reg_ty(from)]))
                        .ok_or_else(|| bug(format!("{name} not found")))?;
                    let c = self.b.build_call(f, &[x.into()], "")?;
                    c.try_as_basic_value().basic().ok_or_else(|| bug("fptosi.sat without a result"))?
                }
            }
            (true, true) => {
                let x = v.into_float_value();
                if to.bits() > from.bits() {
                    self.extend_quiet(x, to)?.into()
                } else {
                    self.b.build_float_trunc(x, l.reg_ty(to).into_float_type(), "")?.into()
                }
            }
        })
    }

    /// `x` extended to the wider float type `to`, exactly, a NaN quiet
    /// (its quiet bit set, as the language and the interpreter have it):
    /// the hardware's conversion quiets a signalling NaN, but LLVM folds an
    /// extension and the rounding back (`fptrunc (fpext x)`, in the IR and
    /// in the code generator even at `-O0`) to `x`, which would keep it
    /// signalling in one tier and not in another. The NaN's bits are set
    /// by integer operations, which no float fold sees through.
    fn extend_quiet(&self, x: FloatValue<'ctx>, to: Scalar) -> Result<FloatValue<'ctx>> {
        let t = if to == Scalar::F64 { self.cx.f64_type() } else { self.cx.f32_type() };
        let r = self.b.build_float_ext(x, t, "")?;
        let nan = self.b.build_float_compare(FloatPredicate::UNO, r, r, "")?;
        let quieted = self.with_quiet_bit(r, to)?;
        Ok(self.b.build_select(nan, quieted, r, "")?.into_float_value())
    }

    /// `x` (of the `f32` or `f64` type `ty`) with its quiet bit (the
    /// stored significand's top bit) set, by integer operations on its
    /// bits, where no float folder can change the payload.
    fn with_quiet_bit(&self, x: FloatValue<'ctx>, ty: Scalar) -> Result<FloatValue<'ctx>> {
        let digits = if ty == Scalar::F32 { f32::MANTISSA_DIGITS } else { f64::MANTISSA_DIGITS };
        let ity = fx_int_ty(self.cx, ty);
        let bits = self.b.build_bit_cast(x, ity, "")?.into_int_value();
        let quieted = self.b.build_or(bits, ity.const_int(1u64 << (digits - 2), false), "")?;
        Ok(self.b.build_bit_cast(quieted, x.get_type(), "")?.into_float_value())
    }

    /// Float `min` (or `max`): IEEE 754-2019 minimumNumber (LLVM's
    /// `minimumnum`: a NaN operand gives the other one, `-0.0 < +0.0`) and,
    /// when both operands are NaN, the second one quieted, as
    /// `docs/language.md` says (LLVM leaves which NaN to the target, and
    /// x86 gives either operand, unquieted, by their signs). The quiet bit
    /// is set on the integer bits, where no folder can change the payload.
    pub(super) fn float_min_max(
        &mut self,
        l: &Lowering<'a, 'ctx>,
        min: bool,
        ty: Scalar,
        x: FloatValue<'ctx>,
        y: FloatValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        if ty == Scalar::F16 {
            return self.in_f32(x, y, |me, x, y| me.float_min_max(l, min, Scalar::F32, x, y));
        }
        let name = if min { "llvm.minimumnum" } else { "llvm.maximumnum" };
        let r = self.call_intrinsic(l, name, ty, &[x.into(), y.into()])?;
        let x_nan = self.b.build_float_compare(FloatPredicate::UNO, x, x, "")?;
        let y_nan = self.b.build_float_compare(FloatPredicate::UNO, y, y, "")?;
        let both = self.b.build_and(x_nan, y_nan, "")?;
        let quieted: BasicValueEnum = self.with_quiet_bit(y, ty)?.into();
        Ok(self.b.build_select(both, quieted, r, "")?)
    }
}
