# more_ops: the rarer forms: truncating integer division and remainder (raw_div,
# raw_mod), asin/acos/rsqrt, a chosen block_dim, and a kernel returning two
# values. (Fields of the narrow integer types are in refused/narrow_types.py:
# KIR has no such types.)
import quadrants as qd

qd.init(arch=qd.cpu)

N = 96
q = qd.field(qd.i32, shape=(2, N))
tri = qd.field(qd.f32, shape=(3, N))


@qd.kernel
def raw_ops(d: qd.i32):
    for i in range(N):
        x = i - 48
        q[0, i] = qd.raw_div(x, d)  # truncates toward zero, unlike //
        q[1, i] = qd.raw_mod(x, d)  # sign of the dividend, unlike %


@qd.kernel
def inverse_trig():
    qd.loop_config(block_dim=16)
    for i in range(N):
        t = (qd.cast(i, qd.f32) - 48.0) / 48.0
        tri[0, i] = qd.asin(t)
        tri[1, i] = qd.acos(t)
        tri[2, i] = qd.rsqrt(qd.abs(t) + 1.0)


@qd.kernel
def min_and_max() -> (qd.i32, qd.i32):
    lo = 1 << 30
    hi = -(1 << 30)
    for i in range(N):
        qd.atomic_min(lo, q[0, i])
        qd.atomic_max(hi, q[1, i])
    return lo, hi


raw_ops(-7)
inverse_trig()
print("more_ops", q.to_numpy()[:, :3], tri.to_numpy()[:, 0], min_and_max())
