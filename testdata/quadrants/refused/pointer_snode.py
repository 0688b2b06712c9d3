# refused/pointer_snode: a sparse field (pointer SNode over dense blocks). Its IR
# activates cells and its struct_for visits only active ones: not KIR.
import quadrants as qd

qd.init(arch=qd.cpu)

x = qd.field(qd.i32)
block = qd.root.pointer(qd.i, 8)
block.dense(qd.i, 16).place(x)


@qd.kernel
def activate_some():
    for k in range(43):
        x[k * 3] = k


@qd.kernel
def double_active():
    for i in x:
        x[i] = x[i] * 2


activate_some()
double_active()
print("pointer_snode", x.to_numpy().sum())
