#!/usr/bin/env bash
# Single-flight compiles and the remote-warm start, as whole processes of
# kiln-run on testdata/ten_tasks.kir (10 tasks, -O2, one thread):
#   - lone: one cold process on an empty cache (no remote): the reference;
#   - local fleet: N cold processes started together on one empty cache;
#   - remote fleet: N cold "machines" (an empty cache directory each)
#     started together on one empty Redis (one redis-server started here
#     on a free loopback port, without persistence, stopped by its pid);
#   - each fleet again with KILN_COMPILE_WAIT=1ms (a process hardly waits for
#     another: what the fleet costs without single-flight, measured in the
#     same run);
#   - local-warm (the cache a lone run filled, no remote) against
#     remote-warm (a Redis a cold run filled, and a local cache set up but
#     holding no record, as a machine that ran other kernels before; and
#     a cache directory that does not exist yet, whose set-up, markers
#     synced, is part of the run), alternating.
# For each fleet: the task compiles of all its processes together (from
# --stats=json) and the wall time of the slowest process against the lone
# cold process's. The phases alternate within each repetition, so a change
# in the machine's load touches them all alike; medians are reported.
#
# Usage: scripts/bench-fleet.sh [N] [REPEATS]   (default 8 and 5)
# KILN_BENCH_PROFILE=release uses a release build (default: the dev build
# the tests use); CARGO_TARGET_DIR, when set, is where it is built.
# KILN_BENCH_BIN=DIR runs the kiln-run (and kiln-compile) in DIR as they
# are, without building (a build made elsewhere, e.g. of another commit,
# measured in the same conditions).
# KILN_BENCH_BEFORE=DIR also runs the warm cases with the kiln-run in DIR
# (another build, e.g. of the commit before a change), alternating with
# this one's in the same repetitions, and reports both.
# KILN_BENCH_DEFER_DELETES=1 moves each previous cache directory aside
# instead of deleting it between runs (all are deleted at the end): on a
# file system whose inode allocation skips recently freed inodes (ext4
# without a journal), the deletions of the set-up make every file and
# directory a measured process creates slower (docs/performance.md,
# "Fleet").
# KILN_BENCH_FLEETS=0 skips the fleets and the lone cold runs after the
# first repetition's lone run (which fills the caches): only local-warm
# against remote-warm is measured.
# Figures go to docs/performance.md, section "Fleet".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
N=${1:-8}
REPS=${2:-5}
PROFILE=${KILN_BENCH_PROFILE:-debug}
if [ -n "${KILN_BENCH_BIN:-}" ]; then
  BIN=$(cd "$KILN_BENCH_BIN" && pwd)
  PROFILE="prebuilt"
else
  if [ "$PROFILE" = release ]; then cargo build --release --bins >&2; else cargo build --bins >&2; fi
  BIN=${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE
fi
FLEETS=${KILN_BENCH_FLEETS:-1}
DEFER=${KILN_BENCH_DEFER_DELETES:-0}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bench-fleet.XXXXXX")
REDIS_PID=
cleanup() {
  if [ -n "$REDIS_PID" ]; then kill "$REDIS_PID" 2>/dev/null || true; wait "$REDIS_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
unset KILN_TARGET_CPU KILN_TARGET_FEATURES KILN_REMOTE KILN_REMOTE_READ_ONLY KILN_REMOTE_SECRET_FILE
unset KILN_COMPILE_WAIT KILN_TEST_COMPILE_DELAY KILN_CACHE_DIR
export XDG_CONFIG_HOME=$WORK/config
# On a loaded machine a server's first reply can take longer than the
# default connect timeout (100 ms); a run that gave up on the remote would
# compile everything and measure nothing of the fleet.
export KILN_REMOTE_CONNECT_TIMEOUT=1s

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$WORK/redis"
redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no --dir "$WORK/redis" --loglevel warning \
  > "$WORK/redis/log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 200); do redis-cli -p "$PORT" ping > /dev/null 2>&1 && break; sleep 0.05; done

echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "kiln-run: $BIN/kiln-run ($PROFILE); N=$N; repeats=$REPS"

BEFORE=
if [ -n "${KILN_BENCH_BEFORE:-}" ]; then
  BEFORE=$(cd "$KILN_BENCH_BEFORE" && pwd)/kiln-run
  echo "before: $BEFORE"
fi

python3 - "$BIN/kiln-run" "$ROOT/testdata/ten_tasks.kir" "$WORK" "$PORT" "$N" "$REPS" "$FLEETS" "$BEFORE" "$DEFER" <<'EOF'
import json, os, resource, shutil, statistics, subprocess, sys, time
cpu = [0.0]
run, kir, work, port, n, reps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
fleets = sys.argv[7] != "0"
before = sys.argv[8]
defer_deletes = sys.argv[9] != "0"
builds = [("", run)] + ([(" (before)", before)] if before else [])
url = f"redis://127.0.0.1:{port}"

def cli(*args):
    subprocess.run(["redis-cli", "-p", port, *args], check=True, stdout=subprocess.DEVNULL)

def start(cache, remote=None, env=None, binary=run):
    cmd = [binary, kir, "--cache-dir", cache, "--stats=json", "-O2", "--threads", "1"]
    if remote:
        cmd += ["--remote", remote]
    e = dict(os.environ, **(env or {}))
    return time.monotonic(), subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=e, text=True)

def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def done(t0, p):
    # The CPU time (user + system) of the children reaped while waiting:
    # this process's alone when it is the only one running (the warm runs).
    c0 = children_cpu()
    _, err = p.communicate()
    wall = time.monotonic() - t0
    cpu[0] = children_cpu() - c0
    if p.returncode != 0:
        sys.exit(f"kiln-run failed ({p.returncode}):\n{err}")
    if "warning" in err:
        sys.exit(f"kiln-run warned:\n{err}")
    stats = json.loads([l for l in err.splitlines() if l.startswith("{")][-1])
    return wall, stats["compiled"]

def fresh(path):
    if defer_deletes:
        # Moved aside (a rename: no inode freed), deleted with the rest
        # of the work directory once everything is measured.
        if os.path.exists(path):
            os.makedirs(f"{work}/trash", exist_ok=True)
            os.rename(path, f"{work}/trash/{len(os.listdir(f'{work}/trash'))}")
        return path
    shutil.rmtree(path, ignore_errors=True)
    return path

def emptied(path):
    # The lone run's cache without its records: a cache directory set up
    # (markers, scope, counters), every record gone.
    fresh(path)
    shard = lambda d, names: [x for x in names if len(x) == 2 and os.path.isdir(os.path.join(d, x))]
    shutil.copytree(f"{work}/lone", path, ignore=shard)
    return path

def fleet(remote, env=None):
    if remote:
        cli("FLUSHALL")
        caches = [fresh(f"{work}/m{i}") for i in range(n)]
    else:
        caches = [fresh(f"{work}/shared")] * n
    procs = [start(c, url if remote else None, env) for c in caches]
    results = [done(*p) for p in procs]
    return max(w for w, _ in results), sum(c for _, c in results)

warm = [w + b for b, _ in builds for w in ["local_warm", "remote_warm", "remote_warm_new"]]
cpus = {k: [] for k in warm}
phases = {k: [] for k in ["lone", "local", "local_nowait", "remote", "remote_nowait"] + warm}
for rep in range(reps):
    if fleets or rep == 0:
        phases["lone"].append(done(*start(fresh(f"{work}/lone"))))
    if fleets:
        phases["local"].append(fleet(False))
        phases["local_nowait"].append(fleet(False, {"KILN_COMPILE_WAIT": "1ms"}))
        phases["remote"].append(fleet(True))
        phases["remote_nowait"].append(fleet(True, {"KILN_COMPILE_WAIT": "1ms"}))
    elif rep == 0:
        # No fleet fills the remote: one cold machine does.
        cli("FLUSHALL")
        done(*start(fresh(f"{work}/fill"), url))
    # The remote holds every record now (the last fleet filled it); the
    # lone run's cache holds them too.
    for _ in range(3):
        for b, binary in builds:
            for name, cache, remote in [("local_warm", lambda: f"{work}/lone", None),
                                        ("remote_warm", lambda: emptied(f"{work}/rw"), url),
                                        ("remote_warm_new", lambda: fresh(f"{work}/rw-new"), url)]:
                phases[name + b].append(done(*start(cache(), remote, binary=binary)))
                cpus[name + b].append(cpu[0])

med = lambda xs: statistics.median(xs)
lone = med([w for w, _ in phases["lone"]])
print(f"{'case':<34} {'compiles (median, min-max)':>28} {'slowest wall ms':>16} {'vs lone cold':>13}")
for name, label in [("lone", "lone cold process"), ("local", f"{n} cold processes, one cache"),
                    ("local_nowait", f"  same, compile_wait=1ms"), ("remote", f"{n} cold machines, one Redis"),
                    ("remote_nowait", f"  same, compile_wait=1ms")][:None if fleets else 1]:
    ws, cs = [w for w, _ in phases[name]], [c for _, c in phases[name]]
    print(f"{label:<34} {med(cs):>8} ({min(cs)}-{max(cs)}){'':>12} {med(ws)*1e3:>16.0f} {med(ws)/lone:>12.2f}x")
# The warm runs are short enough for the machine's load to swamp them:
# the least of each is given beside the median.
for b, _ in builds:
    lw = med([w for w, _ in phases["local_warm" + b]])
    lw_least = min(w for w, _ in phases["local_warm" + b])
    lc = med(cpus["local_warm" + b])
    print(f"{'local-warm process' + b:<34} {'':>28} {lw*1e3:>16.1f}   least {lw_least*1e3:.1f} ms;"
          f" CPU {lc*1e3:.1f} ms (median, user + system)")
    for name, label in [("remote_warm", "remote-warm, empty cache"), ("remote_warm_new", "remote-warm, no cache dir yet")]:
        rw = med([w for w, _ in phases[name + b]])
        least = min(w for w, _ in phases[name + b])
        c = med(cpus[name + b])
        print(f"{label + b:<34} {'':>28} {rw*1e3:>16.1f} {rw/lw:>9.2f}x local-warm;"
              f" least {least*1e3:.1f} ms, {least/lw_least:.2f}x; CPU {c*1e3:.1f} ms, {c/lc:.2f}x")
EOF
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
