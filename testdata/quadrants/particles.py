# particles: a particle step over vec3 fields (positions, velocities), with
# gravity, a drag term, a bounce off the floor and whole-vector atomics.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 512
pos = qd.Vector.field(3, dtype=qd.f32, shape=N)
vel = qd.Vector.field(3, dtype=qd.f32, shape=N)
centre = qd.Vector.field(3, dtype=qd.f32, shape=())
energy = qd.field(qd.f32, shape=())


@qd.kernel
def seed():
    for i in pos:
        t = qd.cast(i, qd.f32)
        pos[i] = qd.Vector([qd.sin(t) * 2.0, 1.0 + (i % 7) * 0.5, qd.cos(t * 0.5)])
        vel[i] = qd.Vector([qd.cos(t), 0.25 * (i % 3), -qd.sin(t * 0.25)])


@qd.kernel
def step(dt: qd.f32, drag: qd.f32):
    g = qd.Vector([0.0, -9.8, 0.0])
    for i in pos:
        v = vel[i] * (1.0 - drag * dt) + g * dt
        p = pos[i] + v * dt
        if p.y < 0.0:
            p.y = -p.y
            v.y = -v.y * 0.8
        pos[i] = p
        vel[i] = v


@qd.kernel
def measure():
    for i in pos:
        centre[None] += pos[i] / N
        energy[None] += 0.5 * vel[i].dot(vel[i]) + 9.8 * pos[i][1]


seed()
for _ in range(3):
    step(0.01, 0.1)
measure()
print("particles", centre.to_numpy(), energy.to_numpy())
