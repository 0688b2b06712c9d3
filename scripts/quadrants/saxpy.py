# saxpy, as testdata/saxpy.kir: fill x and y, then y = a * x + y.
import quadrants as qd

N = 4096
x = qd.field(qd.f32, shape=N)
y = qd.field(qd.f32, shape=N)


@qd.kernel
def saxpy(a: qd.f32, n: qd.i32):
    for i in range(n):
        xv = qd.cast(i, qd.f32) * 0.125
        x[i] = xv
        y[i] = 1.0 - xv * 0.5
    for j in range(n):
        y[j] = a * x[j] + y[j]


def run():
    saxpy(2.0, N)
