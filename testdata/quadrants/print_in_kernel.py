# print_in_kernel: print inside a kernel (a print statement in the IR), in a
# struct-for over a field; imported as a KIR print.
import quadrants as qd

qd.init(arch=qd.cpu)

x = qd.field(qd.i32, shape=4)


@qd.kernel
def show(k: qd.i32):
    for i in x:
        x[i] = i * k
        print("x[", i, "] =", x[i])


show(3)
