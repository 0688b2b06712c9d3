# control: if/else chains, while with break, continue in parallel and serial loops,
# nested loops with break, a serial outer loop (loop_config).
import quadrants as qd

qd.init(arch=qd.cpu)

N = 200
steps = qd.field(qd.i32, shape=N)
cls = qd.field(qd.i32, shape=N)
odd_sq = qd.field(qd.i32, shape=N)
is_prime = qd.field(qd.i32, shape=N)
run = qd.field(qd.i32, shape=N)


@qd.kernel
def collatz():
    for i in range(N):
        n = i + 1
        k = 0
        while n != 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            k += 1
        steps[i] = k


@qd.kernel
def classify():
    for i in range(N):
        if i < 50:
            cls[i] = 0
        elif i < 100:
            cls[i] = 1
        elif i % 3 == 0 and i % 5 == 0:
            cls[i] = 2
        elif not (i % 7 == 0) or i > 190:
            cls[i] = 3
        else:
            cls[i] = 4


@qd.kernel
def skip_even():
    for i in range(N):
        if i % 2 == 0:
            continue
        odd_sq[i] = i * i


@qd.kernel
def primes():
    for i in range(N):
        p = 1
        if i < 2:
            p = 0
        for d in range(2, i):
            if d * d > i:
                break
            if i % d == 0:
                p = 0
                break
        is_prime[i] = p


@qd.kernel
def while_true_break(limit: qd.i32):
    qd.loop_config(serialize=True)
    for i in range(N):
        j = 0
        acc = 0
        while True:
            if j >= i % 13:
                break
            j += 1
            if j % 4 == 0:
                continue
            acc += j
            if acc > limit:
                break
        run[i] = acc


collatz()
classify()
skip_even()
primes()
while_true_break(30)
print("control", steps.to_numpy().sum(), cls.to_numpy().sum(), odd_sq.to_numpy().sum(),
      is_prime.to_numpy().sum(), run.to_numpy().sum())
