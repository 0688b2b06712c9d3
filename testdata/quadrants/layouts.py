"""Fields and an ndarray of a permuted layout: memory in another axis order
than the program's indices (order="ji", qd.tensor's layout=)."""

import numpy as np
import quadrants as qd

qd.init(arch=qd.cpu)
a = qd.field(qd.f32, shape=(4, 3), order="ji")
b = qd.field(qd.i32, shape=(4, 3))
c = qd.field(qd.f32, shape=(2, 3, 5), order="kij")
v = qd.Vector.field(2, qd.f32, shape=(3, 4), order="ji")


@qd.kernel
def fill():
    for i, j in a:
        a[i, j] = i * 10.0 + j
        b[i, j] = i * 10 + j
    for i, j, k in c:
        c[i, j, k] = i * 100.0 + j * 10.0 + k


@qd.kernel
def mix(s: qd.f32):
    for i, j in v:
        v[i, j] = qd.Vector([a[j, i] * s, c[1, i, j % 5] + b[j, i]])


@qd.kernel
def total(t: qd.types.ndarray(dtype=qd.f32, ndim=2)) -> qd.f32:
    acc = 0.0
    for i, j in qd.ndrange(t.shape[0], t.shape[1]):
        acc += t[i, j] * (i + 1) - v[i % 3, j % 4][1]
    return acc


fill()
mix(2.0)
t = qd.tensor(qd.f32, shape=(3, 4), layout=(1, 0))
t.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
print(total(t))
print(v.to_numpy()[:, :, 1].sum())
