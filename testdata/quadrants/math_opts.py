# math_opts: the math functions on f32 and f64, one kernel per family.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 256
x = qd.field(qd.f32, shape=N)
trig = qd.field(qd.f32, shape=(4, N))
expo = qd.field(qd.f32, shape=(5, N))
rnd = qd.field(qd.f32, shape=(4, N))
d = qd.field(qd.f64, shape=(6, N))


@qd.kernel
def init_x():
    for i in x:
        x[i] = (qd.cast(i, qd.f32) - 128.0) / 64.0


@qd.kernel
def trig_ops():
    for i in x:
        t = x[i]
        trig[0, i] = qd.sin(t)
        trig[1, i] = qd.cos(t)
        trig[2, i] = qd.tan(t * 0.5)
        trig[3, i] = qd.atan2(t, 1.5)


@qd.kernel
def exp_ops():
    for i in x:
        t = x[i]
        expo[0, i] = qd.exp(t)
        expo[1, i] = qd.log(qd.abs(t) + 1.0)
        expo[2, i] = qd.sqrt(qd.abs(t))
        expo[3, i] = qd.pow(qd.abs(t), 1.5)
        expo[4, i] = qd.tanh(t)


@qd.kernel
def round_ops():
    for i in x:
        t = x[i] * 3.0
        rnd[0, i] = qd.floor(t)
        rnd[1, i] = qd.ceil(t)
        rnd[2, i] = qd.abs(t)
        rnd[3, i] = qd.round(t)


@qd.kernel
def f64_ops(s: qd.f64):
    for i in range(N):
        t = qd.cast(x[i], qd.f64) * s
        d[0, i] = qd.sin(t) * qd.cos(t)
        d[1, i] = qd.exp(t) - qd.log(t * t + 1.0)
        d[2, i] = qd.sqrt(t * t + 2.0)
        d[3, i] = t ** 3
        d[4, i] = qd.atan2(t, 2.0) + qd.floor(t) - qd.ceil(t)
        d[5, i] = qd.tanh(t) + qd.tan(t * 0.25)


init_x()
trig_ops()
exp_ops()
round_ops()
f64_ops(0.75)
print("math_opts", trig.to_numpy()[:, 200], expo.to_numpy()[:, 200], d.to_numpy()[:, 10])
