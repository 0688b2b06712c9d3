# arg_order: Quadrants numbers a kernel's runtime arguments skipping
# template ones, so a template or a field before scalars must not shift
# which scalar a kernel reads. Every scalar value is distinct, so a shift
# onto a neighbour shows as a wrong value.
import numpy as np
import quadrants as qd

qd.init(arch=qd.cpu)

out = qd.field(qd.i32, shape=8)
fo = qd.field(qd.f32, shape=4)


@qd.kernel
def template_first(t: qd.template(), b: qd.i32, c: qd.i32):
    t[0] = c
    t[1] = b


@qd.kernel
def template_between(b: qd.i32, t: qd.template(), c: qd.i32):
    t[2] = b * 10 + c


@qd.kernel
def two_templates_last(b: qd.i32, t: qd.template(), u: qd.template(), c: qd.f32):
    t[3] = b
    u[0] = c


@qd.kernel
def ndarray_among(t: qd.template(), a: qd.types.ndarray(), s: qd.i32, z: qd.types.ndarray(), w: qd.i32):
    for i in range(4):
        a[i] = s + i
        z[i] = w - i
    t[4] = s + w


@qd.kernel
def scalars_only_after(t: qd.template(), u: qd.template(), x: qd.f32, y: qd.f32):
    for i in range(4):
        u[i] = x * i - y
    t[5] = 1


a = np.zeros(4, dtype=np.int32)
z = np.zeros(4, dtype=np.int32)
template_first(out, 1, 2)
template_between(3, out, 4)
two_templates_last(5, out, fo, 6.5)
ndarray_among(out, a, 7, z, 11)
scalars_only_after(out, fo, 0.5, 2.0)
print("arg_order", out.to_numpy(), fo.to_numpy(), a, z)
