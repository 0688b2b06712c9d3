"""A counting scatter (each even key takes the next slot of an atomic
counter) in a program that gives Quadrants one CPU thread, as Genesis
does: the slots follow the iteration order, which the replay's JIT keeps
by running on as many threads."""

import quadrants as qd

qd.init(arch=qd.cpu, cpu_max_num_threads=1)
n = 4096
key = qd.field(qd.i32, shape=n)
count = qd.field(qd.i32, shape=())
out = qd.field(qd.i32, shape=n)


@qd.kernel
def keys():
    for i in key:
        key[i] = (i * 7919) % 13


@qd.kernel
def scatter():
    for i in range(n):
        if key[i] % 2 == 0:
            slot = qd.atomic_add(count[None], 1)
            out[slot] = i


keys()
scatter()
print(count[None], out[0], out[count[None] - 1])
