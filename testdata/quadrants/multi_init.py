# multi_init: a program shaped like a test suite: each "test" initialises
# Quadrants again and makes its fields in a function (named after their
# locals), two kernels share a name, a field tree is built and destroyed
# (FieldsBuilder), and the program leaves through os._exit.
import os

import quadrants as qd


def check_scale():
    qd.init(arch=qd.cpu)
    vals = qd.field(qd.f32, shape=12)

    @qd.kernel
    def run(k: qd.f32):
        for i in vals:
            vals[i] = qd.cast(i, qd.f32) * k

    run(0.5)
    assert vals.to_numpy()[4] == 2.0


def check_vectors():
    qd.init(arch=qd.cpu)
    pts = qd.Vector.field(3, dtype=qd.i32, shape=5)
    total = qd.field(qd.i32, shape=())

    @qd.kernel
    def run(k: qd.i32):
        for i in pts:
            pts[i] = qd.Vector([i, i * k, -i])
            total[None] += pts[i].sum()

    run(3)
    assert total[None] == 30


def check_destroy():
    qd.init(arch=qd.cpu)
    fb = qd.FieldsBuilder()
    tmp = qd.field(qd.f32)
    fb.dense(qd.i, 8).place(tmp)
    tree = fb.finalize()
    keep = qd.field(qd.f32, shape=8)

    @qd.kernel
    def fill_tmp():
        for i in tmp:
            tmp[i] = i * 1.25

    @qd.kernel
    def fill_keep():
        for i in keep:
            keep[i] = i + 0.5

    fill_tmp()
    tree.destroy()
    fill_keep()
    fill_keep()


for n in (4, 6):  # the same code, two runtimes
    qd.init(arch=qd.cpu)
    grid = qd.field(qd.i32, shape=(n, n))

    @qd.kernel
    def diag():
        for i, j in grid:
            grid[i, j] = i - j

    diag()

check_scale()
check_vectors()
check_destroy()
print("multi_init done")
os._exit(0)
