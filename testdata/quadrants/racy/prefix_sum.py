# racy/prefix_sum: a prefix sum written as a parallel loop. Deliberately wrong:
# iteration i reads s[i - 1], which iteration i - 1 writes, so the result
# depends on the order the iterations run in (a data race). The importer must
# keep it a range_for; kiln-run --check-races should report it.
import quadrants as qd

qd.init(arch=qd.cpu)

N = 1024
a = qd.field(qd.i32, shape=N)
s = qd.field(qd.i32, shape=N)


@qd.kernel
def seed():
    for i in a:
        a[i] = 1


@qd.kernel
def prefix_sum():
    s[0] = a[0]
    for i in range(1, N):
        s[i] = s[i - 1] + a[i]


seed()
prefix_sum()
print("prefix_sum (racy)", s.to_numpy()[-1])
