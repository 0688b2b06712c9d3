# A differential capture: kernels run in order over fields they fill
# themselves, then every field is printed as `kiln-run --print` prints it
# (lines starting with @), so lit-tests/import/run.test can compare what
# Quadrants computed with what the imported KIR computes under kiln-run.
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
z = qd.field(qd.f64, shape=N)
w = qd.field(qd.i32, shape=N)


@qd.kernel
def init():
    for i in range(N):
        x[i] = qd.cast(i - 5, qd.f32) * 0.375
        y[i] = qd.cast(i, qd.f32) * 0.5


@qd.kernel
def saxpy(a: qd.f32, n: qd.i32):
    for i in range(n):
        y[i] = a * x[i] + y[i]


@qd.kernel
def fill2d(base: qd.i32):
    for i, j in g:
        v = base - i * 8 - j
        g[i, j] = v // 3 + v % 5 + ((v >> 1) ^ (v & 3)) - (v << 2) // 7


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
def mathy(t: qd.f64):
    for i in range(N):
        u = qd.cast(x[i], qd.f64) * t
        r = qd.sqrt(qd.abs(u)) + qd.floor(u) * 2.0 + qd.ceil(u) - qd.round(u)
        r += qd.max(u, 0.25) - qd.min(u, -0.25) + u ** 2.0 + u // 0.75 + (u if u > 0.0 else -u)
        if u != 0.5 and not u >= 1.25 or u == -1.875:
            r += 100.0
        z[i] = r
        k = qd.cast(u * 3.0, qd.i32)
        m = 0
        for j in range(3):
            m += (k * j) % 4 - (k // (j + 1))
        w[i] = k + m + (~k & 7) + qd.cast(u < 0.0, qd.i32)


@qd.kernel
def nd(arr: qd.types.ndarray(dtype=qd.f32, ndim=2), bias: qd.f32):
    for i, j in qd.ndrange(arr.shape[0], arr.shape[1]):
        arr[i, j] = qd.cast(i * 5 + j, qd.f32) * 0.25 + bias


arr = np.zeros((3, 5), dtype=np.float32)
init()
saxpy(2.0, N)
fill2d(3)
collatz(27)
reduce(0.5)
mathy(1.5)
nd(arr, 1.5)


def fmt(v):
    if isinstance(v, np.ndarray):
        return "[" + ", ".join(fmt(e) for e in v) + "]"
    return str(v)


for name, f in [("x", x), ("y", y), ("g", g), ("total", total), ("count", count), ("z", z), ("w", w)]:
    a = f.to_numpy()
    shape = "[" + ", ".join(map(str, a.shape)) + "]" if a.shape else ""
    print(f"@{name} : {f.dtype}{shape} = {fmt(a) if a.shape else fmt(a[()])}", flush=True)
print(f"@nd.arr : f32[3, 5] = {fmt(arr)}", flush=True)
table.write(sys.argv[1], {"x": x, "y": y, "g": g, "total": total, "count": count, "z": z, "w": w}, {
    "init": {"args": []},
    "saxpy": {"args": [{"name": "a", "kind": "scalar", "dtype": "f32"}, {"name": "n", "kind": "scalar", "dtype": "i32"}]},
    "fill2d": {"args": [{"name": "base", "kind": "scalar", "dtype": "i32"}]},
    "collatz": {"args": [{"name": "start", "kind": "scalar", "dtype": "i32"}]},
    "reduce": {"args": [{"name": "scale", "kind": "scalar", "dtype": "f32"}]},
    "mathy": {"args": [{"name": "t", "kind": "scalar", "dtype": "f64"}]},
    "nd": {"args": [{"name": "arr", "kind": "ndarray", "dtype": "f32", "shape": [3, 5]},
                    {"name": "bias", "kind": "scalar", "dtype": "f32"}]},
})
