# int_types: arithmetic whose result depends on an integer type's width and
# signedness: an unsigned 32-bit hash (multiply, xor, shifts, compares above
# 2**31), u64 division and remainder of large values, a u8 image with
# clamping and an atomic u32 histogram, i8 and i16 wrap-around, unsigned
# min/max, and conversions to and from floats; u8 and u64 arguments and a
# u16 ndarray.
import numpy as np
import quadrants as qd

qd.init(arch=qd.cpu)

N = 256
hashes = qd.field(qd.u32, shape=N)
big = qd.field(qd.u64, shape=N)
img = qd.field(qd.u8, shape=(16, 16))
hist = qd.field(qd.u32, shape=8)
small = qd.field(qd.i8, shape=N)
mid = qd.field(qd.i16, shape=N)
fl = qd.field(qd.f32, shape=N)


@qd.kernel
def hash_all(seed: qd.u32):
    for i in hashes:
        h = qd.cast(i, qd.u32) * qd.u32(2654435761) + seed
        h ^= h >> 16
        h *= qd.u32(0x85EBCA6B)
        h ^= h >> 13
        if h > qd.u32(0x80000000):  # unsigned: true for about half
            h = h // qd.u32(3)
        hashes[i] = h


@qd.kernel
def u64_math(k: qd.u64):
    for i in big:
        x = qd.cast(hashes[i], qd.u64) * k + qd.cast(i, qd.u64)
        q = x // qd.u64(1000000007)
        r = x % qd.u64(1000000007)
        big[i] = qd.max(q, r) - qd.min(q, r) + (x >> 40)


@qd.kernel
def image(gain: qd.u8):
    for i, j in img:
        v = qd.cast((i * 16 + j) * 3, qd.u8)  # wraps past 255
        boosted = qd.cast(v, qd.u32) * qd.cast(gain, qd.u32)
        img[i, j] = qd.cast(qd.min(boosted, qd.u32(255)), qd.u8)
        hist[img[i, j] >> 5] += qd.u32(1)


@qd.kernel
def signed_small(ts: qd.types.ndarray(dtype=qd.u16, ndim=1)):
    for i in small:
        a = qd.cast(i * 7, qd.i8)  # wraps past 127
        # (raw_div: Quadrants 1.3.3 computes // and % of 8-bit integers
        # wrongly, 7 // 3 == 1; docs/quadrants.md)
        small[i] = qd.raw_div(a, qd.i8(3)) + (a >> 2) + qd.raw_mod(a, qd.i8(5))
        b = qd.cast(i * 300, qd.i16) - qd.i16(20000)
        mid[i] = b % qd.i16(1000)
        ts[i] = qd.cast(ts[i], qd.u16) * qd.u16(3) + qd.u16(i)
        fl[i] = qd.cast(hashes[i], qd.f32) * 1e-9 + qd.cast(small[i], qd.f32) - qd.cast(ts[i], qd.f32)


hash_all(12345)
u64_math(6700417)
image(3)
ts = qd.ndarray(qd.u16, shape=N)
ts.from_numpy((np.arange(N) * 251).astype(np.uint16))
signed_small(ts)
print("int_types", hashes.to_numpy()[:3], big.to_numpy()[:2], hist.to_numpy(), small.to_numpy()[:5], mid.to_numpy()[:3], fl.to_numpy()[7])
