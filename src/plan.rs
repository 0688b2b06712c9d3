//! Planning: what an object holds and how to launch it, decided from the
//! IR alone, below the LLVM wall, so the key, the cache, the JIT engine
//! and a process that compiles elsewhere all read the same plan without
//! a code generator.
//!
//! Owns: the entry symbols ([`ENTRY_SYMBOL`] of every per-task object,
//! [`kernel_entry_symbol`] of a whole-kernel object's tasks); a per-task
//! module's one task ([`single_task`]), its launch metadata
//! ([`task_meta`]) and its key with it ([`key_and_meta`], what the cache
//! looks a task up by); a split stream's task modules ([`task_modules`]);
//! a kernel's launches ([`launched_tasks`], and [`LaunchTable`] for every
//! kernel of a stream from one index); a whole-kernel object's
//! [`KernelPlan`]; [`PlanError`], and how its messages and codegen's name
//! a module ([`module_label`]).
//!
//! Must never: depend on LLVM or anything of `codegen` (which builds on
//! this), or decide anything a per-task object's bytes do not also
//! follow from (the build identity reaches this file through `codegen`).

use crate::config::{CompileConfig, LaunchMeta, MetaError};
use crate::ir::{Field, Module, Stmt, StmtKind, Stream, StreamIndex, TaskItem};
use crate::key::Key;
use rustc_hash::FxHashMap;
use std::fmt;

/// The entry symbol of every per-task object (the same in all of them: each
/// object lives in its own JIT dylib).
pub const ENTRY_SYMBOL: &str = "kiln_task";

/// The entry symbol of the `n`-th task of a whole-kernel object.
pub fn kernel_entry_symbol(n: usize) -> String {
    format!("kiln_task.{n}")
}

/// Why a module or a kernel has no plan: it is not in the form that
/// `offload` and `split-tasks` make, or its launch metadata is invalid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanError {
    pub message: String,
}

impl PlanError {
    pub fn new(message: impl Into<String>) -> PlanError {
        PlanError { message: message.into() }
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PlanError {}

impl From<MetaError> for PlanError {
    fn from(e: MetaError) -> PlanError {
        PlanError::new(e.message)
    }
}

/// A per-task module's key (exactly `kiln-key`'s) and the launch metadata
/// of its task under the names it has in this module.
pub fn key_and_meta(module: &Module, config: &CompileConfig) -> Result<(Key, LaunchMeta), PlanError> {
    let task = single_task(module)?;
    let _span = crate::trace::span("key", "key", &task.name);
    let key = crate::key::task_key(module, task, config);
    Ok((key, task_meta(module)?))
}

/// The modules of a split stream that hold a top-level task item.
pub fn task_modules(stream: &Stream) -> impl Iterator<Item = (&Module, &TaskItem)> {
    stream.modules.iter().filter_map(|m| {
        let mut ts = m.tasks();
        ts.next().map(|t| (m, t))
    })
}

/// What a whole-kernel object holds, decided from the IR alone (so a
/// process that compiles elsewhere knows how to launch the object it gets
/// back): the launched tasks, the union of their fields in first-use
/// order, one entry symbol per distinct task ([`kernel_entry_symbol`]), and
/// each launch's metadata.
pub struct KernelPlan<'s> {
    pub launched: Vec<(&'s Module, &'s TaskItem)>,
    pub fields: Vec<&'s Field>,
    /// Each distinct launched task once, with its entry symbol.
    pub entries: Vec<(&'s TaskItem, String)>,
    /// One per `launch` of the kernel, in order.
    pub launches: Vec<LaunchMeta>,
}

impl<'s> KernelPlan<'s> {
    /// The plan of `kernel` of the split stream `stream`.
    pub fn of(stream: &'s Stream, kernel: &str) -> Result<KernelPlan<'s>, PlanError> {
        let launched = launched_tasks(stream, kernel)?;
        let mut fields: Vec<&Field> = Vec::new();
        let mut field_at: FxHashMap<&str, usize> = FxHashMap::default();
        for f in launched.iter().flat_map(|(m, _)| m.fields()) {
            match field_at.get(f.name.as_str()).map(|&i| fields[i]) {
                None => {
                    field_at.insert(&f.name, fields.len());
                    fields.push(f)
                }
                Some(g) if g.elem != f.elem || g.shape != f.shape => {
                    return Err(PlanError::new(format!(
                        "field @{} is declared with two different types in kernel @{kernel}",
                        f.name
                    )))
                }
                Some(_) => {}
            }
        }
        let mut entries: Vec<(&TaskItem, String)> = Vec::new();
        let mut entry_at: FxHashMap<&str, usize> = FxHashMap::default();
        let mut launches = Vec::with_capacity(launched.len());
        for (_, task) in &launched {
            // A kernel that launches one task twice gets one entry for it.
            let i = *entry_at.entry(&task.name).or_insert_with(|| {
                entries.push((task, kernel_entry_symbol(entries.len())));
                entries.len() - 1
            });
            let sym = entries[i].1.clone();
            launches.push(LaunchMeta::of_task(task, &fields, &sym)?);
        }
        Ok(KernelPlan { launched, fields, entries, launches })
    }
}

/// The launch metadata of a per-task module's task (entry
/// [`ENTRY_SYMBOL`]), decided from the IR alone.
pub fn task_meta(module: &Module) -> Result<LaunchMeta, PlanError> {
    let fields: Vec<&Field> = module.fields().collect();
    Ok(LaunchMeta::of_task(single_task(module)?, &fields, ENTRY_SYMBOL)?)
}

/// How messages name a module after the word `module`: ` @NAME`, or
/// nothing for an unnamed one.
pub fn module_label(module: &Module) -> String {
    module.name.as_deref().map(|n| format!(" @{n}")).unwrap_or_default()
}

/// The one task item of a per-task module.
pub fn single_task(module: &Module) -> Result<&TaskItem, PlanError> {
    let mut ts = module.tasks();
    let name = module_label(module);
    match (ts.next(), ts.next()) {
        (Some(t), None) => Ok(t),
        (None, _) => Err(PlanError::new(format!("module{name} holds no task (run split-tasks first)"))),
        (Some(_), Some(_)) => Err(PlanError::new(format!("module{name} holds more than one task"))),
    }
}

/// The task items a kernel of a split stream launches, in launch order,
/// with the modules that hold them.
pub fn launched_tasks<'s>(stream: &'s Stream, kernel: &str) -> Result<Vec<(&'s Module, &'s TaskItem)>, PlanError> {
    launched_in(&StreamIndex::new(stream), kernel)
}

/// [`launched_tasks`] for every kernel of a split stream at once, from one
/// index of the stream: a run of K kernels looks each kernel's launches up
/// here instead of indexing the whole stream K times (which made a warm
/// run of 100 kernels quadratic in them).
pub struct LaunchTable {
    /// Per kernel: the (module, item) positions of its launched tasks.
    by_kernel: FxHashMap<String, Result<Vec<(usize, usize)>, PlanError>>,
    /// Per kernel name: the (module, item) position of the first kernel
    /// of that name.
    kernel_at: FxHashMap<String, (usize, usize)>,
}

impl LaunchTable {
    /// The table of `stream`, which [`LaunchTable::launched`] must be given.
    pub fn new(stream: &Stream) -> LaunchTable {
        let items = StreamIndex::new(stream);
        let mut at: FxHashMap<*const TaskItem, (usize, usize)> = FxHashMap::default();
        let mut kernel_at = FxHashMap::default();
        for (mi, m) in stream.modules.iter().enumerate() {
            for (ii, item) in m.items.iter().enumerate() {
                match item {
                    crate::ir::Item::Task(t) => {
                        at.insert(t as *const TaskItem, (mi, ii));
                    }
                    crate::ir::Item::Kernel(k) => {
                        kernel_at.entry(k.name.to_string()).or_insert((mi, ii));
                    }
                    _ => {}
                }
            }
        }
        let kernels = stream.modules.iter().flat_map(|m| m.kernels());
        let by_kernel = kernels
            .map(|k| {
                let launched =
                    launched_in(&items, &k.name).map(|v| v.iter().map(|&(_, t)| at[&(t as *const _)]).collect());
                (k.name.to_string(), launched)
            })
            .collect();
        LaunchTable { by_kernel, kernel_at }
    }

    /// The first kernel named `name` in `stream`, the stream this table
    /// was made of, with its module.
    pub fn kernel<'s>(&self, stream: &'s Stream, name: &str) -> Option<(&'s Module, &'s crate::ir::Kernel)> {
        let &(mi, ii) = self.kernel_at.get(name)?;
        let m = stream.modules.get(mi)?;
        match m.items.get(ii)? {
            crate::ir::Item::Kernel(k) if k.name == name => Some((m, k)),
            _ => None,
        }
    }

    /// What [`launched_tasks`] gives for `kernel` of `stream`, the stream
    /// this table was made of.
    pub fn launched<'s>(&self, stream: &'s Stream, kernel: &str) -> Result<Vec<(&'s Module, &'s TaskItem)>, PlanError> {
        let Some(found) = self.by_kernel.get(kernel) else {
            return launched_tasks(stream, kernel);
        };
        let task = |&(mi, ii): &(usize, usize)| {
            let m = &stream.modules[mi];
            match &m.items[ii] {
                crate::ir::Item::Task(t) => Ok((m, t)),
                _ => Err(PlanError::new(format!("kernel @{kernel}: the launch table is not of this stream"))),
            }
        };
        found.clone()?.iter().map(task).collect()
    }
}

fn launched_in<'s>(items: &StreamIndex<'s>, kernel: &str) -> Result<Vec<(&'s Module, &'s TaskItem)>, PlanError> {
    let (_, k) = items.kernel(kernel).ok_or_else(|| PlanError::new(format!("no kernel @{kernel} in the input")))?;
    let mut out = Vec::new();
    let mut bad: Option<PlanError> = None;
    k.body.walk(k.body.entry, &mut |s: Stmt| {
        if bad.is_some() {
            return;
        }
        match &k.body.stmt(s).kind {
            StmtKind::Launch(name) => match items.task(name) {
                Some(mt) => out.push(mt),
                None => {
                    bad = Some(PlanError::new(format!("kernel @{kernel} launches @{name}, which is not in the input")))
                }
            },
            _ => {
                bad = Some(PlanError::new(format!(
                    "kernel @{kernel} is not split into launches (run the offload and split-tasks passes first)"
                )))
            }
        }
    });
    match bad {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table answers as `launched_tasks` does, for every kernel (one
    /// launching a task twice, one launching nothing) and for a name that
    /// is no kernel.
    #[test]
    fn the_launch_table_answers_as_launched_tasks_does() {
        let mut s = crate::parser::parse(
            "field @x : i32[4]\n\
             kernel @a() {\n  for %i in 0 .. 4 {\n    store @x[%i], %i\n  }\n  for %j in 0 .. 4 {\n    %v = load @x[%j]\n    store @x[%j], %v\n  }\n}\n\
             kernel @b() {\n  for %i in 0 .. 2 {\n    store @x[%i], %i\n  }\n}\n\
             kernel @c() {\n}\n",
        )
        .unwrap();
        crate::verifier::verify(&s).unwrap();
        crate::passes::run_passes(&crate::passes::default_pipeline(), &mut s).unwrap();
        let table = LaunchTable::new(&s);
        let names = |v: Vec<(&Module, &TaskItem)>| {
            v.iter().map(|(m, t)| (m.name.clone(), t.name.to_string())).collect::<Vec<_>>()
        };
        for k in ["a", "b", "c"] {
            let direct = names(launched_tasks(&s, k).unwrap());
            assert_eq!(names(table.launched(&s, k).unwrap()), direct, "kernel @{k}");
        }
        assert_eq!(names(table.launched(&s, "a").unwrap()).len(), 2);
        assert_eq!(table.launched(&s, "nope").unwrap_err(), launched_tasks(&s, "nope").unwrap_err());
    }
}
