# memcpy: copy one field into another (range_for, struct_for, 2-D) and out to an ndarray.
import numpy as np

import quadrants as qd

qd.init(arch=qd.cpu)

N = 2048
src = qd.field(qd.i32, shape=N)
dst = qd.field(qd.i32, shape=N)
src2 = qd.field(qd.f32, shape=(32, 64))
dst2 = qd.field(qd.f32, shape=(32, 64))


@qd.kernel
def seed():
    for i in range(N):
        src[i] = (i * 7919) % 1000
    for i, j in src2:
        src2[i, j] = qd.cast(i - j, qd.f32)


@qd.kernel
def copy_range():
    for i in range(N):
        dst[i] = src[i]


@qd.kernel
def copy_struct2d():
    for i, j in dst2:
        dst2[i, j] = src2[i, j]


@qd.kernel
def copy_out(out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(out.shape[0]):
        out[i] = dst[i]


seed()
copy_range()
copy_struct2d()
out = np.zeros(N, dtype=np.int32)
copy_out(out)
print("memcpy", int(out.sum()), float(dst2.to_numpy().sum()))
