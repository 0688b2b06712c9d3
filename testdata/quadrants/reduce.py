# reduce: reductions into scalars: a local accumulated in a parallel loop (a global
# temporary across tasks), a 0-D field target, a returned value, a max reduction.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 3000
x = qd.field(qd.i32, shape=N)
total = qd.field(qd.i32, shape=())
fmax = qd.field(qd.f32, shape=())


@qd.kernel
def seed():
    for i in x:
        x[i] = (i * 31) % 101 - 50


@qd.kernel
def sum_local():
    s = 0
    for i in range(N):
        s += x[i]
    total[None] = s


@qd.kernel
def sum_returned() -> qd.i64:
    s = qd.cast(0, qd.i64)
    for i in x:
        s += qd.cast(x[i], qd.i64) * 3
    return s


@qd.kernel
def max_abs():
    fmax[None] = -1.0
    for i in x:
        qd.atomic_max(fmax[None], qd.cast(qd.abs(x[i]), qd.f32))


@qd.kernel
def count_positive() -> qd.i32:
    c = 0
    for i in range(N):
        if x[i] > 0:
            c += 1
    return c


seed()
sum_local()
r = sum_returned()
max_abs()
print("reduce", total[None], r, fmax[None], count_positive())
