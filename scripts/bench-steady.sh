#!/usr/bin/env bash
# Steady state (issue 24): what a ready kernel costs per call, against C and
# Quadrants, in one run, all on THREADS threads (default 2):
#   - the eight-loop kernel (scripts/steady/steady.kir: sin; sqrt; exp;
#     max and div; cos; tanh written with exp; log; floor; over 1M f32) in
#     Kiln, default and --fast-math: the release kiln-run, warm, per call
#     (t(1 + CALLS calls) - t(1 call)) / CALLS of --stats=json's run_ms,
#     so parsing, keying and loading are left out;
#   - the same loops in C (scripts/steady/steady.c), built here with
#     gcc -O3 -march=native -fopenmp, with and without -ffast-math (glibc's
#     libmvec), OMP_NUM_THREADS=THREADS: median of CALLS calls;
#   - the same kernel in Quadrants 1.3.3 (scripts/steady/steady.py) with
#     fast_math on (its default) and off, cpu_max_num_threads=THREADS: median of
#     CALLS calls (needs `make quadrants`);
#   - saxpy over 16M f32 (scripts/steady/saxpy16m.kir) against the C triad
#     in steady.c: the memory-bound floor.
# Each figure is the median of REPEATS processes. Ratios are to the C of
# the same mode: default and Quadrants off to C without -ffast-math,
# --fast-math and Quadrants on to C with it.
#
# Usage: scripts/bench-steady.sh [REPEATS]   (default 5; CALLS=20,
# THREADS=2, KILN_BIN_DIR=target/release unless set)
# Figures go to docs/performance.md, section "Steady state".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REPS=${1:-5}
CALLS=${CALLS:-20}
THREADS=${THREADS:-2}
BIN=${KILN_BIN_DIR:-$ROOT/target/release}
PY=$ROOT/target/quadrants-venv/bin/python
[ -x "$BIN/kiln-run" ] || { echo "bench-steady: $BIN/kiln-run is missing: run make build-release" >&2; exit 1; }
command -v gcc >/dev/null || { echo "bench-steady: gcc is missing" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-steady.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset KILN_TARGET_CPU KILN_TARGET_FEATURES

gcc -O3 -march=native -fopenmp -o "$WORK/c" scripts/steady/steady.c -lm
gcc -O3 -march=native -fopenmp -ffast-math -o "$WORK/c-fast" scripts/steady/steady.c -lm

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# kiln FILE KERNEL FLAGS...: ms per call, warm.
kiln() {
  local file=$1 kernel=$2; shift 2
  local cache=$WORK/cache args=() one=() r a b out=()
  for _ in $(seq $((CALLS + 1))); do args+=(--kernel "$kernel"); done
  one=(--kernel "$kernel")
  "$BIN/kiln-run" "$file" --cache-dir "$cache" --threads "$THREADS" "$@" --kernel @init "${one[@]}" >/dev/null
  for r in $(seq "$REPS"); do
    a=$("$BIN/kiln-run" "$file" --cache-dir "$cache" --threads "$THREADS" "$@" --kernel @init "${args[@]}" --stats=json 2>&1 >/dev/null | grep -o '"run_ms":[0-9.]*' | cut -d: -f2)
    b=$("$BIN/kiln-run" "$file" --cache-dir "$cache" --threads "$THREADS" "$@" --kernel @init "${one[@]}" --stats=json 2>&1 >/dev/null | grep -o '"run_ms":[0-9.]*' | cut -d: -f2)
    out+=("$(echo "($a - $b) / $CALLS" | bc -l)")
  done
  median "${out[@]}"
}

# c BINARY WHAT: ms per call.
c() {
  local out=() r
  for r in $(seq "$REPS"); do out+=("$(OMP_NUM_THREADS=$THREADS "$1" "$2" "$CALLS" 2>/dev/null)"); done
  median "${out[@]}"
}

# quadrants on|off: ms per call.
quadrants() {
  local out=() r
  for r in $(seq "$REPS"); do out+=("$("$PY" scripts/steady/steady.py "$1" "$CALLS" "$THREADS" 2>/dev/null | tail -1)"); done
  median "${out[@]}"
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "threads $THREADS, $CALLS calls, median of $REPS processes; kiln-run from $BIN"
c_def=$(c "$WORK/c" eight)
c_fast=$(c "$WORK/c-fast" eight)
k_def=$(kiln scripts/steady/steady.kir @steady)
k_fast=$(kiln scripts/steady/steady.kir @steady --fast-math)
if [ -x "$PY" ]; then
  q_off=$(quadrants off)
  q_on=$(quadrants on)
else
  echo "bench-steady: $PY is missing (make quadrants): Quadrants left out" >&2
  q_off=nan; q_on=nan
fi
c_triad=$(c "$WORK/c" saxpy)
k_saxpy=$(kiln scripts/steady/saxpy16m.kir @saxpy)

row() { printf '| %s | %.2f | %.2f |\n' "$1" "$2" "$(echo "$2 / $3" | bc -l)"; }
echo
echo "| code | ms per call | vs C of the same mode |"
echo "| --- | ---: | ---: |"
row "eight loops, C (gcc -O3 -march=native -fopenmp)" "$c_def" "$c_def"
row "eight loops, Kiln default" "$k_def" "$c_def"
row "eight loops, Quadrants fast_math=False" "$q_off" "$c_def"
row "eight loops, C with -ffast-math" "$c_fast" "$c_fast"
row "eight loops, Kiln --fast-math" "$k_fast" "$c_fast"
row "eight loops, Quadrants fast_math=True" "$q_on" "$c_fast"
row "saxpy 16M, C triad" "$c_triad" "$c_triad"
row "saxpy 16M, Kiln" "$k_saxpy" "$c_triad"
echo
printf 'Quadrants / Kiln: default %.2fx, fast %.2fx\n' "$(echo "$q_off / $k_def" | bc -l)" "$(echo "$q_on / $k_fast" | bc -l)"
