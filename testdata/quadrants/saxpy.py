# saxpy: y = a * x + y over 1-D f32 fields (struct_for over a field, range_for over a range).
import quadrants as qd

qd.init(arch=qd.cpu)

N = 4096
x = qd.field(qd.f32, shape=N)
y = qd.field(qd.f32, shape=N)


@qd.kernel
def init_xy():
    for i in range(N):
        x[i] = qd.cast(i % 17, qd.f32)
        y[i] = qd.cast(i % 5, qd.f32) * 0.5


@qd.kernel
def saxpy(a: qd.f32):
    for i in x:
        y[i] = a * x[i] + y[i]


init_xy()
saxpy(2.0)
saxpy(0.25)
print("saxpy", y.to_numpy()[:4], float(y.to_numpy().sum()))
