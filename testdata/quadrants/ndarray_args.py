# ndarray_args: kernels that take ndarrays (numpy arrays and qd.ndarray), of rank 1
# and 2, with scalar arguments beside them, and loops over an ndarray's shape.
import numpy as np

import quadrants as qd

qd.init(arch=qd.cpu)

acc = qd.field(qd.f32, shape=())


@qd.kernel
def scale(arr: qd.types.ndarray(dtype=qd.f32, ndim=1), k: qd.f32):
    for i in range(arr.shape[0]):
        arr[i] = arr[i] * k


@qd.kernel
def add_rows(m: qd.types.ndarray(dtype=qd.i32, ndim=2), rows: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(m.shape[0]):
        s = 0
        for j in range(m.shape[1]):
            s += m[i, j]
        rows[i] = s


@qd.kernel
def axpy_nd(a: qd.f64, x: qd.types.ndarray(dtype=qd.f64, ndim=1), y: qd.types.ndarray(dtype=qd.f64, ndim=1)):
    for i in x:
        y[i] = a * x[i] + y[i]


@qd.kernel
def to_field(x: qd.types.ndarray(dtype=qd.f32, ndim=1), n: qd.i32):
    for i in range(n):
        acc[None] += x[i]


a = np.arange(16, dtype=np.float32)
scale(a, 0.5)
m = np.arange(12, dtype=np.int32).reshape(3, 4)
rows = np.zeros(3, dtype=np.int32)
add_rows(m, rows)
x = qd.ndarray(qd.f64, shape=(32,))
y = qd.ndarray(qd.f64, shape=(32,))
x.from_numpy(np.arange(32, dtype=np.float64))
y.from_numpy(np.ones(32, dtype=np.float64))
axpy_nd(2.0, x, y)
to_field(a, 8)
print("ndarray_args", a[:4], rows, y.to_numpy()[:4], acc[None])
