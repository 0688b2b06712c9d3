# vector_field: a vector field and matrix arithmetic in a kernel (a matrix
# field of shape (), matrix literals, a product with a local vector).
import quadrants as qd

qd.init(arch=qd.cpu)

pos = qd.Vector.field(3, dtype=qd.f32, shape=64)
rot = qd.Matrix.field(2, 2, dtype=qd.f32, shape=())


@qd.kernel
def init():
    rot[None] = qd.Matrix([[0.0, -1.0], [1.0, 0.0]])
    for i in pos:
        pos[i] = qd.Vector([i, 2 * i, 3 * i])


@qd.kernel
def rotate_xy():
    for i in pos:
        p = qd.Vector([pos[i][0], pos[i][1]])
        q = rot[None] @ p
        pos[i][0] = q[0]
        pos[i][1] = q[1]


init()
rotate_xy()
print("vector_field", pos.to_numpy()[5])
