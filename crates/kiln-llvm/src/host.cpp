// This host as LLVM detects it: its default triple, its CPU's name and the
// features the CPU reports, with the C API's spellings (LLVMGetHostCPUName
// and its siblings) but not its functions: those share their archive
// member (TargetMachineC.cpp) with the C API's target machines, which
// would pull the code generator's analyses into a static link that only
// loads objects (kiln-run), with their static constructors, which every
// process runs at its start (docs/performance.md, "Warm start"). Called
// by crates/kiln-llvm/src/lib.rs only. Each string is malloc'd; the caller
// frees it.
#include "llvm-c/Core.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/TargetParser/Triple.h"

#include "shim_string.h"

#include <string>

extern "C" char *kiln_host_triple(void) { return dup_string(llvm::Triple::normalize(llvm::sys::getDefaultTargetTriple())); }

extern "C" char *kiln_host_cpu_name(void) { return dup_string(llvm::sys::getHostCPUName().str()); }

// "+feature,-feature,...": every feature the detection names, on or off.
extern "C" char *kiln_host_cpu_features(void) {
  llvm::SubtargetFeatures Features;
  for (const auto &[Name, On] : llvm::sys::getHostCPUFeatures())
    Features.AddFeature(Name, On);
  return dup_string(Features.getString());
}

// The version of the LLVM library this process runs: in a static link,
// the one whose archives were linked, which is what their headers say
// (LLVMGetVersion would answer the same from its archive member, the C
// API of LLVM's IR, Core.cpp, which would pull most of the IR library into
// a link that only loads objects); in a dynamic link, the shared
// library's own answer, which may be another build's.
extern "C" void kiln_llvm_library_version(unsigned *Major, unsigned *Minor, unsigned *Patch) {
#ifdef KILN_STATIC_LLVM
  *Major = LLVM_VERSION_MAJOR;
  *Minor = LLVM_VERSION_MINOR;
  *Patch = LLVM_VERSION_PATCH;
#else
  LLVMGetVersion(Major, Minor, Patch);
#endif
}
