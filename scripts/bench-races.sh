#!/usr/bin/env bash
# What the interpreter's race detector and iteration orders cost (issue 13),
# in one run: examples/bench-interp.rs on saxpy over N floats, one fresh
# process per measurement, the modes interleaved ROUNDS times:
#   plain            the kernel as written (a plain `for`, no offload)
#   ascending        offloaded; the range_for's iterations in order
#   shuffle          offloaded; iterations in a seeded shuffle
#   check:ascending  offloaded, with --check-races' shadow state
#   check:shuffle    the same in shuffled order
# and, for the shadow memory, check:ascending touching N elements of
# fields of 16 N (peak RSS should follow the elements touched, not the
# fields' size). Medians of CPU time (user + system) and of peak RSS;
# ratios against plain. docs/performance.md ("Race detector") records the
# figures.
#
# Usage: scripts/bench-races.sh [N] [REPS] [ROUNDS]   (default 1048576 10 5)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1048576}
REPS=${2:-10}
ROUNDS=${3:-5}
cargo build --release --example bench-interp >&2
EXE=target/release/examples/bench-interp
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$EXE" "$N" "$REPS" "$ROUNDS" <<'PY'
import re, statistics, subprocess, sys
exe, n, reps, rounds = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
modes = [("plain", n), ("ascending", n), ("shuffle", n), ("check:ascending", n), ("check:shuffle", n),
         ("plain", 16 * n), ("check:ascending", 16 * n)]
res = {m: [] for m in modes}
for _ in range(rounds):
    for mode, length in modes:
        out = subprocess.run([exe, str(n), reps, mode, str(length)], check=True, capture_output=True, text=True).stdout
        m = re.search(r"([\d.]+) s, cpu ([\d.]+) s, peak rss (\d+) KiB", out)
        res[(mode, length)].append((float(m.group(1)), float(m.group(2)), int(m.group(3))))
def med(mode, length, i):
    return statistics.median(r[i] for r in res[(mode, length)])
base_cpu, base_rss = med("plain", n, 1), med("plain", n, 2)
print(f"N = {n}, {reps} runs per process, {rounds} processes per mode (medians)")
# saxpy touches N elements of each of its two fields.
print(f"{'mode':<18} {'fields':>9} {'wall s':>8} {'cpu s':>8} {'x plain':>8} {'peak RSS KiB':>13} {'+ KiB':>8} {'B/touched':>9}")
for mode, length in modes:
    cpu, rss = med(mode, length, 1), med(mode, length, 2)
    plain_rss = med("plain", length, 2)
    extra = rss - plain_rss
    print(f"{mode:<18} {length:>9} {med(mode, length, 0):>8.3f} {cpu:>8.3f} {cpu / base_cpu:>8.2f} {rss:>13} {extra:>8} {extra * 1024 / (2 * n):>9.1f}")
PY
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
