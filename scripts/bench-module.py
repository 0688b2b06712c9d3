"""`import kiln`'s warm call against the alternatives, in one run.

Usage: python scripts/bench-module.py KILN_BIN_DIR [REPEATS]

With the release wheel installed (`make python-wheel`, then `pip install
target/wheels/kiln-*.whl numpy` into a venv) and KILN_BIN_DIR holding a
release kiln-run: saxpy over 4,096 f32 (docs/performance.md, "import
kiln"), each figure the median of REPEATS batches:
- a warm `Module.run` (JIT through the cache; the interpreter beside it);
- the same kernel through a `kiln-run` process per call (what a Python
  program had before: .npy files in and out);
- numpy's own `y[:] = a * x + y`, the floor.
"""

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import kiln
import numpy as np

SRC = """field @x : f32[4096]
field @y : f32[4096]

kernel @saxpy(%a: f32, %n: i32 = 4096) {
  for %i in 0 .. %n {
    %xi = load @x[%i]
    %yi = load @y[%i]
    %p = mul %a, %xi
    %s = add %p, %yi
    store @y[%i], %s
  }
}
"""


def per_call(f: Callable[[], object], n: int, repeats: int) -> tuple[float, float, float]:
    """Median, min and max over `repeats` batches of `n` calls, in µs per call."""
    batches = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        batches.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(batches), min(batches), max(batches)


def main() -> None:
    bins = Path(sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    work = Path(tempfile.mkdtemp())
    cache = work / "cache"
    m = kiln.Module(SRC, "saxpy.kir")
    x = np.arange(4096, dtype=np.float32)
    y = np.ones(4096, dtype=np.float32)
    fields = {"x": x, "y": y}
    first = m.run("saxpy", args={"a": 2.0}, fields=fields, cache_dir=cache)
    print(f"first call: compiled {first['compiled']}, compile {first['compile_ms']:.1f} ms")
    rows = [
        ("Module.run, jit, warm", per_call(lambda: m.run("saxpy", args={"a": 2.0}, fields=fields, cache_dir=cache), 2000, repeats)),
        ("Module.run, interp", per_call(lambda: m.run("saxpy", args={"a": 2.0}, fields=fields, engine="interp"), 20, repeats)),
    ]
    (work / "saxpy.kir").write_text(SRC)
    np.save(work / "x.npy", x)
    np.save(work / "y.npy", y)
    cmd = [str(bins / "kiln-run"), "--cache-dir", str(cache), "--arg", "a=2.0", "--input", f"@x={work / 'x.npy'}",
           "--input", f"@y={work / 'y.npy'}", "--output", f"@y={work / 'y.npy'}", str(work / "saxpy.kir")]
    subprocess.run(cmd, check=True)
    rows.append(("kiln-run process per call, warm", per_call(lambda: subprocess.run(cmd, check=True), 20, repeats)))
    a = np.float32(2.0)

    def numpy_saxpy() -> None:
        y[:] = a * x + y

    rows.append(("numpy y[:] = a*x + y", per_call(numpy_saxpy, 2000, repeats)))
    jit = rows[0][1][0]
    for name, (med, lo, hi) in rows:
        print(f"{name:34} {med:10.1f} us  (min {lo:.1f}, max {hi:.1f})  {med / jit:8.2f}x Module.run")


main()
