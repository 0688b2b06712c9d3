"""``kiln-quadrants run``: check Kiln against Quadrants on a whole, unmodified program.

Owns: the ``run`` command. It captures the program (``capture.py``, in a
process of its own), imports each compiled kernel with ``kiln-import``,
replays every call twice in this process through ``import kiln`` (one
``kiln.Module`` per kernel, its engines warm from call to call), the JIT
(through the per-task cache) and the interpreter, from the values
Quadrants had before the call (read from the capture's store, ``pack.py``),
and compares what Kiln computed with what Quadrants computed:
integers exactly, floats within ``--ulps`` units in the last place (of
each field's largest magnitude, too, after a kernel whose parallel float
atomics sum in any order; ``docs/quadrants.md`` says why that bound). One line per kernel, then a
summary. It also owns where the tools come from: one directory for the
whole run, chosen in the documented order (``tool_dir``; ``-v`` says which).

Exit status: 0 when everything agrees; 1 on a disagreement (naming the
kernel, the call, the field, the first differing index and both values), on
a data race found with ``--check-races``, or when the program ends early
(it raises, its traceback printed; exits with another status; is killed;
outlives --timeout; or the capture fails: one line says which, and the
calls it completed are checked), or when the tools cannot be found; 130 on
Ctrl-C (the program is stopped too); 2 when a kernel
cannot be imported (naming the statement) and nothing disagrees. The other
kernels are still checked. Bad usage is one line and 2, found before the
tools are looked for or anything is imported, made or run.

Must never: change the program's own output, write outside ``--keep DIR``
(or a temporary directory) and the cache, report agreement for a call it
did not replay, run tools of two directories in one run, or name a file of
its deleted temporary directory without saying how to keep it (``--keep``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

try:
    import numpy as np
except ImportError:  # run() says so in one line; --help needs no numpy
    np = None  # type: ignore[assignment]

from .capture import OFFLOAD_STAGE, OneLineParser, directory_error, kernel_label, kir_name, lower_first, program_error, size_error
from .records import (
    Call,
    CaptureFile,
    FieldTable,
    JsonScalar,
    Manifest,
    ManifestCall,
    ManifestField,
    ManifestReturned,
    RecordError,
    Saved,
    load_capture,
    load_table,
)

# Floats may differ from Quadrants' by this many units in the last place
# (docs/quadrants.md, "Tolerance"): both compile the same operations with
# LLVM; the bound leaves room for a math function that Quadrants computes
# with glibc or an LLVM intrinsic and Kiln with its own correctly rounded
# f32 functions or glibc (glibc within 1 ulp for sin, cos, exp, log; 2 for
# tan, pow, atan2), composed once.
DEFAULT_ULPS = 4
# Calls checked per kernel by default: a simulation's thousandth step
# rarely finds what its first ten did not, and each costs a snapshot of
# every field and two kiln-run processes (docs/quadrants.md).
DEFAULT_CALLS = 10
# Kiln's values are kept (--keep) for each kernel's first this many calls,
# and for every call where they differ from Quadrants': past them, a value
# within --ulps of Quadrants' would only cost disk.
KEPT_CALLS = DEFAULT_CALLS
# What Quadrants's CPU backend does with subnormal floats (it runs with
# the SSE control register's flush-to-zero and denormals-are-zero bits).
QUADRANTS_DENORMALS = "flush"

TOOL = "kiln-quadrants"

# The numpy dtype of each KIR element type (``kiln.Module.fields`` names them).
NUMPY_DTYPES: dict[str, Any] = {
    k: np.dtype(v) for k, v in (
        ("f16", "float16"), ("f32", "float32"), ("f64", "float64"), ("i1", "bool"), ("i8", "int8"), ("i16", "int16"), ("i32", "int32"),
        ("i64", "int64"), ("u8", "uint8"), ("u16", "uint16"), ("u32", "uint32"), ("u64", "uint64"),
    )
} if np is not None else {}
# How long a program stopped by --timeout has to write its calls (SIGTERM)
# before it is killed (SIGKILL), in seconds.
TIMEOUT_GRACE = 10.0


# The JIT's threads for a call, unless the program gave Quadrants its own
# number (``threads_of``).
JIT_THREADS = 2

# The tools a run needs; all come from one directory (see ``tool_dir``).
NEEDED = ("kiln-run", "kiln-import")
NOT_FOUND = "set KILN_BIN_DIR, put the tools on PATH, or build them (make build)"
KEEP_HINT = "(this run's temporary directory is deleted: rerun with --keep DIR to keep the logs, the .kir and the values)"


def _lacks(d: Path) -> str | None:
    """The first tool a run needs that directory ``d`` lacks (or holds not
    executable), or None."""
    return next((t for t in NEEDED if not ((d / t).is_file() and os.access(d / t, os.X_OK))), None)


def _holds_tools(d: Path) -> bool:
    return _lacks(d) is None


def newer_build(dirs: list[Path]) -> Path | None:
    """Of the build directories that hold the tools, the one whose kiln-run
    is newest (by mtime; the first on a tie), or None: a fresh `make build`
    wins over an old release build, and the other way round."""
    held = [d for d in dirs if _holds_tools(d)]
    return max(held, key=lambda d: (d / "kiln-run").stat().st_mtime, default=None)


def tool_dir(env: dict[str, str], here: Path) -> tuple[Path, str] | str:
    """The one directory every tool of the run comes from, and the rule
    that chose it (for -v), or why there is none. ``here`` is this
    package's directory. The order (docs/quadrants.md): $KILN_BIN_DIR;
    beside an installed kiln-quadrants (PREFIX/share/kiln/python/kiln_quadrants
    -> PREFIX/bin); the first directory on $PATH that holds the tools; the
    checkout's target/release or target/debug, whichever kiln-run is newer."""
    if env.get("KILN_BIN_DIR"):
        d = Path(env["KILN_BIN_DIR"])
        missing = _lacks(d)  # said, never passed over for another build
        if missing is not None:
            return f"cannot find {missing} in KILN_BIN_DIR ({d}): point it at the built tools, or unset it"
        return d, "via $KILN_BIN_DIR"
    if [p.name for p in here.parents[:3]] == ["python", "kiln", "share"] and _holds_tools(here.parents[3] / "bin"):
        return here.parents[3] / "bin", "beside the installed kiln-quadrants"
    for entry in env.get("PATH", "").split(os.pathsep):
        if entry and _holds_tools(Path(entry)):
            return Path(os.path.abspath(entry)), "via $PATH"
    target = here.parents[1] / "target"
    build = newer_build([target / "release", target / "debug"])
    if build is not None:
        return build, "in the checkout: the newer build of target/release and target/debug"
    return f"cannot find {' and '.join(NEEDED)}: {NOT_FOUND}"


# ---------------------------------------------------------------------------
# Comparing values.


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between two float arrays of one dtype (0 where both are NaN).

    Each float's bits, read as a signed integer, are mapped onto one
    monotonic line (negative floats mirrored below zero, -0.0 onto 0.0), on
    which adjacent floats are adjacent integers; the distance is the
    difference there. f64 distances are computed in Python integers (they
    can pass 2**63).
    """
    size = a.dtype.itemsize
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[size]
    wide = np.int64 if size < 8 else object
    bottom = -(1 << (8 * size - 1))

    def line(x: np.ndarray) -> np.ndarray:
        # ascontiguousarray makes a 0-D array 1-D: the shape is put back.
        i = np.ascontiguousarray(x).view(bits).reshape(x.shape).astype(wide)
        return np.where(i < 0, bottom - i, i)

    d = np.abs(line(a) - line(b))
    return np.where(np.isnan(a) & np.isnan(b), 0, d)


@dataclass
class Difference:
    index: tuple[int, ...]
    quadrants: object
    kiln: object
    ulps: int | None


def scaled_ulp_distance(want: np.ndarray, got: np.ndarray) -> np.ndarray:
    """Units in the last place at the scale of ``want``'s largest finite
    magnitude (or the plain distance, where that is smaller): how far apart
    two sums of the same terms added in different orders may be, where an
    element's own ulp is not (a small result of large terms that cancel)."""
    plain = ulp_distance(want, got)
    finite = np.abs(want[np.isfinite(want)])
    if finite.size == 0:
        return plain
    unit = float(np.spacing(finite.max()))
    both = np.isfinite(want) & np.isfinite(got)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.ceil(np.abs(want.astype(np.float64) - got.astype(np.float64)) / unit)
    return np.where(both, np.minimum(plain, scaled), plain)


# A kernel whose parallel tasks add floats atomically into a field element
# that more than one iteration may reach sums in an order that differs from
# run to run, in Quadrants as in Kiln; every float field its call leaves may
# carry that difference. An element indexed first by the task's own loop
# variables (`x[i] += ...`, which Quadrants also makes an atomic) is one
# iteration's alone.
TASK_RE = re.compile(r"^\s*task @\S+ (serial|range_for|struct_for) ((?:%[\w.]+(?:, )?)*)")
FLOAT_FIELD_RE = re.compile(r"^field @(\S+) : f(?:16|32|64)\b", re.M)
ATOMIC_RE = re.compile(r"\batomic (?:add|sub) @(\S+?)\[([^\]]*)\]")


SCALED_NOTE = "; atomic float sums in any order: floats compared at each field's scale"


RANDOM_RE = re.compile(r"= random [a-z0-9]+")

# A kernel that draws random numbers cannot be compared value by value:
# Quadrants' generator keeps a state per thread, so its numbers depend on
# the schedule, and Kiln's are its own counter-based stream. Its fields are
# checked by distribution instead (docs/quadrants.md, "Random numbers"):
# every Kiln value within Quadrants' range widened by RANGE_SLACK / n of its
# width on each side, and mean and variance within DIST_SIGMAS standard
# errors of the difference of two samples of n; a field of fewer than
# SMALL_FIELD elements (a Monte-Carlo estimate), each value within
# SMALL_REL of Quadrants' (relative).
DIST_SIGMAS = 6.0
RANGE_SLACK = 20.0
SMALL_FIELD = 30
SMALL_REL = 0.02
DISTRIBUTION_NOTE = ("checked by distribution (random numbers: range, mean and variance within the bounds of "
                     "docs/quadrants.md, not compared value by value; JIT and interpreter identical)")


def draws_random(kir_text: str) -> bool:
    """Whether an imported kernel draws random numbers (a `random` statement)."""
    return RANDOM_RE.search(kir_text) is not None


def _moments(x: np.ndarray) -> tuple[float, float, float]:
    """Mean, variance and the squared standard error of the variance."""
    m = float(x.mean())
    d2 = (x - m) ** 2
    v = float(d2.mean())
    return m, v, float(max((d2 * d2).mean() - v * v, 0.0)) / x.size


def distribution_difference(want: np.ndarray, got: np.ndarray) -> str | None:
    """Why Kiln's values ``got`` are not draws of the distribution
    Quadrants' ``want`` come from, or None when they may be (the bounds
    above)."""
    w, g = want.astype(np.float64).ravel(), got.astype(np.float64).ravel()
    if w.shape != g.shape:
        return f"Quadrants has {w.size} values, Kiln {g.size}"
    if not np.all(np.isfinite(g) == np.isfinite(w)):
        return "Kiln's values are finite where Quadrants' are not, or the other way"
    w, g = w[np.isfinite(w)], g[np.isfinite(g)]
    n = w.size
    if n == 0:
        return None
    if n < SMALL_FIELD:
        far = np.abs(g - w) > SMALL_REL * np.maximum(np.abs(w), np.abs(g))
        if far.any():
            i = int(np.argmax(far))
            return f"element {i}: Quadrants {float(w[i])!r}, Kiln {float(g[i])!r}: more than {SMALL_REL:.0%} apart"
        return None
    lo, hi = float(w.min()), float(w.max())
    slack = RANGE_SLACK * (hi - lo) / n
    if g.min() < lo - slack or g.max() > hi + slack:
        return f"Kiln's values span [{float(g.min())!r}, {float(g.max())!r}], Quadrants' [{lo!r}, {hi!r}]"
    (mw, vw, sw), (mg, vg, sg) = _moments(w), _moments(g)
    tiny = 1e-12 * max(abs(mw), abs(mg), 1.0)
    if abs(mg - mw) > DIST_SIGMAS * np.sqrt((vw + vg) / n) + tiny:
        return f"mean: Quadrants {mw:.6g}, Kiln {mg:.6g} (more than {DIST_SIGMAS:g} standard errors apart)"
    if abs(vg - vw) > DIST_SIGMAS * np.sqrt(sw + sg) + tiny * tiny + 1e-12 * max(vw, vg):
        return f"variance: Quadrants {vw:.6g}, Kiln {vg:.6g} (more than {DIST_SIGMAS:g} standard errors apart)"
    return None


def sums_in_any_order(kir_text: str) -> bool:
    """Whether a parallel task of the KIR adds floats atomically into a
    field element other iterations may add into too."""
    floats = set(FLOAT_FIELD_RE.findall(kir_text))
    loop_vars: list[str] | None = None
    for line in kir_text.splitlines():
        t = TASK_RE.match(line)
        if t:
            loop_vars = None if t.group(1) == "serial" else [v.strip() for v in t.group(2).split(",") if v.strip()]
            continue
        a = ATOMIC_RE.search(line)
        if loop_vars is not None and a and a.group(1) in floats:
            idx = [i.strip() for i in a.group(2).split(",")]
            if idx[: len(loop_vars)] != loop_vars or not loop_vars:
                return True
    return False


def reorder_factor(shapes: list[list[int]]) -> int:
    """How much further apart two sums of the same terms added in different
    orders may be than two single operations: `2 * ceil(sqrt(n))`, for `n`
    the element count of the largest field or ndarray of the call (``shapes``:
    their shapes), a bound on the terms one element sums. The rounding
    errors of `n` additions in another order grow as `sqrt(n)` (and at worst
    as `n`, which would hide a dropped term): 184 ulps at the field's scale
    for 512 terms against the 12 a simulation of 300 random orders of
    particles.py's energy sum reached."""
    n = max((math.prod(s) for s in shapes), default=1)
    return 1 if n <= 1 else 2 * math.ceil(math.sqrt(n))


def compare(want: np.ndarray, got: np.ndarray, ulps: int, scaled: bool = False) -> tuple[int, Difference | None]:
    """How far ``got`` is from ``want``: the most units in the last place
    any element of a float array is off (0 for other kinds, for an empty
    array and for two shapes), and the first element where ``got`` is not
    ``want`` (floats: more than ``ulps`` apart; ``scaled``: at the field's
    scale, see ``scaled_ulp_distance``). Each element's distance is computed
    once for both."""
    if want.shape != got.shape:
        return 0, Difference((), f"shape {want.shape}", f"shape {got.shape}", None)
    if want.ndim == 0:
        # np.argwhere finds no index in a 0-D array (its one index is ()):
        # compared as one element, so a reduction's result is compared too.
        worst, one = compare(want.reshape(1), got.reshape(1), ulps, scaled)
        return worst, Difference((), one.quadrants, one.kiln, one.ulps) if one is not None else None
    if want.dtype.kind == "f":
        if np.array_equal(want.view(f"u{want.dtype.itemsize}"), got.view(f"u{got.dtype.itemsize}")):
            return 0, None  # the same bits: nothing to measure
        d = scaled_ulp_distance(want, got) if scaled else ulp_distance(want, got)
        worst = int(d.max()) if d.size else 0
        bad = np.argwhere(d > ulps)
        if bad.size == 0:
            return worst, None
        i = tuple(int(x) for x in bad[0])
        return worst, Difference(i, want[i].item(), got[i].item(), int(d[i]))
    bad = np.argwhere(want != got)
    if bad.size == 0:
        return 0, None
    i = tuple(int(x) for x in bad[0])
    return 0, Difference(i, want[i].item(), got[i].item(), None)


def first_difference(want: np.ndarray, got: np.ndarray, ulps: int, scaled: bool = False) -> Difference | None:
    """``compare``'s first difference."""
    return compare(want, got, ulps, scaled)[1]


def max_ulps(want: np.ndarray, got: np.ndarray, scaled: bool = False) -> int:
    """``compare``'s most units in the last place apart."""
    return compare(want, got, 0, scaled)[0]


# ---------------------------------------------------------------------------
# One run.


@dataclass
class KernelReport:
    name: str
    # `FILE:LINE` of the kernel's Python function, when the capture says.
    where: str | None = None
    calls: int = 0
    fields: set[str] = field(default_factory=set)
    import_error: str | None = None
    failures: list[str] = field(default_factory=list)
    races: list[str] = field(default_factory=list)
    worst_ulps: int = 0
    # Whether a call's floats were compared at each field's scale (its
    # kernel adds floats atomically in parallel: sums in any order).
    scaled: bool = False
    # Calls Quadrants raised on (nothing to compare), and calls it compiled
    # to no task at all (nothing to run: each must leave every field as it was).
    raised: list[str] = field(default_factory=list)
    empty_calls: int = 0
    # Calls in which the program reads or writes out of bounds (Kiln's
    # error; Quadrants without debug=True does not check).
    out_of_bounds: list[str] = field(default_factory=list)
    # Calls past --calls: run by the program, not captured nor compared.
    unchecked: int = 0
    # Whether the kernel draws random numbers: its fields are checked by
    # distribution, never reported as agreeing.
    by_distribution: bool = False


OOB_RE = re.compile(r"index (\S+) out of bounds for field @(\S+) of shape \[([^\]]*)\]")


def out_of_bounds(stderr: str) -> str | None:
    """`the program writes out of bounds: index 10 of @x, of shape [10],
    at prog.py:7:9` from kiln-run's bounds error, or None for another
    failure."""
    m = OOB_RE.search(stderr)
    if m is None:
        return None
    lines = stderr.splitlines()
    at = next((ln.split(": note:")[0].strip() for ln in lines if ": note: the statement was imported from here" in ln), None)
    stmt = next((ln.strip() for ln in lines[1:3] if ln.strip()), "")
    verb = "reads" if re.match(r"%\S+ = load ", stmt) else "writes"
    where = f" at {at}" if at else ""
    return f"the program {verb} out of bounds: index {m.group(1)} of @{m.group(2)}, of shape [{m.group(3)}]{where}"


def printed_difference(quadrants: list[str], kiln: list[str], shown: int = 3) -> str | None:
    """How the lines a call printed differ, as multisets (Quadrants prints a
    parallel loop's iterations in whatever order its threads ran them; Kiln
    in iteration order), or None when they are the same: the lines only
    one of them printed, a few of each, with how many there are."""
    want, got = Counter(quadrants), Counter(kiln)
    if want == got:
        return None
    missing = list((want - got).elements())
    extra = list((got - want).elements())
    parts = []
    for what, lines in (("only Quadrants printed", missing), ("only Kiln printed", extra)):
        if lines:
            more = f" and {len(lines) - shown} more" if len(lines) > shown else ""
            parts.append(f"{what} {len(lines)} line{'s' if len(lines) != 1 else ''}: "
                         f"{', '.join(repr(ln) for ln in lines[:shown])}{more}")
    return "; ".join(parts)


def _calls(rep: KernelReport, budget: bool = False) -> str:
    """`3 calls`, or `10 of 300 calls` when --calls (or --max-disk, once
    ``budget`` was reached) left some unchecked."""
    total = rep.calls + rep.unchecked
    s = "s" if total != 1 else ""
    why = "--calls, --max-disk" if budget else "--calls"
    return f"{rep.calls} call{s}" if not rep.unchecked else f"{rep.calls} of {total} call{s} ({why})"


FIELD_RE = re.compile(r"^\s*field @(\S+) :", re.M)
KERNEL_RE = re.compile(r"^kernel @(\S+)\(([^)]*)\)", re.M)


def kernel_params(kir_text: str, kernel: str) -> set[str] | None:
    """The parameters (without `%`) kernel ``kernel`` of the KIR declares,
    or None when it declares no kernel of that name."""
    for name, params in KERNEL_RE.findall(kir_text):
        if name == kernel:
            return {p.split(":")[0].strip().lstrip("%") for p in params.split(",") if p.strip()}
    return None


def kir_fields(kir: Path) -> set[str]:
    return set(FIELD_RE.findall(kir.read_text()))


# A kernel's report: its runtime (the qd.init, from 0), its label (`k`,
# `k.grad`), where its function is defined, and Quadrants' number for the
# kernel object (capture.json's `kernel_id`: two kernels one factory made
# share the rest).
ReportKey = tuple[int, str, str | None, int | None]


class Replay:
    def __init__(self, work: Path, ns: argparse.Namespace, tools: Path):
        self.work = work
        self.cap = work / "capture"
        self.ns = ns
        # One directory for every tool: a run never mixes two builds.
        self.kiln_import = str(tools / "kiln-import")
        self.kiln_run = str(tools / "kiln-run")
        # By log and the table it was imported with (see `table_with`).
        self.imported: dict[tuple[str, str], tuple[Path | None, str | None]] = {}
        self.shape_tables = 0  # tables written for calls of other ndarray shapes
        # The output the capture found among each log's dumps.
        self.interleaved: dict[str, list[str]] = {}
        self.table: FieldTable | None = None
        # Each kernel's KIR, parsed once (kiln.Module), by its .kir file.
        self.modules: dict[Path, Any] = {}
        # The capture's values, and the store of Kiln's (--keep's kiln.pack),
        # ready once the capture has ended (``open_values``).
        self.values: Any = None
        self.kept: Any = None
        # Whether --max-disk left calls uncaptured.
        self.budget_reached = False
        self.reports: dict[ReportKey, KernelReport] = {}
        # The JIT's threads for each runtime whose qd.init set Quadrants'
        # (capture.json's `init`; JIT_THREADS for the others).
        self.threads: dict[int, int] = {}
        self.manifest: list[ManifestCall] = []

    def capture(self) -> int | None:
        """Runs the program under the capture; its exit status, or None when
        it outlived ``--timeout`` and was stopped (SIGTERM, which the
        capture turns into an exit that writes the calls so far; SIGKILL
        to its whole session a grace period later)."""
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]))
        calls = ["--calls", str(self.ns.calls)] + (["--max-disk", str(self.ns.max_disk)] if self.ns.max_disk is not None else [])
        # This run says how the capture ended (from capture.json), so the
        # capture does not; its directory is absolute, so that a program
        # that changes directory does not move it.
        cmd = [sys.executable, "-m", "kiln_quadrants", "-o", str(self.cap.resolve()), *calls, "--for-replay", "--kiln-import", self.kiln_import,
               self.ns.program, *self.ns.args]
        proc = subprocess.Popen(cmd, env=env, start_new_session=True)
        try:
            return proc.wait(timeout=self.ns.timeout)
        except subprocess.TimeoutExpired:
            _stop(proc, signal.SIGTERM)
            return None
        except KeyboardInterrupt:
            # The program is in a session of its own (so that --timeout
            # stops all of it), which a terminal's Ctrl-C does not reach:
            # it gets the SIGINT it would have got, and never outlives us.
            _stop(proc, signal.SIGINT)
            raise

    def table_for(self, init: int) -> Path:
        """The field table of runtime `init` (the `qd.init` it follows): the
        capture's, or for a program that initialised Quadrants more than
        once, that runtime's fields and kernels alone (SNode ids and kernel
        names start again in each)."""
        whole = self.cap / "fields.json"
        if self.table is None:  # read once: every call asks
            self.table = load_table(whole)
        table = self.table
        if "runtimes" not in table:
            return whole
        path = self.work / "tables" / f"fields.init{init}.json"
        if not path.exists():
            kernels = table["kernels"] if init == 0 else next(
                (r["kernels"] for r in table["runtimes"] if r["init"] == init), {}
            )
            part: FieldTable = {
                "quadrants": table["quadrants"],
                "fields": [f for f in table["fields"] if f.get("init", 0) == init],
                "kernels": kernels,
            }
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(part, indent=1) + "\n")
        return path

    def open_values(self) -> None:
        """The capture's store of values, to read, and Kiln's, to add to
        (a value the capture holds already is not stored again)."""
        from .pack import Pack, Reader

        self.values = Reader((self.cap, "values"), (self.work, "kiln"))
        self.kept = Pack(self.work, "kiln", elsewhere=self.values.ids())

    def stop(self, why: str) -> int:
        """The run stops short: ``why`` in one line, and (with --keep) a
        manifest of the calls replayed so far that says why it stops there."""
        print(f"{TOOL}: error: {why}", file=sys.stderr)
        self.write_manifest(why)
        return 1

    def write_manifest(self, incomplete: str | None = None) -> None:
        """DIR/manifest.json: every call replayed, and, when the run did not
        check every call of the program, ``incomplete``: why not."""
        manifest: Manifest = {"stores": ["capture/values", "kiln"], "calls": self.manifest}
        if incomplete is not None:
            manifest["incomplete"] = incomplete
        (self.work / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")

    def table_with(self, init: int, shapes: dict[str, list[int]]) -> Path:
        """The field table of runtime `init` with the ndarray arguments in
        `shapes` (a call's) of those shapes. Quadrants compiles a kernel
        once for ndarrays of any shape, where a KIR field has one: a call
        whose ndarrays have other shapes than the call the table describes
        is imported again, against a table of its own."""
        base = self.table_for(init)
        table = json.loads(base.read_text())
        changed = False
        for entry in table["kernels"].values():
            for a in entry["args"]:
                if a["kind"] == "ndarray" and a["name"] in shapes and a["shape"] != shapes[a["name"]]:
                    a["shape"] = shapes[a["name"]]
                    changed = True
        if not changed:
            return base
        self.shape_tables += 1
        path = self.work / "tables" / f"fields.init{init}.shapes{self.shape_tables}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(table, indent=1) + "\n")
        return path

    def import_log(self, log: str, init: int, shapes: dict[str, list[int]]) -> tuple[Path | None, str | None]:
        """The KIR of a call's log, its ndarrays of the call's `shapes`
        (imported once per log and distinct shapes), or why it cannot be
        imported."""
        key = (log, json.dumps(shapes, sort_keys=True))
        if key not in self.imported:
            variant = sum(1 for k in self.imported if k[0] == log)
            stem = Path(log).name.removesuffix(".offload.log") + (f".shapes{variant}" if variant else "")
            out = self.work / "kir" / (stem + ".kir")
            out.parent.mkdir(parents=True, exist_ok=True)
            table = self.table_with(init, shapes)
            r = subprocess.run(
                [self.kiln_import, str(self.cap / log), "--fields", str(table), "-o", str(out), "--color=never"],
                capture_output=True, text=True,
            )
            why = r.stderr.strip() if r.returncode >= 0 else f"kiln-import {_ended(r.returncode)}\n{r.stderr.strip()}".strip()
            self.imported[key] = (out, None) if r.returncode == 0 else (None, why)
        return self.imported[key]

    def compiled_no_task(self, log: str | None) -> bool:
        """Whether Quadrants compiled the call's kernel (whose log is
        ``log``) to no offloaded task (an empty body, or one a static
        condition emptied): no log at all, or a log without a task's dump."""
        return log is None or OFFLOAD_STAGE not in (self.cap / log).read_text(errors="replace")

    def check_untouched(self, call: Call, rep: KernelReport) -> None:
        """A call of a kernel with no task runs nothing: Quadrants must have
        left every value it saved as it was."""
        rep.empty_calls += 1
        for key, v in call.get("values", {}).items():
            if v["before"] is None or v["after"] is None:
                continue
            before, after = self.values.load(v["before"]), self.values.load(v["after"])
            d = first_difference(before, after, 0)
            if d is not None:
                at = f"[{', '.join(map(str, d.index))}]" if d.index else ""
                rep.failures.append(
                    f"call {call['call']}: Quadrants compiled no task but changed @{key}{at}: {d.quadrants!r} to {d.kiln!r}"
                )

    def report_for(self, init: int, label: str, where: str | None, kernel_id: int | None) -> KernelReport:
        """The one report of kernel ``label`` (`k`, or `k.grad`) of runtime
        ``init`` defined at ``where``, Quadrants' kernel ``kernel_id``."""
        return self.reports.setdefault((init, label, where, kernel_id), KernelReport(label, where))

    def replay_call(self, call: Call) -> None:
        kernel = call["kernel"]
        # One report per kernel: two of one name (in two runtimes, two
        # functions, or two a factory made) are two, told apart by where
        # each is defined and Quadrants' number for it; a kernel's
        # derivative is one of its own (`k.grad`). Its compilations (one
        # per set of template arguments) are one kernel.
        rep = self.report_for(call.get("init", 0), kernel_label(kernel, call.get("derivative")), call.get("where"), call.get("kernel_id"))
        rep.calls += 1
        error = call.get("error")
        if error:
            rep.raised.append(f"call {call['call']}: {error}")
            return
        log = call["log"]
        if log is None or self.compiled_no_task(log):
            self.check_untouched(call, rep)
            return
        if call.get("interleaved"):
            self.interleaved[log] = call["interleaved"]
        shapes = {name: a["shape"] for name, a in call["args"].items() if a["kind"] == "ndarray"}
        kir, err = self.import_log(log, call.get("init", 0), shapes)
        if kir is None:
            rep.import_error = err
            stray = self.interleaved.get(log)
            if stray:
                # Those lines were left out; output written into a dump
                # cannot be told from the dump's own lines.
                rep.import_error = (f"{err}\n(output was written among the IR while the kernel compiled, "
                                    f"{len(stray)} line{'s' if len(stray) != 1 else ''} of it found, e.g. {stray[0]!r}: "
                                    "the dumps may hold more)")
            return
        declared = kir_fields(kir)
        scaled = sums_in_any_order(kir.read_text())
        rep.scaled = rep.scaled or scaled
        random = draws_random(kir.read_text())
        rep.by_distribution = rep.by_distribution or random
        args: dict[str, JsonScalar] = {}
        for name, a in call["args"].items():
            if a["kind"] == "scalar":
                args[kir_name(name)] = a["value"]
            elif a["kind"] == "struct":  # a struct's scalars are `%p.0`, `%p.1`, ...
                args.update((f"{kir_name(name)}.{i}", v) for i, v in enumerate(a["members"]))
        # An argument the compiled kernel never reads (Quadrants declares it,
        # the IR loads it nowhere) is no parameter of the KIR: left out.
        params = kernel_params(kir.read_text(), kernel)
        args = {k: v for k, v in args.items() if params is None or k in params}
        # What Quadrants had, by KIR field: the .npy files around the call
        # of each field and ndarray argument the KIR declares, and the
        # values the kernel returned (the 0-D fields @k.ret0, @k.ret1, ...
        # of kiln-import).
        saved: dict[str, _Paths] = {}
        returned: dict[str, JsonScalar] = {}
        for key, v in call.get("values", {}).items():
            fname = f"{kernel}.{kir_name(key[4:])}" if key.startswith("arg:") else kir_name(key)
            if fname not in declared:
                continue
            paths = _paths(v)
            if isinstance(paths, str):  # the capture could not read it whole (sparse): `paths` says when
                rep.failures.append(f"call {call['call']}: field @{fname}: the capture saved no value of it {paths} the call")
                continue
            saved[fname] = paths
        for i, value in enumerate(call.get("return", [])):
            if f"{kernel}.ret{i}" in declared:
                returned[f"{kernel}.ret{i}"] = value
        compared = [*saved, *returned]
        entry: ManifestCall = {"kernel": kernel, "call": call["call"], "kir": str(kir.relative_to(self.work)), "args": call["args"], "values": {}}
        module = self.module(kir)
        sizes = [self.values.entry(saved[f].before)["shape"] for f in saved]
        tolerance = self.ns.ulps * (reorder_factor(sizes) if scaled else 1)
        jit_values: dict[str, np.ndarray] = {}
        for engine, options in self.engines(call.get("init", 0)):
            if random:  # each call draws other numbers, as it does in Quadrants
                options = {**options, "seed": call["call"]}
            bound = self.bind(module, saved, returned)
            stats = self.run_engine(module, kernel, args, bound, engine, options, call["call"], rep)
            if stats is None or engine == "races":
                continue
            printing = printed_difference(call.get("printed", []), "".join(stats["printed"]).splitlines())
            if printing is not None:
                rep.failures.append(f"call {call['call']}: Kiln ({engine}) printed other lines than Quadrants: {printing}")
            if engine == "jit":
                jit_values = bound
            for fname in compared:
                rep.fields.add(fname)
                got = bound[fname]
                want = np.array(returned[fname], dtype=got.dtype) if fname in returned else self.values.load(saved[fname].after)
                if random:
                    self.check_distribution(rep, call["call"], fname, engine, want, got, jit_values.get(fname))
                    self.keep_value(entry, fname, engine, got, saved, returned, rep.calls <= KEPT_CALLS)
                    continue
                worst, d = compare(want, got, tolerance, scaled)
                rep.worst_ulps = max(rep.worst_ulps, worst)
                if d is not None:
                    at = f"[{', '.join(map(str, d.index))}]" if d.index else ""
                    unit = " at the field's scale" if scaled and want.dtype.kind == "f" else ""
                    ulps = f" ({d.ulps} ulps{unit} > {tolerance})" if d.ulps is not None else ""
                    rep.failures.append(
                        f"call {call['call']}: field @{fname}{at}: Quadrants {d.quadrants!r}, Kiln ({engine}) {d.kiln!r}{ulps}"
                    )
                # Kiln's value, stored once (one equal to Quadrants' is
                # Quadrants' blob, and costs nothing): for a kernel's first
                # calls, and for every call where it differs.
                self.keep_value(entry, fname, engine, got, saved, returned, rep.calls <= KEPT_CALLS or d is not None)
        self.manifest.append(entry)

    def keep_value(self, entry: ManifestCall, fname: str, engine: str, got: np.ndarray,
                   saved: dict[str, _Paths], returned: dict[str, JsonScalar], keep: bool) -> None:
        """Records a field in the call's manifest entry, with the engine's
        output when ``keep`` (stored once: one equal to Quadrants' is
        Quadrants' blob)."""
        kept = entry["values"].get(fname)
        if kept is None:
            kept = self.manifest_value(saved.get(fname), returned.get(fname))
            entry["values"][fname] = kept
        if keep:
            kept["kiln" if engine == "jit" else "kiln-interp"] = self.kept.put(got)

    def check_distribution(self, rep: KernelReport, call: int, fname: str, engine: str,
                           want: np.ndarray, got: np.ndarray, jit_got: np.ndarray | None) -> None:
        """A field of a kernel that draws random numbers: Kiln's values
        against Quadrants' by distribution, and the interpreter's against
        the JIT's bit for bit (the same stream)."""
        if engine == "jit":
            why = distribution_difference(want, got)
            if why is not None:
                rep.failures.append(f"call {call}: field @{fname}: not Quadrants' distribution: {why}")
            return
        if jit_got is not None:
            d = first_difference(jit_got, got, 0)
            if d is not None:
                at = f"[{', '.join(map(str, d.index))}]" if d.index else ""
                rep.failures.append(f"call {call}: field @{fname}{at}: the JIT drew {d.quadrants!r}, the interpreter {d.kiln!r}")

    def manifest_value(self, saved: _Paths | None, returned: JsonScalar) -> ManifestField | ManifestReturned:
        """A field's entry in the manifest, before Kiln's values are added:
        Quadrants' values around the call (their ids), or the value it returned."""
        if saved is None:
            value: ManifestReturned = {"quadrants_returned": returned}
            return value
        return {"before": saved.before, "quadrants": saved.after}

    def module(self, kir: Path) -> Any:
        """The KIR of ``kir`` as a ``kiln.Module``, parsed once: every call
        of the kernel runs in this process, on warm engines."""
        import kiln

        if kir not in self.modules:
            self.modules[kir] = kiln.Module(kir.read_text(), str(kir))
        return self.modules[kir]

    def engines(self, init: int = 0) -> list[tuple[str, dict[str, Any]]]:
        """Each engine a call of runtime ``init`` is replayed on, with its
        options. Quadrants' CPU backend flushes subnormal floats to zero: so
        does the replay, on every engine (docs/language.md). The JIT runs
        on as many threads as the program gave Quadrants (`threads_of`)."""
        flush = {"denormals": QUADRANTS_DENORMALS}
        threads = self.threads.get(init, JIT_THREADS)
        out = [("jit", {"engine": "jit", "threads": threads, "cache_dir": self.ns.cache_dir, **flush}), ("interp", {"engine": "interp", **flush})]
        if self.ns.check_races:
            out.append(("races", {"engine": "interp", "check_races": True, **flush}))
        return out

    def bind(self, module: Any, saved: dict[str, _Paths], returned: dict[str, JsonScalar]) -> dict[str, np.ndarray]:
        """The arrays a run writes in place, by KIR field: a copy of what
        Quadrants had before the call for each saved field, zero for each
        value returned (the 0-D fields ``@k.retN``), each of its field's
        dtype (a value saved as another is converted)."""
        declared = module.fields
        out = {}
        for fname in saved:
            arr = self.values.load(saved[fname].before)
            want = NUMPY_DTYPES.get(declared[fname][0])
            out[fname] = arr if want is None or arr.dtype == want else arr.astype(want)
        for fname in returned:
            out[fname] = np.zeros(declared[fname][1], dtype=NUMPY_DTYPES.get(declared[fname][0], np.float64))
        return out

    def run_engine(
        self, module: Any, kernel: str, args: dict[str, JsonScalar], bound: dict[str, np.ndarray], engine: str, options: dict[str, Any],
        n: int, rep: KernelReport,
    ) -> dict[str, Any] | None:
        """Runs one call on one engine, in this process: its statistics (with
        the lines it printed), or None when it failed (said in ``rep``: an
        access out of bounds once per call, a race, or the failure itself)."""
        import kiln

        try:
            stats: dict[str, Any] = module.run(kernel, args=args, fields=bound, **options)
            return stats
        except kiln.RunError as e:
            text = str(e).strip()
        except (ValueError, TypeError) as e:  # the call's values do not fit the KIR
            rep.failures.append(f"call {n}: Kiln ({engine}) refused the call's values: {e}")
            return None
        oob = out_of_bounds(text)
        if oob is not None and engine != "races":
            # The program's bug, which Quadrants (without debug=True) lets
            # into padding or a neighbour: said once per call, whichever
            # engine found it first.
            if not any(t.startswith(f"call {n}: the program ") for t in rep.out_of_bounds):
                rep.out_of_bounds.append(f"call {n}: {oob}:\n{_indent(text)}")
            return None
        what = "data race" if engine == "races" and "data race" in text else f"Kiln ({engine}) failed"
        (rep.races if engine == "races" else rep.failures).append(f"call {n}: {what}:\n{_indent(text)}")
        return None

    def label(self, key: ReportKey, rep: KernelReport) -> str:
        """A kernel's name in the summary: its Python name, and where it is
        defined when another kernel has the name too; and the runtime, when
        the same function was compiled in more than one; and Quadrants' name
        for the kernel (`fill_c62`), when one place made more than one
        kernel in one runtime (a factory)."""
        same = [k for k, r in self.reports.items() if r.name == rep.name]
        if len(same) == 1:
            return rep.name
        parts = [rep.where] if rep.where else []
        here = [k for k in same if k[2] == key[2]]
        if any(k[0] != key[0] for k in here):
            parts.append(f"init {key[0]}")
        if any(k[0] == key[0] and k[3] != key[3] for k in here) and key[3] is not None:
            parts.append(f"{rep.name.split('.')[0]}_c{key[3]}")
        return f"{rep.name} ({', '.join(parts)})"

    def report(self, incomplete: str | None = None) -> int:
        """One line per kernel, the summary and the manifest (``incomplete``:
        why the calls replayed are not all the program's); the status."""
        status = 0
        agree = differ = unimported = raised = by_distribution = 0
        for key, rep in self.reports.items():
            label = self.label(key, rep)
            if rep.raised and rep.calls == len(rep.raised):
                # Quadrants refused every call: nothing to compare, and no
                # fault of Kiln's or of the program's replay.
                raised += 1
                print(f"SKIP {label}: Quadrants raised; nothing to compare:\n{_indent(chr(10).join(rep.raised))}")
            elif rep.import_error:
                unimported += 1
                status = status or 2
                print(f"SKIP {label}: cannot be imported:\n{_indent(rep.import_error)}")
            elif rep.failures or rep.races or rep.out_of_bounds:
                differ += 1
                status = 1
                verb = "writes" if any("program writes" in t for t in rep.out_of_bounds) else "reads"
                oob = f": the program {verb} out of bounds" if rep.out_of_bounds else ""
                print(f"FAIL {label}{oob}")
                for f in rep.out_of_bounds + rep.failures + rep.races:
                    print(_indent(f))
            elif rep.by_distribution:
                by_distribution += 1
                print(f"ok   {label}: {_calls(rep)}, {len(rep.fields)} field{'s' if len(rep.fields) != 1 else ''} "
                      f"{DISTRIBUTION_NOTE}{_raised_note(rep)}")
            elif rep.empty_calls == rep.calls - len(rep.raised):
                agree += 1
                print(f"ok   {label}: {_calls(rep, self.budget_reached)}, no task to run "
                      f"(Quadrants compiled none), no field changed{_raised_note(rep)}")
            else:
                agree += 1
                print(f"ok   {label}: {_calls(rep, self.budget_reached)}, "
                      f"{len(rep.fields)} field{'s' if len(rep.fields) != 1 else ''}, JIT and interpreter agree with Quadrants"
                      f" (max {rep.worst_ulps} ulp{'s' if rep.worst_ulps != 1 else ''}"
                      f"{SCALED_NOTE if rep.scaled else ''}){_raised_note(rep)}")
        if status == 2 and any(r.failures or r.races for r in self.reports.values()):
            status = 1
        tail = f", {raised} raised in Quadrants" if raised else ""
        checked = f", {by_distribution} checked by distribution" if by_distribution else ""
        print(f"{len(self.reports)} kernels: {agree} agree{checked}, {differ} differ, {unimported} not imported{tail}")
        if self.ns.keep is None and any(r.import_error or r.failures or r.races or r.out_of_bounds for r in self.reports.values()):
            # The logs and .kir named above were in the temporary directory.
            print(KEEP_HINT)
        self.write_manifest(incomplete)
        return status


class _Paths(NamedTuple):
    """A value's blob ids around a call, in the capture's store."""

    before: str
    after: str


def _paths(saved: Saved) -> _Paths | str:
    """Both of the files the capture saved, or which it lacks
    (`before`, `after`, `before or after`)."""
    before, after = saved["before"], saved["after"]
    if before is None or after is None:
        return " or ".join(w for w, p in (("before", before), ("after", after)) if p is None)
    return _Paths(before, after)


def _raised_note(rep: KernelReport) -> str:
    """The calls of an agreeing kernel that Quadrants raised on, if any."""
    n = len(rep.raised)
    return f"; {n} call{'s' if n != 1 else ''} raised in Quadrants, not compared" if n else ""


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _usage_error(text: str) -> int:
    """One line on standard error, and the usage status."""
    print(f"{TOOL}: error: {text}", file=sys.stderr)
    return 2


def _keep_dir(keep: str) -> Path | str:
    """The --keep directory, made when new; or why it cannot be used."""
    work = Path(keep)
    try:
        if work.exists() and any(work.iterdir()):
            return f"--keep {keep}: the directory is not empty"
        work.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"--keep {keep}: {lower_first(e.strerror or str(e))}"
    return work


def _arguments_error(ns: argparse.Namespace) -> str | None:
    """Why an argument is not one the run can use, or None: checked before
    anything is looked for, imported or made. The numbers arrive as
    written, and are put in ``ns`` as numbers here."""
    try:
        ns.ulps = int(ns.ulps)
        if ns.ulps < 0:
            raise ValueError
    except ValueError:
        return f"--ulps takes 0 or more units in the last place, not {ns.ulps}"
    try:
        ns.calls = int(ns.calls)
        if ns.calls < 0:
            raise ValueError
    except ValueError:
        return f"--calls takes 0 (every call) or more, not {ns.calls}"
    if ns.timeout is not None:
        try:
            seconds = float(ns.timeout)
            if not seconds > 0:  # nan too
                raise ValueError
        except ValueError:
            return f"--timeout takes a number of seconds above 0, not {ns.timeout}"
        ns.timeout = None if math.isinf(seconds) else seconds
    if ns.keep is not None:
        keep = directory_error("--keep", ns.keep)
        if keep is not None:
            return keep
        if Path(ns.keep).is_dir() and any(Path(ns.keep).iterdir()):
            return f"--keep {ns.keep}: the directory is not empty"
    if getattr(ns, "max_disk", None) is not None:
        why = size_error("--max-disk", ns.max_disk)
        if why is not None:
            return why
    return program_error(ns.program)


def _ended(status: int) -> str:
    """How a process ended, as a person reads it: 'exited with status 3',
    or 'was killed by SIGKILL' for a negative status (a signal)."""
    if status < 0:
        try:
            return f"was killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"exited with status {status}"


def _stop(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Ends the capture's whole session: ``sig``, then SIGKILL when it has
    not ended a grace period later."""
    for send, grace in ((sig, TIMEOUT_GRACE), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, send)
            proc.wait(timeout=grace)
            return
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue


def threads_of(cap: CaptureFile) -> dict[int, int]:
    """The CPU threads each runtime's `qd.init` gave Quadrants
    (`cpu_max_num_threads`: Genesis gives it one), by runtime: a kernel
    whose parallel atomics hand out slots (a counting sort's) fills them in
    its threads' order, so the JIT replays it on as many."""
    out = {}
    for i, kwargs in enumerate(cap.get("init", [])):
        value = kwargs.get("cpu_max_num_threads", "")
        if value.isdigit() and int(value) > 0:
            out[i] = int(value)
    return out


def why_stopped(program: str, ended: int | None, timeout: float | None, cap: CaptureFile | None) -> str | None:
    """Why the capture holds fewer calls than the program would have made,
    in one line, or None when the program ran to its end: it outlived
    --timeout (``ended`` None), the capture failed, the program raised, was
    killed by a signal (in which call, when it was in one), or exited with
    a status other than 0."""
    if ended is None:
        return f"{program} did not finish within {timeout:g} s (--timeout)"
    if cap is None:
        return f"{program} {_ended(ended)}, and the capture wrote nothing" if ended else "the capture wrote nothing"
    if "capture_error" in cap:
        return cap["capture_error"]
    if "raised" in cap:  # KeyboardInterrupt too, which then ends it by SIGINT
        return f"{program} raised {cap['raised']}"
    if ended < 0:
        running = cap.get("running")
        during = f" during call {running['call']} ({running['kernel']})" if running else ""
        return f"{program} {_ended(ended)}{during}"
    if ended != 0:
        return f"{program} {_ended(ended)}"
    return None


def _missing_packages() -> list[str]:
    """The packages the bridge needs that this Python lacks."""
    import importlib.util

    return [m for m in ("numpy", "quadrants", "kiln") if importlib.util.find_spec(m) is None]


def run(ns: argparse.Namespace) -> int:
    why = _arguments_error(ns)
    if why is not None:
        return _usage_error(why)
    missing = _missing_packages()
    if missing:
        return _usage_error(
            f"{sys.executable} has no {' or '.join(missing)}: run `make quadrants` and `make python-module` (a venv under target/), "
            "or set KILN_QUADRANTS_PYTHON to a Python that has Quadrants 1.3.3, numpy and kiln"
        )
    found = tool_dir(dict(os.environ), Path(__file__).resolve().parent)
    if isinstance(found, str):
        print(f"{TOOL}: error: {found}", file=sys.stderr)
        return 1
    tools, how = found
    if ns.verbose:
        print(f"{TOOL}: using the tools in {tools} (found {how})", file=sys.stderr)
    if ns.keep is not None:
        work = _keep_dir(ns.keep)
        if isinstance(work, str):
            return _usage_error(work)
        return _run_in(work, ns, tools)
    with tempfile.TemporaryDirectory(prefix="kiln-quadrants.") as d:
        return _run_in(Path(d), ns, tools)


def _run_in(work: Path, ns: argparse.Namespace, tools: Path) -> int:
    replay = Replay(work, ns, tools)
    try:
        return _capture_and_replay(replay, ns)
    except KeyboardInterrupt:
        replay.write_manifest("interrupted")
        raise


def _capture_and_replay(replay: Replay, ns: argparse.Namespace) -> int:
    ended = replay.capture()
    # The capture writes capture.json before and after every call: a
    # program that ended early leaves every call it completed, and they are
    # checked. Both of the capture's files are checked as they are read
    # (the field table at the first import): never replayed from a record
    # records.py does not describe.
    path = replay.cap / "capture.json"
    try:
        cap = load_capture(path) if path.exists() else None
    except RecordError as e:
        return replay.stop(str(e))
    why = why_stopped(ns.program, ended, ns.timeout, cap)
    if cap is None or (why is not None and not cap["calls"]):
        return replay.stop(f"{why}: no call was captured" if cap is not None else str(why))
    if why is not None:
        n = len(cap["calls"])
        print(f"{TOOL}: error: {why}: checking the {n} call{'s' if n != 1 else ''} made before", file=sys.stderr)
    replay.threads = threads_of(cap)
    replay.open_values()
    try:
        for call in cap["calls"]:
            replay.replay_call(call)
    except RecordError as e:
        return replay.stop(str(e))
    budget = cap.get("budget", {})
    if "reached_at" in budget:
        replay.budget_reached = True
        n = len(cap["calls"])
        print(f"{TOOL}: note: the --max-disk {ns.max_disk} budget was reached at call {budget['reached_at']}: the values "
              f"of the {n} call{'s' if n != 1 else ''} before it were kept ({budget.get('kept', 0) / 2**20:.1f} MiB); "
              "the later calls ran unchecked", file=sys.stderr)
    for u in cap.get("unchecked", []):
        # The capture counts a derivative's calls under its label already.
        replay.report_for(u["init"], u["kernel"], u["where"], u.get("kernel_id")).unchecked += u["calls"]
    status = replay.report(f"{why}: these are the calls made before" if why is not None else None)
    # A program that did not run to its end fails the run, whatever its calls say.
    return 1 if why is not None else status


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog=TOOL, description="Run Quadrants programs through Kiln and check Kiln against Quadrants.")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser(
        "run",
        tool=TOOL,
        help="run an unmodified Quadrants program on the CPU, replay every kernel call in Kiln (JIT and interpreter) and compare",
        description="Runs PROGRAM.py with Quadrants on the CPU (fast_math off, IR printing on), imports each kernel with "
        "kiln-import, replays every call in process through import kiln (the JIT through the cache, and the interpreter) from the values "
        "Quadrants had before it, and compares: integers exactly, floats within --ulps "
        "(at each field's scale after a kernel whose parallel float atomics sum in any order). "
        "Exit status: 0 when everything agrees, 1 on a disagreement, a race (--check-races), a program that ends early "
        "(raises, exits with another status, is killed, outlives --timeout; its calls before are checked) "
        "or no Kiln tools found, "
        "2 when a kernel cannot be imported, and on bad usage (one line, found before anything is run).",
    )
    r.add_argument("--keep", metavar="DIR", help="keep the logs, each kernel's .kir, the values and DIR/manifest.json in DIR (empty or new); "
                   "the messages then name the files kept there")
    r.add_argument("-v", "--verbose", action="store_true", help="say on standard error which directory the Kiln tools are run from, "
                   "and which rule of the lookup order chose it: $KILN_BIN_DIR, beside an installed kiln-quadrants, "
                   "$PATH, or the newer of the checkout's target/release and target/debug")
    r.add_argument("--check-races", action="store_true", help="also replay on the interpreter with its race check and report every data race")
    r.add_argument("--cache-dir", metavar="DIR", help="the per-task cache the JIT replays through (default: kiln-run's)")
    # The numbers are taken as written and checked by _arguments_error,
    # which says what each takes.
    r.add_argument(
        "--calls",
        default=DEFAULT_CALLS,
        metavar="N",
        help=f"check the first N calls of each kernel; 0 checks every call (default {DEFAULT_CALLS})",
    )
    r.add_argument("--max-disk", metavar="SIZE", help="keep the capture's values within SIZE (500K, 10M, 2G): the first call "
                   "whose values might not fit, and every later one, runs unchecked, and a note says so (default: no limit)")
    r.add_argument("--ulps", default=DEFAULT_ULPS, metavar="N", help=f"float tolerance in units in the last place (default {DEFAULT_ULPS})")
    r.add_argument("--timeout", default=None, metavar="SECONDS",
                   help="stop a program that runs longer (SIGTERM, then SIGKILL after "
                   f"{TIMEOUT_GRACE:g} s) and check the calls it made before; exit 1 (default: no limit)")
    r.add_argument("program", metavar="PROGRAM.py")
    r.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS").required = False
    ns = ap.parse_args(argv)
    try:
        return run(ns)
    except KeyboardInterrupt:  # Ctrl-C: the program has been stopped too
        print(f"{TOOL}: error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Whoever read the report has gone (`| head`): nothing more to say,
        # and nothing for the interpreter to flush there at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
