"""`import kiln` (crates/kiln-python, docs/python.md): kernels run on numpy
arrays in place, the same as kiln-run, and every bad argument is an
exception that names it."""

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Literal

import kiln
import numpy as np
import pytest

SAXPY = """field @x : f32[8]
field @y : f32[8]

kernel @saxpy(%a: f32, %n: i32 = 8) {
  for %i in 0 .. %n {
    %xi = load @x[%i]
    %yi = load @y[%i]
    %p = mul %a, %xi
    %s = add %p, %yi
    store @y[%i], %s
  }
}
"""

Engine = Literal["jit", "interp"]
ENGINES: list[Engine] = ["jit", "interp"]

# Each KIR type, its numpy dtype, a start value, and that value plus one
# as the type computes it (wrapping, or rounding).
TYPES = [
    ("i8", np.int8, 127, -128),
    ("i16", np.int16, -2, -1),
    ("i32", np.int32, 2**31 - 1, -(2**31)),
    ("i64", np.int64, 41, 42),
    ("u8", np.uint8, 255, 0),
    ("u16", np.uint16, 7, 8),
    ("u32", np.uint32, 2**32 - 1, 0),
    ("u64", np.uint64, 2**64 - 1, 0),
    ("f32", np.float32, 0.5, 1.5),
    ("f64", np.float64, -1.25, -0.25),
    # 2048 + 1 is 2049, which f16 rounds to even: 2048.
    ("f16", np.float16, 2048.0, 2048.0),
]


def bin_dir() -> Path:
    return Path(os.environ.get("KILN_BIN_DIR", Path(__file__).resolve().parents[2] / "target" / "debug"))


def increment(ty: str) -> str:
    one = "1.0" if ty.startswith("f") else "1"
    return f"""field @x : {ty}[4]

kernel @inc() {{
  for %i in 0 .. 4 {{
    %v = load @x[%i]
    %o = const {one} : {ty}
    %s = add %v, %o
    store @x[%i], %s
  }}
}}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_saxpy_writes_the_arrays_in_place(engine: Engine, tmp_path: Path) -> None:
    m = kiln.Module(SAXPY, "saxpy.kir")
    assert m.kernels == ["saxpy"]
    assert m.fields == {"x": ("f32", [8]), "y": ("f32", [8])}
    x = np.arange(8, dtype=np.float32)
    y = np.ones(8, dtype=np.float32)
    y_before = y
    m.run("saxpy", args={"a": 2.5}, fields={"x": x, "y": y}, cache_dir=tmp_path, engine=engine)
    assert y is y_before
    np.testing.assert_array_equal(y, np.float32(2.5) * np.arange(8, dtype=np.float32) + 1)
    np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32))


def pool_workers() -> int:
    """The JIT pools' worker threads of this process (``kiln-worker-N``)."""
    tasks = Path("/proc/self/task")
    return sum((t / "comm").read_text().startswith("kiln-worker") for t in tasks.iterdir())


def test_without_threads_a_small_launch_starts_no_thread(tmp_path: Path) -> None:
    text = SAXPY.replace("[8]", "[4096]").replace("= 8", "= 4096")
    m = kiln.Module(text, "saxpy.kir")
    fields = {"x": np.ones(4096, np.float32), "y": np.ones(4096, np.float32)}
    before = pool_workers()
    m.run("saxpy", args={"a": 2.0}, fields=fields, cache_dir=tmp_path / "chosen")
    assert pool_workers() == before, "4,096 iterations of saxpy are not worth a second thread"
    m.run("saxpy", args={"a": 2.0}, fields=fields, cache_dir=tmp_path / "given", threads=2)
    assert pool_workers() == before + 2, "with threads given, every parallel launch runs on them"
    np.testing.assert_array_equal(fields["y"], np.full(4096, 5.0, np.float32))


def test_a_view_into_a_larger_array_is_written_where_it_lies(tmp_path: Path) -> None:
    m = kiln.Module(SAXPY)
    base = np.zeros(24, dtype=np.float32)
    x = np.ones(8, dtype=np.float32)
    m.run("saxpy", args={"a": 3.0}, fields={"x": x, "y": base[8:16]}, cache_dir=tmp_path)
    np.testing.assert_array_equal(base, np.r_[np.zeros(8), np.full(8, 3.0), np.zeros(8)].astype(np.float32))


@pytest.mark.parametrize(("ty", "dtype", "start", "after"), TYPES)
def test_every_type_computes_as_its_engine_does(ty: str, dtype: Any, start: Any, after: Any, tmp_path: Path) -> None:
    m = kiln.Module(increment(ty))
    results = []
    for engine in ENGINES:
        x = np.full(4, start, dtype=dtype)
        m.run("inc", fields={"x": x}, cache_dir=tmp_path, engine=engine)
        results.append(x)
    np.testing.assert_array_equal(results[0], np.full(4, after, dtype=dtype))
    np.testing.assert_array_equal(results[1], results[0])


def test_the_same_as_kiln_run(tmp_path: Path) -> None:
    x = (np.arange(8, dtype=np.float32) - 3.5) / 7
    y = np.linspace(-1, 1, 8, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    (tmp_path / "saxpy.kir").write_text(SAXPY)
    subprocess.run(
        [bin_dir() / "kiln-run", "--cache-dir", tmp_path / "cache", "--arg", "a=0.3", "--input", f"@x={tmp_path / 'x.npy'}",
         "--input", f"@y={tmp_path / 'y.npy'}", "--output", f"@y={tmp_path / 'out.npy'}", tmp_path / "saxpy.kir"],
        check=True,
    )
    kiln.Module(SAXPY).run("saxpy", args={"a": 0.3}, fields={"x": x, "y": y}, cache_dir=tmp_path / "cache")
    np.testing.assert_array_equal(y, np.load(tmp_path / "out.npy"))


def test_a_second_module_of_the_same_text_loads_from_the_cache(tmp_path: Path) -> None:
    y = np.zeros(8, dtype=np.float32)
    first = kiln.Module(SAXPY).run("saxpy", args={"a": 1.0}, fields={"y": y}, cache_dir=tmp_path)
    second = kiln.Module(SAXPY).run("saxpy", args={"a": 1.0}, fields={"y": y}, cache_dir=tmp_path)
    assert (first["compiled"], first["stored"]) == (1, 1)
    assert (second["hits"], second["compiled"]) == (1, 0)
    assert second["cache_dir"] == str(tmp_path)


def test_a_parameter_left_out_takes_its_default(tmp_path: Path) -> None:
    y = np.zeros(8, dtype=np.float32)
    kiln.Module(SAXPY).run("saxpy", args={"a": 1.0, "n": 3}, fields={"x": np.ones(8, np.float32), "y": y}, cache_dir=tmp_path)
    np.testing.assert_array_equal(y, [1, 1, 1, 0, 0, 0, 0, 0])


def test_bad_kir_is_a_kir_error_at_its_line() -> None:
    with pytest.raises(kiln.KirError, match=r"bad\.kir:2:7: error: use of undefined value %nope"):
        kiln.Module("kernel @k() {\n  ret %nope\n}\n", "bad.kir")


def test_a_run_that_fails_is_a_run_error_at_its_statement(tmp_path: Path) -> None:
    m = kiln.Module(SAXPY, "saxpy.kir")
    y = np.zeros(8, dtype=np.float32)
    with pytest.raises(kiln.RunError, match=r"saxpy\.kir:6:5: error: .*index 8 out of bounds for field @x"):
        m.run("saxpy", args={"a": 1.0, "n": 9}, fields={"y": y}, cache_dir=tmp_path)


def test_a_run_error_names_the_python_line_a_statement_came_from(tmp_path: Path) -> None:
    located = SAXPY.replace("%xi = load @x[%i]", '%xi = load @x[%i] loc("prog.py":12:5)')
    y = np.zeros(8, dtype=np.float32)
    with pytest.raises(kiln.RunError, match=r"(?s)saxpy\.kir:6:5: error: .*prog\.py:12:5: note: the statement was imported from here"):
        kiln.Module(located, "saxpy.kir").run("saxpy", args={"a": 1.0, "n": 9}, fields={"y": y}, engine="interp")


def store_param(ty: str) -> str:
    return f"""field @x : {ty}

kernel @put(%v: {ty}) {{
  store @x[], %v
}}
"""


@pytest.mark.parametrize(("ty", "dtype", "value", "_"), TYPES)
def test_a_numpy_scalar_is_an_argument_as_its_value(ty: str, dtype: Any, value: Any, _: Any) -> None:
    # np.float32(x) and the like were refused ("a float32 for a parameter
    # of type f32"): a numpy scalar, or a 0-d array, is its exact value.
    for arg in (dtype(value), np.array(value, dtype=dtype)):
        x = np.zeros((), dtype=dtype)
        kiln.Module(store_param(ty)).run("put", args={"v": arg}, fields={"x": x}, engine="interp")
        assert x == dtype(value) and x.tobytes() == dtype(value).tobytes(), (ty, arg)
    flag = np.zeros((), dtype=np.bool_)
    kiln.Module(store_param("i1")).run("put", args={"v": np.bool_(True)}, fields={"x": flag}, engine="interp")
    assert flag


def test_a_numpy_array_of_more_than_one_value_is_not_an_argument() -> None:
    with pytest.raises(TypeError, match=r"argument %v: a ndarray for a parameter of type f32"):
        kiln.Module(store_param("f32")).run("put", args={"v": np.zeros(2, np.float32)}, fields={"x": np.zeros((), np.float32)})


@pytest.mark.parametrize(
    ("call", "error", "said"),
    [
        (dict(kernel="nope"), ValueError, r"no kernel @nope \(the module has: saxpy\)"),
        (dict(args={}), ValueError, r"kernel @saxpy needs argument %a"),
        (dict(args={"a": 1.0, "b": 2}), ValueError, r"kernel @saxpy has no parameter %b"),
        (dict(args={"a": "1"}), TypeError, r"argument %a: a str for a parameter of type f32"),
        (dict(args={"a": 1.0, "n": 2**31}), TypeError, r"argument %n: 2147483648 does not fit i32"),
        (dict(args={"a": 1.0, "n": 1.5}), TypeError, r"argument %n: a float for a parameter of type i32"),
        (dict(fields={"z": np.zeros(8, np.float32)}), ValueError, r"no field @z"),
        (dict(fields={"x": np.zeros(8, np.float64)}), TypeError, r"field @x holds f32, but the array's dtype is float64"),
        (dict(fields={"x": np.zeros((2, 4), np.float32)}), ValueError, r"field @x is f32\[8\], but the array's shape is \[2, 4\]"),
        (dict(fields={"x": np.zeros(16, np.float32)[::2]}), ValueError, r"field @x: the array is not C-contiguous"),
        (dict(fields={"x": [0.0] * 8}), TypeError, r"field @x: a numpy array is needed"),
        (dict(engine="gpu"), ValueError, r"engine must be 'jit' or 'interp'"),
    ],
)
def test_every_bad_argument_is_an_exception_naming_it(call: dict[str, Any], error: type, said: str) -> None:
    m = kiln.Module(SAXPY)
    full: dict[str, Any] = {"kernel": "saxpy", "args": {"a": 1.0}} | call
    with pytest.raises(error, match=said):
        m.run(**full)


def test_a_read_only_array_is_refused() -> None:
    x = np.zeros(8, dtype=np.float32)
    x.setflags(write=False)
    with pytest.raises(ValueError, match=r"field @x: .*"):
        kiln.Module(SAXPY).run("saxpy", args={"a": 1.0}, fields={"x": x}, engine="interp")


LONG = """field @acc : f64

kernel @spin(%n: i64) {
  for %i in 0 .. %n serial {
    %v = load @acc[]
    %c = cast %i to f64
    %s = add %v, %c
    store @acc[], %s
  }
}
"""


def test_python_runs_while_a_kernel_does(tmp_path: Path) -> None:
    m = kiln.Module(LONG)
    acc = np.zeros((), dtype=np.float64)
    m.run("spin", args={"n": 1}, fields={"acc": acc}, cache_dir=tmp_path)  # compiled and loaded
    window: list[float] = []

    def run() -> None:
        window.append(time.perf_counter())
        m.run("spin", args={"n": 300_000_000}, fields={"acc": acc}, cache_dir=tmp_path)
        window.append(time.perf_counter())

    ticks = []
    t = threading.Thread(target=run)
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    t.join()
    start, end = window
    assert end - start > 0.05, "the kernel ran too briefly for the check to mean anything"
    # With the GIL held through the run, this thread could not tick inside it.
    inside = [x for x in ticks if start + 0.01 < x < end - 0.01]
    assert len(inside) >= 5, (len(inside), end - start)


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("doc", ["README.md", "docs/python.md"])
def test_the_docs_python_examples_run(doc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (REPO / doc).read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    blocks = [b for b in blocks if "import kiln" in b]
    assert blocks, f"{doc} has no example of import kiln"
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    monkeypatch.chdir(REPO)
    for block in blocks:
        scope: dict[str, Any] = {}
        exec(compile(block, doc, "exec"), scope)
        assert "y" in scope and scope["y"].dtype == np.float32


def test_two_threads_calling_one_module_take_turns(tmp_path: Path) -> None:
    m = kiln.Module(LONG)
    results: list[float] = []

    def call() -> None:
        acc = np.zeros((), dtype=np.float64)
        m.run("spin", args={"n": 20_000_000}, fields={"acc": acc}, cache_dir=tmp_path)
        results.append(float(acc))

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "the calls deadlocked"
    assert results == [float(sum(range(20_000_000)))] * 2


def test_a_cache_that_cannot_be_used_is_one_warning_and_a_right_run(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    y = np.zeros(8, dtype=np.float32)
    with pytest.warns(RuntimeWarning, match=r"kiln: running without the cache: .*"):
        stats = kiln.Module(SAXPY).run("saxpy", args={"a": 2.0}, fields={"x": np.ones(8, np.float32), "y": y}, cache_dir=not_a_dir)
    np.testing.assert_array_equal(y, np.full(8, 2.0, np.float32))
    assert stats["compiled"] == 1 and stats["cache_dir"] is None


SCALE = """field @x : f32[4]
field @y : f32[4]

kernel @scale() {
  for %i in 0 .. 4 {
    %xi = load @x[%i]
    %k = const 1.0e-10 : f32
    %p = mul %xi, %k
    store @y[%i], %p
  }
}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_denormals_flush_as_kiln_run_flushes(engine: Engine, tmp_path: Path) -> None:
    m = kiln.Module(SCALE)
    x = np.full(4, 1e-30, dtype=np.float32)
    kept, flushed = np.zeros(4, np.float32), np.zeros(4, np.float32)
    m.run("scale", fields={"x": x, "y": kept}, cache_dir=tmp_path, engine=engine)
    m.run("scale", fields={"x": x, "y": flushed}, cache_dir=tmp_path, engine=engine, denormals="flush")
    assert (kept != 0).all() and (flushed == 0).all(), (kept, flushed)


def test_fast_math_and_the_opt_level_are_compiles_of_their_own(tmp_path: Path) -> None:
    m = kiln.Module(SAXPY)
    plain, fast = np.ones(8, np.float32), np.ones(8, np.float32)
    x = np.arange(8, dtype=np.float32)
    m.run("saxpy", args={"a": 0.1}, fields={"x": x, "y": plain}, cache_dir=tmp_path)
    stats = m.run("saxpy", args={"a": 0.1}, fields={"x": x, "y": fast}, cache_dir=tmp_path, fast_math=True)
    assert (stats["compiled"], stats["hits"]) == (1, 0)
    np.testing.assert_allclose(fast, plain, rtol=1e-6)
    stats = m.run("saxpy", args={"a": 0.1}, fields={"x": x, "y": np.ones(8, np.float32)}, cache_dir=tmp_path, opt_level=0)
    assert (stats["compiled"], stats["hits"]) == (1, 0)


RACY = """field @y : i32[4]

kernel @racy() {
  for %i in 0 .. 64 {
    %z = const 0 : i32
    store @y[%z], %i
  }
}
"""


def test_check_races_reports_a_race() -> None:
    y = np.zeros(4, np.int32)
    with pytest.raises(kiln.RunError, match=r"(?i)data race"):
        kiln.Module(RACY, "racy.kir").run("racy", fields={"y": y}, engine="interp", check_races=True)


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (dict(opt_level=5), r"opt_level: expected 0, 1, 2 or 3, got '5'"),
        (dict(denormals="zero"), r"denormals must be 'preserve' or 'flush', not 'zero'"),
        (dict(check_races=True), r"check_races applies only to engine='interp'"),
        (dict(engine="interp", fast_math=True), r"fast_math applies only to engine='jit'"),
        (dict(engine="interp", threads=2), r"threads applies only to engine='jit'"),
        (dict(threads=0), r"threads must be 1 or more"),
    ],
)
def test_a_bad_option_is_a_value_error_naming_it(options: dict[str, Any], said: str) -> None:
    with pytest.raises(ValueError, match=said):
        kiln.Module(SAXPY).run("saxpy", args={"a": 1.0}, **options)


RANDOM = """field @u : f64[64]

kernel @draw() {
  for %i in 0 .. 64 {
    %r = random f64
    store @u[%i], %r
  }
}
"""

PRINTS = """kernel @show(%n: i32 = 300, %h: f64 = 0.5) {
  print "start ", %h, "\\0A"
  for %i in 0 .. %n {
    %f = cast %i to f32
    print "i=", %i, " f=", %f, "\\0A"
  }
}
"""


def test_seed_draws_the_same_numbers_on_both_engines_and_others_for_another() -> None:
    """`seed=` is the random statements' seed: both engines draw the same
    numbers from it, the same seed repeats, another draws others, and one
    out of range is an error."""
    m = kiln.Module(RANDOM, "random.kir")

    def draw(engine: Engine, seed: int) -> np.ndarray:
        u = np.zeros(64)
        m.run("draw", fields={"u": u}, engine=engine, seed=seed)
        return u

    for seed in (0, 7, 2**64 - 1):
        jit = draw("jit", seed)
        assert np.array_equal(jit, draw("interp", seed)) and np.array_equal(jit, draw("jit", seed))
        assert np.all((jit >= 0) & (jit < 1))
    assert not np.array_equal(draw("jit", 0), draw("jit", 7))
    with pytest.raises(OverflowError):
        draw("jit", 2**64)
    with pytest.raises(OverflowError):
        draw("interp", -1)


@pytest.mark.parametrize("engine", ENGINES)
def test_run_returns_the_printed_lines_in_iteration_order(engine: Engine, tmp_path: Path) -> None:
    m = kiln.Module(PRINTS, "prints.kir")
    threads = 2 if engine == "jit" else None
    stats = m.run("show", cache_dir=tmp_path, engine=engine, threads=threads)
    assert stats["printed"] == ["start 0.500000000000\n"] + [f"i={i} f={i}.000000\n" for i in range(300)]
    # Each call returns its own lines only.
    assert m.run("show", args={"n": 1}, cache_dir=tmp_path, engine=engine, threads=threads)["printed"] == [
        "start 0.500000000000\n", "i=0 f=0.000000\n"]
