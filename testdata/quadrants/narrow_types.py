# narrow_types: fields of and casts to the narrow and unsigned integer types
# (i8, u8, i16, u16, u32, u64), with wrap-around.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 64
i8f = qd.field(qd.i8, shape=N)
u8f = qd.field(qd.u8, shape=N)
h = qd.field(qd.i16, shape=N)
w = qd.field(qd.u16, shape=N)
u32f = qd.field(qd.u32, shape=N)
big = qd.field(qd.u64, shape=N)


@qd.kernel
def wrap_around():
    for i in range(N):
        x = i * 37 - 1000
        i8f[i] = qd.cast(x, qd.i8)
        u8f[i] = qd.cast(i * 9, qd.u8)
        h[i] = qd.cast(i * 1000, qd.i16)  # wraps past 32767
        w[i] = qd.cast(60000 + i * 100, qd.u16)  # wraps past 65535
        u32f[i] = qd.cast(x, qd.u32)
        big[i] = qd.cast(i, qd.u64) * qd.cast(1 << 30, qd.u64) * qd.cast(1 << 20, qd.u64)


wrap_around()
print("narrow_types", i8f.to_numpy()[:4], u8f.to_numpy()[:4], h.to_numpy()[30:34], w.to_numpy()[:2], u32f.to_numpy()[:2], big.to_numpy()[-1])
