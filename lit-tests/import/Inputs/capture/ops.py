# Every arithmetic, bit, comparison, cast and math statement kiln-import
# imports, on fields of i32, i64, f32 and f64, with a serial inner loop.
import sys
import quadrants as qd
import table

qd.init(arch=qd.cpu, print_ir=True, print_ir_dbg_info=True, fast_math=False,
        offline_cache=False, cpu_max_num_threads=1, num_compile_threads=1)

N = 8
fi = qd.field(qd.i32, shape=N)
fl = qd.field(qd.i64, shape=N)
ff = qd.field(qd.f32, shape=N)
fd = qd.field(qd.f64, shape=N)
acc = qd.field(qd.i32, shape=())


@qd.kernel
def ints(s: qd.i32, w: qd.i64):
    for i in range(N):
        a = fi[i]
        b = a + s
        c = b - a * 3
        d = c // (s + 1)
        e = c % 5
        f = (a & 6) | (b ^ 3)
        g = (a << 2) >> 1
        h = qd.max(a, b) + qd.min(c, d) + abs(e) - (-f)
        k = ~g
        fi[i] = h + k + qd.raw_div(b, 3) + qd.raw_mod(b, 7) + (a if a < b else b)
        fl[i] = qd.cast(h, qd.i64) * w + (qd.cast(a, qd.i64) << 40)
        qd.atomic_max(acc[None], a)
        qd.atomic_min(acc[None], b)
        qd.atomic_and(acc[None], 255)
        qd.atomic_or(acc[None], 1)
        qd.atomic_xor(acc[None], 2)
        qd.atomic_sub(acc[None], 1)


@qd.kernel
def floats(t: qd.f32, u: qd.f64):
    for i in range(N):
        x = ff[i]
        y = qd.sqrt(qd.abs(x)) + qd.sin(x) * qd.cos(x) - qd.tan(x)
        z = qd.exp(x) / (qd.log(x + 2.0) + 1.5)
        w = qd.floor(x) + qd.ceil(x) + qd.round(x)
        v = x ** t + qd.atan2(x, t + 1.0) + x // 2.0
        r = 0.0
        if x > 0.5 and x <= 2.0 or x == 7.0:
            r = 1.0
        elif x >= 3.0 or not x != 4.0:
            r = -1.0
        for j in range(3):
            r += qd.cast(j, qd.f32) * 0.1
        ff[i] = y + z + w + v + r + qd.cast(x < t, qd.f32) + 1e20 - 2.5e-7
        fd[i] = qd.cast(x, qd.f64) * u + qd.sqrt(u) + qd.cast(qd.cast(u, qd.i32), qd.f64)


ints(3, 5)
floats(1.5, 2.25)
table.write(sys.argv[1], {"fi": fi, "fl": fl, "ff": ff, "fd": fd, "acc": acc}, {
    "ints": {"args": [{"name": "s", "kind": "scalar", "dtype": "i32"}, {"name": "w", "kind": "scalar", "dtype": "i64"}]},
    "floats": {"args": [{"name": "t", "kind": "scalar", "dtype": "f32"}, {"name": "u", "kind": "scalar", "dtype": "f64"}]},
})
