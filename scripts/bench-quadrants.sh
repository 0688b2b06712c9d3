#!/usr/bin/env bash
# Quadrants' six microbenchmarks (saxpy, fill, memcpy, stencil2d, math_opts,
# atomic_ops; our own programs in testdata/quadrants/), side by side: run in
# Quadrants 1.3.3, and imported into Kiln, in one run.
#
# For each kernel's first call:
#   - Quadrants (scripts/quadrants/bench_program.py, in-process, after
#     import and qd.init): the first call (compile, or load from its
#     offline cache, then launch), cold (an empty offline cache) and warm
#     (the cache the cold process filled); and the steady state per call
#     (median of REPEATS calls after the program);
#   - Kiln (scripts/quadrants/bench_kiln.py, the release kiln-run in fresh
#     processes, process start included): cold (an empty per-task cache: a
#     kiln-compile process compiles the tasks), warm (the filled cache) and
#     the steady state per call.
# The KIR is what `kiln-quadrants run --keep` imported (which also checks
# that Kiln agrees with Quadrants on every call first). Each figure is the
# median of REPEATS (default 5) processes.
#
# Usage: scripts/bench-quadrants.sh [REPEATS [PROGRAM.py ...]]
# (default: the six programs; scripts/quadrants/medium.py has kernels above
# the interpreter tier's bound). Needs `make quadrants` and `make
# build-release`. Figures go to docs/performance.md, sections "Quadrants
# side by side" and "Tiered compilation".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REPS=${1:-5}
shift || true
PROGRAMS=("$@")
[ ${#PROGRAMS[@]} -gt 0 ] || PROGRAMS=(testdata/quadrants/{saxpy,fill,memcpy,stencil2d,math_opts,atomic_ops}.py)
PY=$ROOT/target/quadrants-venv/bin/python
export KILN_BIN_DIR=$ROOT/target/release
for t in kiln-run kiln-compile kiln-import; do
  [ -x "$KILN_BIN_DIR/$t" ] || { echo "bench-quadrants: $KILN_BIN_DIR/$t is missing: run make build-release" >&2; exit 1; }
done
[ -x "$PY" ] || { echo "bench-quadrants: $PY is missing: run make quadrants" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-quadrants.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset KILN_TARGET_CPU KILN_TARGET_FEATURES

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-12s %-16s %12s %12s %12s | %12s %12s %12s %12s | %8s %8s %8s\n' program kernel q-cold-ms q-warm-ms q-call-ms k-cold-ms k-cold-opt k-warm-ms k-call-ms cold-x opt-x warm-x
for src in "${PROGRAMS[@]}"; do
  prog=$(basename "$src" .py)
  keep=$WORK/$prog
  KILN_QUADRANTS_PYTHON=$PY tools/kiln-quadrants run --keep "$keep" --cache-dir "$WORK/replay-cache" "$src" > "$WORK/$prog.check" 2>&1 ||
    { echo "bench-quadrants: Kiln does not agree with Quadrants on $src:" >&2; cat "$WORK/$prog.check" >&2; exit 1; }
  qcold=(); qwarm=()
  for i in $(seq "$REPS"); do
    qcold+=("$("$PY" scripts/quadrants/bench_program.py "$src" "$WORK/qcache-cold-$prog-$i" "$REPS" 2>/dev/null | tail -1)")
  done
  for i in $(seq "$REPS"); do
    qwarm+=("$("$PY" scripts/quadrants/bench_program.py "$src" "$WORK/qcache-cold-$prog-1" "$REPS" 2>/dev/null | tail -1)")
  done
  kiln=$("$PY" scripts/quadrants/bench_kiln.py "$keep" "$REPS")
  "$PY" - "$prog" "$kiln" "${qcold[@]}" -- "${qwarm[@]}" <<'PYEOF'
import json, statistics, sys
prog, kiln = sys.argv[1], json.loads(sys.argv[2])
rest = sys.argv[3:]
cut = rest.index("--")
cold = [json.loads(x) for x in rest[:cut]]
warm = [json.loads(x) for x in rest[cut + 1:]]
for k, kv in kiln.items():
    qc = statistics.median(r[k]["first_ms"] for r in cold if k in r)
    qw = statistics.median(r[k]["first_ms"] for r in warm if k in r)
    qs = statistics.median(r[k]["steady_ms"] for r in warm if k in r)
    print(f"{prog:<12} {k:<16} {qc:12.2f} {qw:12.2f} {qs:12.3f} | {kv['cold_ms']:12.2f} {kv['cold_opt_ms']:12.2f} {kv['warm_ms']:12.2f} {kv['steady_ms']:12.3f} | {qc / kv['cold_ms']:8.1f} {qc / kv['cold_opt_ms']:8.1f} {qw / kv['warm_ms']:8.1f}")
PYEOF
done
echo "cold-x, opt-x, warm-x: Quadrants' first call over Kiln's whole process (how many times sooner Kiln's kernel is ready); cold: --tier=auto (the default), opt: --tier=opt"
