//! A thread's target machine with its code generator's pass pipelines,
//! built once and run over every module the thread emits
//! (`crates/kiln-codegen/src/emitter.cpp`): LLVM's C API builds the pipeline of the
//! whole back end again for each module, which cost about 7% of a cold
//! compile (`docs/performance.md`, "Runs 29–31").
//!
//! Owns: [`Machine`] (a target machine and its emitters, one per output
//! kind, made when first asked for) and the emitted bytes' copy out of
//! the pipeline's buffer.
//!
//! Must never: let an emitter outlive the target machine its passes point
//! to (a [`Machine`] drops its emitters first), or be used by two threads
//! at once (a [`Machine`] is a thread's own, and not `Send`).

use inkwell::module::Module;
use inkwell::targets::TargetMachine;
use kiln_llvm::CodegenError;
use std::ffi::{c_char, c_int, c_void};
use std::ptr::NonNull;

extern "C" {
    fn kiln_emitter_create(tm: inkwell::llvm_sys::target_machine::LLVMTargetMachineRef, assembly: c_int)
        -> *mut c_void;
    fn kiln_emitter_run(
        e: *mut c_void,
        m: inkwell::llvm_sys::prelude::LLVMModuleRef,
        data: *mut *const c_char,
        len: *mut usize,
    );
    fn kiln_emitter_dispose(e: *mut c_void);
}

/// What an emitter writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FileKind {
    Object = 0,
    Assembly = 1,
}

/// A pass pipeline that emits modules for one target machine.
struct Emitter(NonNull<c_void>);

impl Drop for Emitter {
    fn drop(&mut self) {
        // SAFETY: made by kiln_emitter_create and disposed of once, here,
        // before the target machine it refers to (field order of Machine).
        unsafe { kiln_emitter_dispose(self.0.as_ptr()) }
    }
}

/// A target machine and its emitters (dropped before it: fields drop in
/// declaration order).
pub(super) struct Machine {
    emitters: [Option<Emitter>; 2],
    tm: TargetMachine,
}

impl Machine {
    pub(super) fn new(tm: TargetMachine) -> Machine {
        Machine { emitters: [None, None], tm }
    }

    pub(super) fn tm(&self) -> &TargetMachine {
        &self.tm
    }

    /// Emits `module` (optimised, its triple this machine's) as `kind`.
    pub(super) fn emit(&mut self, module: &Module, kind: FileKind) -> Result<Vec<u8>, CodegenError> {
        #[cfg(test)]
        if tests::FRESH.get() {
            return Ok(tests::fresh(&self.tm, module, kind));
        }
        let e = match &self.emitters[kind as usize] {
            Some(e) => e.0,
            None => {
                // SAFETY: `tm` is a live target machine this Machine owns and
                // drops after its emitters; `kind` is a FileKind the shim takes.
                let e = unsafe { kiln_emitter_create(self.tm.as_mut_ptr(), kind as c_int) };
                let e = NonNull::new(e).ok_or_else(|| {
                    CodegenError::new(format!("LLVM code generation failed: the target cannot emit {kind:?} files"))
                })?;
                self.emitters[kind as usize].insert(Emitter(e)).0
            }
        };
        let (mut data, mut len) = (std::ptr::null(), 0usize);
        // SAFETY: `e` is this machine's live emitter; `module` is a live
        // module of this machine's triple; the out-parameters are valid.
        unsafe { kiln_emitter_run(e.as_ptr(), module.as_mut_ptr(), &mut data, &mut len) };
        if data.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: the emitter's `len` bytes at `data` stay valid until its
        // next run, and are copied out at once.
        Ok(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Compiler, Emit};
    use kiln::config::CompileConfig;
    use std::cell::Cell;

    thread_local! {
        /// Emit through a pipeline built for the one module, as LLVM's C
        /// API does.
        pub(super) static FRESH: Cell<bool> = const { Cell::new(false) };
    }

    pub(super) fn fresh(tm: &TargetMachine, module: &Module, kind: FileKind) -> Vec<u8> {
        let ft = match kind {
            FileKind::Object => inkwell::targets::FileType::Object,
            FileKind::Assembly => inkwell::targets::FileType::Assembly,
        };
        tm.write_to_memory_buffer(module, ft).unwrap().as_slice().to_vec()
    }

    /// Every task of the sample kernels of `testdata/` (parallel and serial, versioned
    /// loops with their checked copies, math, atomics, functions), emitted
    /// by one thread's reused pipelines, in two orders, is byte for byte
    /// what a pipeline built for each module emits: no state of one module
    /// reaches the next.
    #[test]
    fn a_reused_pipeline_emits_what_a_fresh_one_does() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata");
        let c = Compiler::host(CompileConfig::default()).unwrap();
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "kir"))
            .collect();
        files.sort();
        let mut streams = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let mut s = kiln::parser::parse(&text).unwrap();
            kiln::verifier::verify(&s).unwrap();
            kiln::passes::run_passes(&kiln::passes::default_pipeline(), &mut s).unwrap();
            streams.push(s);
        }
        // The split streams' per-task modules.
        let modules: Vec<&kiln::ir::Module> =
            streams.iter().flat_map(|s| &s.modules).filter(|m| m.tasks().count() == 1).collect();
        assert!(modules.len() >= 30, "{} tasks", modules.len());
        for emit in [Emit::Object, Emit::Assembly] {
            let all = |order: &mut dyn Iterator<Item = &&kiln::ir::Module>| {
                order.map(|m| c.emit_task(m, emit).unwrap().0).collect::<Vec<_>>()
            };
            FRESH.set(true);
            let want = all(&mut modules.iter());
            FRESH.set(false);
            assert!(want.iter().all(|o| !o.is_empty()));
            assert!(all(&mut modules.iter()) == want, "{emit:?}: reused in order");
            let mut back = all(&mut modules.iter().rev());
            back.reverse();
            assert!(back == want, "{emit:?}: reused in reverse order");
        }
    }
}
