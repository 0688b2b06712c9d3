//! LLVM within bounds: what Kiln does so that LLVM's compile time grows
//! with a task's size, not with a power of it (issue 29,
//! `docs/performance.md`, "LLVM within bounds").
//!
//! Owns: the LLVM options every in-process code generator runs with
//! ([`LLVM_OPTIONS`], set once per process by [`set_llvm_options`]), and
//! the SCEV barrier ([`bound_add_trees`]): after the optimisation pipeline
//! and before code generation, a `freeze` after each integer sum of more
//! than [`MAX_SUM_LEAVES`] terms, which scalar evolution cannot see
//! through. Loop strength reduction, in the code generator's IR passes,
//! generates formulae for every way of regrouping the terms of the sums
//! an induction variable's users are made of: a loop adding 100 kernel
//! parameters took 35 s in LSR alone, and no LSR or SCEV option bounds
//! it in LLVM 22. The barrier leaves a sum's value unchanged (every
//! integer value of Kiln's lowering is well defined: `freeze` of a value
//! that is not poison is that value) and costs no machine instruction.
//!
//! Must never: change what compiled code computes, or apply an option to
//! some tasks and not others (LLVM's options are the process's).

use inkwell::llvm_sys;
use inkwell::module::Module;
use inkwell::values::{AsValueRef, InstructionOpcode, InstructionValue};
use std::collections::HashMap;
use std::ffi::CString;

/// LLVM's options for the code generator, as `llc` spells them. The
/// scheduling DAG's maps of memory operations are reduced past 100 nodes
/// (LLVM's default is 1000): a block of 5,000 stores, one per field,
/// spent 90% of 16 s in the two schedulers building dependences between
/// every pair of memory operations; with 100, 3.5 s in `llc`, and a task
/// of 64 KB (1,400 fields) compiles in 1.5 s in all. A block of fewer
/// than 100 memory operations (every loop of an ordinary kernel) is
/// scheduled as before.
pub const LLVM_OPTIONS: &[&str] = &["-dag-maps-huge-region=100"];

/// The most terms an integer sum may have before [`bound_add_trees`]
/// hides it from scalar evolution. LSR's time grows with about the cube
/// of the terms (50 parameters 2.6 s, 100 parameters 16 s in `llc`);
/// sums of ordinary index arithmetic have a handful.
pub const MAX_SUM_LEAVES: u32 = 16;

/// Sets [`LLVM_OPTIONS`] in LLVM's command-line registry (once per
/// process: the options are global). An option LLVM does not know is
/// ignored, not fatal (`LLVMParseCommandLineOptions` reports to nowhere).
pub fn set_llvm_options() {
    let args: Vec<CString> =
        std::iter::once("kiln").chain(LLVM_OPTIONS.iter().copied()).map(|a| CString::new(a).unwrap()).collect();
    let ptrs: Vec<*const std::os::raw::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    let overview = CString::new("kiln").unwrap();
    // SAFETY: `ptrs` holds `ptrs.len()` NUL-terminated strings that `args`
    // keeps alive for the call; `overview` likewise.
    unsafe { llvm_sys::support::LLVMParseCommandLineOptions(ptrs.len() as i32, ptrs.as_ptr(), overview.as_ptr()) };
}

/// Opcodes through which scalar evolution builds one sum of their
/// operands' terms (a cast of a sum is a sum of casts to it).
fn sums_terms(op: InstructionOpcode) -> bool {
    use InstructionOpcode::*;
    matches!(op, Add | Sub | Mul | Shl | Or | Trunc | ZExt | SExt)
}

/// Puts a `freeze` after every scalar integer instruction whose sum has
/// more than [`MAX_SUM_LEAVES`] terms (counted through [`sums_terms`]
/// opcodes, each other value one term), so that what scalar evolution
/// sees of any sum has at most that many. One pass over the module, in
/// block order: a term defined later (a loop's phi) counts as one.
/// Returns how many barriers it added.
pub fn bound_add_trees(module: &Module<'_>) -> usize {
    let mut added = 0;
    let builder = module.get_context().create_builder();
    for f in module.get_functions() {
        let mut terms: HashMap<llvm_sys::prelude::LLVMValueRef, u32> = HashMap::new();
        for bb in f.get_basic_block_iter() {
            let mut at = bb.get_first_instruction();
            while let Some(i) = at {
                at = i.get_next_instruction();
                if !sums_terms(i.get_opcode()) || !i.get_type().is_int_type() {
                    continue;
                }
                let n = (0..i.get_num_operands())
                    .filter_map(|k| i.get_operand(k).and_then(|o| o.value()))
                    .map(|v| terms.get(&v.as_value_ref()).copied().unwrap_or(1))
                    .fold(0u32, u32::saturating_add);
                if n <= MAX_SUM_LEAVES {
                    terms.insert(i.as_value_ref(), n);
                    continue;
                }
                freeze_after(&builder, i);
                added += 1;
            }
        }
    }
    added
}

/// `%f = freeze %i` right after `i`, every former use of `i` using `%f`.
fn freeze_after<'ctx>(builder: &inkwell::builder::Builder<'ctx>, i: InstructionValue<'ctx>) {
    match i.get_next_instruction() {
        Some(next) => builder.position_before(&next),
        None => return,
    }
    let name = CString::new("sum").unwrap();
    // SAFETY: `i` is an instruction of the module the builder's context
    // owns, and the builder is positioned inside its block.
    let f = unsafe { llvm_sys::core::LLVMBuildFreeze(builder.as_mut_ptr(), i.as_value_ref(), name.as_ptr()) };
    // SAFETY: `f` is the non-null freeze instruction just built.
    let f = unsafe { InstructionValue::new(f) };
    i.replace_all_uses_with(&f);
    // The freeze itself was one of the uses replaced.
    // SAFETY: `i` is an integer-typed instruction (the sums this pass
    // freezes), so it is an IntValue.
    f.set_operand(0, unsafe { inkwell::values::IntValue::new(i.as_value_ref()) });
}

#[cfg(test)]
mod tests {
    use super::*;
    use inkwell::context::Context;

    /// A chain of 39 adds of 40 arguments: a barrier each time a sum
    /// passes 16 terms (at 17 and again 16 adds after it), and the
    /// function's value is still the whole sum.
    #[test]
    fn long_sums_get_a_barrier_every_sixteen_terms() {
        let cx = Context::create();
        let m = cx.create_module("t");
        let i32t = cx.i32_type();
        let f = m.add_function("sum", i32t.fn_type(&vec![i32t.into(); 40], false), None);
        let b = cx.create_builder();
        b.position_at_end(cx.append_basic_block(f, "entry"));
        let mut acc = f.get_nth_param(0).unwrap().into_int_value();
        for k in 1..40 {
            acc = b.build_int_add(acc, f.get_nth_param(k).unwrap().into_int_value(), "s").unwrap();
        }
        b.build_return(Some(&acc)).unwrap();
        assert_eq!(bound_add_trees(&m), 2);
        m.verify().unwrap();
        let text = m.print_to_string().to_string();
        assert_eq!(text.matches(" = freeze i32 ").count(), 2, "{text}");
        // The return uses the last add, which follows the second barrier.
        assert!(text.contains("ret i32 %s38"), "{text}");
    }
}
