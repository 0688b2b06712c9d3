// LLVM's own tables of a target's CPUs and features (what `llc -mcpu=help`
// prints), which the C API does not expose: MCSubtargetInfo's processor
// and feature descriptions. Called by crates/kiln-llvm/src/target.rs only.
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/TargetParser/Triple.h"

#include "shim_string.h"

#include <memory>
#include <string>

// One line per CPU, "c\tNAME\n", then one per feature, "f\tNAME\tDESC\n",
// in LLVM's (sorted) order, in a malloc'd string the caller frees. On
// failure: null, and *error is a malloc'd message.
extern "C" char *kiln_subtarget_tables(const char *triple, char **error) {
  *error = nullptr;
  llvm::Triple tt(triple);
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(tt, err);
  if (!target) {
    *error = dup_string(err);
    return nullptr;
  }
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(tt, "", ""));
  if (!sti) {
    *error = dup_string("LLVM has no subtarget information for " + tt.str());
    return nullptr;
  }
  std::string out;
  for (const llvm::SubtargetSubTypeKV &cpu : sti->getAllProcessorDescriptions()) {
    out += "c\t";
    out += cpu.Key;
    out += "\n";
  }
  for (const llvm::SubtargetFeatureKV &f : sti->getAllProcessorFeatures()) {
    out += "f\t";
    out += f.Key;
    out += "\t";
    out += f.Desc;
    out += "\n";
  }
  return dup_string(out);
}
