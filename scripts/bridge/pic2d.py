"""A 2-D particle-in-cell fluid of our own, for the bridge's cost benchmark.

Particles carry a velocity; each step splats it onto a grid with quadratic
B-spline weights, applies gravity and the walls on the grid, and gathers it
back, moving the particles: one kernel call per step. `python pic2d.py
[STEPS]` (default 500) prints a checksum of the positions at the end.
"""

import sys

import quadrants as qd

qd.init(arch=qd.cpu)

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 500
N = 4096  # particles
G = 64  # grid cells per side
DX = 1.0 / G
DT = 1e-3

px = qd.field(qd.f32, shape=N)
py = qd.field(qd.f32, shape=N)
pu = qd.field(qd.f32, shape=N)
pv = qd.field(qd.f32, shape=N)
gu = qd.field(qd.f32, shape=(G, G))
gv = qd.field(qd.f32, shape=(G, G))
gm = qd.field(qd.f32, shape=(G, G))


@qd.func
def spline(f: qd.f32, k: qd.template()) -> qd.f32:
    """The quadratic B-spline weight of node k (0, 1, 2) at offset f."""
    w = 0.0
    if qd.static(k == 0):
        w = 0.5 * (1.5 - f) * (1.5 - f)
    elif qd.static(k == 1):
        w = 0.75 - (f - 1.0) * (f - 1.0)
    else:
        w = 0.5 * (f - 0.5) * (f - 0.5)
    return w


@qd.kernel
def seed():
    for p in px:
        # A block of fluid in the upper left, on a jittered lattice.
        a = p % 64
        b = p // 64
        px[p] = 0.1 + a * 0.006 + 0.001 * qd.sin(b * 1.3)
        py[p] = 0.4 + b * 0.006 + 0.001 * qd.cos(a * 0.7)
        pu[p] = 1.0
        pv[p] = 0.0


@qd.kernel
def step():
    for i, j in gm:
        gu[i, j] = 0.0
        gv[i, j] = 0.0
        gm[i, j] = 0.0
    for p in px:
        bx = int(px[p] / DX - 0.5)
        by = int(py[p] / DX - 0.5)
        fx = px[p] / DX - bx
        fy = py[p] / DX - by
        for a in qd.static(range(3)):
            for b in qd.static(range(3)):
                w = spline(fx, a) * spline(fy, b)
                gu[bx + a, by + b] += w * pu[p]
                gv[bx + a, by + b] += w * pv[p]
                gm[bx + a, by + b] += w
    for i, j in gm:
        if gm[i, j] > 0:
            u = gu[i, j] / gm[i, j]
            v = gv[i, j] / gm[i, j] - 9.8 * DT
            if i < 3 and u < 0:
                u = 0.0
            if i > G - 4 and u > 0:
                u = 0.0
            if j < 3 and v < 0:
                v = 0.0
            if j > G - 4 and v > 0:
                v = 0.0
            gu[i, j] = u
            gv[i, j] = v
    for p in px:
        bx = int(px[p] / DX - 0.5)
        by = int(py[p] / DX - 0.5)
        fx = px[p] / DX - bx
        fy = py[p] / DX - by
        u = 0.0
        v = 0.0
        for a in qd.static(range(3)):
            for b in qd.static(range(3)):
                w = spline(fx, a) * spline(fy, b)
                u += w * gu[bx + a, by + b]
                v += w * gv[bx + a, by + b]
        pu[p] = u
        pv[p] = v
        px[p] = qd.min(qd.max(px[p] + DT * u, 2.0 * DX), 1.0 - 2.0 * DX)
        py[p] = qd.min(qd.max(py[p] + DT * v, 2.0 * DX), 1.0 - 2.0 * DX)


seed()
for _ in range(STEPS):
    step()
print("pic2d", STEPS, float(px.to_numpy().sum()), float(py.to_numpy().sum()))
