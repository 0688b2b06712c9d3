//! The ORC JIT: loading compiled objects, one fresh JIT dylib each, and
//! launching the tasks they hold.
//!
//! Owns: the [`Jit`] (an ORC execution session over this process with
//! JITLink's object layer, made by `src/orc_session.cpp`; the process's
//! symbols, libm included, and the runtime functions objects call by name
//! (`kiln_llvm::abi::runtime_symbols`, defined at their addresses), in one
//! dylib of the session, last in every loaded dylib's link order),
//! [`Jit::load_task`] / [`Jit::load_kernel`]
//! (add an object to a uniquely named dylib and look its entry symbols up
//! at once, so a damaged or unlinkable object is an error value right
//! there), the runtime that launches a loaded task ([`runtime`]), the
//! JIT [`engine`] of `kiln-run`, the cached per-task provider it runs
//! with ([`cached`]), and its two tiers ([`tiers`]).
//!
//! Must never: compile (that is `kiln-codegen`, which this crate does not
//! depend on: objects come from the cache or through a
//! `kiln_llvm::Backend`), read or write the cache outside [`cached`],
//! print, or reuse a dylib name (ORC does not check duplicates in release
//! builds).

pub mod cached;
pub mod engine;
pub mod provide;
pub mod runtime;
pub mod tiers;

use inkwell::llvm_sys;
use kiln::cache::Key;
use kiln::config::LaunchMeta;
use kiln_llvm::init_llvm;
use llvm_sys::error::{LLVMDisposeErrorMessage, LLVMErrorRef, LLVMGetErrorMessage};
use llvm_sys::orc2::*;
use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

pub use runtime::EntryFn;

/// Why an object could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitError {
    pub kind: JitErrorKind,
    pub message: String,
}

/// The step that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JitErrorKind {
    /// Making the JIT itself (or the LLVM version check).
    Setup,
    /// Adding the object: it is not a valid object file for this host.
    Add,
    /// Linking it or resolving its entry symbols (missing symbols, bad
    /// relocations).
    Link,
}

impl JitError {
    fn new(kind: JitErrorKind, message: impl Into<String>) -> JitError {
        JitError { kind, message: message.into() }
    }
}

impl fmt::Display for JitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            JitErrorKind::Setup => "cannot set up the JIT",
            JitErrorKind::Add => "cannot add object",
            JitErrorKind::Link => "cannot link object",
        };
        write!(f, "{what}: {}", self.message)
    }
}

impl std::error::Error for JitError {}

/// Takes an LLVM error's message (and frees the error).
fn take_error(e: LLVMErrorRef) -> String {
    // SAFETY: `e` is a non-null error LLVM handed us, which we own;
    // LLVMGetErrorMessage consumes it and returns a NUL-terminated string
    // we own until LLVMDisposeErrorMessage, after the copy.
    unsafe {
        let m = LLVMGetErrorMessage(e);
        let s = CStr::from_ptr(m).to_string_lossy().into_owned();
        LLVMDisposeErrorMessage(m);
        s
    }
}

impl JitInner {
    /// The session's interned name of the C symbol `symbol`, as this
    /// host's object format spells it (retained: the caller hands it on
    /// or releases it); an error for a name with a NUL.
    fn intern(&self, symbol: &str) -> Result<LLVMOrcSymbolStringPoolEntryRef, JitError> {
        let mangled = match self.prefix {
            0 => symbol.to_string(),
            p => format!("{}{symbol}", p as u8 as char),
        };
        let c = CString::new(mangled)
            .map_err(|_| JitError::new(JitErrorKind::Link, format!("bad symbol name {symbol:?}")))?;
        // SAFETY: `es` is the live session this `JitInner` owns; `c` is a
        // NUL-terminated string that outlives the call (ORC copies it).
        Ok(unsafe { kiln_orc_intern(self.es, c.as_ptr()) })
    }
}

/// Defines the runtime's functions that objects call by name
/// (`abi::runtime_symbols`) in the session's process dylib, at their
/// addresses in this process: found from every dylib, as libm is, and not
/// exported from the executable.
fn define_runtime(inner: &JitInner) -> Result<(), JitError> {
    let flags = || LLVMJITSymbolFlags {
        GenericFlags: LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsExported as u8
            | LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsCallable as u8,
        TargetFlags: 0,
    };
    let mut pairs = Vec::new();
    for (name, f) in kiln_llvm::abi::runtime_symbols() {
        // The interned name is retained for the pair, which the
        // materialisation unit takes.
        let name = inner.intern(name)?;
        pairs.push(LLVMOrcCSymbolMapPair {
            Name: name,
            Sym: LLVMJITEvaluatedSymbol { Address: f.address(), Flags: flags() },
        });
    }
    // SAFETY: `pairs` holds `pairs.len()` initialised pairs whose names
    // are retained entries the definition takes over, in the live process
    // dylib.
    let e = unsafe { kiln_orc_define_absolute(inner.process, pairs.as_mut_ptr(), pairs.len()) };
    if e.is_null() {
        Ok(())
    } else {
        Err(JitError::new(JitErrorKind::Setup, take_error(e)))
    }
}

/// Process-wide, so dylib names stay unique even across several [`Jit`]s.
static DYLIB_COUNTER: AtomicU64 = AtomicU64::new(0);

// `crates/kiln-jit/src/orc_session.cpp`: the session and its object layer without LLJIT,
// which would make two target machines (its data layout, its IR compile
// layer) that adding objects never uses.
extern "C" {
    fn kiln_orc_create(error: *mut LLVMErrorRef) -> *mut c_void;
    fn kiln_orc_session(session: *mut c_void) -> LLVMOrcExecutionSessionRef;
    fn kiln_orc_object_layer(session: *mut c_void) -> LLVMOrcObjectLayerRef;
    fn kiln_orc_process_dylib(session: *mut c_void) -> LLVMOrcJITDylibRef;
    fn kiln_orc_global_prefix() -> libc::c_char;
    fn kiln_orc_dispose(session: *mut c_void) -> LLVMErrorRef;
    fn kiln_orc_link_after(jd: LLVMOrcJITDylibRef, dep: LLVMOrcJITDylibRef);
    fn kiln_orc_intern(es: LLVMOrcExecutionSessionRef, name: *const libc::c_char) -> LLVMOrcSymbolStringPoolEntryRef;
    fn kiln_orc_release(name: LLVMOrcSymbolStringPoolEntryRef);
    fn kiln_orc_set_error_reporter(
        es: LLVMOrcExecutionSessionRef,
        report: extern "C" fn(*mut c_void, LLVMErrorRef),
        ctx: *mut c_void,
    );
    fn kiln_orc_create_dylib(es: LLVMOrcExecutionSessionRef, name: *const libc::c_char) -> LLVMOrcJITDylibRef;
    fn kiln_orc_define_absolute(jd: LLVMOrcJITDylibRef, pairs: LLVMOrcCSymbolMapPairs, n: usize) -> LLVMErrorRef;
    fn kiln_orc_add_object(
        layer: LLVMOrcObjectLayerRef,
        jd: LLVMOrcJITDylibRef,
        bytes: *const libc::c_char,
        size: usize,
    ) -> LLVMErrorRef;
    fn kiln_orc_lookup(
        es: LLVMOrcExecutionSessionRef,
        jd: LLVMOrcJITDylibRef,
        names: *const LLVMOrcSymbolStringPoolEntryRef,
        n: usize,
        done: extern "C" fn(LLVMErrorRef, LLVMOrcCSymbolMapPairs, usize, *mut c_void),
        ctx: *mut c_void,
    );
    fn kiln_orc_clear(jd: LLVMOrcJITDylibRef) -> LLVMErrorRef;
}

struct JitInner {
    /// What `kiln_orc_create` made; `es` and `layer` live in it.
    session: *mut c_void,
    es: LLVMOrcExecutionSessionRef,
    layer: LLVMOrcObjectLayerRef,
    /// The dylib of the process's symbols (libm, the runtime), last in
    /// every loaded dylib's link order.
    process: LLVMOrcJITDylibRef,
    /// The prefix of C symbols in this host's object format.
    prefix: libc::c_char,
    /// Errors ORC reports outside a call's result (e.g. a failed
    /// materialisation): kept to explain the failing lookup, never printed.
    reported: Box<Mutex<Vec<String>>>,
}

// SAFETY: ORC's session and object layer are thread-safe (objects may be
// added and looked up concurrently), the raw handles are only passed to
// ORC, and `reported` is a Mutex.
unsafe impl Send for JitInner {}
// SAFETY: as for Send: every use of the handles is an ORC call that locks
// what it touches.
unsafe impl Sync for JitInner {}

impl Drop for JitInner {
    fn drop(&mut self) {
        // Ends the session: every dylib's memory is released.
        // SAFETY: `session` was made by kiln_orc_create and is disposed of
        // once, here; every Dylib holds an Arc of this JitInner, so none
        // outlives it.
        let e = unsafe { kiln_orc_dispose(self.session) };
        if !e.is_null() {
            // Nothing to report to at teardown; free it.
            let _ = take_error(e);
        }
    }
}

extern "C" fn report_error(ctx: *mut c_void, err: LLVMErrorRef) {
    let msg = take_error(err);
    // SAFETY: `ctx` is the address of the boxed Mutex `Jit::new` registered
    // with the session, which the JitInner owns and keeps until the
    // session (and so this reporter) is disposed of.
    let sink = unsafe { &*(ctx as *const Mutex<Vec<String>>) };
    if let Ok(mut v) = sink.lock() {
        if v.len() < 64 {
            v.push(msg);
        }
    }
}

/// An ORC session in which every loaded object gets a dylib of its own. Cheap to
/// clone (shared).
#[derive(Clone)]
pub struct Jit {
    inner: Arc<JitInner>,
    /// The function records loaded, by key: each is loaded once per
    /// session, and every task that calls it links to that one. Beside
    /// the session, not in it: a record's dylib holds the session.
    functions: Arc<Mutex<HashMap<Key, LoadedFunction>>>,
}

/// Timing of one load, for the counters of `kiln-run --stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadTimes {
    /// Creating the dylib and adding the object (parsing its header).
    pub add: Duration,
    /// Linking and looking the entry symbols up.
    pub link: Duration,
}

/// A JIT dylib that holds one loaded object; cleared when the last task
/// using it is dropped.
struct Dylib {
    /// Keeps the JIT alive while the dylib is.
    _jit: Arc<JitInner>,
    jd: LLVMOrcJITDylibRef,
    name: String,
    /// The function records' dylibs in its link order, kept while it is
    /// (dropped after it is cleared).
    _deps: Vec<Arc<Dylib>>,
}

// SAFETY: the dylib handle is only passed to ORC, which locks the session
// for every use; the rest is Send and Sync.
unsafe impl Send for Dylib {}
// SAFETY: as for Send.
unsafe impl Sync for Dylib {}

impl Drop for Dylib {
    fn drop(&mut self) {
        // SAFETY: `jd` is a dylib of the session `_jit` keeps alive; it is
        // cleared once, when the last task using it is dropped.
        let e = unsafe { kiln_orc_clear(self.jd) };
        if !e.is_null() {
            let _ = take_error(e);
        }
    }
}

/// A task ready to launch: its entry point, its launch metadata and the
/// dylib that keeps its code alive.
#[derive(Clone)]
pub struct LoadedTask {
    pub entry: EntryFn,
    pub meta: LaunchMeta,
    pub times: LoadTimes,
    /// The tier its object was compiled in (`--stats` counts launches per
    /// tier): set by the engine, which knows whose backend compiled it.
    pub tier: crate::tiers::Tier,
    /// What one iteration of it costs, as [`runtime::iteration_work`]
    /// estimates it (`None`: not known): set by the engine, which has the
    /// task's module, and read by its launches.
    pub work: Option<u64>,
    dylib: Arc<Dylib>,
}

impl LoadedTask {
    /// The name of the JIT dylib the task lives in (unique per load).
    pub fn dylib_name(&self) -> &str {
        &self.dylib.name
    }
}

/// A function record loaded (`kiln::key::functions`): the dylib that
/// defines its symbol, linked to its callees' records, which it keeps
/// alive. Tasks that call it link to it ([`Jit::load_task_with`]).
#[derive(Clone)]
pub struct LoadedFunction {
    pub times: LoadTimes,
    dylib: Arc<Dylib>,
}

impl fmt::Debug for LoadedFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedFunction").field("dylib", &self.dylib.name).finish()
    }
}

impl fmt::Debug for LoadedTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedTask").field("task", &self.meta.task).field("dylib", &self.dylib.name).finish()
    }
}

/// What a lookup's callback sends back: (interned name, address) pairs,
/// in the map's order (not the request's).
type LookupResult = Result<Vec<(usize, u64)>, String>;

extern "C" fn lookup_done(err: LLVMErrorRef, result: LLVMOrcCSymbolMapPairs, n: usize, ctx: *mut c_void) {
    // SAFETY: `ctx` is the Box::into_raw of the sender the lookup made,
    // and ORC calls this completion exactly once: the box is taken back once.
    let tx = unsafe { Box::from_raw(ctx as *mut mpsc::SyncSender<LookupResult>) };
    let r = if err.is_null() {
        // SAFETY: on success ORC passes `n` initialised pairs at `result`,
        // valid for this call.
        let pairs = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(result, n) } };
        Ok(pairs.iter().map(|p| (p.Name as usize, p.Sym.Address)).collect())
    } else {
        Err(take_error(err))
    };
    let _ = tx.send(r);
}

impl Jit {
    /// A new JIT session in this process.
    pub fn new() -> Result<Jit, JitError> {
        // The LLVM version check; loading objects needs no target.
        init_llvm().map_err(|e| JitError::new(JitErrorKind::Setup, e.message))?;
        let mut e: LLVMErrorRef = std::ptr::null_mut();
        // SAFETY: `e` is a valid out-parameter for the error.
        let session = unsafe { kiln_orc_create(&mut e) };
        if session.is_null() {
            return Err(JitError::new(JitErrorKind::Setup, take_error(e)));
        }
        // SAFETY: `session` is non-null, just made; these read its parts.
        let (es, layer, process) =
            unsafe { (kiln_orc_session(session), kiln_orc_object_layer(session), kiln_orc_process_dylib(session)) };
        // SAFETY: a plain query of the host's object format, no arguments.
        let prefix = unsafe { kiln_orc_global_prefix() };
        let reported = Box::new(Mutex::new(Vec::new()));
        // ORC's default reporter prints to stderr; a library must not.
        // SAFETY: `reported` is boxed (its address is stable) and moved into
        // the JitInner that owns the session, so it outlives every report.
        unsafe {
            kiln_orc_set_error_reporter(es, report_error, &*reported as *const _ as *mut c_void);
        }
        let inner = Arc::new(JitInner { session, es, layer, process, reported, prefix });
        define_runtime(&inner)?;
        Ok(Jit { inner, functions: Arc::default() })
    }

    /// Loads a per-task object into a fresh dylib and resolves its entry
    /// (`meta.entry_symbol`) at once. `name_hint` only helps debugging (the
    /// dylib's name is made unique with a process-wide counter).
    pub fn load_task(&self, name_hint: &str, object: &[u8], meta: &LaunchMeta) -> Result<LoadedTask, JitError> {
        self.load_task_with(name_hint, object, meta, &[])
    }

    /// [`Jit::load_task`] for an object that calls function records:
    /// `deps` are the records it declares, searched after its own dylib.
    pub fn load_task_with(
        &self,
        name_hint: &str,
        object: &[u8],
        meta: &LaunchMeta,
        deps: &[LoadedFunction],
    ) -> Result<LoadedTask, JitError> {
        let _span = kiln::trace::span("load", "load", name_hint);
        let (dylib, addrs, times) = self.add_object(name_hint, object, &[meta.entry_symbol.as_str()], deps)?;
        let entry = runtime::entry_from_address(addrs[0]);
        Ok(LoadedTask { entry, meta: meta.clone(), times, tier: crate::tiers::Tier::Opt, work: None, dylib })
    }

    /// Loads a function record's object (`meta` from
    /// [`kiln_llvm::function_meta`]) into a fresh dylib linked to
    /// `deps`, the records it calls (loaded first), and links it at once by
    /// looking its symbol up: a bad object is an error here, not in the
    /// task that calls it.
    /// The record is kept under `key` for [`Jit::function`].
    pub fn load_function(
        &self,
        key: &Key,
        name_hint: &str,
        object: &[u8],
        meta: &LaunchMeta,
        deps: &[LoadedFunction],
    ) -> Result<LoadedFunction, JitError> {
        let _span = kiln::trace::span("load", "load function", name_hint);
        let (dylib, _, times) = self.add_object(name_hint, object, &[meta.entry_symbol.as_str()], deps)?;
        let loaded = LoadedFunction { times, dylib };
        if let Ok(mut m) = self.functions.lock() {
            m.insert(*key, loaded.clone());
        }
        Ok(loaded)
    }

    /// The function record of `key`, if this session has loaded it.
    pub fn function(&self, key: &Key) -> Option<LoadedFunction> {
        self.functions.lock().ok().and_then(|m| m.get(key).cloned())
    }

    /// Loads a whole-kernel object into one fresh dylib and resolves every
    /// launch's entry at once.
    pub fn load_kernel(
        &self,
        name_hint: &str,
        object: &[u8],
        launches: &[LaunchMeta],
    ) -> Result<Vec<LoadedTask>, JitError> {
        let syms: Vec<&str> = launches.iter().map(|m| m.entry_symbol.as_str()).collect();
        let (dylib, addrs, times) = self.add_object(name_hint, object, &syms, &[])?;
        Ok(launches
            .iter()
            .zip(addrs)
            .map(|(m, a)| LoadedTask {
                entry: runtime::entry_from_address(a),
                meta: m.clone(),
                times,
                tier: crate::tiers::Tier::Opt,
                work: None,
                dylib: dylib.clone(),
            })
            .collect())
    }

    /// Adds `object` to a new dylib and looks `symbols` up in it. On
    /// failure the dylib is cleared; its name is never used again.
    fn add_object(
        &self,
        hint: &str,
        object: &[u8],
        symbols: &[&str],
        deps: &[LoadedFunction],
    ) -> Result<(Arc<Dylib>, Vec<u64>, LoadTimes), JitError> {
        let t0 = Instant::now();
        // ORC reads the object header when the object is added, but an
        // empty buffer is refused here so no path depends on that.
        if object.is_empty() {
            return Err(JitError::new(JitErrorKind::Add, "the object is empty"));
        }
        if names_vector_math(object) {
            load_vector_math()?;
        }
        let n = DYLIB_COUNTER.fetch_add(1, Ordering::Relaxed);
        let clean: String = hint.chars().map(|c| if c.is_ascii_graphic() { c } else { '_' }).collect();
        let name = format!("{clean}#{n}");
        let cname = CString::new(name.clone()).map_err(|_| JitError::new(JitErrorKind::Setup, "bad dylib name"))?;
        let inner = &self.inner;
        // A bare dylib: no platform (task objects have no static
        // constructors, `atexit` or TLS to support).
        // SAFETY: `es` is the live session; `cname` is NUL-terminated and
        // outlives the call (ORC copies the name).
        let jd = unsafe { kiln_orc_create_dylib(inner.es, cname.as_ptr()) };
        let deps: Vec<Arc<Dylib>> = deps.iter().map(|d| d.dylib.clone()).collect();
        for d in &deps {
            // SAFETY: both are dylibs of this session; `d` is kept alive by
            // the new Dylib's `_deps` for as long as `jd` links to it.
            unsafe { kiln_orc_link_after(jd, d.jd) };
        }
        // libm and the rest of the process, from every dylib, after its
        // own definitions and its records'.
        // SAFETY: the process dylib lives as long as the session.
        unsafe { kiln_orc_link_after(jd, inner.process) };
        let dylib = Arc::new(Dylib { _jit: inner.clone(), jd, name, _deps: deps });

        // SAFETY: `layer` and `jd` belong to the live session; `object` is
        // `object.len()` readable bytes, borrowed for this whole call, and
        // the graph made of them is linked by the lookup below before it
        // returns, or else `dylib`, the only holder of `jd`, is dropped
        // (the dylib cleared, its graph unread) on the way out of it.
        let e = unsafe { kiln_orc_add_object(inner.layer, jd, object.as_ptr() as *const libc::c_char, object.len()) };
        if !e.is_null() {
            return Err(JitError::new(JitErrorKind::Add, take_error(e)));
        }
        let t1 = Instant::now();
        let addrs = self.lookup(jd, symbols)?;
        let times = LoadTimes { add: t1 - t0, link: t1.elapsed() };
        Ok((dylib, addrs, times))
    }

    /// Looks symbols up in one dylib, which links the object if it is not
    /// linked yet: each distinct name once (a kernel launches one task many
    /// times, and ORC's work grows with the request, not with the distinct
    /// names in it), its address returned for every place it is asked for.
    fn lookup(&self, jd: LLVMOrcJITDylibRef, symbols: &[&str]) -> Result<Vec<u64>, JitError> {
        let inner = &self.inner;
        let mut distinct: HashMap<&str, usize> = HashMap::new();
        let mut names = Vec::new();
        for s in symbols {
            if distinct.contains_key(s) {
                continue;
            }
            let name = inner.intern(s)?;
            distinct.insert(s, names.len());
            names.push(name);
        }
        let (tx, rx) = mpsc::sync_channel::<LookupResult>(1);
        let ctx = Box::into_raw(Box::new(tx)) as *mut c_void;
        // SAFETY: `names` (`names.len()` retained names) is valid for the
        // call, which retains its own; `ctx` is the boxed sender
        // `lookup_done` takes back, called exactly once.
        unsafe { kiln_orc_lookup(inner.es, jd, names.as_ptr(), names.len(), lookup_done, ctx) };
        let r = rx.recv();
        // The result is a map: match it to the request by interned name
        // (one pool entry per string, so equal names are equal pointers).
        let r = r.map(|r| {
            r.map(|pairs| {
                let by_name: HashMap<usize, u64> = pairs.into_iter().collect();
                symbols
                    .iter()
                    .map(|s| by_name.get(&(names[distinct[s]] as usize)).copied().unwrap_or(0))
                    .collect::<Vec<u64>>()
            })
        });
        for n in names {
            // SAFETY: each entry was retained by `intern` for this lookup and
            // is released once, after the lookup has completed.
            unsafe { kiln_orc_release(n) };
        }
        match r {
            Ok(Ok(addrs)) if addrs.iter().all(|&a| a != 0) => Ok(addrs),
            Ok(Ok(_)) => Err(JitError::new(JitErrorKind::Link, "a looked-up symbol has no address")),
            Ok(Err(m)) => {
                let mut msg = m;
                if let Ok(mut extra) = inner.reported.lock() {
                    for e in extra.drain(..) {
                        if !msg.contains(&e) {
                            msg = format!("{msg}; {e}");
                        }
                    }
                }
                Err(JitError::new(JitErrorKind::Link, msg))
            }
            Err(_) => Err(JitError::new(JitErrorKind::Link, "the lookup never completed")),
        }
    }
}

/// Whether an object names a function of glibc's vector math library
/// (fast-math code, `kiln_codegen::lower::vecmath`): its symbols all start with
/// the vector function ABI's `_ZGV`. A false positive only loads the
/// library for nothing.
fn names_vector_math(object: &[u8]) -> bool {
    object.windows(4).any(|w| w == b"_ZGV")
}

/// Loads libmvec into the process, once, where the dylibs' process search
/// finds its symbols (`RTLD_GLOBAL`). Not at start-up: default-mode runs
/// never pay for it.
fn load_vector_math() -> Result<(), JitError> {
    static LOADED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let r = LOADED.get_or_init(|| {
        // SAFETY: a NUL-terminated literal; loading glibc's libmvec runs no
        // constructor that could observe this process's state.
        let handle = unsafe { libc::dlopen(c"libmvec.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if handle.is_null() {
            // SAFETY: dlerror has no preconditions.
            let why = unsafe { libc::dlerror() };
            let why = if why.is_null() {
                "unknown reason".to_string()
            } else {
                // SAFETY: non-null, dlerror's NUL-terminated message, read
                // at once before another dl call can replace it.
                unsafe { std::ffi::CStr::from_ptr(why) }.to_string_lossy().into_owned()
            };
            return Err(format!("cannot load glibc's vector math library for fast-math code: {why}"));
        }
        Ok(())
    });
    r.clone().map_err(|e| JitError::new(JitErrorKind::Setup, e))
}
