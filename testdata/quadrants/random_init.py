# random_init: qd.random at several types. A game-of-life style random
# board, uniform noise in [-1, 1), random bits, and a Monte-Carlo estimate
# of pi. Quadrants' numbers depend on its threads' schedule, so the bridge
# checks these kernels by distribution (docs/quadrants.md, "Random numbers").
import quadrants as qd

qd.init(arch=qd.cpu)

n = 96
samples = 200_000
alive = qd.field(qd.i32, shape=(n, n))
noise = qd.field(qd.f64, shape=4096)
bits = qd.field(qd.u32, shape=4096)
hits = qd.field(qd.i32, shape=())
pi = qd.field(qd.f32, shape=())


@qd.kernel
def seed_board(density: qd.f32):
    for i, j in alive:
        v = 0
        if qd.random() < density:
            v = 1
        alive[i, j] = v


@qd.kernel
def draw_noise():
    for i in noise:
        noise[i] = qd.random(qd.f64) * 2.0 - 1.0
        bits[i] = qd.random(qd.u32)


@qd.kernel
def throw_darts(count: qd.i32):
    for _ in range(count):
        x = qd.random()
        y = qd.random()
        if x * x + y * y < 1.0:
            hits[None] += 1


@qd.kernel
def estimate(count: qd.i32):
    pi[None] = 4.0 * hits[None] / count


seed_board(0.25)
draw_noise()
throw_darts(samples)
estimate(samples)
print("random_init", alive.to_numpy().mean(), noise.to_numpy().mean(), pi[None])
