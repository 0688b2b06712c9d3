# racy/neighbour_vec: a smoothing step over a vec2 field written in place as
# a parallel loop. Deliberately wrong: iteration i reads the y component of
# p[i + 1], which iteration i + 1 writes; the x components are each read and
# written by one iteration only. A race is per component: --check-races must
# name the y component's element and both Python lines, and never an x one.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 64
p = qd.Vector.field(2, dtype=qd.i32, shape=N)


@qd.kernel
def seed():
    for i in p:
        p[i] = qd.Vector([i, 2 * i])


@qd.kernel
def smooth():
    for i in range(N - 1):
        p[i][0] = p[i][0] * 2
        p[i][1] = p[i + 1][1] - p[i][1]


seed()
smooth()
print("neighbour_vec", p.to_numpy()[:3])
