# An n-body step over vec3 fields in Quadrants 1.3.3 (issue 40's vector
# benchmark): every body's acceleration from all N, then positions. Its
# scalar twin in KIR is nbody_scalar.kir (separate x, y, z fields).
# Usage: python nbody.py CALLS [THREADS] [on|off]   (fast_math; default off)
# Prints the median milliseconds per call of `step` over CALLS calls
# (after one); CALLS 0 runs init and one step only (for the capture).
import statistics
import sys
import time

import quadrants as qd

calls = int(sys.argv[1]) if len(sys.argv) > 1 else 0
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
fast = len(sys.argv) > 3 and sys.argv[3] == "on"
qd.init(arch=qd.cpu, cpu_max_num_threads=threads, fast_math=fast, offline_cache=False)

N = 2048
pos = qd.Vector.field(3, dtype=qd.f32, shape=N)
vel = qd.Vector.field(3, dtype=qd.f32, shape=N)
mass = qd.field(qd.f32, shape=N)


@qd.kernel
def init():
    for i in pos:
        t = qd.cast(i, qd.f32)
        pos[i] = qd.Vector([qd.sin(t * 0.1) * 10.0, qd.cos(t * 0.07) * 10.0, (i % 17) * 0.5])
        vel[i] = qd.Vector([0.0, 0.0, 0.0])
        mass[i] = 1.0 + (i % 5) * 0.25


@qd.kernel
def step(dt: qd.f32):
    for i in pos:
        p = pos[i]
        acc = qd.Vector([0.0, 0.0, 0.0])
        for j in range(N):
            d = pos[j] - p
            r2 = d.dot(d) + 0.01
            acc += mass[j] / (r2 * qd.sqrt(r2)) * d
        vel[i] += dt * acc
    for i in pos:
        pos[i] += dt * vel[i]


init()
step(0.001)
qd.sync()
if calls:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        step(0.001)
        qd.sync()
        times.append((time.perf_counter() - t0) * 1000)
    print(statistics.median(times))
