#!/usr/bin/env bash
# What splitting LLVM in two halves would buy a warm start: scripts/orc-floor.cpp
# built twice with build.rs's static link (the LLVM archives, the C++
# runtime, zlib and zstd static; DT_RELR), once with the ORC half only and
# once with the compiler half (default pipeline, X86 object emission)
# linked in but not called; then, side by side in one run, their start-up
# (`--version`) and the load of the ten per-task objects of
# testdata/ten_tasks.kir (made with target/release/kiln-compile), with
# release `kiln-run --version` and `kiln-opt --version` for scale.
# Figures go to docs/performance.md, section "Warm start".
#
# Usage: scripts/bench-orc-floor.sh [RUNS]     (default 30 runs per figure)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${1:-30}
LLVM_CONFIG=${LLVM_SYS_221_PREFIX:-/usr/lib/llvm-22}/bin/llvm-config
command -v hyperfine > /dev/null || { echo "bench-orc-floor: hyperfine is missing (apt-get install hyperfine)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-orc-floor.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

nice -n 10 cargo build --release --bin kiln-compile --bin kiln-run --bin kiln-opt >&2
REL=$ROOT/target/release
"$REL/kiln-compile" testdata/ten_tasks.kir -o "$WORK/objects/"

# The link of build.rs's static mode (link_llvm), for a C++ program.
static_link() {
  local out=$1 obj=$2
  shift 2
  # shellcheck disable=SC2046 # llvm-config prints one flag per word
  nice -n 10 c++ "$obj" -o "$out" -pie -Wl,--as-needed -Wl,-z,pack-relative-relocs -static-libstdc++ \
    -L"$("$LLVM_CONFIG" --libdir)" -Wl,-Bstatic $("$LLVM_CONFIG" --link-static --libs "$@") \
    -Wl,-Bstatic -lz -lzstd -Wl,-Bdynamic -lrt -ldl -lm
}
# shellcheck disable=SC2046
nice -n 10 c++ $("$LLVM_CONFIG" --cxxflags) -O2 -c scripts/orc-floor.cpp -o "$WORK/orc.o"
# shellcheck disable=SC2046
nice -n 10 c++ $("$LLVM_CONFIG" --cxxflags) -O2 -DWITH_COMPILER -c scripts/orc-floor.cpp -o "$WORK/both.o"
static_link "$WORK/orc-half" "$WORK/orc.o" orcjit
static_link "$WORK/both-halves" "$WORK/both.o" orcjit passes x86codegen
# Copies made the same way as the programs above (see bench-warm.sh).
cp "$REL/kiln-run" "$REL/kiln-opt" "$WORK/"
"$WORK/both-halves" --compile > /dev/null
OBJECTS=$(echo "$WORK"/objects/*.o)
"$WORK/orc-half" $OBJECTS
"$WORK/both-halves" $OBJECTS

hyperfine -N --style none -w 5 -r "$RUNS" --export-json "$WORK/floor.json" \
  -n "ORC half --version" "$WORK/orc-half --version" \
  -n "both halves --version" "$WORK/both-halves --version" \
  -n "ORC half, 10 loads" "$WORK/orc-half $OBJECTS" \
  -n "both halves, 10 loads" "$WORK/both-halves $OBJECTS" \
  -n "kiln-run --version" "$WORK/kiln-run --version" \
  -n "kiln-opt --version" "$WORK/kiln-opt --version" > /dev/null

python3 - "$WORK" <<'EOF'
import json, os, statistics, subprocess, sys
work = sys.argv[1]
print(f"load average {os.getloadavg()[0]:.1f}")
print()
print("| command | runs | wall median ms | CPU ms (user + sys, mean) |")
print("|---|---:|---:|---:|")
for r in json.load(open(f"{work}/floor.json"))["results"]:
    print(f"| {r['command']} | {len(r['times'])} | {statistics.median(r['times']) * 1e3:.2f} | {(r['user'] + r['system']) * 1e3:.2f} |")
print()
print("| binary | static constructors | text MB |")
print("|---|---:|---:|")
for b in ["orc-half", "both-halves", "kiln-run"]:
    path = f"{work}/{b}"
    nm = subprocess.run(["nm", path], capture_output=True, text=True).stdout
    ctors = sum(1 for l in nm.splitlines() if " _GLOBAL__sub_I_" in l)
    text = int(subprocess.run(["size", path], capture_output=True, text=True).stdout.splitlines()[1].split()[0])
    print(f"| {b} | {ctors} | {text / 1e6:.1f} |")
EOF
