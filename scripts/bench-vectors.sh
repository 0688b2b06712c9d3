#!/usr/bin/env bash
# Vectors (issue 40, item 5): two kernels over vec3 fields, each three
# ways, warm, per call, on THREADS threads (default 2): an n-body step
# (scripts/vectors/nbody.py: 2048 bodies, every pair; compute-bound) and a
# particle update (scripts/vectors/advect.py: 1M particles; memory-bound):
#   - Kiln on the KIR kiln-import makes of the program (vectors scalarised:
#     fields f32[N, 3], one statement per component), captured through
#     `kiln-quadrants run`, which also checks that Kiln agrees with
#     Quadrants on it;
#   - Kiln on the same loops written with scalars by hand
#     (scripts/vectors/*_scalar.kir: x, y and z in separate fields);
#   - Quadrants 1.3.3 on the program itself (fast_math off, as Kiln's
#     default mode; `make quadrants`).
# Kiln's figure per call is the median over CALLS calls in one warm process
# of the time from a call's first task launch to its last launch's end
# (--time-trace), Quadrants' the median of CALLS timed calls (qd.sync());
# each figure is the median of REPEATS processes.
#
# Usage: scripts/bench-vectors.sh [REPEATS]   (default 5; CALLS=10,
# THREADS=2, KILN_BIN_DIR=target/release)
# Figures go to docs/performance.md, section "Vectors".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REPS=${1:-5}
CALLS=${CALLS:-10}
THREADS=${THREADS:-2}
BIN=${KILN_BIN_DIR:-$ROOT/target/release}
PY=$ROOT/target/quadrants-venv/bin/python
[ -x "$BIN/kiln-run" ] || { echo "bench-vectors: $BIN/kiln-run is missing: run make build-release" >&2; exit 1; }
[ -x "$PY" ] || { echo "bench-vectors: $PY is missing: run make quadrants" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-vectors.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset KILN_TARGET_CPU KILN_TARGET_FEATURES

# median, per_call (the median time per call in a --time-trace file)
. scripts/lib/per-call.sh

# kiln FILE KERNEL: ms per call of KERNEL (after @init), warm, median of
# REPS processes.
kiln() {
  local file=$1 kernel=$2 args=() out=() r
  for _ in $(seq "$((CALLS + 1))"); do args+=(--kernel "$kernel"); done
  "$BIN/kiln-run" "$file" --cache-dir "$WORK/cache" --threads "$THREADS" --arg dt=0.001 --kernel @init --kernel "$kernel" >/dev/null
  for r in $(seq "$REPS"); do
    "$BIN/kiln-run" "$file" --cache-dir "$WORK/cache" --threads "$THREADS" --arg dt=0.001 --kernel @init "${args[@]}" \
      --time-trace="$WORK/trace.json" >/dev/null
    out+=("$(per_call "$WORK/trace.json" "$kernel")")
  done
  median "${out[@]}"
}

# quadrants PROGRAM: ms per call, median of REPS processes.
quadrants() {
  local out=() r
  for r in $(seq "$REPS"); do out+=("$("$PY" "$1" "$CALLS" "$THREADS" off 2>/dev/null | tail -1)"); done
  median "${out[@]}"
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "threads $THREADS, $CALLS calls, median of $REPS processes; kiln-run from $BIN"

# bench NAME KERNEL TITLE: the imported KIR (the bridge captures the
# program's init and one call and checks Kiln against Quadrants;
# kiln-import makes one stream of both), the scalar twin and Quadrants.
bench() {
  local name=$1 kernel=$2 title=$3 keep=$WORK/keep-$1
  KILN_BIN_DIR=$BIN KILN_QUADRANTS_PYTHON=$PY tools/kiln-quadrants run --keep "$keep" \
    --cache-dir "$WORK/cache" "scripts/vectors/$name.py" | grep -E '^(ok|FAIL|SKIP) |kernels:'
  cat "$keep"/capture/calls/*.offload.log > "$WORK/$name.log"
  "$BIN/kiln-import" "$WORK/$name.log" --fields "$keep/capture/fields.json" -o "$WORK/$name.kir"
  grep -m2 '^field @\(pos\|vel\)' "$WORK/$name.kir"
  local vec sca qd
  vec=$(kiln "$WORK/$name.kir" "$kernel")
  sca=$(kiln "scripts/vectors/${name}_scalar.kir" "$kernel")
  qd=$(quadrants "scripts/vectors/$name.py")
  printf '%-40s %10s %8s\n' "$title" "ms/call" "ratio"
  printf '%-40s %10.3f %8s\n' "Kiln, scalar KIR (x, y, z apart)" "$sca" "1.00"
  printf '%-40s %10.3f %8.2f\n' "Kiln, imported vec3 KIR" "$vec" "$(echo "$vec / $sca" | bc -l)"
  printf '%-40s %10.3f %8.2f\n' "Quadrants 1.3.3 (fast_math off)" "$qd" "$(echo "$qd / $sca" | bc -l)"
  printf 'imported vec3 / Quadrants: %.2f\n\n' "$(echo "$vec / $qd" | bc -l)"
}

bench nbody @step "n-body step, 2048 bodies"
bench advect @advect "particle update, 1M particles"
