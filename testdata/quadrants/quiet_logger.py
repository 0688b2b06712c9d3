"""A program that quiets Quadrants' logger (as Genesis does): at init, and again between calls."""

import quadrants as qd

qd.init(arch=qd.cpu, log_level="warn")
x = qd.field(qd.f32, shape=8)


@qd.kernel
def k(a: qd.f32):
    for i in x:
        x[i] = x[i] + a


k(1.5)
qd.set_logging_level("error")
k(2.5)
print("done")
