"""Re-make testdata/quadrants/captured/: captures of a few corpus programs, for tests that need no Python.

Run from the repository's root with the venv's python (`make quadrants-captured`).
Keeps fields.json, capture.json, calls.jsonl and the offload logs; drops the
store of values (values.pack, values.idx), running.json and the full logs (too
large to commit; truncated/ keeps the head of one, which
shows how every stage looks). The truncated/ and other-shapes/ examples are
made by hand (see their README) and kept as they are.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

PROGRAMS = [
    "saxpy.py",
    "ranks.py",  # struct_for over fields of rank 1-3
    "control.py",  # while, break, continue, if/else
    "atomic_ops.py",
    "ndarray_args.py",
    "reduce.py",  # global temporaries, returned values
    "arg_order.py",  # templates and ndarrays among scalars: Quadrants numbers the arguments
    "refused/pointer_snode.py",
    "refused/bitmasked.py",
    "vector_field.py",  # vector and matrix fields, matrix literals, products
    "struct_arg.py",  # struct and vector arguments by value, a struct field
    "dataclass_nd.py",  # a dataclass of ndarrays, nested
    "dyn_index.py",  # components chosen at run time, locals and fields
    "rotate2d.py",  # local mat2 values, an ndarray of vec2
    "particles.py",  # vec3 fields, whole-vector atomics into a 0-D vector field
    "mat3_field.py",  # mat3 fields, a 2-D field of f64 mat3
    "data_oriented.py",  # fields and ndarrays held by self (__qd_struct_nd_<id>)
    "print_in_kernel.py",  # print in a kernel
    "assert_in_kernel.py",  # asserts: the program's own, and the bounds checks debug=True adds
]


def main() -> int:
    root = Path.cwd()
    corpus = Path("testdata/quadrants")
    dest_root = corpus / "captured"
    env = dict(os.environ, PYTHONPATH=str(root / "tools"))
    for prog in PROGRAMS:
        name = Path(prog).stem
        dest = dest_root / name
        if dest.name in ("truncated", "other-shapes"):
            raise SystemExit(f"refresh_captured: {name} would overwrite a hand-made example")
        shutil.rmtree(dest, ignore_errors=True)
        r = subprocess.run(
            [sys.executable, "-m", "kiln_quadrants", "-o", str(dest), str(corpus / prog)],
            env=env,
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            print(f"refresh_captured: {prog} failed", file=sys.stderr)
            return 1
        for name in ("values.pack", "values.idx", "running.json"):
            (dest / name).unlink(missing_ok=True)
        for log in [*(dest / "calls").glob("*.log"), *(dest / "calls").glob("*.log.gz")]:
            if not log.name.endswith(".offload.log"):
                log.unlink()
        print(f"captured {prog} -> {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
