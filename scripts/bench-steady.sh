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
#     in steady.c: the memory-bound floor;
#   - the cold compile of testdata/ten_tasks.kir (kiln-compile -O2, user +
#     system CPU of the process) with bounds checks (versioned loops) and
#     with --no-bounds-checks, and, when BEFORE_BIN names the directory of a
#     kiln-compile built from the commit before loop versioning (48a38b5),
#     that one too: the ratio the issue's cold-compile target is about;
#     with CALLGRIND=1, also the instructions LLVM executes in that compile
#     (valgrind's callgrind, counting inside LLVMRunPasses and the object's
#     emission only: LLVMTargetMachineEmitToMemoryBuffer before 7c2d86b,
#     then Kiln's own emitter, crates/kiln-codegen/src/emitter.cpp, its pipeline's
#     building counted too): a figure the machine's load does not move.
# Each figure is the median of REPEATS processes. Ratios are to the C of
# the same mode: default and Quadrants off to C without -ffast-math,
# --fast-math and Quadrants on to C with it.
#
# Kiln's figure per call is the median over CALLS calls in one warm process
# of the time from a call's first task launch to its last launch's end
# (--time-trace's launch spans), as C's and Quadrants' are the median of
# CALLS timed calls; parsing, keying and loading are outside it. The mean
# (t(1 + CALLS calls) - t(1 call)) / CALLS of --stats=json's run_ms is
# printed beside it.
#
# Usage: scripts/bench-steady.sh [REPEATS]   (default 5; CALLS=20,
# THREADS=2, KILN_BIN_DIR=target/release; BEFORE_BIN and CALLGRIND unset)
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

# median, per_call (the median time per call in a --time-trace file)
. scripts/lib/per-call.sh

# kiln FILE KERNEL FLAGS...: ms per call, warm: the median (see above) and
# the mean from run_ms, "MEDIAN MEAN".
kiln() {
  local file=$1 kernel=$2; shift 2
  local cache=$WORK/cache args=() one=() r a b med=() mean=()
  for _ in $(seq "$CALLS"); do args+=(--kernel "$kernel"); done
  one=(--kernel "$kernel")
  "$BIN/kiln-run" "$file" --cache-dir "$cache" --threads "$THREADS" "$@" --kernel @init "${one[@]}" >/dev/null
  for r in $(seq "$REPS"); do
    a=$("$BIN/kiln-run" "$file" --cache-dir "$cache" --threads "$THREADS" "$@" --kernel @init "${one[@]}" "${args[@]}" --stats=json --time-trace="$WORK/trace.json" 2>&1 >/dev/null | grep -o '"run_ms":[0-9.]*' | cut -d: -f2)
    med+=("$(per_call "$WORK/trace.json" "$kernel")")
    b=$("$BIN/kiln-run" "$file" --cache-dir "$cache" --threads "$THREADS" "$@" --kernel @init "${one[@]}" --stats=json 2>&1 >/dev/null | grep -o '"run_ms":[0-9.]*' | cut -d: -f2)
    mean+=("$(echo "($a - $b) / $CALLS" | bc -l)")
  done
  echo "$(median "${med[@]}") $(median "${mean[@]}")"
}

# cpu_ms COMMAND...: the user + system CPU milliseconds COMMAND took (its
# output discarded), to the microsecond (getrusage of the children).
cpu_ms() {
  python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print((r.ru_utime + r.ru_stime) * 1000)' "$@"
}

# llvm_minstr DIR FLAGS...: millions of instructions LLVM executes (its
# pass pipeline and emission) in DIR/kiln-compile's compile of ten_tasks.
llvm_minstr() {
  local dir=$1; shift
  valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" --collect-atstart=no \
    --toggle-collect=LLVMRunPasses --toggle-collect=LLVMTargetMachineEmitToMemoryBuffer \
    --toggle-collect=kiln_emitter_create --toggle-collect=kiln_emitter_run \
    "$dir/kiln-compile" testdata/ten_tasks.kir -O2 -q -o "$WORK/objs/" "$@" >/dev/null 2>&1
  awk '/^totals:/ { print $2 / 1e6 }' "$WORK/callgrind.out"
}

# cold DIR FLAGS...: ms of user + system CPU of DIR/kiln-compile compiling
# testdata/ten_tasks.kir at -O2 (every task, nothing cached), median.
cold() {
  local dir=$1 out=() r; shift
  for r in $(seq "$REPS"); do
    out+=("$(cpu_ms "$dir/kiln-compile" testdata/ten_tasks.kir -O2 -q -o "$WORK/objs/" "$@")")
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
cold_now=$(cold "$BIN")
cold_nochecks=$(cold "$BIN" --no-bounds-checks)
cold_before=nan
[ -n "${BEFORE_BIN:-}" ] && cold_before=$(cold "$BEFORE_BIN")

# row NAME MS C_MS [MEAN]: a table row, the ratio to C_MS, and Kiln's mean.
row() {
  printf '| %s | %.2f | %.2f | %s |\n' "$1" "$2" "$(echo "$2 / $3" | bc -l)" "${4:+$(printf '%.2f' "$4")}"
}
set -- $k_def; k_def=$1 k_def_mean=$2
set -- $k_fast; k_fast=$1 k_fast_mean=$2
set -- $k_saxpy; k_saxpy=$1 k_saxpy_mean=$2
echo
echo "| code | ms per call (median) | vs C of the same mode | Kiln: mean from run_ms |"
echo "| --- | ---: | ---: | ---: |"
row "eight loops, C (gcc -O3 -march=native -fopenmp)" "$c_def" "$c_def"
row "eight loops, Kiln default" "$k_def" "$c_def" "$k_def_mean"
row "eight loops, Quadrants fast_math=False" "$q_off" "$c_def"
row "eight loops, C with -ffast-math" "$c_fast" "$c_fast"
row "eight loops, Kiln --fast-math" "$k_fast" "$c_fast" "$k_fast_mean"
row "eight loops, Quadrants fast_math=True" "$q_on" "$c_fast"
row "saxpy 16M, C triad" "$c_triad" "$c_triad"
row "saxpy 16M, Kiln" "$k_saxpy" "$c_triad" "$k_saxpy_mean"
echo
printf 'Quadrants / Kiln: default %.2fx, fast %.2fx\n' "$(echo "$q_off / $k_def" | bc -l)" "$(echo "$q_on / $k_fast" | bc -l)"
echo
echo "cold compile, testdata/ten_tasks.kir -O2, CPU ms (median of $REPS):"
printf '  bounds checks (versioned loops) %.0f; --no-bounds-checks %.0f (ratio %.2fx)\n' \
  "$cold_now" "$cold_nochecks" "$(echo "$cold_now / $cold_nochecks" | bc -l)"
if [ "$cold_before" != nan ]; then
  printf '  before versioning (%s) %.0f: ratio now / before %.2fx\n' "$BEFORE_BIN" "$cold_before" "$(echo "$cold_now / $cold_before" | bc -l)"
else
  echo "  (set BEFORE_BIN to a build of 48a38b5 for the ratio to before versioning)"
fi
if [ -n "${CALLGRIND:-}" ]; then
  command -v valgrind >/dev/null || { echo "bench-steady: CALLGRIND needs valgrind" >&2; exit 1; }
  i_now=$(llvm_minstr "$BIN")
  i_nochecks=$(llvm_minstr "$BIN" --no-bounds-checks)
  printf 'LLVM instructions (millions): bounds checks %.1f; --no-bounds-checks %.1f (ratio %.2fx)\n' \
    "$i_now" "$i_nochecks" "$(echo "$i_now / $i_nochecks" | bc -l)"
  if [ -n "${BEFORE_BIN:-}" ]; then
    i_before=$(llvm_minstr "$BEFORE_BIN")
    printf '  before versioning %.1f: ratio now / before %.2fx\n' "$i_before" "$(echo "$i_now / $i_before" | bc -l)"
  fi
fi
