# refused/recursive_real_func: a qd.real_func that calls itself. Quadrants
# runs it; KIR rejects recursion (docs/language.md), so the importer refuses
# it by name, with the cycle.
import quadrants as qd

qd.init(arch=qd.cpu)

x = qd.field(qd.i32, shape=12)


@qd.real_func
def fib(n: qd.i32) -> qd.i32:
    r = n
    if n >= 2:
        r = fib(n - 1) + fib(n - 2)
    return r


@qd.kernel
def fibs():
    for i in x:
        x[i] = fib(i)


fibs()
print("recursive_real_func", x.to_numpy())
