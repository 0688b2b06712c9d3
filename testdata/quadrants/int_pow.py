# int_pow: integer ** with Quadrants' semantics: wrapping, and a negative
# exponent counts as its magnitude (3 ** -2 == 9; INT_MIN as 2^31), on
# i32 and i64, in serial code and in a loop.
import quadrants as qd
qd.init(arch=qd.cpu)
x = qd.field(qd.i32, shape=8)
y = qd.field(qd.i64, shape=8)
@qd.kernel
def vpow(n: qd.i32, m: qd.i32, k: qd.i32):
    x[0] = n ** m
    x[1] = n ** k
    x[2] = (-n) ** m
    for i in range(3, 8):
        x[i] = (n + i) ** (m - i)
@qd.kernel
def vpow64(n: qd.i64, m: qd.i64):
    y[0] = n ** m
    y[1] = (n + 1) ** (-m)
for (n, m, k) in [(3, 21, -2), (2, 0, -1), (1, 5, -3), (2, 31, 32), (-3, 7, -7), (7, 12, -2147483648), (0, 0, -1)]:
    vpow(n, m, k)
vpow64(3, 41)
vpow64(-2, 63)
print("int_pow", x.to_numpy(), y.to_numpy())
