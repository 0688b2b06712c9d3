# gradients: reverse-mode kernels (a Tape's backward pass and kernel.grad())
# captured and checked like any other: gradients of math functions, of a
# scalar weight shared by every iteration, of a vector field.
import quadrants as qd

qd.init(arch=qd.cpu)

n = 16
x = qd.field(qd.f32, shape=n, needs_grad=True)
w = qd.field(qd.f32, shape=(), needs_grad=True)
y = qd.field(qd.f32, shape=n, needs_grad=True)
loss = qd.field(qd.f32, shape=(), needs_grad=True)
v = qd.Vector.field(2, qd.f32, shape=n, needs_grad=True)


@qd.kernel
def init():
    for i in x:
        x[i] = 0.1 * i
        v[i] = [qd.sin(0.3 * i), qd.cos(0.2 * i)]
    w[None] = 1.5


@qd.kernel
def forward():
    for i in x:
        y[i] = qd.sin(w[None] * x[i]) + qd.exp(-x[i])


@qd.kernel
def reduce():
    for i in y:
        loss[None] += y[i] * y[i] + v[i].dot(v[i])


init()
with qd.ad.Tape(loss=loss):
    forward()
    reduce()
print("loss", loss[None], "dw", w.grad[None], "dx0", x.grad[3], "dv", v.grad[2][0])

# The derivative called directly: seeded by hand.
loss.grad[None] = 2.0
y.grad.fill(0.0)
reduce.grad()
print("dy", y.grad.to_numpy().sum())
