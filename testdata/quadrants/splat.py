# splat: particles spread mass and momentum onto a 2-D grid of vec2 with
# bilinear weights (float atomics from a parallel loop: sums in any order),
# the grid is normalised, and particles gather their velocity back;
# vector-valued field indices (grid[base + offset]).
import quadrants as qd

qd.init(arch=qd.cpu)

P, G = 600, 24
h = 1.0 / G
xp = qd.Vector.field(2, dtype=qd.f32, shape=P)
vp = qd.Vector.field(2, dtype=qd.f32, shape=P)
gm = qd.field(qd.f32, shape=(G, G))
gv = qd.Vector.field(2, dtype=qd.f32, shape=(G, G))


@qd.kernel
def seed():
    for p in xp:
        a = qd.cast(p, qd.f32) * 0.37
        xp[p] = qd.Vector([0.5 + 0.3 * qd.sin(a), 0.5 + 0.3 * qd.cos(a * 1.3)])
        vp[p] = qd.Vector([qd.cos(a), -qd.sin(a)])


@qd.kernel
def splat():
    for i, j in gm:
        gm[i, j] = 0.0
        gv[i, j] = qd.Vector([0.0, 0.0])
    for p in xp:
        g = xp[p] / h
        base = qd.floor(g).cast(qd.i32)
        f = g - base.cast(qd.f32)
        for a, b in qd.static(qd.ndrange(2, 2)):
            off = qd.Vector([a, b])
            wx = f[0] if a == 1 else 1.0 - f[0]
            wy = f[1] if b == 1 else 1.0 - f[1]
            w = wx * wy
            gm[base + off] += w
            gv[base + off] += w * vp[p]


@qd.kernel
def gather(damp: qd.f32):
    for i, j in gm:
        if gm[i, j] > 0.0:
            gv[i, j] /= gm[i, j]
    for p in xp:
        g = xp[p] / h
        base = qd.floor(g).cast(qd.i32)
        f = g - base.cast(qd.f32)
        v = qd.Vector([0.0, 0.0])
        for a, b in qd.static(qd.ndrange(2, 2)):
            w = (f[0] if a == 1 else 1.0 - f[0]) * (f[1] if b == 1 else 1.0 - f[1])
            v += w * gv[base + qd.Vector([a, b])]
        vp[p] = damp * v
        xp[p] += 0.01 * vp[p]


seed()
for _ in range(2):
    splat()
    gather(0.99)
print("splat", xp.to_numpy()[7], gm.to_numpy().sum())
