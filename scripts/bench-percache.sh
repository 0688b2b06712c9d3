#!/usr/bin/env bash
# The per-task cache against Quadrants 1.3.3, side by side, in one run.
#
# For each kernel (saxpy, a reduction, a 10-task kernel; written for each
# system: testdata/*.kir and scripts/quadrants/*.py), in fresh processes:
# the time from "kernel requested" to "kernel ready to launch"
#   - cold: an empty cache;
#   - warm: the cache the cold run filled;
#   - edit: the warm cache, and the kernel with one constant of one loop
#     changed (the same loop, the same change, in both systems);
# plus Kiln's per-task warm load (key, read, verify, add, link, look up),
# median over every task of the three kernels, many times each.
#
# Kiln: crates/kiln-jit/examples/bench-percache.rs (release build) times parse, verify,
# split, key and load/compile of every task, in-process. Quadrants:
# scripts/quadrants/harness.py times the kernel's first call minus its
# second (compile or cache load, then launch; minus the launch), with its
# offline cache in a directory of the run's own, on one CPU thread. Each
# figure is the median of REPEATS processes.
#
# Quadrants is installed from PyPI into a virtual environment
# (`python3 -m venv`, `pip install quadrants==1.3.3`); set
# KILN_BENCH_VENV=DIR to reuse one. If that fails, the script says exactly
# what happened and still measures Kiln.
#
# Usage: scripts/bench-percache.sh [REPEATS]     (default 7)
# Figures go to docs/performance.md, section "Per-task cache".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REPS=${1:-7}
cargo build --release --example bench-percache >&2
EX=$ROOT/target/release/examples/bench-percache
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-percache.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
RESULTS=$WORK/results.jsonl
: > "$RESULTS"
unset KILN_TARGET_CPU KILN_TARGET_FEATURES

KERNELS=(saxpy reduce_sum ten_tasks)
# The one-loop edit of each kernel: sed expressions for KIR and Python.
kir_edit() {
  case $1 in
    saxpy) echo 's/%eighth = const 0.125 : f32/%eighth = const 0.25 : f32/' ;;
    reduce_sum) echo 's/%k = const 1000 : i32/%k = const 999 : i32/' ;;
    ten_tasks) echo 's/%k7 = const 1000.0 : f32/%k7 = const 999.0 : f32/' ;;
  esac
}
py_edit() {
  case $1 in
    saxpy) echo 's/qd.cast(i, qd.f32) \* 0.125/qd.cast(i, qd.f32) * 0.25/' ;;
    reduce_sum) echo 's/i % 1000/i % 999/' ;;
    ten_tasks) echo 's/energy\[i7\] \* 1000.0/energy[i7] * 999.0/' ;;
  esac
}

# record SYSTEM KERNEL PHASE JSON
record() {
  python3 -c 'import json,sys; d=json.loads(sys.argv[4]); d.update(system=sys.argv[1], kernel=sys.argv[2], phase=sys.argv[3]); print(json.dumps(d))' \
    "$1" "$2" "$3" "$4" >> "$RESULTS"
}

echo "== Kiln ($REPS processes per figure) ==" >&2
for k in "${KERNELS[@]}"; do
  src=$ROOT/testdata/$k.kir
  edited=$WORK/$k.edited.kir
  sed "$(kir_edit "$k")" "$src" > "$edited"
  cmp -s "$src" "$edited" && { echo "edit of $k changed nothing" >&2; exit 1; }
  for i in $(seq "$REPS"); do
    record kiln "$k" cold "$("$EX" "$src" --cache-dir "$WORK/kiln-cold-$k-$i")"
  done
  warm=$WORK/kiln-cold-$k-1
  for i in $(seq "$REPS"); do
    record kiln "$k" warm "$("$EX" "$src" --cache-dir "$warm")"
  done
  for i in $(seq "$REPS"); do
    cp -a "$warm" "$WORK/kiln-edit-$k-$i"
    record kiln "$k" edit "$("$EX" "$edited" --cache-dir "$WORK/kiln-edit-$k-$i")"
  done
  record kiln "$k" per_task "$("$EX" "$src" --cache-dir "$warm" --per-task-loads 100)"
  echo "  $k done" >&2
done

QUADRANTS_STATUS=ok
VENV=${KILN_BENCH_VENV:-$WORK/venv}
echo "== Quadrants 1.3.3 ==" >&2
if [ ! -x "$VENV/bin/python" ] && ! python3 -m venv "$VENV" > "$WORK/venv.log" 2>&1; then
  QUADRANTS_STATUS="python3 -m venv failed: $(tail -1 "$WORK/venv.log")"
elif ! "$VENV/bin/python" -c 'import quadrants' > /dev/null 2>&1 &&
     ! "$VENV/bin/pip" install -q quadrants==1.3.3 > "$WORK/pip.log" 2>&1; then
  QUADRANTS_STATUS="pip install quadrants==1.3.3 failed: $(tail -2 "$WORK/pip.log" | tr '\n' ' ')"
fi
if [ "$QUADRANTS_STATUS" = ok ]; then
  for k in "${KERNELS[@]}"; do
    src=$ROOT/scripts/quadrants/$k.py
    edited=$WORK/$k.edited.py
    sed "$(py_edit "$k")" "$src" > "$edited"
    cmp -s "$src" "$edited" && { echo "edit of $k.py changed nothing" >&2; exit 1; }
    q() { "$VENV/bin/python" "$ROOT/scripts/quadrants/harness.py" "$1" "$2" 2> "$WORK/q.err" | tail -1; }
    for i in $(seq "$REPS"); do
      out=$(q "$src" "$WORK/q-cold-$k-$i") || { QUADRANTS_STATUS="running $k failed: $(tail -3 "$WORK/q.err" | tr '\n' ' ')"; break 2; }
      record quadrants "$k" cold "$out"
    done
    warm=$WORK/q-cold-$k-1
    for i in $(seq "$REPS"); do
      record quadrants "$k" warm "$(q "$src" "$warm")"
    done
    for i in $(seq "$REPS"); do
      cp -a "$warm" "$WORK/q-edit-$k-$i"
      record quadrants "$k" edit "$(q "$edited" "$WORK/q-edit-$k-$i")"
    done
    echo "  $k done" >&2
  done
fi

# The report: medians, and the four targets.
python3 - "$RESULTS" "$QUADRANTS_STATUS" "$REPS" <<'EOF'
import json, statistics, sys, platform, os
rows = [json.loads(l) for l in open(sys.argv[1])]
status, reps = sys.argv[2], sys.argv[3]
def med(system, kernel, phase, field="ready_ms"):
    v = [r[field] for r in rows if r["system"] == system and r["kernel"] == kernel and r["phase"] == phase]
    return statistics.median(v) if v else None
def fmt(x, d=1):
    return "—" if x is None else f"{x:.{d}f}"
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(f"Machine: {cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}; load average {os.getloadavg()[0]:.1f}")
print(f"Quadrants 1.3.3: {status}")
print(f"Each figure: median of {reps} fresh processes, milliseconds from kernel requested to ready to launch.")
print()
print("| kernel | tasks | Kiln cold | Kiln warm | Kiln edit (1 task compiled) | one task's compile | Quadrants cold | Quadrants warm | Quadrants edit |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
targets = []
for k in ["saxpy", "reduce_sum", "ten_tasks"]:
    tasks = next((r["tasks"] for r in rows if r["system"] == "kiln" and r["kernel"] == k), 0)
    kc, kw, ke = med("kiln", k, "cold"), med("kiln", k, "warm"), med("kiln", k, "edit")
    one = med("kiln", k, "edit", "compile_ms")
    qc, qw, qe = med("quadrants", k, "cold"), med("quadrants", k, "warm"), med("quadrants", k, "edit")
    misses = {r["misses"] for r in rows if r["system"] == "kiln" and r["kernel"] == k and r["phase"] == "edit"}
    hits_warm = {r["hits"] for r in rows if r["system"] == "kiln" and r["kernel"] == k and r["phase"] == "warm"}
    assert misses == {1}, f"{k}: edit runs missed {misses} tasks, not one"
    assert hits_warm == {tasks}, f"{k}: warm runs hit {hits_warm} of {tasks}"
    print(f"| {k} | {tasks} | {fmt(kc)} | {fmt(kw, 2)} | {fmt(ke, 2)} | {fmt(one, 2)} | {fmt(qc)} | {fmt(qw)} | {fmt(qe)} |")
    targets.append((k, kc / kw, (qw / kw) if qw else None, ke / (kw + one)))
print()
print("| kernel | Kiln cold / warm (target ≥ 20) | Quadrants warm / Kiln warm (target ≥ 10) | edit / (warm + one task's compile) (target ≤ 1.3) |")
print("|---|---:|---:|---:|")
for k, a, b, c in targets:
    print(f"| {k} | {a:.0f}× | {'—' if b is None else f'{b:.0f}×'} | {c:.2f} |")
print()
pt = [r["per_task_load_ms"] for r in rows if r["phase"] == "per_task"]
samples = sum(p["samples"] for p in pt)
allmed = statistics.median(p["median"] for p in pt)
print(f"Per-task warm load (key, read, verify, add, link, look up), {samples} loads over the three kernels' tasks:")
print("| kernel | median | q1 | q3 | key | read + verify | add | link + look up |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    if r["phase"] == "per_task":
        p = r["per_task_load_ms"]
        print(f"| {r['kernel']} | {p['median']*1e3:.0f} µs | {p['q1']*1e3:.0f} µs | {p['q3']*1e3:.0f} µs | {p['key_median']*1e3:.0f} µs | {p['read_verify_median']*1e3:.0f} µs | {p['add_median']*1e3:.0f} µs | {p['link_lookup_median']*1e3:.0f} µs |")
print(f"\nMedian of the kernels' medians: {allmed*1e3:.0f} µs (target < 500 µs)")
EOF
