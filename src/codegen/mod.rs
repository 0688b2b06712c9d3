//! LLVM code generation: per-task modules and whole kernels to host
//! objects (or LLVM IR / assembly text).
//!
//! Owns: the [`Compiler`] (a compile configuration plus a [`HostTarget`]),
//! the check that the loaded LLVM is the one this build expects, the target
//! machine (host triple, host CPU, the host's *detected* features, PIC, the
//! large code model on x86-64) and the optimisation pipeline. The lowering
//! itself is in [`lower`]; the runtime ABI it targets is `docs/runtime.md`.
//!
//! Must never: load or run code (that is `jit`), read or write files, or
//! embed a task's or kernel's name in a per-task object (identical tasks of
//! different kernels share one cached object; names reach error messages
//! from the launcher side).

pub mod abi;
pub mod backend;
pub mod bounds;
mod emitter;
pub mod lower;
pub mod sites;

pub use backend::{Backend, CompileProcess, Progress, ProgressHook};

use crate::config::{CodeModel, CompileConfig, LaunchMeta, OptLevel};
use crate::ir::{Field, Func, Module, Stream};
pub use crate::key::functions::function_meta;
use crate::key::functions::{record_symbol, FuncPlan};
use crate::key::Key;
use crate::plan::{module_label, single_task, task_meta, KernelPlan, PlanError, ENTRY_SYMBOL};
use emitter::{FileKind, Machine};
use inkwell::context::Context;
use inkwell::llvm_sys;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{self, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::OptimizationLevel;
use lower::{FuncUse, Lowering, TaskSource};
use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

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

impl From<PlanError> for CodegenError {
    fn from(e: PlanError) -> CodegenError {
        CodegenError::new(e.message)
    }
}

/// What to produce from a module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// A relocatable object file for the target.
    Object,
    /// Optimised LLVM IR text.
    LlvmIr,
    /// Assembly text.
    Assembly,
}

impl Emit {
    /// The file extension `kiln-compile` gives this kind of output.
    pub fn extension(self) -> &'static str {
        match self {
            Emit::Object => "o",
            Emit::LlvmIr => "ll",
            Emit::Assembly => "s",
        }
    }

    /// How a line comment starts in this output (none in an object).
    pub fn comment(self) -> Option<&'static str> {
        match self {
            Emit::Object => None,
            Emit::LlvmIr => Some(";"),
            Emit::Assembly => Some("#"),
        }
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

impl HostTarget {
    /// This host: its triple, CPU name and *detected* features (what the
    /// CPU reports, not the CPU model's default set, which can name
    /// features a virtual machine masks off).
    /// Asked once per process (a run asks for it more than once).
    pub fn detect() -> Result<HostTarget, CodegenError> {
        static HOST: OnceLock<Result<HostTarget, CodegenError>> = OnceLock::new();
        HOST.get_or_init(|| {
            init_llvm()?;
            Ok(HostTarget {
                triple: TargetMachine::get_default_triple().as_str().to_string_lossy().into_owned(),
                cpu: TargetMachine::get_host_cpu_name().to_string(),
                features: TargetMachine::get_host_cpu_features().to_string(),
            })
        })
        .clone()
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

    /// The features sorted and deduplicated (a stable form for scoping).
    pub fn sorted_features(&self) -> Vec<String> {
        let mut v: Vec<String> = self.features.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect();
        v.sort();
        v.dedup();
        v
    }
}

/// The version of the LLVM library loaded at run time (`major.minor.patch`).
pub fn llvm_library_version() -> (u32, u32, u32) {
    let (mut a, mut b, mut c) = (0u32, 0u32, 0u32);
    // SAFETY: three valid out-parameters.
    unsafe { llvm_sys::core::LLVMGetVersion(&mut a, &mut b, &mut c) };
    (a, b, c)
}

/// Checks once that the loaded library's major.minor version is the one
/// this build was made for ([`crate::config::LLVM_VERSION`]: objects and
/// keys depend on it), and registers the X86 target's description and
/// machine-code layer: what detecting the host, LLVM's CPU and feature
/// tables (`crate::target`) and loading objects (`jit`) use. Not the code
/// generator: that is [`init_codegen`], which only a [`Compiler`] calls,
/// so a tool that never compiles in-process (`kiln-run`) links none of it.
pub fn init_llvm() -> Result<(), CodegenError> {
    static INIT: OnceLock<Result<(), CodegenError>> = OnceLock::new();
    INIT.get_or_init(|| {
        check_llvm_version(llvm_library_version(), crate::config::LLVM_VERSION)?;
        init_x86_mc()
    })
    .clone()
}

/// [`init_llvm`], and the X86 code generator and assembly printer (which
/// also writes objects) registered and LLVM's options set
/// ([`bounds::LLVM_OPTIONS`]): what a [`Compiler`] needs.
pub fn init_codegen() -> Result<(), CodegenError> {
    static INIT: OnceLock<Result<(), CodegenError>> = OnceLock::new();
    INIT.get_or_init(|| {
        init_llvm()?;
        init_x86_codegen()?;
        bounds::set_llvm_options();
        Ok(())
    })
    .clone()
}

/// Registers the X86 target's description and machine-code layer — not
/// the assembly parser or the disassembler, which Kiln never uses.
#[cfg(target_arch = "x86_64")]
fn init_x86_mc() -> Result<(), CodegenError> {
    // SAFETY: each only registers the target's factories (idempotent).
    unsafe {
        llvm_sys::target::LLVMInitializeX86TargetInfo();
        llvm_sys::target::LLVMInitializeX86TargetMC();
    }
    Ok(())
}

/// Registers the X86 code generator and assembly printer.
#[cfg(target_arch = "x86_64")]
fn init_x86_codegen() -> Result<(), CodegenError> {
    // SAFETY: as in init_x86_mc: registration only, idempotent.
    unsafe {
        llvm_sys::target::LLVMInitializeX86Target();
        llvm_sys::target::LLVMInitializeX86AsmPrinter();
    }
    Ok(())
}

#[cfg(not(target_arch = "x86_64"))]
fn init_x86_mc() -> Result<(), CodegenError> {
    Err(CodegenError::new("Kiln's code generator and JIT are built for x86-64 hosts only"))
}

#[cfg(not(target_arch = "x86_64"))]
fn init_x86_codegen() -> Result<(), CodegenError> {
    init_x86_mc()
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

/// Compiles modules for one target with one configuration. Cheap to share
/// between threads: each compilation has its own LLVM context and target
/// machine.
#[derive(Clone, Debug)]
pub struct Compiler {
    pub config: CompileConfig,
    pub target: HostTarget,
}

impl Compiler {
    /// A compiler for `target` (checks the LLVM version and that LLVM knows
    /// the target's triple). Nothing is set up for compiling yet: the
    /// target machine is made by the first compile, so a run whose tasks
    /// all come from the cache never pays for it.
    pub fn new(config: CompileConfig, target: HostTarget) -> Result<Compiler, CodegenError> {
        init_codegen()?;
        let c = Compiler { config, target };
        c.llvm_target()?;
        Ok(c)
    }

    /// A compiler for this host with the default configuration.
    pub fn host(config: CompileConfig) -> Result<Compiler, CodegenError> {
        Compiler::new(config, HostTarget::detect()?)
    }

    /// Runs `f` with this thread's target machine for this compiler's
    /// target and configuration, and the code generator's pipelines built
    /// for it ([`Machine`]; made once per thread: a target machine is not
    /// shared between threads, and making one costs about 0.3 ms).
    fn with_target_machine<R>(
        &self,
        f: impl FnOnce(&mut Machine) -> Result<R, CodegenError>,
    ) -> Result<R, CodegenError> {
        type Machines = Vec<((HostTarget, OptLevel, CodeModel), Machine)>;
        thread_local! {
            static MACHINES: std::cell::RefCell<Machines> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let key = (self.target.clone(), self.config.opt_level, self.config.code_model);
        let cached = MACHINES.with(|m| {
            let mut m = m.borrow_mut();
            m.iter().position(|(k, _)| *k == key).map(|i| m.swap_remove(i).1)
        });
        let mut machine = match cached {
            Some(m) => m,
            None => Machine::new(self.make_target_machine()?),
        };
        let r = f(&mut machine);
        MACHINES.with(|m| {
            let mut m = m.borrow_mut();
            // A few targets per thread at most (tests switch -O levels).
            if m.len() >= 8 {
                m.remove(0);
            }
            m.push((key, machine));
        });
        r
    }

    /// LLVM's target for this compiler's triple (a registry lookup).
    fn llvm_target(&self) -> Result<(TargetTriple, Target), CodegenError> {
        let triple = TargetTriple::create(&self.target.triple);
        let target = Target::from_triple(&triple)
            .map_err(|e| CodegenError::new(format!("unknown target triple `{}`: {e}", self.target.triple)))?;
        Ok((triple, target))
    }

    fn make_target_machine(&self) -> Result<TargetMachine, CodegenError> {
        let (triple, target) = self.llvm_target()?;
        let level = match self.config.opt_level {
            OptLevel::O0 => OptimizationLevel::None,
            OptLevel::O1 => OptimizationLevel::Less,
            OptLevel::O2 => OptimizationLevel::Default,
            OptLevel::O3 => OptimizationLevel::Aggressive,
        };
        let is_x86_64 = self.target.triple.starts_with("x86_64");
        let model = match self.config.code_model {
            CodeModel::Default => targets::CodeModel::Default,
            CodeModel::Small => targets::CodeModel::Small,
            // The large model exists on x86-64; elsewhere the target keeps
            // its default (see docs/runtime.md).
            CodeModel::Large if is_x86_64 => targets::CodeModel::Large,
            CodeModel::Large => targets::CodeModel::Default,
        };
        target
            .create_target_machine(&triple, &self.target.cpu, &self.target.features, level, RelocMode::PIC, model)
            .ok_or_else(|| {
                CodegenError::new(format!(
                    "LLVM cannot make a target machine for {} (cpu `{}`)",
                    self.target.triple, self.target.cpu
                ))
            })
    }

    fn pipeline(&self) -> String {
        format!("default<O{}>", self.config.opt_level.number())
    }

    /// Optimises a lowered module and emits it.
    fn finish(&self, l: &Lowering<'_, '_>, m: &mut Machine, emit: Emit) -> Result<Vec<u8>, CodegenError> {
        l.verify()?;
        l.module
            .run_passes(&self.pipeline(), m.tm(), PassBuilderOptions::create())
            .map_err(|e| CodegenError::new(format!("LLVM optimisation failed: {}", e.to_string_lossy())))?;
        // Before the code generator's loop strength reduction sees them.
        bounds::bound_add_trees(&l.module);
        match emit {
            Emit::LlvmIr => Ok(l.module.print_to_string().to_bytes().to_vec()),
            Emit::Object => m.emit(&l.module, FileKind::Object),
            Emit::Assembly => m.emit(&l.module, FileKind::Assembly),
        }
    }

    fn prepare<'a, 'ctx>(
        &self,
        cx: &'ctx Context,
        name: &str,
        tm: &TargetMachine,
        fields: Vec<&'a Field>,
    ) -> Lowering<'a, 'ctx> {
        let l =
            Lowering::new(cx, name, &self.config, &self.target.triple, &self.target.cpu, &self.target.features, fields);
        l.module.set_triple(&tm.get_triple());
        l.module.set_data_layout(&tm.get_target_data().get_data_layout());
        l
    }

    /// Compiles a per-task module (what `split-tasks` emits: fields,
    /// functions and one task item) to an object with the entry
    /// [`ENTRY_SYMBOL`].
    pub fn compile_task(&self, module: &Module) -> Result<CompiledTask, CodegenError> {
        let t0 = Instant::now();
        let (object, meta) = self.emit_task(module, Emit::Object)?;
        Ok(CompiledTask { object, meta, compile_time: t0.elapsed() })
    }

    /// Compiles a per-task module to the chosen output. The function
    /// records it calls (`crate::key::functions`) are declared, not
    /// defined: the object links against theirs ([`Compiler::emit_function`]).
    pub fn emit_task(&self, module: &Module, emit: Emit) -> Result<(Vec<u8>, LaunchMeta), CodegenError> {
        let task = single_task(module)?;
        let meta = task_meta(module)?;
        let fields: Vec<&Field> = module.fields().collect();
        let plan = FuncPlan::of(module, &self.config);
        let holds = plan.task_object(&task.body).membership(plan.funcs.len());
        let bytes = self.with_target_machine(|m| {
            let cx = Context::create();
            // The LLVM module is named neutrally: a per-task object must
            // not carry the task's name.
            let mut l = self.prepare(&cx, "kiln.task", m.tm(), fields);
            l.add_funcs_as(module.funcs(), |f| func_use(&plan, &holds, f))?;
            l.add_task(
                ENTRY_SYMBOL,
                &TaskSource { body: &task.body, block: task.body.entry, kind: &task.kind, params: &task.body.params },
            )?;
            self.finish(&l, m, emit)
        })?;
        Ok((bytes, meta))
    }

    /// Compiles the function record of `module` whose key is `key` to an
    /// object that defines its symbol ([`record_symbol`]), with the
    /// functions it copies, and declares the records it calls.
    pub fn compile_function(&self, module: &Module, key: &Key) -> Result<CompiledTask, CodegenError> {
        let t0 = Instant::now();
        let (object, meta) = self.emit_function(module, key, Emit::Object)?;
        Ok(CompiledTask { object, meta, compile_time: t0.elapsed() })
    }

    /// [`Compiler::compile_function`] to the chosen output.
    pub fn emit_function(&self, module: &Module, key: &Key, emit: Emit) -> Result<(Vec<u8>, LaunchMeta), CodegenError> {
        let plan = FuncPlan::of(module, &self.config);
        let i = plan.funcs.iter().position(|f| f.record && f.key == *key).ok_or_else(|| {
            CodegenError::new(format!("no function record {key} in the module{}", module_label(module)))
        })?;
        let holds = plan.record_object(i).membership(plan.funcs.len());
        let bytes = self.with_target_machine(|m| {
            let cx = Context::create();
            let mut l = self.prepare(&cx, "kiln.function", m.tm(), Vec::new());
            l.add_funcs_as(module.funcs(), |f| func_use(&plan, &holds, f))?;
            self.finish(&l, m, emit)
        })?;
        Ok((bytes, function_meta(&plan.funcs[i])))
    }

    /// Compiles every task a kernel of a split stream launches into one
    /// object (the whole-kernel path): each task its own entry
    /// ([`kernel_entry_symbol`]), functions emitted once, and every task
    /// sees the union of the tasks' fields, in first-use order.
    pub fn compile_kernel(&self, stream: &Stream, kernel: &str) -> Result<CompiledKernel, CodegenError> {
        let t0 = Instant::now();
        let (object, launches) = self.emit_kernel(stream, kernel, Emit::Object)?;
        Ok(CompiledKernel { object, launches, compile_time: t0.elapsed() })
    }

    /// [`Compiler::compile_kernel`] to the chosen output.
    pub fn emit_kernel(
        &self,
        stream: &Stream,
        kernel: &str,
        emit: Emit,
    ) -> Result<(Vec<u8>, Vec<LaunchMeta>), CodegenError> {
        let plan = KernelPlan::of(stream, kernel)?;
        self.with_target_machine(|m| {
            let cx = Context::create();
            let mut l = self.prepare(&cx, "kiln.kernel", m.tm(), plan.fields.clone());
            l.add_funcs(plan.launched.iter().flat_map(|(m, _)| m.funcs()))?;
            for (task, sym) in &plan.entries {
                let source = TaskSource {
                    body: &task.body,
                    block: task.body.entry,
                    kind: &task.kind,
                    params: &task.body.params,
                };
                l.add_task(sym, &source)?;
            }
            Ok((self.finish(&l, m, emit)?, plan.launches))
        })
    }
}

/// How an object that holds `holds` of `plan` lowers `f`: a record it
/// defines under its key's symbol, a copy under `kiln_fn.NAME`, a record
/// it calls declared, anything else left out.
fn func_use(plan: &FuncPlan<'_>, holds: &[Option<bool>], f: &Func) -> Option<FuncUse> {
    let i = plan.index(&f.name)?;
    let info = &plan.funcs[i];
    Some(match holds[i]? {
        true if info.record => FuncUse::Define(record_symbol(&info.key)),
        true => FuncUse::Define(format!("kiln_fn.{}", f.name)),
        false => FuncUse::Declare(record_symbol(&info.key)),
    })
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
        assert!(check_llvm_version(llvm_library_version(), crate::config::LLVM_VERSION).is_ok());
    }
}
