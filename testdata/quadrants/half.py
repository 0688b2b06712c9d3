# half: qd.f16 on the CPU, which stores two bytes and computes each
# operation in f32, rounding the result to f16: fields and ndarrays of f16,
# arithmetic whose intermediate rounding shows (x * x + x), math functions,
# casts both ways (f64 through f32, 2049 to even), an f16 subnormal that
# survives Quadrants' flush-to-zero, a scalar f16 argument, atomic max and
# a reduction of exact terms.
import numpy as np
import quadrants as qd

qd.init(arch=qd.cpu)

N = 64
xs = qd.field(qd.f16, shape=N)
poly = qd.field(qd.f16, shape=N)
math = qd.field(qd.f16, shape=N)
wide = qd.field(qd.f64, shape=N)
narrow = qd.field(qd.f16, shape=N)
ints = qd.field(qd.i32, shape=N)
top = qd.field(qd.f16, shape=2)
total = qd.field(qd.f16, shape=())


@qd.kernel
def compute(scale: qd.f16, ys: qd.types.ndarray(dtype=qd.f16, ndim=1)):
    for i in range(N):
        x = xs[i] * scale
        poly[i] = x * x + x
        math[i] = qd.sin(x) + qd.sqrt(qd.abs(x)) - qd.exp(x * qd.f16(0.25))
        narrow[i] = qd.cast(wide[i], qd.f16)
        ints[i] = qd.cast(x * qd.f16(100.0), qd.i32) + qd.cast(qd.cast(i + 2049, qd.f16), qd.i32)
        ys[i] = qd.floor(x * ys[i]) + qd.max(x, ys[i])
        qd.atomic_max(top[1], x)
        total[None] += qd.f16(0.25)


xs.from_numpy((np.arange(N) - 20).astype(np.float16) * np.float16(0.37))
d = np.linspace(-3.0, 70000.0, N)
d[0] = 1.0 + 2.0**-11 + 2.0**-40
d[1] = 2.0**-24
wide.from_numpy(d)
ys = qd.ndarray(qd.f16, shape=N)
ys.from_numpy(np.linspace(-5, 5, N).astype(np.float16))
compute(0.7, ys)
print("half", poly.to_numpy()[:3], narrow.to_numpy()[:2], top.to_numpy(), total.to_numpy())
