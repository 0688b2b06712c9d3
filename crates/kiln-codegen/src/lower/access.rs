//! Field accesses: the address of an element behind its bounds check,
//! loads, stores and atomics, and the call of the runtime's reporter
//! (`abi::kiln_rt_oob`) a failed check makes.
//!
//! Owns: the bounds check of one access (the indices against the field's
//! shape, the reporter's declaration and its arguments), the
//! element's memory form (`i1` as a byte) and the alias facts an access
//! carries (`alias.scope`/`noalias`: distinct fields never overlap).
//!
//! Must never: leave an access unchecked unless bounds checks are off or
//! the enclosing loop's pre-loop test proved it (`FnCx::proven`); tell LLVM
//! that two accesses of the same field do not alias.

use super::{bug, fx_int_ty, FnCx, Lowering, Result, MAX_RANK};
use crate::CodegenError;
use inkwell::attributes::AttributeLoc;
use inkwell::llvm_sys;
use inkwell::module::Linkage;
use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::{
    AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, FloatValue, FunctionValue, InstructionValue,
    IntValue, MetadataValue, PointerValue,
};
use inkwell::{AddressSpace, AtomicOrdering, IntPredicate};
use kiln::ir::{AtomicOp, Scalar, Value};
use kiln_llvm::abi::{ASSERT_FIELD, OOB_REPORTER};

impl<'a, 'ctx> Lowering<'a, 'ctx> {
    /// The runtime's out-of-bounds reporter ([`OOB_REPORTER`]), declared:
    /// the first error claims the slot (compare-and-swap of its state),
    /// later ones are dropped (`abi::kiln_rt_oob`). Cold, and in LLVM's
    /// eyes a function that returns, unwinds never and frees nothing.
    pub(super) fn oob_fn(&mut self) -> Result<FunctionValue<'ctx>> {
        if let Some(f) = self.oob {
            return Ok(f);
        }
        let cx = self.cx;
        let ptr = cx.ptr_type(AddressSpace::default());
        let i32t = cx.i32_type();
        // (context, field, rank, statement, the rank indices in memory):
        // an index array rather than MAX_RANK arguments, since every call
        // site's argument set-up is compile time (cold compile) and most
        // accesses have one or two indices.
        let params: Vec<BasicMetadataTypeEnum> = vec![ptr.into(), i32t.into(), i32t.into(), i32t.into(), ptr.into()];
        let f = self.module.add_function(OOB_REPORTER, cx.void_type().fn_type(&params, false), Some(Linkage::External));
        for attr in ["cold", "nounwind", "nofree", "norecurse", "willreturn"] {
            f.add_attribute(AttributeLoc::Function, self.enum_attr(attr));
        }
        self.oob = Some(f);
        Ok(f)
    }

    /// The `alias.scope` and `noalias` lists of an access to the field at
    /// `pos`, or `None` when the object sees one field only. Fields are
    /// separate allocations (`docs/runtime.md`, "The context"), so accesses
    /// of distinct fields never alias. The fields' positions are written in
    /// binary, one scope domain per bit with a scope for each of its two
    /// values: an access is in the scopes of its position's bits and
    /// `noalias` with the other value of each bit, so two positions that
    /// differ in some bit are apart in that bit's domain, and the same
    /// position is apart in none. Two lists of `log2(fields)` scopes per
    /// field, where one scope per field would list every other field on
    /// every access: quadratic in a task of thousands of fields.
    fn alias_tags(&mut self, pos: u32) -> Option<(MetadataValue<'ctx>, MetadataValue<'ctx>)> {
        let n = self.fields.len();
        if n < 2 {
            return None;
        }
        if self.alias_tags.len() != n {
            self.alias_tags = vec![None; n];
        }
        if let Some(tags) = self.alias_tags[pos as usize] {
            return Some(tags);
        }
        let cx = self.cx;
        let bits = usize::BITS - (n - 1).leading_zeros();
        let (mut scopes, mut apart): (Vec<BasicMetadataValueEnum>, Vec<BasicMetadataValueEnum>) = (vec![], vec![]);
        for b in 0..bits {
            let domain = cx.metadata_node(&[cx.metadata_string(&format!("kiln.field.bit{b}")).into()]);
            let scope = |v: u32| {
                cx.metadata_node(&[cx.metadata_string(&format!("kiln.field.bit{b}={v}")).into(), domain.into()])
            };
            let v = (pos >> b) & 1;
            scopes.push(scope(v).into());
            apart.push(scope(1 - v).into());
        }
        let tags = (cx.metadata_node(&scopes), cx.metadata_node(&apart));
        self.alias_tags[pos as usize] = Some(tags);
        Some(tags)
    }

    /// Puts the alias facts of an access to the field at `pos` on `inst`.
    fn tag_access(&mut self, inst: InstructionValue<'ctx>, pos: u32) -> Result<()> {
        if let Some((scopes, apart)) = self.alias_tags(pos) {
            let md = |e| bug(format!("{e:?}"));
            inst.set_metadata(scopes, self.cx.get_kind_id("alias.scope")).map_err(md)?;
            inst.set_metadata(apart, self.cx.get_kind_id("noalias")).map_err(md)?;
        }
        Ok(())
    }
}

impl<'a, 'ctx> FnCx<'a, 'ctx> {
    /// `load @x[...]` (an `i1` element is a byte, compared with zero).
    pub(super) fn load(&mut self, l: &mut Lowering<'a, 'ctx>, r: &kiln::ir::FieldRef) -> Result<BasicValueEnum<'ctx>> {
        let (ptr, elem, pos) = self.address(l, r)?;
        let raw = self.b.build_load(l.mem_ty(elem), ptr, "")?;
        l.tag_access(raw.as_instruction_value().ok_or_else(|| bug("load is not an instruction"))?, pos)?;
        Ok(if elem == Scalar::I1 {
            let z = self.cx.i8_type().const_zero();
            self.b.build_int_compare(IntPredicate::NE, raw.into_int_value(), z, "")?.into()
        } else {
            raw
        })
    }

    /// `store @x[...], %v` (an `i1` is stored as a byte 0 or 1).
    pub(super) fn store(&mut self, l: &mut Lowering<'a, 'ctx>, r: &kiln::ir::FieldRef, v: Value) -> Result<()> {
        let (ptr, elem, pos) = self.address(l, r)?;
        let mut val = self.val(v)?;
        if elem == Scalar::I1 {
            val = self.b.build_int_z_extend(val.into_int_value(), self.cx.i8_type(), "")?.into();
        }
        let st = self.b.build_store(ptr, val)?;
        l.tag_access(st, pos)
    }

    /// `atomic OP @x[...], %v`: an `atomicrmw`, or a compare-and-swap loop
    /// for float `min`/`max`; returns the old value.
    pub(super) fn atomic(
        &mut self,
        l: &mut Lowering<'a, 'ctx>,
        op: AtomicOp,
        r: &kiln::ir::FieldRef,
        v: Value,
    ) -> Result<BasicValueEnum<'ctx>> {
        let (ptr, elem, pos) = self.address(l, r)?;
        let val = self.val(v)?;
        use llvm_sys::LLVMAtomicRMWBinOp::*;
        let rmw = match (op, elem.is_float()) {
            (AtomicOp::Add, false) => LLVMAtomicRMWBinOpAdd,
            (AtomicOp::Min, false) if elem.is_unsigned() => LLVMAtomicRMWBinOpUMin,
            (AtomicOp::Max, false) if elem.is_unsigned() => LLVMAtomicRMWBinOpUMax,
            (AtomicOp::Min, false) => LLVMAtomicRMWBinOpMin,
            (AtomicOp::Max, false) => LLVMAtomicRMWBinOpMax,
            (AtomicOp::And, false) => LLVMAtomicRMWBinOpAnd,
            (AtomicOp::Or, false) => LLVMAtomicRMWBinOpOr,
            (AtomicOp::Xor, false) => LLVMAtomicRMWBinOpXor,
            (AtomicOp::Add, true) => LLVMAtomicRMWBinOpFAdd,
            // No atomicrmw has the minimumNumber semantics of the
            // `min`/`max` operators: a compare-and-swap loop.
            (AtomicOp::Min | AtomicOp::Max, true) => {
                return self.float_cas_loop(l, (ptr, pos), elem, val.into_float_value(), op == AtomicOp::Min);
            }
            (op, true) => return Err(CodegenError::new(format!("atomic {} on a float field", op.keyword()))),
        };
        if elem == Scalar::I1 {
            return Err(CodegenError::new(format!("atomic {} on an i1 field", op.keyword())));
        }
        // SAFETY: the builder is positioned in this function; `ptr` and
        // `val` are values of its module of the pointer and element types
        // the operation takes (inkwell has no atomicrmw for every op).
        let old = unsafe {
            llvm_sys::core::LLVMBuildAtomicRMW(
                self.b.as_mut_ptr(),
                rmw,
                ptr.as_value_ref(),
                val.as_value_ref(),
                llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic,
                0,
            )
        };
        // SAFETY: `old` is the non-null atomicrmw instruction just built,
        // a value of the element type.
        l.tag_access(unsafe { InstructionValue::new(old) }, pos)?;
        // SAFETY: as above.
        Ok(unsafe { BasicValueEnum::new(old) })
    }

    /// The address of a field element, after the bounds check (when on),
    /// its element type and the field's position.
    pub(super) fn address(
        &mut self,
        l: &mut Lowering<'a, 'ctx>,
        r: &kiln::ir::FieldRef,
    ) -> Result<(PointerValue<'ctx>, Scalar, u32)> {
        let pos = *l
            .field_pos
            .get(r.field.as_str())
            .ok_or_else(|| CodegenError::new(format!("unknown field @{}", r.field)))?;
        let f = l.fields[pos as usize];
        if r.indices.len() != f.shape.len() {
            return Err(CodegenError::new(format!(
                "@{} has rank {} but is indexed with {} indices",
                f.name,
                f.shape.len(),
                r.indices.len()
            )));
        }
        let i64t = self.cx.i64_type();
        let proven = self.cur.and_then(|s| self.proven.get(&s)).cloned();
        let mut idx = Vec::with_capacity(r.indices.len());
        for (d, &v) in r.indices.iter().enumerate() {
            let t = self.scalar(v)?;
            idx.push(match &proven {
                Some(forms) => self.exact_index(&forms[d])?,
                None if !t.is_signed() => self.b.build_int_z_extend_or_bit_cast(self.ival(v)?, i64t, "")?,
                None => self.b.build_int_s_extend_or_bit_cast(self.ival(v)?, i64t, "")?,
            });
        }
        if l.bounds_checks && proven.is_none() {
            let mut ok: Option<IntValue> = None;
            for (d, &i) in idx.iter().enumerate() {
                let c = self.b.build_int_compare(IntPredicate::ULT, i, i64t.const_int(f.shape[d], false), "")?;
                ok = Some(match ok {
                    None => c,
                    Some(o) => self.b.build_and(o, c, "")?,
                });
            }
            if let Some(ok) = ok {
                let fail = self.cx.append_basic_block(self.func, "oob");
                let cont = self.cx.append_basic_block(self.func, "inbounds");
                let br = self.b.build_conditional_branch(ok, cont, fail)?;
                self.branch_weights(br, 1 << 20, 1)?;
                self.b.position_at_end(fail);
                self.report_failure(l, pos, &idx)?;
                self.b.position_at_end(cont);
            }
        }
        let mut lin = i64t.const_zero();
        for (d, &i) in idx.iter().enumerate() {
            lin = if d == 0 {
                i
            } else {
                let m = self.b.build_int_mul(lin, i64t.const_int(f.shape[d], false), "")?;
                self.b.build_int_add(m, i, "")?
            };
        }
        let base = self.base(l, pos)?;
        let ptr = if l.bounds_checks {
            // SAFETY: `lin` is within the field: the check above (or the
            // loop's proof) stops every index out of its shape.
            unsafe { self.b.build_in_bounds_gep(l.mem_ty(f.elem), base, &[lin], "") }?
        } else {
            // SAFETY: a plain GEP (no inbounds promise) is only arithmetic.
            unsafe { self.b.build_gep(l.mem_ty(f.elem), base, &[lin], "") }?
        };
        Ok((ptr, f.elem, pos))
    }

    /// `assert %c, "...", args`: when `%c` is false, the reporter's call
    /// with [`ASSERT_FIELD`] for the field, the statement, and the
    /// arguments' bits (zero-extended to 64) for the indices (the message
    /// is formatted from them after the launch), then the way out.
    pub(super) fn assert_stmt(&mut self, l: &mut Lowering<'a, 'ctx>, cond: Value, args: &[Value]) -> Result<()> {
        let bits = args.iter().map(|&a| self.value_bits(a)).collect::<Result<Vec<_>>>()?;
        let ok = self.ival(cond)?;
        let fail = self.cx.append_basic_block(self.func, "assert.fail");
        let cont = self.cx.append_basic_block(self.func, "assert.ok");
        let br = self.b.build_conditional_branch(ok, cont, fail)?;
        self.branch_weights(br, 1 << 20, 1)?;
        self.b.position_at_end(fail);
        self.report_failure(l, ASSERT_FIELD, &bits)?;
        self.b.position_at_end(cont);
        Ok(())
    }

    /// In the block of a failed check: the call of the reporter with the
    /// field (an access's, or [`ASSERT_FIELD`] for an assert), the
    /// statement and the values (an access's indices, an assert's values:
    /// written to the function's index array), then the way out of the
    /// function.
    fn report_failure(&mut self, l: &mut Lowering<'a, 'ctx>, pos: u32, idx: &[IntValue<'ctx>]) -> Result<()> {
        let i64t = self.cx.i64_type();
        let array = match self.oob_index {
            Some(a) => a,
            None => *self.oob_index.insert(self.pb.build_alloca(i64t.array_type(MAX_RANK as u32), "oob.index")?),
        };
        for (k, &i) in idx.iter().enumerate() {
            // SAFETY: `k` < MAX_RANK, the array's length.
            let at = unsafe { self.b.build_in_bounds_gep(i64t, array, &[i64t.const_int(k as u64, false)], "") }?;
            self.b.build_store(at, i)?;
        }
        let i32t = self.cx.i32_type();
        let args: [BasicMetadataValueEnum; 5] = [
            self.ctx.into(),
            i32t.const_int(pos as u64, false).into(),
            i32t.const_int(idx.len() as u64, false).into(),
            i32t.const_int(self.cur_stmt as u64, false).into(),
            array.into(),
        ];
        let oob = l.oob_fn()?;
        self.b.build_call(oob, &args, "")?;
        let abort = self.abort_block(l)?;
        self.b.build_unconditional_branch(abort)?;
        Ok(())
    }

    pub(super) fn branch_weights(&self, br: InstructionValue<'ctx>, taken: u32, not_taken: u32) -> Result<()> {
        let i32t = self.cx.i32_type();
        let md = self.cx.metadata_node(&[
            self.cx.metadata_string("branch_weights").into(),
            i32t.const_int(taken as u64, false).into(),
            i32t.const_int(not_taken as u64, false).into(),
        ]);
        let kind = self.cx.get_kind_id("prof");
        br.set_metadata(md, kind).map_err(|e| bug(format!("{e:?}")))
    }

    /// `old = *ptr; *ptr = min(old, v)` (or `max`) atomically, as a
    /// compare-and-swap loop on the bits; returns `old`. `ptr` is an
    /// element of the field at `pos`.
    pub(super) fn float_cas_loop(
        &mut self,
        l: &mut Lowering<'a, 'ctx>,
        (ptr, pos): (PointerValue<'ctx>, u32),
        elem: Scalar,
        v: FloatValue<'ctx>,
        min: bool,
    ) -> Result<BasicValueEnum<'ctx>> {
        let ity = fx_int_ty(self.cx, elem);
        let fty = l.reg_ty(elem);
        let pre = self.b.get_insert_block().ok_or_else(|| bug("no insert block"))?;
        let first = self.b.build_load(ity, ptr, "cas.first")?;
        let first_i = first.as_instruction_value().ok_or_else(|| bug("load is not an instruction"))?;
        first_i.set_atomic_ordering(AtomicOrdering::Monotonic).map_err(|e| bug(format!("{e:?}")))?;
        first_i.set_alignment(elem.size_bytes() as u32).map_err(|e| bug(format!("{e:?}")))?;
        l.tag_access(first_i, pos)?;
        let head = self.cx.append_basic_block(self.func, "cas.loop");
        let done = self.cx.append_basic_block(self.func, "cas.done");
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(head);
        let phi = self.b.build_phi(ity, "cas.old")?;
        let old = phi.as_basic_value().into_int_value();
        let oldf = self.b.build_bit_cast(old, fty, "")?;
        let newf = self.float_min_max(l, min, elem, oldf.into_float_value(), v)?;
        let new = self.b.build_bit_cast(newf, ity, "")?.into_int_value();
        let pair = self.b.build_cmpxchg(ptr, old, new, AtomicOrdering::Monotonic, AtomicOrdering::Monotonic)?;
        l.tag_access(pair.as_instruction_value().ok_or_else(|| bug("cmpxchg is not an instruction"))?, pos)?;
        let seen = self.b.build_extract_value(pair, 0, "")?.into_int_value();
        let ok = self.b.build_extract_value(pair, 1, "")?.into_int_value();
        self.b.build_conditional_branch(ok, done, head)?;
        phi.add_incoming(&[(&first.into_int_value(), pre), (&seen, head)]);
        self.b.position_at_end(done);
        Ok(self.b.build_bit_cast(old, fty, "")?)
    }
}
