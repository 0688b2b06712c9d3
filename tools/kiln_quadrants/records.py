"""The JSON records of the Quadrants bridge, typed once.

Owns: the shape of every JSON file the bridge writes: ``fields.json`` (the
field table ``kiln-import`` reads, ``FieldTable``), ``capture.json`` and
``calls.jsonl`` (the run and its calls, read as one ``CaptureFile``), both described in docs/quadrants-ir.md §5, and
``kiln-quadrants run``'s ``manifest.json`` (``Manifest``, docs/quadrants.md);
and the one checked way to read them back (``load_table``,
``load_capture``): the parsed JSON is walked against these types
(``check``) and refused, with the first key that differs, rather than cast.

Must never: accept a record the types do not describe (a missing key, a
key they do not declare, a value of another type), or import Quadrants.

The field table's reader in Rust (``src/import/table.rs``) is what
``kiln-import`` accepts: it allows keys it does not know and defaults some
that these types require (``ancestors``, ``kind``); where these types say
`int` it reads an unsigned number (ids, shapes, strides, which are never
negative), and ``Param.id`` is one number, never a list. No ``from
__future__ import annotations`` here:
``NotRequired`` must be seen when the classes are made, for
``__required_keys__`` (and ``check``) to know which keys may be absent.
"""

import functools
import json
import types
import typing
from pathlib import Path
from typing import Literal, NotRequired, TypeAlias, TypedDict, cast

# A scalar as JSON holds it: a number (a bool for u1), or the repr of a
# value that is not one, or null for an argument not given.
JsonScalar: TypeAlias = bool | int | float | str | None
# What Python values become in JSON (`capture._jsonable`): a scalar, or a
# list of them (nested: a matrix). Never in a record itself (`check` has no
# rule for it): a record holds scalars, or lists of them.
JsonValue: TypeAlias = "JsonScalar | list[JsonValue]"


# -- fields.json, the field table (docs/quadrants-ir.md §5.2) --------------


class FieldEntry(TypedDict):
    """One field, a place SNode of one runtime."""

    name: str
    dtype: str
    shape: list[int]
    place: int
    ancestors: list[int]
    ancestor_kinds: list[str]
    # `scalar`, `matrix`, or for a field of another kind the name of its
    # Python class (kiln-import refuses such a field when a kernel uses it).
    kind: str
    # Only for `matrix`:
    element_shape: NotRequired[list[int]]
    components: NotRequired[list[int]]
    dynamic_index_stride: NotRequired[int]
    # Only for a field made with a permuted layout (`order="ji"`): memory
    # axis p is the program's axis layout[p]. `shape` and the values saved
    # are in memory order, the order the IR indexes.
    layout: NotRequired[list[int]]
    # Only for a program that calls qd.init more than once.
    init: NotRequired[int]


class ScalarArg(TypedDict):
    name: str
    kind: Literal["scalar"]
    dtype: str


class NdarrayArg(TypedDict):
    name: str
    kind: Literal["ndarray"]
    dtype: str
    shape: list[int]
    element_shape: NotRequired[list[int]]


class StructArg(TypedDict):
    """A struct, or a vector or matrix, passed by value: the dtype of each
    scalar, depth first."""

    name: str
    kind: Literal["struct"]
    members: list[str]


class OtherArg(TypedDict):
    """A template or any other argument: its annotation's repr (its type's
    name when the repr holds an address)."""

    name: str
    kind: Literal["other"]
    annotation: str


# A kernel's argument in the table (a dataclass is its members, each an
# argument named `arg.member`).
Arg: TypeAlias = ScalarArg | NdarrayArg | StructArg | OtherArg

ParamKind: TypeAlias = Literal["scalar", "ndarray", "pointer", "array"]


class Param(TypedDict):
    """A runtime parameter as Quadrants declared it, in its numbering."""

    id: int
    name: str
    kind: ParamKind
    # The argument of the table it is, when the table lists it.
    arg: NotRequired[str]


class KernelEntry(TypedDict):
    args: list[Arg]
    returns: NotRequired[list[str]]
    params: NotRequired[list[Param]]


class RuntimeEntry(TypedDict):
    """The kernels of a later runtime (the `init`-th qd.init, from 1)."""

    init: int
    kernels: dict[str, KernelEntry]


class FieldTable(TypedDict):
    """``fields.json``."""

    quadrants: str
    fields: list[FieldEntry]
    kernels: dict[str, KernelEntry]
    runtimes: NotRequired[list[RuntimeEntry]]


# -- capture.json (docs/quadrants-ir.md §5.3) ------------------------------


class ScalarValue(TypedDict):
    kind: Literal["scalar"]
    dtype: str
    value: JsonScalar


class NdarrayValue(TypedDict):
    kind: Literal["ndarray"]
    dtype: str
    shape: list[int]


class StructValue(TypedDict):
    """The scalars' values, depth first."""

    kind: Literal["struct"]
    members: list[JsonScalar]


class OtherValue(TypedDict):
    kind: Literal["other"]
    repr: str


# An argument's value at a call, by its name in the table.
ArgValue: TypeAlias = ScalarValue | NdarrayValue | StructValue | OtherValue


class Saved(TypedDict):
    """A field's (or ndarray argument's) values around a call: the ids of
    their blobs in the capture's store ``values`` (``pack.py``,
    docs/quadrants-ir.md §5.4); null where it could not be read."""

    before: str | None
    after: str | None


# One call of a program kernel. Functional syntax: `return` is a keyword.
# capture.json lists a call's keys in this order.
Call = TypedDict(
    "Call",
    {
        "kernel": str,
        "call": int,
        # `reverse` or `forward`, for a call of a kernel's derivative.
        "derivative": NotRequired[str],
        "init": NotRequired[int],
        # `FILE:LINE` of the kernel's Python function.
        "where": NotRequired[str],
        # Quadrants' number for the kernel object (the `c60` of its
        # compiled name `k_c60_0`): two kernels of one name and place
        # (made by one factory) differ by it.
        "kernel_id": NotRequired[int],
        # Quadrants' number for the compilation the call ran (the `0` of
        # `k_c60_0`): one per set of template arguments.
        "instance": NotRequired[int],
        "compiled_name": NotRequired[str],
        "tasks": NotRequired[int],
        # The importer's input; null when no captured call compiled the
        # kernel (it raised first).
        "log": str | None,
        "full_log": NotRequired[str],
        "output": NotRequired[str],
        # Lines found among the IR dumps that are not the printer's (output
        # written while the kernel compiled), left out of `log`.
        "interleaved": NotRequired[list[str]],
        # The lines the kernel's `print`s wrote while it ran (what reached
        # fds 1 and 2 after the call's last IR dump, without Quadrants' own
        # log lines), newlines dropped; absent when it printed nothing.
        "printed": NotRequired[list[str]],
        "compiled": bool,
        "error": NotRequired[str],
        "args": dict[str, ArgValue],
        # By field name, or `arg:NAME` for an ndarray argument; absent when
        # the call raised.
        "values": NotRequired[dict[str, Saved]],
        "return": NotRequired[list[JsonScalar]],
    },
)


class Forced(TypedDict):
    """The qd.init options the capture forces (docs/quadrants-ir.md §5.1)."""

    print_ir: bool
    print_ir_dbg_info: bool
    fast_math: bool
    offline_cache: bool
    src_ll_cache: bool
    num_compile_threads: int


class Unchecked(TypedDict):
    """Calls of one kernel past ``--calls``: run, not captured."""

    kernel: str  # its label: `k`, or `k.grad` for its derivative
    init: int
    where: str | None
    kernel_id: NotRequired[int]
    calls: int


class Running(TypedDict):
    """The call under way when ``capture.json`` was written: the one a
    program that ended abruptly was in."""

    kernel: str  # its label: `k`, or `k.grad` for its derivative
    call: int
    where: NotRequired[str]


class Budget(TypedDict):
    """``--max-disk``: the most bytes the capture's values may take, and,
    once the next call's values would not have fitted, that call's number
    (it and every later call ran uncaptured) and the bytes kept."""

    limit: int
    reached_at: NotRequired[int]
    kept: NotRequired[int]


class CaptureFile(TypedDict):
    """``capture.json`` with its calls: the file is written when what it
    holds changes, and when the program ends; the calls are
    ``calls.jsonl``, one line each, appended as each call ends, and the
    call under way is ``running.json`` (``load_capture`` puts them under
    `calls` and `running`). A capture.json that lists
    its `calls` itself (a hand-made one) is read as it is."""

    program: str
    argv: list[str]
    # Each qd.init's options as the program passed them: `arch` and each
    # keyword argument's repr.
    init: list[dict[str, str]]
    forced: Forced
    unchecked: NotRequired[list[Unchecked]]
    running: NotRequired[Running]
    # The program's uncaught exception: its type and its message's last line.
    raised: NotRequired[str]
    # Why the capture itself stopped (the calls before it are whole).
    capture_error: NotRequired[str]
    budget: NotRequired[Budget]
    calls: list[Call]


# -- manifest.json of `kiln-quadrants run --keep` (docs/quadrants.md) ---------

# What each engine computed for a field, and what Quadrants had: the ids of
# the values in the manifest's `stores` (one id for equal values).
# Functional syntax: `kiln-interp`.
ManifestField = TypedDict(
    "ManifestField",
    {
        "before": str,
        "quadrants": str,
        "kiln": NotRequired[str],
        "kiln-interp": NotRequired[str],
    },
)
# A value the kernel returned: Quadrants' value itself.
ManifestReturned = TypedDict(
    "ManifestReturned",
    {
        "quadrants_returned": JsonScalar,
        "kiln": NotRequired[str],
        "kiln-interp": NotRequired[str],
    },
)


class ManifestCall(TypedDict):
    kernel: str
    call: int
    kir: str
    args: dict[str, ArgValue]
    # By KIR field name (`@k.arr` of an ndarray, `@k.ret0` of a return).
    values: dict[str, ManifestField | ManifestReturned]


class Manifest(TypedDict):
    # The stores (`pack.py`: NAME.pack and NAME.idx, relative to the --keep
    # directory) that hold the values the calls name by id.
    stores: list[str]
    calls: list[ManifestCall]
    # Why the calls are not all the program's (it raised, was killed, ...),
    # in the one line the run printed; absent when they are.
    incomplete: NotRequired[str]


# -- checking parsed JSON against the types --------------------------------


def _is_typeddict(tp: object) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp)


def check(value: object, tp: object, where: str = "") -> list[str]:
    """Where ``value`` (parsed JSON) is not of type ``tp``: one line per
    difference, naming its path (``calls[2].args.a.kind``); empty when it
    is. A TypedDict must have every required key and no undeclared one; a
    union is met by any of its members (a union of records says what the
    closest member lacks); ``float`` takes an integer, ``int`` never takes a
    bool. A type with no rule here is a TypeError, never a pass."""
    at = where or "the record"
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        members = typing.get_args(tp)
        tries = [check(value, m, where) for m in members]
        if any(not t for t in tries):
            return []
        if any(_is_typeddict(m) for m in members):
            return min(tries, key=len)
        return [f"{at}: {_json(value)} is not {' or '.join(_describe(m) for m in members)}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{at}: {_json(value)} is not a list"]
        (item,) = typing.get_args(tp)
        return [e for i, v in enumerate(value) for e in check(v, item, f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{at}: {_json(value)} is not an object"]
        _key, item = typing.get_args(tp)
        return [e for k, v in value.items() for e in check(v, item, f"{where}.{k}" if where else str(k))]
    if _is_typeddict(tp):
        return _check_record(value, cast(type, tp), where)
    if origin is Literal:
        ok = any(value == a and type(value) is type(a) for a in typing.get_args(tp))
    elif tp is None or tp is type(None):
        ok = value is None
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif tp in (bool, str):
        ok = isinstance(value, cast(type, tp))
    else:
        raise TypeError(f"check: no rule for the type {tp!r}")
    return [] if ok else [f"{at}: {_json(value)} is not {_describe(tp)}"]


def _describe(tp: object) -> str:
    """A type as a message names it: `an integer`, `"scalar" or "ndarray"`."""
    if typing.get_origin(tp) is Literal:
        return " or ".join(_json(a) for a in typing.get_args(tp))
    if typing.get_origin(tp) in (list, dict):
        return "a list" if typing.get_origin(tp) is list else "an object"
    if _is_typeddict(tp):
        return f"a {cast(type, tp).__name__}"
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", None: "null", type(None): "null"}
    return names.get(cast(type, tp), repr(tp))


@functools.cache
def _hints(tp: type) -> dict[str, object]:
    """A TypedDict's keys and their types, worked out once per type (each
    call's record asks)."""
    return typing.get_type_hints(tp)


def _check_record(value: object, tp: type, where: str) -> list[str]:
    at = where or "the record"
    if not isinstance(value, dict):
        return [f"{at}: {_json(value)} is not an object ({tp.__name__})"]
    hints = _hints(tp)  # NotRequired[X] as X
    required: frozenset[str] = getattr(tp, "__required_keys__", frozenset())
    out = [f"{at}: no key {k!r} ({tp.__name__})" for k in hints if k in required and k not in value]
    out += [f"{at}: a {tp.__name__} has no key {k!r}" for k in value if k not in hints]
    for k, v in value.items():
        if k in hints:
            out += check(v, hints[k], f"{where}.{k}" if where else k)
    return out


def _json(value: object) -> str:
    """A value as it reads in the file, cut short."""
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


class RecordError(ValueError):
    """A file that is not the record its name says (docs/quadrants-ir.md §5)."""


def _load(path: Path, tp: type, complete: typing.Callable[[dict[str, object]], object] | None = None) -> object:
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise RecordError(f"{path}: not JSON: {e}") from None
    if complete is not None and isinstance(value, dict):
        complete(value)
    errors = check(value, tp)
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise RecordError(f"{path}: not a {tp.__name__} as docs/quadrants-ir.md describes it: {errors[0]}{more}")
    return value


def load_table(path: Path) -> FieldTable:
    """A ``fields.json``, checked; RecordError when it is not one."""
    return cast(FieldTable, _load(path, FieldTable))


# The file beside capture.json that holds its calls, one JSON line each,
# and the one that says which call is under way (`running`).
CALLS_FILE = "calls.jsonl"
RUNNING_FILE = "running.json"


def _complete(path: Path, value: dict[str, object]) -> None:
    """A capture.json's record made whole from the files beside it: its
    calls, and the call under way (unless it says them itself). A
    running.json torn by a program killed as it was written says none."""
    value.setdefault("calls", read_calls(path.parent / CALLS_FILE))
    running = path.parent / RUNNING_FILE
    if "running" not in value and running.exists():
        try:
            said = json.loads(running.read_text() or "null")
        except json.JSONDecodeError:
            said = None
        if said is not None:
            value["running"] = said


def read_calls(path: Path) -> list[object]:
    """The calls of a ``calls.jsonl``, in order (none when there is no such
    file): a last line cut short (the program ended as it was written) is
    not read."""
    if not path.exists():
        return []
    out = []
    for i, line in enumerate(path.read_text().splitlines(keepends=True)):
        if not line.endswith("\n"):
            break
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise RecordError(f"{path}:{i + 1}: not JSON: {e}") from None
    return out


def load_capture(path: Path) -> CaptureFile:
    """A ``capture.json`` and its calls (``calls.jsonl`` beside it, unless
    it lists them itself), checked; RecordError when they are not one."""
    return cast(CaptureFile, _load(path, CaptureFile, lambda v: _complete(path, v)))


def in_declared_order(record: typing.Mapping[str, object], tp: type) -> dict[str, object]:
    """``record``'s keys in the order TypedDict ``tp`` declares them (any
    other after), so a file's layout is the type's, however it was built."""
    declared = [k for k in tp.__annotations__ if k in record]
    return {k: record[k] for k in [*declared, *(k for k in record if k not in tp.__annotations__)]}
