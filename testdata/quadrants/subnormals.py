# subnormals: Quadrants' CPU backend flushes subnormal floats to zero (a
# subnormal result becomes zero, a subnormal input counts as zero); the
# replay computes so too. A product that would be subnormal, a subnormal
# input scaled up, and a damped wave that decays through the subnormal
# range over its steps.
import numpy as np
import quadrants as qd

qd.init(arch=qd.cpu)

x = qd.field(qd.f32, shape=8)
y = qd.field(qd.f32, shape=8)
d = qd.field(qd.f64, shape=8)
u = qd.field(qd.f32, shape=64)
v = qd.field(qd.f32, shape=64)


@qd.kernel
def tiny_product():
    for i in x:
        y[i] = x[i] * 1e-10


@qd.kernel
def scale_up(k: qd.f32):
    for i in x:
        y[i] = x[i] * k


@qd.kernel
def tiny_f64():
    for i in d:
        d[i] = d[i] * 1e-10


@qd.kernel
def damp(c: qd.f32):
    for i in range(1, 63):
        v[i] = c * (u[i - 1] + u[i + 1] - 2.0 * u[i]) + 0.5 * v[i]
    for i in range(1, 63):
        u[i] = u[i] + v[i]


x.from_numpy(np.array([1e-30, -1e-30, 1e-39, -1e-39, 2.0, 1e-38, 3e-45, 0.5], dtype=np.float32))
d.from_numpy(np.array([1e-300, -1e-300, 2e-299, 1.0, 1e-298, 2e-8, 0.0, 5e-305], dtype=np.float64))
u.from_numpy((np.sin(np.arange(64, dtype=np.float32)) * 1e-36).astype(np.float32))
tiny_product()
scale_up(1e30)
tiny_f64()
for _ in range(20):
    damp(0.25)
print("subnormals", y.to_numpy(), d.to_numpy(), u.to_numpy()[:4])
