# refused/assert_in_kernel: assert inside a kernel. Quadrants compiles asserts only
# with debug=True (which also adds bounds checks to every access).
import quadrants as qd

qd.init(arch=qd.cpu, debug=True)

x = qd.field(qd.i32, shape=8)


@qd.kernel
def checked(k: qd.i32):
    for i in x:
        assert k > 0, "k must be positive"
        x[i] = i // k


checked(2)
print("assert_in_kernel", x.to_numpy())
