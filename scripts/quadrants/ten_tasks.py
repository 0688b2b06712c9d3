# ten_tasks, as testdata/ten_tasks.kir: a serial prologue and nine loops.
import quadrants as qd

N = 4096
sig = qd.field(qd.f32, shape=N)
scaled = qd.field(qd.f32, shape=N)
smooth = qd.field(qd.f32, shape=N)
energy = qd.field(qd.f32, shape=N)
mask = qd.field(qd.i32, shape=N)
count = qd.field(qd.i32, shape=())
peak = qd.field(qd.i32, shape=())
norm = qd.field(qd.f32, shape=N)
mix = qd.field(qd.f32, shape=N)


@qd.kernel
def ten_tasks(n: qd.i32, gain: qd.f32, threshold: qd.f32):
    fn = qd.cast(n, qd.f32)
    scale = gain / fn
    n1 = n - 1
    for i1 in range(n):
        sig[i1] = qd.sin(qd.cast(i1, qd.f32) * 0.015625)
    for i2 in range(n):
        scaled[i2] = sig[i2] * gain
    for i3 in range(n1):
        smooth[i3] = (scaled[i3] + scaled[i3 + 1]) * 0.5
    for i4 in range(n):
        energy[i4] = smooth[i4] * smooth[i4]
    for i5 in range(n):
        mask[i5] = qd.cast(energy[i5] > threshold, qd.i32)
    for i6 in range(n):
        qd.atomic_add(count[None], mask[i6])
    for i7 in range(n):
        qd.atomic_max(peak[None], qd.cast(qd.round(energy[i7] * 1000.0), qd.i32))
    for i8 in range(n):
        norm[i8] = qd.select(mask[i8] != 0, energy[i8] * scale, 0.0)
    for i9 in range(n):
        mix[i9] = norm[i9] + (1.0 - norm[i9]) * sig[i9]


def run():
    ten_tasks(N, 1.5, 0.25)
