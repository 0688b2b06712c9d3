//! `to_task_stream`: the one way a verified stream reaches per-task form.
//!
//! Owns: the rule for when the default pipeline runs. A kernel is
//! *unsplit* when its body holds anything but `launch` statements, *split*
//! when it holds launches only (an empty kernel is neither). A stream with
//! no unsplit kernel is returned unchanged; a kernel file (no task item,
//! no split kernel) goes through
//! [`default_pipeline`](super::default_pipeline) whole. Otherwise split
//! kernels and task items are kept exactly as they are, and every module
//! that holds an unsplit kernel has those kernels (with its fields and
//! functions) taken through the pipeline on their own: their task modules
//! come before the module, whose unsplit kernels become their launch
//! sequences. `kiln-key`,
//! `kiln-compile` and the JIT engine all call it, so they see the same
//! tasks and keys (`docs/passes.md`, "Per-task form").
//!
//! Must never: touch LLVM, print, or change a task item or a split kernel.

use crate::diag::Diagnostics;
use crate::ir::{Item, Kernel, Module, StmtKind, Stream};

/// Whether `k` still needs the pipeline: its body holds something other
/// than `launch` statements.
pub fn is_unsplit(k: &Kernel) -> bool {
    k.body.block(k.body.entry).iter().any(|&s| !matches!(k.body.stmt(s).kind, StmtKind::Launch(_)))
}

/// Whether `k` is a (non-empty) sequence of launches.
fn is_split(k: &Kernel) -> bool {
    !k.body.block(k.body.entry).is_empty() && !is_unsplit(k)
}

/// Brings a verified stream into per-task form by the rule above.
pub fn to_task_stream(stream: Stream) -> Result<Stream, Diagnostics> {
    let _span = crate::trace::span("phase", "split", crate::trace::WHOLE_INPUT);
    let needs = |m: &Module| m.kernels().any(is_unsplit);
    if !stream.modules.iter().any(needs) {
        return Ok(stream);
    }
    let pure = |m: &Module| m.tasks().next().is_none() && !m.kernels().any(is_split);
    if stream.modules.iter().all(pure) {
        // A plain kernel file: the whole stream goes through the pipeline,
        // as it always did (the keys of every kernel file depend on it).
        let mut stream = stream;
        super::run_passes(&super::default_pipeline(), &mut stream)?;
        return Ok(stream);
    }
    let mut out = Stream::default();
    for m in stream.modules {
        if needs(&m) {
            out.modules.extend(split_mixed(m)?);
        } else {
            out.modules.push(m);
        }
    }
    // Tasks made here may collide with the stream's own by name.
    crate::verifier::verify(&out)?;
    Ok(out)
}

/// A module that holds unsplit kernels in a stream with task items or
/// split kernels: the pipeline runs on a copy of it without its own, and
/// the module keeps them, with each unsplit kernel replaced by its
/// launches.
fn split_mixed(m: Module) -> Result<Vec<Module>, Diagnostics> {
    let kept = |it: &Item| match it {
        Item::Task(_) => false,
        Item::Kernel(k) => !is_split(k),
        Item::Field(_) | Item::Func(_) => true,
    };
    let mut todo = Stream {
        modules: vec![Module {
            name: m.name.clone(),
            items: m.items.iter().filter(|it| kept(it)).cloned().collect(),
            span: m.span,
        }],
    };
    super::run_passes(&super::default_pipeline(), &mut todo)?;
    // `split-tasks` puts the launch module last, after the task modules.
    let launches = todo.modules.pop().unwrap_or_default();
    let mut module = m;
    for it in &mut module.items {
        if let Item::Kernel(k) = it {
            if let Some(l) = launches.kernel(&k.name).filter(|_| is_unsplit(k)) {
                *k = l.clone();
            }
        }
    }
    todo.modules.push(module);
    Ok(todo.modules)
}
