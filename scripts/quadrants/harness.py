"""One Quadrants measurement in a fresh process (run by
scripts/bench-percache.sh): the time from "kernel requested" (its first
call) to "kernel ready to launch", printed as one JSON line.

Usage: python harness.py KERNEL_FILE CACHE_DIR

KERNEL_FILE defines the fields and `run()`, which calls the kernel once.
The first call compiles (or loads from Quadrants' offline cache) and
launches; the second only launches. Ready = first - second.
"""
import importlib.util
import json
import sys
import time

import quadrants as qd

qd.init(arch=qd.cpu, offline_cache=True, offline_cache_file_path=sys.argv[2], cpu_max_num_threads=1)

spec = importlib.util.spec_from_file_location("kernel_under_test", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)

t0 = time.perf_counter()
module.run()
qd.sync()
t1 = time.perf_counter()
module.run()
qd.sync()
t2 = time.perf_counter()
first, second = (t1 - t0) * 1e3, (t2 - t1) * 1e3
print(json.dumps({"file": sys.argv[1], "first_ms": first, "second_ms": second, "ready_ms": first - second}))
