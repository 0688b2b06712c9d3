# The program behind real-func.offload.log and recursive.offload.log
# (captured with `kiln-quadrants run --keep`): real functions, one calling
# another, one writing a field and returning nothing; and one recursive.
import quadrants as qd

qd.init(arch=qd.cpu)
x = qd.field(qd.f32, shape=8)
n = qd.field(qd.i32, shape=8)


@qd.real_func
def half(v: qd.f32) -> qd.f32:
    return v * 0.5


@qd.real_func
def blend(v: qd.f32, k: qd.i32) -> qd.f32:
    return half(v) + qd.cast(k, qd.f32)


@qd.real_func
def bump(i: qd.i32) -> None:
    n[i] += 1


@qd.real_func
def fact(k: qd.i32) -> qd.i32:
    r = 1
    if k > 1:
        r = k * fact(k - 1)
    return r


@qd.kernel
def k(s: qd.f32):
    for i in x:
        x[i] = blend(x[i] * s, i)
        bump(i)


@qd.kernel
def rec():
    for i in n:
        n[i] = fact(i)


k(2.0)
rec()
