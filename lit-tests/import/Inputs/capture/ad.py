import sys
import quadrants as qd
import table
qd.init(arch=qd.cpu, print_ir=True, print_ir_dbg_info=True, fast_math=False,
        offline_cache=False, cpu_max_num_threads=1, num_compile_threads=1, ad_stack_experimental_enabled=True)
N = 8
loss = qd.field(qd.f32, shape=(), needs_grad=True)
z = qd.field(qd.f32, shape=N, needs_grad=True)

@qd.kernel
def k(n: qd.i32):
    for i in range(N):
        t = z[i]
        j = 0
        for jj in range(3):
            t = qd.sin(t)

        loss[None] += t

k(3)
loss.grad[None] = 1.0
k.grad(3)
table.write(sys.argv[1], {"loss": loss, "z": z}, {"k": {"args": [{"name": "n", "kind": "scalar", "dtype": "i32"}]}})
