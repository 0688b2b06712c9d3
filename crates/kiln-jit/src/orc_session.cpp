// The JIT's ORC session without LLJIT: an ExecutionSession over this
// process, and JITLink's object linking layer with .eh_frame
// registration and a slab memory manager. LLJIT would also make two target machines (for its data
// layout and its IR compile layer) that loading objects never uses. Kiln
// adds only objects, so nothing here registers or needs a target or the
// code generator. The session is driven through the calls below, with the
// C API's handle types (llvm-c/Orc.h) but not its functions: LLVM's C
// bindings of ORC are one archive member with LLJIT's, which would pull
// LLJIT, its target machines and through them most of LLVM's analyses
// into a static link, with their static constructors, which every
// process runs at its start (docs/performance.md, "Warm start"). Called
// by crates/kiln-jit/src/lib.rs only.
#include "llvm-c/Error.h"
#include "llvm-c/Orc.h"
#include "llvm/ExecutionEngine/JITLink/COFF.h"
#include "llvm/ExecutionEngine/JITLink/ELF.h"
#include "llvm/ExecutionEngine/JITLink/MachO.h"
#include "llvm/ExecutionEngine/JITLink/XCOFF.h"
#include "llvm/ExecutionEngine/Orc/AbsoluteSymbols.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/EHFrameRegistrationPlugin.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/MapperJITLinkMemoryManager.h"
#include "llvm/ExecutionEngine/Orc/MemoryMapper.h"
#include "llvm/ExecutionEngine/Orc/ObjectFileInterface.h"
#include "llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/Orc/SelfExecutorProcessControl.h"
#include "llvm/ExecutionEngine/Orc/TaskDispatch.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <dlfcn.h>
#include <memory>
#include <string>
#include <vector>

using namespace llvm;
using namespace llvm::orc;

#ifdef KILN_STATIC_LLVM
// kiln-run adds objects only, never IR modules, so ORC's IR layers are
// never used; but they share their archive member (Layer.cpp) with the
// object layer, and two of their calls out of it, into
// ThreadSafeModule.cpp (a module cloned into a new context) and
// ExecutionUtils.cpp (whether a global is a static initialiser), would
// pull LLVM's module cloning, IR parsers and object readers into a static
// link and, through them, most of its transforms and analyses, with their
// static constructors, which every process runs at its start
// (docs/performance.md, "Warm start"). Defined here, the calls are
// resolved without them; a later LLVM whose link needs those members for
// other symbols too fails to link here, loudly. Reaching either would be
// a bug in this file.
ThreadSafeModule llvm::orc::cloneToNewContext(const ThreadSafeModule &, GVPredicate, GVModifier) {
  report_fatal_error("kiln: ORC's IR layers are not linked into this program");
}

bool llvm::orc::StaticInitGVIterator::isStaticInitGlobal(GlobalValue &) {
  report_fatal_error("kiln: ORC's IR layers are not linked into this program");
}

// JITLink reads an object by its format; Kiln's objects are the host's
// x86-64 ELF (docs/runtime.md, "Target"). The readers of the other formats would
// pull LLVM's whole object-file layer, with its IR and bitcode readers,
// into a static link. An object of another format (a damaged record, say)
// is an error here, as any object that cannot be linked is.
static Error foreignObject(const char *Kind) {
  return make_error<StringError>(std::string("a ") + Kind + " object: Kiln links x86-64 ELF objects only",
                                 inconvertibleErrorCode());
}

Expected<std::unique_ptr<jitlink::LinkGraph>>
llvm::jitlink::createLinkGraphFromMachOObject(MemoryBufferRef, std::shared_ptr<SymbolStringPool>) {
  return foreignObject("Mach-O");
}

Expected<std::unique_ptr<jitlink::LinkGraph>>
llvm::jitlink::createLinkGraphFromCOFFObject(MemoryBufferRef, std::shared_ptr<SymbolStringPool>) {
  return foreignObject("COFF");
}

Expected<std::unique_ptr<jitlink::LinkGraph>>
llvm::jitlink::createLinkGraphFromXCOFFObject(MemoryBufferRef, std::shared_ptr<SymbolStringPool>) {
  return foreignObject("XCOFF");
}

void llvm::jitlink::link_MachO(std::unique_ptr<jitlink::LinkGraph>, std::unique_ptr<jitlink::JITLinkContext> Ctx) {
  Ctx->notifyFailed(foreignObject("Mach-O"));
}

void llvm::jitlink::link_COFF(std::unique_ptr<jitlink::LinkGraph>, std::unique_ptr<jitlink::JITLinkContext> Ctx) {
  Ctx->notifyFailed(foreignObject("COFF"));
}

void llvm::jitlink::link_XCOFF(std::unique_ptr<jitlink::LinkGraph>, std::unique_ptr<jitlink::JITLinkContext> Ctx) {
  Ctx->notifyFailed(foreignObject("XCOFF"));
}

// Objects are added as JITLink graphs (kiln_orc_add_object), whose symbols
// say what each defines: the object layer's own reading of an object's
// symbols for that, a second parse of it with LLVM's object-file readers,
// is never used, nor the IR layer's symbol flags. Layer.cpp's calls of
// them would pull their members into the link (the reader of symbols, and
// RuntimeDyld, the JIT linker before JITLink).
Expected<MaterializationUnit::Interface> llvm::orc::getObjectFileInterface(ExecutionSession &, MemoryBufferRef) {
  report_fatal_error("kiln: LLVM's object-file readers are not linked into this program");
}

JITSymbolFlags llvm::JITSymbolFlags::fromGlobalValue(const GlobalValue &) {
  report_fatal_error("kiln: ORC's IR layers are not linked into this program");
}
#endif

namespace {
// The symbols of this process (libm, libmvec once loaded, the C library)
// for the objects' undefined references, found as the dynamic loader
// finds them (dlsym over the global scope). ORC's own generator for
// this (DynamicLibrarySearchGenerator) shares its archive member with
// ORC's archive and IR loading utilities, which would pull LLVM's IR
// parsers and object readers into a static link, with their static
// constructors (docs/performance.md, "Warm start").
class ProcessSymbols : public DefinitionGenerator {
public:
  explicit ProcessSymbols(char Prefix) : Prefix(Prefix) {}

  Error tryToGenerate(LookupState &, LookupKind, JITDylib &JD, JITDylibLookupFlags,
                      const SymbolLookupSet &Symbols) override {
    SymbolMap Found;
    for (const auto &[Name, Flags] : Symbols) {
      StringRef N = *Name;
      if (Prefix && !N.consume_front(StringRef(&Prefix, 1)))
        continue;
      std::string C = N.str();
      if (void *Address = dlsym(RTLD_DEFAULT, C.c_str()))
        Found[Name] = ExecutorSymbolDef(ExecutorAddr::fromPtr(Address), JITSymbolFlags::Exported);
    }
    if (Found.empty())
      return Error::success();
    return JD.define(absoluteSymbols(std::move(Found)));
  }

private:
  char Prefix;
};

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
  S->Process = &S->ES->createBareJITDylib("kiln-process");
  S->Process->addGenerator(std::make_unique<ProcessSymbols>(kiln_orc_global_prefix()));
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

static ExecutionSession &unwrapES(LLVMOrcExecutionSessionRef ES) { return *reinterpret_cast<ExecutionSession *>(ES); }
static JITDylib &unwrapJD(LLVMOrcJITDylibRef JD) { return *reinterpret_cast<JITDylib *>(JD); }
static SymbolStringPoolEntryUnsafe::PoolEntry *unwrapName(LLVMOrcSymbolStringPoolEntryRef N) {
  return reinterpret_cast<SymbolStringPoolEntryUnsafe::PoolEntry *>(N);
}
static LLVMOrcSymbolStringPoolEntryRef wrapName(SymbolStringPoolEntryUnsafe::PoolEntry *N) {
  return reinterpret_cast<LLVMOrcSymbolStringPoolEntryRef>(N);
}

// The session's entry for Name, retained for the caller (who hands it on
// or releases it with kiln_orc_release).
extern "C" LLVMOrcSymbolStringPoolEntryRef kiln_orc_intern(LLVMOrcExecutionSessionRef ES, const char *Name) {
  return wrapName(SymbolStringPoolEntryUnsafe::take(unwrapES(ES).intern(Name)).rawPtr());
}

extern "C" void kiln_orc_release(LLVMOrcSymbolStringPoolEntryRef N) { SymbolStringPoolEntryUnsafe(unwrapName(N)).release(); }

// Errors no caller waits for (a materialisation that fails after its
// lookup) go to Report, with Ctx, instead of ORC's default, which prints.
extern "C" void kiln_orc_set_error_reporter(LLVMOrcExecutionSessionRef ES, void (*Report)(void *, LLVMErrorRef),
                                            void *Ctx) {
  unwrapES(ES).setErrorReporter([=](Error E) { Report(Ctx, wrap(std::move(E))); });
}

// A dylib with no generator and no platform (task objects have no static
// constructors, atexit or TLS to support).
extern "C" LLVMOrcJITDylibRef kiln_orc_create_dylib(LLVMOrcExecutionSessionRef ES, const char *Name) {
  return reinterpret_cast<LLVMOrcJITDylibRef>(&unwrapES(ES).createBareJITDylib(Name));
}

// The C API's flags (llvm-c/Orc.h numbers them otherwise than
// JITSymbolFlags does).
static JITSymbolFlags toFlags(LLVMJITSymbolFlags F) {
  JITSymbolFlags Flags;
  if (F.GenericFlags & LLVMJITSymbolGenericFlagsExported)
    Flags |= JITSymbolFlags::Exported;
  if (F.GenericFlags & LLVMJITSymbolGenericFlagsWeak)
    Flags |= JITSymbolFlags::Weak;
  if (F.GenericFlags & LLVMJITSymbolGenericFlagsCallable)
    Flags |= JITSymbolFlags::Callable;
  if (F.GenericFlags & LLVMJITSymbolGenericFlagsMaterializationSideEffectsOnly)
    Flags |= JITSymbolFlags::MaterializationSideEffectsOnly;
  Flags.getTargetFlags() = F.TargetFlags;
  return Flags;
}

// Defines the N symbols of Pairs in JD at their absolute addresses; the
// pairs' names are taken over (each was retained for them).
extern "C" LLVMErrorRef kiln_orc_define_absolute(LLVMOrcJITDylibRef JD, LLVMOrcCSymbolMapPairs Pairs, size_t N) {
  SymbolMap Map;
  for (size_t I = 0; I < N; ++I) {
    JITSymbolFlags Flags = toFlags(Pairs[I].Sym.Flags);
    SymbolStringPtr Name = SymbolStringPoolEntryUnsafe(unwrapName(Pairs[I].Name)).moveToSymbolStringPtr();
    Map[std::move(Name)] = ExecutorSymbolDef(ExecutorAddr(Pairs[I].Sym.Address), Flags);
  }
  return wrap(unwrapJD(JD).define(absoluteSymbols(std::move(Map))));
}

// Adds the ELF object at Bytes (Size bytes) to JD as the JITLink graph it
// links as: what the object defines is read from that graph, and the
// object is parsed once (the object layer's add parses a copy with LLVM's
// object-file readers for that, and JITLink then parses it again). The
// graph refers to the bytes, uncopied, until it is linked: the caller
// keeps them until a lookup has linked it or JD is cleared.
extern "C" LLVMErrorRef kiln_orc_add_object(LLVMOrcObjectLayerRef Layer, LLVMOrcJITDylibRef JD, const char *Bytes,
                                            size_t Size) {
  auto *L = static_cast<ObjectLinkingLayer *>(reinterpret_cast<ObjectLayer *>(Layer));
  MemoryBufferRef Object(StringRef(Bytes, Size), "kiln-object");
  auto G = jitlink::createLinkGraphFromELFObject(Object, L->getExecutionSession().getSymbolStringPool());
  if (!G)
    return wrap(G.takeError());
  // Code of another machine (a record planted in a cache, say) would link
  // as well as this one's, and then run.
  static const Triple::ArchType Host = Triple(sys::getProcessTriple()).getArch();
  const Triple &T = (*G)->getTargetTriple();
  if (T.getArch() != Host)
    return wrap(make_error<StringError>("an object for " + T.getArchName().str() + ", not for this machine (" +
                                            Triple::getArchTypeName(Host).str() + ")",
                                        inconvertibleErrorCode()));
  return wrap(L->add(unwrapJD(JD), std::move(*G)));
}

// Looks the N names of Names (each required) up in JD alone, linking what
// they need; Done gets the error, or each name (not retained) with its
// address (its flags left zero), once, with Ctx.
extern "C" void kiln_orc_lookup(LLVMOrcExecutionSessionRef ES, LLVMOrcJITDylibRef JD,
                                const LLVMOrcSymbolStringPoolEntryRef *Names, size_t N,
                                void (*Done)(LLVMErrorRef, LLVMOrcCSymbolMapPairs, size_t, void *), void *Ctx) {
  SymbolLookupSet Symbols;
  for (size_t I = 0; I < N; ++I)
    Symbols.add(SymbolStringPoolEntryUnsafe(unwrapName(Names[I])).copyToSymbolStringPtr());
  auto Order = makeJITDylibSearchOrder(&unwrapJD(JD), JITDylibLookupFlags::MatchAllSymbols);
  auto Complete = [=](Expected<SymbolMap> Result) {
    if (!Result) {
      Done(wrap(Result.takeError()), nullptr, 0, Ctx);
      return;
    }
    std::vector<LLVMOrcCSymbolMapPair> Pairs;
    for (auto &[Name, Def] : *Result)
      Pairs.push_back({wrapName(SymbolStringPoolEntryUnsafe::from(Name).rawPtr()), {Def.getAddress().getValue(), {}}});
    Done(nullptr, Pairs.data(), Pairs.size(), Ctx);
  };
  unwrapES(ES).lookup(LookupKind::Static, Order, std::move(Symbols), SymbolState::Ready, std::move(Complete),
                      NoDependenciesToRegister);
}

// Removes everything JD holds (its memory released); what that reported.
extern "C" LLVMErrorRef kiln_orc_clear(LLVMOrcJITDylibRef JD) { return wrap(unwrapJD(JD).clear()); }
