#!/usr/bin/env bash
# Warm start, whole processes, side by side in one run: `kiln-run` of this
# tree (release: LLVM linked statically, see build.rs) against a dynamic
# build (the shared libLLVM), with `kiln-opt` on the same file as the floor
# without LLVM. Figures go to docs/performance.md, section "Warm start".
#
#   - `kiln-run --version`;
#   - warm `kiln-run testdata/ten_tasks.kir` (every task a cache hit);
#   - cold `kiln-run testdata/ten_tasks.kir` (an empty cache each run);
#   - `kiln-opt testdata/ten_tasks.kir`;
#   - the per-task warm load (key, read, verify, add, link, look up:
#     crates/kiln-jit/examples/bench-percache.rs --per-task-loads);
#   - the release binaries' sizes.
#
# Whole-process times are hyperfine's (Debian package `hyperfine`): wall
# median, and user + system CPU (means), which a shared machine disturbs
# less. The dynamic build: KILN_BENCH_DYNAMIC=DIR holding its `kiln-run`
# and `kiln-compile` (kiln-run compiles in the kiln-compile beside it);
# else this script builds them (KILN_LLVM_LINK=dynamic; this rebuilds the
# kiln crate twice, several minutes). KILN_BENCH_BEFORE=DIR adds the
# `kiln-run` in DIR (a static build of an earlier commit) to every
# comparison, as "before".
#
# Usage: scripts/bench-warm.sh [RUNS]     (default 30 runs per figure and
# round; KILN_BENCH_ROUNDS rounds of the --version and warm figures,
# default 5, pooled)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${1:-30}
ROUNDS=${KILN_BENCH_ROUNDS:-5}
command -v hyperfine > /dev/null || { echo "bench-warm: hyperfine is missing (apt-get install hyperfine)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-warm.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset KILN_TARGET_CPU KILN_TARGET_FEATURES

DYN=${KILN_BENCH_DYNAMIC:-}
if [ -z "$DYN" ]; then
  KILN_LLVM_LINK=dynamic nice -n 10 cargo build --release --bin kiln-run --bin kiln-compile >&2
  DYN=$WORK/dynamic-build
  mkdir -p "$DYN"
  cp target/release/kiln-run target/release/kiln-compile "$DYN/"
fi
nice -n 10 cargo build --release --bins --example bench-percache >&2
BUILT=$ROOT/target/release
BEFORE=${KILN_BENCH_BEFORE:-}
# Each must be what it claims to be.
readelf -d "$DYN/kiln-run" | grep -q 'libLLVM' || { echo "bench-warm: $DYN/kiln-run does not load libLLVM" >&2; exit 1; }
for b in "$BUILT/kiln-run" ${BEFORE:+"$BEFORE/kiln-run"}; do
  if readelf -d "$b" | grep -q 'libLLVM'; then
    echo "bench-warm: $b loads libLLVM (not a static build)" >&2
    exit 1
  fi
done
# kiln-run links none of LLVM's code generator (it compiles in the
# kiln-compile beside it): no X86 code generator, instruction selection or
# pass pipeline builder in its symbols, while kiln-compile has them.
codegen_syms() { nm "$1" | grep -c -E 'X86TargetMachine|SelectionDAGISel|11PassBuilder' || true; }
[ "$(codegen_syms "$BUILT/kiln-run")" = 0 ] || { echo "bench-warm: $BUILT/kiln-run links LLVM's code generator" >&2; exit 1; }
[ "$(codegen_syms "$BUILT/kiln-compile")" != 0 ] || { echo "bench-warm: the code generator check finds nothing in kiln-compile" >&2; exit 1; }
# Every side runs a copy made here the same way: how a binary's file was
# written decides how the kernel caches its pages, and a binary as the
# linker wrote it took more page faults and CPU time to start than a
# copy of it (docs/performance.md, "Warm start").
copy() { mkdir -p "$WORK/$1"; cp "${@:2}" "$WORK/$1/"; }
copy dynamic "$DYN/kiln-run" "$DYN/kiln-compile"
copy static "$BUILT/kiln-run" "$BUILT/kiln-opt" "$BUILT/kiln-compile"
NEW=$WORK/static
if [ -n "$BEFORE" ]; then
  copy before "$BEFORE/kiln-run" $(ls "$BEFORE/kiln-compile" 2>/dev/null)
  BEFORE=$WORK/before
fi
SIZES_DYN=$DYN
DYN=$WORK/dynamic

FILE=$ROOT/testdata/ten_tasks.kir
"$NEW/kiln-run" "$FILE" --cache-dir "$WORK/warm-new" > /dev/null
"$DYN/kiln-run" "$FILE" --cache-dir "$WORK/warm-dyn" > /dev/null
SIDES=("$NEW:warm-new" "$DYN:warm-dyn")
# The optional third side's hyperfine arguments, per figure.
B_VER=() B_WARM=() B_COLD=()
if [ -n "$BEFORE" ]; then
  "$BEFORE/kiln-run" "$FILE" --cache-dir "$WORK/warm-before" > /dev/null
  SIDES+=("$BEFORE:warm-before")
  B_VER=(-n "before --version" "$BEFORE/kiln-run --version")
  B_WARM=(-n "before warm" "$BEFORE/kiln-run $FILE --cache-dir $WORK/warm-before")
  B_COLD=(-n "before cold" "$BEFORE/kiln-run $FILE --cache-dir $WORK/cold")
fi
# Every task of a warm run is a hit.
for b in "${SIDES[@]}"; do
  hits=$("${b%%:*}/kiln-run" "$FILE" --cache-dir "$WORK/${b##*:}" --stats=json 2>&1 > /dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["hits"], d["tasks"])')
  [ "${hits% *}" = "${hits#* }" ] || { echo "bench-warm: warm run of ${b%%:*} hit $hits" >&2; exit 1; }
done

hf() { hyperfine -N --style none --export-json "$WORK/$1.json" "${@:2}" > /dev/null; }
# hyperfine runs one command's runs, then the next's: a machine whose
# speed drifts (other tenants) favours one side. So the quick figures are
# taken in ROUNDS rounds of RUNS runs each, and pooled.
for r in $(seq "$ROUNDS"); do
  hf "version$r" -w 5 -r "$RUNS" -n "dynamic --version" "$DYN/kiln-run --version" "${B_VER[@]}" -n "static --version" "$NEW/kiln-run --version"
  hf "warm$r" -w 5 -r "$RUNS" \
    -n "dynamic warm" "$DYN/kiln-run $FILE --cache-dir $WORK/warm-dyn" "${B_WARM[@]}" \
    -n "static warm" "$NEW/kiln-run $FILE --cache-dir $WORK/warm-new" \
    -n "kiln-opt" "$NEW/kiln-opt $FILE"
done
COLD=$(( RUNS / 3 > 5 ? RUNS / 3 : 5 ))
hf cold -r "$COLD" --prepare "rm -rf $WORK/cold" \
  -n "dynamic cold" "$DYN/kiln-run $FILE --cache-dir $WORK/cold" "${B_COLD[@]}" \
  -n "static cold" "$NEW/kiln-run $FILE --cache-dir $WORK/cold"
"$BUILT/examples/bench-percache" "$FILE" --cache-dir "$WORK/warm-new" --per-task-loads 100 > "$WORK/per-task.json"

python3 - "$WORK" "$SIZES_DYN" "$BUILT" <<'EOF'
import json, os, platform, statistics, sys
work, dyn, new = sys.argv[1:]
import glob
# Pool each command's rounds: all its times, and its CPU means averaged.
pooled = {}
for f in ["version", "warm", "cold"]:
    for path in sorted(glob.glob(f"{work}/{f}*.json")):
        for r in json.load(open(path))["results"]:
            p = pooled.setdefault(r["command"], {"command": r["command"], "times": [], "cpu": []})
            p["times"] += r["times"]
            p["cpu"].append(r["user"] + r["system"])
rows = [dict(p, user=statistics.mean(p["cpu"]), system=0.0) for p in pooled.values()]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(f"Machine: {cpu}, {os.cpu_count()} CPUs, Linux {platform.release()}; load average {os.getloadavg()[0]:.1f}")
print()
print("| command | runs | wall median ms | wall q1–q3 ms | CPU ms (user + sys, mean) |")
print("|---|---:|---:|---:|---:|")
by = {}
for r in rows:
    t = sorted(r["times"])
    q = lambda p: t[round((len(t) - 1) * p)] * 1e3
    by[r["command"]] = (statistics.median(t) * 1e3, (r["user"] + r["system"]) * 1e3)
    print(f"| {r['command']} | {len(t)} | {by[r['command']][0]:.1f} | {q(0.25):.1f}–{q(0.75):.1f} | {by[r['command']][1]:.1f} |")
print()
for side in ["dynamic", "before"]:
    for what in ["--version", "warm", "cold"]:
        a, b = f"{side} {what}", f"static {what}"
        if a in by:
            print(f"- {b} / {a}: wall {by[b][0] / by[a][0]:.2f}, CPU {by[b][1] / by[a][1]:.2f}")
print(f"- static warm / kiln-opt: wall {by['static warm'][0] / by['kiln-opt'][0]:.2f}")
p = json.load(open(f"{work}/per-task.json"))["per_task_load_ms"]
print()
print(f"Per-task warm load, {p['samples']} loads: median {p['median']*1e3:.0f} µs (q1 {p['q1']*1e3:.0f}, q3 {p['q3']*1e3:.0f}); "
      f"key {p['key_median']*1e3:.0f}, read + verify {p['read_verify_median']*1e3:.0f}, add {p['add_median']*1e3:.0f}, "
      f"link + look up {p['link_lookup_median']*1e3:.0f} µs")
print()
print("| binary | dynamic build | static build |")
print("|---|---:|---:|")
mb = lambda f: f"{os.path.getsize(f) / 1e6:.1f} MB" if os.path.exists(f) else "—"
for b in ["kiln-run", "kiln-compile", "kiln-opt", "kiln-key", "kiln-cache-inspect"]:
    print(f"| {b} | {mb(os.path.join(dyn, b))} | {mb(os.path.join(new, b))} |")
EOF
