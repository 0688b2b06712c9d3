//! The module-wide call rules: no recursion, and a bound on how deeply
//! blocks and calls nest together ([`super::MAX_CALL_DEPTH`]).
//!
//! Owns: the call graph's strongly connected components (Tarjan) and the
//! deepest path of calls.
//!
//! Must never: check a single call's arguments (`typing`).

use super::*;

/// Rejects recursion, direct or through other functions. The interpreter
/// and the JIT give `call` inline-free semantics without a stack model of
/// their own (a call runs on the host stack, with no depth limit or
/// overflow error defined by the language), so a call graph with a cycle
/// could exhaust the stack instead of producing a defined result.
///
/// Reports each strongly connected component of the call graph that has a
/// cycle once, at a call that closes it, naming the cycle.
pub(super) fn check_recursion(graph: &CallGraph<'_>, sccs: &[Vec<usize>], diags: &mut Vec<Diagnostic>) {
    let succ = &graph.succ;
    for scc in sccs {
        if !graph.is_cycle(scc) {
            continue;
        }
        // Name the cycle through the first function (in source order) of
        // the component: a shortest path back to itself inside it.
        let start = *scc.iter().min().unwrap_or(&scc[0]);
        let in_scc: std::collections::HashSet<usize> = scc.iter().copied().collect();
        let mut prev: HashMap<usize, (usize, Span)> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut closing = None;
        'bfs: while let Some(u) = queue.pop_front() {
            for &(v, sp) in &succ[u] {
                if !in_scc.contains(&v) {
                    continue;
                }
                if v == start {
                    closing = Some((u, sp));
                    break 'bfs;
                }
                if v != start && !prev.contains_key(&v) {
                    prev.insert(v, (u, sp));
                    queue.push_back(v);
                }
            }
        }
        let Some((last, span)) = closing else {
            continue;
        };
        let mut path = vec![start];
        let mut cur = last;
        let mut tail = Vec::new();
        while cur != start {
            tail.push(cur);
            cur = prev.get(&cur).map_or(start, |p| p.0);
        }
        path.extend(tail.into_iter().rev());
        path.push(start);
        let names: Vec<String> = path.iter().map(|&i| format!("@{}", graph.bodies[i].name)).collect();
        diags.push(Diagnostic::error(
            format!("recursive call: {} (recursion is not allowed)", names.join(" -> ")),
            span,
        ));
    }
}

/// Rejects a body whose blocks and calls nest deeper than
/// [`MAX_CALL_DEPTH`] along some path of calls, naming the path. Only the
/// outermost offender is reported: not a function that a body already
/// reported calls. Bodies in a cycle (reported as recursion) count only
/// their own blocks.
pub(super) fn check_call_depth(graph: &CallGraph<'_>, sccs: &[Vec<usize>], diags: &mut Vec<Diagnostic>) {
    let n = graph.bodies.len();
    // Tarjan's components come callees first, so one pass in that order
    // sees every callee's depth before its callers.
    let mut depth: Vec<u32> = graph.bodies.iter().map(|b| b.deepest).collect();
    let mut via: Vec<Option<usize>> = vec![None; n];
    for scc in sccs.iter().filter(|scc| !graph.is_cycle(scc)) {
        let u = scc[0];
        for (k, &(v, _)) in graph.succ[u].iter().enumerate() {
            let d = graph.levels[u][k].saturating_add(depth[v]);
            if d > depth[u] {
                depth[u] = d;
                via[u] = Some(k);
            }
        }
    }
    let too_deep = |i: usize| depth[i] as usize > MAX_CALL_DEPTH;
    let mut called_by_offender = vec![false; n];
    for i in (0..n).filter(|&i| too_deep(i)) {
        for &(j, _) in &graph.succ[i] {
            called_by_offender[j] = true;
        }
    }
    for i in (0..n).filter(|&i| too_deep(i) && !called_by_offender[i]) {
        let b = &graph.bodies[i];
        let mut path = vec![i];
        while let Some(k) = via[*path.last().unwrap_or(&i)] {
            path.push(graph.succ[path[path.len() - 1]][k].0);
        }
        let span = via[i].map_or(b.span, |k| graph.succ[i][k].1);
        diags.push(Diagnostic::error(
            format!(
                "{} @{}: blocks and calls nest {} levels deep, more than the limit of {MAX_CALL_DEPTH}: {}",
                b.what,
                b.name,
                depth[i],
                call_path(graph.bodies, &path)
            ),
            span,
        ));
    }
}

/// `@a -> @b -> @c`; a long path shows its first and last few names.
pub(super) fn call_path(bodies: &[Nesting], path: &[usize]) -> String {
    const SHOW: usize = 4;
    let name = |&i: &usize| format!("@{}", bodies[i].name);
    if path.len() <= 2 * SHOW {
        return path.iter().map(name).collect::<Vec<_>>().join(" -> ");
    }
    let head: Vec<String> = path[..SHOW].iter().map(name).collect();
    let tail: Vec<String> = path[path.len() - SHOW..].iter().map(name).collect();
    format!("{} -> ... ({} more) -> {}", head.join(" -> "), path.len() - 2 * SHOW, tail.join(" -> "))
}

/// Strongly connected components (Tarjan's algorithm, iterative so that
/// long call chains cannot exhaust the stack).
pub(super) fn tarjan(succ: &[Vec<(usize, Span)>]) -> Vec<Vec<usize>> {
    const NONE: usize = usize::MAX;
    let n = succ.len();
    let mut index = vec![NONE; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut out = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (u, ref mut i)) = work.last_mut() {
            if let Some(&(v, _)) = succ[u].get(*i) {
                *i += 1;
                if index[v] == NONE {
                    index[v] = next;
                    low[v] = next;
                    next += 1;
                    stack.push(v);
                    on_stack[v] = true;
                    work.push((v, 0));
                } else if on_stack[v] {
                    low[u] = low[u].min(index[v]);
                }
            } else {
                work.pop();
                if let Some(&(p, _)) = work.last() {
                    low[p] = low[p].min(low[u]);
                }
                if low[u] == index[u] {
                    let mut scc = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        scc.push(w);
                        if w == u {
                            break;
                        }
                    }
                    out.push(scc);
                }
            }
        }
    }
    out
}

impl<'b> CallGraph<'b> {
    pub(super) fn new(bodies: &'b [Nesting]) -> Self {
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (i, b) in bodies.iter().enumerate().filter(|(_, b)| b.what == "function") {
            index.entry(b.name.as_str()).or_insert(i);
        }
        let resolved = |b: &'b Nesting| {
            b.calls.iter().filter_map(|c| index.get(c.callee.as_str()).map(|&j| (j, c))).collect::<Vec<_>>()
        };
        let (mut succ, mut levels) = (Vec::with_capacity(bodies.len()), Vec::with_capacity(bodies.len()));
        for b in bodies {
            let calls = resolved(b);
            succ.push(calls.iter().map(|&(j, c)| (j, c.span)).collect());
            levels.push(calls.iter().map(|&(_, c)| c.level).collect());
        }
        CallGraph { bodies, succ, levels }
    }

    /// Whether a strongly connected component holds a cycle.
    pub(super) fn is_cycle(&self, scc: &[usize]) -> bool {
        scc.len() > 1 || self.succ[scc[0]].iter().any(|&(j, _)| j == scc[0])
    }
}
