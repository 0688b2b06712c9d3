#!/usr/bin/env bash
# Functions compiled once (docs/performance.md, "Functions compiled once"):
# K kernels each calling the head of one shared chain of L functions
# (scripts/gen-shared-chain.py; default 100 x 500, a 39 KB input), compiled
# by this tree's tools ("after") and by BEFORE_BIN's ("before", a build of
# the commit before function records), in the same run:
#
#   - `kiln-compile -O2 -o DIR/`: wall, user + system CPU, peak RSS, the
#     objects' total size and count;
#   - `kiln-run --cache-dir` cold (an empty cache) and warm: wall, CPU,
#     peak RSS, and after's `functions_compiled` / `function_hits`;
#   - warm `kiln-run testdata/ten_tasks.kir` (no function records), RUNS
#     runs each with hyperfine: the warm start must not move.
#
# Times are /usr/bin/time's (one process each) on a shared machine: read
# the ratios, which the script prints.
#
# Usage: BEFORE_BIN=/path/to/target/debug scripts/bench-functions.sh [K L [RUNS]]
# (AFTER_BIN defaults to target/debug, which must be built.)
set -euo pipefail
cd "$(dirname "$0")/.."
K=${1:-100}
L=${2:-500}
RUNS=${3:-20}
AFTER=${AFTER_BIN:-$PWD/target/debug}
BEFORE=${BEFORE_BIN:?set BEFORE_BIN to a directory holding the earlier kiln-compile and kiln-run}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-functions.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset KILN_TARGET_CPU KILN_TARGET_FEATURES KILN_REMOTE
export HOME=$WORK/home KILN_CACHE_DIR=$WORK/default-cache

python3 scripts/gen-shared-chain.py "$K" "$L" > "$WORK/chain.kir"
echo "input: $K kernels x $L functions, $(stat -c %s "$WORK/chain.kir") bytes; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"

# measure LABEL CMD...: one process under /usr/bin/time; prints wall, CPU
# and peak RSS, and keeps them in $WALL $CPU $RSS.
measure() {
  local label=$1
  shift
  /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$@" > /dev/null 2> "$WORK/stderr" || {
    cat "$WORK/stderr" >&2
    exit 1
  }
  read -r WALL USER SYS RSS < "$WORK/time"
  CPU=$(echo "$USER + $SYS" | bc)
  printf "%-34s wall %7.2f s  cpu %7.2f s  peak %7.1f MB\n" "$label" "$WALL" "$CPU" "$(echo "$RSS / 1024" | bc -l)"
}

declare -A CPU_OF RSS_OF
for side in before after; do
  bin=$BEFORE
  [ $side = after ] && bin=$AFTER
  rm -rf "$WORK/objs-$side"
  measure "$side: kiln-compile -O2 -o DIR/" "$bin/kiln-compile" -O2 "$WORK/chain.kir" -o "$WORK/objs-$side/"
  CPU_OF[compile-$side]=$CPU
  RSS_OF[compile-$side]=$RSS
  size=$(du -cb "$WORK/objs-$side"/*.o | tail -1 | cut -f1)
  echo "$side: $(ls "$WORK/objs-$side" | wc -l) objects, $size bytes"
  measure "$side: kiln-run cold" "$bin/kiln-run" -O2 --cache-dir "$WORK/cache-$side" "$WORK/chain.kir"
  CPU_OF[cold-$side]=$CPU
  measure "$side: kiln-run warm" "$bin/kiln-run" -O2 --cache-dir "$WORK/cache-$side" "$WORK/chain.kir"
  CPU_OF[warm-$side]=$CPU
done
"$AFTER/kiln-run" -O2 --cache-dir "$WORK/cache-recount" "$WORK/chain.kir" --stats=json 2>&1 > /dev/null \
  | grep -o '"functions_compiled":[0-9]*' | sed 's/^/after, cold: /'
"$AFTER/kiln-run" -O2 --cache-dir "$WORK/cache-recount" "$WORK/chain.kir" --stats=json 2>&1 > /dev/null \
  | grep -o '"function_hits":[0-9]*' | sed 's/^/after, warm: /'
for what in compile cold warm; do
  printf "before / after, %-8s cpu %.2fx\n" "$what" "$(echo "${CPU_OF[$what-before]} / ${CPU_OF[$what-after]}" | bc -l)"
done
printf "before / after, compile  peak RSS %.2fx\n" "$(echo "${RSS_OF[compile-before]} / ${RSS_OF[compile-after]}" | bc -l)"

# The warm start of a kernel file without function records.
"$BEFORE/kiln-run" --cache-dir "$WORK/ten-before" testdata/ten_tasks.kir > /dev/null
"$AFTER/kiln-run" --cache-dir "$WORK/ten-after" testdata/ten_tasks.kir > /dev/null
hyperfine -N -w 3 -r "$RUNS" --export-json "$WORK/ten.json" \
  -n before "$BEFORE/kiln-run --cache-dir $WORK/ten-before testdata/ten_tasks.kir" \
  -n after "$AFTER/kiln-run --cache-dir $WORK/ten-after testdata/ten_tasks.kir" > /dev/null
python3 - "$WORK/ten.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
for n in ("before", "after"):
    x = r[n]
    print("warm ten_tasks, %-6s median %.1f ms  min %.1f ms  cpu %.1f ms" % (n, x["median"] * 1e3, x["min"] * 1e3, (x["user"] + x["system"]) * 1e3))
print("warm ten_tasks, after / before: median %.2fx, min %.2fx" % (r["after"]["median"] / r["before"]["median"], r["after"]["min"] / r["before"]["min"]))
PY
