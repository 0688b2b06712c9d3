# The eight-loop kernel of scripts/bench-steady.sh in Quadrants 1.3.3 (the
# twin of steady.kir and steady.c), on the CPU.
# Usage: python steady.py on|off CALLS [THREADS]   (fast_math on or off;
# default 2 threads)
# Prints the median milliseconds per call of CALLS calls (after one).
# Or: python steady.py first [THREADS]   (scripts/bench-tiers.py): the cold
# start after `qd.init` (not counted), fast_math off: prints `FIRST RUN`,
# the milliseconds of the first calls of init and steady (each compiled,
# then run) and of the second calls (run only).
import statistics
import sys
import time

import quadrants as qd

threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
first = sys.argv[1] == "first"
if first:
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
qd.init(arch=qd.cpu, cpu_max_num_threads=threads, fast_math=sys.argv[1] == "on", offline_cache=False)
N = 1 << 20
x, a, b, c, d, e, f, g, h = (qd.field(qd.f32, shape=N) for _ in range(9))


@qd.kernel
def init():
    for i in range(N):
        x[i] = qd.cast(i, qd.f32) * (8.0 / N) - 4.0


@qd.kernel
def steady():
    for i1 in range(N):
        a[i1] = qd.sin(x[i1])
    for i2 in range(N):
        b[i2] = qd.sqrt(abs(a[i2]) + 1.0)
    for i3 in range(N):
        c[i3] = qd.exp(-b[i3])
    for i4 in range(N):
        d[i4] = qd.max(c[i4], 0.1) / b[i4]
    for i5 in range(N):
        e[i5] = qd.cos(d[i5] + x[i5])
    for i6 in range(N):
        t = qd.exp(e[i6] * 2.0)
        f[i6] = (t - 1.0) / (t + 1.0)
    for i7 in range(N):
        g[i7] = qd.log(f[i7] * f[i7] + 1.0)
    for i8 in range(N):
        h[i8] = qd.floor(g[i8] * 100.0 + x[i8])


def both_calls():
    t0 = time.perf_counter()
    init()
    steady()
    qd.sync()
    return (time.perf_counter() - t0) * 1e3


if first:
    cold = both_calls()
    print(f"{cold:.3f} {both_calls():.3f}")
    sys.exit(0)
init()
steady()
qd.sync()
times = []
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter()
    steady()
    qd.sync()
    times.append((time.perf_counter() - t0) * 1e3)
print(f"{statistics.median(times):.3f}")
