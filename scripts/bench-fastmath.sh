#!/usr/bin/env bash
# Fast math against C with libmvec (issue 43, item 3), on loops of four
# shapes (scripts/fastmath/shapes.kir and shapes.c: exp(-x*x) + y*y,
# cos(z) * tanh(y), log(1 + |y|) + floor(3x), sin(x) * sqrt(|z|) + exp(y/2);
# 1M f32 each, the same inputs), on THREADS threads (default 1):
#   - C: gcc -O3 -march=native -ffast-math -fopenmp, median and minimum of
#     21 calls in one process;
#   - Kiln: the release kiln-run --fast-math, per call
#     (t(21 calls) - t(1 call)) / 20 of --stats=json's run_ms, the minimum
#     over REPEATS processes (a loaded machine's noise is one-sided);
#   - Kiln again with the target's AVX-512 features taken away (the 8 lanes
#     of AVX2 that LLVM's own tuning picked on this host before fast math
#     asked for the widest vectors), when the host has AVX-512F.
# Usage: scripts/bench-fastmath.sh [REPEATS]   (default 7; THREADS=1,
# KILN_BIN_DIR=target/release). Figures: docs/performance.md, "Fast-math
# vector width".
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-7}
THREADS=${THREADS:-1}
BIN=${KILN_BIN_DIR:-$PWD/target/release}
PY=${PYTHON:-target/quadrants-venv/bin/python}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-fastmath.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
gcc -O3 -march=native -ffast-math -fopenmp -o "$WORK/c" scripts/fastmath/shapes.c -lm
"$PY" -c "
import numpy as np
N = 1 << 20; i = np.arange(N)
np.save('$WORK/x.npy', ((i % 1000) * np.float32(0.001) - np.float32(0.5)).astype(np.float32))
np.save('$WORK/y.npy', ((i % 777) * np.float32(0.002) - np.float32(0.7)).astype(np.float32))
np.save('$WORK/z.npy', ((i % 555) * np.float32(0.01)).astype(np.float32))"
inputs=(--input "@x=$WORK/x.npy" --input "@y=$WORK/y.npy" --input "@z=$WORK/z.npy")
run_ms() { "$BIN/kiln-run" --cache-dir "$WORK/cache" --threads "$THREADS" --fast-math --stats=json "$@" "${inputs[@]}" \
  scripts/fastmath/shapes.kir 2>&1 >/dev/null | "$PY" -c 'import json, sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["run_ms"])'; }
kiln() {  # kiln LABEL [FLAGS...]
  local label=$1; shift
  for k in k0 k1 k2 k3; do
    local many=() vals=()
    for _ in $(seq 21); do many+=(--kernel "$k"); done
    run_ms "$@" --kernel "$k" >/dev/null
    for _ in $(seq "$REPS"); do
      local a b
      a=$(run_ms "$@" --kernel "$k"); b=$(run_ms "$@" "${many[@]}")
      vals+=("$("$PY" -c "print(round(($b - $a) / 20 * 1000, 1))")")
    done
    echo "Kiln $label $k $(printf '%s\n' "${vals[@]}" | sort -n | head -1) us"
  done
}
echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1 /proc/loadavg), THREADS=$THREADS"
OMP_NUM_THREADS=$THREADS "$WORK/c"
kiln "widest"
# The host's features as LLVM detects them (what kiln-run compiles for).
features=$(LLVM_LIB="${LLVM_PREFIX:-/usr/lib/llvm-22}/lib/libLLVM.so.22.1" "$PY" -c 'import ctypes, os
l = ctypes.CDLL(os.environ["LLVM_LIB"])
l.LLVMGetHostCPUFeatures.restype = ctypes.c_char_p
print(l.LLVMGetHostCPUFeatures().decode())' 2>/dev/null || true)
if [[ $features == *+avx512f* ]]; then
  avx2=$(echo "$features" | tr ',' '\n' | sed 's/^+avx512/-avx512/' | paste -sd,)
  kiln "AVX2" --target-features "$avx2"
fi
