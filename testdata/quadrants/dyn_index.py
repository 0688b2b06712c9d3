# dyn_index: components chosen at run time: a local vector and matrix
# indexed by a loop variable and an argument, a field's component read,
# written and updated atomically by a computed index.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 40
v = qd.Vector.field(4, dtype=qd.i32, shape=N)
w = qd.Vector.field(3, dtype=qd.f32, shape=N)
hist = qd.Vector.field(5, dtype=qd.i32, shape=())


@qd.kernel
def fill(k: qd.i32):
    for i in v:
        a = qd.Vector([i, 2 * i, 3 * i, 4 * i])
        a[k] = -a[k]
        m = qd.Matrix([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
        r = i % 3
        for j in range(4):
            v[i][j] = a[(j + i) % 4] + m[r, j % 3]
        w[i][i % 3] = qd.cast(m[r, (r + 1) % 3], qd.f32) * 0.5


@qd.kernel
def count():
    for i in v:
        hist[None][v[i][i % 4] % 5] += 1


fill(2)
count()
print("dyn_index", v.to_numpy()[5], w.to_numpy()[5], hist.to_numpy())
