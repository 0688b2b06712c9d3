# print_kernel: print inside kernels, of every scalar type, with sep= and
# end=, an f-string, in a parallel loop (Quadrants prints its iterations in
# whatever order its threads run them; Kiln in iteration order, and the
# replay compares the lines as multisets), in a serial loop and in a
# function; a vector and a matrix print in brackets.
import quadrants as qd

qd.init(arch=qd.cpu)

x = qd.field(qd.f32, shape=16)
v = qd.Vector.field(3, qd.f32, shape=4)


@qd.func
def halve(i: qd.i32) -> qd.f32:
    h = i * 0.5
    print("  halve", i, "->", h)
    return h


@qd.kernel
def show(a: qd.i32, b: qd.f32, c: qd.f64, d: qd.i64, e: qd.u8, f: qd.u32):
    print("show:", a, b, c, d, e, f)
    print("sep", a, e, sep="|", end="!\n")
    print(f"fstr a={a} b={b} c={c}")


@qd.kernel
def fill(n: qd.i32):
    for i in range(n):
        x[i] = halve(i)
        print("i =", i, "x =", x[i])


@qd.kernel
def tensors(a: qd.i32):
    for i in v:
        v[i] = qd.Vector([i, a, 0.5])
        print("v =", v[i])
    m = qd.Matrix([[1, a], [3, 4]])
    print("m =", m)


@qd.kernel
def total() -> qd.f32:
    s = 0.0
    for _ in range(1):
        for i in range(16):
            s += x[i]
        print("sum", s)
    return s


show(-3, 1.5, 2.25, 1 << 40, 200, 4000000000)
fill(16)
tensors(7)
print("print_kernel", total())
