# rotate2d: a 2-D rotation and shear with local mat2 values, applied to an
# ndarray of vec2 points and to a vec2 field; products, transpose, inverse.
import math

import numpy as np
import quadrants as qd

qd.init(arch=qd.cpu)

M = 64
pts = qd.Vector.field(2, dtype=qd.f32, shape=M)


@qd.kernel
def transform(angle: qd.f32, shear: qd.f32, xs: qd.types.ndarray(dtype=qd.math.vec2, ndim=1)):
    c, s = qd.cos(angle), qd.sin(angle)
    r = qd.Matrix([[c, -s], [s, c]])
    h = qd.Matrix([[1.0, shear], [0.0, 1.0]])
    a = r @ h
    for i in xs:
        xs[i] = a @ xs[i]


@qd.kernel
def undo(angle: qd.f32):
    r = qd.Matrix([[qd.cos(angle), -qd.sin(angle)], [qd.sin(angle), qd.cos(angle)]])
    back = r.transpose()
    inv = r.inverse()
    for i in pts:
        q = back @ pts[i]
        pts[i] = 0.5 * (q + inv @ pts[i]) + r.determinant() * qd.Vector([0.0, 0.001])


xs = qd.Vector.ndarray(2, qd.f32, shape=M)
xs.from_numpy(np.stack([np.linspace(-1, 1, M), np.linspace(2, -2, M)], axis=1).astype(np.float32))
transform(math.pi / 6, 0.25, xs)
pts.from_numpy(xs.to_numpy())
undo(math.pi / 6)
print("rotate2d", xs.to_numpy()[3], pts.to_numpy()[3])
