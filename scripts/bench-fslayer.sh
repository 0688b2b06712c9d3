#!/usr/bin/env bash
# The cache's file-system layer and its one walk (issue 27, item 4)
# against the code before them, side by side in one run, both builds of the
# same profile:
#   1. a warm `kiln-run testdata/ten_tasks.kir` (every task a hit: open the
#      store, get ten records, flush the statistics), RUNS fresh processes
#      per build, interleaved, each build on a cache of its own that a
#      first run filled: median wall clock and CPU (user + system, from
#      wait4's rusage);
#   2. `kiln-cache-inspect` `stats`, `list --json`, `verify` and
#      `prune --max-size` (half, dry run) on one large cache of RECORDS
#      records (filled once, by AFTER's examples/cache-fill: the on-disk
#      format is the same), REPEATS runs per build, interleaved: medians;
#   3. examples/bench-evict of each build (the `put` that takes a shard
#      group over its share and evicts it, which now walks through
#      cache/scan.rs), on a fresh cache of RECORDS records each time,
#      EVICT_ROUNDS rounds (default 3).
# docs/performance.md ("File-system layer") records the figures.
#
# Usage: scripts/bench-fslayer.sh BEFORE_BIN_DIR [AFTER_BIN_DIR]
#   BEFORE_BIN_DIR holds kiln-run, kiln-compile, kiln-cache-inspect and the
#   examples bench-evict built from the commit before the layer; AFTER_BIN_DIR
#   (default target/debug, with its examples/ below it) the same from this
#   tree. RUNS (default 31), REPEATS (default 7) and RECORDS (default 20000)
#   override the counts.
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=${1:?usage: scripts/bench-fslayer.sh BEFORE_BIN_DIR [AFTER_BIN_DIR]}
AFTER=${2:-target/debug}
RUNS=${RUNS:-31}
REPEATS=${REPEATS:-7}
RECORDS=${RECORDS:-20000}
example() { if [ -x "$1/examples/$2" ]; then echo "$1/examples/$2"; else echo "$1/$2"; fi; }
for b in "$BEFORE" "$AFTER"; do
  for t in kiln-run kiln-compile kiln-cache-inspect; do
    [ -x "$b/$t" ] || { echo "bench-fslayer: $b/$t is missing" >&2; exit 1; }
  done
  [ -x "$(example "$b" bench-evict)" ] || { echo "bench-fslayer: no bench-evict in $b" >&2; exit 1; }
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-fslayer.XXXXXX")
# Many unlinks at once: one by one, each waits on the file system (see
# "Cache store" in docs/performance.md).
trap 'find "$WORK" -type f -print0 | xargs -0 -r -P 16 -n 500 rm -f; rm -rf "$WORK"' EXIT
unset KILN_TARGET_CPU KILN_TARGET_FEATURES

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
"$(example "$AFTER" cache-fill)" --cache-dir "$WORK/big" --count "$RECORDS" --size 10000 --native --no-fsync --quiet
python3 - "$BEFORE" "$AFTER" "$WORK" "$RUNS" "$REPEATS" "$RECORDS" <<'PY'
import os, statistics, subprocess, sys
before, after, work, runs, repeats, records = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:])
builds = {"before": before, "after": after}

def run(argv):
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    t0 = os.times().elapsed
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"{argv} failed: {status}")
    return (os.times().elapsed - t0) * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3

def compare(label, argv_of, n):
    res = {b: ([], []) for b in builds}
    for i in range(n):
        for b in (("before", "after") if i % 2 == 0 else ("after", "before")):
            w, c = run(argv_of(b))
            res[b][0].append(w)
            res[b][1].append(c)
    # Medians, and the least CPU time of any run: on a shared machine
    # contention only ever adds time, so the minimum is the steadiest.
    med = {b: (statistics.median(w), statistics.median(c), min(c)) for b, (w, c) in res.items()}
    (bw, bc, bm), (aw, ac, am) = med["before"], med["after"]
    print(f"{label}: before {bw:.1f} ms wall, {bc:.1f} ms CPU (min {bm:.1f}); "
          f"after {aw:.1f} ms wall, {ac:.1f} ms CPU (min {am:.1f}); "
          f"ratio after/before {aw / bw:.3f} wall, {ac / bc:.3f} CPU, {am / bm:.3f} min CPU ({n} runs each)")

kernel = "testdata/ten_tasks.kir"
warm = lambda b: [f"{builds[b]}/kiln-run", kernel, "--cache-dir", f"{work}/warm-{b}", "--digest"]
for b in builds:
    run(warm(b))  # cold: fills the cache
compare("warm ten_tasks", warm, runs)
big = f"{work}/big"
inspect = lambda *args: (lambda b: [f"{builds[b]}/kiln-cache-inspect", "--cache-dir", big, *args])
compare(f"stats ({records} records)", inspect("stats"), repeats)
compare(f"list --json ({records} records)", inspect("list", "--json"), repeats)
compare(f"verify ({records} records)", inspect("verify"), repeats)
half = str(records * 10000 // 2)
compare(f"prune --max-size half, dry run ({records} records)", inspect("prune", "--max-size", half, "--dry-run"), repeats)
PY
# bench-evict fills a cache of its own each time: EVICT_ROUNDS rounds,
# alternating which build goes first.
for round in $(seq 1 "${EVICT_ROUNDS:-3}"); do
  order="before after"; [ $((round % 2)) = 0 ] && order="after before"
  for b in $order; do
    dir=$BEFORE; [ $b = after ] && dir=$AFTER
    echo "bench-evict, $b, round $round:"
    "$(example "$dir" bench-evict)" --cache-dir "$WORK/evict-$b" --records "$RECORDS" | sed 's/^/  /'
    find "$WORK/evict-$b" -type f -print0 | xargs -0 -r -P 16 -n 500 rm -f
    rm -rf "$WORK/evict-$b"
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
