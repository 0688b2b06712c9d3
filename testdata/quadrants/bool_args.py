"""Python `bool` arguments (Quadrants declares them as u1), one of them never read, and bools passed for numbers."""

import quadrants as qd

qd.init(arch=qd.cpu)
x = qd.field(qd.f32, shape=8)


@qd.kernel
def k(a: qd.f32, flag: bool, unused: bool, n: qd.i32):
    for i in range(n):
        x[i] = x[i] + a
        if flag:
            x[i] += 1.0


k(1.5, True, False, 8)
k(1.5, False, True, 8)


@qd.kernel
def scaled(on: qd.i32, w: qd.f32):
    for i in x:
        x[i] = x[i] * w + on


scaled(True, False)
scaled(False, True)
