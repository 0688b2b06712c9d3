"""Waiting for the background compile a `--tier=auto` run leaves
(docs/runtime.md, "Tiers"), shared by the benchmarks that time cold
processes one after another (bench-tiers.py, quadrants/bench_kiln.py), so
that one run's optimised tier does not load the next measurement.
"""

import subprocess
import time
from pathlib import Path


def background_done(cache: Path, limit_s: float = 120) -> None:
    """Waits (up to `limit_s`) until no kiln-compile process fills `cache`."""
    mark = f"--cache-dir={cache}"
    deadline = time.time() + limit_s
    while time.time() < deadline and mark in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout:
        time.sleep(0.02)
