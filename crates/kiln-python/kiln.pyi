"""Kiln from Python: run KIR kernels on numpy arrays in place.

See docs/python.md. A field bound to an array is that array's memory,
lent for the run: the kernel reads and writes it in place, and nothing
is copied. The GIL is released while a kernel compiles and runs.
"""

from os import PathLike
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

__version__: str
"""Kiln's version."""

BUILD_ID: str
"""The build identity every cache key holds."""

class KirError(Exception):
    """KIR text that does not parse or verify; the message holds the
    diagnostics, each at its FILE:LINE:COL."""

class RunError(Exception):
    """A run that failed (an access out of bounds, a failed assert); the
    message holds the diagnostic at the KIR statement, and the Python
    location a statement was imported from."""

class Module:
    """KIR text, parsed and verified once. The engine of its last run is
    kept, so a second call of a kernel is warm (use a Module from the
    thread that made it)."""

    def __init__(self, text: str, name: str = "<module>") -> None:
        """Parses and verifies `text` (`name` is the file name diagnostics
        show); raises KirError."""

    @property
    def kernels(self) -> list[str]:
        """The kernels' names, in the order of the text."""

    @property
    def fields(self) -> dict[str, tuple[str, list[int]]]:
        """Each field's element type (a KIR keyword: "f32", "i64", ...)
        and shape."""

    def run(
        self,
        kernel: str,
        args: dict[str, bool | int | float | np.generic | npt.NDArray[Any]] | None = None,
        fields: dict[str, npt.NDArray[Any]] | None = None,
        cache_dir: str | PathLike[str] | None = None,
        engine: Literal["jit", "interp"] = "jit",
        *,
        fast_math: bool = False,
        opt_level: int = 2,
        bounds_checks: bool = True,
        denormals: Literal["preserve", "flush"] = "preserve",
        threads: int | None = None,
        check_races: bool = False,
        seed: int = 0,
    ) -> dict[str, Any]:
        """Runs `kernel` with `args` (by parameter name; a left-out
        parameter takes its default) on `fields`, numpy arrays bound by
        field name in place: each of the field's dtype (i1 is bool) and
        shape, C-contiguous and writeable. Fields left out start at zero
        and are dropped. `engine` "jit" compiles through the per-task cache
        at `cache_dir` (else kiln-run's default cache); "interp" is the
        reference interpreter. The keyword options are kiln-run's flags of
        the same names: fast_math, opt_level (0-3) and bounds_checks are
        the JIT's compile configuration (each a key of its own), threads
        its threads (default: every core), denormals ("preserve" or
        "flush") either engine's subnormal mode, check_races the
        interpreter's race check, seed the random statements' seed (0 to
        2**64 - 1, either engine; another seed compiles nothing again); an
        option of the other engine is a ValueError. Returns this call's
        statistics (kiln-run --stats=json's object) and, under "printed", the
        text each of its `print` statements wrote, in order (a parallel
        task's in iteration order; each entry one executed print, its
        newlines as printed). Raises ValueError or TypeError for a bad argument,
        RunError for a run that failed; a cache that cannot be used is a
        RuntimeWarning, and the run goes on without it."""

