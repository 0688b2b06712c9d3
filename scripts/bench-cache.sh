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
# The cache tools are LLVM-free (the root package, which links no LLVM).
cargo build --release --bin kiln-cache-inspect --example cache-fill --example bench-cache-get >&2
BIN=target/release
INSPECT=$BIN/kiln-cache-inspect

WORK=${1:-}
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d)
  # Prune first: it unlinks in parallel, much faster than rm where each
  # unlink waits on the file system (e.g. ext4 mounted with discard).
  trap '$INSPECT --cache-dir "$WORK/cache" prune --max-size 0 > /dev/null 2>&1; rm -rf "$WORK"' EXIT
fi
CACHE=$WORK/cache
rm -rf "$CACHE"

# Wall-clock, user and system seconds of a command, its output discarded.
TIMEFORMAT='%R s (user %U s, sys %S s)'
t() {
  { time "$@" > /dev/null; } 2>&1
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr), $(free -g | awk '/Mem:/ {print $2}') GB"
echo "file system: $(findmnt -no FSTYPE,OPTIONS --target "$WORK" 2>/dev/null || echo unknown)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "fill: $RECORDS records of $SIZE object bytes (no fsync): $(t $BIN/examples/cache-fill --cache-dir "$CACHE" --count "$RECORDS" --size "$SIZE" --native --no-fsync --quiet)"
du -sh "$CACHE" | sed 's/^/cache size on disk: /'
sync
echo "stats:        $(t $INSPECT --cache-dir "$CACHE" stats)"
echo "list --json:  $(t $INSPECT --cache-dir "$CACHE" list --json)"
echo "verify:       $(t $INSPECT --cache-dir "$CACHE" verify)"
echo "prune --max-size (to half, dry run): $(t $INSPECT --cache-dir "$CACHE" prune --max-size $((RECORDS * SIZE / 2)) --dry-run)"
echo "prune --max-size (to half):          $(t $INSPECT --cache-dir "$CACHE" prune --max-size $((RECORDS * SIZE / 2)))"
$BIN/examples/bench-cache-get --cache-dir "$CACHE" --size 20000 --iterations 20000
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
