"""Times the kernels of a Quadrants program imported into Kiln, for scripts/bench-quadrants.sh.

Usage: python bench_kiln.py KEEP_DIR REPEATS

KEEP_DIR is what `kiln-quadrants run --keep` left (each kernel's KIR and the
values before its first call). For each kernel's first call, in fresh
`kiln-run` processes (from $KILN_BIN_DIR), with the call's arguments and
input values:
  - cold: an empty cache (parse, key, compile every task in a kiln-compile
    process, load, run);
  - warm: the cache the cold runs filled (parse, key, load, run);
  - steady: per call, from one process that runs the kernel once and one
    that runs it 1 + CALLS times, warm: (t(1 + CALLS) - t(1)) / CALLS.
Each figure is the median of REPEATS. Prints one JSON line:
{"kernel": {"cold_ms": C, "warm_ms": W, "steady_ms": S}, ...}.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CALLS = 50
keep, reps = Path(sys.argv[1]), int(sys.argv[2])
run = str(Path(os.environ["KILN_BIN_DIR"]) / "kiln-run")
manifest = json.loads((keep / "manifest.json").read_text())


def command(call: dict, cache: Path, times: int) -> list[str]:
    cmd = [run, str(keep / call["kir"]), "--cache-dir", str(cache)]
    cmd += ["--kernel", call["kernel"]] * times
    for name, a in call["args"].items():
        if a.get("kind") == "scalar":
            cmd += ["--arg", f"{name}={a['value']!r}"]
    for field, v in call["values"].items():
        if "before" in v:
            cmd += ["--input", f"@{field}={keep / v['before']}"]
    return cmd


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1e3


out = {}
seen = set()
for call in manifest["calls"]:
    if call["kernel"] in seen:
        continue
    seen.add(call["kernel"])
    with tempfile.TemporaryDirectory(prefix="kiln-bench-q.") as d:
        cold, warm, steady = [], [], []
        for i in range(reps):
            cache = Path(d) / f"cold{i}"
            cold.append(wall(command(call, cache, 1)))
        cache = Path(d) / "cold0"
        for _ in range(reps):
            warm.append(wall(command(call, cache, 1)))
            many = wall(command(call, cache, 1 + CALLS))
            steady.append((many - warm[-1]) / CALLS)
        out[call["kernel"]] = {
            "cold_ms": statistics.median(cold),
            "warm_ms": statistics.median(warm),
            "steady_ms": max(statistics.median(steady), 0.0),
        }
        shutil.rmtree(d, ignore_errors=True)
print(json.dumps(out))
