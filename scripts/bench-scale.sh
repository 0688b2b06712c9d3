#!/usr/bin/env bash
# Scaling benchmark (issue 29): for each dimension of scripts/gen-scale.py,
# inputs at n, 2n, 4n and 8n, each stage timed -- parse, verify, each pass
# (kiln-opt --time-passes), key (kiln-key), split (the split-tasks pass),
# compile (kiln-compile -O2), JIT preparation and run (kiln-run --stats=json:
# compiling, loading), a warm JIT run from a filled cache (kernels),
# interpretation (kiln-run --engine interp) -- with the
# growth ratio per doubling (the geometric mean of t(2n)/t(n) over the three
# doublings) and the peak RSS of the largest size. A whole process is timed by
# its CPU time (user + system), the least of REPEAT runs; a stage inside
# kiln-opt by its --time-passes figure. See docs/performance.md.
#
#   scripts/bench-scale.sh [BIN_DIR]      (default target/debug; SCALE=2 doubles every n, SCALE=0.1 a tenth;
#                                          DIMS="loops tasks" measures only those dimensions;
#                                          REPEAT=3 takes the least of three runs of each process)
#
# Needs GNU time (peak RSS) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/debug}
SCALE=${SCALE:-1}
[ -x /usr/bin/time ] || { echo "bench-scale: GNU time is missing: apt-get install -y time" >&2; exit 1; }
[ -x "$BIN/kiln-opt" ] || { echo "bench-scale: no tools in $BIN (cargo build --bins)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "bench-scale: $BIN, $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
BIN="$BIN" WORK="$WORK" SCALE="$SCALE" DIMS="${DIMS:-}" REPEAT="${REPEAT:-1}" python3 - <<'PY'
import json, math, os, re, subprocess, sys, tempfile
BIN, WORK, SCALE = os.environ["BIN"], os.environ["WORK"], float(os.environ["SCALE"])
REPEAT = int(os.environ.get("REPEAT", "1"))
GEN = os.path.join("scripts", "gen-scale.py")

def timed(args, env=None):
    """Runs a command REPEAT times under GNU time: (least CPU seconds, user +
    system, from the kernel's rusage at microsecond resolution; peak RSS in
    MiB, from GNU time, which forks the command from a small process where a
    fork of this Python would count Python's own memory; stdout, stderr and
    exit status of the last run, and every run's stderr). CPU time, not wall time: on a shared machine
    the wall clock counts other processes' time slices, and GNU time's own
    10 ms steps swamp a release build's small stages."""
    best, errs = math.inf, []
    for _ in range(REPEAT):
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            p = subprocess.Popen(["/usr/bin/time", "-f", "@@%M"] + args, stdout=out, stderr=err,
                                 env=dict(os.environ, **(env or {})))
            _, status, ru = os.wait4(p.pid, 0)
            rc = os.waitstatus_to_exitcode(status)
            best = min(best, ru.ru_utime + ru.ru_stime)
            out.seek(0), err.seek(0)
            stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
            errs.append(stderr)
    m = re.search(r"@@(\d+)\s*$", stderr)
    return best, int(m.group(1)) / 1024 if m else math.nan, stdout, stderr[: m.start()] if m else stderr, rc, errs

def passes(err):
    """Stage -> seconds from kiln-opt --time-passes."""
    out = {}
    for line in err.splitlines():
        m = re.match(r"\s+([\d.]+) \(\s*[\d.]+%\)\s+[\d.]+ \(\s*[\d.]+%\)\s+[\d.]+\s+(\S.*)$", line)
        if m and m.group(2) != "Total":
            out[m.group(2).strip("()")] = float(m.group(1))
    return out

# dimension: (first n, passes for kiln-opt, tools run on the input)
DIMS = {
    "statements": (12500, "offload,dce", ["key", "interp", "jit"]),
    "loops":      (2000, "offload,dce,split-tasks", ["key", "interp"]),
    "carries":    (2000, "offload,split-tasks", ["key", "interp"]),
    "tasks":      (2000, "offload,split-tasks", ["split-key"]),
    "fields":     (1000, "offload,split-tasks", ["key", "interp"]),
    "functions":  (1000, "offload,split-tasks", ["key", "interp", "jit"]),
    "params":     (1000, "offload,split-tasks", ["key", "interp"]),
    "depth":      (60, "offload,split-tasks", ["key", "interp", "jit"]),
    "deadchain":  (12500, "dce", []),
    "nested":     (12500, "", []),
    "errors":     (1000, "offload", ["key"]),
    "launches":   (500, "", ["key", "interp", "jit"]),
    "kernels":    (1000, "offload,split-tasks", ["key", "interp", "jit-warm"]),
    "fieldloops": (1000, "offload,split-tasks", ["key", "interp", "jit-warm"]),
}

def measure(dim, n, pipeline, tools):
    path = os.path.join(WORK, f"{dim}-{n}.kir")
    with open(path, "w") as f:
        subprocess.run([sys.executable, GEN, dim, str(n)], stdout=f, check=True)
    size = os.path.getsize(path)
    t, mem, out, err, rc, errs = timed([f"{BIN}/kiln-opt", "--time-passes"] + ([f"--passes={pipeline}"] if pipeline else []) + [path])
    # A stage's figure is wall time inside the process: the least of the runs.
    runs = [passes(e) for e in errs]
    stages = {k: min(r.get(k, math.inf) for r in runs) for k in runs[-1]}
    stages["kiln-opt (process)"] = t
    peak = {"kiln-opt": mem}
    if "split-key" in tools:
        split = path + ".split.kir"
        subprocess.run([f"{BIN}/kiln-opt", f"--passes={pipeline}", path, "-o", split], check=True)
        t, mem, *_ = timed([f"{BIN}/kiln-key", split])
        stages["key (split stream)"], peak["kiln-key"] = t, mem
        t, mem, *_ = timed([f"{BIN}/kiln-key", "--diff", split, split])
        stages["key --diff"], peak["kiln-key --diff"] = t, mem
    if "key" in tools:
        t, mem, *_ = timed([f"{BIN}/kiln-key", path])
        stages["key (process)"], peak["kiln-key"] = t, mem
    if "interp" in tools:
        t, mem, *_ = timed([f"{BIN}/kiln-run", "--engine", "interp", path])
        stages["interpretation (process)"], peak["kiln-run interp"] = t, mem
    if "jit" in tools:
        t, mem, out, err, rc, errs = timed([f"{BIN}/kiln-run", "--no-cache", "-O", "0", "--stats=json", path])
        # The JIT's figures are wall times inside the process: the least of the runs.
        runs = [json.loads(e.split("@@")[0].strip().splitlines()[-1]) for e in errs] if rc == 0 else [{}]
        least = lambda k: min(r.get(k, math.nan) for r in runs) / 1000
        stages["compile -O0 (JIT)"] = least("compile_ms")
        stages["JIT preparation (load)"] = least("load_ms")
        stages["JIT run"] = least("run_ms")
        peak["kiln-run jit"] = mem
    if "jit-warm" in tools:
        # The JIT's per-kernel work, compiling nothing: a cache that one
        # kiln-compile process filled, then warm runs of every kernel.
        cache = path + ".cache"
        subprocess.run([f"{BIN}/kiln-compile", "-O", "0", "--cache-dir", cache, path], check=True,
                       stdout=subprocess.DEVNULL)
        t, mem, *_ = timed([f"{BIN}/kiln-run", "-O", "0", "--cache-dir", cache, path])
        stages["JIT warm run (process)"], peak["kiln-run jit warm"] = t, mem
    return size, stages, peak

print()
print(f"{'dimension':<11} {'stage':<26} {'n':>7} {'seconds at n, 2n, 4n, 8n':>36} {'x/doubling':>10}")
worst = []
ONLY = os.environ.get("DIMS", "").split()
for dim, (n0, pipeline, tools) in DIMS.items():
    if ONLY and dim not in ONLY:
        continue
    ns = [max(1, int(n0 * SCALE)) * k for k in (1, 2, 4, 8)]
    rows = [measure(dim, n, pipeline, tools) for n in ns]
    for stage in rows[0][1]:
        ts = [r[1].get(stage, math.nan) for r in rows]
        # Ratios over doublings whose times are measurable (>= 5 ms).
        ratios = [b / a for a, b in zip(ts, ts[1:]) if a >= 0.005 and b > 0]
        g = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else math.nan
        if g == g:
            worst.append((g, dim, stage))
        shown = " ".join(f"{t:8.3f}" for t in ts)
        print(f"{dim:<11} {stage:<26} {ns[0]:>7} {shown:>36} {g:>10.2f}")
    size, _, peak = rows[-1]
    mems = ", ".join(f"{k} {v:.0f} MiB" for k, v in peak.items())
    print(f"{dim:<11} {'peak RSS at 8n':<26} {ns[-1]:>7} input {size / 2**20:.1f} MiB; {mems}")
worst.sort(reverse=True)
print()
print("largest growth per doubling: " + "; ".join(f"{d}/{s} {g:.2f}" for g, d, s in worst[:5]))
PY
