"""Capture what Kiln's Quadrants importer needs from an unmodified Quadrants program.

The program runs in this process (runpy) with ``qd.init`` forced to the CPU
backend and to printing the IR after every pass, with debug info. For every
kernel call it keeps:

* the IR Quadrants printed while the call compiled (``calls/NNN-KERNEL.log``,
  everything the C++ side wrote to file descriptors 1 and 2, in order; kept
  gzipped, ``.log.gz``), and
  the importer's input cut out of it (``calls/NNN-KERNEL.offload.log``: the
  ``Start offload_to_executable:`` dump of each offloaded task);
* the scalar and ndarray arguments;
* every field's value, and every ndarray argument's, before and after the
  call (with ``--kiln-import``, once a kernel's compilations are imported,
  only those its KIR declares), each distinct value once (``pack.py``: the store ``values.pack``
  and its index ``values.idx``; a field a call leaves as it was costs
  nothing), within the ``--max-disk`` budget.

It writes ``fields.json`` (the field table: names, dtypes, shapes, SNode ids),
``capture.json`` (the run) and ``calls.jsonl`` (the calls, one line each,
appended as each ends: the cost of a call never grows with the calls
before it). docs/quadrants-ir.md describes the log and the files;
``records.py`` types their records.

The IR is printed by C++ straight to fd 1 (the statements) and fd 2 (the
stage labels, through the logger), never through ``sys.stdout``, so this
module captures at the file-descriptor level: both descriptors point at one
file during a call, which keeps each label in front of its dump. The
program's own ``sys.stdout`` and ``sys.stderr`` write onto duplicates of
them for the whole run, so that its output (a thread's, while a kernel
compiles) never lands among the IR; what else reaches the log and is not
IR is passed through after the call.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import gc
import importlib
import itertools
import json
import os
import re
import runpy
import signal
import sys
import traceback
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any, NamedTuple, NoReturn, TypedDict

from .records import (
    CALLS_FILE,
    RUNNING_FILE,
    Arg,
    ArgValue,
    Budget,
    Call,
    CaptureFile,
    FieldEntry,
    FieldTable,
    Forced,
    JsonScalar,
    JsonValue,
    KernelEntry,
    NdarrayArg,
    Param,
    ParamKind,
    Running,
    Unchecked,
    in_declared_order,
)

# qd.init options the capture forces, whatever the program asks for.
# offline_cache and src_ll_cache off: a kernel loaded from a cache is never
# compiled, so its IR is never printed. One compile thread: tasks of one
# kernel are compiled (and printed) one after the other, never interleaved.
FORCED_INIT: Forced = {
    "print_ir": True,
    "print_ir_dbg_info": True,
    "fast_math": False,
    "offline_cache": False,
    "src_ll_cache": False,
    "num_compile_threads": 1,
}

# The logger's line that names a stage: "[I 12/01/26 23:28:55.844 7779]
# [ir_printer.cpp:operator()@912] [saxpy_c60_0] Start offload_to_executable:".
# The .offload.log files keep it without the logger's prefix (no timestamp,
# so that committed captures do not churn): "[saxpy_c60_0] Start ...:".
STAGE_RE = re.compile(
    r"^(?:\[[A-Z] \d\d/\d\d/\d\d [0-9:.]+ \d+\] \[ir_printer\.cpp:[^\]]*\] )?"
    r"\[(?P<kernel>[^\]]+)\] (?P<stage>[^\[\]]*):$"
)
OFFLOAD_STAGE = "Start offload_to_executable"


def _flush_all() -> None:
    """Flush Python's and C's buffered standard streams before an fd switch."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or replaced stream: nothing to flush
            pass
    try:
        ctypes.CDLL(None).fflush(None)
    except Exception:
        pass


@contextmanager
def python_streams_apart() -> Iterator[None]:
    """For the block, Python's ``sys.stdout`` and ``sys.stderr`` write onto
    descriptors of their own, duplicates of fds 1 and 2: when a call points
    fds 1 and 2 at its log (``redirect_fds``), the program's output (a
    background thread's print while a kernel compiles) still goes where it
    went, never among the IR. One pair of streams for the whole run, never
    swapped per call: a thread's print is never split between two."""
    swapped: list[tuple[str, Any, Any]] = []
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = getattr(sys, name)
        try:
            onto_fd = stream.fileno() == fd
        except Exception:  # replaced already (a StringIO): not on fd
            onto_fd = False
        if onto_fd:
            stream.flush()
            own_fd = os.dup(fd)
            buffering = 1 if stream.line_buffering else -1
            own = open(own_fd, "w", buffering=buffering, encoding=stream.encoding, errors=stream.errors, closefd=False)
            swapped.append((name, stream, own))
            setattr(sys, name, own)
    try:
        yield
    finally:
        # The descriptors stay open: a thread of the program that outlives
        # its main module may still be printing through them.
        for name, stream, own in swapped:
            try:
                own.flush()
            except Exception:  # closed by the program: nothing to flush
                pass
            if getattr(sys, name) is own:  # unless the program set its own
                setattr(sys, name, stream)


@contextmanager
def redirect_fds(path: Path | None) -> Iterator[None]:
    """Point fds 1 and 2 at ``path`` (appending; /dev/null when None) for
    the block: what C and C++ write there, Quadrants' IR. Python's own
    streams write elsewhere while the program runs (``python_streams_apart``)."""
    _flush_all()
    target = os.open(str(path) if path else os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = (os.dup(1), os.dup(2))
    os.dup2(target, 1)
    os.dup2(target, 2)
    os.close(target)
    try:
        yield
    finally:
        _flush_all()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


class Dump(TypedDict):
    """One dump of a log: the compiled kernel's name and the stage from its
    label, and the dump's lines (none for a label alone)."""

    kernel: str
    stage: str
    lines: list[str]


class Log(NamedTuple):
    """A log cut into its dumps, and the lines that are not IR."""

    dumps: list[Dump]
    # Every line that is not the IR printer's: output that reached fds 1
    # and 2 during the call (a kernel's print, a subprocess's), in order.
    output: list[str]
    # Those of them found between a label and its dump: output written
    # while the kernel compiled, among the IR (they would have cut the
    # label from its dump).
    interleaved: list[str]
    # Those of them after the last dump (all of them when there is none):
    # what the kernel printed while it ran, once compiled.
    tail: list[str]


def read_log(text: str) -> Log:
    """Cut a log into its dumps, in order, and the lines that are not IR.

    A dump is the stage line, then ``kernel {`` up to the first line that is
    exactly ``}`` (the printer writes the wrapper's braces at column 0).
    The label is printed, and flushed, right before its dump, so a line
    between the two is not the printer's; nor is a line outside every
    dump that is not a label. A line written into a dump cannot be told
    from the dump's own (debug info may start anything at column 0:
    docs/quadrants-ir.md §1), and is left to the importer to refuse.
    """
    dumps: list[Dump] = []
    output: list[str] = []
    interleaved: list[str] = []
    tail: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = STAGE_RE.match(lines[i])
        i += 1
        if not m:
            output.append(lines[i - 1])
            tail.append(lines[i - 1])
            continue
        tail = []
        body: list[str] = []
        # A label's dump, after whatever else was written in between; a
        # label alone (the next stage's header of an .offload.log) has none.
        j = i
        while j < len(lines) and lines[j] != "kernel {" and not STAGE_RE.match(lines[j]):
            j += 1
        if j < len(lines) and lines[j] == "kernel {":
            output += lines[i:j]
            interleaved += lines[i:j]
            body.append(lines[j])
            i = j + 1
            while i < len(lines):
                body.append(lines[i])
                i += 1
                if body[-1] == "}":
                    break
        dumps.append({"kernel": m["kernel"], "stage": m["stage"], "lines": body})
    return Log(dumps, output, interleaved, tail)


# A line of Quadrants' own logger (`[W 12/05/26 01:52:50.799 23606] ...`),
# never a kernel's print.
LOGGER_RE = re.compile(r"^\[[TDIWEC] \d\d/\d\d/\d\d \d")


def printed_lines(log: Log) -> list[str]:
    """The lines a call's kernel printed while it ran: the log's output
    after its last IR dump (compiling comes first), without the logger's
    lines. Quadrants' own warnings are written while it compiles, before
    the last dump; a logger line after it is dropped in case."""
    return [ln for ln in log.tail if not LOGGER_RE.match(ln)]


def split_stages(text: str) -> list[Dump]:
    """A log's dumps, in order (``read_log``)."""
    return read_log(text).dumps


# The logger's levels, from the most verbose, and the letter its lines start with.
LOG_LEVELS = (("trace", "T"), ("debug", "D"), ("info", "I"), ("warn", "W"), ("error", "E"), ("critical", "C"))
# The level the IR printer's stage labels are logged at.
LABEL_LEVEL = "info"


@contextmanager
def stage_labels_logged() -> Iterator[list[str]]:
    """For the block, Quadrants' logger at ``LABEL_LEVEL`` at least: the IR
    printer logs its stage labels there, and a program may have set a
    quieter level (Genesis does), which would leave the dumps without
    them. Yields the levels the program had silenced (their lines are not
    passed through: ``silenced``); the program's level is put back after."""
    from quadrants import _logging

    names = [n for n, _ in LOG_LEVELS]
    now = next((n for n in names if _logging.is_logging_effective(n)), names[-1])
    if names.index(now) <= names.index(LABEL_LEVEL):
        yield []
        return
    _logging.set_logging_level(LABEL_LEVEL)
    try:
        yield names[names.index(LABEL_LEVEL):names.index(now)]
    finally:
        _logging.set_logging_level(now)


def silenced(line: str, levels: list[str]) -> bool:
    """Whether ``line`` is a logger's line of one of ``levels``."""
    letters = {letter for n, letter in LOG_LEVELS if n in levels}
    return bool(letters) and LOGGER_RE.match(line) is not None and line[1] in letters


def _compressed(out: Path, log_rel: str, text: str) -> str:
    """A compiled call's whole log, every stage of every task (a large
    program's run to hundreds of MB), gzipped in place of the log
    (`NNN-k.log.gz`, a tenth of it): its path. The importer reads the
    ``.offload.log`` cut out of it."""
    import gzip

    gz = log_rel + ".gz"
    with gzip.open(out / gz, "wt", compresslevel=1) as f:
        f.write(text)
    (out / log_rel).unlink()
    return gz


def _note_returns(entry: KernelEntry, kernel: Any) -> None:
    """The types ``kernel`` returns, in its table entry (when it returns)."""
    rets = getattr(kernel, "return_type", None) or ()
    if rets:
        entry["returns"] = [_type_name(r) for r in rets]


def _pass_through(lines: list[str]) -> None:
    """Lines of a call's log that are not IR, to standard output, where
    they were bound (unless the program closed it)."""
    if lines:
        try:
            sys.stdout.write("".join(line + "\n" for line in lines))
            sys.stdout.flush()
        except (OSError, ValueError):  # closed, or a pipe nobody reads
            pass


# A call of a real function (``qd.real_func``) in a dump: ``call "sq_143_0", args = {$2, $1}``.
CALL_RE = re.compile(r' = call "([^"]+)", args = \{')
FUNCTION_STAGE = "Initial IR"
FUNCTION_NEXT = "Access lowered"


def function_dumps(dumps: list[Dump]) -> dict[str, str]:
    """The dump of each real function (``qd.real_func``) a log compiles
    (its ``dumps``, as ``split_stages`` reads them), by
    its compiled name: its ``Initial IR`` dump whose next dump is its
    ``Access lowered`` (statement form, field accesses not yet lowered;
    its first ``Initial IR`` is in the frontend's syntax), then that next
    stage's header alone. kiln-import reads it (docs/quadrants-ir.md §5.3)."""
    out: dict[str, str] = {}
    for i, d in enumerate(dumps):
        if d["stage"] != FUNCTION_STAGE or not d["lines"]:
            continue
        nxt = next((n for n in dumps[i + 1 :] if n["kernel"] == d["kernel"]), None)
        if nxt is not None and nxt["stage"] == FUNCTION_NEXT:
            k = d["kernel"]
            out[k] = f"[{k}] {FUNCTION_STAGE}:\n" + "\n".join(d["lines"]) + f"\n[{k}] {FUNCTION_NEXT}:\n"
    return out


def _called(text: str, funcs: dict[str, str]) -> list[str]:
    """The real functions ``text`` calls, through the dumps in ``funcs`` too,
    in the order first called."""
    seen: list[str] = []
    todo = CALL_RE.findall(text)
    while todo:
        f = todo.pop(0)
        if f not in seen:
            seen.append(f)
            todo += CALL_RE.findall(funcs.get(f, ""))
    return seen


def offload_dumps(
    text: str,
    root: str | os.PathLike[str] | None = None,
    funcs: dict[str, str] | None = None,
    dumps: list[Dump] | None = None,
) -> str:
    """The ``Start offload_to_executable:`` dumps of a log (one per task), label lines kept,
    each followed by the header of its task's next stage (without its dump);
    before them, the dump of each real function the tasks call
    (``function_dumps``), from this log or, when an earlier call compiled
    it, from ``funcs``: each ``.offload.log`` holds every function its
    kernel reaches.

    Python file names under ``root`` (the working directory by default) are
    written relative to it, so that a capture does not depend on where the
    checkout or the virtual environment is. ``dumps``: the log's dumps
    when the caller has read them already (``split_stages``).
    """
    prefix = str(Path(root if root is not None else Path.cwd()).resolve()) + os.sep
    dumps = split_stages(text) if dumps is None else dumps
    known = {**(funcs or {}), **function_dumps(dumps)}
    parts = [known[f] for f in _called(text, known) if f in known]
    after: set[str] = set()  # kernels whose last dump kept was of the stage
    for d in dumps:
        if d["stage"] == OFFLOAD_STAGE:
            parts.append(f"[{d['kernel']}] {d['stage']}:\n" + "\n".join(d["lines"]) + "\n")
            after.add(d["kernel"])
        elif d["kernel"] in after:
            # The next stage's header alone: the evidence that the dump
            # before it is one task's, so kiln-import can tell a task
            # printed once from a dump repeated.
            parts.append(f"[{d['kernel']}] {d['stage']}:\n")
            after.discard(d["kernel"])
    return "".join(parts).replace(f'File "{prefix}', 'File "')


def _dtype_name(dt: Any) -> str:
    """Quadrants' spelling of a primitive type (``f32``, ``i64``, ``u8``)."""
    s = str(dt)
    return s.rsplit(".", 1)[-1]


def _stable_repr(v: Any) -> str:
    """``repr(v)``, or its type's name where the repr holds an address
    (``<... object at 0x...>``), so a capture is the same run after run."""
    r = repr(v)
    return type(v).__name__ if " at 0x" in r else r


def _free_name(want: str, place: int, taken: dict[str, int]) -> str:
    """`want`, else `want_2`, `want_3`, ... (for a field no name reaches,
    `field0`, `field1`, ...): the first name no other place of the runtime
    has."""
    names = (f"field{k}" for k in itertools.count()) if not want else itertools.chain(
        [want], (f"{want}_{k}" for k in itertools.count(2))
    )
    return next(n for n in names if taken.get(n, place) == place)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def kir_name(name: str) -> str:
    """The KIR name kiln-import gives a field or argument (its `sanitize`)."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return out if re.match(r"[A-Za-z_]", out) else "_" + out


def ALL(_name: str) -> bool:  # noqa: N802 (a constant, as a function)
    """Every value: what a call saves when which it needs is not known."""
    return True


# A kernel as the capture counts it: its runtime (the qd.init, from 0), its
# label (`k`, `k.grad`), where its function is defined, and Quadrants' number
# for the kernel object (the `c60` of its compiled name `k_c60_0`).
KernelKey = tuple[int, str, str | None, int | None]

# How a derivative kernel is reported: `k.grad` (reverse mode), `k.fwd`.
DERIVATIVE_SUFFIX = {"reverse": "grad", "forward": "fwd"}


def kernel_label(name: str, derivative: str | None) -> str:
    """A kernel's name as the capture counts it and the bridge reports it:
    `k`, or `k.grad` for its derivative of mode `derivative`."""
    return name if derivative is None else f"{name}.{DERIVATIVE_SUFFIX.get(derivative, derivative)}"


def _describe_field(f: Any) -> FieldEntry | None:
    """A field's entry in the table (its name still empty: `Capture._name`
    gives it), or None for one that cannot be described."""
    from quadrants.lang.field import ScalarField
    from quadrants.lang.matrix import MatrixField

    try:
        sn = f.snode
        place = sn.ptr.id
    except Exception:
        return None
    ancestors: list[int] = []
    kinds: list[str] = []
    # The C++ parent chain: after a tree is materialised, the Python
    # wrapper's parent() of a dense node answers a fresh, wrong root.
    p = sn.ptr.parent
    while p is not None:
        ancestors.append(int(p.id))
        kinds.append(str(p.type.name))
        p = p.parent
    if isinstance(f, MatrixField):
        kind = "matrix"
    elif isinstance(f, ScalarField):
        kind = "scalar"
    else:
        kind = type(f).__name__
    layout = permuted_layout(f)
    entry: FieldEntry = {
        "name": "",
        "dtype": _dtype_name(f.dtype),
        # The shape the SNodes have, which a kernel's IR indexes: for a
        # field of a permuted layout, its axes in memory order.
        "shape": physical_shape([int(s) for s in f.shape], layout),
        "place": int(place),
        "ancestors": ancestors,
        "ancestor_kinds": kinds,
        "kind": kind,
    }
    if layout is not None:
        entry["layout"] = layout
    if isinstance(f, MatrixField):
        entry["element_shape"] = [int(f.n), int(f.m)]
        # Each component's place SNode, row-major: a kernel's IR may
        # name any of them, and shifts in bytes by the stride.
        try:
            entry["components"] = [int(ScalarField(v).snode.ptr.id) for v in f.vars]
            stride = f._get_dynamic_index_stride()
            if stride is not None:
                entry["dynamic_index_stride"] = int(stride)
        except Exception:  # an older Quadrants: the first component only
            pass
    return entry


def permuted_layout(obj: Any) -> list[int] | None:
    """The axis permutation of a field or ndarray made with ``layout=`` (or
    ``order=``): memory axis ``p`` is the program's axis ``layout[p]``; None
    for the identity. Quadrants permutes the indices as it compiles, so the
    IR indexes the memory order while ``.shape`` and ``to_numpy()`` give the
    program's."""
    layout = getattr(obj, "_qd_layout", None)
    if layout is None:
        return None
    perm = [int(a) for a in layout]
    return None if perm == list(range(len(perm))) else perm


def physical_shape(shape: list[int], layout: list[int] | None) -> list[int]:
    """A shape in memory order (``permuted_layout``)."""
    return shape if layout is None or len(layout) != len(shape) else [shape[a] for a in layout]


def physical_value(obj: Any, arr: Any) -> Any:
    """``obj``'s value ``arr`` (``to_numpy()``'s, in the program's axis
    order) in memory order, the order its IR indexes; element axes (a
    vector's, a matrix's) stay last."""
    import numpy as np

    layout = permuted_layout(obj)
    if layout is None or arr.ndim < len(layout):
        return arr
    return np.ascontiguousarray(np.transpose(arr, layout + list(range(len(layout), arr.ndim))))


def _grad_of(f: Any) -> Any:
    """The gradient field of a field made with needs_grad=True, or None."""
    from quadrants.lang.field import Field

    try:
        g = f.grad
    except Exception:  # no gradient (or a Quadrants that refuses to say)
        return None
    return g if isinstance(g, Field) and g is not f else None


class CaptureFailed(BaseException):
    """The capture's own failure (not the program's, nor Quadrants'): its
    one line. A BaseException, so that the program's ``except Exception``
    does not take it for its kernel call's."""


@dataclass
class FieldInfo:
    obj: Any
    name: str
    entry: FieldEntry


@dataclass
class Capture:
    out: Path
    program: Path
    argv: list[str]
    calls: list[Call] = dc_field(default_factory=list)
    # Each runtime's kernels (by qd.init, from 0): a kernel's arguments by
    # its Python name, as fields.json lists them.
    kernels: dict[int, dict[str, KernelEntry]] = dc_field(default_factory=dict)
    # The log of each compilation (a kernel's, for one set of template
    # arguments) by (KernelKey, Quadrants' instance number): the log of a
    # call that compiled nothing is the one of the compilation it ran.
    last_log: dict[tuple[KernelKey, int | None], str] = dc_field(default_factory=dict)
    # By runtime (qd.init), the dump of each real function compiled so
    # far: a function is compiled once, by the first kernel that calls it,
    # and each later caller's .offload.log holds it too.
    functions: dict[int, dict[str, str]] = dc_field(default_factory=dict)
    # The function (`where`) that owns each kernel name's plain entry in a
    # runtime's table; another function of the name is keyed by its
    # compiled function name (`k_c62`), kept here once known.
    name_owner: dict[tuple[int, str], tuple[str | None, int | None]] = dc_field(default_factory=dict)
    table_key: dict[KernelKey, str] = dc_field(default_factory=dict)
    # The locals of the program's frame that made the call being captured
    # (a field made in a function is named after its local there).
    caller_locals: dict[str, Any] = dc_field(default_factory=dict)
    # Each runtime's field names given so far: name -> place, so that two
    # fields never share one (a second `x` is `x_2`).
    taken: dict[int, dict[str, int]] = dc_field(default_factory=dict)
    # How many calls of each kernel are captured (0: every one); the calls
    # past it run as they would without the capture, counted in `unchecked`
    # by (runtime, kernel, where).
    max_calls: int = 0
    counted: dict[KernelKey, int] = dc_field(default_factory=dict)
    unchecked: dict[KernelKey, int] = dc_field(default_factory=dict)
    # The kernel being called, and the instance number Quadrants chose for
    # the call (its ensure_compiled's key; None until it has).
    calling: tuple[Any, int | None] = (None, None)
    # id(ndarray) -> the argument it is (or is held by, as `arg.attr`), for
    # the runtime parameters Quadrants declares by an ndarray's id.
    nd_ids: dict[int, str] = dc_field(default_factory=dict)
    # Fields of a destroyed SNode tree (FieldsBuilder's `destroy()`), kept
    # alive by id: their SNodes are freed, and reading one would crash.
    dead: dict[int, Any] = dc_field(default_factory=dict)
    init_kwargs: list[dict[str, str]] = dc_field(default_factory=list)
    busy: bool = False  # inside our own snapshot or a captured call
    names: dict[int, str] = dc_field(default_factory=dict)  # id(field) -> global name, kept past the run
    generation: int = -1  # how many times qd.init ran, less one
    seen: dict[tuple[int, int], FieldEntry] = dc_field(default_factory=dict)  # (generation, place) -> entry
    # id(field member Expr) -> (the Expr, kept alive so that ids stay unique; generation)
    member_gen: dict[int, tuple[Any, int]] = dc_field(default_factory=dict)
    # The runtime parameters Quadrants declares while it compiles a kernel,
    # in its own numbering (what argload[i] and argaddr[i] count); each
    # compile pass ends at finalize_params, which moves them to `params`.
    declaring: list[Param] = dc_field(default_factory=list)
    params: list[Param] | None = None
    # What capture.json says of the run besides its calls: the call under
    # way, the program's uncaught exception, why the capture stopped.
    running: Running | None = None
    raised: str | None = None
    failure: str | None = None
    # The process that writes the files (a forked child does not), whether
    # it is writing them now (a SIGTERM then waits for the next write), each
    # written call's line, and fields.json as last written.
    pid: int = dc_field(default_factory=os.getpid)
    writing: bool = False
    written: int = 0  # calls appended to calls.jsonl
    table_text: str = ""
    head_text: str = ""  # capture.json as last written
    running_fd: int | None = None  # running.json, written in place
    # --max-disk in bytes (None: no limit), and the store of the values
    # (made at the first value saved).
    max_disk: int | None = None
    budget: Budget | None = None
    store: Any = None
    # kiln-import, to learn which fields each compilation reads or writes
    # (None: every field is saved); the KIR fields of each imported log
    # (None: it cannot be imported); calls not captured for want of them.
    kiln_import: str | None = None
    kir_fields: dict[str, set[str] | None] = dc_field(default_factory=dict)
    skipped: int = 0
    # live_fields() as last found, and what it was found for: the runtime,
    # and how many field members were made and trees destroyed by then (a
    # field is only ever made or destroyed through those).
    found: tuple[tuple[int, int, int], list[Any]] | None = None

    # -- the program's fields ---------------------------------------------

    def _globals(self) -> dict[str, Any]:
        main = sys.modules.get("__main__")
        return dict(vars(main)) if main is not None else {}

    def note_names(self, globs: dict[str, Any]) -> None:
        """Remember which global holds each field (the first name wins): a
        field is named as the global, a struct field's members and a
        `@qd.data_oriented` object's fields as `global.member`."""
        from quadrants.lang.field import Field
        from quadrants.lang.struct import StructField
        from quadrants.lang.util import is_data_oriented

        def note(name: str, v: Any, depth: int) -> None:
            v = _unwrapped(v)
            if isinstance(v, StructField):
                for key, member in v.field_dict.items():
                    note(f"{name}.{key}", member, depth)
            elif isinstance(v, Field):
                self.names.setdefault(id(v), name)
            elif depth < 2 and not isinstance(v, type) and is_data_oriented(v):
                for key, member in list(vars(v).items()):
                    if not key.startswith("_"):
                        note(f"{name}.{key}", member, depth + 1)

        for k, v in globs.items():
            if not k.startswith("__"):
                note(k, v, 0)

    def live_fields(self) -> list[Any]:
        """The field objects of the current runtime: looked for again only
        when a field was made or a tree destroyed since the last time (the
        search walks every object of the heap, too slow for every call)."""
        from quadrants.lang.field import Field

        now = (self.generation, len(self.member_gen), len(self.dead))
        if self.found is not None and self.found[0] == now:
            return self.found[1]
        # Only fields of the current runtime: after a second qd.init, the
        # old ones point at freed SNodes (reading them crashes or lies).
        # Every field member was made by create_field_member, which patch()
        # wraps to note the runtime it was made in.
        live = []
        for f in (o for o in gc.get_objects() if isinstance(o, Field)):
            if id(f) in self.dead:
                continue
            try:
                gens = {self.member_gen.get(id(v), (None, -2))[1] for v in f.vars}
            except Exception:  # a field that cannot be described: leave it out
                continue
            if gens == {self.generation}:
                live.append(f)
        self.found = (now, live)
        return live

    def fields(self) -> list[FieldInfo]:
        """Every live field, named after the global that holds it, by SNode
        id, described as it is now (a matrix field's stride is known once
        a kernel used it)."""
        self.note_names(self._globals())
        self.note_names(self.caller_locals)
        names = self.names
        infos = []
        for f in self.live_fields():
            entry = _describe_field(f)
            if entry is not None:
                infos.append(FieldInfo(f, names.get(id(f), ""), entry))
        infos.sort(key=lambda fi: fi.entry["place"])
        self._name(infos)
        # A field's gradient (needs_grad=True) is a field of its own, which
        # a derivative kernel reads and writes: named after its primal.
        grads = []
        places = {fi.entry["place"] for fi in infos}
        for fi in infos:
            g = _grad_of(fi.obj)
            entry = _describe_field(g) if g is not None else None
            if entry is not None and entry["place"] not in places:
                places.add(entry["place"])
                grads.append(FieldInfo(g, f"{fi.name}.grad", entry))
        self._name(grads)
        return sorted(infos + grads, key=lambda fi: fi.entry["place"])

    def _name(self, infos: list[FieldInfo]) -> None:
        """Names each field: the name it was first given in this runtime,
        else the name it wants (`fi.name`) made unique."""
        taken = self.taken.setdefault(self.generation, {})
        for fi in infos:
            place = fi.entry["place"]
            known = self.seen.get((self.generation, place))
            if known is not None:  # a field keeps the name it was first given
                fi.name = known["name"]
            else:
                fi.name = _free_name(fi.name, place, taken)
            taken[fi.name] = place
            fi.entry["name"] = fi.name
            self.seen[(self.generation, place)] = fi.entry

    def keeper(self, key: KernelKey, name: str, schema: list[Arg]) -> Callable[[str], bool]:
        """Which values (by field name, `arg:NAME`) a call of kernel ``key``
        saves: those its compilations read or write, once each of them has
        been imported (``kir_fields``); every value (``ALL``) until then,
        without kiln-import, for a kernel that one of them cannot be
        imported for, and for a kernel a call may compile anew (a template
        or ndarray argument: the new compilation's fields are not known
        before it runs)."""
        logs = [log for (k, _inst), log in self.last_log.items() if k == key]
        if self.kiln_import is None or not logs or any(a["kind"] in ("other", "ndarray") for a in schema):
            return ALL
        wanted: set[str] = set()
        for log in logs:
            if log not in self.kir_fields:
                self.kir_fields[log] = self._imported_fields(log)
            found = self.kir_fields[log]
            if found is None:
                return ALL
            wanted |= found
        return lambda k: (f"{name}.{kir_name(k[4:])}" if k.startswith("arg:") else kir_name(k)) in wanted

    def _imported_fields(self, log: str) -> set[str] | None:
        """The fields the KIR that kiln-import makes of ``log`` declares
        (with the table of the runtime as it stands), or None when it cannot
        be imported."""
        import subprocess
        import tempfile

        table: FieldTable = {
            "quadrants": _quadrants_version(),
            "fields": [e for (g, _p), e in sorted(self.seen.items()) if g == self.generation],
            "kernels": self.kernels.get(self.generation, {}),
        }
        with tempfile.TemporaryDirectory(prefix="kiln-capture.") as d:
            (Path(d) / "fields.json").write_text(json.dumps(table))
            r = subprocess.run([str(self.kiln_import), str(self.out / log), "--fields", str(Path(d) / "fields.json"),
                                "-o", str(Path(d) / "k.kir"), "--color=never"], capture_output=True, text=True)
            if r.returncode != 0:
                return None
            return set(re.findall(r"^\s*field @(\S+) :", (Path(d) / "k.kir").read_text(), re.M))

    def _values(self, fields: list[FieldInfo], nd: dict[str, Any], keep: Callable[[str], bool]) -> Iterator[tuple[str, Any]]:
        """Each field's and ndarray argument's value now (`arg:NAME` for an
        argument) that ``keep`` wants, one at a time, so that only one is
        held at once."""
        with redirect_fds(None):  # the readers are kernels too: their IR is noise here
            for fi in fields:
                if fi.entry["kind"] not in ("scalar", "matrix") or not keep(fi.name):
                    continue
                try:
                    arr = physical_value(fi.obj, fi.obj.to_numpy())
                except Exception:  # a sparse field that cannot be read whole, say
                    continue
                yield fi.name, arr
            for name, val in nd.items():
                if keep(f"arg:{name}"):
                    yield f"arg:{name}", physical_value(val, ndarray_value(val))

    def _snapshot(self, fields: list[FieldInfo], nd: dict[str, Any], n: int | None, keep: Callable[[str], bool]) -> dict[str, str] | None:
        """Stores every field's and ndarray argument's value (``pack.py``:
        a value stored already costs nothing); name -> blob id. Before call
        ``n`` (``n`` not None), None when its values, before and after,
        might not fit in --max-disk: nothing is stored then, and the
        budget says it was reached."""
        from .pack import Pack, blob_id

        if self.store is None:
            self.store = Pack(self.out, "values", self.max_disk)
        if n is None or self.max_disk is None:
            return {name: self.store.put(arr) for name, arr in self._values(fields, nd, keep)}
        # Held until they are known to fit: the values after the call may
        # all be new, so room for them is wanted too.
        now = list(self._values(fields, nd, keep))
        new = sum({bid: a.nbytes for _, a in now if (bid := blob_id(a)) not in self.store.known}.values())
        if not self.store.fits(new + sum(a.nbytes + 64 for _, a in now) + 64 * len(now)):
            if self.budget is not None and "reached_at" not in self.budget:
                self.budget["reached_at"] = n
                self.budget["kept"] = self.store.size
            return None
        return {name: self.store.put(arr) for name, arr in now}

    # -- kernel calls -----------------------------------------------------

    def _describe_args(
        self, kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[list[Arg], dict[str, ArgValue], dict[str, Any]]:
        """(schema for fields.json, values for capture.json, ndarray args by name)."""
        import inspect

        metas = list(kernel.arg_metas)
        bound: dict[str, Any] = {m.name: v for m, v in zip(metas, args, strict=False)}
        for m in metas:
            if m.name in kwargs:
                bound[m.name] = kwargs[m.name]
            elif m.name not in bound and m.default is not inspect.Parameter.empty:
                bound[m.name] = m.default
        schema: list[Arg] = []
        values: dict[str, ArgValue] = {}
        nds: dict[str, Any] = {}
        for m in metas:
            _describe_arg(m.name, m.annotation, bound.get(m.name), schema, values, nds, self.nd_ids)
        return schema, values, nds

    @contextmanager
    def own_work(self, during: str) -> Iterator[None]:
        """The capture's own work ``during`` a call (`in call 3 (k)`): an
        error in it is the capture's (CaptureFailed), never passed to the
        program as if its kernel call had raised it."""
        try:
            yield
        except Exception as e:
            self.failure = f"the capture failed {during}: {_one_line(e)}"
            raise CaptureFailed(self.failure) from e

    def wrap_call(self, orig_call: Any) -> Any:
        cap = self

        def __call__(kernel: Any, *args: Any, **kwargs: Any) -> Any:
            func = getattr(kernel, "func", None)
            module = getattr(func, "__module__", "") or ""
            internal = module.startswith("quadrants")
            if cap.busy or cap.failure is not None or os.getpid() != cap.pid:
                # Ours, or after the capture failed, or in a forked child
                # (whose copy of the capture is not the one written).
                return orig_call(kernel, *args, **kwargs)
            if internal:  # Quadrants' own (from_numpy, fill): its IR is noise
                return cap.run_unchecked(None, lambda: orig_call(kernel, *args, **kwargs))
            name = getattr(func, "__name__", None) or type(kernel).__name__
            code = getattr(func, "__code__", None)
            where = f"{Path(code.co_filename).name}:{code.co_firstlineno}" if code is not None else None
            mode = getattr(kernel, "autodiff_mode", None)
            # A derivative kernel (kernel.grad(), a Tape's backward pass) is
            # captured as any other, under its own key: its IR, its calls
            # and its arguments (the primal's) are its own.
            derivative = None if mode in (None, _NONE_MODE()) else str(getattr(mode, "name", mode)).lower()
            # Kernels are told apart by Quadrants' own number for the
            # kernel object (the `c60` of `fill_c60_0`): two made by one
            # factory share their name and where, never their number.
            number = getattr(kernel, "kernel_counter", None)
            kid = number if isinstance(number, int) else None
            primal = (cap.generation, name, where, kid)
            key = (cap.generation, kernel_label(name, derivative), where, kid)
            cap.counted[key] = cap.counted.get(key, 0) + 1
            if (cap.max_calls and cap.counted[key] > cap.max_calls) or (cap.budget is not None and "reached_at" in cap.budget):
                return cap.run_unchecked(key, lambda: orig_call(kernel, *args, **kwargs))
            cap.busy = True
            n = len(cap.calls) + cap.skipped
            during = f"in call {n} ({key[1]})"
            try:
                with cap.own_work(during):
                    # Said before the call, so that a program killed in it
                    # (a crash in Quadrants, a signal) is known to have been.
                    cap.running = {"kernel": key[1], "call": n}
                    if where is not None:
                        cap.running["where"] = where
                    cap.write()
                    cap.caller_locals = _program_locals()
                    tag = f"{n:03d}-{_safe(name)}"
                    cap.declaring, cap.params = [], None
                    schema, argvals, nds = cap._describe_args(kernel, args, kwargs)
                    fields = cap.fields()
                    keep = cap.keeper(key, name, schema)
                    compiled_before = {inst for (k, inst) in cap.last_log if k == key}
                    before = cap._snapshot(fields, nds, n, keep)
                    if before is not None:
                        log_rel = f"calls/{tag}.log"
                        (cap.out / "calls").mkdir(exist_ok=True)
                        redirect = redirect_fds(cap.out / log_rel)
                        redirect.__enter__()
                if before is None:
                    # Past --max-disk: this call and every later one run
                    # as they would without the capture, counted.
                    cap.running = None
                    cap.busy = False
                    return cap.run_unchecked(key, lambda: orig_call(kernel, *args, **kwargs))
                raised: BaseException | None = None
                try:
                    cap.busy = False
                    cap.calling = (kernel, None)
                    with stage_labels_logged() as quieter:
                        result = orig_call(kernel, *args, **kwargs)
                except BaseException as e:
                    raised = e
                finally:
                    cap.busy = True
                    with cap.own_work(during):
                        redirect.__exit__(None, None, None)
                with cap.own_work(during):
                    entry = cap.record_call(n, name, where, derivative, key, cap.calling[1], primal, log_rel, argvals, schema, kernel, quieter)
                    if raised is None:
                        cap.end_call(entry, before or {}, nds, keep, result)
                    else:
                        entry["error"] = _one_line(raised)
                    cap.keep_call(entry, key, keep is not ALL and cap.calling[1] not in compiled_before)
                if raised is not None:
                    raise raised
                return result
            finally:
                cap.busy = False

        __call__._kiln_wrapped = True  # type: ignore[attr-defined]
        return __call__

    def end_call(self, entry: Call, before: dict[str, str], nds: dict[str, Any], keep: Callable[[str], bool], result: Any) -> None:
        """A call that returned: its values after it (those ``keep`` wants,
        as before it), beside those before, and what it returned."""
        after = self._snapshot(self.fields(), nds, None, keep) or {}  # never None: no budget check
        entry["values"] = {k: {"before": before.get(k), "after": after.get(k)} for k in sorted(set(before) | set(after))}
        if result is not None:
            # The scalars returned, in order, as the kernel's `return` lists
            # them: a vector or matrix is its components, row-major, a
            # tuple its members'.
            entry["return"] = _flat(_jsonable(list(result) if isinstance(result, tuple) else [result]))

    def keep_call(self, entry: Call, key: KernelKey, unknown: bool) -> None:
        """The call complete, written before the program goes on; or, when
        it ran a compilation the kernel had not run before while only the
        fields of the others were saved (``unknown``), not checked, and its
        number not given again."""
        if unknown:
            self.unchecked[key] = self.unchecked.get(key, 0) + 1
            self.skipped += 1
        else:
            self.calls.append(entry)
        self.running = None
        self.write()

    def record_call(
        self,
        n: int,
        name: str,
        where: str | None,
        derivative: str | None,
        key: KernelKey,
        instance: int | None,
        primal: KernelKey,
        log_rel: str,
        argvals: dict[str, ArgValue],
        schema: list[Arg],
        kernel: Any,
        quieter: list[str],
    ) -> Call:
        """Call ``n``'s entry, from the log its compile printed (when it
        compiled), and the kernel's entry in its runtime's table.
        ``quieter``: the logger's levels the program had silenced, which
        the capture turned on for the call (``stage_labels_logged``)."""
        cap = self
        text = (cap.out / log_rel).read_text(errors="replace")
        log = read_log(text)
        stages = log.dumps
        compiled = bool(stages)
        # What else reached fds 1 and 2 in the call (a kernel's print, a
        # subprocess's output) is the program's: passed through, but for
        # the logger's lines the program had silenced.
        _pass_through([ln for ln in log.output if not silenced(ln, quieter)])
        if compiled:
            off_rel = log_rel.removesuffix(".log") + ".offload.log"
            funcs = cap.functions.setdefault(cap.generation, {})
            (cap.out / off_rel).write_text(offload_dumps(text, funcs=funcs, dumps=stages))
            funcs.update(function_dumps(stages))
            cap.last_log[(key, instance)] = off_rel
        # `log`: this call's, or when the kernel was already
        # compiled (no IR this time), the log of the call that
        # compiled it, which still describes it.
        entry: Call = {"kernel": name, "call": n, "log": cap.last_log.get((key, instance)), "compiled": compiled, "args": argvals}
        if derivative is not None:  # which derivative of the kernel
            entry["derivative"] = derivative
        if cap.generation > 0:  # after a second qd.init: which runtime ran it
            entry["init"] = cap.generation
        if where is not None:  # which function, when two share a name
            entry["where"] = where
        if key[3] is not None:  # which kernel, when two share both
            entry["kernel_id"] = key[3]
        if instance is not None:  # which compilation of it
            entry["instance"] = instance
        if compiled:
            # The name the log's stage lines use, e.g. saxpy_c60_0.
            entry["compiled_name"] = stages[0]["kernel"]
            entry["tasks"] = sum(1 for d in stages if d["stage"] == OFFLOAD_STAGE)
            entry["full_log"] = _compressed(cap.out, log_rel, text)
        elif not text:
            (cap.out / log_rel).unlink()
        else:
            entry["output"] = log_rel
        if log.interleaved:  # left out of the dumps, and said
            entry["interleaved"] = log.interleaved
        printed = printed_lines(log)
        if printed:  # what the kernel printed, compared as a multiset
            entry["printed"] = printed
        kernels = cap.kernels.setdefault(cap.generation, {})
        # A derivative takes its primal's arguments.
        tkey = cap.kernel_table_key(primal, entry.get("compiled_name"))
        if tkey is not None and tkey not in kernels:
            kernels[tkey] = {"args": schema}
        if tkey is not None and compiled and cap.params is not None:
            params = _bind_params(cap.params, schema, cap.nd_ids)
            if "params" not in kernels[tkey]:
                kernels[tkey]["params"] = params
                _note_returns(kernels[tkey], kernel)
            elif kernels[tkey]["params"] != params or kernels[tkey]["args"] != schema:
                # Another compilation of the kernel (other template
                # arguments) numbers its parameters its own way: keyed by
                # its compiled name (`k_c62_1`), which kiln-import tries first.
                own: KernelEntry = {"args": schema, "params": params}
                _note_returns(own, kernel)
                kernels.setdefault(stages[0]["kernel"], own)
        return entry

    def patch(self) -> None:
        import quadrants as qd

        misc = importlib.import_module("quadrants.lang.misc")
        kmod = importlib.import_module("quadrants.lang.kernel")
        orig_init = misc.init
        cap = self

        def init(arch: Any = None, *args: Any, **kwargs: Any) -> Any:
            cap.init_kwargs.append({"arch": str(arch), **{k: repr(v) for k, v in kwargs.items()}})
            cap.generation += 1
            # Python may reuse the ids of the last runtime's fields.
            cap.names.clear()
            kwargs.update(FORCED_INIT)
            return orig_init(qd.cpu, *args, **kwargs)

        init.__doc__ = orig_init.__doc__
        impl = importlib.import_module("quadrants.lang.impl")
        orig_member = impl.create_field_member

        def create_field_member(*args: Any, **kwargs: Any) -> Any:
            made = orig_member(*args, **kwargs)
            primal = made[0]
            cap.member_gen[id(primal)] = (primal, cap.generation)
            return made

        impl.create_field_member = create_field_member  # type: ignore[attr-defined]
        self.patch_destroy()
        self.patch_params()
        for mod in (qd, misc, importlib.import_module("quadrants.lang")):
            if getattr(mod, "init", None) is orig_init:
                mod.init = init  # type: ignore[union-attr]
        if not getattr(kmod.Kernel.__call__, "_kiln_wrapped", False):
            kmod.Kernel.__call__ = self.wrap_call(kmod.Kernel.__call__)
        if not getattr(kmod.Kernel.ensure_compiled, "_kiln_wrapped", False):
            orig_ensure = kmod.Kernel.ensure_compiled

            def ensure_compiled(kernel: Any, *py_args: Any) -> Any:
                # Which compilation of the kernel the call runs: Quadrants'
                # instance number for its template arguments.
                key = orig_ensure(kernel, *py_args)
                if cap.calling[0] is kernel and isinstance(key, tuple) and len(key) > 1 and isinstance(key[1], int):
                    cap.calling = (kernel, key[1])
                return key

            ensure_compiled._kiln_wrapped = True  # type: ignore[attr-defined]
            kmod.Kernel.ensure_compiled = ensure_compiled

    def patch_destroy(self) -> None:
        """Notes the fields of an SNode tree as it is destroyed (while its
        SNodes can still be asked which tree they are in): never read again."""
        from quadrants.lang.field import Field

        tree_cls = importlib.import_module("quadrants._snode.snode_tree").SNodeTree
        if getattr(tree_cls.destroy, "_kiln_wrapped", False):
            return
        orig = tree_cls.destroy
        cap = self

        def destroy(tree: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                tid = tree.ptr.id()
                for o in gc.get_objects():
                    if isinstance(o, Field) and id(o) not in cap.dead:
                        try:
                            if o.snode.ptr.get_snode_tree_id() == tid:
                                cap.dead[id(o)] = o
                        except Exception:  # a field of no tree, or of a freed one
                            pass
            except Exception:  # a tree already gone: Quadrants says so below
                pass
            return orig(tree, *args, **kwargs)

        destroy._kiln_wrapped = True  # type: ignore[attr-defined]
        tree_cls.destroy = destroy

    def patch_params(self) -> None:
        """Records each runtime parameter Quadrants declares as it compiles
        a kernel, with the number it gave it: the numbering skips template
        arguments and flattens dataclasses, so only Quadrants knows it."""
        core = importlib.import_module("quadrants._lib.core.quadrants_python")
        kcls = core.KernelCxx
        if getattr(kcls, "_kiln_params", False):
            return
        cap = self

        def record(kind: ParamKind, orig: Any) -> Any:
            def declare(this: Any, *args: Any, **kwargs: Any) -> Any:
                ids = orig(this, *args, **kwargs)
                name = args[2] if kind == "ndarray" else args[1]
                # A kernel's own parameter is numbered by a path of one id
                # (`[n]`). The table's `id` is one number (kiln-import reads
                # no other), so a longer path is left out, and kiln-import
                # says the argument that uses it is not in the table.
                number = ids[0] if isinstance(ids, (list, tuple)) and len(ids) == 1 else ids
                if isinstance(number, int) and not isinstance(number, bool):
                    cap.declaring.append({"id": number, "name": str(name), "kind": kind})
                return ids

            return declare

        for meth, kind in PARAM_KINDS.items():
            if hasattr(kcls, meth):
                setattr(kcls, meth, record(kind, getattr(kcls, meth)))
        orig_finalize = kcls.finalize_params

        def finalize_params(this: Any, *args: Any, **kwargs: Any) -> Any:
            cap.params, cap.declaring = cap.declaring, []
            return orig_finalize(this, *args, **kwargs)

        kcls.finalize_params = finalize_params
        kcls._kiln_params = True

    def kernel_table_key(self, key: KernelKey, compiled_name: str | None) -> str | None:
        """The key of the kernel's arguments in its runtime's table: its
        Python name for the first function of that name, else its compiled
        function name (`k_c62` of `k_c62_0`), which kiln-import tries
        first; None until a call of it has compiled."""
        gen, name, where, kid = key
        owner = self.name_owner.setdefault((gen, name), (where, kid))
        if owner == (where, kid):
            return name
        if compiled_name and key not in self.table_key:
            self.table_key[key] = compiled_name.rsplit("_", 1)[0]
        return self.table_key.get(key)

    def run_unchecked(self, key: KernelKey | None, call: Any) -> Any:
        """A call not captured (past `max_calls`, counted under `key`, or
        Quadrants' own): run as it would be without the capture (no values
        saved). Its output passes through, but for the IR dumps a compile
        prints (forced on)."""
        if key is not None:
            self.unchecked[key] = self.unchecked.get(key, 0) + 1
        during = f"around a call of {key[1]} past --calls" if key is not None else "around a call of Quadrants' own"
        scratch = self.out / "calls" / "unchecked.log"
        with self.own_work(during):
            scratch.parent.mkdir(exist_ok=True)
            scratch.write_text("")
            redirect = redirect_fds(scratch)
            redirect.__enter__()
        try:
            return call()
        finally:
            with self.own_work(during):
                redirect.__exit__(None, None, None)
                text = scratch.read_text(errors="replace")
                scratch.unlink()
                _pass_through(read_log(text).output)

    # -- outputs ----------------------------------------------------------

    def write(self, final: bool = False) -> None:
        """Writes fields.json and capture.json as they stand: before and
        after every call, so that a program that ends abruptly (os._exit,
        a signal, a crash in Quadrants) leaves every call it completed, and
        says which call it was in. Each file is replaced whole (written
        aside, then renamed), never left half-written; fields.json only
        when it changed. ``final``: the program has ended, so the fields it
        made after its last call are listed too. A forked child's copy of
        the capture writes nothing."""
        if os.getpid() != self.pid or self.writing:
            return
        self.writing = True
        try:
            if final:
                try:
                    self.fields()  # those made after the last call too
                except Exception:
                    pass
            # A program that called qd.init more than once has fields of each
            # runtime; SNode ids start again in each, so say which runtime.
            fields: list[FieldEntry] = []
            for (gen, _place), entry in sorted(self.seen.items()):
                if self.generation > 0:
                    entry = entry.copy()
                    entry["init"] = gen
                fields.append(entry)
            table: FieldTable = {
                "quadrants": _quadrants_version(),
                "fields": fields,
                "kernels": self.kernels.get(0, {}),
            }
            if self.generation > 0:  # the kernels of each later runtime
                table["runtimes"] = [{"init": g, "kernels": self.kernels.get(g, {})} for g in range(1, self.generation + 1)]
            text = _dump_table(table)
            if text != self.table_text:
                _replace(self.out / "fields.json", text)
                self.table_text = text
            cap: CaptureFile = {
                "program": str(self.program),
                "argv": self.argv,
                "init": self.init_kwargs,
                "forced": FORCED_INIT,
                "calls": [],  # calls.jsonl's
            }
            if self.unchecked:  # calls past --calls, by kernel
                cap["unchecked"] = []
                for (g, k, w, kid), n in sorted(self.unchecked.items(), key=str):
                    u: Unchecked = {"kernel": k, "init": g, "where": w, "calls": n}
                    if kid is not None:
                        u["kernel_id"] = kid
                    cap["unchecked"].append(u)
            self._say_running()
            if self.raised is not None:
                cap["raised"] = self.raised
            if self.failure is not None:
                cap["capture_error"] = self.failure
            if self.budget is not None:
                cap["budget"] = self.budget
            # Each call's line is written once, when the call ends (and
            # flushed: it outlives os._exit), never rewritten: writing costs
            # the same at the ten-thousandth call as at the first.
            self._append_calls()
            text = _dump_capture(cap)
            if text != self.head_text:  # a rename costs milliseconds on some file systems
                _replace(self.out / "capture.json", text)
                self.head_text = text
        finally:
            self.writing = False


    def _say_running(self) -> None:
        """running.json: the call under way, or nothing between calls.
        Written in place, in one write of a few bytes (never renamed, which
        costs milliseconds a call on some file systems); a reader that
        finds it torn (the program killed as it was written) reads no call
        under way."""
        if self.running_fd is None:
            self.running_fd = os.open(self.out / RUNNING_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        data = (json.dumps(self.running) + "\n").encode() if self.running is not None else b""
        os.pwrite(self.running_fd, data, 0)
        os.ftruncate(self.running_fd, len(data))

    def _append_calls(self) -> None:
        """The calls ended since the last write, appended to calls.jsonl
        (made, empty, at the first write), one line each."""
        one = lambda v: json.dumps(v, separators=(", ", ": "))  # noqa: E731
        lines = "".join(one(in_declared_order(c, Call)) + "\n" for c in self.calls[self.written:])
        if lines or self.written == 0:
            with open(self.out / CALLS_FILE, "a") as f:
                f.write(lines)
        self.written = len(self.calls)


def _replace(path: Path, text: str) -> None:
    """``path`` holding ``text``, replaced whole: written aside, then renamed
    over it, so that a reader (or a program killed meanwhile) never finds it
    half-written."""
    aside = path.with_name(path.name + ".part")
    aside.write_text(text)
    os.replace(aside, path)


def _dump_table(table: FieldTable) -> str:
    """fields.json with one field, and one kernel argument, per line (diffable, short)."""
    one = lambda v: json.dumps(v, separators=(", ", ": "))  # noqa: E731
    lines = ["{", f' "quadrants": {one(table["quadrants"])},', ' "fields": [']
    lines += [f"  {one(f)}," for f in table["fields"]]
    if table["fields"]:
        lines[-1] = lines[-1][:-1]
    lines.append(" ],")
    lines.append(' "kernels": {')
    lines += _dump_kernels(table["kernels"], "  ")
    if "runtimes" in table:
        lines.append(" },")
        lines.append(' "runtimes": [')
        for i, rt in enumerate(table["runtimes"]):
            lines.append(f'  {{"init": {rt["init"]}, "kernels": {{')
            lines += _dump_kernels(rt["kernels"], "   ")
            lines.append("  }}" + ("," if i + 1 < len(table["runtimes"]) else ""))
        lines.append(" ]")
    else:
        lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dump_kernels(kernels: dict[str, KernelEntry], pad: str) -> list[str]:
    """A kernels object's members, one argument per line."""
    one = lambda v: json.dumps(v, separators=(", ", ": "))  # noqa: E731
    lines = []
    ks = list(kernels.items())
    for i, (name, k) in enumerate(ks):
        rets = f', "returns": {one(k["returns"])}' if "returns" in k else ""
        rets += f', "params": {one(k["params"])}' if "params" in k else ""
        lines.append(f"{pad}{one(name)}: {{\"args\": [")
        args = [f"{pad} {one(a)}," for a in k["args"]]
        if args:
            args[-1] = args[-1][:-1]
        lines += args
        lines.append(f"{pad}]{rets}}}" + ("," if i + 1 < len(ks) else ""))
    return lines


def _dump_capture(cap: CaptureFile) -> str:
    """capture.json without its calls (calls.jsonl holds them), one key a
    line, in the order `records.CaptureFile` declares them."""
    one = lambda v: json.dumps(v, separators=(", ", ": "))  # noqa: E731
    head = [f" {one(k)}: {one(v)}" for k, v in in_declared_order(cap, CaptureFile).items() if k != "calls"]
    return "{\n" + ",\n".join(head) + "\n}\n"


def _NONE_MODE() -> Any:
    from quadrants.lang.kernel_impl import _NONE

    return _NONE


def _unwrapped(v: Any) -> Any:
    """The ndarray or field a ``qd.Tensor`` (``qd.tensor()``'s) wraps; any
    other value as it is."""
    unwrap = getattr(v, "_unwrap", None)
    return unwrap() if callable(unwrap) and type(v).__module__.startswith("quadrants") else v


def _is_torch(v: Any) -> bool:
    """Whether ``v`` is a torch tensor (without importing torch)."""
    return type(v).__module__.startswith("torch") and hasattr(v, "detach")


def _numpy_dtype(dt: Any) -> Any:
    """numpy's dtype for a numpy or torch dtype (``torch.float32``:
    ``float32``); TypeError for one numpy has not (``bfloat16``)."""
    import numpy as np

    try:
        return np.dtype(dt)
    except TypeError:
        return np.dtype(str(dt).rsplit(".", 1)[-1])


def ndarray_value(v: Any) -> Any:
    """An ndarray argument's value as a numpy array of its own (a copy): a
    Quadrants ndarray's, a torch tensor's or a numpy array's."""
    import numpy as np

    if _is_torch(v):
        return np.array(v.detach().cpu().numpy(), copy=True)
    return v.to_numpy() if hasattr(v, "to_numpy") else np.array(v, copy=True)


def _np_to_qd(dt: Any) -> str:
    import numpy as np

    dt = np.dtype(dt)
    kind = {"f": "f", "i": "i", "u": "u", "b": "u"}[dt.kind]
    return f"{kind}{dt.itemsize * 8}" if dt.kind != "b" else "u1"


# The dtype Quadrants declares a parameter annotated with a Python type as.
PYTHON_SCALARS: dict[Any, str] = {int: "i32", float: "f32", bool: "u1"}


def _describe_arg(
    name: str, ann: Any, v: Any, schema: list[Arg], values: dict[str, ArgValue], nds: dict[str, Any], nd_ids: dict[int, str]
) -> None:
    """One argument's entry in fields.json (`schema`) and capture.json
    (`values`), and its value in `nds` when it is an ndarray (`nd_ids`
    maps its id to `name`). A dataclass is its members, each an argument
    named `arg.member` (Quadrants declares one runtime parameter per
    member); so are the ndarrays a template argument holds (a
    `@qd.data_oriented` object's), which Quadrants declares by their id."""
    import dataclasses

    import numpy as np
    from quadrants.lang._ndarray import Ndarray
    from quadrants.lang.matrix import MatrixType
    from quadrants.lang.struct import StructType
    from quadrants.types import ndarray_type, primitive_types

    v = _unwrapped(v)
    if isinstance(ann, ndarray_type.NdarrayType) or isinstance(v, (np.ndarray, Ndarray)) or _is_torch(v):
        # numpy's and torch's dtypes are spelt as Quadrants spells its own.
        dt = _dtype_name(v.dtype) if isinstance(v, Ndarray) else _np_to_qd(_numpy_dtype(v.dtype))
        shape = physical_shape([int(s) for s in v.shape], permuted_layout(v))
        entry: NdarrayArg = {"name": name, "kind": "ndarray", "dtype": dt, "shape": shape}
        # An ndarray of vectors or matrices: its elements' axes, the
        # trailing axes of its numpy value.
        element = [int(s) for s in getattr(v, "element_shape", ()) or ()]
        if element and not isinstance(v, np.ndarray):
            entry["element_shape"] = element
        schema.append(entry)
        values[name] = {"kind": "ndarray", "dtype": dt, "shape": shape}
        nds[name] = v
        nd_ids[id(v)] = name
    elif any(ann is t for t in primitive_types.all_types) or ann in PYTHON_SCALARS:
        dt = PYTHON_SCALARS[ann] if ann in PYTHON_SCALARS else _dtype_name(ann)
        schema.append({"name": name, "kind": "scalar", "dtype": dt})
        values[name] = {"kind": "scalar", "dtype": dt, "value": _as_dtype(_scalar(v), dt)}
    elif isinstance(ann, (StructType, MatrixType)) and v is not None:
        # Quadrants passes a vector or matrix by value as a struct of its
        # components.
        leaves = _struct_leaves(ann, v) if isinstance(ann, StructType) else _matrix_leaves(ann, v)
        schema.append({"name": name, "kind": "struct", "members": [d for d, _ in leaves]})
        values[name] = {"kind": "struct", "members": [x for _, x in leaves]}
    elif dataclasses.is_dataclass(ann) and v is not None:
        for f in dataclasses.fields(ann):
            _describe_arg(f"{name}.{f.name}", f.type, getattr(v, f.name, None), schema, values, nds, nd_ids)
    else:
        schema.append({"name": name, "kind": "other", "annotation": _stable_repr(ann)})
        values[name] = {"kind": "other", "repr": repr(v)}
        for key, member in _held_ndarrays(v):
            _describe_arg(f"{name}.{key}", None, member, schema, values, nds, nd_ids)


def _held_ndarrays(v: Any, depth: int = 0) -> list[tuple[str, Any]]:
    """The ndarrays an object passed as a template holds in its attributes
    (a `@qd.data_oriented` object's, nested ones to two levels), by path."""
    from quadrants.lang._ndarray import Ndarray
    from quadrants.lang.util import is_data_oriented

    if depth > 1 or isinstance(v, type) or not (is_data_oriented(v) or dataclasses.is_dataclass(v)):
        return []
    out = []
    for key, member in list(vars(v).items()):
        if isinstance(member, Ndarray):
            out.append((key, member))
        else:
            out += [(f"{key}.{k}", m) for k, m in _held_ndarrays(member, depth + 1)]
    return out


def _struct_leaves(ann: Any, v: Any) -> list[tuple[str, JsonScalar]]:
    """A struct value's scalars depth first, with their dtypes: Quadrants'
    order of the struct type's members (a vector or matrix member is its
    components, row-major)."""
    from quadrants.lang.matrix import MatrixType
    from quadrants.lang.struct import StructType

    out: list[tuple[str, JsonScalar]] = []
    for key, dt in ann.members.items():
        x = v[key]
        if isinstance(dt, StructType):
            out += _struct_leaves(dt, x)
        elif isinstance(dt, MatrixType):
            out += _matrix_leaves(dt, x)
        else:
            out.append((_dtype_name(dt), _scalar(x)))
    return out


def _as_dtype(x: JsonScalar, dt: str) -> JsonScalar:
    """A Python `bool` passed for a number (`True` for an `i32`) as the
    number Quadrants makes of it (1); any other value as it is."""
    if isinstance(x, bool) and dt != "u1":
        return float(x) if dt.startswith("f") else int(x)
    return x


def _flat(v: JsonValue) -> list[JsonScalar]:
    """The scalars of nested lists, in order."""
    return [x for e in v for x in _flat(e)] if isinstance(v, list) else [v]


def _type_name(t: Any) -> str:
    """A return type's name: a primitive's (``f32``), a vector's or
    matrix's element type and shape (``f32[3]``, ``f32[2, 2]``)."""
    shape = getattr(t, "get_shape", None)
    if callable(shape) and hasattr(t, "dtype"):
        return f"{_dtype_name(t.dtype)}{list(shape())}"
    return _dtype_name(t)


def _matrix_leaves(ann: Any, v: Any) -> list[tuple[str, JsonScalar]]:
    """A vector's or matrix's components, row-major, with their dtype."""
    import numpy as np

    arr = np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v).reshape(-1)
    return [(_dtype_name(ann.dtype), _scalar(e)) for e in arr]


def _jsonable(v: Any) -> JsonValue:
    """A Python, numpy or Quadrants value as JSON holds it: a scalar, a
    list (nested for a matrix), or the repr of anything else."""
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    out: JsonValue
    try:
        import numpy as np

        if isinstance(v, np.generic):
            out = v.item()
            return out
        if isinstance(v, np.ndarray):
            out = v.tolist()
            return out
        if callable(getattr(v, "to_numpy", None)):  # a Quadrants vector or matrix value
            out = np.asarray(v.to_numpy()).tolist()
            return out
    except Exception:
        pass
    return repr(v)


def _scalar(v: Any) -> JsonScalar:
    """A scalar's value as JSON holds it (`_jsonable`); the repr of a value
    that is a list there (Quadrants refuses such a call)."""
    x = _jsonable(v)
    return repr(v) if isinstance(x, list) else x


# What --max-disk's suffixes multiply by.
SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int | None:
    """A size as --max-disk takes it (`500K`, `10M`, `2G`, `1T`, or bytes;
    a `B` or `iB` may follow the letter, any case; binary units), or None
    when ``text`` is not one."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(?:i?b)?\s*", text, re.I)
    if m is None:
        return None
    return int(float(m.group(1)) * SIZE_UNITS[m.group(2).upper()])


def size_error(option: str, text: str) -> str | None:
    """Why ``text`` is not a size ``option`` takes, or None."""
    n = parse_size(text)
    if n is None or n <= 0:
        return f"{option} takes a size above 0, as 500K, 10M or 2G, not {text!r}"
    return None


def run(
    program: str | os.PathLike[str],
    argv: list[str],
    out_dir: str | os.PathLike[str],
    max_calls: int = 0,
    max_disk: int | None = None,
    kiln_import: str | None = None,
) -> int:
    """Run ``program`` with ``argv`` under capture into ``out_dir``,
    capturing the first ``max_calls`` calls of each kernel (0: all), their
    values within ``max_disk`` bytes (None: no limit); the
    exit status: the program's (1 when it raised), 1 when the capture
    failed (``capture_error`` in capture.json says how), or minus SIGINT
    when the program was interrupted (KeyboardInterrupt)."""
    # Absolute: the program may change directory.
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    program = Path(program)
    cap = Capture(out=out, program=program, argv=list(argv), max_calls=max_calls, max_disk=max_disk, kiln_import=kiln_import)
    if max_disk is not None:
        cap.budget = {"limit": max_disk}
    # A fresh store and list of calls, whatever an earlier capture left here.
    for name in ("values.pack", "values.idx", CALLS_FILE, RUNNING_FILE):
        (out / name).unlink(missing_ok=True)
    # Quadrants' own failure before the program runs (a broken install; its
    # banner printed to a closed pipe) is said as Quadrants', in one line.
    try:
        importlib.import_module("quadrants")
    except Exception as e:
        cap.failure = f"Quadrants could not be imported: {_one_line(e)}"
    if cap.failure is None:
        try:
            cap.patch()
        except Exception as e:
            cap.failure = f"the capture could not hook into Quadrants: {_one_line(e)}"
    cap.write()  # a program that ends before its first call leaves its record too
    if cap.failure is not None:
        return 1
    old_argv, old_path = sys.argv[:], sys.path[:]
    sys.argv = [str(program), *argv]
    sys.path.insert(0, str(program.resolve().parent))
    status = 0
    orig_exit = os._exit

    def _exit(code: int) -> None:  # the calls past --calls and the fields made since the last call
        try:
            cap.write(final=True)
        finally:
            orig_exit(code)

    def on_sigterm(signum: int, _frame: Any) -> None:
        # Stopped from outside (`kiln-quadrants run --timeout`): the calls
        # past --calls since the last write are counted, then the program
        # ends as SIGTERM ends it, unwinding nothing (as without the capture).
        signal.signal(signum, signal.SIG_DFL)
        cap.write()
        os.kill(os.getpid(), signum)

    os._exit = _exit  # type: ignore[assignment]
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        with python_streams_apart():
            cap.note_names(runpy.run_path(str(program), run_name="__main__"))
    except SystemExit as e:
        code = e.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        if code not in (None, 0) and not isinstance(code, int):
            print(code, file=sys.stderr)
    except CaptureFailed:
        status = 1  # cap.failure says how: the caller's line
    except BaseException as e:
        _print_program_traceback(e, program)
        cap.raised = _one_line(e)
        status = -signal.SIGINT if isinstance(e, KeyboardInterrupt) else 1
    finally:
        sys.argv, sys.path[:] = old_argv, old_path
        os._exit = orig_exit
        cap.write(final=True)
    # A failure the program caught (it is a BaseException) still fails the capture.
    return 1 if cap.failure is not None and status == 0 else status


def _quadrants_version() -> str:
    """The version of the Quadrants imported (`1.3.3`), or `unknown`."""
    version = getattr(sys.modules.get("quadrants"), "__version__", None)
    return ".".join(map(str, version)) if isinstance(version, tuple) else "unknown"


def _one_line(e: BaseException) -> str:
    """An exception as one line: its type and its message's last line
    (Quadrants puts its own stack trace first)."""
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[-1].strip()}" if lines else type(e).__name__


def _program_locals() -> dict[str, Any]:
    """The locals of the innermost frame of the program's own code (not
    Quadrants', not ours) on the stack: the function that called the kernel."""
    f: types.FrameType | None = sys._getframe(1)
    here = str(Path(__file__).resolve().parent)
    while f is not None:
        mod = f.f_globals.get("__name__", "") or ""
        path = f.f_code.co_filename
        if not mod.startswith("quadrants") and not path.startswith(here) and not path.startswith("<"):
            return dict(f.f_locals) if f.f_code.co_name != "<module>" else {}
        f = f.f_back
    return {}


def _print_program_traceback(e: BaseException, program: Path) -> None:
    """The traceback as Python prints it for the program alone: from the
    program's first frame on, without the bridge's own frames (runpy's, the
    capture's wrapper around each kernel call), in every exception of the
    chain."""
    here = Path(__file__).resolve().parent
    target = program.resolve()

    def ours(filename: str) -> bool:
        return "runpy" in Path(filename).name or Path(filename).resolve().parent == here

    top = traceback.TracebackException.from_exception(e)
    todo, seen = [top], set()
    while todo:
        te = todo.pop()
        if id(te) in seen:
            continue
        seen.add(id(te))
        frames = list(te.stack)
        first = next((i for i, f in enumerate(frames) if Path(f.filename).resolve() == target), 0)
        te.stack = traceback.StackSummary.from_list([f for f in frames[first:] if not ours(f.filename)])
        todo += [c for c in (te.__cause__, te.__context__) if c is not None]
    print("".join(top.format()), end="", file=sys.stderr)


# KernelCxx's methods that declare a runtime parameter, and the kind each
# declares (the name is the method's second argument, third for ndarrays).
PARAM_KINDS: dict[str, ParamKind] = {
    "insert_scalar_param": "scalar",
    "insert_pointer_param": "pointer",
    "insert_ndarray_param": "ndarray",
    "insert_arr_param": "array",
}


def _bind_params(params: list[Param], schema: list[Arg], nd_ids: dict[int, str]) -> list[Param]:
    """Quadrants' runtime parameters, each with the Python argument it
    is (`arg`: a scalar is declared under its own name, an ndarray under
    `_` + its name, a dataclass member as `arg.member`, an ndarray a
    template argument holds as `arg.attr`); `arg` is absent when the
    table lists no such argument."""
    names = {a["name"] for a in schema}
    out = []
    for p in params:
        entry = p.copy()
        name = p["name"]
        bound = name[1:] if p["kind"] == "ndarray" and name.startswith("_") else name
        # An ndarray a template holds is declared by its id; a dataclass
        # member as `__qd_<arg>__qd_<member>`.
        held = re.fullmatch(r"_*qd_struct_nd_(\d+)", bound)
        if held and int(held.group(1)) in nd_ids:
            bound = nd_ids[int(held.group(1))]
            # The id changes from run to run; the table says which argument.
            entry["name"] = name.replace(held.group(1), "<id>")
        elif bound.startswith("__qd_"):
            bound = ".".join(bound[len("__qd_"):].split("__qd_"))
        if bound in names:
            entry["arg"] = bound
        out.append(entry)
    return out


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are Kiln's usage errors: one line,
    ``TOOL: error: ...``, and exit status 2 (the usage text is --help's)."""

    def __init__(self, *args: Any, tool: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tool = tool or self.prog

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.tool}: error: {message}\n")


def lower_first(text: str) -> str:
    """An OS error's text as Kiln words its messages: `No such file` as `no such file`."""
    return text[:1].lower() + text[1:]


def program_error(program: str) -> str | None:
    """Why PROGRAM cannot be run, before anything is captured: missing,
    not a file, unreadable, or not Python (its syntax error, at its line)."""
    p = Path(program)
    if not p.exists():
        return f"{program}: no such file"
    if not p.is_file():
        return f"{program}: not a file"
    try:
        compile(p.read_bytes(), program, "exec")
    except OSError as e:
        return f"{program}: {lower_first(e.strerror or str(e))}"
    except SyntaxError as e:
        return f"{e.filename}:{e.lineno}:{e.offset}: {e.msg}"
    except ValueError as e:  # null bytes
        return f"{program}: {e}"
    return None


def directory_error(option: str, path: str) -> str | None:
    """Why ``path`` cannot be the directory an option names, checked
    without making it: empty, or an existing file, or under one."""
    if not path:
        return f"{option} takes a directory (new or empty), not ''"
    p = Path(path)
    if p.exists() and not p.is_dir():
        return f"{option} {path}: not a directory"
    # A new directory: the nearest existing parent must be a directory.
    parent = next((a for a in Path(os.path.abspath(path)).parents if a.exists()), None)
    if not p.exists() and parent is not None and not parent.is_dir():
        return f"{option} {path}: not a directory"
    return None


def main(args: list[str] | None = None) -> int:
    tool = "python -m kiln_quadrants"
    ap = OneLineParser(
        prog=tool,
        description="Run a Quadrants program on the CPU and capture its kernels' IR, fields and values. "
        "Bad usage (a missing program, a syntax error in it, an output that is not a directory) is one line and exit status 2; "
        "otherwise the exit status is the program's.",
    )
    ap.add_argument("-o", "--output", required=True, help="output directory")
    ap.add_argument("--calls", type=int, default=0, metavar="N", help="capture the first N calls of each kernel (default 0: all)")
    ap.add_argument("--max-disk", metavar="SIZE", help="keep the values within SIZE bytes (500K, 10M, 2G): "
                    "the call whose values might not fit, and every later one, runs uncaptured (default: no limit)")
    ap.add_argument("program", help="the Quadrants program (a .py file)")
    # `kiln-quadrants run` says how the capture ended, from capture.json:
    # the capture then says nothing of it itself.
    ap.add_argument("--for-replay", action="store_true", help=argparse.SUPPRESS)
    # kiln-quadrants run's kiln-import: with it, a kernel's calls after its
    # compilations are imported save only the fields those read or write.
    ap.add_argument("--kiln-import", help=argparse.SUPPRESS)
    ap.add_argument("argv", nargs=argparse.REMAINDER, help="the program's own arguments").required = False
    ns = ap.parse_args(args)
    why = directory_error("-o", ns.output) or (size_error("--max-disk", ns.max_disk) if ns.max_disk is not None else None)
    why = why or program_error(ns.program)
    if why is None:
        try:
            Path(ns.output).mkdir(parents=True, exist_ok=True)
        except OSError as e:
            why = f"-o {ns.output}: {lower_first(e.strerror or str(e))}"
    if why is not None:
        ap.error(why)
    out = Path(ns.output).resolve()  # the program may change directory
    status = run(ns.program, ns.argv, out, max(ns.calls, 0), parse_size(ns.max_disk) if ns.max_disk is not None else None, ns.kiln_import)
    if status == 1 and not ns.for_replay:
        failure = json.loads((out / "capture.json").read_text()).get("capture_error")
        if failure:
            print(f"{tool}: error: {failure}", file=sys.stderr)
    if status < 0:  # interrupted: ended by the signal, as Python ends
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    return status


if __name__ == "__main__":
    sys.exit(main())
