"""Tests of the capture: run it on corpus programs and check what it wrote.

Run with the venv that `make quadrants` builds:
    target/quadrants-venv/bin/python -m pytest tools/kiln_quadrants/test_capture.py
Each capture runs in a child process: Quadrants' runtime is per process.
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CORPUS = ROOT / "testdata" / "quadrants"
CAPTURED = CORPUS / "captured"

sys.path.insert(0, str(HERE.parent))
from kiln_quadrants import pack, records  # noqa: E402
from kiln_quadrants.capture import OFFLOAD_STAGE, read_log, split_stages  # noqa: E402
from kiln_quadrants.records import RecordError, check, load_capture, load_table  # noqa: E402


def capture(program: Path, out: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    return subprocess.run(
        [sys.executable, "-m", "kiln_quadrants", "-o", str(out), str(program), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def assert_records(out: Path) -> tuple[records.FieldTable, records.CaptureFile]:
    """A capture's two files, checked against records.py's types (every
    required key there, no key the types do not declare, every value of
    its type); RecordError names the first difference."""
    return load_table(out / "fields.json"), load_capture(out / "capture.json")


def any_capture(out: Path) -> typing.Any:
    """A capture's record, checked, as plain JSON for the tests to index."""
    return load_capture(out / "capture.json")


def load(out: Path, bid: str | None) -> np.ndarray:
    assert bid is not None, "the capture saved no such value"
    return pack.load(out, bid)


@pytest.fixture(scope="module")
def saxpy(tmp_path_factory):
    out = tmp_path_factory.mktemp("saxpy")
    r = capture(CORPUS / "saxpy.py", out)
    assert r.returncode == 0, r.stderr
    assert_records(out)
    return out


@pytest.fixture(scope="module")
def ndarrays(tmp_path_factory):
    out = tmp_path_factory.mktemp("ndarray_args")
    r = capture(CORPUS / "ndarray_args.py", out)
    assert r.returncode == 0, r.stderr
    assert_records(out)
    return out


def test_saxpy_field_table(saxpy):
    table = json.loads((saxpy / "fields.json").read_text())
    assert table["quadrants"] == "1.3.3"
    fields = {f["name"]: f for f in table["fields"]}
    assert set(fields) == {"x", "y"}
    for f in fields.values():
        assert f["dtype"] == "f32" and f["shape"] == [4096] and f["kind"] == "scalar"
        assert f["ancestor_kinds"] == ["dense", "root"]
        assert len(f["ancestors"]) == 2
    assert fields["x"]["place"] != fields["y"]["place"]
    assert table["kernels"]["saxpy"] == {
        "args": [{"name": "a", "kind": "scalar", "dtype": "f32"}],
        # Quadrants' own numbering of the runtime arguments, as it declared them.
        "params": [{"id": 0, "name": "a", "kind": "scalar", "arg": "a"}],
    }
    assert table["kernels"]["init_xy"] == {"args": [], "params": []}


def test_saxpy_log_names_the_fields_snodes(saxpy):
    """The SNode ids in the IR are the ones the field table gives."""
    table = json.loads((saxpy / "fields.json").read_text())
    x, y = sorted(table["fields"], key=lambda f: f["name"])
    calls = any_capture(saxpy)["calls"]
    log = (saxpy / calls[1]["log"]).read_text()
    dumps = [d for d in split_stages(log) if d["stage"] == OFFLOAD_STAGE]
    assert len(dumps) == 1 and calls[1]["tasks"] == 1
    text = "\n".join(dumps[0]["lines"])
    # `for i in x` is a struct_for over x's dense parent.
    assert f"offloaded struct_for(S{x['ancestors'][0]}dense)" in text
    assert f"global ptr [S{x['place']}place<f32>]" in text
    assert f"global ptr [S{y['place']}place<f32>]" in text
    assert "<f32> $2 = argload[0]" in text


def test_saxpy_calls_and_values(saxpy):
    cap = any_capture(saxpy)
    calls = cap["calls"]
    assert [c["kernel"] for c in calls] == ["init_xy", "saxpy", "saxpy"]
    assert [c["call"] for c in calls] == [0, 1, 2]
    assert [c["compiled"] for c in calls] == [True, True, False]
    # The second saxpy compiled nothing: it points at the log of the first.
    assert calls[2]["log"] == calls[1]["log"]
    assert calls[1]["args"]["a"] == {"kind": "scalar", "dtype": "f32", "value": 2.0}
    assert calls[2]["args"]["a"]["value"] == 0.25
    i = np.arange(4096)
    x0 = load(saxpy, calls[0]["values"]["x"]["before"])
    assert x0.dtype == np.float32 and not x0.any()
    x = load(saxpy, calls[0]["values"]["x"]["after"])
    y = load(saxpy, calls[0]["values"]["y"]["after"])
    np.testing.assert_array_equal(x, (i % 17).astype(np.float32))
    np.testing.assert_array_equal(y, (i % 5).astype(np.float32) * np.float32(0.5))
    for c, a in zip(calls[1:], (2.0, 0.25), strict=True):
        vals = {k: (load(saxpy, v["before"]), load(saxpy, v["after"])) for k, v in c["values"].items()}
        xb, xa = vals["x"]
        yb, ya = vals["y"]
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, np.float32(a) * xb + yb)


def test_ndarray_args(ndarrays):
    table = json.loads((ndarrays / "fields.json").read_text())
    k = table["kernels"]
    assert k["scale"]["args"] == [
        {"name": "arr", "kind": "ndarray", "dtype": "f32", "shape": [16]},
        {"name": "k", "kind": "scalar", "dtype": "f32"},
    ]
    assert k["add_rows"]["args"][0] == {"name": "m", "kind": "ndarray", "dtype": "i32", "shape": [3, 4]}
    assert k["axpy_nd"]["args"][0] == {"name": "a", "kind": "scalar", "dtype": "f64"}
    assert k["axpy_nd"]["args"][1]["dtype"] == "f64"
    calls = {c["kernel"]: c for c in any_capture(ndarrays)["calls"]}
    v = calls["scale"]["values"]["arg:arr"]
    np.testing.assert_array_equal(load(ndarrays, v["after"]), load(ndarrays, v["before"]) * np.float32(0.5))
    m = load(ndarrays, calls["add_rows"]["values"]["arg:m"]["before"])
    rows = load(ndarrays, calls["add_rows"]["values"]["arg:rows"]["after"])
    np.testing.assert_array_equal(rows, m.sum(axis=1))
    v = calls["axpy_nd"]["values"]
    np.testing.assert_array_equal(
        load(ndarrays, v["arg:y"]["after"]), 2.0 * load(ndarrays, v["arg:x"]["before"]) + load(ndarrays, v["arg:y"]["before"])
    )
    acc = calls["to_field"]["values"]["acc"]
    assert load(ndarrays, acc["before"]).shape == ()
    assert float(load(ndarrays, acc["after"])) == float(np.arange(8, dtype=np.float32).sum() * 0.5)
    # ndarray shapes are read at run time: a task's end is a global temporary.
    log = (ndarrays / calls["axpy_nd"]["log"]).read_text()
    assert "external_tensor_shape_along_axis 0, arg_id [1]" in log
    assert "range_for(0, tmp(offset=0B))" in log


def test_a_program_that_raises(tmp_path):
    prog = tmp_path / "boom.py"
    prog.write_text(
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu, print_ir=False)\n"  # forced back on by the capture
        "x = qd.field(qd.i32, shape=4)\n"
        "@qd.kernel\n"
        "def k():\n"
        "    for i in x:\n"
        "        x[i] = i\n"
        "k()\n"
        "raise ValueError('boom')\n"
    )
    out = tmp_path / "out"
    r = capture(prog, out)
    assert r.returncode == 1
    assert "Traceback" in r.stderr and "ValueError: boom" in r.stderr
    _, cap = assert_records(out)
    assert [c["kernel"] for c in cap["calls"]] == ["k"]
    assert cap["init"][0]["print_ir"] == "False"
    assert "Start offload_to_executable" in (out / cap["calls"][0]["log"]).read_text()
    table = json.loads((out / "fields.json").read_text())
    assert [f["name"] for f in table["fields"]] == ["x"]


def test_a_kernel_that_does_not_compile(tmp_path):
    prog = tmp_path / "bad.py"
    prog.write_text(
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "x = qd.field(qd.i32, shape=4)\n"
        "@qd.kernel\n"
        "def bad():\n"
        "    for i in x:\n"
        "        x[i] = undefined_name\n"
        "bad()\n"
    )
    out = tmp_path / "out"
    r = capture(prog, out)
    assert r.returncode == 1
    # The program's traceback, as Python prints it for the program alone:
    # from its own frame, through Quadrants', without the bridge's.
    assert r.stderr.index("Traceback (most recent call last):\n  File \"" + str(prog) + '", line 8, in <module>') >= 0, r.stderr
    assert "kiln_quadrants" not in r.stderr and "runpy" not in r.stderr, r.stderr
    _, cap = assert_records(out)
    (call,) = cap["calls"]
    assert call["error"] == 'QuadrantsNameError: Name "undefined_name" is not defined'
    assert call["log"] is None and "values" not in call
    assert cap["raised"] == call["error"] and "running" not in cap


KILLED_IN_A_CALL = (
    "import os, signal\n"
    "import quadrants as qd\n"
    "qd.init(arch=qd.cpu)\n"
    "x = qd.field(qd.i32, shape=4)\n"
    "@qd.kernel\n"
    "def k():\n"
    "    for i in x:\n"
    "        x[i] = i\n"
    "@qd.kernel\n"
    "def dies():\n"
    "    # Evaluated while Quadrants compiles the kernel: a crash in a call.\n"
    "    if qd.static(os.kill(os.getpid(), signal.SIGKILL) is None):\n"
    "        x[0] = 1\n"
    "k()\n"
    "k()\n"
    "dies()\n"
)


def test_a_program_killed_in_a_call_keeps_the_calls_before(tmp_path):
    """capture.json is written before and after every call: a program
    killed (SIGKILL, a crash in Quadrants) keeps every call it completed,
    whole, and the record says which call it was in."""
    prog = tmp_path / "dies.py"
    prog.write_text(KILLED_IN_A_CALL)
    out = tmp_path / "out"
    r = capture(prog, out)
    assert r.returncode == -9, r.stderr
    table, cap = assert_records(out)
    assert [c["kernel"] for c in cap["calls"]] == ["k", "k"]
    assert all("values" in c for c in cap["calls"])
    assert cap["running"] == {"kernel": "dies", "call": 2, "where": "dies.py:9"}
    assert [f["name"] for f in table["fields"]] == ["x"] and "k" in table["kernels"]
    assert not list(out.glob("*.part")), list(out.iterdir())


def test_a_program_that_leaves_by_os_exit_keeps_its_calls(tmp_path):
    prog = tmp_path / "leaves.py"
    prog.write_text(KILLED_IN_A_CALL.replace("dies()\n", "os._exit(0)\n"))
    out = tmp_path / "out"
    r = capture(prog, out)
    assert r.returncode == 0, r.stderr
    _, cap = assert_records(out)
    assert [c["kernel"] for c in cap["calls"]] == ["k", "k"] and "running" not in cap


def test_a_failure_of_the_capture_is_its_own_not_the_programs(tmp_path):
    """The capture's own failure (here the file it writes the next call's
    log in made a directory) is one line naming the call, never an
    exception the program's `except Exception` takes for its kernel call's,
    nor a traceback through the bridge; the calls before it are kept."""
    out = tmp_path / "out"
    blocked = out / "calls" / "001-k.log"
    prog = tmp_path / "breaks.py"
    prog.write_text(
        "import os\n"
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "x = qd.field(qd.i32, shape=4)\n"
        "@qd.kernel\n"
        "def k():\n"
        "    for i in x:\n"
        "        x[i] += 1\n"
        "k()\n"
        f"os.mkdir({str(blocked)!r})\n"
        "try:\n"
        "    k()\n"
        "except Exception as e:\n"
        "    print('the program caught', type(e).__name__)\n"
        "print('the program went on')\n"
    )
    r = capture(prog, out)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "the program caught" not in r.stdout and "the program went on" not in r.stdout, r.stdout
    said = f"the capture failed in call 1 (k): IsADirectoryError: [Errno 21] Is a directory: '{blocked}'"
    assert r.stderr.endswith(f"python -m kiln_quadrants: error: {said}\n"), r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    _, cap = assert_records(out)
    assert cap["capture_error"] == said and [c["call"] for c in cap["calls"]] == [0]


def test_output_written_while_a_kernel_compiles_is_the_programs(tmp_path):
    """A thread's print while a kernel compiles (Python's sys.stdout) goes
    where the program's output goes, not into the log among the IR; what
    reaches fd 1 itself in the call (C's, a subprocess's) is passed through
    from the log."""
    prog = tmp_path / "chatty.py"
    prog.write_text(
        "import os, threading\n"
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "x = qd.field(qd.i32, shape=4)\n"
        "def chatter():\n"
        "    t = threading.Thread(target=lambda: print('a thread speaks while k compiles', flush=True))\n"
        "    t.start()\n"
        "    t.join()\n"
        "    os.write(1, b'straight to fd 1\\n')\n"
        "    return True\n"
        "@qd.kernel\n"
        "def k():\n"
        "    if qd.static(chatter()):\n"
        "        for i in x:\n"
        "            x[i] = i\n"
        "k()\n"
        "print('after', x.to_numpy().sum())\n"
    )
    out = tmp_path / "out"
    r = capture(prog, out)
    assert r.returncode == 0, r.stderr
    # (Quadrants evaluates the kernel's qd.static twice: so would it without the capture.)
    said = "a thread speaks while k compiles\n" * 2 + "straight to fd 1\n" * 2
    assert r.stdout.endswith(said + "after 6\n"), r.stdout
    (call,) = assert_records(out)[1]["calls"]
    assert call["full_log"].endswith(".log.gz") and not (out / call["full_log"].removesuffix(".gz")).exists()
    full = gzip.decompress((out / call["full_log"]).read_bytes()).decode()
    assert "a thread speaks" not in full and "straight to fd 1" in full, full[:300]
    assert "interleaved" not in call and "fd 1" not in (out / call["log"]).read_text()


def test_a_failure_of_the_capture_around_an_uncaptured_call_is_its_own(tmp_path):
    """Quadrants' own kernels (behind `to_numpy`) and calls past --calls
    are run uncaptured, through a scratch log: the capture failing there
    is its own failure too, one line, never the program's exception."""
    out = tmp_path / "out"
    prog = tmp_path / "breaks.py"
    prog.write_text(KILLED_IN_A_CALL.replace(
        "dies()\n",
        f"os.mkdir({str(out / 'calls' / 'unchecked.log')!r})\n"
        "try:\n    x.to_numpy()\nexcept Exception:\n    print('the program caught it')\n",
    ))
    r = capture(prog, out)
    assert r.returncode == 1 and "the program caught it" not in r.stdout, r.stdout + r.stderr
    said = f"the capture failed around a call of Quadrants' own: IsADirectoryError: [Errno 21] Is a directory: '{out / 'calls' / 'unchecked.log'}'"
    assert r.stderr == f"python -m kiln_quadrants: error: {said}\n", r.stderr
    assert assert_records(out)[1]["capture_error"] == said


def test_quadrants_that_cannot_be_imported_is_one_line(tmp_path):
    """Quadrants failing as the capture imports it (a broken install, its
    banner printed to a closed pipe) gave a traceback through the bridge:
    it is one line naming Quadrants, and capture.json says it."""
    fake = tmp_path / "fake" / "quadrants"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('planted: libLLVM not found')\n")
    prog = tmp_path / "p.py"
    prog.write_text("print('never')\n")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=f"{fake.parent}{os.pathsep}{HERE.parent}")
    r = subprocess.run([sys.executable, "-m", "kiln_quadrants", "-o", str(out), str(prog)], env=env,
                       capture_output=True, text=True, timeout=60)
    said = "Quadrants could not be imported: ImportError: planted: libLLVM not found"
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"python -m kiln_quadrants: error: {said}\n"), r.stderr
    _, cap = assert_records(out)
    assert cap["capture_error"] == said and cap["calls"] == []


def test_a_program_that_changes_directory_is_captured_where_asked(tmp_path):
    """The output directory is taken as given, before the program runs:
    a relative -o is not moved by the program's os.chdir."""
    prog = tmp_path / "moves.py"
    prog.write_text(KILLED_IN_A_CALL.replace("k()\nk()\ndies()\n", "os.chdir('/')\nk()\nprint('done', x.to_numpy())\n"))
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    r = subprocess.run([sys.executable, "-m", "kiln_quadrants", "-o", "out", str(prog)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "done [0 1 2 3]" in r.stdout, r.stdout + r.stderr
    assert [c["kernel"] for c in assert_records(tmp_path / "out")[1]["calls"]] == ["k"]


def test_a_program_that_calls_init_twice(tmp_path):
    """SNode ids start again in a new runtime: fields and calls say which one."""
    prog = tmp_path / "reinit.py"
    prog.write_text(
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "x = qd.field(qd.i32, shape=4)\n"
        "@qd.kernel\n"
        "def k1():\n"
        "    for i in x:\n"
        "        x[i] = i\n"
        "k1()\n"
        "qd.init(arch=qd.cpu)\n"
        "y = qd.field(qd.f32, shape=3)\n"
        "@qd.kernel\n"
        "def k2():\n"
        "    for i in y:\n"
        "        y[i] = 1.5\n"
        "k2()\n"
    )
    out = tmp_path / "out"
    r = capture(prog, out)
    assert r.returncode == 0, r.stderr
    assert [rt["init"] for rt in assert_records(out)[0]["runtimes"]] == [1]
    fields = json.loads((out / "fields.json").read_text())["fields"]
    assert [(f["name"], f["init"]) for f in fields] == [("x", 0), ("y", 1)]
    assert fields[0]["place"] == fields[1]["place"]
    calls = any_capture(out)["calls"]
    assert [c.get("init", 0) for c in calls] == [0, 1]
    assert list(calls[1]["values"]) == ["y"]
    np.testing.assert_array_equal(load(out, calls[1]["values"]["y"]["after"]), np.full(3, 1.5, np.float32))


def test_each_call_names_the_compilation_it_ran(tmp_path):
    """A call that compiles nothing points at the log of the compilation it
    ran: of its kernel object (two a factory made share name and place)
    and of its template arguments (`kernel_id` and `instance`, the `c60`
    and `0` of `fill_c60_0`)."""
    prog = tmp_path / "made.py"
    prog.write_text(
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "x = qd.field(qd.i32, shape=4)\n"
        "z = qd.field(qd.i32, shape=8)\n"
        "def make(c):\n"
        "    @qd.kernel\n"
        "    def fill(t: qd.template()):\n"
        "        for i in t:\n"
        "            t[i] = c\n"
        "    return fill\n"
        "one, two = make(1), make(2)\n"
        "one(x)\n"
        "one(z)\n"
        "two(x)\n"
        "one(x)\n"
        "one(z)\n"
    )
    out = tmp_path / "out"
    r = capture(prog, out)
    assert r.returncode == 0, r.stderr
    calls = assert_records(out)[1]["calls"]
    compiled = [c.get("compiled_name") for c in calls]
    ids = [(c["kernel_id"], c["instance"]) for c in calls]
    assert [n is not None for n in compiled] == [True, True, True, False, False]
    for c, n, (kid, inst) in zip(calls[:3], compiled, ids, strict=False):
        assert n == f"fill_c{kid}_{inst}", c
    assert ids[3] == ids[0] and ids[4] == ids[1] and len({i[0] for i in ids}) == 2, ids
    assert [c["log"] for c in calls[3:]] == [calls[0]["log"], calls[1]["log"]]


def test_program_argv_and_exit_status(tmp_path):
    prog = tmp_path / "args.py"
    prog.write_text("import sys\nsys.exit(int(sys.argv[1]) + len(sys.argv))\n")
    assert capture(prog, tmp_path / "o1", "3").returncode == 5
    assert capture(prog, tmp_path / "o2", "-2").returncode == 0


@pytest.mark.parametrize(
    "args, said",
    [
        (["-o", "{tmp}/out", "no/such/program.py"], "no/such/program.py: no such file"),
        (["-o", "{tmp}/out", "{tmp}/broken.py"], "{tmp}/broken.py:2:5: '(' was never closed"),
        (["-o", "{tmp}/out", "{tmp}"], "{tmp}: not a file"),
        (["-o", "/etc/passwd", "testdata/quadrants/saxpy.py"], "-o /etc/passwd: not a directory"),
        (["-o", "{tmp}/out", "--calls", "x", "testdata/quadrants/saxpy.py"], "argument --calls: invalid int value: 'x'"),
        (["testdata/quadrants/saxpy.py"], "the following arguments are required: -o/--output"),
    ],
    ids=["missing", "syntax-error", "directory", "output-a-file", "calls-not-a-number", "no-output"],
)
def test_the_capture_alone_refuses_bad_usage_in_one_line(tmp_path: Path, args: list[str], said: str):
    """`python -m kiln_quadrants` (the capture, usable alone) checks its
    program and output directory before it runs anything: one line, status
    2, where a missing program or a syntax error gave a traceback that
    started inside the bridge (runpy)."""
    (tmp_path / "broken.py").write_text("import quadrants as qd\nx = (1,\n")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    r = subprocess.run([sys.executable, "-m", "kiln_quadrants", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr == f"python -m kiln_quadrants: error: {said.replace('{tmp}', str(tmp_path))}\n", r.stderr
    assert not (tmp_path / "out").exists()


def test_split_stages_on_committed_logs():
    """Every committed offload log splits into whole dumps, one per task."""
    logs = sorted(CAPTURED.glob("*/calls/*.offload.log"))
    assert logs, "no committed captures"
    for p in logs:
        text = p.read_text()
        dumps = split_stages(text)
        assert dumps, p
        for d, after in zip(dumps, dumps[1:] + [None], strict=True):
            if d["stage"] == OFFLOAD_STAGE:
                assert d["lines"][0] == "kernel {" and d["lines"][-1] == "}", p
                # Each task's dump is followed by its next stage's header alone.
                assert after is not None and after["stage"] != OFFLOAD_STAGE and not after["lines"], p
            else:
                assert not d["lines"], p


# -- the records' types (records.py) -------------------------------------

# `edited`'s value that deletes the key instead.
DELETE = object()


def edited(record: object, path: str, value: object) -> object:
    """A copy of parsed JSON with the value at `path` (keys and list
    indices, split at `/`) set to `value`, or deleted."""
    copy = json.loads(json.dumps(record))
    *parents, last = [int(k) if k.isdigit() else k for k in path.split("/")]
    node = copy
    for k in parents:
        node = node[k]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return copy


# What the check says of a real capture of saxpy.py changed at one place:
# an undeclared key, a required key left out, a value of another type, a
# kind no argument has.
BROKEN_CAPTURE = [
    ("calls/1/compiled_by", 1, "calls[1]: a Call has no key 'compiled_by'"),
    ("calls/0/compiled", DELETE, "calls[0]: no key 'compiled' (Call)"),
    ("calls/1/args/a/value", [2.0], "calls[1].args.a.value: [2.0] is not a boolean or an integer or a number or a string or null"),
    ("calls/1/args/a/kind", "scalr", 'calls[1].args.a.kind: "scalr" is not "scalar"'),
    ("forced/num_compile_threads", True, "forced.num_compile_threads: true is not an integer"),
    ("calls/2/values/x/before", 0, "calls[2].values.x.before: 0 is not a string or null"),
    ("unchecked", [{"kernel": "saxpy", "init": 0, "where": None}], "unchecked[0]: no key 'calls' (Unchecked)"),
]
BROKEN_TABLE = [
    ("fields/0/kind", DELETE, "fields[0]: no key 'kind' (FieldEntry)"),
    ("fields/0/place", "2", 'fields[0].place: "2" is not an integer'),
    ("kernels/saxpy/params/0/id", [0], "kernels.saxpy.params[0].id: [0] is not an integer"),
    ("kernels/saxpy/args/0/repr", "x", "kernels.saxpy.args[0]: a ScalarArg has no key 'repr'"),
    ("runtimes", [{"init": 1}], "runtimes[0]: no key 'kernels' (RuntimeEntry)"),
]


def test_records_refuse_what_the_types_do_not_describe(saxpy, tmp_path):
    """The check walks records.py's types, so what the capture writes and
    the types cannot drift apart unseen: each change to a real capture is
    found, at its place."""
    table = json.loads((saxpy / "fields.json").read_text())
    cap = any_capture(saxpy)
    assert check(table, records.FieldTable) == [] and check(cap, records.CaptureFile) == []
    for path, value, said in BROKEN_CAPTURE:
        assert check(edited(cap, path, value), records.CaptureFile) == [said], path
    for path, value, said in BROKEN_TABLE:
        assert check(edited(table, path, value), records.FieldTable) == [said], path
    # The loaders refuse such a file, saying where (replay reads through them).
    bad = tmp_path / "capture.json"
    bad.write_text(json.dumps(edited(cap, "calls/0/compiled", DELETE)))
    with pytest.raises(RecordError, match=r"capture\.json: not a CaptureFile .*: calls\[0\]: no key 'compiled'"):
        load_capture(bad)


def test_committed_captures_are_records():
    """The committed captures (kiln-import's test inputs) are what records.py types."""
    dirs = sorted(p.parent for p in CAPTURED.glob("*/capture.json"))
    assert dirs, "no committed captures"
    for d in dirs:
        assert_records(d)


def _record_keys(tp: object) -> set[str]:
    """Every key of the TypedDicts that type `tp` is made of."""
    if isinstance(tp, type) and typing.is_typeddict(tp):
        hints = typing.get_type_hints(tp)
        return set(hints) | {k for h in hints.values() for k in _record_keys(h)}
    return {k for a in typing.get_args(tp) for k in _record_keys(a)}


def test_every_record_key_is_documented():
    """Each key records.py types is named (`key` or "key") in the doc of its
    file: docs/quadrants-ir.md for fields.json and capture.json,
    docs/quadrants.md for kiln-quadrants run's manifest.json (whose `args`
    are capture.json's)."""
    ir = (ROOT / "docs" / "quadrants-ir.md").read_text()
    bridge = (ROOT / "docs" / "quadrants.md").read_text()
    for tp, text in ((records.FieldTable, ir), (records.CaptureFile, ir), (records.Manifest, bridge + ir)):
        keys = _record_keys(tp)
        assert len(keys) > 5, tp
        missing = sorted(k for k in keys if f"`{k}`" not in text and f'"{k}"' not in text)
        assert not missing, f"{tp.__name__}: the doc does not name {missing}"


def test_output_interleaved_with_the_ir_is_left_out_of_the_dumps():
    """Output written between a stage label and its dump cut the label from
    its dump, and the dump (a task) was lost without a word: it is now left
    out, and listed apart. A label alone (the next stage's header) still
    has no dump; output outside the dumps is output too."""
    text = (CAPTURED / "saxpy" / "calls" / "001-saxpy.offload.log").read_text()
    lines = text.splitlines(keepends=True)
    assert lines[0].endswith("Start offload_to_executable:\n") and lines[1] == "kernel {\n"
    noisy = "".join([lines[0], "tick 1\n", "tick 2\n", *lines[1:], "tick 3\n"])
    log = read_log(noisy)
    assert log.dumps == split_stages(text) == read_log(text).dumps
    assert [len(d["lines"]) for d in log.dumps] == [len(lines) - 2, 0]
    assert log.interleaved == ["tick 1", "tick 2"] and log.output == ["tick 1", "tick 2", "tick 3"]
    assert read_log(text).output == [] and read_log(text).interleaved == []


def test_each_offload_log_holds_the_real_functions_its_kernel_reaches(tmp_path):
    """A qd.real_func is compiled once, by the first kernel that calls it:
    the .offload.log of a later caller still holds its dump (its `Initial
    IR` before `Access lowered`, then that header alone), before the tasks,
    and only the functions the kernel reaches, through other functions
    too."""
    out = tmp_path / "cap"
    r = capture(CORPUS / "real_func.py", out)
    assert r.returncode == 0, r.stderr

    def functions(call: str) -> list[str]:
        text = (out / "calls" / f"{call}.offload.log").read_text()
        dumps = split_stages(text)
        first_task = next(i for i, d in enumerate(dumps) if d["stage"] == OFFLOAD_STAGE)
        before = dumps[:first_task]
        assert [d["stage"] for d in before] == ["Initial IR", "Access lowered"] * (len(before) // 2)
        assert all(d["lines"][0] == "kernel {" and "argload[0]" in "".join(d["lines"]) for d in before[::2])
        return [d["kernel"].rsplit("_", 2)[0] for d in before[::2]]

    # fill compiles smooth and mark; combine reuses both, compiling
    # weigh and collatz_steps; count reuses collatz_steps alone.
    assert sorted(functions("000-fill")) == ["mark", "smooth"]
    assert sorted(functions("001-combine")) == ["collatz_steps", "mark", "smooth", "weigh"]
    assert functions("004-count") == ["collatz_steps"]
    assert not (out / "calls" / "002-fill.offload.log").exists()


def test_truncated_log_leaves_an_unterminated_dump():
    text = (CAPTURED / "truncated" / "saxpy.truncated.log").read_text()
    dumps = split_stages(text)
    assert dumps and dumps[-1]["lines"][-1] != "}"


# -- the whole corpus ----------------------------------------------------

REFUSED_MARKS = {
    "pointer_snode": "offloaded listgen S1pointer",
    "bitmasked": "struct_for(S1bitmasked)",
    # fib's own dump calls fib.
    "recursive_real_func": 'call "fib_',
}
# Forms no importable program may produce at Start offload_to_executable.
FOREIGN = ("listgen", "clear_list", "tls prologue")
# The vector, matrix, struct, assert, random and print forms the corpus must
# show (kiln-import scalarises or imports them), by program.
VECTOR_MARKS = {
    "vector_field": "<*[Tensor (2, 2) f32]> ",
    "dyn_index": "shift ptr [",
    "rotate2d": "], (2) layout=AOS",
    "struct_arg": "get_element(",
    "particles": "<[Tensor (3) f32]> ",
    "mat3_field": "<[Tensor (3, 3) f64]> ",
    "assert_in_kernel": ': assert $9, "k must be positive"',
    "random_init": "<f64> $2 = rand()",
    "print_in_kernel": 'print "x[ ", $',
    "real_func": '= call "weigh_',
}
PROGRAMS = sorted(p.relative_to(ROOT) for p in CORPUS.glob("**/*.py") if "captured" not in p.parts)


def test_corpus_is_large_enough():
    importable = [p for p in PROGRAMS if p.parent == CORPUS.relative_to(ROOT)]
    kernels = sum(p_text.count("@qd.kernel") for p_text in ((ROOT / p).read_text() for p in importable))
    assert kernels >= 40
    for bench in ("saxpy", "fill", "memcpy", "stencil2d", "math_opts", "atomic_ops"):
        assert (CORPUS / f"{bench}.py").exists()
    assert {p.stem for p in PROGRAMS if p.parent.name == "refused"} == set(REFUSED_MARKS)


@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_corpus_program(program, tmp_path):
    """Every corpus program runs under the capture; refused ones show what makes them so,
    the others none of it; committed captures are what the capture writes today."""
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "kiln_quadrants", "-o", str(out), str(program)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr
    _, cap = assert_records(out)
    assert cap["calls"]
    offload = ""
    for c in cap["calls"]:
        assert c["log"], c
        if c["compiled"]:
            text = (out / c["log"]).read_text()
            dumps = [d for d in split_stages(text) if d["stage"] == OFFLOAD_STAGE]
            assert len(dumps) == c["tasks"] >= 1
            assert all(d["lines"][-1] == "}" for d in dumps)
            offload += text
    name = program.stem
    if program.parent.name == "refused":
        assert REFUSED_MARKS[name] in offload
    else:
        for form in FOREIGN:
            assert form not in offload, form
    if name in VECTOR_MARKS:
        assert VECTOR_MARKS[name] in offload
    committed = CAPTURED / name
    if committed.is_dir():
        assert (out / "fields.json").read_text() == (committed / "fields.json").read_text()
        for log in (committed / "calls").glob("*.offload.log"):
            assert (out / "calls" / log.name).read_text() == log.read_text(), log


# Three calls that each change x (4,096 f32) and never y.
CHANGES_X_ONLY = (
    "import quadrants as qd\n"
    "qd.init(arch=qd.cpu)\n"
    "x = qd.field(qd.f32, shape=4096)\n"
    "y = qd.field(qd.f32, shape=4096)\n"
    "@qd.kernel\n"
    "def k(a: qd.f32):\n"
    "    for i in x:\n"
    "        x[i] = x[i] * 0.5 + a * qd.sin(i * 0.01)\n"
    "for a in (1.0, 2.0, 3.0):\n"
    "    k(a)\n"
)


# Values that compress little, computed alike by Quadrants and Kiln.
NOISE = "qd.cast((i * 7919 + qd.cast(a, qd.i32) * 104729) % 65521, qd.f32) * 0.0001"


def test_a_value_is_stored_once(tmp_path):
    """Each distinct value costs its bytes once: y, which no call changes,
    and x before the first call (both zero) are one value; each call adds
    only the x it made. The ids are the values' own, read back whole."""
    prog = tmp_path / "once.py"
    prog.write_text(CHANGES_X_ONLY)
    out = tmp_path / "out"
    r = capture(prog, out)
    assert r.returncode == 0, r.stderr
    calls = any_capture(out)["calls"]
    ys = {v for c in calls for v in (c["values"]["y"]["before"], c["values"]["y"]["after"])}
    assert ys == {calls[0]["values"]["x"]["before"]}, calls
    for c, d in itertools.pairwise(calls):
        assert c["values"]["x"]["after"] == d["values"]["x"]["before"]
    index = pack.read_index(out, "values")
    assert len(index) == 4 and len((out / "values.idx").read_text().splitlines()) == 4, index
    x = np.zeros(4096, np.float32)
    for c, a in zip(calls, (1.0, 2.0, 3.0), strict=True):
        x = (x * np.float32(0.5) + np.float32(a) * np.sin(np.arange(4096) * np.float32(0.01), dtype=np.float32)).astype(np.float32)
        np.testing.assert_allclose(load(out, c["values"]["x"]["after"]), x, rtol=1e-5, atol=1e-6)
        assert c["values"]["x"]["after"] == pack.blob_id(load(out, c["values"]["x"]["after"]))
    assert not list(out.glob("values/*")) and not (out / "values").exists()


def test_the_store_reads_back_every_kind_of_value(tmp_path):
    """What `Pack.put` stores, `Reader.load` gives back: dtype, shape and
    bytes, 0-D, empty, bool, Fortran-ordered and compressible alike, each
    once (an equal value is the same id, no byte more)."""
    values: list[np.ndarray] = [np.arange(7, dtype=np.int64), np.array(2.5, np.float32), np.zeros((0, 3), np.float64),
              np.array([True, False, True]), np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4)),
              np.zeros(100_000, np.float32), np.random.default_rng(1).random(1000).astype(np.float32)]
    store = pack.Pack(tmp_path, "v")
    ids = [store.put(v) for v in values]
    size = store.size
    assert [store.put(v.copy()) for v in values] == ids and store.size == size
    store.close()
    index = pack.read_index(tmp_path, "v")
    assert index[ids[5]].get("codec") == "zlib" and index[ids[6]].get("codec") is None, index
    assert size < 100_000 * 4, "a field of zeros was stored whole"
    reader = pack.Reader((tmp_path, "v"))
    for v, i in zip(values, ids, strict=True):
        got = reader.load(i)
        assert got.dtype == v.dtype and got.shape == v.shape and np.array_equal(got, v), (v, got)
        got[...] = 0  # a copy of its own, writeable


def test_a_capture_cut_short_reads_back(tmp_path, saxpy):
    """A program killed while the capture wrote leaves at most a last line
    cut short (of calls.jsonl, of values.idx) and bytes no index line
    names: the calls and values before them read back whole."""
    cut = tmp_path / "cut"
    shutil.copytree(saxpy, cut)
    whole = any_capture(saxpy)["calls"]
    with open(cut / "calls.jsonl", "a") as f:
        f.write('{"kernel": "saxpy", "call": 3, "lo')
    with open(cut / "values.idx", "a") as f:
        f.write('{"id": "0123')
    with open(cut / "values.pack", "ab") as f:
        f.write(b"\1" * 100)
    assert any_capture(cut)["calls"] == whole
    for c in whole:
        for v in c["values"].values():
            np.testing.assert_array_equal(load(cut, v["after"]), load(saxpy, v["after"]))


def test_max_disk_keeps_the_values_within_it(tmp_path):
    """--max-disk: the first call whose values might not fit, and every
    later one, run uncaptured (counted); the store never passes the
    budget, and capture.json says where it was reached and what it kept."""
    prog = tmp_path / "budget.py"
    prog.write_text(CHANGES_X_ONLY.replace("(1.0, 2.0, 3.0)", "(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)").replace(
        "a * qd.sin(i * 0.01)", NOISE))
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "kiln_quadrants", "-o", str(out), "--max-disk", "64K", str(prog)],
                       env=dict(os.environ, PYTHONPATH=str(HERE.parent)), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    cap = any_capture(out)
    budget = cap["budget"]
    n = len(cap["calls"])
    assert 1 <= n < 6 and budget == {"limit": 64 << 10, "reached_at": n, "kept": (out / "values.pack").stat().st_size}, cap
    assert budget["kept"] <= budget["limit"]
    assert cap["unchecked"] == [{"kernel": "k", "init": 0, "where": "budget.py:5", "kernel_id": cap["calls"][0]["kernel_id"],
                                 "calls": 6 - n}], cap


@pytest.mark.parametrize("size", ["10Q", "", "0", "M", "1.5.2G"])
def test_a_bad_size_is_one_line(tmp_path, size):
    r = subprocess.run([sys.executable, "-m", "kiln_quadrants", "-o", str(tmp_path / "out"), "--max-disk", size, str(CORPUS / "saxpy.py")],
                       env=dict(os.environ, PYTHONPATH=str(HERE.parent)), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert r.stderr == f"python -m kiln_quadrants: error: --max-disk takes a size above 0, as 500K, 10M or 2G, not {size!r}\n", r.stderr
    assert not (tmp_path / "out").exists()


# -- programs that quiet the logger, permuted layouts ---------------------


def test_a_quieter_logger_still_gets_the_ir_and_the_program_keeps_its_quiet(tmp_path):
    """quiet_logger.py lowers Quadrants' logger below the level of the IR
    printer's stage labels (at init, and again between calls, as Genesis
    does): both calls' IR is still captured, the program's level is put
    back after each call, and the logger lines the capture turned on never
    reach the program's output."""
    r = capture(CORPUS / "quiet_logger.py", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    cap = any_capture(tmp_path / "out")
    assert [c["compiled"] for c in cap["calls"]] == [True, False]
    assert all(c["log"] for c in cap["calls"]), cap["calls"]
    noise = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.startswith(("[I ", "[D ", "[T "))]
    assert r.stdout.splitlines()[-1] == "done" and not noise, noise


def test_the_stage_labels_level_is_forced_for_a_call_and_put_back():
    """In process: a program at `error` gets `info` for the call (the levels
    `info` and `warn` said to be silenced), and `error` back; one already at
    `info` or below is left alone."""
    from quadrants import _logging

    from kiln_quadrants.capture import silenced, stage_labels_logged

    _logging.set_logging_level("error")
    with stage_labels_logged() as quieter:
        assert _logging.is_logging_effective("info")
        assert quieter == ["info", "warn"]
    assert not _logging.is_logging_effective("warn") and _logging.is_logging_effective("error")
    _logging.set_logging_level("debug")
    with stage_labels_logged() as quieter:
        assert quieter == []
    assert _logging.is_logging_effective("debug")
    _logging.set_logging_level("info")
    line = "[I 12/05/26 01:52:50.799 23606] [kernel.cpp:f@1] compiling"
    assert silenced(line, ["info", "warn"]) and not silenced(line, []) and not silenced(line.replace("[I", "[E"), ["info", "warn"])
    assert not silenced("[I am the program's own line]", ["info"])


def test_a_permuted_layout_is_recorded_in_memory_order(tmp_path):
    """layouts.py's fields of `order="ji"` and `order="kij"`, and its
    ndarray of `layout=(1, 0)`: the table gives the shape in memory order
    (the one the IR indexes) and the layout, and the values saved are in
    that order (the program's `a[i, j]` at `[j, i]`)."""
    out = tmp_path / "out"
    r = capture(CORPUS / "layouts.py", out)
    assert r.returncode == 0, r.stderr
    table, cap = assert_records(out)
    by_name = {f["name"]: f for f in table["fields"]}
    assert (by_name["a"]["shape"], by_name["a"]["layout"]) == ([3, 4], [1, 0])
    assert (by_name["c"]["shape"], by_name["c"]["layout"]) == ([5, 2, 3], [2, 0, 1])
    assert (by_name["v"]["shape"], by_name["v"]["layout"]) == ([4, 3], [1, 0])
    assert "layout" not in by_name["b"]
    fill = next(c for c in cap["calls"] if c["kernel"] == "fill")
    a = load(out, fill["values"]["a"]["after"])
    assert a.shape == (3, 4) and a[2, 1] == 12.0  # the program's a[1, 2]
    c = load(out, fill["values"]["c"]["after"])
    assert c.shape == (5, 2, 3) and c[4, 1, 2] == 124.0  # the program's c[1, 2, 4]
    total = next(c for c in cap["calls"] if c["kernel"] == "total")
    assert total["args"]["t"] == {"kind": "ndarray", "dtype": "f32", "shape": [4, 3]}
    t = load(out, total["values"]["arg:t"]["before"])
    assert t.shape == (4, 3) and t[3, 1] == 7.0  # the program's t[1, 3]


def test_layouts_and_the_values_of_torch_tensors():
    """`permuted_layout` reads the permutation a field or ndarray carries
    (None for the identity), `physical_shape` and `physical_value` put a
    shape and a value in memory order (element axes last), and an ndarray
    argument's value is read from numpy whatever holds it."""
    from kiln_quadrants.capture import _np_to_qd, _numpy_dtype, ndarray_value, permuted_layout, physical_shape, physical_value

    class Tagged:
        _qd_layout = (1, 0)

    class Identity:
        _qd_layout = (0, 1)

    assert permuted_layout(Tagged()) == [1, 0] and permuted_layout(Identity()) is None and permuted_layout(object()) is None
    assert physical_shape([4, 3], [1, 0]) == [3, 4] and physical_shape([4, 3], None) == [4, 3]
    v = np.arange(4 * 3 * 2).reshape(4, 3, 2)
    p = physical_value(Tagged(), v)
    assert p.shape == (3, 4, 2) and p.flags.c_contiguous and p[2, 1, 1] == v[1, 2, 1]
    assert physical_value(Identity(), v) is v
    x = np.ones(3, np.float32)
    got = ndarray_value(x)
    assert got is not x and got.dtype == np.float32
    assert _np_to_qd(_numpy_dtype(np.dtype("bool"))) == "u1"
    assert _np_to_qd(_numpy_dtype("torch.float32")) == "f32" and _np_to_qd(_numpy_dtype("torch.int64")) == "i64"
