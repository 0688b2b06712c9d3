# bit_cast: qd.bit_cast reinterprets a value's bits as another type of the
# same width (f32 <-> i32, f64 <-> i64): the sign of negative zero, the
# payload of a NaN and an f64 subnormal survive, and arithmetic on the
# integer view (a float's exponent field) round-trips through the float.
import numpy as np
import quadrants as qd

qd.init(arch=qd.cpu)

N = 8
xs = qd.field(qd.f32, shape=N)
ys = qd.field(qd.f64, shape=N)
bits32 = qd.field(qd.i32, shape=N)
bits64 = qd.field(qd.i64, shape=N)
back32 = qd.field(qd.f32, shape=N)
back64 = qd.field(qd.f64, shape=N)


@qd.kernel
def reinterpret():
    for i in range(N):
        b = qd.bit_cast(xs[i], qd.i32)
        bits32[i] = b
        # Add one to the exponent field: doubles a normal float.
        back32[i] = qd.bit_cast(b + (1 << 23), qd.f32)
        c = qd.bit_cast(ys[i], qd.i64)
        bits64[i] = c
        back64[i] = qd.bit_cast(c ^ qd.i64(1), qd.f64)


f32_in = np.array(
    [1.5, -0.0, 0.0, 1e-30, -3.25, np.inf, 2.0**-126, 7.0], dtype=np.float32
)
f32_in[5] = np.frombuffer(np.uint32(0x7FC01234).tobytes(), dtype=np.float32)[0]
xs.from_numpy(f32_in)
ys.from_numpy(np.array([1.5, -0.0, 5e-324, -2.5, 1e300, 3.0, -7.75, 0.1]))
reinterpret()
print("bit_cast", bits32.to_numpy()[:4], bits64.to_numpy()[:3], back32.to_numpy()[:2])
