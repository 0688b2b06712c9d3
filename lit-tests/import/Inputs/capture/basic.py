# Kernels for kiln-import's golden tests: every task kind, fields of rank
# 0 to 2, a global temporary, scalar and ndarray arguments.
import sys
import numpy as np
import quadrants as qd
import table

qd.init(arch=qd.cpu, print_ir=True, print_ir_dbg_info=True, fast_math=False,
        offline_cache=False, cpu_max_num_threads=1, num_compile_threads=1)

N = 16
x = qd.field(qd.f32, shape=N)
y = qd.field(qd.f32, shape=N)
g = qd.field(qd.i32, shape=(4, 8))
total = qd.field(qd.f32, shape=())
count = qd.field(qd.i64, shape=())


@qd.kernel
def saxpy(a: qd.f32, n: qd.i32):
    for i in range(n):
        y[i] = a * x[i] + y[i]


@qd.kernel
def fill2d(base: qd.i32):
    for i, j in g:
        g[i, j] = base + i * 8 + j


@qd.kernel
def collatz(start: qd.i32):
    k = start
    steps = 0
    while True:
        if k == 1:
            break
        steps += 1
        if k % 2 == 0:
            k = k // 2
            continue
        k = 3 * k + 1
    count[None] = qd.cast(steps, qd.i64)


@qd.kernel
def reduce(scale: qd.f32):
    s = 0.0
    for i in range(N):
        s += x[i] * scale
    total[None] = s


@qd.kernel
def nd(arr: qd.types.ndarray(dtype=qd.f32, ndim=2), bias: qd.f32):
    for i, j in qd.ndrange(arr.shape[0], arr.shape[1]):
        arr[i, j] = qd.sin(arr[i, j]) + bias


saxpy(2.0, N)
fill2d(3)
collatz(27)
reduce(0.5)
nd(np.zeros((3, 5), dtype=np.float32), 1.5)
table.write(sys.argv[1], {"x": x, "y": y, "g": g, "total": total, "count": count}, {
    "saxpy": {"args": [{"name": "a", "kind": "scalar", "dtype": "f32"}, {"name": "n", "kind": "scalar", "dtype": "i32"}]},
    "fill2d": {"args": [{"name": "base", "kind": "scalar", "dtype": "i32"}]},
    "collatz": {"args": [{"name": "start", "kind": "scalar", "dtype": "i32"}]},
    "reduce": {"args": [{"name": "scale", "kind": "scalar", "dtype": "f32"}]},
    "nd": {"args": [{"name": "arr", "kind": "ndarray", "dtype": "f32", "shape": [3, 5]},
                    {"name": "bias", "kind": "scalar", "dtype": "f32"}]},
})
