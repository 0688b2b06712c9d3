"""Many calls of one small kernel, for the bridge's linearity benchmark.

`python many_calls.py [CALLS]` (default 10000) calls a kernel that steps a
16-element field CALLS times, and prints the field's sum.
"""

import sys

import quadrants as qd

qd.init(arch=qd.cpu)

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
x = qd.field(qd.f32, shape=16)


@qd.kernel
def tick(k: qd.i32):
    for i in x:
        x[i] = x[i] * 0.5 + (i + k % 7) * 0.25


for k in range(CALLS):
    tick(k)
print("many_calls", CALLS, float(x.to_numpy().sum()))
