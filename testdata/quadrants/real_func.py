# real_func: qd.real_func helpers, compiled once and called (qd.func is
# inlined): from parallel loops and serial code, one helper with callers in
# two kernels (compiled by the first, reused by the second), a helper that
# calls another, one that writes a field and returns nothing, one that loops
# and returns early by a flag, and integer and float signatures.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 64
x = qd.field(qd.f32, shape=N)
y = qd.field(qd.f32, shape=N)
hits = qd.field(qd.i32, shape=N)
total = qd.field(qd.i64, shape=())


@qd.real_func
def smooth(v: qd.f32, k: qd.i32) -> qd.f32:
    r = v * v
    if k % 3 == 0:
        r = qd.sqrt(r + 1.0)
    return r


@qd.real_func
def collatz_steps(start: qd.i32) -> qd.i32:
    n = start
    steps = 0
    while n != 1 and steps < 200:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@qd.real_func
def weigh(v: qd.f32, k: qd.i32) -> qd.f32:
    return smooth(v, k) * 0.5 + qd.cast(collatz_steps(k + 1), qd.f32)


@qd.real_func
def mark(i: qd.i32, by: qd.i32) -> None:
    hits[i] += by


@qd.kernel
def fill(scale: qd.f32):
    for i in range(N):
        x[i] = smooth(qd.cast(i, qd.f32) * scale, i)
        mark(i, 1)


@qd.kernel
def combine():
    for i in x:
        y[i] = weigh(x[i], i) - smooth(x[i], i + 1)
        mark(i, 2)


@qd.kernel
def count() -> qd.i64:
    s = qd.i64(0)
    for i in range(1, 20):  # serial (a loop inside a serial task)
        s += collatz_steps(i)
    total[None] = s
    return s


fill(0.125)
combine()
fill(-0.5)
combine()
print("real_func", x.to_numpy()[:4], y.to_numpy()[:4], hits.to_numpy()[:4], count())
