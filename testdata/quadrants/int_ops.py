# int_ops: every integer arithmetic, bit and comparison operator on i32 and i64.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 64
a = qd.field(qd.i32, shape=N)
r32 = qd.field(qd.i32, shape=(16, N))
r64 = qd.field(qd.i64, shape=(12, N))
cmp = qd.field(qd.i32, shape=(6, N))


@qd.kernel
def seed():
    for i in a:
        a[i] = (i * 40503) % 1000 - 500


@qd.kernel
def arith32(k: qd.i32):
    for i in a:
        x = a[i]
        y = (i % 7) - 3
        if y == 0:
            y = k
        r32[0, i] = x + y
        r32[1, i] = x - y
        r32[2, i] = x * y
        r32[3, i] = x // y
        r32[4, i] = x % y
        r32[5, i] = -x
        r32[6, i] = x & 0x3F0
        r32[7, i] = x | 0x101
        r32[8, i] = x ^ y
        r32[9, i] = ~x
        r32[10, i] = x << (i % 5)
        r32[11, i] = x >> (i % 5)
        r32[12, i] = qd.bit_shr(x, i % 5)
        r32[13, i] = qd.min(x, y * 100)
        r32[14, i] = qd.max(x, y * 100)
        r32[15, i] = qd.abs(x)


@qd.kernel
def arith64(k: qd.i64):
    for i in a:
        x = qd.cast(a[i], qd.i64) * 1000003
        y = qd.cast(i + 1, qd.i64) * k
        r64[0, i] = x + y
        r64[1, i] = x - y
        r64[2, i] = x * y
        r64[3, i] = x // y
        r64[4, i] = x % y
        r64[5, i] = x & y
        r64[6, i] = x | y
        r64[7, i] = x ^ y
        r64[8, i] = x << 3
        r64[9, i] = x >> 2
        r64[10, i] = qd.max(x, y)
        r64[11, i] = qd.min(x, -y)


@qd.kernel
def compares():
    for i in a:
        x = a[i]
        y = a[(i + 1) % N]
        cmp[0, i] = x < y
        cmp[1, i] = x <= y
        cmp[2, i] = x > y
        cmp[3, i] = x >= y
        cmp[4, i] = x == y
        cmp[5, i] = (x != y) and (x > 0 or y > 0)


seed()
arith32(5)
arith64(7)
compares()
print("int_ops", r32.to_numpy().sum(axis=1), r64.to_numpy().sum(axis=1), cmp.to_numpy().sum(axis=1))
