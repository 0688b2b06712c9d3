# A particle update over vec3 fields in Quadrants 1.3.3 (issue 40's second
# vector benchmark, memory-bound where nbody.py is compute-bound): gravity,
# drag and a floor bounce for 1M particles. Its scalar twin in KIR is
# advect_scalar.kir (x, y, z in separate fields).
# Usage: python advect.py CALLS [THREADS] [on|off]   (fast_math; default off)
# Prints the median milliseconds per call of `advect` over CALLS calls
# (after one); CALLS 0 runs init and one call only (for the capture).
import statistics
import sys
import time

import quadrants as qd

calls = int(sys.argv[1]) if len(sys.argv) > 1 else 0
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
fast = len(sys.argv) > 3 and sys.argv[3] == "on"
qd.init(arch=qd.cpu, cpu_max_num_threads=threads, fast_math=fast, offline_cache=False)

N = 1 << 20
pos = qd.Vector.field(3, dtype=qd.f32, shape=N)
vel = qd.Vector.field(3, dtype=qd.f32, shape=N)


@qd.kernel
def init():
    for i in pos:
        t = qd.cast(i % 1000, qd.f32)
        pos[i] = qd.Vector([t * 0.01, 1.0 + (i % 7) * 0.5, -t * 0.02])
        vel[i] = qd.Vector([0.5, 0.25 * (i % 3), -0.125])


@qd.kernel
def advect(dt: qd.f32):
    for i in pos:
        v = vel[i] * 0.999 + qd.Vector([0.0, -9.8, 0.0]) * dt
        p = pos[i] + v * dt
        if p[1] < 0.0:
            p[1] = -p[1]
            v[1] = -v[1] * 0.5
        pos[i] = p
        vel[i] = v


init()
advect(0.001)
qd.sync()
if calls:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        advect(0.001)
        qd.sync()
        times.append((time.perf_counter() - t0) * 1000)
    print(statistics.median(times))
