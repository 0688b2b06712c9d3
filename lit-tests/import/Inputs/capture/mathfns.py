# A differential capture of the math functions (asin, acos, tanh too) and
# float operators on f32 and f64: Quadrants' values printed at the end, in kiln-run's format.
import sys
import numpy as np
import quadrants as qd
import table

qd.init(arch=qd.cpu, print_ir=True, print_ir_dbg_info=True, fast_math=False,
        offline_cache=False, cpu_max_num_threads=1, num_compile_threads=1)

N = 12
a = qd.field(qd.f32, shape=N)
b = qd.field(qd.f64, shape=N)
r32 = qd.field(qd.f32, shape=(N, 13))
r64 = qd.field(qd.f64, shape=(N, 13))


@qd.kernel
def init():
    for i in range(N):
        a[i] = qd.cast(i, qd.f32) * 0.37 - 1.9
        b[i] = qd.cast(i, qd.f64) * 0.37 - 1.9


@qd.kernel
def math32(p: qd.f32):
    for i in range(N):
        x = a[i]
        r32[i, 0] = qd.sin(x)
        r32[i, 1] = qd.cos(x)
        r32[i, 2] = qd.tan(x)
        r32[i, 3] = qd.exp(x)
        r32[i, 4] = qd.log(qd.abs(x) + 0.5)
        r32[i, 5] = qd.sqrt(qd.abs(x))
        r32[i, 6] = qd.abs(x) ** p
        r32[i, 7] = qd.atan2(x, p)
        r32[i, 8] = x / p + x * x - qd.max(x, 0.1) + qd.min(x, -0.2)
        r32[i, 9] = qd.round(x * 3.0) + qd.floor(x * 2.0) * 10.0 + qd.ceil(x) * 100.0
        r32[i, 10] = qd.asin(x * 0.45)
        r32[i, 11] = qd.acos(x * 0.45)
        r32[i, 12] = qd.tanh(x)


@qd.kernel
def math64(q: qd.f64):
    for i in range(N):
        x = b[i]
        r64[i, 0] = qd.sin(x)
        r64[i, 1] = qd.cos(x)
        r64[i, 2] = qd.tan(x)
        r64[i, 3] = qd.exp(x)
        r64[i, 4] = qd.log(qd.abs(x) + 0.5)
        r64[i, 5] = qd.sqrt(qd.abs(x))
        r64[i, 6] = qd.abs(x) ** q
        r64[i, 7] = qd.atan2(x, q)
        r64[i, 8] = x / q + x * x - qd.max(x, 0.1) + qd.min(x, -0.2)
        r64[i, 9] = qd.round(x * 3.0) + qd.floor(x * 2.0) * 10.0 + qd.ceil(x) * 100.0
        r64[i, 10] = qd.asin(x * 0.45)
        r64[i, 11] = qd.acos(x * 0.45)
        r64[i, 12] = qd.tanh(x)


init()
math32(1.7)
math64(1.7)


def fmt(v):
    if isinstance(v, np.ndarray):
        return "[" + ", ".join(fmt(e) for e in v) + "]"
    return str(v)


for name, f in [("a", a), ("b", b), ("r32", r32), ("r64", r64)]:
    arr = f.to_numpy()
    print(f"@{name} : {f.dtype}[{', '.join(map(str, arr.shape))}] = {fmt(arr)}", flush=True)
table.write(sys.argv[1], {"a": a, "b": b, "r32": r32, "r64": r64}, {
    "init": {"args": []},
    "math32": {"args": [{"name": "p", "kind": "scalar", "dtype": "f32"}]},
    "math64": {"args": [{"name": "q", "kind": "scalar", "dtype": "f64"}]},
})
