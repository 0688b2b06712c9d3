#!/usr/bin/env bash
# The remote tier on loopback: remote-warm against local-warm and cold, a
# fleet simulation, and a remote that is down, in one run.
#
# For testdata/ten_tasks.kir (and, in the fleet, saxpy and reduce_sum
# too), in fresh processes of examples/bench-percache.rs (release, -O2),
# the time from "kernel requested" to "kernel ready to launch":
#   - cold: an empty local store, no remote;
#   - local-warm: the local store a cold run filled, no remote;
#   - remote-warm: an empty local store each time, a remote a cold run
#     filled (one redis-server started here on a free loopback port,
#     without persistence, stopped by its pid);
#   - down: local-warm and cold with KILN_REMOTE pointing at a port
#     nothing listens on (the connect is refused at once), and cold with a
#     SIGSTOPped server (connections accepted by the kernel, never
#     answered: the connect timeout, 100 ms, is paid once).
# Fleet: N=8 machines (separate local stores) run the three kernels in
# turn, with one shared remote and without; total tasks compiled.
#
# Usage: scripts/bench-remote.sh [REPEATS]     (default 7)
# Figures go to docs/performance.md, section "Remote tier".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REPS=${1:-7}
cargo build --release --example bench-percache >&2
EX=$ROOT/target/release/examples/bench-percache
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-remote.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
unset KILN_TARGET_CPU KILN_TARGET_FEATURES KILN_REMOTE KILN_REMOTE_READ_ONLY KILN_REMOTE_SECRET_FILE
RESULTS=$WORK/results.jsonl
: > "$RESULTS"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_redis() {  # start_redis NAME -> sets URL
  local port dir
  port=$(free_port); dir=$WORK/redis-$1; mkdir -p "$dir"
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$dir" --loglevel warning > "$dir/log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 200); do redis-cli -p "$port" ping > /dev/null 2>&1 && break; sleep 0.05; done
  URL=redis://127.0.0.1:$port
}
record() {  # record PHASE JSON
  python3 -c 'import json,sys; d=json.loads(sys.argv[2]); d.update(phase=sys.argv[1]); print(json.dumps(d))' "$1" "$2" >> "$RESULTS"
}

start_redis main
MAIN=$URL
DOWN=redis://127.0.0.1:$(free_port)
src=$ROOT/testdata/ten_tasks.kir
echo "== ten_tasks: cold, local-warm, remote-warm, down ($REPS processes each) ==" >&2
for i in $(seq "$REPS"); do record cold "$("$EX" "$src" --cache-dir "$WORK/cold-$i")"; done
for i in $(seq "$REPS"); do record local_warm "$("$EX" "$src" --cache-dir "$WORK/cold-1")"; done
KILN_REMOTE=$MAIN "$EX" "$src" --cache-dir "$WORK/filler" > /dev/null
for i in $(seq "$REPS"); do record remote_warm "$(KILN_REMOTE=$MAIN "$EX" "$src" --cache-dir "$WORK/rw-$i")"; done
for i in $(seq "$REPS"); do record down_warm "$(KILN_REMOTE=$DOWN "$EX" "$src" --cache-dir "$WORK/cold-1")"; done
for i in $(seq "$REPS"); do record down_cold "$(KILN_REMOTE=$DOWN "$EX" "$src" --cache-dir "$WORK/dc-$i")"; done
# A server that accepts connections (the kernel's backlog) but never
# answers: SIGSTOPped.
start_redis paused
kill -STOP "${PIDS[-1]}"
for i in $(seq "$REPS"); do record paused_cold "$(KILN_REMOTE=$URL "$EX" "$src" --cache-dir "$WORK/pc-$i")"; done
kill -CONT "${PIDS[-1]}"

echo "== fleet: 8 machines x saxpy, reduce_sum, ten_tasks ==" >&2
start_redis fleet
FLEET=$URL
for m in $(seq 8); do
  for k in saxpy reduce_sum ten_tasks; do
    record fleet_remote "$(KILN_REMOTE=$FLEET "$EX" "$ROOT/testdata/$k.kir" --cache-dir "$WORK/fleet-r-$m")"
    record fleet_alone "$("$EX" "$ROOT/testdata/$k.kir" --cache-dir "$WORK/fleet-a-$m")"
  done
done

python3 - "$RESULTS" "$REPS" <<'PY'
import json, statistics, sys, platform, os
rows = [json.loads(l) for l in open(sys.argv[1])]
def of(phase): return [r for r in rows if r["phase"] == phase]
def med(phase, f="ready_ms"): return statistics.median(r[f] for r in of(phase))
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(f"Machine: {cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}; load average {os.getloadavg()[0]:.1f}")
print(f"ten_tasks.kir, -O2, median of {sys.argv[2]} fresh processes, ms from kernel requested to ready to launch:\n")
for p in ["remote_warm"]:
    for r in of(p):
        assert r["compiled"] == 0 and r["remote"]["hits"] == r["tasks"], r
for p in ["down_cold", "paused_cold"]:
    for r in of(p):
        assert r["remote"]["errors"] == 1 and len(r["warnings"]) == 1, r
cold, lw, rw = med("cold"), med("local_warm"), med("remote_warm")
dw, dc, pc = med("down_warm"), med("down_cold"), med("paused_cold")
rms = statistics.median(r["remote"]["ms"] for r in of("remote_warm"))
print("| phase | ready (ms) | vs cold |")
print("|---|---:|---:|")
for name, v in [("cold (empty local store, no remote)", cold), ("local-warm", lw), ("remote-warm (empty local store, full remote)", rw),
                ("local-warm, remote down", dw), ("cold, remote down (refused)", dc), ("cold, remote paused (SIGSTOP)", pc)]:
    print(f"| {name} | {v:.2f} | {cold / v:.0f}× |")
print(f"\nremote-warm: {rms:.2f} ms of it waiting for the server (connect + one MGET); remote-warm / local-warm = {rw / lw:.2f}")
print(f"a down remote costs: warm {dw - lw:+.2f} ms (a local hit never asks the remote), cold {dc - cold:+.2f} ms (refused), paused {pc - cold:+.2f} ms (connect timeout 100 ms)")
tasks = {r["file"]: r["tasks"] for r in of("fleet_remote")}
per_machine = sum(tasks.values())
with_remote = sum(r["compiled"] for r in of("fleet_remote"))
alone = sum(r["compiled"] for r in of("fleet_alone"))
print(f"\nfleet: 8 machines x 3 kernels ({per_machine} tasks per machine): tasks compiled with the remote = {with_remote} (tasks x {with_remote / per_machine:.0f}), without = {alone} (tasks x {alone / per_machine:.0f})")
PY
