// One code generator's pass pipeline kept for many modules, for what the
// C API lacks: LLVMTargetMachineEmitToMemoryBuffer builds the legacy pass
// manager of the whole back end again for every module it emits (about
// 2.3 M instructions, as much as the code generation of a small task;
// docs/performance.md, "Runs 29-31"). The pipeline is built once per
// target machine and file type, and run over one module after another, as
// `llc -compile-twice` runs one pipeline twice (the passes reset their
// per-module state in doInitialization/doFinalization). Called by
// crates/kiln-codegen/src/emitter.rs only.
#include "llvm-c/Core.h"
#include "llvm-c/TargetMachine.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>

namespace {
struct Emitter {
  llvm::TargetMachine *TM;
  llvm::SmallVector<char, 0> Buffer;
  llvm::raw_svector_ostream OS{Buffer};
  llvm::legacy::PassManager PM;
};
} // namespace

// The emitter of `tm`'s objects (assembly if `assembly`), or null if the
// target cannot emit that file type. `tm` must outlive it.
extern "C" void *kiln_emitter_create(LLVMTargetMachineRef tm, int assembly) {
  auto E = std::make_unique<Emitter>();
  E->TM = reinterpret_cast<llvm::TargetMachine *>(tm);
  auto Type = assembly ? llvm::CodeGenFileType::AssemblyFile : llvm::CodeGenFileType::ObjectFile;
  if (E->TM->addPassesToEmitFile(E->PM, E->OS, nullptr, Type))
    return nullptr;
  return E.release();
}

// Emits module `m` (its data layout set to the target machine's, as the C
// API does). The bytes stay valid until the emitter's next run.
extern "C" void kiln_emitter_run(void *e, LLVMModuleRef m, const char **data, size_t *len) {
  auto *E = static_cast<Emitter *>(e);
  auto *M = llvm::unwrap(m);
  M->setDataLayout(E->TM->createDataLayout());
  E->Buffer.clear();
  E->PM.run(*M);
  *data = E->Buffer.data();
  *len = E->Buffer.size();
}

extern "C" void kiln_emitter_dispose(void *e) { delete static_cast<Emitter *>(e); }
