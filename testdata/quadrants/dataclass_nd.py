# dataclass_nd: a dataclass of ndarrays (scalar and vector), passed to
# kernels as Genesis passes its state, with a nested dataclass.
from dataclasses import dataclass

import numpy as np
import quadrants as qd

qd.init(arch=qd.cpu)


@dataclass
class Consts:
    k: qd.types.NDArray[qd.f32, 1]


@dataclass
class State:
    x: qd.types.NDArray[qd.math.vec3, 1]
    v: qd.types.NDArray[qd.math.vec3, 1]
    m: qd.types.NDArray[qd.f32, 1]
    consts: Consts


@qd.kernel
def integrate(s: State, dt: qd.f32):
    for i in s.x:
        f = -s.consts.k[i % 4] * s.x[i]
        s.v[i] += dt * f / s.m[i]
        s.x[i] += dt * s.v[i]


@qd.kernel
def kinetic(s: State) -> qd.f32:
    e = 0.0
    for i in s.v:
        e += 0.5 * s.m[i] * s.v[i].norm_sqr()
    return e


n = 24
st = State(
    x=qd.ndarray(qd.math.vec3, shape=n),
    v=qd.ndarray(qd.math.vec3, shape=n),
    m=qd.ndarray(qd.f32, shape=n),
    consts=Consts(k=qd.ndarray(qd.f32, shape=4)),
)
st.x.from_numpy(np.linspace(-1, 1, 3 * n, dtype=np.float32).reshape(n, 3))
st.m.from_numpy(np.linspace(1, 2, n, dtype=np.float32))
st.consts.k.from_numpy(np.array([1.0, 2.0, 4.0, 8.0], dtype=np.float32))
for _ in range(3):
    integrate(st, 0.05)
print("dataclass_nd", kinetic(st), st.x.to_numpy()[2])
