# struct_arg: struct arguments by value (nested, with vector members) and
# a struct field with scalar and vector members.
import quadrants as qd

qd.init(arch=qd.cpu)

Box = qd.types.struct(lo=qd.math.vec2, hi=qd.math.vec2)
Params = qd.types.struct(box=Box, gain=qd.f32, steps=qd.i32)
Cell = qd.types.struct(c=qd.math.vec2, mass=qd.f32, tag=qd.i32)

N = 32
cells = Cell.field(shape=N)
out = qd.field(qd.f32, shape=N)


@qd.kernel
def place(p: Params, shift: qd.math.vec2):
    for i in cells:
        t = qd.cast(i, qd.f32) / N
        cells[i].c = p.box.lo + (p.box.hi - p.box.lo) * t + shift
        cells[i].mass = p.gain * (1.0 + t)
        cells[i].tag = i % p.steps


@qd.kernel
def score(p: Params):
    for i in cells:
        inside = (cells[i].c >= p.box.lo).all() and (cells[i].c <= p.box.hi).all()
        out[i] = cells[i].mass * (1.0 if inside else -1.0) + cells[i].tag


prm = Params(box=Box(lo=qd.math.vec2(-1.0, 0.0), hi=qd.math.vec2(2.0, 3.0)), gain=1.5, steps=4)
place(prm, qd.math.vec2(0.25, -0.5))
score(prm)
print("struct_arg", out.to_numpy()[:6])
