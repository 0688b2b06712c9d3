//! LLVM code generation: per-task modules and whole kernels to host
//! objects (or LLVM IR / assembly text).
//!
//! Owns: the [`Compiler`] (a compile configuration plus a [`HostTarget`])
//! and its [`Backend`] implementation, the target machine (host triple,
//! host CPU, the host's *detected* features, PIC, the large code model on
//! x86-64), the optimisation pipeline and the code generator's
//! initialisation ([`init_codegen`]). The lowering itself is in [`lower`];
//! the runtime ABI it targets is `kiln_llvm::abi` (`docs/runtime.md`).
//! [`fill`] fills a cache by compiling (what `kiln-compile` does with
//! `--cache-dir`).
//!
//! Must never: depend on the JIT (`kiln-jit`: `kiln-compile` links no
//! JIT, `kiln-run` no code generator), load or run code, read or write
//! files outside [`fill`]'s store, or embed a task's or kernel's name in a
//! per-task object (identical tasks of different kernels share one cached
//! object; names reach error messages from the launcher side).

pub mod bounds;
mod emitter;
pub mod fill;
pub mod lower;

use emitter::{FileKind, Machine};
use inkwell::context::Context;
use inkwell::llvm_sys;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{self, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::OptimizationLevel;
use kiln::config::{CodeModel, CompileConfig, LaunchMeta, OptLevel};
use kiln::ir::{Field, Func, Module, Stream};
pub use kiln::key::functions::function_meta;
use kiln::key::functions::{record_symbol, FuncPlan, NeededRecord};
use kiln::key::Key;
use kiln::plan::{module_label, single_task, task_meta, KernelPlan, ENTRY_SYMBOL};
use kiln_llvm::{init_llvm, Backend, CodegenError, CompiledKernel, CompiledTask, HostTarget};
use lower::{FuncUse, Lowering, TaskSource};
use std::sync::OnceLock;
use std::time::Instant;

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

/// [`init_llvm`], and the X86 machine-code layer, code generator and
/// assembly printer (which also writes objects) registered and LLVM's
/// options set
/// ([`bounds::LLVM_OPTIONS`]): what a [`Compiler`] needs.
pub fn init_codegen() -> Result<(), CodegenError> {
    static INIT: OnceLock<Result<(), CodegenError>> = OnceLock::new();
    INIT.get_or_init(|| {
        init_llvm()?;
        kiln_llvm::target::init_x86_mc()?;
        init_x86_codegen()?;
        bounds::set_llvm_options();
        Ok(())
    })
    .clone()
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
fn init_x86_codegen() -> Result<(), CodegenError> {
    Err(CodegenError::new("Kiln's code generator is built for x86-64 hosts only"))
}

/// The in-process code generator: what a `kiln-compile` process, a cache
/// fill and the Python module compile with.
impl Backend for Compiler {
    fn config(&self) -> &CompileConfig {
        &self.config
    }

    fn target(&self) -> &HostTarget {
        &self.target
    }

    fn compile_tasks(&self, modules: &[&Module]) -> Vec<Result<CompiledTask, CodegenError>> {
        modules.iter().map(|m| Compiler::compile_task(self, m)).collect()
    }

    fn compile_kernel(&self, stream: &Stream, kernel: &str) -> Result<CompiledKernel, CodegenError> {
        Compiler::compile_kernel(self, stream, kernel)
    }

    fn compile_functions(&self, records: &[NeededRecord<'_>]) -> Vec<Result<CompiledTask, CodegenError>> {
        records.iter().map(|r| self.compile_function(r.module, &r.key)).collect()
    }
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
    /// records it calls (`kiln::key::functions`) are declared, not
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
