# stencil2d: a 5-point Jacobi step on a 64x64 grid, interior only, two buffers.
import quadrants as qd

qd.init(arch=qd.cpu)

H, W = 64, 64
u = qd.field(qd.f32, shape=(H, W))
v = qd.field(qd.f32, shape=(H, W))


@qd.kernel
def init_grid():
    for i, j in u:
        u[i, j] = 0.0
        if i == 0 or j == 0 or i == H - 1 or j == W - 1:
            u[i, j] = 1.0


@qd.kernel
def step():
    for i, j in qd.ndrange((1, H - 1), (1, W - 1)):
        v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


@qd.kernel
def copy_back():
    for i, j in qd.ndrange((1, H - 1), (1, W - 1)):
        u[i, j] = v[i, j]


init_grid()
for _ in range(4):
    step()
    copy_back()
print("stencil2d", u.to_numpy()[1, :4])
