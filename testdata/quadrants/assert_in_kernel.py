# assert_in_kernel: asserts inside kernels. Quadrants compiles asserts only
# with debug=True, which also adds a bounds-check assert (its message a
# traceback of several lines, with the index as a %d value) before every
# field access; kiln-import imports both kinds as KIR asserts.
import quadrants as qd

qd.init(arch=qd.cpu, debug=True)

x = qd.field(qd.i32, shape=8)
y = qd.field(qd.f32, shape=(4, 4))


@qd.kernel
def checked(k: qd.i32):
    for i in x:
        assert k > 0, "k must be positive"
        x[i] = i // k


@qd.kernel
def bounded(n: qd.i32) -> qd.i32:
    total = 0
    for i in range(n):
        assert i < 8, "i out of range"
        total += x[i]
    return total


@qd.kernel
def grid(s: qd.f32):
    for i, j in y:
        assert s >= 0.0, "a negative scale"
        y[i, j] = s * (i - j)


checked(2)
checked(3)
print("assert_in_kernel", x.to_numpy(), bounded(8))
grid(0.5)
print("grid", y.to_numpy().sum())
