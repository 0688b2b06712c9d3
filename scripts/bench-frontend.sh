#!/usr/bin/env bash
# Front-end benchmark: kiln-opt (parse, verify, print) against LLVM 22's
# `opt -S` on an LLVM IR file of the same size, side by side in one run.
# Prints MB/s and peak RSS for both and the ratio; see docs/performance.md.
#
#   scripts/bench-frontend.sh [MB]        (default 50)
#
# Installs GNU time (for peak RSS) when it is missing and we are root.
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${1:-50}
OPT=/usr/lib/llvm-22/bin/opt
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

if [ ! -x /usr/bin/time ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null
  else
    echo "bench-frontend: GNU time is missing; run as root: apt-get install -y time" >&2
    exit 1
  fi
fi
[ -x "$OPT" ] || { echo "bench-frontend: $OPT is missing (make deps installs LLVM 22)" >&2; exit 1; }

cargo build --release --quiet --bin kiln-opt --example gen-large
BIN=target/release

"$BIN/examples/gen-large" --kir "$WORK/large.kir" --ll "$WORK/large.ll" --mb "$MB"

# Runs "$@" three times; prints the fastest wall time, the least CPU time
# (user + system, all threads) and the largest peak RSS. CPU time is the
# figure to compare on a busy machine, where wall time measures the load.
measure() {
  local best_t="" best_cpu="" max_rss=0
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$@" >/dev/null
    read -r t u s rss <"$WORK/time"
    cpu=$(awk "BEGIN{print $u + $s}")
    if [ -z "$best_t" ] || awk "BEGIN{exit !($t < $best_t)}"; then best_t=$t; fi
    if [ -z "$best_cpu" ] || awk "BEGIN{exit !($cpu < $best_cpu)}"; then best_cpu=$cpu; fi
    if [ "$rss" -gt "$max_rss" ]; then max_rss=$rss; fi
  done
  echo "$best_t $best_cpu $max_rss"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
kir_bytes=$(stat -c %s "$WORK/large.kir")
ll_bytes=$(stat -c %s "$WORK/large.ll")
read -r kt kc krss < <(measure "$BIN/kiln-opt" "$WORK/large.kir" -o "$WORK/out.kir")
read -r lt lc lrss < <(measure "$OPT" -S "$WORK/large.ll" -o "$WORK/out.ll")
cmp -s "$WORK/large.kir" "$WORK/out.kir" || echo "note: kiln-opt output differs from the (canonical) input"

awk -v kb="$kir_bytes" -v lb="$ll_bytes" -v kt="$kt" -v lt="$lt" -v kc="$kc" -v lc="$lc" -v kr="$krss" -v lr="$lrss" 'BEGIN {
  printf "machine: %s, %d cores, load average %s before, %s after\n", "'"$(uname -m)"'", '"$(nproc)"', "'"$load_before"'", "'"$(cut -d' ' -f1-3 /proc/loadavg)"'"
  printf "%-10s %7s %8s %9s %8s %9s %12s %10s\n", "tool", "MB", "wall s", "MB/s", "CPU s", "MB/CPU-s", "peak RSS MB", "RSS/input"
  printf "%-10s %7.1f %8.2f %9.1f %8.2f %9.1f %12.1f %10.2f\n", "kiln-opt", kb/1e6, kt, kb/1e6/kt, kc, kb/1e6/kc, kr/1024, kr*1024/kb
  printf "%-10s %7.1f %8.2f %9.1f %8.2f %9.1f %12.1f %10.2f\n", "opt -S", lb/1e6, lt, lb/1e6/lt, lc, lb/1e6/lc, lr/1024, lr*1024/lb
  printf "ratio kiln-opt / opt -S: %.2fx by wall time, %.2fx by CPU time; peak RSS %.2fx the input (target: 5x, <= 3x)\n", (kb/kt)/(lb/lt), (kb/kc)/(lb/lc), kr*1024/kb
}'
