//! `print`: the call of the runtime's printer (`abi::kiln_rt_print`) with
//! the statement's number and its values' bits.
//!
//! Owns: the printer's declaration and the lowering of one `print` (its
//! values widened to 64-bit bits in an array of the function's prologue).
//!
//! Must never: format text in compiled code (the launch's caller does,
//! from the records: `jit::runtime`), or let a `print` change what the
//! code computes.

use super::{fx_int_ty, FnCx, Lowering, Result};
use inkwell::attributes::AttributeLoc;
use inkwell::module::Linkage;
use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FunctionValue, IntValue};
use inkwell::AddressSpace;
use kiln::ir::{Value, MAX_PRINT_VALUES};
use kiln_llvm::abi::PRINTER;

impl<'a, 'ctx> Lowering<'a, 'ctx> {
    /// The runtime's printer ([`PRINTER`]), declared: a function that
    /// returns and never unwinds.
    pub(super) fn print_fn(&mut self) -> FunctionValue<'ctx> {
        if let Some(f) = self.module.get_function(PRINTER) {
            return f;
        }
        let cx = self.cx;
        let ptr = cx.ptr_type(AddressSpace::default());
        let i32t = cx.i32_type();
        // (context, statement, count, the values' bits in memory).
        let params: Vec<BasicMetadataTypeEnum> = vec![ptr.into(), i32t.into(), i32t.into(), ptr.into()];
        let f = self.module.add_function(PRINTER, cx.void_type().fn_type(&params, false), Some(Linkage::External));
        for attr in ["nounwind", "willreturn", "norecurse"] {
            f.add_attribute(AttributeLoc::Function, self.enum_attr(attr));
        }
        f
    }
}

impl<'a, 'ctx> FnCx<'a, 'ctx> {
    /// A value's bits, zero-extended to an `i64` (a float's bit pattern).
    pub(super) fn value_bits(&mut self, a: Value) -> Result<IntValue<'ctx>> {
        let i64t = self.cx.i64_type();
        let int = match self.val(a)? {
            BasicValueEnum::FloatValue(f) => {
                let width = fx_int_ty(self.cx, self.scalar(a)?);
                self.b.build_bit_cast(f, width, "")?.into_int_value()
            }
            other => other.into_int_value(),
        };
        Ok(self.b.build_int_z_extend_or_bit_cast(int, i64t, "")?)
    }

    /// `print pieces...`: the values' bits stored in the function's print
    /// array, then the printer called with the statement's number.
    pub(super) fn print_stmt(&mut self, l: &mut Lowering<'a, 'ctx>, values: &[Value]) -> Result<()> {
        let i64t = self.cx.i64_type();
        let array = match self.print_values {
            Some(a) => a,
            None => *self
                .print_values
                .insert(self.pb.build_alloca(i64t.array_type(MAX_PRINT_VALUES as u32), "print.values")?),
        };
        // The verifier bounds the count; a longer list (unverified input)
        // passes its first MAX_PRINT_VALUES.
        let values = &values[..values.len().min(MAX_PRINT_VALUES)];
        for (k, &v) in values.iter().enumerate() {
            let bits = self.value_bits(v)?;
            // SAFETY: `k` < MAX_PRINT_VALUES, the array's length.
            let at = unsafe { self.b.build_in_bounds_gep(i64t, array, &[i64t.const_int(k as u64, false)], "") }?;
            self.b.build_store(at, bits)?;
        }
        let i32t = self.cx.i32_type();
        let args: [BasicMetadataValueEnum; 4] = [
            self.ctx.into(),
            i32t.const_int(self.cur_stmt as u64, false).into(),
            i32t.const_int(values.len() as u64, false).into(),
            array.into(),
        ];
        let f = l.print_fn();
        self.b.build_call(f, &args, "")?;
        Ok(())
    }
}
