# funcs_locals: qd.func helpers (inlined), locals mutated in nested loops and
# branches, tuple-free swaps, a nested range loop inside a parallel one, and
# qd.static unrolling.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 64
x = qd.field(qd.i32, shape=N)
y = qd.field(qd.f32, shape=N)
poly = qd.field(qd.f32, shape=N)


@qd.func
def clamp(v: qd.i32, lo: qd.i32, hi: qd.i32) -> qd.i32:
    r = v
    if v < lo:
        r = lo
    if v > hi:
        r = hi
    return r


@qd.func
def gcd(a: qd.i32, b: qd.i32) -> qd.i32:
    while b != 0:
        t = a % b
        a = b
        b = t
    return a


@qd.kernel
def use_funcs():
    for i in x:
        x[i] = clamp(i * 5 - 100, -50, 150) + gcd(i + 12, 36)


@qd.kernel
def nested_locals():
    for i in range(N):
        acc = 0.0
        sign = 1.0
        for j in range(i % 8):
            acc += sign * qd.cast(j, qd.f32)
            sign = -sign
        a = acc
        b = qd.cast(i, qd.f32)
        if a > b:
            t = a
            a = b
            b = t
        y[i] = b - a


@qd.kernel
def horner(c0: qd.f32, c1: qd.f32, c2: qd.f32):
    for i in range(N):
        t = qd.cast(i, qd.f32) / 64.0
        v = c2
        v = v * t + c1
        v = v * t + c0
        w = 0.0
        for k in qd.static(range(3)):  # unrolled at compile time
            w = w * t + (k + 1)
        poly[i] = v + w


use_funcs()
nested_locals()
horner(1.0, -2.0, 0.5)
print("funcs_locals", x.to_numpy().sum(), y.to_numpy()[:6], poly.to_numpy()[:3])
