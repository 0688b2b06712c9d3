import quadrants as qd

s = qd.field(qd.i32, shape=8)


@qd.kernel
def scan(n: qd.i32):
    for i in range(1, n):
        s[i] = s[i - 1] + s[i]


@qd.kernel
def shift(n: qd.i32):
    for i in range(n):
        s[i + 1] = s[i]
