//! What both sides of the LLVM wall's upper floor share: the code
//! generator (`kiln-codegen`) and the JIT (`kiln-jit`) each build on this
//! crate, and neither on the other, so `kiln-run` links no code generator
//! and `kiln-compile` no JIT, by construction.
//!
//! Owns: the check that the loaded LLVM is the one this build expects and
//! its X86 machine-code layer's registration ([`init_llvm`]); the machine
//! objects are compiled for ([`HostTarget`], detected through LLVM); the
//! compiled object types ([`CompiledTask`], [`CompiledKernel`]) and their
//! error ([`CodegenError`]); the [`backend::Backend`] interface objects are
//! compiled through, with its out-of-process implementation; the task ABI
//! ([`abi`]); statement sites ([`sites`]); LLVM's CPU and feature tables
//! ([`target`]); and the cache session both sides store objects through
//! ([`session`]).
//!
//! Must never: lower IR or run LLVM's optimiser or code generator (that is
//! `kiln-codegen`), load or run an object (that is `kiln-jit`).

pub mod abi;
pub mod backend;
pub mod session;
pub mod sites;
pub mod target;

pub use backend::{Backend, CompileProcess, Progress, ProgressHook};

use kiln::cache::host::DetectedHost;
use kiln::config::LaunchMeta;
use kiln::plan::PlanError;
use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

/// Why a module could not be compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodegenError {
    pub message: String,
}

impl CodegenError {
    pub fn new(message: impl Into<String>) -> CodegenError {
        CodegenError { message: message.into() }
    }
}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CodegenError {}

/// A builder call the lowering made wrongly: a bug of the lowering's.
impl From<inkwell::builder::BuilderError> for CodegenError {
    fn from(e: inkwell::builder::BuilderError) -> CodegenError {
        CodegenError::new(format!("internal codegen error: {e}"))
    }
}

impl From<PlanError> for CodegenError {
    fn from(e: PlanError) -> CodegenError {
        CodegenError::new(e.message)
    }
}

/// The machine objects are compiled for: triple, CPU name and the CPU
/// features as LLVM spells them (`+avx2,-avx512f,...`). [`HostTarget::detect`]
/// asks LLVM what this host really has; the cache scopes its directory by
/// these three.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostTarget {
    pub triple: String,
    pub cpu: String,
    pub features: String,
}

// `src/host.cpp`: what LLVMGetDefaultTargetTriple, LLVMGetHostCPUName and
// LLVMGetHostCPUFeatures give, without the archive member of the C API's
// target machines (a `kiln-run` that only loads objects would otherwise
// link the code generator's analyses and run their static constructors).
extern "C" {
    fn kiln_host_triple() -> *mut libc::c_char;
    fn kiln_host_cpu_name() -> *mut libc::c_char;
    fn kiln_host_cpu_features() -> *mut libc::c_char;
    fn kiln_llvm_library_version(major: *mut u32, minor: *mut u32, patch: *mut u32);
}

/// The string one of `src/host.cpp`'s functions makes.
fn host_string(f: unsafe extern "C" fn() -> *mut libc::c_char) -> Result<String, CodegenError> {
    // SAFETY: the function takes nothing and returns a malloc'd,
    // NUL-terminated string or null, which `take` reads and frees.
    target::take(unsafe { f() }).ok_or_else(|| CodegenError::new("out of memory detecting the host"))
}

impl HostTarget {
    /// This host: its triple, CPU name and *detected* features (what the
    /// CPU reports, not the CPU model's default set, which can name
    /// features a virtual machine masks off).
    /// Asked once per process (a run asks for it more than once).
    pub fn detect() -> Result<HostTarget, CodegenError> {
        HOST.get_or_init(|| {
            init_llvm()?;
            Ok(HostTarget {
                triple: host_string(kiln_host_triple)?,
                cpu: host_string(kiln_host_cpu_name)?,
                features: host_string(kiln_host_cpu_features)?,
            })
        })
        .clone()
    }

    /// Takes this host from the cache at `root` when a process of this
    /// build detected it in this boot ([`kiln::cache::host::NativeFile::recall`]):
    /// what [`HostTarget::detect`] gives from then on, without asking the
    /// CPU again. Detecting asks it about twenty times, and in a virtual
    /// machine each `cpuid` traps to the hypervisor (3.5 to 7.6 us here):
    /// a tenth of a warm `kiln-run` (docs/performance.md, "Warm start").
    /// Does nothing once this process knows its host.
    pub fn recall(root: &mut kiln::cache::CacheRoot) {
        if HOST.get().is_none() {
            if let Some(host) = root.recall_host() {
                let _ = HOST.set(init_llvm().map(|()| HostTarget::from(host)));
            }
        }
    }

    /// This host with the CPU name and/or the feature string replaced (to
    /// build for, and test, another host: `--target-cpu`,
    /// `--target-features`).
    pub fn detect_with(cpu: Option<&str>, features: Option<&str>) -> Result<HostTarget, CodegenError> {
        let mut t = HostTarget::detect()?;
        if let Some(c) = cpu {
            t.cpu = c.to_string();
        }
        if let Some(f) = features {
            t.features = f.to_string();
        }
        Ok(t)
    }
}

/// This process's host, once detected or recalled.
static HOST: OnceLock<Result<HostTarget, CodegenError>> = OnceLock::new();

impl From<DetectedHost> for HostTarget {
    fn from(h: DetectedHost) -> HostTarget {
        HostTarget { triple: h.triple, cpu: h.cpu, features: h.features }
    }
}

impl From<&HostTarget> for DetectedHost {
    fn from(t: &HostTarget) -> DetectedHost {
        DetectedHost { triple: t.triple.clone(), cpu: t.cpu.clone(), features: t.features.clone() }
    }
}

/// The version of the LLVM library loaded at run time (`major.minor.patch`).
pub fn llvm_library_version() -> (u32, u32, u32) {
    let (mut a, mut b, mut c) = (0u32, 0u32, 0u32);
    // SAFETY: three valid out-parameters.
    unsafe { kiln_llvm_library_version(&mut a, &mut b, &mut c) };
    (a, b, c)
}

/// Checks once that the loaded library's major.minor version is the one
/// this build was made for ([`kiln::config::LLVM_VERSION`]: objects and
/// keys depend on it): what detecting the host and loading objects (`jit`)
/// need. Nothing is registered: LLVM's CPU and feature tables register the
/// X86 machine-code layer themselves ([`target::init_x86_mc`]), and the code
/// generator is `kiln_codegen::init_codegen`'s, so a tool that only loads
/// objects (`kiln-run`) links neither (docs/performance.md, "Warm start").
pub fn init_llvm() -> Result<(), CodegenError> {
    static INIT: OnceLock<Result<(), CodegenError>> = OnceLock::new();
    INIT.get_or_init(|| check_llvm_version(llvm_library_version(), kiln::config::LLVM_VERSION)).clone()
}

/// Checks that the loaded LLVM library (`major.minor.patch`) is the
/// major.minor release `built` (what `llvm-config --version` said at build
/// time) names.
pub fn check_llvm_version(loaded: (u32, u32, u32), built: &str) -> Result<(), CodegenError> {
    let (maj, min, patch) = loaded;
    let want: Vec<&str> = built.split('.').collect();
    if want.len() >= 2 && want[0] == maj.to_string() && want[1] == min.to_string() {
        return Ok(());
    }
    Err(CodegenError::new(format!(
        "the loaded LLVM library is version {maj}.{min}.{patch}, but Kiln was built for LLVM {built} \
         (major.minor must match)"
    )))
}

/// One task compiled: the object's bytes and how to launch it.
#[derive(Clone, Debug)]
pub struct CompiledTask {
    pub object: Vec<u8>,
    pub meta: LaunchMeta,
    /// Time spent lowering, optimising and emitting.
    pub compile_time: Duration,
}

/// A whole kernel compiled into one object: one entry per launched task.
#[derive(Clone, Debug)]
pub struct CompiledKernel {
    pub object: Vec<u8>,
    /// One per `launch` of the kernel, in order; `entry_symbol` names each
    /// task's entry in the object.
    pub launches: Vec<LaunchMeta>,
    pub compile_time: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llvm_version_check_compares_major_and_minor() {
        assert!(check_llvm_version((22, 1, 8), "22.1.8").is_ok());
        assert!(check_llvm_version((22, 1, 3), "22.1.8").is_ok());
        let e = check_llvm_version((21, 1, 8), "22.1.8").unwrap_err();
        assert!(e.message.contains("21.1.8") && e.message.contains("22.1.8"), "{e}");
        assert!(check_llvm_version((22, 2, 0), "22.1.8").is_err());
        assert!(check_llvm_version((22, 1, 0), "none").is_err());
        // This build's own library passes.
        assert!(check_llvm_version(llvm_library_version(), kiln::config::LLVM_VERSION).is_ok());
    }

    #[test]
    fn the_host_is_what_llvms_c_api_detects() {
        // The cache's scope and every key name these strings: they must
        // stay what the C API's functions give.
        use inkwell::targets::TargetMachine;
        let host = HostTarget::detect().unwrap();
        assert_eq!(host.triple, TargetMachine::get_default_triple().as_str().to_string_lossy());
        assert_eq!(host.cpu, TargetMachine::get_host_cpu_name().to_string());
        assert_eq!(host.features, TargetMachine::get_host_cpu_features().to_string());
        assert!(host.features.contains("+sse2"), "{}", host.features);
    }
}
