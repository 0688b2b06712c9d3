"""Two calls on one large field, for the bridge's peak-memory benchmark.

`python large_field.py [LOG2]` (default 24) makes a field of 2**LOG2 f32,
fills it, scales it, and prints a checksum.
"""

import sys

import quadrants as qd

qd.init(arch=qd.cpu)

N = 1 << (int(sys.argv[1]) if len(sys.argv) > 1 else 24)
x = qd.field(qd.f32, shape=N)


@qd.kernel
def fill():
    for i in x:
        x[i] = (i % 1000) * 0.001


@qd.kernel
def scale(a: qd.f32):
    for i in x:
        x[i] = x[i] * a + 1.0


fill()
scale(0.5)
print("large_field", N, float(x.to_numpy()[:: N // 1024].sum()))
