# refused/bitmasked: a bitmasked 2-D field; struct_for visits only active cells.
import quadrants as qd

qd.init(arch=qd.cpu)

m = qd.field(qd.f32)
qd.root.bitmasked(qd.ij, (16, 16)).place(m)


@qd.kernel
def diag():
    for i in range(16):
        m[i, i] = 1.0


@qd.kernel
def count() -> qd.i32:
    c = 0
    for i, j in m:
        c += 1
    return c


diag()
print("bitmasked", count())
