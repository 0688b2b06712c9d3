# LLVM-style tests for Kiln, run by LLVM 22's own lit and FileCheck.
# The tools are substituted by absolute path to the freshly built binaries
# (KILN_BIN_DIR, set by `make test-lit`), never whatever is on PATH.
import os
import lit.formats

config.name = "Kiln"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".kir", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)

bin_dir = os.environ.get("KILN_BIN_DIR")
if not bin_dir:
    lit_config.fatal("KILN_BIN_DIR is not set; run `make test-lit`")
llvm_bin = "/usr/lib/llvm-22/bin"
repo = os.path.dirname(config.test_source_root)

for tool in ["kiln-opt", "kiln-key", "kiln-compile", "kiln-run", "kiln-cache-inspect"]:
    path = os.path.join(bin_dir, tool)
    config.substitutions.append((r"\b%s\b" % tool.replace("-", r"\-"), path))
for tool in ["FileCheck", "not", "llvm-readelf", "llvm-objdump"]:
    config.substitutions.append((r"(?<![\w/-])%s\b" % tool, os.path.join(llvm_bin, tool)))
config.substitutions.append(("%testdata", os.path.join(repo, "testdata")))
# Cargo examples used as test tools (built by `make test-lit`).
config.substitutions.append(("%cache-fill", os.path.join(bin_dir, "examples", "cache-fill")))

# Keep the environment predictable: no user cache directory leaks in.
config.environment["KILN_CACHE_DIR"] = "/nonexistent-kiln-cache-dir"
for var in ["HOME", "TMPDIR"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
