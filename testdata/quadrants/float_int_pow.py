"""A float to an integer power (`x ** n`, n an i32): Quadrants multiplies
it out by squaring, and takes the reciprocal for a negative n."""

import quadrants as qd

qd.init(arch=qd.cpu)
x = qd.field(qd.f32, shape=16)
y = qd.field(qd.f64, shape=16)


@qd.kernel
def powers(base: qd.f32):
    for i in x:
        n = i - 8
        x[i] = (base + i * 0.37) ** n
        y[i] = qd.cast(base - i * 0.11, qd.f64) ** (n * 3)


@qd.kernel
def extremes():
    for i in range(4):
        x[i] = 1.0001 ** (i * 1000000)
        x[i + 4] = 0.0 ** (i - 2)


powers(1.25)
powers(-0.5)
extremes()
print(x.to_numpy(), y.to_numpy())
