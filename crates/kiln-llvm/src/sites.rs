//! Statement numbers: how compiled code names the statement that failed
//! without carrying the file's name or layout.
//!
//! Owns: the numbering of the statements of an object. The bodies an
//! object holds are taken in a fixed order ([`object_bodies`]: the
//! functions of the launched modules, first definition of each name, in
//! module order; then each launched task once, in launch order), and the
//! statements of each body in print order (pre-order, as `Body::walk`);
//! the number of a statement is its position in that sequence. For a
//! per-task object this is the order of the task's canonical text (its
//! module's functions, then the task: `kiln::key`), so the number is a
//! property of the text the key digests: moving a comment or renaming a
//! value changes no number and no key, and the location is found again, at
//! launch, in whatever module the current process holds ([`locate`]).
//!
//! Must never: touch LLVM, or depend on spans (they only come out of
//! [`locate`]).

use kiln::ir::{Body, Func, Module, PrintPiece, Scalar, SecondaryMap, Span, Stmt, StmtKind, TaskItem};
use std::collections::HashSet;

/// The number codegen passes when a failure has no statement (never
/// produced for a statement of the object).
pub const NO_STMT: u32 = u32::MAX;

/// The bodies of an object built from `launched` (task modules with their
/// task, in launch order), in numbering order: each function name once
/// (its first definition), then each task name once.
pub fn object_bodies<'a>(launched: &[(&'a Module, &'a TaskItem)]) -> (Vec<&'a Func>, Vec<&'a TaskItem>) {
    // Sets, not scans of what is kept: a kernel may launch thousands of
    // tasks, each module holding its copy of the functions.
    let mut seen = HashSet::new();
    let funcs = launched.iter().flat_map(|(m, _)| m.funcs()).filter(|f| seen.insert(f.name.as_str())).collect();
    let mut seen = HashSet::new();
    let tasks = launched.iter().map(|&(_, t)| t).filter(|t| seen.insert(t.name.as_str())).collect();
    (funcs, tasks)
}

/// The statements of `body` in print order.
pub fn stmts_in_order(body: &Body) -> Vec<Stmt> {
    let mut out = Vec::new();
    body.walk(body.entry, &mut |s| out.push(s));
    out
}

/// Numbers statements body by body: each body's first number is the
/// count of the statements of the bodies before it.
#[derive(Clone, Debug, Default)]
pub struct Numbering {
    next: u32,
}

impl Numbering {
    /// The numbers of `body`'s statements, indexed by `Stmt` (statements
    /// not reachable from the entry block get [`NO_STMT`]); advances past
    /// them.
    pub fn number(&mut self, body: &Body) -> SecondaryMap<Stmt, u32> {
        let mut numbers = SecondaryMap::for_arena(body.stmts(), NO_STMT);
        for s in stmts_in_order(body) {
            numbers[s] = self.next;
            self.next = self.next.saturating_add(1);
        }
        numbers
    }
}

/// What a failure's report takes from the statement that failed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Site {
    /// Its span, when it has source text.
    pub span: Option<Span>,
    /// For an `assert`: its message and the types of its values (the
    /// error slot holds their bits).
    pub assert: Option<(String, Vec<Scalar>)>,
    /// For a `print`: its pieces and the types of its values (its record
    /// holds their bits).
    pub print: Option<(Vec<PrintPiece>, Vec<Scalar>)>,
}

/// Statement `n` of the object built from `launched`: nothing known for
/// [`NO_STMT`] or a number past the object's statements.
pub fn locate(launched: &[(&Module, &TaskItem)], n: u32) -> Site {
    if n == NO_STMT {
        return Site::default();
    }
    let (funcs, tasks) = object_bodies(launched);
    let bodies = funcs.iter().map(|f| &f.body).chain(tasks.iter().map(|t| &t.body));
    let mut rest = n as usize;
    for body in bodies {
        let order = stmts_in_order(body);
        match order.get(rest) {
            Some(&s) => {
                let data = body.stmt(s);
                let span = (data.span.end > data.span.start).then_some(data.span);
                let assert = match &data.kind {
                    StmtKind::Assert { message, args, .. } => {
                        Some((message.clone(), args.iter().map(|a| body.ty(*a).elem()).collect()))
                    }
                    _ => None,
                };
                let print = match &data.kind {
                    StmtKind::Print { pieces } => {
                        Some((pieces.clone(), data.kind.print_values().iter().map(|a| body.ty(*a).elem()).collect()))
                    }
                    _ => None,
                };
                return Site { span, assert, print };
            }
            None => rest -= order.len(),
        }
    }
    Site::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(src: &str) -> kiln::ir::Stream {
        let mut s = kiln::parser::parse(src).unwrap();
        kiln::verifier::verify(&s).unwrap();
        kiln::passes::run_passes(&kiln::passes::default_pipeline(), &mut s).unwrap();
        s
    }

    const SRC: &str = "field @x : f32[4]\n\
        func @f(%i: i32) -> f32 {\n  %v = load @x[%i]\n  ret %v\n}\n\
        kernel @k() {\n  for %i in 0 .. 4 {\n    %v = call @f(%i)\n    store @x[%i], %v\n  }\n}\n";

    #[test]
    fn numbers_run_through_functions_then_tasks_in_print_order() {
        let s = split(SRC);
        let launched = kiln::plan::launched_tasks(&s, "k").unwrap();
        let text = |n| locate(&launched, n).span.map(|sp| SRC[sp.range()].to_string());
        assert_eq!(text(0).as_deref(), Some("%v = load @x[%i]"));
        assert_eq!(text(1).as_deref(), Some("ret %v"));
        assert_eq!(text(2).as_deref(), Some("%v = call @f(%i)"));
        assert_eq!(text(3).as_deref(), Some("store @x[%i], %v"));
        assert_eq!(text(4), None);
        assert_eq!(text(NO_STMT), None);
        assert_eq!(locate(&launched, 3).assert, None);
        // The numbering codegen uses assigns the same numbers.
        let (funcs, tasks) = object_bodies(&launched);
        let mut n = Numbering::default();
        let f = n.number(&funcs[0].body);
        let t = n.number(&tasks[0].body);
        assert_eq!(stmts_in_order(&funcs[0].body).iter().map(|&s| f[s]).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(stmts_in_order(&tasks[0].body).iter().map(|&s| t[s]).collect::<Vec<_>>(), [2, 3]);
    }

    #[test]
    fn an_assert_is_located_with_its_message_and_value_types() {
        let src = "field @x : f32[4]\n\
            kernel @k(%n: i32) {\n  for %i in 0 .. 4 {\n    %z = const 0 : i32\n    %ok = cmp gt %n, %z\n    \
            assert %ok, \"n=%d at %d\", %n, %i\n  }\n}\n";
        let s = split(src);
        let launched = kiln::plan::launched_tasks(&s, "k").unwrap();
        let site = (0..4).map(|n| locate(&launched, n)).find(|s| s.assert.is_some()).expect("the assert");
        assert_eq!(site.assert, Some(("n=%d at %d".to_string(), vec![Scalar::I32, Scalar::I32])));
        assert!(site.span.is_some_and(|sp| src[sp.range()].starts_with("assert %ok")));
    }
}
