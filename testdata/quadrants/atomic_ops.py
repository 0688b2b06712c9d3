# atomic_ops: every atomic on i32 fields from a parallel loop, and an integer-valued f32 atomic add.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 1000
acc = qd.field(qd.i32, shape=7)
hist = qd.field(qd.i32, shape=16)
fsum = qd.field(qd.f32, shape=())


@qd.kernel
def reset():
    acc[0] = 0
    acc[1] = 0
    acc[2] = 1 << 30
    acc[3] = -(1 << 30)
    acc[4] = -1
    acc[5] = 0
    acc[6] = 0
    fsum[None] = 0.0


@qd.kernel
def all_atomics():
    for i in range(N):
        qd.atomic_add(acc[0], i)
        qd.atomic_sub(acc[1], i % 3)
        qd.atomic_min(acc[2], (i * 37) % 1001)
        qd.atomic_max(acc[3], (i * 53) % 997)
        qd.atomic_and(acc[4], ~(1 << (i % 20)) | (1 << 5))
        qd.atomic_or(acc[5], 1 << (i % 12))
        qd.atomic_xor(acc[6], i)


@qd.kernel
def histogram():
    for i in range(N):
        hist[(i * i) % 16] += 1


@qd.kernel
def float_add():
    for i in range(N):
        fsum[None] += qd.cast(i % 4, qd.f32)


@qd.kernel
def old_value() -> qd.i32:
    # The value an atomic returns: the old one.
    old = qd.atomic_add(acc[0], 5)
    return old


reset()
all_atomics()
histogram()
float_add()
print("atomic_ops", acc.to_numpy(), hist.to_numpy(), fsum[None], old_value())
