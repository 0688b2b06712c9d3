#!/usr/bin/env bash
# The cache store benchmark (issue 4 "Speed"): on a cache of 100,000
# records, `kiln-cache-inspect stats`, `list --json`, `verify` (about 1 GB
# of records), `prune --max-size`, and the median time of a `get` hit of a
# 20 KB record. Prints one line per measurement; docs/performance.md
# ("Cache store") records the figures.
#
# Usage: scripts/bench-cache.sh [WORKDIR]   (default: a fresh temporary
# directory, removed at the end; it needs about 2.2 GB of free space).
# RECORDS and SIZE override the record count and object size.
set -euo pipefail
cd "$(dirname "$0")/.."

RECORDS=${RECORDS:-100000}
SIZE=${SIZE:-10000}
# The cache tools are LLVM-free: build them without the llvm feature.
cargo build --release --no-default-features --bin kiln-cache-inspect --example cache-fill --example bench-cache-get >&2
BIN=target/release
INSPECT=$BIN/kiln-cache-inspect

WORK=${1:-}
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
CACHE=$WORK/cache
rm -rf "$CACHE"

# Wall-clock seconds of a command, its output discarded.
t() {
  local start end
  start=$(date +%s%N)
  "$@" > /dev/null
  end=$(date +%s%N)
  local ms=$(( (end - start) / 1000000 ))
  printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "fill: $RECORDS records of $SIZE object bytes (no fsync): $(t $BIN/examples/cache-fill --cache-dir "$CACHE" --count "$RECORDS" --size "$SIZE" --native --no-fsync --quiet) s"
du -sh "$CACHE" | sed 's/^/cache size on disk: /'
sync
echo "stats:        $(t $INSPECT --cache-dir "$CACHE" stats) s"
echo "list --json:  $(t $INSPECT --cache-dir "$CACHE" list --json) s"
echo "verify:       $(t $INSPECT --cache-dir "$CACHE" verify) s"
echo "prune --max-size (to half, dry run): $(t $INSPECT --cache-dir "$CACHE" prune --max-size $((RECORDS * SIZE / 2)) --dry-run) s"
echo "prune --max-size (to half):          $(t $INSPECT --cache-dir "$CACHE" prune --max-size $((RECORDS * SIZE / 2))) s"
$BIN/examples/bench-cache-get --cache-dir "$CACHE" --size 20000 --iterations 20000
