#!/usr/bin/env bash
# Remote-warm against local-warm, as whole kiln-run processes, on the file
# systems of the directories given (issue 44, item 13: the local copies of
# fetched records cost inode creations, which some file systems make dear).
#
# For each DIR, in fresh processes of the release kiln-run on
# testdata/ten_tasks.kir (-O2, 10 tasks), timed by hyperfine (median of
# REPEATS runs, 3 warm-up runs):
#   - local-warm: a cache a cold run filled, no remote;
#   - remote-warm, empty: no local cache yet, the remote full (one
#     redis-server on a free loopback port, without persistence, stopped by
#     its pid);
#   - remote-warm, young: a local cache that holds two other kernels only
#     (few shard directories and counters exist yet);
#   - remote-warm, young, read-only: the same, with KILN_CACHE_READ_ONLY=1,
#     so the fetched records are not written: what the writes cost is the
#     difference from the row above.
# A remote-warm run's local cache is made afresh before each run.
#
# Usage: scripts/bench-remote-fs.sh [REPEATS] DIR...    (default 30)
# Each DIR is a directory on a file system to measure (one is made under
# it and removed). Needs hyperfine (Debian's package `hyperfine`).
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
command -v hyperfine > /dev/null || { echo "bench-remote-fs: needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
cargo build --release --bins >&2
BIN=$ROOT/target/release
K=$ROOT/testdata/ten_tasks.kir
unset KILN_TARGET_CPU KILN_TARGET_FEATURES KILN_REMOTE KILN_REMOTE_READ_ONLY KILN_REMOTE_SECRET_FILE KILN_CACHE_READ_ONLY

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

measure() {  # measure DIR
  local w port pid
  w=$(mktemp -d "$1/kiln-bench-remote-fs.XXXXXX")
  port=$(free_port)
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$w" --loglevel warning > "$w/redis.log" 2>&1 &
  pid=$!
  # shellcheck disable=SC2064
  trap "kill $pid 2>/dev/null || true; rm -rf '$w'" RETURN
  for _ in $(seq 200); do redis-cli -p "$port" ping > /dev/null 2>&1 && break; sleep 0.05; done
  local url=redis://127.0.0.1:$port
  KILN_REMOTE=$url KILN_CACHE_DIR=$w/filled "$BIN/kiln-run" -O2 "$K" > /dev/null
  for k in saxpy reduce_sum; do KILN_CACHE_DIR=$w/young "$BIN/kiln-run" -O2 "$ROOT/testdata/$k.kir" > /dev/null; done
  echo "== $1 ($(findmnt -n -o FSTYPE -T "$1"), $(findmnt -n -o SOURCE -T "$1"))"
  KILN_REMOTE=$url hyperfine -N -w 3 -r "$REPS" --export-json "$w/results.json" \
    --prepare true -n local-warm "env -u KILN_REMOTE KILN_CACHE_DIR=$w/filled $BIN/kiln-run -O2 $K" \
    --prepare "rm -rf $w/e" -n "remote-warm, empty" "env KILN_CACHE_DIR=$w/e $BIN/kiln-run -O2 $K" \
    --prepare "sh -c 'rm -rf $w/y; cp -a $w/young $w/y'" -n "remote-warm, young" \
      "env KILN_CACHE_DIR=$w/y $BIN/kiln-run -O2 $K" \
    --prepare "sh -c 'rm -rf $w/r; cp -a $w/young $w/r'" -n "remote-warm, young, read-only" \
      "env KILN_CACHE_DIR=$w/r KILN_CACHE_READ_ONLY=1 $BIN/kiln-run -O2 $K" > /dev/null
  python3 - "$w/results.json" <<'PYEOF'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
base = next(r["median"] for r in rows if r["command"] == "local-warm")
for r in rows:
    print(f"| {r['command']} | {r['median'] * 1e3:.2f} | {r['median'] / base:.2f}x |")
PYEOF
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for dir in "$@"; do
  measure "$dir"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
