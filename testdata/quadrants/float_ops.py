# float_ops: float arithmetic, comparisons, select, min/max on f32 and f64.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 128
a = qd.field(qd.f32, shape=N)
r = qd.field(qd.f32, shape=(10, N))
d = qd.field(qd.f64, shape=(6, N))
c = qd.field(qd.i32, shape=(4, N))


@qd.kernel
def seed():
    for i in a:
        a[i] = qd.cast(i, qd.f32) * 0.25 - 16.0


@qd.kernel
def arith_f32(k: qd.f32):
    for i in a:
        x = a[i]
        y = k + qd.cast(i % 3, qd.f32)
        r[0, i] = x + y
        r[1, i] = x - y
        r[2, i] = x * y
        r[3, i] = x / y
        r[4, i] = x // y
        r[5, i] = x % y
        r[6, i] = -x
        r[7, i] = qd.min(x, y)
        r[8, i] = qd.max(x, y)
        r[9, i] = qd.select(x > 0.0, x, y)


@qd.kernel
def arith_f64(k: qd.f64):
    for i in range(N):
        x = qd.cast(a[i], qd.f64)
        y = k * (i + 1)
        d[0, i] = x + y
        d[1, i] = x * y - 1.0
        d[2, i] = x / y
        d[3, i] = qd.max(x, -y)
        d[4, i] = x if x < y else y
        d[5, i] = qd.abs(x) % 3.0


@qd.kernel
def compares():
    for i in a:
        x = a[i]
        c[0, i] = x < 0.0
        c[1, i] = x >= -1.5
        c[2, i] = x == 2.0
        c[3, i] = x != 0.25


seed()
arith_f32(1.5)
arith_f64(0.5)
compares()
print("float_ops", r.to_numpy().sum(axis=1), d.to_numpy().sum(axis=1), c.to_numpy().sum(axis=1))
