# more_ops: the rarer forms: truncating integer division and remainder (raw_div,
# raw_mod), i16/u16/u64/u8 fields with wrap-around, asin/acos/rsqrt, a chosen
# block_dim, and a kernel returning two values.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 96
q = qd.field(qd.i32, shape=(2, N))
h = qd.field(qd.i16, shape=N)
w = qd.field(qd.u16, shape=N)
big = qd.field(qd.u64, shape=N)
tri = qd.field(qd.f32, shape=(3, N))


@qd.kernel
def raw_ops(d: qd.i32):
    for i in range(N):
        x = i - 48
        q[0, i] = qd.raw_div(x, d)  # truncates toward zero, unlike //
        q[1, i] = qd.raw_mod(x, d)  # sign of the dividend, unlike %


@qd.kernel
def narrow_ints():
    qd.loop_config(block_dim=16)
    for i in range(N):
        h[i] = qd.cast(i * 1000, qd.i16)  # wraps past 32767
        w[i] = qd.cast(60000 + i * 100, qd.u16)  # wraps past 65535
        big[i] = qd.cast(i, qd.u64) * qd.cast(1 << 30, qd.u64) * qd.cast(1 << 20, qd.u64)


@qd.kernel
def inverse_trig():
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
narrow_ints()
inverse_trig()
print("more_ops", q.to_numpy()[:, :3], h.to_numpy()[30:34], w.to_numpy()[:2], big.to_numpy()[-1],
      tri.to_numpy()[:, 0], min_and_max())
