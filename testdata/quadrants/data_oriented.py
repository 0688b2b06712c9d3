# data_oriented: @qd.data_oriented classes, their kernels taking self as a
# template: one holding vector fields and a Python constant, one holding
# ndarrays (scalar and vec2, one in a nested object), which Quadrants passes
# as runtime parameters named by the ndarray's id.
import quadrants as qd

qd.init(arch=qd.cpu)


@qd.data_oriented
class Springs:
    def __init__(self, n: int, stiffness: float):
        self.n = n
        self.k = stiffness
        self.x = qd.Vector.field(2, dtype=qd.f32, shape=n)
        self.f = qd.Vector.field(2, dtype=qd.f32, shape=n)
        self.rest = qd.field(qd.f32, shape=n)

    @qd.kernel
    def init(self):
        for i in self.x:
            self.x[i] = qd.Vector([i * 1.1, qd.sin(i * 0.3)])
            self.rest[i] = 1.0

    @qd.kernel
    def forces(self):
        for i in self.f:
            self.f[i] = qd.Vector([0.0, 0.0])
        for i in range(self.n - 1):
            d = self.x[i + 1] - self.x[i]
            l = d.norm()
            f = self.k * (l - self.rest[i]) * d / l
            self.f[i] += f
            self.f[i + 1] -= f

    @qd.kernel
    def move(self, dt: qd.f32):
        for i in self.x:
            self.x[i] += dt * self.f[i]


@qd.data_oriented
class Buffers:
    def __init__(self, n: int):
        self.n = n
        self.mass = qd.ndarray(qd.f32, shape=n)
        self.inner = Velocities(n)

    @qd.kernel
    def advance(self, dt: qd.f32):
        for i in range(self.n):
            self.inner.v[i] += qd.Vector([1.0, -0.5]) * dt * self.mass[i]
            self.mass[i] += self.inner.v[i].sum() * dt


@qd.data_oriented
class Velocities:
    def __init__(self, n: int):
        self.v = qd.Vector.ndarray(2, qd.f32, shape=n)


s = Springs(20, 3.0)
s.init()
for _ in range(3):
    s.forces()
    s.move(0.02)
b = Buffers(12)
b.mass.fill(2.0)
b.advance(0.5)
b.advance(0.25)
print("data_oriented", s.x.to_numpy()[4], s.f.to_numpy()[4], b.mass.to_numpy()[3], b.inner.v.to_numpy()[3])
