"""Times the kernels of a Quadrants program imported into Kiln, for scripts/bench-quadrants.sh.

Usage: python bench_kiln.py KEEP_DIR REPEATS

KEEP_DIR is what `kiln-quadrants run --keep` left (each kernel's KIR and the
values before its first call). For each kernel's first call, in fresh
`kiln-run` processes (from $KILN_BIN_DIR), with the call's arguments and
input values:
  - cold: an empty cache (parse, key, compile every task in a kiln-compile
    process, load, run), with the default tiers (`--tier=auto`: the quick
    tier, its optimised one compiled in the background, which is waited
    for, not counted, before the next process); cold_opt: the same with
    `--tier=opt` (the optimised tier before the first launch);
  - warm: the cache the cold runs filled (parse, key, load, run);
  - steady: per call, from one process that runs the kernel once and one
    that runs it 1 + CALLS times, warm: (t(1 + CALLS) - t(1)) / CALLS.
Each figure is the median of REPEATS. Prints one JSON line:
{"kernel": {"cold_ms": C, "cold_opt_ms": O, "warm_ms": W, "steady_ms": S}, ...}.
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
from background import background_done  # noqa: E402
from kiln_quadrants import pack  # noqa: E402

CALLS = 50
keep, reps = Path(sys.argv[1]), int(sys.argv[2])
# The values a call starts from, as .npy files (the keep directory holds
# them by id in its packs).
inputs = Path(tempfile.mkdtemp(prefix="kiln-bench-q-inputs."))


def npy(bid: str) -> Path:
    path = inputs / f"{bid}.npy"
    if not path.exists():
        np.save(path, pack.load(keep, bid))
    return path
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
            cmd += ["--input", f"@{field}={npy(v['before'])}"]
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
        cold, cold_opt, warm, steady = [], [], [], []
        for i in range(reps):
            cache = Path(d) / f"cold{i}"
            cold.append(wall(command(call, cache, 1) + ["--tier=auto"]))
            background_done(cache)
            cold_opt.append(wall(command(call, Path(d) / f"opt{i}", 1) + ["--tier=opt"]))
        cache = Path(d) / "cold0"
        for _ in range(reps):
            warm.append(wall(command(call, cache, 1)))
            many = wall(command(call, cache, 1 + CALLS))
            steady.append((many - warm[-1]) / CALLS)
        out[call["kernel"]] = {
            "cold_ms": statistics.median(cold),
            "cold_opt_ms": statistics.median(cold_opt),
            "warm_ms": statistics.median(warm),
            "steady_ms": max(statistics.median(steady), 0.0),
        }
        shutil.rmtree(d, ignore_errors=True)
shutil.rmtree(inputs, ignore_errors=True)
print(json.dumps(out))
