# casts: explicit and implicit conversions between the integer and float types
# KIR has (i32, i64, f32, f64), including truncation and widening. (Casts to
# and fields of i8, u8, i16, u16, u32 and u64 are in refused/narrow_types.py.)
import quadrants as qd

qd.init(arch=qd.cpu)

N = 64
i32f = qd.field(qd.i32, shape=(4, N))
i64f = qd.field(qd.i64, shape=N)
f32f = qd.field(qd.f32, shape=(3, N))
f64f = qd.field(qd.f64, shape=(2, N))


@qd.kernel
def int_casts():
    for i in range(N):
        big = i * 37 - 1000
        i64f[i] = qd.cast(big, qd.i64) * 300000 * 10000
        i32f[0, i] = qd.cast(i64f[i] % 1000003, qd.i32)
        i32f[1, i] = qd.cast(big, qd.f64) > 0.0
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
print("casts", i64f.to_numpy()[:4], i32f.to_numpy().sum(axis=1))
