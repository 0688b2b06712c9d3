# casts: explicit and implicit conversions between the integer and float types
# (i8, u8, i32, u32, i64, f32, f64), including truncation and widening.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 64
i8f = qd.field(qd.i8, shape=N)
u8f = qd.field(qd.u8, shape=N)
u32f = qd.field(qd.u32, shape=N)
i32f = qd.field(qd.i32, shape=(4, N))
i64f = qd.field(qd.i64, shape=N)
f32f = qd.field(qd.f32, shape=(3, N))
f64f = qd.field(qd.f64, shape=(2, N))


@qd.kernel
def int_casts():
    for i in range(N):
        big = i * 37 - 1000
        i8f[i] = qd.cast(big, qd.i8)
        u8f[i] = qd.cast(i * 9, qd.u8)
        u32f[i] = qd.cast(big, qd.u32)
        i64f[i] = qd.cast(big, qd.i64) * 300000 * 10000
        i32f[0, i] = qd.cast(i8f[i], qd.i32)
        i32f[1, i] = qd.cast(u8f[i], qd.i32) + 1
        i32f[2, i] = qd.cast(i64f[i] >> 20, qd.i32)


@qd.kernel
def float_casts(s: qd.f32):
    for i in range(N):
        x = (qd.cast(i, qd.f32) - 32.0) * s
        f32f[0, i] = x
        i32f[3, i] = qd.cast(x, qd.i32)  # truncates toward zero
        f32f[1, i] = qd.cast(qd.cast(x, qd.i64), qd.f32)
        f32f[2, i] = i  # implicit int -> float on store
        f64f[0, i] = qd.cast(x, qd.f64) / 3.0
        f64f[1, i] = qd.cast(qd.cast(f64f[0, i], qd.f32), qd.f64)


int_casts()
float_casts(0.7)
print("casts", i8f.to_numpy()[:4], u8f.to_numpy()[:4], u32f.to_numpy()[:2], i32f.to_numpy().sum(axis=1))
