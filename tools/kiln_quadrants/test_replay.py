"""Tests of `kiln-quadrants run`: the whole corpus through Kiln, against Quadrants.

Run by `make test-quadrants` with the venv `make quadrants` builds and
KILN_BIN_DIR pointing at the built tools (kiln-import, kiln-run,
kiln-compile). Every program of testdata/quadrants/ must agree (exit 0);
each refused program is refused by name (exit 2); the racy prefix sum is
reported at its Python line with both accesses (exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import typing
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CORPUS = ROOT / "testdata" / "quadrants"
WRAPPER = ROOT / "tools" / "kiln-quadrants"

sys.path.insert(0, str(HERE.parent))
from kiln_quadrants import pack, records  # noqa: E402
from kiln_quadrants.capture import FORCED_INIT  # noqa: E402
from kiln_quadrants.replay import (  # noqa: E402
    DEFAULT_CALLS,
    KEEP_HINT,
    KernelReport,
    Replay,
    _run_in,
    distribution_difference,
    first_difference,
    kernel_params,
    max_ulps,
    newer_build,
    reorder_factor,
    sums_in_any_order,
    threads_of,
    tool_dir,
    ulp_distance,
)
from kiln_quadrants.test_capture import CHANGES_X_ONLY, KILLED_IN_A_CALL, NOISE  # noqa: E402

PROGRAMS = sorted(CORPUS.glob("*.py"))
REFUSED = sorted((CORPUS / "refused").glob("*.py"))


def kq(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None, wrapper: Path = WRAPPER) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ if env is None else env, KILN_QUADRANTS_PYTHON=sys.executable)
    return subprocess.run([str(wrapper), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def corpus_runs(cache: str) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every corpus program through `kiln-quadrants run`, once."""
    return {p.name: kq("run", "--cache-dir", cache, str(p.relative_to(ROOT))) for p in PROGRAMS}


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_corpus_program_agrees(program: Path, corpus_runs):
    r = corpus_runs[program.name]
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("ok ", "FAIL", "SKIP"))]
    assert lines and all(ln.startswith("ok ") for ln in lines), r.stdout
    assert "0 differ, 0 not imported" in r.stdout


def test_corpus_has_forty_kernels(corpus_runs):
    """The corpus is what the issue asks: at least 40 kernels, all agreeing."""
    total = sum(ln.startswith("ok ") for r in corpus_runs.values() for ln in r.stdout.splitlines())
    assert total >= 40, total


@pytest.mark.parametrize("program", REFUSED, ids=lambda p: p.name)
def test_refused_program_names_the_feature(program: Path, cache: str):
    r = kq("run", "--cache-dir", cache, str(program.relative_to(ROOT)))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "cannot be imported" in r.stdout and "cannot import" in r.stdout, r.stdout


def test_race_is_reported_at_the_python_line(cache: str):
    prog = CORPUS / "racy" / "prefix_sum.py"
    r = kq("run", "--check-races", "--cache-dir", cache, str(prog.relative_to(ROOT)))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "data race" in r.stdout, r.stdout
    # Both accesses, at their Python lines in the program.
    notes = [ln for ln in r.stdout.splitlines() if "racy/prefix_sum.py:" in ln and ": note: iteration" in ln]
    assert len(notes) >= 2, r.stdout
    assert any("reads here" in ln for ln in notes) and any("writes here" in ln for ln in notes), r.stdout


def test_a_race_on_a_vector_is_per_component(cache: str):
    """A vec2 field smoothed in place: the y components race (iteration i
    reads p[i + 1].y, which iteration i + 1 writes), the x ones do not."""
    prog = CORPUS / "racy" / "neighbour_vec.py"
    r = kq("run", "--check-races", "--cache-dir", cache, str(prog.relative_to(ROOT)))
    assert r.returncode == 1, r.stdout + r.stderr
    races = re.findall(r"writes @p\[(\d+), (\d+)\], which iteration (\d+) reads", r.stdout)
    assert races and all(comp == "1" and int(it) == int(i) - 1 for i, comp, it in races), r.stdout
    notes = [ln for ln in r.stdout.splitlines() if "racy/neighbour_vec.py:24:" in ln and ": note: iteration" in ln]
    assert any("writes here" in ln for ln in notes) and any("reads here" in ln for ln in notes), r.stdout


def test_calls_past_the_cap_run_but_are_not_checked(tmp_path: Path, cache: str):
    """--calls N checks the first N calls of each kernel (10 by default);
    the program runs every call, and the summary says how many were checked."""
    prog = tmp_path / "steps.py"
    prog.write_text(
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "x = qd.field(qd.i32, shape=8)\n"
        "@qd.kernel\n"
        "def step(k: qd.i32):\n"
        "    for i in x:\n"
        "        x[i] += i * k\n"
        "@qd.kernel\n"
        "def once():\n"
        "    for i in x:\n"
        "        x[i] -= 1\n"
        "for k in range(15):\n"
        "    step(k)\n"
        "once()\n"
        "print('total', x.to_numpy().sum())\n"
    )
    total = f"total {sum(i * sum(range(15)) - 1 for i in range(8))}"
    r = kq("run", "--cache-dir", cache, str(prog))
    assert r.returncode == 0 and total in r.stdout, r.stdout + r.stderr
    assert "ok   step: 10 of 15 calls (--calls), 1 field," in r.stdout, r.stdout
    assert "ok   once: 1 call, 1 field," in r.stdout, r.stdout
    r = kq("run", "--calls", "0", "--cache-dir", cache, str(prog))
    assert r.returncode == 0 and "ok   step: 15 calls, 1 field," in r.stdout, r.stdout
    r = kq("run", "--calls", "2", "--cache-dir", cache, str(prog))
    assert r.returncode == 0 and "ok   step: 2 of 15 calls (--calls)" in r.stdout, r.stdout


def test_derivative_kernels_are_checked_like_any_other(tmp_path: Path, cache: str):
    """A kernel's derivative (a Tape's backward pass) is captured, imported
    and replayed as a kernel of its own (`k.grad`), with the gradient
    fields (`x.grad`) among the values compared; its IR is not printed."""
    prog = tmp_path / "grad.py"
    prog.write_text(
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "x = qd.field(qd.f32, shape=4, needs_grad=True)\n"
        "loss = qd.field(qd.f32, shape=(), needs_grad=True)\n"
        "@qd.kernel\n"
        "def square_sum():\n"
        "    for i in x:\n"
        "        loss[None] += x[i] * x[i]\n"
        "x.from_numpy(__import__('numpy').arange(4, dtype='float32'))\n"
        "with qd.ad.Tape(loss=loss):\n"
        "    square_sum()\n"
        "print('grad', x.grad.to_numpy().tolist())\n"
    )
    keep = tmp_path / "keep"
    r = kq("run", "--keep", str(keep), "--cache-dir", cache, str(prog))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "grad [0.0, 2.0, 4.0, 6.0]" in r.stdout and "ok   square_sum: 1 call" in r.stdout, r.stdout
    assert "ok   square_sum.grad: 1 call, " in r.stdout, r.stdout
    assert "1 kernels" not in r.stdout and "2 kernels: 2 agree, 0 differ, 0 not imported" in r.stdout, r.stdout
    assert "kernel {" not in r.stdout, r.stdout
    table = json.loads((keep / "capture" / "fields.json").read_text())
    assert [f["name"] for f in table["fields"]] == ["x", "x.grad", "loss", "loss.grad"], table
    calls = records.load_capture(keep / "capture" / "capture.json")["calls"]
    assert [c.get("derivative") for c in calls] == [None, "reverse"], calls


def test_a_write_out_of_bounds_is_the_programs_bug(tmp_path: Path, cache: str):
    """Quadrants (without debug=True) lets x[10] of a 10-element field
    through; Kiln's bounds check stops it. That is said as the program's
    bug, once per call, with the index, the field and the Python line."""
    prog = tmp_path / "oob.py"
    prog.write_text(
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "x = qd.field(qd.i32, shape=10)\n"
        "@qd.kernel\n"
        "def k(n: qd.i32):\n"
        "    for i in range(n):\n"
        "        x[i] = i * 3\n"
        "k(11)\n"
    )
    r = kq("run", "--cache-dir", cache, str(prog))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL k: the program writes out of bounds" in r.stdout, r.stdout
    want = f"call 0: the program writes out of bounds: index 10 of @x, of shape [10] at {prog}:7:9:"
    assert r.stdout.count(want) == 1, r.stdout


def test_two_kernels_of_one_name_in_one_runtime(tmp_path: Path, cache: str):
    """Two functions named k (from two factories), with different
    arguments, called in turn: each is imported with its own arguments
    (the table keys the second by its compiled name, k_cN) and reported
    apart; the first one's second call replays its own log."""
    prog = tmp_path / "same.py"
    prog.write_text(
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "x = qd.field(qd.f32, shape=4)\n"
        "y = qd.field(qd.i32, shape=4)\n"
        "def make_a():\n"
        "    @qd.kernel\n"
        "    def k(s: qd.f32):\n"
        "        for i in x:\n"
        "            x[i] = i * s\n"
        "    return k\n"
        "def make_b():\n"
        "    @qd.kernel\n"
        "    def k(n: qd.i32, t: qd.template()):\n"
        "        for i in t:\n"
        "            t[i] = i + n\n"
        "    return k\n"
        "a, b = make_a(), make_b()\n"
        "a(1.5)\n"
        "b(7, y)\n"
        "a(2.5)\n"
    )
    r = kq("run", "--cache-dir", cache, str(prog))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok   k (same.py:6): 2 calls, 1 field," in r.stdout, r.stdout
    assert "ok   k (same.py:12): 1 call, 1 field," in r.stdout, r.stdout


def test_calls_with_ndarrays_of_other_shapes_and_of_no_elements(tmp_path: Path, cache: str):
    """Quadrants compiles a kernel once for ndarrays of any shape; a KIR
    field has one: each call whose ndarrays have other shapes is imported
    against a table of its own shapes, an ndarray of no elements included
    (its loops run no iteration), and every call is checked."""
    prog = tmp_path / "shapes.py"
    prog.write_text(
        "import numpy as np\n"
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "@qd.kernel\n"
        "def scale(a: qd.types.ndarray(dtype=qd.f32, ndim=2), b: qd.types.ndarray(dtype=qd.f32, ndim=1), s: qd.f32):\n"
        "    for i, j in a:\n"
        "        a[i, j] = a[i, j] * s + j\n"
        "    for k in range(a.shape[0]):\n"
        "        b[k % b.shape[0]] += a[k, 1]\n"
        "b = np.zeros(2, dtype=np.float32)\n"
        "for rows in (0, 3, 5, 3, 0):\n"
        "    scale(np.arange(rows * 2, dtype=np.float32).reshape(rows, 2), b, 2.0)\n"
        "scale(np.ones((4, 2), dtype=np.float32), np.zeros(3, dtype=np.float32), 0.5)\n"
    )
    keep = tmp_path / "keep"
    r = kq("run", "--cache-dir", cache, "--keep", str(keep), str(prog))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok   scale: 6 calls, 2 fields, JIT and interpreter agree" in r.stdout, r.stdout
    # One import per distinct set of shapes: (0, 2) and 2; (3, 2); (5, 2); (4, 2) and 3.
    assert len(list((keep / "kir").glob("*.kir"))) == 4, sorted(p.name for p in (keep / "kir").iterdir())


def test_kernels_are_told_apart_by_their_compilation(tmp_path: Path, cache: str):
    """Issue 42: kernels one factory makes share a name and a place: they
    were one summary line, the second imported with the first's argument
    types ('cannot be imported'), and a call that compiled nothing replayed
    the last compilation of the name, another kernel's. A template kernel's
    call replayed the last instance compiled, not its own. Now each call
    replays the compilation it ran, and each kernel is a line."""
    prog = tmp_path / "made.py"
    prog.write_text(
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "x = qd.field(qd.i32, shape=4)\n"
        "y = qd.field(qd.f32, shape=4)\n"
        "z = qd.field(qd.i32, shape=8)\n"
        "def make(dt, f):\n"
        "    @qd.kernel\n"
        "    def put(a: dt):\n"
        "        for i in f:\n"
        "            f[i] = a + i\n"
        "    return put\n"
        "@qd.kernel\n"
        "def fill(t: qd.template(), v: qd.i32):\n"
        "    for i in t:\n"
        "        t[i] = v\n"
        "put_i, put_f = make(qd.i32, x), make(qd.f32, y)\n"
        "put_i(7)\n"
        "put_f(0.5)\n"
        "put_i(9)\n"
        "fill(x, 1)\n"
        "fill(z, 2)\n"
        "fill(x, 3)\n"
    )
    r = kq("run", "--cache-dir", cache, str(prog))
    assert r.returncode == 0, r.stdout + r.stderr
    puts = re.findall(r"^ok   put \(made.py:7, put_c(\d+)\): (\d) calls?, 1 field,", r.stdout, re.M)
    assert len(puts) == 2 and puts[0][0] != puts[1][0] and sorted(n for _, n in puts) == ["1", "2"], r.stdout
    assert "ok   fill: 3 calls, 2 fields," in r.stdout, r.stdout
    assert "3 kernels: 3 agree, 0 differ, 0 not imported" in r.stdout, r.stdout


def test_a_capture_the_records_do_not_describe_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """The replay reads capture.json through records.py's checked loader: a
    call without `compiled` stops the run with one line naming it, and
    nothing is replayed from it."""

    def broken_capture(self: Replay) -> int:
        self.cap.mkdir(parents=True)
        call = {"kernel": "k", "call": 0, "log": None, "args": {}}
        cap = {"program": "p.py", "argv": [], "init": [], "forced": FORCED_INIT, "calls": [call]}
        (self.cap / "capture.json").write_text(json.dumps(cap))
        return 0

    monkeypatch.setattr(Replay, "capture", broken_capture)
    ns = argparse.Namespace(program="p.py", keep=str(tmp_path), timeout=None)
    assert _run_in(tmp_path, ns, tmp_path) == 1
    err = capsys.readouterr().err
    assert "kiln-quadrants: error: " in err and "capture.json: not a CaptureFile" in err, err
    assert err.rstrip().endswith("calls[0]: no key 'compiled' (Call)"), err
    # --keep DIR says why it holds no replayed call.
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["calls"] == [] and manifest["incomplete"] == err.strip().removeprefix("kiln-quadrants: error: "), manifest


def test_an_import_error_says_when_output_was_interleaved_with_the_ir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]):
    """Output written into a dump cannot be told from the dump's own lines;
    kiln-import refuses the line, and when the capture found output among
    the IR (between a label and its dump), the report says so, so that
    the refusal is not a mystery."""
    committed = CORPUS / "captured" / "saxpy"

    def noisy_capture(self: Replay) -> int:
        shutil.copytree(committed, self.cap)
        log = self.cap / "calls" / "001-saxpy.offload.log"
        log.write_text(log.read_text().replace("$2 = argload[0]", "$2 = argltick 7\noad[0]", 1))
        cap = json.loads((self.cap / "capture.json").read_text())
        cap["calls"] = cap["calls"][1:2]
        cap["calls"][0]["interleaved"] = ["tick 6"]
        (self.cap / "capture.json").write_text(json.dumps(cap))
        return 0

    monkeypatch.setattr(Replay, "capture", noisy_capture)
    ns = argparse.Namespace(program="saxpy.py", keep=str(tmp_path), timeout=None, ulps=4, check_races=False, cache_dir=None)
    assert _run_in(tmp_path / "work", ns, Path(os.environ["KILN_BIN_DIR"])) == 2
    out = capsys.readouterr().out
    assert "SKIP saxpy: cannot be imported:" in out and "001-saxpy.offload.log:9:" in out, out
    assert ("(output was written among the IR while the kernel compiled, 1 line of it found, e.g. 'tick 6': "
            "the dumps may hold more)") in out, out


def test_a_thread_printing_while_kernels_compile_leaves_them_importable(tmp_path: Path, cache: str):
    """Issue 42: a background thread printing while a kernel compiled made
    it 'cannot be imported'; its output now passes through, every line."""
    prog = tmp_path / "chatty.py"
    prog.write_text(
        "import threading, time\n"
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "x = qd.field(qd.f32, shape=64)\n"
        "running = True\n"
        "def chatter():\n"
        "    n = 0\n"
        "    while running:\n"
        "        print('tick', n)\n"
        "        n += 1\n"
        "        time.sleep(0)\n"
        "    print('ticks', n)\n"
        "t = threading.Thread(target=chatter)\n"
        "t.start()\n"
        "@qd.kernel\n"
        "def a():\n"
        "    for i in x:\n"
        "        x[i] = qd.sin(i * 0.5) + qd.cos(i * 0.25)\n"
        "@qd.kernel\n"
        "def b(s: qd.f32):\n"
        "    for i in x:\n"
        "        x[i] = x[i] * s + qd.sqrt(qd.abs(x[i]))\n"
        "a()\n"
        "b(2.0)\n"
        "running = False\n"
        "t.join()\n"
    )
    r = kq("run", "--cache-dir", cache, str(prog))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok   a: 1 call" in r.stdout and "ok   b: 1 call" in r.stdout, r.stdout
    ticks = [int(ln.split()[1]) for ln in r.stdout.splitlines() if ln.startswith("tick ")]
    total = int(re.search(r"^ticks (\d+)$", r.stdout, re.M).group(1))  # type: ignore[union-attr]
    assert sorted(ticks) == list(range(total)), r.stdout


def test_keep_writes_the_manifest(tmp_path: Path, cache: str):
    keep = tmp_path / "keep"
    r = kq("run", "--keep", str(keep), "--cache-dir", cache, "testdata/quadrants/saxpy.py")
    assert r.returncode == 0, r.stdout + r.stderr
    m = json.loads((keep / "manifest.json").read_text())
    assert records.check(m, records.Manifest) == []
    saxpy = [c for c in m["calls"] if c["kernel"] == "saxpy"]
    assert len(saxpy) == 2
    for c in m["calls"]:
        assert (keep / c["kir"]).is_file()
        for v in c["values"].values():
            for k in ("before", "quadrants", "kiln", "kiln-interp"):
                assert pack.load(keep, v[k]).shape == (4096,), (k, v)
            # Kiln's value, equal to Quadrants', is Quadrants' blob.
            assert v["kiln"] == v["kiln-interp"] == v["quadrants"], v
    assert m["stores"] == ["capture/values", "kiln"]
    assert not (keep / "kiln.pack").exists(), "a value equal to Quadrants' was stored again"
    # A non-empty --keep directory is refused.
    r = kq("run", "--keep", str(keep), "testdata/quadrants/saxpy.py")
    assert r.returncode == 2 and "not empty" in r.stderr


def test_a_disagreement_names_kernel_call_field_index_and_values(tmp_path: Path, cache: str):
    """A tolerance of 0 ulps makes math_opts' tanh (2 ulps from glibc's,
    docs/quadrants.md, "Tolerance") a disagreement: the report names the
    kernel, the call, the field, the first index and both values, and the
    exit status is 1."""
    r = kq("run", "--ulps", "0", "--cache-dir", cache, "testdata/quadrants/math_opts.py")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL exp_ops" in r.stdout, r.stdout
    fail = [ln for ln in r.stdout.splitlines() if "call " in ln and "field @" in ln]
    assert fail, r.stdout
    assert re.search(r"field @\w+\[\d+, \d+\]: Quadrants \S+, Kiln \((jit|interp)\) \S+ \(\d+ ulps > 0\)", fail[0]), fail[0]


def test_a_program_that_raises_gets_its_traceback(tmp_path: Path):
    prog = tmp_path / "raises.py"
    prog.write_text("import quadrants as qd\nqd.init(arch=qd.cpu)\nraise ValueError('planted')\n")
    r = kq("run", str(prog))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "ValueError: planted" in r.stderr and "Traceback" in r.stderr


def test_a_kernel_of_no_task_agrees_and_one_quadrants_refuses_is_not_compared(tmp_path: Path, cache: str):
    """Issue 41: a kernel Quadrants compiles to no offloaded task has nothing
    to run and agrees when Quadrants changed no field (it was refused, and
    the bridge crashed on one it printed no IR for); a kernel Quadrants
    raises on is 'Quadrants raised; nothing to compare', not a disagreement."""
    prog = tmp_path / "empty.py"
    prog.write_text(
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "x = qd.field(qd.i32, shape=4)\n"
        "@qd.kernel\n"
        "def nothing():\n"
        "    pass\n"
        "@qd.kernel\n"
        "def switched_off():\n"
        "    if qd.static(False):\n"
        "        x[0] = 1\n"
        "@qd.kernel\n"
        "def refused():\n"
        "    x[0] = no_such_name\n"
        "@qd.kernel\n"
        "def fill():\n"
        "    for i in x:\n"
        "        x[i] = i\n"
        "fill()\n"
        "nothing()\n"
        "switched_off()\n"
        "try:\n"
        "    refused()\n"
        "except Exception as e:\n"
        "    print('refused', type(e).__name__)\n"
    )
    r = kq("run", "--cache-dir", cache, str(prog))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok   nothing: 1 call, no task to run (Quadrants compiled none), no field changed" in r.stdout, r.stdout
    assert "ok   switched_off: 1 call, no task to run" in r.stdout, r.stdout
    assert "SKIP refused: Quadrants raised; nothing to compare:\n    call 3: QuadrantsNameError" in r.stdout, r.stdout
    assert "4 kernels: 3 agree, 0 differ, 0 not imported, 1 raised in Quadrants" in r.stdout, r.stdout


@pytest.mark.parametrize(
    "args, said",
    [
        (["--keep", "/etc/passwd", "testdata/quadrants/saxpy.py"], "--keep /etc/passwd: not a directory"),
        (["--keep", "/etc/passwd/sub", "testdata/quadrants/saxpy.py"], "--keep /etc/passwd/sub: not a directory"),
        (["--keep", "/dev/null", "testdata/quadrants/saxpy.py"], "--keep /dev/null: not a directory"),
        (["no/such/program.py"], "no/such/program.py: no such file"),
        (["testdata"], "testdata: not a file"),
        (["--ulps", "-3", "testdata/quadrants/saxpy.py"], "--ulps takes 0 or more units in the last place, not -3"),
        (["--calls", "-1", "testdata/quadrants/saxpy.py"], "--calls takes 0 (every call) or more, not -1"),
        (["--timeout", "0", "testdata/quadrants/saxpy.py"], "--timeout takes a number of seconds above 0, not 0"),
        (["--keep", "", "testdata/quadrants/saxpy.py"], "--keep takes a directory (new or empty), not ''"),
        (["--ulps", "abc", "testdata/quadrants/saxpy.py"], "--ulps takes 0 or more units in the last place, not abc"),
        (["--ulps", "1.5", "testdata/quadrants/saxpy.py"], "--ulps takes 0 or more units in the last place, not 1.5"),
        (["--calls", "ten", "testdata/quadrants/saxpy.py"], "--calls takes 0 (every call) or more, not ten"),
        (["--timeout", "soon", "testdata/quadrants/saxpy.py"], "--timeout takes a number of seconds above 0, not soon"),
        (["--timeout", "nan", "testdata/quadrants/saxpy.py"], "--timeout takes a number of seconds above 0, not nan"),
        (["--ulps"], "argument --ulps: expected one argument"),
        ([], "the following arguments are required: PROGRAM.py"),
        (["--no-such-option", "testdata/quadrants/saxpy.py"], "unrecognized arguments: --no-such-option"),
    ],
    ids=["keep-file", "keep-under-file", "keep-dev-null", "missing", "directory", "negative-ulps", "negative-calls", "zero-timeout",
         "keep-empty-name", "ulps-not-a-number", "ulps-not-an-integer", "calls-not-a-number", "timeout-not-a-number", "timeout-nan",
         "ulps-without-value", "no-program", "unknown-option"],
)
def test_bad_arguments_are_one_line_and_status_2(args: list[str], said: str):
    """Issue 42: these gave Python tracebacks that started inside the
    bridge, or argparse's usage text before its error; an empty --keep was
    taken for no --keep."""
    r = kq("run", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr == f"kiln-quadrants: error: {said}\n", r.stderr
    assert r.stdout == "", r.stdout


def test_usage_errors_come_before_the_tools_are_looked_for(tmp_path: Path):
    """Every argument is checked before anything else: with no Kiln tools
    either, a bad --keep, --ulps or program is still the usage error
    (status 2), not the tools' (status 1), and no --keep directory is made."""
    env = dict(os.environ, KILN_BIN_DIR=str(tmp_path / "no-tools"))
    keep = tmp_path / "keep"
    for args, said in [
        (["--keep", "/etc/passwd", "testdata/quadrants/saxpy.py"], "--keep /etc/passwd: not a directory"),
        (["--keep", str(keep), "--ulps", "-1", "testdata/quadrants/saxpy.py"], "--ulps takes 0 or more units in the last place, not -1"),
        (["--keep", str(keep), "no/such/program.py"], "no/such/program.py: no such file"),
    ]:
        r = kq("run", *args, env=env)
        assert (r.returncode, r.stderr) == (2, f"kiln-quadrants: error: {said}\n"), r.stderr
    assert not keep.exists()


def test_a_syntax_error_is_the_programs_at_its_line(tmp_path: Path):
    prog = tmp_path / "broken.py"
    prog.write_text("import quadrants as qd\nx = (1,\n")
    r = kq("run", str(prog))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith(f"kiln-quadrants: error: {prog}:2:"), r.stderr
    assert "Traceback" not in r.stderr


def test_a_program_killed_by_a_signal_says_which(tmp_path: Path):
    prog = tmp_path / "killed.py"
    prog.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    r = kq("run", str(prog))
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"kiln-quadrants: error: {prog} was killed by SIGKILL" in r.stderr, r.stderr


def test_a_program_killed_in_a_call_is_named_and_its_calls_before_checked(tmp_path: Path, cache: str):
    """Killed while Quadrants compiled a kernel: one line naming the signal
    and the call, the calls completed before it checked, exit 1; --keep
    DIR's manifest says why it holds no more."""
    prog = tmp_path / "dies.py"
    prog.write_text(KILLED_IN_A_CALL)
    keep = tmp_path / "keep"
    r = kq("run", "--keep", str(keep), "--cache-dir", cache, str(prog))
    assert r.returncode == 1, r.stdout + r.stderr
    said = f"{prog} was killed by SIGKILL during call 2 (dies)"
    assert r.stderr.endswith(f"kiln-quadrants: error: {said}: checking the 2 calls made before\n"), r.stderr
    assert "ok   k: 2 calls, 1 field," in r.stdout and "1 kernels: 1 agree" in r.stdout, r.stdout
    manifest = json.loads((keep / "manifest.json").read_text())
    assert records.check(manifest, records.Manifest) == []
    assert [c["call"] for c in manifest["calls"]] == [0, 1]
    assert manifest["incomplete"] == f"{said}: these are the calls made before", manifest


@pytest.mark.parametrize(
    "ending, said",
    [
        ("raise ValueError('planted')\n", "raised ValueError: planted"),
        ("import sys; sys.exit(3)\n", "exited with status 3"),
        ("os.kill(os.getpid(), signal.SIGTERM)\n", "was killed by SIGTERM"),
        ("raise KeyboardInterrupt\n", "raised KeyboardInterrupt"),
    ],
    ids=["raises", "exits-3", "sigterm", "keyboard-interrupt"],
)
def test_a_program_that_ends_early_is_one_line_and_its_calls_are_checked(tmp_path: Path, cache: str, ending: str, said: str):
    """Whatever ends the program before its end, one line says what (a
    SIGTERM read as the signal, not as status 143), and the calls it made
    are checked; exit 1."""
    prog = tmp_path / "early.py"
    prog.write_text(KILLED_IN_A_CALL.replace("dies()\n", ending))
    r = kq("run", "--cache-dir", cache, str(prog))
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"kiln-quadrants: error: {prog} {said}: checking the 2 calls made before\n" in r.stderr, r.stderr
    assert "ok   k: 2 calls, 1 field," in r.stdout, r.stdout


def test_a_failure_of_the_capture_is_one_line_naming_it(tmp_path: Path, cache: str):
    """The capture's own failure is said as the capture's, in one line
    naming the call, not as the program's (which cannot catch it). Here
    the file the capture writes the next call's log in is made a
    directory."""
    keep = tmp_path / "keep"
    blocked = keep.resolve() / "capture" / "calls" / "002-k.log"
    prog = tmp_path / "breaks.py"
    prog.write_text(KILLED_IN_A_CALL.replace(
        "dies()\n",
        f"os.mkdir({str(blocked)!r})\n"
        "try:\n    k()\nexcept Exception:\n    print('the program caught it')\n",
    ))
    r = kq("run", "--keep", str(keep), "--cache-dir", cache, str(prog))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "the program caught it" not in r.stdout and "Traceback" not in r.stderr, r.stdout + r.stderr
    said = f"the capture failed in call 2 (k): IsADirectoryError: [Errno 21] Is a directory: '{blocked}'"
    assert r.stderr.endswith(f"kiln-quadrants: error: {said}: checking the 2 calls made before\n"), r.stderr
    assert "ok   k: 2 calls, 1 field," in r.stdout, r.stdout


def test_a_relative_keep_is_not_moved_by_the_programs_chdir(tmp_path: Path, cache: str):
    """A program that changes directory gave a traceback through the
    capture (its files went under the new directory, where there was none)."""
    prog = tmp_path / "moves.py"
    prog.write_text(KILLED_IN_A_CALL.replace("dies()\n", "os.chdir('/')\nk()\n"))
    r = kq("run", "--keep", "keep", "--cache-dir", cache, str(prog), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok   k: 3 calls, 1 field," in r.stdout, r.stdout
    assert "incomplete" not in json.loads((tmp_path / "keep" / "manifest.json").read_text())


def test_a_call_replayed_in_process_equals_kiln_run(tmp_path: Path, cache: str):
    """The replay runs each call through `import kiln` in its own process:
    what it computed (kept in --keep's stores) is what kiln-run computes
    from the same KIR and the same values, bit for bit, on both engines."""
    keep = tmp_path / "keep"
    r = kq("run", "--keep", str(keep), "--cache-dir", cache, str(CORPUS / "particles.py"))
    assert r.returncode == 0, r.stdout + r.stderr
    m = json.loads((keep / "manifest.json").read_text())
    call = next(c for c in m["calls"] if c["values"] and c["call"] > 0)
    bins = Path(os.environ["KILN_BIN_DIR"])
    for engine, key in (("jit", "kiln"), ("interp", "kiln-interp")):
        cmd = [str(bins / "kiln-run"), str(keep / call["kir"]), "--kernel", call["kernel"], "--denormals=flush", "--engine", engine]
        cmd += ["--cache-dir", cache] if engine == "jit" else []
        cmd += [x for n, a in call["args"].items() if a["kind"] == "scalar" for x in ("--arg", f"{n}={a['value']!r}")]
        for fname, v in call["values"].items():
            if "before" not in v:
                continue
            np.save(tmp_path / f"{fname}.in.npy", pack.load(keep, v["before"]))
            cmd += ["--input", f"@{fname}={tmp_path / f'{fname}.in.npy'}", "--output", f"@{fname}={tmp_path / f'{fname}.{engine}.npy'}"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        for fname, v in call["values"].items():
            if "before" in v:
                np.testing.assert_array_equal(np.load(tmp_path / f"{fname}.{engine}.npy"), pack.load(keep, v[key]))


def test_ctrl_c_stops_the_program_too(tmp_path: Path):
    """Ctrl-C (SIGINT to the run's process group, as a terminal sends it)
    reaches the program, which runs in a session of its own: it ends with
    its KeyboardInterrupt, the run says so in one line, exit 130, and
    nothing outlives it."""
    prog = tmp_path / "forever.py"
    prog.write_text(KILLED_IN_A_CALL.replace("dies()\n", "import time\nprint('ready', flush=True)\nwhile True:\n    time.sleep(0.05)\n"))
    env = dict(os.environ, KILN_QUADRANTS_PYTHON=sys.executable)
    p = subprocess.Popen([str(WRAPPER), "run", str(prog)], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert p.stdout is not None
        while "ready" not in p.stdout.readline():
            pass
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 130, out + err
    assert err.endswith("KeyboardInterrupt\nkiln-quadrants: error: interrupted\n"), err
    assert f'File "{prog}", line' in err and "kiln_quadrants" not in err, err
    left = [cmd for cmd in command_lines() if str(prog) in cmd]
    assert not left, left


def command_lines() -> list[str]:
    """Every running process's command line (from /proc: a fresh machine
    may have no pgrep)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                found.append((d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                continue
    return found


def test_a_report_nobody_reads_ends_without_a_traceback(tmp_path: Path):
    """`kiln-quadrants run ... | head`, the reader gone before the start:
    Quadrants itself fails as it prints its banner (it would without the
    bridge too), which is one line naming Quadrants, and the run's own
    report to the closed pipe ends it quietly, never with a traceback."""
    def unread(program: Path, **env: str) -> str:
        p = subprocess.Popen([str(WRAPPER), "run", str(program)], cwd=ROOT, env=dict(os.environ, KILN_QUADRANTS_PYTHON=sys.executable, **env),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.stdout is not None and p.stderr is not None
        p.stdout.close()
        err = p.stderr.read()
        assert p.wait(timeout=120) == 1, err
        return err

    assert unread(CORPUS / "saxpy.py") == ("kiln-quadrants: error: Quadrants could not be imported: BrokenPipeError: "
                                           "[Errno 32] Broken pipe: no call was captured\n")
    # Without Quadrants' banner, a program that prints nothing runs and is
    # checked; the report is what meets the closed pipe.
    quiet = tmp_path / "quiet.py"
    quiet.write_text(KILLED_IN_A_CALL.replace("dies()\n", ""))
    assert unread(quiet, ENABLE_QUADRANTS_HEADER_PRINT="0") == ""


def test_a_python_without_quadrants_is_told_to_run_make_quadrants():
    env = dict(os.environ, KILN_QUADRANTS_PYTHON="/usr/bin/python3")
    r = subprocess.run([str(WRAPPER), "run", "testdata/quadrants/saxpy.py"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "run `make quadrants`" in r.stderr and "Traceback" not in r.stderr, r.stderr
    h = subprocess.run([str(WRAPPER), "--help"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert h.returncode == 0 and "usage: kiln-quadrants" in h.stdout, h.stderr


def test_random_kernels_are_checked_by_distribution_never_agree(corpus_runs):
    """random_init.py's kernels that draw are reported as checked by
    distribution, and the summary counts them apart from those that agree."""
    out = corpus_runs["random_init.py"].stdout
    for kernel in ["seed_board", "draw_noise", "throw_darts"]:
        line = next(ln for ln in out.splitlines() if ln.startswith(f"ok   {kernel}:"))
        assert "checked by distribution" in line and "agree with Quadrants" not in line, line
    assert "4 kernels: 1 agree, 3 checked by distribution, 0 differ, 0 not imported" in out, out


def test_a_wrong_distribution_is_reported():
    """Two samples of one distribution pass; Kiln's values in [0, 0.5)
    where Quadrants' are in [0, 1), a shifted mean, a wider spread and a
    far Monte-Carlo estimate do not."""
    rng = np.random.default_rng(5)
    quadrants = rng.random(20_000, dtype=np.float32)
    assert distribution_difference(quadrants, rng.random(20_000, dtype=np.float32)) is None
    half = (rng.random(20_000, dtype=np.float32) * 0.5).astype(np.float32)
    why = distribution_difference(quadrants, half)
    assert why is not None and why.startswith("mean"), why
    assert "span" in (distribution_difference(quadrants, quadrants + 2.0) or "")
    # The mean of two uniform draws: the same range and mean, half the variance.
    narrow = (rng.random(20_000) + rng.random(20_000)) / 2
    assert "variance" in (distribution_difference(rng.random(20_000), narrow) or "")
    bits = rng.integers(0, 2**32, 20_000, dtype=np.uint32)
    assert distribution_difference(bits, rng.integers(0, 2**32, 20_000, dtype=np.uint32)) is None
    assert distribution_difference(np.array(3.1416, dtype=np.float32), np.array(3.139, dtype=np.float32)) is None
    assert "apart" in (distribution_difference(np.array(3.1416, dtype=np.float32), np.array(2.9, dtype=np.float32)) or "")


def test_a_wrong_distribution_makes_the_kernel_differ(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """A kernel whose values are not Quadrants' distribution is a FAIL that
    names the field and the moment, counted among those that differ."""
    ns = argparse.Namespace(keep=str(tmp_path))
    replay = Replay(tmp_path, ns, tmp_path)
    rep = replay.report_for(0, "k", None, None)
    rep.calls, rep.by_distribution = 1, True
    rng = np.random.default_rng(9)
    replay.check_distribution(rep, 0, "x", "jit", rng.random(4096), rng.random(4096) * 0.5, None)
    assert replay.report() == 1
    out = capsys.readouterr().out
    assert "FAIL k\n" in out and "field @x: not Quadrants' distribution: mean" in out, out
    assert "1 kernels: 0 agree, 0 differ" not in out and "0 agree, 1 differ" in out, out
    assert isinstance(rep, KernelReport)


def test_ulp_distance():
    a = np.array([1.0, -0.0, 0.0, np.nan, 1.0], dtype=np.float32)
    b = np.array([np.nextafter(np.float32(1.0), np.float32(2.0)), 0.0, -0.0, np.nan, 1.0], dtype=np.float32)
    assert list(ulp_distance(a, b)) == [1, 0, 0, 0, 0]
    tiny = np.array([np.float32(1e-45)], dtype=np.float32)
    assert list(ulp_distance(tiny, -tiny)) == [2]
    x = np.array([1.0, 2.0], dtype=np.float64)
    assert list(ulp_distance(x, x)) == [0, 0]
    # f16: two bytes, the same line (the least subnormal is one step from 0).
    h = np.array([1.0, 65504.0, 6e-8, np.inf], dtype=np.float16)
    h1 = np.array([np.nextafter(np.float16(1.0), np.float16(0.0)), np.inf, -6e-8, np.inf], dtype=np.float16)
    assert list(ulp_distance(h, h1)) == [1, 1, 2, 0]
    d = first_difference(np.array([1, 2, 3], dtype=np.int32), np.array([1, 2, 4], dtype=np.int32), 4)
    assert d is not None
    assert d.index == (2,) and d.quadrants == 3 and d.kiln == 4
    assert first_difference(a, a.copy(), 0) is None
    # A 0-D field (a reduction's result): its distance keeps its shape.
    z, z1 = np.array(2.5, dtype=np.float32), np.array(np.nextafter(np.float32(2.5), np.float32(3.0)) * 1, dtype=np.float32)
    assert ulp_distance(z, z1).shape == ()
    d = first_difference(z, np.array(3.0, dtype=np.float32), 4, scaled=True)
    assert d is not None and d.index == () and d.quadrants == 2.5, d
    assert first_difference(z, z1, 4) is None
    d = first_difference(np.array(7, dtype=np.int64), np.array(8, dtype=np.int64), 4)
    assert d is not None and (d.index, d.quadrants, d.kiln) == ((), 7, 8), d


def test_reordered_sums_are_given_room_by_the_number_of_terms():
    """The tolerance of sums in any order grows as the square root of the
    largest array's element count (twice it); one term cannot be reordered."""
    assert reorder_factor([[3], [16, 32]]) == 2 * 23
    assert reorder_factor([]) == 1
    assert reorder_factor([[]]) == 1


def test_sums_in_any_order_are_compared_at_the_fields_scale():
    """A small result of large terms that cancel differs by many of its own
    ulps when the terms are added in another order; at the field's scale
    it is within tolerance, and a real difference is still one."""
    want = np.array([1.0, 2.7585775e-06, 0.5], dtype=np.float32)
    got = np.array([1.0, 2.7529895e-06, 0.5], dtype=np.float32)
    assert first_difference(want, got, 4) is not None
    assert first_difference(want, got, 4, scaled=True) is None
    assert max_ulps(want, got, scaled=True) <= 1
    got[2] = 0.5001
    d = first_difference(want, got, 4, scaled=True)
    assert d is not None and d.index == (2,)
    nan = np.array([np.nan, 1.0], dtype=np.float32)
    assert first_difference(nan, nan.copy(), 0, scaled=True) is None
    assert first_difference(nan, np.array([0.0, 1.0], dtype=np.float32), 4, scaled=True) is not None


def test_which_kernels_sum_in_any_order():
    head = "field @g : f32[8]\nfield @n : i32[8]\nkernel @k() {\n"
    shared = head + "  task @k.0 range_for %i.0 : i32 in 0 .. 8 {\n    %2 = rem %i.0, %1\n    atomic add @g[%2], %3\n  }\n}\n"
    own = head + "  task @k.0 range_for %i.0 : i32 in 0 .. 8 {\n    %4 = atomic add @g[%i.0], %3\n  }\n}\n"
    ints = shared.replace("atomic add @g[", "atomic add @n[")
    serial = shared.replace("range_for %i.0 : i32 in 0 .. 8", "serial")
    cells = head + "  task @k.0 struct_for %i.0.0, %i.0.1 in @h {\n    atomic add @g[%i.0.0, %i.0.1, %c], %3\n  }\n}\n"
    assert sums_in_any_order(shared)
    assert not sums_in_any_order(own) and not sums_in_any_order(ints) and not sums_in_any_order(serial)
    assert not sums_in_any_order(cells)
    assert sums_in_any_order(cells.replace("@g[%i.0.0, %i.0.1,", "@g[%i.0.1, %i.0.0,"))


EDIT_BEFORE = '''import quadrants as qd

qd.init(arch=qd.cpu)

N = 256
x = qd.field(qd.f32, shape=N)
y = qd.field(qd.f32, shape=N)


@qd.kernel
def two_loops(a: qd.f32):
    for i in range(N):
        x[i] = qd.cast(i, qd.f32) * 0.5
    for j in range(N):
        y[j] = a * x[j] + 1.0


two_loops(2.0)
'''


def test_editing_one_loop_recompiles_one_task(tmp_path: Path):
    """The seed's promise on a Quadrants kernel: edit one loop of the program,
    and kiln-key --diff names exactly one changed task, and a warm run of the
    edited kernel compiles exactly one."""
    bins = Path(os.environ["KILN_BIN_DIR"])
    kirs = []
    for name, text in [("before", EDIT_BEFORE), ("after", EDIT_BEFORE.replace("a * x[j] + 1.0", "a * x[j] - 1.0"))]:
        prog = tmp_path / f"{name}.py"
        prog.write_text(text)
        keep = tmp_path / f"keep-{name}"
        r = kq("run", "--keep", str(keep), "--cache-dir", str(tmp_path / "replay-cache"), str(prog))
        assert r.returncode == 0, r.stdout + r.stderr
        calls = json.loads((keep / "manifest.json").read_text())["calls"]
        kirs.append(keep / calls[0]["kir"])
    diff = subprocess.run([str(bins / "kiln-key"), "--diff", str(kirs[0]), str(kirs[1])], capture_output=True, text=True)
    assert diff.returncode == 1, diff.stderr  # keys differ: 1, as diff
    changed = [ln for ln in diff.stdout.splitlines() if ln.startswith("@")]
    assert len(changed) == 1 and changed[0].startswith("@two_loops.1"), diff.stdout
    assert "1 unchanged" in diff.stdout, diff.stdout

    cache = tmp_path / "cache"

    def compiled(kir: Path) -> int:
        r = subprocess.run(
            # The optimised tier, compiled before the launches: with the
            # default tiers a kernel this small would be interpreted first.
            [str(bins / "kiln-run"), str(kir), "--cache-dir", str(cache), "--tier=opt", "--stats=json", "--arg", "a=2.0"],
            capture_output=True, text=True,
        )
        assert r.returncode == 0, r.stderr
        stats = json.loads([ln for ln in r.stderr.splitlines() if ln.startswith("{")][-1])
        return int(stats["compiled"])

    assert compiled(kirs[0]) == 2
    assert compiled(kirs[1]) == 1
    assert compiled(kirs[1]) == 0


def test_a_field_of_the_same_name_shares_a_record_only_with_the_same_task(tmp_path: Path):
    """Two programs with a field `x` of different shapes: their tasks' keys
    differ (no record is shared); the same program captured twice keys alike."""
    bins = Path(os.environ["KILN_BIN_DIR"])
    keys = {}
    for name, n in [("a", 256), ("b", 512), ("a_again", 256)]:
        prog = tmp_path / f"{name}.py"
        prog.write_text(EDIT_BEFORE.replace("N = 256", f"N = {n}"))
        keep = tmp_path / f"keep-{name}"
        r = kq("run", "--keep", str(keep), "--cache-dir", str(tmp_path / "cache"), str(prog))
        assert r.returncode == 0, r.stdout + r.stderr
        kir = keep / json.loads((keep / "manifest.json").read_text())["calls"][0]["kir"]
        out = subprocess.run([str(bins / "kiln-key"), str(kir)], capture_output=True, text=True, check=True).stdout
        keys[name] = [line.split()[1] for line in out.splitlines()]
    assert keys["a"] == keys["a_again"]
    assert not set(keys["a"]) & set(keys["b"]), keys


# ---------------------------------------------------------------------------
# Where the tools come from (docs/quadrants.md, "Where the tools come from"),
# and what a failed run says about the files it names.


def _tool_links(d: Path, tools=("kiln-run", "kiln-import")) -> Path:
    """Directory ``d`` holding executable symlinks to the built tools."""
    d.mkdir(parents=True, exist_ok=True)
    for t in tools:
        (d / t).symlink_to(Path(os.environ["KILN_BIN_DIR"]) / t)
    return d


def _fake_tools(d: Path, mtime: float, tools=("kiln-run", "kiln-import")) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for t in tools:
        (d / t).write_text("#!/bin/sh\n")
        (d / t).chmod(0o755)
        os.utime(d / t, (mtime, mtime))
    return d


def test_the_first_path_directory_holding_the_tools_is_used_and_named(tmp_path: Path, cache: str):
    """Without KILN_BIN_DIR, a directory first on PATH wins over the
    checkout's builds, and -v says so; with KILN_BIN_DIR, that wins."""
    bins = _tool_links(tmp_path / "bins")
    env = {k: v for k, v in os.environ.items() if k != "KILN_BIN_DIR"}
    env["PATH"] = f"{bins}{os.pathsep}{env['PATH']}"
    r = kq("run", "-v", "--cache-dir", cache, "testdata/quadrants/saxpy.py", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"kiln-quadrants: using the tools in {bins} (found via $PATH)\n" in r.stderr, r.stderr
    assert KEEP_HINT not in r.stdout, r.stdout
    r = kq("run", "--verbose", "--cache-dir", cache, "testdata/quadrants/saxpy.py", env=dict(env, KILN_BIN_DIR=os.environ["KILN_BIN_DIR"]))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"kiln-quadrants: using the tools in {os.environ['KILN_BIN_DIR']} (found via $KILN_BIN_DIR)\n" in r.stderr, r.stderr
    r = kq("run", "--cache-dir", cache, "testdata/quadrants/saxpy.py", env=env)
    assert r.returncode == 0 and "using the tools" not in r.stderr, r.stderr


def test_a_kiln_bin_dir_without_the_tools_is_an_error_not_passed_over(tmp_path: Path):
    r = kq("run", "testdata/quadrants/saxpy.py", env=dict(os.environ, KILN_BIN_DIR=str(tmp_path)))
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr == f"kiln-quadrants: error: cannot find kiln-run in KILN_BIN_DIR ({tmp_path}): point it at the built tools, or unset it\n", r.stderr


def test_no_tools_anywhere_is_one_line_naming_the_order(tmp_path: Path):
    """A checkout with no build, no KILN_BIN_DIR and no tools on PATH: one
    line that says where the tools are looked for, exit 1, no traceback."""
    tools = tmp_path / "tools"
    shutil.copytree(HERE, tools / "kiln_quadrants", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(WRAPPER, tools / "kiln-quadrants")
    env = {k: v for k, v in os.environ.items() if k != "KILN_BIN_DIR"}
    env["PATH"] = "/usr/bin:/bin"
    r = kq("run", str(CORPUS / "saxpy.py"), env=env, wrapper=tools / "kiln-quadrants")
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr == ("kiln-quadrants: error: cannot find kiln-run and kiln-import: "
                        "set KILN_BIN_DIR, put the tools on PATH, or build them (make build)\n"), r.stderr


def test_the_newer_of_the_checkouts_builds_wins(tmp_path: Path):
    release = _fake_tools(tmp_path / "target" / "release", 1_000_000)
    debug = _fake_tools(tmp_path / "target" / "debug", 2_000_000)
    assert newer_build([release, debug]) == debug
    os.utime(release / "kiln-run", (3_000_000, 3_000_000))
    assert newer_build([release, debug]) == release
    (release / "kiln-import").unlink()  # a build without every tool is no candidate
    assert newer_build([release, debug]) == debug
    assert newer_build([tmp_path / "none"]) is None
    here = tmp_path / "tools" / "kiln_quadrants"
    found = tool_dir({"PATH": ""}, here)
    assert found[0] == debug and "checkout" in found[1], found


def test_the_lookup_order(tmp_path: Path):
    """$KILN_BIN_DIR, beside an installed kiln-quadrants, the first PATH
    directory holding both tools, the checkout's newer build: one directory."""
    prefix = tmp_path / "prefix"
    installed = prefix / "share" / "kiln" / "python" / "kiln_quadrants"
    checkout = tmp_path / "checkout" / "tools" / "kiln_quadrants"
    _fake_tools(tmp_path / "checkout" / "target" / "debug", 1_000_000)
    half = _fake_tools(tmp_path / "half", 1_000_000, tools=("kiln-run",))
    on_path = _fake_tools(tmp_path / "on-path", 1_000_000)
    own = _fake_tools(tmp_path / "own", 1_000_000)
    path = os.pathsep.join(["", str(half), str(on_path)])
    assert tool_dir({"PATH": path, "KILN_BIN_DIR": str(own)}, checkout) == (own, "via $KILN_BIN_DIR")
    assert tool_dir({"PATH": path}, checkout) == (on_path, "via $PATH")
    assert tool_dir({"PATH": path}, installed) == (on_path, "via $PATH")
    _fake_tools(prefix / "bin", 1_000_000)
    assert tool_dir({"PATH": path}, installed) == (prefix / "bin", "beside the installed kiln-quadrants")
    assert tool_dir({"PATH": str(half)}, installed / "nowhere") == \
        "cannot find kiln-run and kiln-import: set KILN_BIN_DIR, put the tools on PATH, or build them (make build)"
    assert tool_dir({"KILN_BIN_DIR": str(half), "PATH": path}, checkout) == \
        f"cannot find kiln-import in KILN_BIN_DIR ({half}): point it at the built tools, or unset it"


def test_a_failed_run_without_keep_says_to_rerun_with_keep(cache: str):
    """The import error names a log of the deleted temporary directory: the
    run ends by saying how to keep it."""
    r = kq("run", "--cache-dir", cache, "testdata/quadrants/refused/bitmasked.py")
    assert r.returncode == 2, r.stdout + r.stderr
    assert ".offload.log:" in r.stdout and r.stdout.splitlines()[-1] == KEEP_HINT, r.stdout
    assert "--keep DIR" in KEEP_HINT


@pytest.mark.parametrize(
    "args, kind",
    [(["testdata/quadrants/refused/bitmasked.py"], ".offload.log"), (["--check-races", "testdata/quadrants/racy/prefix_sum.py"], ".kir")],
    ids=["import-error", "race"],
)
def test_with_keep_the_messages_name_the_kept_files(tmp_path: Path, cache: str, args: list[str], kind: str):
    keep = tmp_path / "keep"
    r = kq("run", "--keep", str(keep), "--cache-dir", cache, *args)
    assert r.returncode in (1, 2), r.stdout + r.stderr
    named = re.findall(rf"({re.escape(str(keep))}/\S+?{re.escape(kind)}):\d+:\d+: error:", r.stdout)
    assert named, r.stdout
    assert all(Path(n).is_file() for n in named), named
    assert KEEP_HINT not in r.stdout and "/kiln-quadrants." not in r.stdout, r.stdout


def test_a_program_that_never_ends_is_stopped_and_its_calls_checked(tmp_path: Path, cache: str):
    """--timeout stops a program that outlives it (SIGTERM: the capture
    writes the calls so far), says so in one line, checks those calls, and
    exits 1."""
    prog = tmp_path / "forever.py"
    prog.write_text(
        "import time\n"
        "import quadrants as qd\n"
        "qd.init(arch=qd.cpu)\n"
        "x = qd.field(qd.i32, shape=4)\n"
        "@qd.kernel\n"
        "def bump():\n"
        "    for i in x:\n"
        "        x[i] += 1\n"
        "bump()\n"
        "while True:\n"
        "    time.sleep(0.1)\n"
    )
    r = kq("run", "--timeout", "6", "--cache-dir", cache, str(prog))
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"kiln-quadrants: error: {prog} did not finish within 6 s (--timeout): checking the 1 call made before\n" in r.stderr, r.stderr
    assert "ok   bump: 1 call, 1 field," in r.stdout and "1 kernels: 1 agree" in r.stdout, r.stdout


def test_max_disk_is_said_and_the_calls_kept_are_checked(tmp_path: Path, cache: str):
    """--max-disk passes to the capture; when it is reached one note says
    at which call and what was kept, the calls before it are checked, the
    kernel's line says why not every call was, and the run still agrees.
    A size that is not one is one line and exit 2, before anything runs."""
    prog = tmp_path / "budget.py"
    prog.write_text(CHANGES_X_ONLY.replace("(1.0, 2.0, 3.0)", "(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)").replace(
        "a * qd.sin(i * 0.01)", NOISE))
    r = kq("run", "--calls", "0", "--max-disk", "64K", "--cache-dir", cache, str(prog))
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"^kiln-quadrants: note: the --max-disk 64K budget was reached at call (\d): the values of the \1 calls "
                  r"before it were kept \(\d+\.\d MiB\); the later calls ran unchecked$", r.stderr, re.M)
    assert m is not None, r.stderr
    n = int(m.group(1))
    assert f"ok   k: {n} of 6 calls (--calls, --max-disk), 1 field," in r.stdout, r.stdout
    bad = kq("run", "--max-disk", "lots", str(prog))
    assert bad.returncode == 2 and bad.stdout == "", bad.stdout
    assert bad.stderr == "kiln-quadrants: error: --max-disk takes a size above 0, as 500K, 10M or 2G, not 'lots'\n", bad.stderr


def test_a_program_that_leaves_by_os_exit_is_checked(tmp_path: Path, cache: str):
    """os._exit after the calls ends the program at its end: every call it
    made is replayed and agrees."""
    prog = tmp_path / "leaves.py"
    prog.write_text(KILLED_IN_A_CALL.replace("dies()\n", "k()\nos._exit(0)\n"))
    r = kq("run", "--cache-dir", cache, str(prog))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok   k: 3 calls, 1 field, JIT and interpreter agree" in r.stdout, r.stdout


def test_a_kernels_later_calls_save_only_the_fields_it_touches(tmp_path: Path, cache: str):
    """Once a kernel's compilation is imported (in the capture, with the
    run's kiln-import), its later calls save only the fields its KIR
    declares: k writes x and never reads y, so y is saved at the first
    call alone; every call still agrees."""
    prog = tmp_path / "touch.py"
    prog.write_text(CHANGES_X_ONLY)
    keep = tmp_path / "keep"
    r = kq("run", "--keep", str(keep), "--cache-dir", cache, str(prog))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok   k: 3 calls, 1 field, JIT and interpreter agree" in r.stdout, r.stdout
    calls = records.load_capture(keep / "capture" / "capture.json")["calls"]
    assert [sorted(c.get("values", {})) for c in calls] == [["x", "y"], ["x"], ["x"]], calls


PRINTING = (
    "import quadrants as qd\n"
    "qd.init(arch=qd.cpu)\n"
    "x = qd.field(qd.i32, shape=4096)\n"
    "@qd.kernel\n"
    "def k(s: qd.f32):\n"
    "    print('start', s)\n"
    "    for i in x:\n"
    "        x[i] = i\n"
    "        print('i', i, i * s)\n"
    "k(0.5)\n"
)


def test_printed_lines_agree_as_multisets(tmp_path: Path, cache: str):
    """A parallel loop's prints come in whatever order Quadrants' threads
    ran them, Kiln's in iteration order: the lines agree as multisets."""
    prog = tmp_path / "printing.py"
    prog.write_text(PRINTING)
    r = kq("run", "--cache-dir", cache, str(prog))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok   k: 1 call, 1 field," in r.stdout, r.stdout
    assert "i 4095 2047.500000" in r.stdout, "the program's output passes through"


def test_a_printing_difference_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """A line Quadrants printed that Kiln did not (here: one the capture is
    made to say differently) is a difference of the call, with the lines."""
    prog = tmp_path / "printing.py"
    prog.write_text(PRINTING)
    real_capture = Replay.capture

    def edited_capture(self: Replay) -> int | None:
        done = real_capture(self)
        lines = (self.cap / "calls.jsonl").read_text().splitlines()
        first = json.loads(lines[0])
        printed = first["printed"]
        assert "i 7 3.500000" in printed and len(printed) == 4097, printed[:3]
        printed[printed.index("i 7 3.500000")] = "i 7 3.5"
        (self.cap / "calls.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
        return done

    monkeypatch.setattr(Replay, "capture", edited_capture)
    ns = argparse.Namespace(program=str(prog), args=[], calls=DEFAULT_CALLS, keep=str(tmp_path / "keep"), timeout=None,
                            ulps=4, check_races=False, cache_dir=None, verbose=False, max_disk=None)
    assert _run_in(tmp_path / "work", ns, Path(os.environ["KILN_BIN_DIR"])) == 1
    out = capsys.readouterr().out
    assert ("call 0: Kiln (jit) printed other lines than Quadrants: only Quadrants printed 1 line: 'i 7 3.5'; "
            "only Kiln printed 1 line: 'i 7 3.500000'") in out, out
    assert "call 0: Kiln (interp) printed other lines than Quadrants:" in out, out


def test_the_parameters_a_kernel_declares():
    """`kernel_params` reads a KIR kernel's parameters (the replay passes
    no argument the compiled kernel does not declare: one Quadrants never
    loads is no parameter, and is no disagreement)."""
    kir = "field @x : f32[8]\n\nkernel @k(%a: f32, %n: i32) {\n}\n\nkernel @j() {\n}\n"
    assert kernel_params(kir, "k") == {"a", "n"}
    assert kernel_params(kir, "j") == set()
    assert kernel_params(kir, "other") is None


def test_the_jit_runs_on_the_threads_the_program_gave_quadrants(tmp_path: Path):
    """Genesis gives Quadrants one CPU thread and counts out slots with
    parallel atomics, which then follow the iteration order: the JIT
    replays a runtime whose qd.init set `cpu_max_num_threads` on as many,
    the others on two; the interpreter is serial anyway."""
    cap = typing.cast(records.CaptureFile, {"init": [{"arch": "Arch.x64"}, {"arch": "Arch.x64", "cpu_max_num_threads": "1"},
                                                      {"cpu_max_num_threads": "'many'"}]})
    assert threads_of(cap) == {1: 1}
    ns = argparse.Namespace(cache_dir=None, check_races=False)
    replay = Replay(tmp_path, ns, tmp_path)
    replay.threads = threads_of(cap)
    jit = [dict(options) for engine, options in replay.engines(1) if engine == "jit"]
    assert jit and jit[0]["threads"] == 1
    assert [o["threads"] for e, o in replay.engines(0) if e == "jit"] == [2]
