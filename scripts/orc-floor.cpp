// The floor a warm `kiln-run` could reach with LLVM split in two halves
// (docs/performance.md, "Warm start"): a process that loads per-task
// objects with ORC alone (an ExecutionSession, JITLink's object linking
// layer, the process's symbols; no LLJIT, so no target machine and no X86
// code generator), built twice by scripts/bench-orc-floor.sh: as is, and
// with -DWITH_COMPILER, which links the compiler half too (the default O2
// pipeline and X86 object emission, reached only by `--compile`), so the
// two builds differ only in what is linked and initialised at start-up.
//
//   orc-floor --version     start-up only
//   orc-floor OBJECT...     load each object into a dylib of its own and
//                           look up `kiln_task` in it (a warm run's loads)
//   orc-floor --compile     (WITH_COMPILER) optimise and emit an empty module
#include "llvm/ExecutionEngine/Orc/AbsoluteSymbols.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/EHFrameRegistrationPlugin.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/Orc/SelfExecutorProcessControl.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cstdio>
#include <cstring>

using namespace llvm;
using namespace llvm::orc;

// Kiln's out-of-bounds reporter (`kiln_rt_oob`, crates/kiln-llvm/src/abi.rs), which
// an object with bounds checks calls: defined in each dylib as Kiln's JIT
// defines it, an absolute symbol. A load never calls it.
extern "C" void kiln_rt_oob(const void *, unsigned, unsigned, unsigned, const long *) {}

#ifdef WITH_COMPILER
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

extern "C" void LLVMInitializeX86TargetInfo();
extern "C" void LLVMInitializeX86Target();
extern "C" void LLVMInitializeX86TargetMC();
extern "C" void LLVMInitializeX86AsmPrinter();

// What Kiln's codegen does per module: the default pipeline, then the
// X86 back end writing an object (here for an empty module).
static int compile() {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  Triple T(sys::getProcessTriple());
  std::string Err;
  const Target *Tg = TargetRegistry::lookupTarget(T, Err);
  if (!Tg) {
    errs() << "orc-floor: " << Err << "\n";
    return 1;
  }
  std::unique_ptr<TargetMachine> TM(Tg->createTargetMachine(T, "generic", "", TargetOptions(), Reloc::PIC_));
  LLVMContext C;
  Module M("m", C);
  M.setDataLayout(TM->createDataLayout());
  LoopAnalysisManager LAM;
  FunctionAnalysisManager FAM;
  CGSCCAnalysisManager CGAM;
  ModuleAnalysisManager MAM;
  PassBuilder PB(TM.get());
  PB.registerModuleAnalyses(MAM);
  PB.registerCGSCCAnalyses(CGAM);
  PB.registerFunctionAnalyses(FAM);
  PB.registerLoopAnalyses(LAM);
  PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
  PB.buildPerModuleDefaultPipeline(OptimizationLevel::O2).run(M, MAM);
  SmallVector<char, 0> Buf;
  raw_svector_ostream OS(Buf);
  legacy::PassManager PM;
  if (TM->addPassesToEmitFile(PM, OS, nullptr, CodeGenFileType::ObjectFile)) {
    errs() << "orc-floor: the target cannot emit objects\n";
    return 1;
  }
  PM.run(M);
  printf("%zu bytes of object\n", Buf.size());
  return 0;
}
#endif

static int fail(Error E) {
  logAllUnhandledErrors(std::move(E), errs(), "orc-floor: ");
  return 1;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--version")) {
    puts("orc-floor");
    return 0;
  }
#ifdef WITH_COMPILER
  if (argc > 1 && !strcmp(argv[1], "--compile"))
    return compile();
#endif
  auto EPC = SelfExecutorProcessControl::Create();
  if (!EPC)
    return fail(EPC.takeError());
  ExecutionSession ES(std::move(*EPC));
  ObjectLinkingLayer Layer(ES);
  auto EH = EHFrameRegistrationPlugin::Create(ES);
  if (!EH)
    return fail(EH.takeError());
  Layer.addPlugin(std::move(*EH));
  // ELF on x86-64 has no global prefix: no data layout is needed to mangle.
  MangleAndInterner Mangle(ES, DataLayout(""));
  int Status = 0;
  for (int I = 1; I < argc && Status == 0; I++) {
    JITDylib &JD = ES.createBareJITDylib("task" + std::to_string(I));
    auto Process = DynamicLibrarySearchGenerator::GetForCurrentProcess('\0');
    if (!Process) {
      Status = fail(Process.takeError());
      break;
    }
    JD.addGenerator(std::move(*Process));
    ExecutorSymbolDef Oob(ExecutorAddr::fromPtr(&kiln_rt_oob), JITSymbolFlags::Exported | JITSymbolFlags::Callable);
    if (Error E = JD.define(absoluteSymbols({{Mangle("kiln_rt_oob"), Oob}}))) {
      Status = fail(std::move(E));
      break;
    }
    auto Buf = MemoryBuffer::getFile(argv[I]);
    if (!Buf) {
      errs() << "orc-floor: cannot read " << argv[I] << ": " << Buf.getError().message() << "\n";
      Status = 1;
      break;
    }
    if (Error E = Layer.add(JD, std::move(*Buf)))
      Status = fail(std::move(E));
    else if (auto Sym = ES.lookup({&JD}, Mangle("kiln_task")); !Sym)
      Status = fail(Sym.takeError());
  }
  if (Error E = ES.endSession())
    return fail(std::move(E));
  return Status;
}
