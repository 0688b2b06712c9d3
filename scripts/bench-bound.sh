#!/usr/bin/env bash
# What the automatic size bound and the lasting statistics cost (issue 9,
# part B), in one run:
#   1. a warm `kiln-run testdata/ten_tasks.kir` (every task a hit; the
#      process now also merges its counters into the scope's `stats`
#      file), this build against a build of main given as BASE_BIN_DIR,
#      RUNS fresh processes each, interleaved: median wall clock and median
#      CPU time (user + system, from wait4's rusage);
#   2. examples/bench-evict.rs: the `put` that takes a shard group of a
#      100,000-record cache over its share and evicts it down to 90 %,
#      against a whole-cache `prune --max-size` freeing as much.
# docs/performance.md ("Size bound and lasting statistics") records the
# figures.
#
# Usage: scripts/bench-bound.sh BASE_BIN_DIR [RUNS]   (default RUNS: 31)
# RECORDS overrides the record count of part 2 (default 100000).
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:?usage: scripts/bench-bound.sh BASE_BIN_DIR [RUNS]}
RUNS=${2:-31}
RECORDS=${RECORDS:-100000}
cargo build --release --bin kiln-run --example bench-evict >&2
NEW=target/release
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-bound.XXXXXX")
# Many unlinks at once: one by one, each waits on the file system (see
# "Cache store" in docs/performance.md).
trap 'find "$WORK" -type f -print0 | xargs -0 -r -P 16 -n 500 rm -f; rm -rf "$WORK"' EXIT
unset KILN_TARGET_CPU KILN_TARGET_FEATURES

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$BASE/kiln-run" "$NEW/kiln-run" "$WORK" "$RUNS" <<'PY'
import os, statistics, subprocess, sys
base, new, work, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
kernel = "testdata/ten_tasks.kir"
def run(exe, cache):
    p = subprocess.Popen([exe, kernel, "--cache-dir", cache, "--digest"], stdout=subprocess.DEVNULL)
    t0 = os.times().elapsed
    _, status, ru = os.wait4(p.pid, 0)
    wall = os.times().elapsed - t0
    if status != 0:
        sys.exit(f"{exe} failed: {status}")
    return wall * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3
results = {"main": ([], []), "this": ([], [])}
caches = {"main": os.path.join(work, "main"), "this": os.path.join(work, "this")}
exes = {"main": base, "this": new}
for name in results:
    run(exes[name], caches[name])  # cold: fills the cache
for i in range(runs):
    for name in (("main", "this") if i % 2 == 0 else ("this", "main")):
        w, c = run(exes[name], caches[name])
        results[name][0].append(w)
        results[name][1].append(c)
for name, (w, c) in results.items():
    print(f"warm ten_tasks, {name}: median {statistics.median(w):.1f} ms wall, {statistics.median(c):.1f} ms CPU "
          f"(wall p10-p90 {statistics.quantiles(w, n=10)[0]:.1f}-{statistics.quantiles(w, n=10)[-1]:.1f} ms, {runs} runs)")
mw, mc = (statistics.median(results["main"][k]) for k in (0, 1))
tw, tc = (statistics.median(results["this"][k]) for k in (0, 1))
print(f"ratio this/main: {tw / mw:.3f} wall, {tc / mc:.3f} CPU")
PY
$NEW/examples/bench-evict --cache-dir "$WORK/evict" --records "$RECORDS"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
