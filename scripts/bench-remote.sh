#!/usr/bin/env bash
# The remote tier on loopback: remote-warm against local-warm and cold, a
# fleet simulation, and a remote that is down, in one run.
#
# For testdata/ten_tasks.kir (and, in the fleet, saxpy and reduce_sum
# too), in fresh processes of crates/kiln-jit/examples/bench-percache.rs (release, -O2),
# the time from "kernel requested" to "kernel ready to launch":
#   - cold: an empty local store, no remote;
#   - local-warm: the local store a cold run filled, no remote;
#   - remote-warm: an empty local store each time, a remote a cold run
#     filled (one redis-server started here on a free loopback port,
#     without persistence, stopped by its pid); the local copies of the
#     fetched records written after the kernel is ready (kiln-run's way),
#     and, as the alternative, each started at once (--fetched-writes
#     at-once);
#   - down: local-warm and cold with KILN_REMOTE pointing at a port
#     nothing listens on (the connect is refused at once), and cold with a
#     SIGSTOPped server (connections accepted by the kernel, never
#     answered: the connect timeout, 100 ms, is paid once).
# The phases alternate within each repetition (cold, local-warm,
# remote-warm, remote-warm at once, down warm, down cold, paused cold, then
# again), so a change in the machine's load touches them all alike. Each
# run reports wall and CPU time (the process's, every thread) to ready.
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
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
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
start_redis paused
PAUSED=$URL PAUSED_PID=${PIDS[-1]}
src=$ROOT/testdata/ten_tasks.kir
KILN_REMOTE=$MAIN "$EX" "$src" --cache-dir "$WORK/filler" > /dev/null
echo "== ten_tasks: cold, local-warm, remote-warm (two ways), down, paused; $REPS rounds ==" >&2
for i in $(seq "$REPS"); do
  record cold "$("$EX" "$src" --cache-dir "$WORK/cold-$i")"
  record local_warm "$("$EX" "$src" --cache-dir "$WORK/cold-1")"
  record remote_warm "$(KILN_REMOTE=$MAIN "$EX" "$src" --cache-dir "$WORK/rw-$i")"
  record remote_warm_at_once "$(KILN_REMOTE=$MAIN "$EX" "$src" --cache-dir "$WORK/rwo-$i" --fetched-writes at-once)"
  record down_warm "$(KILN_REMOTE=$DOWN "$EX" "$src" --cache-dir "$WORK/cold-1")"
  record down_cold "$(KILN_REMOTE=$DOWN "$EX" "$src" --cache-dir "$WORK/dc-$i")"
  # A server that accepts connections (the kernel's backlog) but never
  # answers: SIGSTOPped for this run only.
  kill -STOP "$PAUSED_PID"
  record paused_cold "$(KILN_REMOTE=$PAUSED "$EX" "$src" --cache-dir "$WORK/pc-$i")"
  kill -CONT "$PAUSED_PID"
done

echo "== fleet: 8 machines x saxpy, reduce_sum, ten_tasks ==" >&2
start_redis fleet
FLEET=$URL
for m in $(seq 8); do
  for k in saxpy reduce_sum ten_tasks; do
    record fleet_remote "$(KILN_REMOTE=$FLEET "$EX" "$ROOT/testdata/$k.kir" --cache-dir "$WORK/fleet-r-$m")"
    record fleet_alone "$("$EX" "$ROOT/testdata/$k.kir" --cache-dir "$WORK/fleet-a-$m")"
  done
done

python3 - "$RESULTS" "$REPS" "$LOAD0" <<'PY'
import json, statistics, sys, platform, os
rows = [json.loads(l) for l in open(sys.argv[1])]
def of(phase): return [r for r in rows if r["phase"] == phase]
def med(phase, f="ready_ms"): return statistics.median(r[f] for r in of(phase))
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(f"Machine: {cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}; "
      f"load average (1, 5, 15 min) at the start {sys.argv[3]}, at the end {' '.join(f'{l:.2f}' for l in os.getloadavg())}")
print(f"ten_tasks.kir, -O2, median of {sys.argv[2]} fresh processes, ms from kernel requested to ready to launch:\n")
for p in ["remote_warm", "remote_warm_at_once"]:
    for r in of(p):
        assert r["compiled"] == 0 and r["remote"]["remote_hits"] == r["tasks"], r
for p, sent in [("down_cold", 0), ("paused_cold", 1)]:
    for r in of(p):
        # One error, one warning, and nothing sent after it: refused, no
        # request; paused, the kernel's lookup only.
        assert r["remote"]["remote_errors"] == 1 and r["remote"]["remote_requests"] == sent and len(r["warnings"]) == 1, r
cold = med("cold")
print("| phase | ready, wall (ms) | ready, CPU (ms) | vs cold (wall) |")
print("|---|---:|---:|---:|")
for name, p in [("cold (empty local store, no remote)", "cold"), ("local-warm", "local_warm"),
                ("remote-warm (empty local store, full remote)", "remote_warm"),
                ("remote-warm, fetched records written at once", "remote_warm_at_once"),
                ("local-warm, remote down", "down_warm"), ("cold, remote down (refused)", "down_cold"),
                ("cold, remote paused (SIGSTOP)", "paused_cold")]:
    v = med(p)
    print(f"| {name} | {v:.2f} | {med(p, 'ready_cpu_ms'):.2f} | {cold / v:.1f}× |")
lw, rw, rwo = med("local_warm"), med("remote_warm"), med("remote_warm_at_once")
rms = statistics.median(r["remote"]["remote_ms"] for r in of("remote_warm"))
print(f"\nremote-warm: {rms:.2f} ms of it waiting for the server (connect + one MGET); remote-warm / local-warm = {rw / lw:.2f}; "
      f"writes at once / after ready = {rwo / rw:.2f} (wall), {med('remote_warm_at_once', 'ready_cpu_ms') / med('remote_warm', 'ready_cpu_ms'):.2f} (CPU)")
for name, p, base in [("local-warm, down", "down_warm", "local_warm"), ("cold, refused", "down_cold", "cold"), ("cold, paused", "paused_cold", "cold")]:
    wait = statistics.median(r["remote"]["remote_ms"] for r in of(p))
    reqs = sorted({(r["remote"]["remote_requests"], r["remote"]["remote_errors"]) for r in of(p)})
    print(f"a down remote costs, {name}: wall {med(p) - med(base):+.2f} ms, CPU {med(p, 'ready_cpu_ms') - med(base, 'ready_cpu_ms'):+.2f} ms; "
          f"the client waited {wait:.2f} ms for the server (median); (requests, errors) per run: {reqs}")
tasks = {r["file"]: r["tasks"] for r in of("fleet_remote")}
per_machine = sum(tasks.values())
with_remote = sum(r["compiled"] for r in of("fleet_remote"))
alone = sum(r["compiled"] for r in of("fleet_alone"))
print(f"\nfleet: 8 machines x 3 kernels ({per_machine} tasks per machine): tasks compiled with the remote = {with_remote} (tasks x {with_remote / per_machine:.0f}), without = {alone} (tasks x {alone / per_machine:.0f})")
PY
