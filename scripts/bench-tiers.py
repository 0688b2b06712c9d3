#!/usr/bin/env python3
"""Tiered compilation against Quadrants (issue 43, items 1 and 2).

The eight-loop kernel (scripts/steady/steady.kir and its twin
steady.py), cold, in one run, alternating:

- Kiln `--tier=auto` (the default) and `--tier=opt`: a whole release
  `kiln-run` process on an empty cache running @init then @steady once
  (`--threads 2`); its wall time (the first calls: start, compile, run,
  exit) and that less its kernels' own run time (`run_ms`: the cold
  process's cost beyond running). After an auto run the background compile
  is waited for (not counted) so it does not load the next measurement.
- Quadrants 1.3.3: the first calls of the same two kernels in-process
  after `qd.init` (not counted), and those less the second calls' time.

Usage: scripts/bench-tiers.py [REPS] (default 5); KILN_BIN_DIR (default
target/release); PYTHON (default target/quadrants-venv/bin/python).
Prints one CSV row per measurement and the medians and ratios.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts/lib"))
from background import background_done  # noqa: E402
BIN = Path(os.environ.get("KILN_BIN_DIR", REPO / "target/release"))
PY = os.environ.get("PYTHON", str(REPO / "target/quadrants-venv/bin/python"))
KIR = REPO / "scripts/steady/steady.kir"


def kiln(tier: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as d:
        cache = Path(d) / "cache"
        cmd = [str(BIN / "kiln-run"), str(KIR), "--kernel", "@init", "--kernel", "@steady",
               "--threads", "2", "--cache-dir", str(cache), f"--tier={tier}", "--stats=json"]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "KILN_TIER": tier})
        wall = (time.perf_counter() - t0) * 1e3
        assert out.returncode == 0, out.stderr
        stats = json.loads(out.stderr.strip().splitlines()[-1])
        background_done(cache)
        return wall, wall - stats["run_ms"]


def quadrants() -> tuple[float, float]:
    out = subprocess.run([PY, str(REPO / "scripts/steady/steady.py"), "first", "2"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    first, run = (float(x) for x in out.stdout.strip().splitlines()[-1].split())
    return first, first - run


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rows = {"kiln auto": [], "kiln opt": [], "quadrants": []}
    print("who,rep,first_calls_ms,cold_less_run_ms")
    for rep in range(reps):
        for who, f in (("kiln auto", lambda: kiln("auto")), ("kiln opt", lambda: kiln("opt")), ("quadrants", quadrants)):
            first, cold = f()
            rows[who].append((first, cold))
            print(f"{who},{rep},{first:.1f},{cold:.1f}", flush=True)
    med = {w: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for w, v in rows.items()}
    q = med["quadrants"]
    for w in ("kiln auto", "kiln opt"):
        k = med[w]
        print(f"# {w}: first calls {k[0]:.1f} ms ({k[0] / q[0]:.2f}x Quadrants' {q[0]:.1f}); "
              f"cold less run {k[1]:.1f} ms ({k[1] / q[1]:.2f}x Quadrants' {q[1]:.1f})")
    print(f"# load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
