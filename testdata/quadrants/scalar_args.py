# scalar_args: kernels taking i32, i64, f32 and f64 scalars (and mixing them), values
# stored so that each argument's exact bits are visible afterwards.
import quadrants as qd

qd.init(arch=qd.cpu)

ri = qd.field(qd.i32, shape=4)
rl = qd.field(qd.i64, shape=4)
rf = qd.field(qd.f32, shape=4)
rd = qd.field(qd.f64, shape=4)


@qd.kernel
def take_i32(a: qd.i32, b: qd.i32):
    ri[0] = a
    ri[1] = b
    ri[2] = a * b
    ri[3] = a - b


@qd.kernel
def take_i64(a: qd.i64):
    rl[0] = a
    rl[1] = a * 2
    rl[2] = a >> 33
    rl[3] = -a


@qd.kernel
def take_f32(a: qd.f32, b: qd.f32):
    rf[0] = a
    rf[1] = b
    rf[2] = a * b
    rf[3] = a / b


@qd.kernel
def take_mixed(i: qd.i32, l: qd.i64, f: qd.f32, d: qd.f64):
    for k in range(4):
        rd[k] = d * k + f - qd.cast(l, qd.f64) + i


take_i32(7, -3)
take_i64(123456789012)
take_f32(1.25, -0.5)
take_mixed(2, 10000000000, 0.5, 0.125)
print("scalar_args", ri.to_numpy(), rl.to_numpy(), rf.to_numpy(), rd.to_numpy())
