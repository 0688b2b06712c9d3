//! `import kiln`: Kiln from Python, as llvmlite is LLVM from Python.
//!
//! Owns: the Python module's surface (`docs/python.md`, `kiln.pyi`):
//! [`Module`] (KIR text parsed and verified once), its kernels and
//! fields, and `Module.run`, which runs one kernel with the JIT (through
//! the per-task cache) or the interpreter on numpy arrays bound to its
//! fields in place; the exceptions `KirError` (bad KIR) and `RunError`
//! (a run that failed), each carrying the rendered diagnostics with their
//! KIR and Python locations.
//!
//! Must never: copy an array's elements (a field bound to an array is that
//! array's memory, lent for the run), write outside an array, hold the
//! GIL while a kernel runs, or print.

use kiln::config::CompileConfig;
use kiln::diag::{Diagnostics, SourceFile};
use kiln::exec::{Engine, Fields, RunError as KilnRunError, Storage};
use kiln::ir::{Const, Kernel, Scalar, Stream};
use numpy::{Element, PyArrayDyn, PyArrayMethods, PyReadwriteArrayDyn, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt};
use std::path::PathBuf;
use std::sync::Mutex;

create_exception!(kiln, KirError, PyException, "KIR text that does not parse or verify.");
create_exception!(kiln, RunError, PyException, "A kernel run that failed (out of bounds, an assertion, a bad cache).");

/// A verified KIR stream, and the engine that last ran one of its kernels
/// (kept, so that a second call of a kernel is warm: its tasks stay
/// loaded); calls from several threads take turns.
#[pyclass(module = "kiln", frozen)]
struct Module {
    source: SourceFile,
    stream: Stream,
    runner: Mutex<Option<(RunnerKey, Runner)>>,
}

/// What an engine was made for: a second call with the same reuses it.
#[derive(Clone, PartialEq)]
struct RunnerKey {
    engine: EngineKind,
    cache_dir: Option<PathBuf>,
    /// The JIT's compile configuration; the interpreter's subnormal mode
    /// is its `denormals`.
    config: CompileConfig,
    /// The JIT's threads (`None`: the engine chooses, as `kiln-run`'s does
    /// without `--threads`).
    threads: Option<usize>,
    /// The interpreter's race check.
    check_races: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum EngineKind {
    Jit,
    Interp,
}

enum Runner {
    Jit(Box<kiln_jit::engine::JitEngine>, Option<(String, String)>),
    Interp(kiln::interp::Interpreter),
}

#[pymethods]
impl Module {
    /// Parses and verifies `text`; `name` is the file name its
    /// diagnostics show.
    #[new]
    #[pyo3(signature = (text, name = "<module>"))]
    fn new(text: &str, name: &str) -> PyResult<Module> {
        let source = SourceFile::new(name, text);
        let stream = kiln::parser::parse(text).map_err(|d| kir_error(&source, &d))?;
        kiln::verifier::verify(&stream).map_err(|d| kir_error(&source, &d))?;
        Ok(Module { source, stream, runner: Mutex::new(None) })
    }

    /// The kernels' names, in the order the text gives them.
    #[getter]
    fn kernels(&self) -> Vec<String> {
        self.stream.modules.iter().flat_map(|m| m.kernels()).map(|k| k.name.to_string()).collect()
    }

    /// Each field's element type and shape: `{"x": ("f32", (1024,))}`.
    #[getter]
    fn fields(&self) -> std::collections::BTreeMap<String, (String, Vec<u64>)> {
        let mut out = std::collections::BTreeMap::new();
        for f in self.stream.modules.iter().flat_map(|m| m.fields()) {
            out.entry(f.name.to_string()).or_insert_with(|| (f.elem.to_string(), f.shape.clone()));
        }
        out
    }

    /// Runs `kernel` with `args` (by parameter name; a parameter's default
    /// when left out) on the numpy arrays `fields` binds by field name, in
    /// place; fields left out start at zero and are dropped after the
    /// run. `engine` is `"jit"` (through the per-task cache at `cache_dir`,
    /// else the default one `kiln-run` uses) or `"interp"`; the other
    /// options are `kiln-run`'s flags of the same names. Returns the run's
    /// statistics (`kiln-run --stats=json`'s object).
    #[pyo3(signature = (
        kernel, args = None, fields = None, cache_dir = None, engine = "jit", *,
        fast_math = false, opt_level = 2, bounds_checks = true, denormals = "preserve",
        threads = None, check_races = false, seed = 0
    ))]
    #[allow(clippy::too_many_arguments)] // a Python method's keyword arguments
    fn run(
        &self,
        py: Python<'_>,
        kernel: &str,
        args: Option<&Bound<'_, PyDict>>,
        fields: Option<&Bound<'_, PyDict>>,
        cache_dir: Option<PathBuf>,
        engine: &str,
        fast_math: bool,
        opt_level: u8,
        bounds_checks: bool,
        denormals: &str,
        threads: Option<u32>,
        check_races: bool,
        seed: u64,
    ) -> PyResult<Py<PyAny>> {
        let options = Options { fast_math, opt_level, bounds_checks, denormals, threads, check_races };
        let key = runner_key(engine, cache_dir, &options)?;
        let k = self.kernel(kernel)?;
        let args = bind_args(k, args)?;
        let mut storage = Fields::try_zeroed(&self.stream).map_err(RunError::new_err)?;
        // The arrays' borrows: held until the run has returned.
        let _lent = lend_fields(&mut storage, fields)?;
        let (stream, name) = (&self.stream, k.name.as_str());
        // Everything from the engine's lock on runs without the GIL: a
        // second thread's call waits for the first without holding it.
        let outcome = py.detach(|| {
            let mut slot = self.runner.lock().unwrap_or_else(|e| e.into_inner());
            let mut warning = None;
            if slot.as_ref().is_none_or(|(k, _)| *k != key) {
                let (runner, w) = make_runner(&key)?;
                *slot = Some((key.clone(), runner));
                warning = w;
            }
            let (_, runner) = slot.as_mut().expect("made above");
            // The seed is a launch input: the same engine draws from it.
            match runner {
                Runner::Interp(i) => i.seed = seed,
                Runner::Jit(e, _) => e.set_seed(seed),
            }
            let t0 = std::time::Instant::now();
            let (result, printed) = run_on(runner, stream, name, &args, &mut storage);
            Ok::<_, String>((result, report(runner, t0.elapsed()), warning, printed))
        });
        let (result, stats, warning, printed) = outcome.map_err(RunError::new_err)?;
        if let Some(w) = warning {
            PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(), &std::ffi::CString::new(w)?, 1)?;
        }
        result.map_err(|e| run_error(&self.source, &self.stream, &e))?;
        let stats = py.import("json")?.call_method1("loads", (stats,))?;
        stats.set_item("printed", printed)?;
        Ok(stats.unbind())
    }
}

impl Module {
    /// The kernel `name` names (`k` or `@k`).
    fn kernel(&self, name: &str) -> PyResult<&Kernel> {
        let name = name.strip_prefix('@').unwrap_or(name);
        let mut kernels = self.stream.modules.iter().flat_map(|m| m.kernels());
        kernels.find(|k| k.name == name).ok_or_else(|| {
            PyValueError::new_err(format!("no kernel @{name} (the module has: {})", self.kernels().join(", ")))
        })
    }
}

/// `Module.run`'s options beyond the engine and the cache.
struct Options<'a> {
    fast_math: bool,
    opt_level: u8,
    bounds_checks: bool,
    denormals: &'a str,
    threads: Option<u32>,
    check_races: bool,
}

/// The engine a call asks for, its options checked as `kiln-run` checks
/// its flags (an option of the other engine is an error, not ignored).
fn runner_key(engine: &str, cache_dir: Option<PathBuf>, o: &Options) -> PyResult<RunnerKey> {
    let bad = |m: String| Err(PyValueError::new_err(m));
    let engine = match engine {
        "jit" => EngineKind::Jit,
        "interp" => EngineKind::Interp,
        other => return bad(format!("engine must be 'jit' or 'interp', not '{other}'")),
    };
    let mut config = CompileConfig::default();
    config.opt_level = match kiln::cli::parse_opt_level(&o.opt_level.to_string()) {
        Ok(level) => level,
        Err(e) => return bad(format!("opt_level: {e}")),
    };
    config.denormals = match kiln::config::Denormals::ALL.into_iter().find(|d| d.keyword() == o.denormals) {
        Some(d) => d,
        None => return bad(format!("denormals must be 'preserve' or 'flush', not '{}'", o.denormals)),
    };
    (config.fast_math, config.bounds_checks) = (o.fast_math, o.bounds_checks);
    let jit_only = [(o.fast_math, "fast_math"), (o.opt_level != 2, "opt_level"), (!o.bounds_checks, "bounds_checks")];
    let given = jit_only.into_iter().chain([(o.threads.is_some(), "threads")]);
    if engine == EngineKind::Interp {
        if let Some((_, name)) = given.into_iter().find(|(set, _)| *set) {
            return bad(format!("{name} applies only to engine='jit'"));
        }
    } else if o.check_races {
        return bad("check_races applies only to engine='interp'".to_string());
    }
    if o.threads == Some(0) {
        return bad("threads must be 1 or more".to_string());
    }
    let threads = o.threads.map(|n| n as usize);
    Ok(RunnerKey { engine, cache_dir, config, threads, check_races: o.check_races })
}

/// `KirError` with the diagnostics rendered against the module's text.
fn kir_error(source: &SourceFile, diags: &Diagnostics) -> PyErr {
    KirError::new_err(source.render_all(diags).trim_end().to_string())
}

/// `RunError` with the error rendered at its statement, and the Python
/// line an imported statement came from (its `loc`), as `kiln-run` says.
fn run_error(source: &SourceFile, stream: &Stream, e: &KilnRunError) -> PyErr {
    let locs = stream.locs();
    let origin = |span| locs.get(&span).map(|l| kiln::diag::Elsewhere::read(&l.file, l.line, l.col));
    let diags = e.diagnostics(source, &origin);
    RunError::new_err(source.render_all(&diags).trim_end().to_string())
}

/// The kernel's arguments from `given`, by parameter name.
fn bind_args(k: &Kernel, given: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<Const>> {
    let names: Vec<&str> = k.body.params.iter().map(|&v| k.body.name(v)).collect();
    if let Some(given) = given {
        for key in given.keys() {
            let key: String = key.extract()?;
            if !names.contains(&key.strip_prefix('%').unwrap_or(&key)) {
                return Err(PyValueError::new_err(format!("kernel @{} has no parameter %{key}", k.name)));
            }
        }
    }
    let mut out = Vec::with_capacity(names.len());
    for (name, p) in names.iter().zip(&k.params) {
        let value = match given {
            Some(g) => g.get_item(name)?.or(g.get_item(format!("%{name}"))?),
            None => None,
        };
        out.push(match (value, p.default) {
            (Some(v), _) => to_const(&v, p.ty).map_err(|e| PyTypeError::new_err(format!("argument %{name}: {e}")))?,
            (None, Some(d)) => d,
            (None, None) => return Err(PyValueError::new_err(format!("kernel @{} needs argument %{name}", k.name))),
        });
    }
    Ok(out)
}

/// A Python bool, int or float as a constant of type `ty`: an int must
/// fit the type; a float argument of an `f32` parameter is rounded as
/// numpy's `float32(x)` rounds it, of an `f16` one to `f32` and then to
/// `f16`, as KIR's cast from `f64` does (and Quadrants).
fn to_const(v: &Bound<'_, PyAny>, ty: Scalar) -> Result<Const, String> {
    // A numpy scalar (`np.float32(2)`, `np.int64(3)`, `np.bool_(True)`)
    // or 0-d array is its value as a Python scalar (`item()`: exact).
    if let Some(item) = numpy_item(v) {
        return to_const(&item, ty);
    }
    if v.is_instance_of::<PyBool>() {
        let b: bool = v.extract().map_err(|e: PyErr| e.to_string())?;
        return match ty {
            Scalar::I1 => Ok(Const::bool(b)),
            _ => Err(format!("a bool for a parameter of type {ty}")),
        };
    }
    if v.is_instance_of::<PyInt>() {
        let i: i128 = v.extract().map_err(|_| format!("an int out of range for {ty}"))?;
        if ty.is_float() {
            return Ok(float_const(i as f64, ty));
        }
        let (lo, hi) = ty.int_range();
        if i < lo || i > hi {
            return Err(format!("{i} does not fit {ty}"));
        }
        return Ok(Const { ty, bits: ty.wrap_bits(i as u64) });
    }
    if v.is_instance_of::<PyFloat>() && ty.is_float() {
        return Ok(float_const(v.extract().map_err(|e: PyErr| e.to_string())?, ty));
    }
    Err(format!("a {} for a parameter of type {ty}", v.get_type().name().map_or("value".into(), |n| n.to_string())))
}

/// The Python scalar a numpy scalar or 0-d array holds, if `v` is one
/// (and not already a Python `bool`, `int` or `float`, as `np.float64` is).
fn numpy_item<'py>(v: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    if v.is_instance_of::<PyBool>() || v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() {
        return None;
    }
    let numpy = |o: &Bound<'py, PyAny>| o.get_type().module().is_ok_and(|m| m == "numpy");
    let from_numpy = numpy(v);
    let zero_d = v.getattr("ndim").and_then(|n| n.extract::<usize>()).is_ok_and(|n| n == 0);
    if !(from_numpy && zero_d) {
        return None;
    }
    v.call_method0("item").ok().filter(|i| !numpy(i))
}

fn float_const(x: f64, ty: Scalar) -> Const {
    match ty {
        // Through f32, as a cast of an f64 to f16 is (`docs/language.md`).
        Scalar::F16 => kiln::semantics::eval_cast(Const::f64(x), Scalar::F16),
        Scalar::F32 => Const::f32(x as f32),
        _ => Const::f64(x),
    }
}

/// A borrow held only to be dropped when the run is over: one array's
/// readwrite borrow, whatever its element type.
trait Held {}
impl<T> Held for T {}

/// Binds each array of `given` to its field of `storage`: its dtype and
/// shape must be the field's, and it must be C-contiguous and writeable.
/// The returned borrows keep other Rust code off the arrays while the
/// storage points into them.
fn lend_fields<'py>(storage: &mut Fields, given: Option<&Bound<'py, PyDict>>) -> PyResult<Vec<Box<dyn Held + 'py>>> {
    let mut lent = Vec::new();
    let Some(given) = given else { return Ok(lent) };
    for (name, array) in given.iter() {
        let name: String = name.extract()?;
        let name = name.strip_prefix('@').unwrap_or(&name).to_string();
        let field = storage.get_mut(&name).ok_or_else(|| PyValueError::new_err(format!("no field @{name}")))?;
        let untyped = array.cast::<PyUntypedArray>().map_err(|_| {
            PyTypeError::new_err(format!("field @{name}: a numpy array is needed, not {}", array.get_type()))
        })?;
        let shape: Vec<u64> = untyped.shape().iter().map(|&d| d as u64).collect();
        if shape != field.shape {
            return Err(PyValueError::new_err(format!(
                "field @{name} is {}, but the array's shape is {:?}",
                field.type_string(),
                untyped.shape()
            )));
        }
        if !untyped.is_c_contiguous() {
            return Err(PyValueError::new_err(format!("field @{name}: the array is not C-contiguous")));
        }
        let (borrow, bytes) = borrow_as(&array, field.elem, &name)?;
        // SAFETY: `bytes` is the array's whole data (C-contiguous, of the
        // field's element type and shape, so exactly the field's length),
        // and the readwrite borrow in `borrow`, held by the caller until
        // the run returns, keeps every other borrow of it away.
        field.bytes = unsafe { Storage::lent(bytes.0, bytes.1) };
        lent.push(borrow);
    }
    Ok(lent)
}

/// The readwrite borrow of `array` as `elem`'s numpy type, and its data
/// (pointer and length in bytes).
fn borrow_as<'py>(array: &Bound<'py, PyAny>, elem: Scalar, name: &str) -> PyResult<(Box<dyn Held + 'py>, Data)> {
    macro_rules! lend {
        ($($s:ident => $t:ty),* $(,)?) => {
            match elem {
                $(Scalar::$s => {
                    let mut rw = readwrite::<$t>(array, elem, name)?;
                    let data = data_of(rw.as_slice_mut().map_err(|e| PyValueError::new_err(e.to_string()))?);
                    Ok((Box::new(rw) as Box<dyn Held + 'py>, data))
                })*
            }
        };
    }
    lend!(I1 => bool, I8 => i8, I16 => i16, I32 => i32, I64 => i64, U8 => u8, U16 => u16, U32 => u32, U64 => u64, F16 => half::f16, F32 => f32, F64 => f64)
}

/// `array` as a writeable numpy array of `T` (the field's element type),
/// borrowed for writing.
fn readwrite<'py, T: Element>(
    array: &Bound<'py, PyAny>,
    elem: Scalar,
    name: &str,
) -> PyResult<PyReadwriteArrayDyn<'py, T>> {
    let typed = array.cast::<PyArrayDyn<T>>().map_err(|_| {
        let dtype = array.getattr("dtype").map_or("?".to_string(), |d| d.to_string());
        PyTypeError::new_err(format!("field @{name} holds {elem}, but the array's dtype is {dtype}"))
    })?;
    typed.try_readwrite().map_err(|e| PyValueError::new_err(format!("field @{name}: {e}")))
}

/// An array's data: where its bytes start, and how many there are.
type Data = (std::ptr::NonNull<u8>, usize);

fn data_of<T>(s: &mut [T]) -> Data {
    let len = std::mem::size_of_val(s);
    (std::ptr::NonNull::from(s).cast::<u8>(), len)
}

/// The engine `key` asks for: the JIT compiles in this process (there is
/// no `kiln-compile` beside a Python interpreter) through the cache the
/// settings name (`cache_dir` first), as `kiln-run` does; a cache that
/// cannot be used is the returned warning, and the engine runs without it.
fn make_runner(key: &RunnerKey) -> Result<(Runner, Option<String>), String> {
    let flags = kiln::settings::cache_flags(key.cache_dir.as_deref(), false);
    let (settings, _) = kiln::settings::Settings::load_for_run(&flags).map_err(|e| e.to_string())?;
    if key.engine == EngineKind::Interp {
        let order = kiln::races::IterationOrder::default();
        let (check_races, denormals) = (key.check_races, key.config.denormals);
        let interp = kiln::interp::Interpreter { order, check_races, denormals, seed: 0, printed: Vec::new() };
        return Ok((Runner::Interp(interp), None));
    }
    use kiln_jit::engine::{JitEngine, JitPath};
    let target = kiln_llvm::HostTarget::detect().map_err(|e| e.message)?;
    let compiler = kiln_codegen::Compiler::new(key.config.clone(), target.clone()).map_err(|e| e.message)?;
    let mut engine = JitEngine::new(compiler, JitPath::PerTask, 1).map_err(|e| e.message)?.with_threads(key.threads);
    let remote = kiln::remote::RemoteSettings::from_settings(&settings).map_err(|e| e.to_string())?;
    let session = settings.cache_root().and_then(|root| {
        let session = kiln_llvm::session::Session::open(&root, &target, &settings, remote)?;
        Ok((root, session))
    });
    match session {
        Ok((root, session)) => {
            let scope = (root.display().to_string(), session.store.scope_name().to_string());
            engine.set_provider(Box::new(kiln_jit::cached::CachedTasks::of_session(session)));
            Ok((Runner::Jit(Box::new(engine), Some(scope)), None))
        }
        Err(e) => Ok((Runner::Jit(Box::new(engine), None), Some(format!("kiln: running without the cache: {e}")))),
    }
}

/// One call, and what its `print`s wrote: its statistics start from zero
/// (the engine's tasks stay loaded from the calls before).
fn run_on(
    runner: &mut Runner,
    stream: &Stream,
    kernel: &str,
    args: &[Const],
    fields: &mut Fields,
) -> (Result<(), KilnRunError>, Vec<String>) {
    match runner {
        Runner::Interp(i) => (i.run_kernel(stream, kernel, args, fields), i.take_printed()),
        Runner::Jit(j, _) => {
            j.stats = Default::default();
            let result = j.run_kernel(stream, kernel, args, fields);
            j.finish();
            (result, j.take_printed())
        }
    }
}

/// The run's statistics as `kiln-run --stats=json` writes them.
fn report(runner: &Runner, run_time: std::time::Duration) -> String {
    use kiln::stats::{RunReport, RunStats};
    match runner {
        Runner::Interp(_) => RunReport { run: RunStats { run_time, ..RunStats::default() }, ..RunReport::default() },
        Runner::Jit(j, cache) => j.stats.report(cache.clone()),
    }
    .to_json()
}

/// The module `kiln`.
#[pymodule]
#[pyo3(name = "kiln")]
fn kiln_python(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Module>()?;
    m.add("KirError", m.py().get_type::<KirError>())?;
    m.add("RunError", m.py().get_type::<RunError>())?;
    m.add("__version__", kiln::VERSION)?;
    m.add("BUILD_ID", kiln::config::BUILD_ID)?;
    Ok(())
}
