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
# A remote-warm run's local cache is made afresh before each run. Then,
# once per case, the inodes the run made (distinct inodes of the local
# cache after the run less before it).
# With KILN_BENCH_BEFORE=DIR (a directory of another build's release
# binaries, e.g. main's), each case runs with those binaries too, in the
# same hyperfine run (alternated), rows marked "(before)".
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
BEFORE=${KILN_BENCH_BEFORE:-}
K=$ROOT/testdata/ten_tasks.kir
unset KILN_TARGET_CPU KILN_TARGET_FEATURES KILN_REMOTE KILN_REMOTE_READ_ONLY KILN_REMOTE_SECRET_FILE KILN_CACHE_READ_ONLY

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

inodes() { if [[ -d $1 ]]; then find "$1" -printf '%i\n' | sort -u | wc -l; else echo 0; fi; }

# The cases of one build (BIN TAG): hyperfine arguments, the caches set up
# below (filled, young) under $w/TAG.
cases() {
  local bin=$1 tag=$2 d=$w/$2 name
  name() { echo "$1${tag:+ ($tag)}"; }
  printf '%s\0' \
    --prepare true -n "$(name local-warm)" "env -u KILN_REMOTE KILN_CACHE_DIR=$d/filled $bin/kiln-run -O2 $K" \
    --prepare "rm -rf $d/e" -n "$(name "remote-warm, empty")" "env KILN_CACHE_DIR=$d/e $bin/kiln-run -O2 $K" \
    --prepare "sh -c 'rm -rf $d/y; cp -a $d/young $d/y'" -n "$(name "remote-warm, young")" \
      "env KILN_CACHE_DIR=$d/y $bin/kiln-run -O2 $K" \
    --prepare "sh -c 'rm -rf $d/r; cp -a $d/young $d/r'" -n "$(name "remote-warm, young, read-only")" \
      "env KILN_CACHE_DIR=$d/r KILN_CACHE_READ_ONLY=1 $bin/kiln-run -O2 $K"
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
  local args=()
  setup "$BIN" ""
  while IFS= read -r -d '' a; do args+=("$a"); done < <(cases "$BIN" "")
  if [[ -n $BEFORE ]]; then
    setup "$BEFORE" before
    local i=0 b=()
    while IFS= read -r -d '' a; do b+=("$a"); done < <(cases "$BEFORE" before)
    # Alternate: each case of this build, then the same case before.
    local mixed=()
    for ((i = 0; i < ${#args[@]}; i += 5)); do mixed+=("${args[@]:i:5}" "${b[@]:i:5}"); done
    args=("${mixed[@]}")
  fi
  # The optimised tier's background compiles of the fills are done.
  sleep 5
  echo "== $1 ($(findmnt -n -o FSTYPE -T "$1"), $(findmnt -n -o SOURCE -T "$1"))"
  KILN_REMOTE=$url hyperfine -N -w 3 -r "$REPS" --export-json "$w/results.json" "${args[@]}" > /dev/null
  python3 - "$w/results.json" <<'PYEOF'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
for r in rows:
    tag = " (before)" if r["command"].endswith(" (before)") else ""
    base = next(x["median"] for x in rows if x["command"] == "local-warm" + tag)
    print(f"| {r['command']} | {r['median'] * 1e3:.2f} | {r['median'] / base:.2f}x |")
PYEOF
  count "$BIN" ""
  [[ -z $BEFORE ]] || count "$BEFORE" before
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for dir in "$@"; do
  measure "$dir"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
