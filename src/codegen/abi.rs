//! The task ABI (`docs/runtime.md`): the context a task's entry receives
//! and the error slot its code writes, as the Rust types the runtime fills
//! and reads, and the member positions and byte offsets lowering uses,
//! derived from those types.
//!
//! Owns: [`TaskContext`], [`ErrorSlot`], [`EntryFn`], the LLVM type of the
//! context ([`context_type`]), its member positions (`CTX_*`, each checked
//! at compile time against `offset_of!`) and the error slot's offsets
//! (`ERR_*`, which are `offset_of!`).
//!
//! Must never: hold a layout fact that is not checked against the Rust
//! type it describes; change without the build identity changing (this
//! file is one of its inputs).

use crate::ir::MAX_RANK;
use inkwell::context::Context;
use inkwell::types::StructType;
use inkwell::AddressSpace;
use std::mem::{offset_of, size_of};
use std::sync::atomic::AtomicU32;

/// A task's entry: `void kiln_task(const TaskContext *)`.
pub type EntryFn = unsafe extern "C" fn(*const TaskContext);

/// What a task entry receives.
#[repr(C)]
#[derive(Debug)]
pub struct TaskContext {
    /// Base pointers of the fields, in the order of `LaunchMeta::fields`.
    pub fields: *const *mut u8,
    /// The task's parameters as 64-bit slots, in the order of
    /// `LaunchMeta::params`.
    pub params: *const u64,
    pub error: *mut ErrorSlot,
    /// The chunk of linear iterations to run, `[begin, end)` (parallel
    /// tasks; a serial task ignores them).
    pub begin: i64,
    pub end: i64,
}

/// Where compiled code reports the first run-time error of a launch.
#[repr(C)]
#[derive(Debug, Default)]
pub struct ErrorSlot {
    /// 0: no error; 1: an error was recorded (the first wins, by a
    /// compare-and-swap from 0 to 1).
    pub state: AtomicU32,
    /// The field's position in `LaunchMeta::fields`.
    pub field: u32,
    /// How many of `index` are set.
    pub rank: u32,
    /// The statement that failed, by its number in the object
    /// (`codegen::sites`).
    pub stmt: u32,
    pub index: [i64; MAX_RANK],
}

/// Positions of the members of [`TaskContext`] in [`context_type`].
pub const CTX_FIELDS: u32 = 0;
pub const CTX_PARAMS: u32 = 1;
pub const CTX_ERROR: u32 = 2;
pub const CTX_BEGIN: u32 = 3;
pub const CTX_END: u32 = 4;

/// Every member of the context is 8 bytes and 8-aligned (a pointer or an
/// `i64` on the 64-bit targets Kiln compiles for), so member `k` of
/// [`context_type`] is at `8 * k`: checked here against the Rust type.
const _: () = {
    const fn at(k: u32) -> usize {
        8 * k as usize
    }
    assert!(size_of::<*const u8>() == 8);
    assert!(offset_of!(TaskContext, fields) == at(CTX_FIELDS));
    assert!(offset_of!(TaskContext, params) == at(CTX_PARAMS));
    assert!(offset_of!(TaskContext, error) == at(CTX_ERROR));
    assert!(offset_of!(TaskContext, begin) == at(CTX_BEGIN));
    assert!(offset_of!(TaskContext, end) == at(CTX_END));
    assert!(size_of::<TaskContext>() == at(CTX_END + 1));
};

/// Byte offsets in [`ErrorSlot`] that compiled code stores to.
pub const ERR_FIELD_OFFSET: u64 = offset_of!(ErrorSlot, field) as u64;
pub const ERR_RANK_OFFSET: u64 = offset_of!(ErrorSlot, rank) as u64;
pub const ERR_STMT_OFFSET: u64 = offset_of!(ErrorSlot, stmt) as u64;
pub const ERR_INDEX_OFFSET: u64 = offset_of!(ErrorSlot, index) as u64;

/// The LLVM type of [`TaskContext`]: `{ ptr, ptr, ptr, i64, i64 }`.
pub fn context_type(cx: &Context) -> StructType<'_> {
    let ptr = cx.ptr_type(AddressSpace::default());
    let i64t = cx.i64_type();
    cx.struct_type(&[ptr.into(), ptr.into(), ptr.into(), i64t.into(), i64t.into()], false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inkwell::targets::TargetData;

    /// LLVM lays the context type out as the Rust type is laid out, under
    /// the x86-64 data layout codegen compiles with.
    #[test]
    fn llvm_layout_matches_the_rust_types() {
        let cx = Context::create();
        let td = TargetData::create("e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128");
        let ty = context_type(&cx);
        let rust = [
            offset_of!(TaskContext, fields),
            offset_of!(TaskContext, params),
            offset_of!(TaskContext, error),
            offset_of!(TaskContext, begin),
            offset_of!(TaskContext, end),
        ];
        for (k, want) in [CTX_FIELDS, CTX_PARAMS, CTX_ERROR, CTX_BEGIN, CTX_END].into_iter().zip(rust) {
            assert_eq!(td.offset_of_element(&ty, k), Some(want as u64), "member {k}");
        }
        assert_eq!(td.get_abi_size(&ty), size_of::<TaskContext>() as u64);
        assert_eq!(ERR_INDEX_OFFSET, 16);
    }
}
