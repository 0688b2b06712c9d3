#!/usr/bin/env bash
# Remote-warm against local-warm, as whole kiln-run processes, on the file
# systems of the directories given (issue 44, item 13: the local copies of
# fetched records cost inode creations, which some file systems make dear).
#
# For each DIR, in fresh processes of the release kiln-run on
# testdata/ten_tasks.kir (-O2, 10 tasks), the median wall time of REPEATS
# runs of each case after 3 warm-up rounds, the cases interleaved round by
# round (one run of each case, then the next round), so that the load of a
# shared machine falls on every case alike:
#   - local-warm: a cache a cold run filled, no remote;
#   - remote-warm, empty: no local cache yet, the remote full (one
#     redis-server on a free loopback port, without persistence, stopped by
#     its pid);
#   - remote-warm, young: a local cache that holds two other kernels only
#     (few shard directories exist yet; the counters' file does);
#   - remote-warm, young, read-only: the same, with KILN_CACHE_READ_ONLY=1,
#     so the fetched records are not written: what the writes cost is the
#     difference from the row above.
# A remote-warm run's local cache is made afresh before each run. Then,
# once per case, the inodes the run made (distinct inodes of the local
# cache after the run less before it).
# With KILN_BENCH_BEFORE=DIR (a directory of another build's release
# binaries, e.g. main's), each case runs with those binaries too, in the
# same rounds (interleaved), rows marked "(before)".
#
# Usage: scripts/bench-remote-fs.sh [REPEATS] DIR...    (default 30)
# Each DIR is a directory on a file system to measure (one is made under
# it and removed). Needs redis-server.
# Figures go to docs/performance.md, section "Remote-warm on two file
# systems".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REPS=30
if [[ ${1:-} =~ ^[0-9]+$ ]]; then REPS=$1; shift; fi
if [[ $# -eq 0 ]]; then
  echo "usage: scripts/bench-remote-fs.sh [REPEATS] DIR..." >&2
  exit 2
fi
command -v redis-server > /dev/null || { echo "bench-remote-fs: needs redis-server" >&2; exit 1; }
cargo build --release --bins >&2
# Each build runs from a fresh copy of its binaries: a binary the linker
# has just written can start over 2 ms slower than a copy of it (seen on
# this machine), which would fall on one build only.
BINS=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-remote-fs-bin.XXXXXX")
trap 'rm -rf "$BINS"' EXIT
copy() { mkdir -p "$BINS/$2"; cp "$1/kiln-run" "$1/kiln-compile" "$BINS/$2/"; echo "$BINS/$2"; }
BIN=$(copy "$ROOT/target/release" this)
BEFORE=${KILN_BENCH_BEFORE:+$(copy "$KILN_BENCH_BEFORE" before)}
K=$ROOT/testdata/ten_tasks.kir
unset KILN_TARGET_CPU KILN_TARGET_FEATURES KILN_REMOTE KILN_REMOTE_READ_ONLY KILN_REMOTE_SECRET_FILE KILN_CACHE_READ_ONLY

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

inodes() { if [[ -d $1 ]]; then find "$1" -printf '%i\n' | sort -u | wc -l; else echo 0; fi; }

# The cases of one build (BIN TAG), one a line: name, the preparation
# (a shell command run before each timed run, untimed) and the command, tab
# separated; the caches set up below (filled, young) are under $w/TAG.
cases() {
  local tag=${2:+ ($2)} d=$w/$2 run="$1/kiln-run -O2 $K"
  printf '%s\t%s\t%s\n' \
    "local-warm$tag" true "env -u KILN_REMOTE KILN_CACHE_DIR=$d/filled $run" \
    "remote-warm, empty$tag" "rm -rf $d/e" "env KILN_CACHE_DIR=$d/e $run" \
    "remote-warm, young$tag" "rm -rf $d/y; cp -a $d/young $d/y" "env KILN_CACHE_DIR=$d/y $run" \
    "remote-warm, young, read-only$tag" "rm -rf $d/r; cp -a $d/young $d/r" \
    "env KILN_CACHE_DIR=$d/r KILN_CACHE_READ_ONLY=1 $run"
}

setup() {  # setup BIN TAG: the filled and young caches of that build
  local bin=$1 d=$w/$2
  mkdir -p "$d"
  KILN_REMOTE=$url KILN_CACHE_DIR=$d/filled "$bin/kiln-run" -O2 "$K" > /dev/null
  for k in saxpy reduce_sum; do KILN_CACHE_DIR=$d/young "$bin/kiln-run" -O2 "$ROOT/testdata/$k.kir" > /dev/null; done
}

count() {  # count BIN TAG: the inodes one remote-warm run makes, empty and young
  local bin=$1 d=$w/$2 before
  rm -rf "$d/c"
  KILN_REMOTE=$url KILN_CACHE_DIR=$d/c "$bin/kiln-run" -O2 "$K" > /dev/null
  echo "inodes made by one remote-warm run${2:+ ($2)}: empty $(inodes "$d/c")"
  rm -rf "$d/c"; cp -a "$d/young" "$d/c"; before=$(inodes "$d/c")
  KILN_REMOTE=$url KILN_CACHE_DIR=$d/c "$bin/kiln-run" -O2 "$K" > /dev/null
  echo "inodes made by one remote-warm run${2:+ ($2)}: young $(($(inodes "$d/c") - before))"
}

measure() {  # measure DIR
  local port pid
  w=$(mktemp -d "$1/kiln-bench-remote-fs.XXXXXX")
  port=$(free_port)
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$w" --loglevel warning > "$w/redis.log" 2>&1 &
  pid=$!
  # shellcheck disable=SC2064
  trap "kill $pid 2>/dev/null || true; rm -rf '$w'" RETURN
  for _ in $(seq 200); do redis-cli -p "$port" ping > /dev/null 2>&1 && break; sleep 0.05; done
  url=redis://127.0.0.1:$port
  setup "$BIN" ""
  cases "$BIN" "" > "$w/cases"
  if [[ -n $BEFORE ]]; then
    setup "$BEFORE" before
    cases "$BEFORE" before >> "$w/cases"
  fi
  # The optimised tier's background compiles of the fills are done.
  sleep 5
  echo "== $1 ($(findmnt -n -o FSTYPE -T "$1"), $(findmnt -n -o SOURCE -T "$1"))"
  KILN_REMOTE=$url python3 - "$w/cases" "$REPS" <<'PYEOF'
import statistics, subprocess, sys, time
cases = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
reps, times = int(sys.argv[2]), {name: [] for name, _, _ in cases}
for rnd in range(3 + reps):
    for name, prepare, command in cases:
        subprocess.run(prepare, shell=True, check=True)
        t0 = time.perf_counter()
        subprocess.run(command.split(), check=True, stdout=subprocess.DEVNULL)
        if rnd >= 3:
            times[name].append(time.perf_counter() - t0)
for name, _, _ in cases:
    tag = " (before)" if name.endswith(" (before)") else ""
    med, base = statistics.median(times[name]), statistics.median(times["local-warm" + tag])
    print(f"| {name} | {med * 1e3:.2f} | {med / base:.2f}x |")
PYEOF
  count "$BIN" ""
  [[ -z $BEFORE ]] || count "$BEFORE" before
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for dir in "$@"; do
  measure "$dir"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
