# empty_ranges: loops whose start is above their end run zero times, in a
# parallel range_for and a serial one, with constant and argument bounds;
# the kernel's other work still happens.
import quadrants as qd

qd.init(arch=qd.cpu)

out = qd.field(qd.i32, shape=8)


@qd.kernel
def constant_bounds():
    for i in range(5, 2):
        out[i] = 1
    for i in range(-3, -7):
        out[i + 7] = 2
    out[0] = 9


@qd.kernel
def argument_bounds(lo: qd.i32, hi: qd.i32):
    for i in range(lo, hi):
        out[i] = 3
    out[1] = lo - hi


@qd.kernel
def serial_empty():
    qd.loop_config(serialize=True)
    for i in range(4, 0):
        out[i] += 4
    out[2] = 5


constant_bounds()
argument_bounds(6, 1)
serial_empty()
print("empty_ranges", out.to_numpy())
