# serial_top: code at a kernel's top level (serial tasks) between and around loops,
# loops whose bounds are computed at run time (from a field, from an argument),
# a loop kept serial with loop_config, and a serial prefix sum done right.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 500
n_live = qd.field(qd.i32, shape=())
a = qd.field(qd.i32, shape=N)
s = qd.field(qd.i32, shape=N)
log = qd.field(qd.i32, shape=4)


@qd.kernel
def setup(n: qd.i32):
    n_live[None] = n
    for i in range(N):
        a[i] = i % 9 + 1
    log[0] = 1


@qd.kernel
def bounded_by_field():
    m = n_live[None] - 10
    for i in range(m):
        a[i] = a[i] * 2
    log[1] = m


@qd.kernel
def bounded_by_arg(lo: qd.i32, hi: qd.i32):
    for i in range(lo, hi):
        a[i] += 100
    log[2] = hi - lo


@qd.kernel
def prefix_sum_serial():
    qd.loop_config(serialize=True)
    for i in range(N):
        if i == 0:
            s[i] = a[i]
        else:
            s[i] = s[i - 1] + a[i]
    log[3] = s[N - 1]


setup(400)
bounded_by_field()
bounded_by_arg(10, 20)
prefix_sum_serial()
print("serial_top", log.to_numpy(), s.to_numpy()[-1])
