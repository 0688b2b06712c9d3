# reduce_sum, as testdata/reduce_sum.kir: data[i] = i % 1000, an atomic
# i64 sum, and a serial epilogue computing the mean.
import quadrants as qd

N = 65536
data = qd.field(qd.i32, shape=N)
total = qd.field(qd.i64, shape=())
mean = qd.field(qd.f64, shape=())


@qd.kernel
def reduce_sum(n: qd.i32):
    for i in range(n):
        data[i] = i % 1000
    for j in range(n):
        qd.atomic_add(total[None], qd.cast(data[j], qd.i64))
    mean[None] = qd.cast(total[None], qd.f64) / qd.cast(n, qd.f64)


def run():
    reduce_sum(N)
