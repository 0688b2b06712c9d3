# fill: constant and index-derived fills of fields of rank 1-3 and of a 0-D field.
import quadrants as qd

qd.init(arch=qd.cpu)

a = qd.field(qd.f32, shape=1024)
b = qd.field(qd.i32, shape=(32, 48))
c = qd.field(qd.f64, shape=(8, 8, 8))
flag = qd.field(qd.i32, shape=())


@qd.kernel
def fill_const(v: qd.f32):
    for i in a:
        a[i] = v


@qd.kernel
def fill_index():
    for i, j in b:
        b[i, j] = i * 100 + j


@qd.kernel
def fill_3d(v: qd.f64):
    for i, j, k in qd.ndrange(8, 8, 8):
        c[i, j, k] = v + i - j * k


@qd.kernel
def fill_scalar(v: qd.i32):
    flag[None] = v


fill_const(1.5)
fill_index()
fill_3d(0.5)
fill_scalar(7)
print("fill", a.to_numpy().sum(), b.to_numpy().sum(), c.to_numpy().sum(), flag[None])
