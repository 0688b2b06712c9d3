# mat3_field: a 3x3 deformation-gradient field updated per element, as an
# MPM-style step does: F = (I + dt C) F, its determinant, a polar-like
# correction, element-wise math and a 2-D field of mat3.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 48
F = qd.Matrix.field(3, 3, dtype=qd.f32, shape=N)
C = qd.Matrix.field(3, 3, dtype=qd.f32, shape=N)
J = qd.field(qd.f32, shape=N)
S = qd.Matrix.field(3, 3, dtype=qd.f64, shape=(4, 6))


@qd.kernel
def init():
    for p in F:
        F[p] = qd.Matrix.identity(qd.f32, 3)
        t = qd.cast(p, qd.f32) * 0.05
        C[p] = qd.Matrix([[t, 0.1, 0.0], [-0.1, -t, 0.2], [0.0, 0.05 * t, 0.3]])


@qd.kernel
def update(dt: qd.f32):
    for p in F:
        F[p] = (qd.Matrix.identity(qd.f32, 3) + dt * C[p]) @ F[p]
        J[p] = F[p].determinant()
        F[p] += 0.01 * (F[p].transpose() - F[p])
        F[p][1, 1] = qd.max(F[p][1, 1], 0.9)


@qd.kernel
def stress():
    for i, j in S:
        a = qd.cast(i + j, qd.f64)
        m = qd.Matrix([[a, 1.0, 0.0], [0.0, a, 1.0], [1.0, 0.0, a]], qd.f64)
        S[i, j] = qd.sqrt(m @ m.transpose() + 1.0) - m.trace() / 3.0


init()
for _ in range(4):
    update(0.05)
stress()
print("mat3_field", F.to_numpy()[7], J.to_numpy()[7], S.to_numpy()[2, 3])
