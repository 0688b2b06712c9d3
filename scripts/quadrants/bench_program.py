"""Times an unmodified Quadrants program's kernels, for scripts/bench-quadrants.sh.

Usage: python bench_program.py PROGRAM.py CACHE_DIR REPEATS

Runs PROGRAM.py in this process with Quadrants on the CPU (fast_math off, as
the bridge runs it; the offline cache in CACHE_DIR, so a second process
finds it warm). Each kernel's first call is timed (compile or load from the
offline cache, then launch, synchronised); after the program ends, each
kernel is called REPEATS more times with the arguments of its first call,
and the median of those is its steady state per call. Prints one JSON line:
{"kernel": {"first_ms": F, "steady_ms": S}, ...}.
"""

import importlib
import json
import runpy
import statistics
import sys
import time

import quadrants as qd

program, cache, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
misc = importlib.import_module("quadrants.lang.misc")
kmod = importlib.import_module("quadrants.lang.kernel")
orig_init = misc.init


def init(arch=None, *args, **kwargs):
    kwargs.update(offline_cache=True, offline_cache_file_path=cache, fast_math=False)
    return orig_init(qd.cpu, *args, **kwargs)


for mod in (qd, misc, importlib.import_module("quadrants.lang")):
    if getattr(mod, "init", None) is orig_init:
        mod.init = init

orig_call = kmod.Kernel.__call__
first = {}


def call(kernel, *args, **kwargs):
    func = getattr(kernel, "func", None)
    name = getattr(func, "__name__", "")
    if (getattr(func, "__module__", "") or "").startswith("quadrants") or name in first:
        return orig_call(kernel, *args, **kwargs)
    t0 = time.perf_counter()
    result = orig_call(kernel, *args, **kwargs)
    qd.sync()
    first[name] = {"first_ms": (time.perf_counter() - t0) * 1e3, "call": (kernel, args, kwargs)}
    return result


kmod.Kernel.__call__ = call
runpy.run_path(program, run_name="__main__")
out = {}
for name, f in first.items():
    kernel, args, kwargs = f["call"]
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        orig_call(kernel, *args, **kwargs)
        qd.sync()
        times.append((time.perf_counter() - t0) * 1e3)
    out[name] = {"first_ms": f["first_ms"], "steady_ms": statistics.median(times)}
print(json.dumps(out))
