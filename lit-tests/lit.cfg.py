# LLVM-style tests for Kiln, run by LLVM 22's own lit and FileCheck.
# The tools are substituted by absolute path to the freshly built binaries
# (KILN_BIN_DIR, set by `make test-lit`), never whatever is on PATH.
import os
import re
import lit.formats

config.name = "Kiln"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".kir", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
# Temporaries (%t) go under target/, never into the source tree.
config.test_exec_root = os.path.join(os.path.dirname(config.test_source_root), "target", "lit")

bin_dir = os.environ.get("KILN_BIN_DIR")
if not bin_dir:
    lit_config.fatal("KILN_BIN_DIR is not set; run `make test-lit`")
llvm_bin = "/usr/lib/llvm-22/bin"
repo = os.path.dirname(config.test_source_root)

# lit treats a substitution's key as a regular expression and applies the
# config's substitutions before its own (%s, %t, ...), so a key must match
# the tool name as a whole word of a command and nothing else: not a part of
# a path (`/kiln-opt/`), a file name (`kiln-opt.md`), a longer name
# (`kiln-opt-x`) or a flag (`--implicit-check-not`).
def whole_word(name):
    return r"(?<![\w/.-])%s(?![\w/.-])" % re.escape(name)

for tool in ["kiln-opt", "kiln-key", "kiln-compile", "kiln-run", "kiln-cache-inspect", "kiln-import", "kiln-reduce"]:
    config.substitutions.append((whole_word(tool), os.path.join(bin_dir, tool)))
for tool in ["FileCheck", "not", "llvm-readelf", "llvm-objdump", "llvm-jitlink"]:
    config.substitutions.append((whole_word(tool), os.path.join(llvm_bin, tool)))
config.substitutions.append(("%testdata", os.path.join(repo, "testdata")))
config.substitutions.append(("%scripts", os.path.join(repo, "scripts")))
# scripts/update-checks with the freshly built tools (lit-tests/update-checks).
config.substitutions.append(("%update-checks", "python3 %s --bin-dir %s" % (os.path.join(repo, "scripts", "update-checks"), bin_dir)))
# Cargo examples used as test tools (built by `make test-lit`).
config.substitutions.append(("%cache-fill", os.path.join(bin_dir, "examples", "cache-fill")))

# `REQUIRES: kiln-run` for tests that run kernels: a build of the LLVM-free
# root package alone (`cargo build -p kiln --bins`) has no kiln-run.
if os.path.exists(os.path.join(bin_dir, "kiln-run")):
    config.available_features.add("kiln-run")

# The host architecture (`REQUIRES: x86_64` for tests of the x86-64 code model).
import platform
config.available_features.add(platform.machine())

# Keep the environment predictable: no user cache directory leaks in. The
# JIT engine caches by default, so tests that do not name a cache share one
# fresh for each lit run (the cache is safe under concurrent processes).
import shutil
default_cache = os.path.join(config.test_exec_root, "default-cache")
shutil.rmtree(default_cache, ignore_errors=True)
config.environment["KILN_CACHE_DIR"] = default_cache
config.environment.pop("KILN_TARGET_CPU", None)
# No user kiln.toml and no KILN_* setting leaks in either.
config.environment["XDG_CONFIG_HOME"] = os.path.join(config.test_exec_root, "no-config")
for var in list(config.environment):
    if var.startswith("KILN_") and var != "KILN_CACHE_DIR":
        config.environment.pop(var)
config.environment.pop("KILN_TARGET_FEATURES", None)
# Runs compile the optimised tier only, as before tiers existed: what a test
# finds in a cache afterwards must not depend on when a background compile
# of the default `auto` policy ends. The tests of tiers (kiln-run/tier.test)
# name the policy with --tier, which the environment does not override.
config.environment["KILN_TIER"] = "opt"
for var in ["HOME", "TMPDIR"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
