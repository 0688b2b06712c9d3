"""What `kiln-quadrants run` costs against the plain Quadrants program, in one run.

Usage: KILN_BIN_DIR=DIR target/quadrants-venv/bin/python scripts/bench-bridge.py [CSV]

Runs, each against the same program run plainly (the best of two runs):
- `scripts/bridge/pic2d.py` (a 2-D particle-in-cell fluid of 4,096
  particles on a 64x64 grid, 500 steps: 501 kernel calls) through the
  bridge by default (`--calls 10`) and with `--calls 0` (every call
  captured and replayed on both engines): wall time, the ratio, and the
  bytes kept in `--keep`;
- `scripts/bridge/many_calls.py N` (a 16-element field stepped N times)
  for N = 1,000, 2,000, 5,000 and 10,000 with `--calls 0`: the capture
  alone and the whole run, and the cost per call over the plain run;
- `scripts/bridge/large_field.py` (two calls on 2^24 f32) with `--calls
  0`: the peak resident memory of the largest process (`/usr/bin/time
  -v`), plain and through the bridge, and the bytes kept.
Prints a table and writes the figures to CSV (default
docs/perf/results/bridge-cost.csv). Every run uses one fresh cache, warmed
by the first bridge run of each program (a user's second run).
"""

import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
BRIDGE = str(ROOT / "tools" / "kiln-quadrants")
PROGRAMS = ROOT / "scripts" / "bridge"


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """Wall seconds and the peak resident memory of the largest process
    of the tree, in KiB (GNU time's `Maximum resident set size`)."""
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"bench-bridge: {' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}")
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr)
    return wall, int(m.group(1)) if m else 0


def disk(d: Path) -> int:
    """Bytes the files under ``d`` hold."""
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def plain(prog: str, *args: str) -> tuple[float, int]:
    runs = [timed([PY, str(PROGRAMS / prog), *args]) for _ in range(2)]
    return min(r[0] for r in runs), max(r[1] for r in runs)


def bridge(work: Path, cache: Path, prog: str, *args: str, calls: str = "10") -> tuple[float, int, int]:
    """Wall seconds, peak KiB and bytes kept of one `kiln-quadrants run --keep`."""
    keep = work / f"keep-{prog}-{calls}-{'-'.join(args)}"
    shutil.rmtree(keep, ignore_errors=True)
    env = dict(os.environ, KILN_QUADRANTS_PYTHON=PY)
    wall, peak = timed([BRIDGE, "run", "--calls", calls, "--keep", str(keep), "--cache-dir", str(cache), str(PROGRAMS / prog), *args], env)
    kept = disk(keep)
    shutil.rmtree(keep)
    return wall, peak, kept


def capture_only(work: Path, prog: str, *args: str) -> float:
    out = work / "capture-only"
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tools"))
    wall, _ = timed([PY, "-m", "kiln_quadrants", "-o", str(out), str(PROGRAMS / prog), *args], env)
    shutil.rmtree(out)
    return wall


LOAD_START = f"{os.getloadavg()[0]:.1f}"


def main() -> int:
    out_csv = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "perf" / "results" / "bridge-cost.csv"
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="bench-bridge.") as d:
        work, cache = Path(d), Path(d) / "cache"
        bridge(work, cache, "pic2d.py", "20")  # warms the cache
        base, base_peak = plain("pic2d.py")
        for calls in ("10", "0"):
            wall, peak, kept = bridge(work, cache, "pic2d.py", calls=calls)
            rows.append({"case": f"pic2d 500 steps, --calls {calls}", "calls": 501, "plain_s": base, "bridge_s": wall,
                         "ratio": wall / base, "kept_mb": kept / 1e6, "per_call_ms": "", "peak_mb": peak / 1024})
        bridge(work, cache, "many_calls.py", "10")  # warms the cache
        for n in (1000, 2000, 5000, 10000):
            base, _ = plain("many_calls.py", str(n))
            cap = capture_only(work, "many_calls.py", str(n))
            wall, peak, kept = bridge(work, cache, "many_calls.py", str(n), calls="0")
            rows.append({"case": f"many_calls {n}, capture alone", "calls": n, "plain_s": base, "bridge_s": cap,
                         "ratio": cap / base, "kept_mb": "", "per_call_ms": 1e3 * (cap - base) / n, "peak_mb": ""})
            rows.append({"case": f"many_calls {n}, --calls 0", "calls": n, "plain_s": base, "bridge_s": wall,
                         "ratio": wall / base, "kept_mb": kept / 1e6, "per_call_ms": 1e3 * (wall - base) / n, "peak_mb": peak / 1024})
        base, base_peak = plain("large_field.py")
        wall, peak, kept = bridge(work, cache, "large_field.py", calls="0")
        rows.append({"case": "large_field 2^24 f32, plain", "calls": 2, "plain_s": base, "bridge_s": "", "ratio": "",
                     "kept_mb": "", "per_call_ms": "", "peak_mb": base_peak / 1024})
        rows.append({"case": "large_field 2^24 f32, --calls 0", "calls": 2, "plain_s": base, "bridge_s": wall, "ratio": wall / base,
                     "kept_mb": kept / 1e6, "per_call_ms": "", "peak_mb": peak / 1024})
    # Each row with when, under what load and by what command it was measured.
    stamp = {"date": time.strftime("%Y-%m-%d"), "load": f"{LOAD_START}-{os.getloadavg()[0]:.1f}",
             "command": "KILN_BIN_DIR=DIR target/quadrants-venv/bin/python scripts/bench-bridge.py"}
    rows = [{**r, **stamp} for r in rows]
    fields = ["case", "calls", "plain_s", "bridge_s", "ratio", "kept_mb", "per_call_ms", "peak_mb", "date", "load", "command"]
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    with open(out_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()})
    for r in rows:
        print("  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items() if v != ""))
    print(f"bench-bridge: wrote {out_csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
