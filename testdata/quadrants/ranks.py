# ranks: fields of rank 0 to 3, struct_for over each, ndrange loops, and indexing
# one field by values read from another.
import quadrants as qd

qd.init(arch=qd.cpu)

s0 = qd.field(qd.f32, shape=())
v1 = qd.field(qd.i32, shape=100)
m2 = qd.field(qd.i32, shape=(10, 20))
t3 = qd.field(qd.f32, shape=(4, 5, 6))
perm = qd.field(qd.i32, shape=100)
out = qd.field(qd.i32, shape=100)


@qd.kernel
def touch0(v: qd.f32):
    s0[None] = s0[None] * 2.0 + v


@qd.kernel
def struct1():
    for i in v1:
        v1[i] = 3 * i
        perm[i] = (i * 13) % 100


@qd.kernel
def struct2():
    for i, j in m2:
        m2[i, j] = i * 20 + j


@qd.kernel
def struct3():
    for i, j, k in t3:
        t3[i, j, k] = qd.cast(i * 100 + j * 10 + k, qd.f32) + s0[None]


@qd.kernel
def ndrange2():
    for i, j in qd.ndrange(10, (5, 20)):
        m2[i, j] += 1


@qd.kernel
def gather():
    for i in out:
        out[i] = v1[perm[i]]


touch0(1.0)
touch0(0.5)
struct1()
struct2()
struct3()
ndrange2()
gather()
print("ranks", s0[None], m2.to_numpy().sum(), t3.to_numpy()[3, 4, 5], out.to_numpy()[:5])
