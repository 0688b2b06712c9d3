// The JIT's ORC session without LLJIT: an ExecutionSession over this
// process, and JITLink's object linking layer with .eh_frame
// registration and a slab memory manager. LLJIT would also make two target machines (for its data
// layout and its IR compile layer) that loading objects never uses. Kiln
// adds only objects, so nothing here registers or needs a target or the
// code generator; the rest of `jit` drives the session through LLVM's C
// API. Called by crates/kiln-jit/src/lib.rs only.
#include "llvm-c/Error.h"
#include "llvm-c/Orc.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/EHFrameRegistrationPlugin.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/MapperJITLinkMemoryManager.h"
#include "llvm/ExecutionEngine/Orc/MemoryMapper.h"
#include "llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/Orc/SelfExecutorProcessControl.h"
#include "llvm/ExecutionEngine/Orc/TaskDispatch.h"
#include "llvm/Support/Error.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <memory>

using namespace llvm;
using namespace llvm::orc;

namespace {
struct Session {
  std::unique_ptr<ExecutionSession> ES;
  std::unique_ptr<ObjectLinkingLayer> Layer;
  // The process's symbols (libm, the runtime), materialised once here and
  // found from every task's dylib through its link order. A generator in
  // each dylib would define them again in each, and leave ORC's
  // WaitingOnGraph (LLVM 22) one emptied row per dylib that every later
  // emit walks: a load of N dylibs then cost N^2.
  JITDylib *Process = nullptr;
};
} // namespace

// The prefix the host's object format gives C symbols ('_' on Mach-O,
// none on ELF), as LLJIT's data layout would say.
extern "C" char kiln_orc_global_prefix(void) {
  return Triple(sys::getProcessTriple()).isOSBinFormatMachO() ? '_' : '\0';
}

// A session with its object layer; null and *error set on failure.
extern "C" void *kiln_orc_create(LLVMErrorRef *error) {
  *error = nullptr;
  // Materialisation runs on the thread that asks for it, as in an LLJIT
  // without compile threads: ORC's default would start a thread for every
  // object it links.
  auto EPC = SelfExecutorProcessControl::Create(nullptr, std::make_unique<InPlaceTaskDispatcher>());
  if (!EPC) {
    *error = wrap(EPC.takeError());
    return nullptr;
  }
  auto S = std::make_unique<Session>();
  S->ES = std::make_unique<ExecutionSession>(std::move(*EPC));
  // The objects' memory is carved from slabs reserved 1 MiB at a time,
  // not mapped object by object as the default manager does: a warm run
  // loads every task of a kernel, and a mapping each cost it about 8 us a
  // task (docs/performance.md, "Warm start"). Each object's segments still
  // get their own pages and protections.
  auto MM = MapperJITLinkMemoryManager::CreateWithMapper<InProcessMemoryMapper>(1 << 20);
  if (!MM) {
    *error = wrap(MM.takeError());
    consumeError(S->ES->endSession());
    return nullptr;
  }
  S->Layer = std::make_unique<ObjectLinkingLayer>(*S->ES, std::move(*MM));
  auto EH = EHFrameRegistrationPlugin::Create(*S->ES);
  if (!EH) {
    *error = wrap(EH.takeError());
    // The plugin error is the one to report; ending an empty session
    // has nothing to add.
    consumeError(S->ES->endSession());
    return nullptr;
  }
  S->Layer->addPlugin(std::move(*EH));
  auto G = DynamicLibrarySearchGenerator::GetForCurrentProcess(kiln_orc_global_prefix());
  if (!G) {
    *error = wrap(G.takeError());
    consumeError(S->ES->endSession());
    return nullptr;
  }
  S->Process = &S->ES->createBareJITDylib("kiln-process");
  S->Process->addGenerator(std::move(*G));
  return S.release();
}

extern "C" LLVMOrcExecutionSessionRef kiln_orc_session(void *s) {
  return reinterpret_cast<LLVMOrcExecutionSessionRef>(static_cast<Session *>(s)->ES.get());
}

extern "C" LLVMOrcJITDylibRef kiln_orc_process_dylib(void *s) {
  return reinterpret_cast<LLVMOrcJITDylibRef>(static_cast<Session *>(s)->Process);
}

extern "C" LLVMOrcObjectLayerRef kiln_orc_object_layer(void *s) {
  ObjectLayer *L = static_cast<Session *>(s)->Layer.get();
  return reinterpret_cast<LLVMOrcObjectLayerRef>(L);
}

// Ends the session (every dylib's memory released) and frees it; what
// ending reported, or null.
extern "C" LLVMErrorRef kiln_orc_dispose(void *s) {
  std::unique_ptr<Session> S(static_cast<Session *>(s));
  Error E = S->ES->endSession();
  S->Layer.reset();
  S->ES.reset();
  return wrap(std::move(E));
}

// Appends Dep to JD's link order: the symbols JD's objects leave undefined
// are then also looked for in Dep (a function record's dylib), after JD
// itself. The C API has no call for it.
extern "C" void kiln_orc_link_after(LLVMOrcJITDylibRef JD, LLVMOrcJITDylibRef Dep) {
  auto *J = reinterpret_cast<JITDylib *>(JD);
  J->addToLinkOrder(*reinterpret_cast<JITDylib *>(Dep), JITDylibLookupFlags::MatchAllSymbols);
}
