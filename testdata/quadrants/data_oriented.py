# data_oriented: a @qd.data_oriented class holding vector fields and a
# Python constant, its kernels taking self as a template.
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


s = Springs(20, 3.0)
s.init()
for _ in range(3):
    s.forces()
    s.move(0.02)
print("data_oriented", s.x.to_numpy()[4], s.f.to_numpy()[4])
