# One kernel per feature kiln-import refuses (run with the feature's name).
import sys
import quadrants as qd
import table

feature = sys.argv[1]
qd.init(arch=qd.cpu, print_ir=True, print_ir_dbg_info=True, fast_math=False,
        offline_cache=False, cpu_max_num_threads=1, num_compile_threads=1,
        debug=(feature == "assert"))
N = 8
x = qd.field(qd.f32, shape=N)
fields = {"x": x}
kernels = {"k": {"args": []}}

if feature == "sparse":
    s = qd.field(qd.f32)
    qd.root.pointer(qd.i, 4).dense(qd.i, 4).place(s)
    fields["s"] = s

    @qd.kernel
    def k():
        for i in s:
            s[i] += 1.0
elif feature == "matrix":
    v = qd.Vector.field(3, qd.f32, shape=N)

    @qd.kernel
    def k():
        for i in range(N):
            a = v[i]
            a = a * x[i]
            v[i] = a
elif feature == "autodiff":
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    z = qd.field(qd.f32, shape=N, needs_grad=True)
    fields = {"loss": loss, "z": z}

    @qd.kernel
    def k():
        for i in range(N):
            t = z[i]
            for j in range(3):
                t = qd.sin(t)
            loss[None] += t
elif feature == "print":
    @qd.kernel
    def k():
        for i in range(N):
            print(x[i])
elif feature == "assert":
    @qd.kernel
    def k():
        for i in range(N):
            assert x[i] >= 0.0, "negative"
elif feature == "return":
    @qd.kernel
    def k() -> qd.f32:
        return x[0] * 2.0
elif feature == "u8":
    b = qd.field(qd.u8, shape=N)
    fields = {"b": b}

    @qd.kernel
    def k():
        for i in range(N):
            b[i] = qd.cast(i, qd.u8)

if feature == "autodiff":
    with qd.ad.Tape(loss=loss):
        k()
else:
    k()
table.write(sys.argv[2], fields, kernels)
