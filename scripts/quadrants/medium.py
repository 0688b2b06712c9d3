# medium: kernels of ordinary size above the interpreter tier's bound (docs/performance.md, "Tiered compilation"): 65,536 elements with math, two 256 x 256 sweeps, a 65,536-element float sum.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 65536
x = qd.field(qd.f32, shape=N)
y = qd.field(qd.f32, shape=N)
g = qd.field(qd.f32, shape=(256, 256))
h = qd.field(qd.f32, shape=(256, 256))
s = qd.field(qd.f32, shape=())


@qd.kernel
def init(a: qd.f32):
    for i in x:
        x[i] = qd.sin(i * 0.0001) * a
        y[i] = qd.sqrt(qd.abs(x[i])) * qd.cos(i * 0.00001)


@qd.kernel
def stencil():
    for i, j in g:
        g[i, j] = qd.cast(i * j % 7, qd.f32)
    for i, j in h:
        if 0 < i < 255 and 0 < j < 255:
            h[i, j] = 0.25 * (g[i - 1, j] + g[i + 1, j] + g[i, j - 1] + g[i, j + 1])


@qd.kernel
def reduce_sum():
    for i in range(N):
        s[None] += qd.exp(-x[i] * x[i]) * y[i]


init(1.5)
stencil()
reduce_sum()
print("medium", x.to_numpy().sum(), h.to_numpy().sum(), s[None])
