#!/usr/bin/env bash
# Warm `kiln-run` against `kiln-opt`'s whole process, on the same file, in
# one run (issue 43's "warm kiln-run / kiln-opt" target, docs/performance.md
# "Warm start"): for each build directory given (release builds holding
# kiln-run, kiln-compile and kiln-opt), the binaries are copied afresh (a
# binary's page cache moves the figure: docs/performance.md), a cache is
# filled with its optimised tier, and then ROUNDS rounds alternate the
# builds, each round one `hyperfine -N -w 5 -r 80` of the warm run and
# `kiln-opt`. Prints, per round and build, the wall medians and their
# ratio.
#
# Usage: scripts/bench-warm-ratio.sh [ROUNDS] BUILD_DIR...
#        (default 3 rounds; e.g. target/release, and a release build of
#        an earlier commit for "before")
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROUNDS=3
if [[ ${1:-} =~ ^[0-9]+$ ]]; then ROUNDS=$1; shift; fi
[ $# -gt 0 ] || { echo "usage: scripts/bench-warm-ratio.sh [ROUNDS] BUILD_DIR..." >&2; exit 2; }
command -v hyperfine > /dev/null || { echo "bench-warm-ratio: hyperfine is missing (apt-get install hyperfine)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-ratio.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset KILN_TARGET_CPU KILN_TARGET_FEATURES
INPUT=$ROOT/testdata/ten_tasks.kir

i=0
for dir in "$@"; do
  for tool in kiln-run kiln-compile kiln-opt; do
    [ -x "$dir/$tool" ] || { echo "bench-warm-ratio: $dir/$tool is missing" >&2; exit 1; }
  done
  mkdir "$WORK/$i"
  cp "$dir/kiln-run" "$dir/kiln-compile" "$dir/kiln-opt" "$WORK/$i/"
  "$WORK/$i/kiln-run" --tier=opt --cache-dir "$WORK/$i/cache" "$INPUT" > /dev/null
  i=$((i + 1))
done

for round in $(seq "$ROUNDS"); do
  i=0
  for dir in "$@"; do
    bin=$WORK/$i
    hyperfine -N -w 5 -r 80 --export-json "$WORK/round.json" \
      "$bin/kiln-run --cache-dir $bin/cache $INPUT" "$bin/kiln-opt $INPUT" > /dev/null 2> "$WORK/hyperfine.err" \
      || { cat "$WORK/hyperfine.err" >&2; exit 1; }
    python3 - "$WORK/round.json" "$round" "$dir" <<'EOF'
import json, statistics, sys
results = json.load(open(sys.argv[1]))["results"]
run, opt = (statistics.median(r["times"]) * 1e3 for r in results)
print(f"round {sys.argv[2]} {sys.argv[3]}: warm kiln-run {run:.3f} ms, kiln-opt {opt:.3f} ms, ratio {run / opt:.2f}")
EOF
    i=$((i + 1))
  done
done
