//! Kiln's own `f32` math (`kiln::math`) emitted as LLVM IR, inline where
//! the statement is: the default mode's `sin`, `cos`, `tan`, `exp`, `log`
//! and `tanh` on `f32`, which then vectorise with the loop around them.
//!
//! The IR is the algorithm's operations one for one, with no fast-math
//! flag, so LLVM may not reassociate, contract or approximate them, and the
//! JIT computes exactly what the interpreter does at any vector width.
//!
//! Owns: the [`Ops`] of LLVM IR, and the module's copy of a math table.
//!
//! Must never: emit an operation the interpreter's [`Ops`] does not
//! perform the same way (a flag, a fused multiply-add, an intrinsic that
//! may call a libm), or index a table outside it.

use super::{FnCx, Lowering, Result};
use inkwell::builder::{Builder, BuilderError};
use inkwell::context::Context;
use inkwell::module::{Linkage, Module};
use inkwell::values::{BasicValueEnum, FloatValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};
use kiln::math::{Cmp, FOp, IOp, MathFunc, Ops, Table};

impl<'a, 'ctx> FnCx<'a, 'ctx> {
    /// Emits `func` of the `f32` value `x`.
    pub(super) fn kiln_math(
        &self,
        l: &Lowering<'a, 'ctx>,
        func: MathFunc,
        x: FloatValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let mut ir = Ir { cx: self.cx, b: &self.b, module: &l.module, err: None };
        let y = func.apply(&mut ir, x);
        match ir.err {
            Some(e) => Err(e.into()),
            None => Ok(y.into()),
        }
    }
}

/// The operations as instructions at `b`'s position. A builder error (only
/// a misplaced builder can make one) is kept, the first one, and the
/// operation's result is then `poison`; [`FnCx::kiln_math`] returns it.
struct Ir<'x, 'ctx> {
    cx: &'ctx Context,
    b: &'x Builder<'ctx>,
    module: &'x Module<'ctx>,
    err: Option<BuilderError>,
}

impl<'ctx> Ir<'_, 'ctx> {
    fn ok<T>(&mut self, r: std::result::Result<T, BuilderError>, poison: T) -> T {
        r.unwrap_or_else(|e| {
            self.err.get_or_insert(e);
            poison
        })
    }
    fn f_poison(&self) -> FloatValue<'ctx> {
        self.cx.f64_type().get_poison()
    }
    fn i_poison(&self) -> IntValue<'ctx> {
        self.cx.i64_type().get_poison()
    }
    fn b_poison(&self) -> IntValue<'ctx> {
        self.cx.bool_type().get_poison()
    }

    /// The module's private constant copy of `table`.
    fn table(&self, table: &'static Table) -> inkwell::values::GlobalValue<'ctx> {
        if let Some(g) = self.module.get_global(table.name) {
            return g;
        }
        let f64t = self.cx.f64_type();
        let vals: Vec<FloatValue> = table.values.iter().map(|&v| f64t.const_float(v)).collect();
        let init = f64t.const_array(&vals);
        let g = self.module.add_global(init.get_type(), None, table.name);
        g.set_linkage(Linkage::Private);
        g.set_constant(true);
        g.set_unnamed_addr(true);
        g.set_initializer(&init);
        g
    }
}

impl<'ctx> Ops for Ir<'_, 'ctx> {
    type F = FloatValue<'ctx>;
    type S = FloatValue<'ctx>;
    type I = IntValue<'ctx>;
    type B = IntValue<'ctx>;

    fn fconst(&mut self, v: f64) -> Self::F {
        self.cx.f64_type().const_float(v)
    }
    fn iconst(&mut self, v: i64) -> Self::I {
        self.cx.i64_type().const_int(v as u64, true)
    }
    fn ext(&mut self, x: Self::S) -> Self::F {
        let r = self.b.build_float_ext(x, self.cx.f64_type(), "");
        self.ok(r, self.f_poison())
    }
    fn trunc(&mut self, x: Self::F) -> Self::S {
        let r = self.b.build_float_trunc(x, self.cx.f32_type(), "");
        self.ok(r, self.cx.f32_type().get_poison())
    }
    fn fop(&mut self, op: FOp, a: Self::F, b: Self::F) -> Self::F {
        let r = match op {
            FOp::Add => self.b.build_float_add(a, b, ""),
            FOp::Sub => self.b.build_float_sub(a, b, ""),
            FOp::Mul => self.b.build_float_mul(a, b, ""),
            FOp::Div => self.b.build_float_div(a, b, ""),
        };
        self.ok(r, self.f_poison())
    }
    fn iop(&mut self, op: IOp, a: Self::I, b: Self::I) -> Self::I {
        let r = match op {
            IOp::Add => self.b.build_int_add(a, b, ""),
            IOp::Sub => self.b.build_int_sub(a, b, ""),
            IOp::And => self.b.build_and(a, b, ""),
            IOp::Or => self.b.build_or(a, b, ""),
            IOp::Xor => self.b.build_xor(a, b, ""),
            IOp::Shl => self.b.build_left_shift(a, b, ""),
            IOp::Shr => self.b.build_right_shift(a, b, false, ""),
        };
        self.ok(r, self.i_poison())
    }
    fn fcmp(&mut self, op: Cmp, a: Self::F, b: Self::F) -> Self::B {
        let p = match op {
            Cmp::Lt => FloatPredicate::OLT,
            Cmp::Gt => FloatPredicate::OGT,
            Cmp::Eq => FloatPredicate::OEQ,
        };
        let r = self.b.build_float_compare(p, a, b, "");
        self.ok(r, self.b_poison())
    }
    fn icmp(&mut self, op: Cmp, a: Self::I, b: Self::I) -> Self::B {
        let p = match op {
            Cmp::Lt => IntPredicate::SLT,
            Cmp::Gt => IntPredicate::SGT,
            Cmp::Eq => IntPredicate::EQ,
        };
        let r = self.b.build_int_compare(p, a, b, "");
        self.ok(r, self.b_poison())
    }
    fn bits(&mut self, a: Self::F) -> Self::I {
        let r = self.b.build_bit_cast(a, self.cx.i64_type(), "").map(|v| v.into_int_value());
        self.ok(r, self.i_poison())
    }
    fn float_of_bits(&mut self, a: Self::I) -> Self::F {
        let r = self.b.build_bit_cast(a, self.cx.f64_type(), "").map(|v| v.into_float_value());
        self.ok(r, self.f_poison())
    }
    fn fselect(&mut self, c: Self::B, a: Self::F, b: Self::F) -> Self::F {
        let r = self.b.build_select(c, a, b, "").map(|v| v.into_float_value());
        self.ok(r, self.f_poison())
    }
    fn iselect(&mut self, c: Self::B, a: Self::I, b: Self::I) -> Self::I {
        let r = self.b.build_select(c, a, b, "").map(|v| v.into_int_value());
        self.ok(r, self.i_poison())
    }
    fn load(&mut self, table: &'static Table, idx: Self::I) -> Self::F {
        let g = self.table(table);
        let f64t = self.cx.f64_type();
        // SAFETY: `inbounds` holds: the algorithm's indices are within the table.
        let p = unsafe { self.b.build_in_bounds_gep(f64t, g.as_pointer_value(), &[idx], "") };
        let p = self.ok(p, self.cx.ptr_type(Default::default()).get_poison());
        let r = self.b.build_load(f64t, p, "").map(|v| v.into_float_value());
        self.ok(r, self.f_poison())
    }
}
