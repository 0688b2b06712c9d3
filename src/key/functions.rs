//! Function records: the functions of a per-task module that are compiled
//! once, as objects of their own, instead of once in every task that
//! calls them.
//!
//! Owns: the rule that makes a function a record ([`is_record_size`]:
//! at least [`RECORD_MIN_STMTS`] statements with its callees inlined, and
//! no field touched, itself or through a callee), a function's key
//! ([`FuncPlan`]: blake3 over the domain `kiln function key\0`, the key
//! format version, the configuration's JSON and the function's canonical
//! text, each with its length, then each distinct callee's name and key in
//! name order, so a function's key changes with any function it reaches),
//! the symbol a record is defined under ([`record_symbol`], from its key:
//! two different functions of one name never meet), and what an object
//! defines and declares ([`ObjectFuncs`]).
//!
//! A task's own key is unchanged: it hashes the task's whole module,
//! every function it reaches included (`crate::key`), so it still changes
//! with any function the task calls. Small functions stay copied into the
//! object that calls them, so LLVM can inline them into a hot loop (a call
//! it cannot see through costs the loop its vectorisation). A function
//! that touches a field stays copied too: its code depends on the calling
//! task's field table, and its statement numbers on the task's object
//! (`codegen::sites`), which is how a run-time error inside it is located.
//!
//! Must never: print, touch LLVM, or decide anything from names but the
//! call graph (a function's record status and key depend only on what it
//! reaches).

use super::{config_json, Key, Renumbering, KEY_FORMAT_VERSION};
use crate::config::{CompileConfig, LaunchMeta, MetaKind};
use crate::ir::{Body, Func, Module};
use crate::printer::{self, ItemRef};
use std::collections::HashMap;

/// The least size, in statements with every callee counted at each call
/// site, of a function compiled as a record of its own. Below it a
/// function is copied into each object that calls it, where LLVM may
/// inline it: `docs/performance.md`, "Functions compiled once".
pub const RECORD_MIN_STMTS: u64 = 64;

/// The prefix of a record's symbol; the rest is its key in hex.
pub const RECORD_SYMBOL_PREFIX: &str = "kiln_fk.";

const DOMAIN: &[u8] = b"kiln function key\0";

/// Whether a function of `size` statements (callees inlined) that touches
/// no field is a record.
pub fn is_record_size(size: u64) -> bool {
    size >= RECORD_MIN_STMTS
}

/// The symbol a function record defines and its callers declare.
pub fn record_symbol(key: &Key) -> String {
    format!("{RECORD_SYMBOL_PREFIX}{key}")
}

/// One function of a module, as codegen and the cache treat it.
#[derive(Clone, Debug)]
pub struct FuncInfo<'m> {
    pub func: &'m Func,
    /// Its key (every function has one; only a record's is stored).
    pub key: Key,
    /// Compiled once, as a record of its own.
    pub record: bool,
    /// Its distinct direct callees, as indices into [`FuncPlan::funcs`],
    /// in name order.
    pub calls: Vec<usize>,
}

/// The functions of one per-task module with their keys and which of
/// them are records.
#[derive(Clone, Debug, Default)]
pub struct FuncPlan<'m> {
    /// Each function of the module once (its first definition), in module
    /// order.
    pub funcs: Vec<FuncInfo<'m>>,
    by_name: HashMap<&'m str, usize>,
}

/// What one object (a task's or a record's) holds of the functions:
/// those it defines (copies, and the record itself first) and the records
/// it calls and declares, both as indices into [`FuncPlan::funcs`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectFuncs {
    pub defined: Vec<usize>,
    pub declared: Vec<usize>,
}

impl ObjectFuncs {
    /// For each of the plan's `n` functions: `Some(true)` if the object
    /// defines it, `Some(false)` if it declares it, `None` if neither (a
    /// table, so asking costs no search).
    pub fn membership(&self, n: usize) -> Vec<Option<bool>> {
        let mut v = vec![None; n];
        self.defined.iter().for_each(|&i| v[i] = Some(true));
        self.declared.iter().for_each(|&i| v[i] = Some(false));
        v
    }
}

/// A function's facts while the plan is built.
struct Facts {
    size: u64,
    fields: bool,
}

impl<'m> FuncPlan<'m> {
    /// The plan of `module`'s functions under `config`. A module whose
    /// calls form a cycle (which the verifier refuses) has no records.
    pub fn of(module: &'m Module, config: &CompileConfig) -> FuncPlan<'m> {
        let mut by_name: HashMap<&'m str, usize> = HashMap::new();
        let mut list: Vec<&'m Func> = Vec::new();
        for f in module.funcs() {
            by_name.entry(f.name.as_str()).or_insert_with(|| {
                list.push(f);
                list.len() - 1
            });
        }
        let calls: Vec<Vec<usize>> = list.iter().map(|f| callees(&f.body, &by_name)).collect();
        let Some(order) = callees_first(&calls) else {
            let funcs = list
                .iter()
                .zip(calls)
                .map(|(f, calls)| FuncInfo { func: f, key: Key([0; 32]), record: false, calls })
                .collect();
            return FuncPlan { funcs, by_name };
        };
        let json = config_json(config);
        let mut facts: Vec<Option<Facts>> = (0..list.len()).map(|_| None).collect();
        let mut keys = vec![Key([0; 32]); list.len()];
        for i in order {
            let f = list[i];
            let (own, fields) = own_facts(&f.body);
            let mut size = own;
            let mut touches = fields;
            // Each call site counts its callee whole: what inlining it all
            // would cost.
            f.body.each_call(&mut |name| {
                if let Some(c) = by_name.get(name).and_then(|&c| facts[c].as_ref()) {
                    size = size.saturating_add(c.size);
                    touches |= c.fields;
                }
            });
            facts[i] = Some(Facts { size, fields: touches });
            keys[i] = func_key(f, &json, calls[i].iter().map(|&c| (list[c].name.as_str(), &keys[c])));
        }
        let funcs = list
            .iter()
            .zip(calls)
            .enumerate()
            .map(|(i, (f, calls))| {
                let record = facts[i].as_ref().is_some_and(|x| !x.fields && is_record_size(x.size));
                FuncInfo { func: f, key: keys[i], record, calls }
            })
            .collect();
        FuncPlan { funcs, by_name }
    }

    /// The function named `name`, by index.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// What the object of the task whose body is `body` holds.
    pub fn task_object(&self, body: &Body) -> ObjectFuncs {
        self.object(callees(body, &self.by_name), None)
    }

    /// What the object of record `i` holds: `i` itself first.
    pub fn record_object(&self, i: usize) -> ObjectFuncs {
        self.object(self.funcs[i].calls.clone(), Some(i))
    }

    /// Every record the task of `body` needs loaded, each once, callees
    /// before their callers (the order they can be linked in).
    pub fn records_needed(&self, body: &Body) -> Vec<usize> {
        let mut out = Vec::new();
        let mut seen = vec![false; self.funcs.len()];
        for r in self.task_object(body).declared {
            self.needed_from(r, &mut seen, &mut out);
        }
        out
    }

    fn needed_from(&self, r: usize, seen: &mut [bool], out: &mut Vec<usize>) {
        // Iterative: a chain may be as deep as the verifier allows.
        let mut stack = vec![(r, false)];
        while let Some((i, expanded)) = stack.pop() {
            if expanded {
                out.push(i);
                continue;
            }
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            stack.push((i, true));
            for d in self.record_object(i).declared.into_iter().rev() {
                if !seen[d] {
                    stack.push((d, false));
                }
            }
        }
    }

    /// The functions reached from `roots` through copies (records are not
    /// entered), and the records met.
    fn object(&self, roots: Vec<usize>, own: Option<usize>) -> ObjectFuncs {
        let mut seen = vec![false; self.funcs.len()];
        let mut out = ObjectFuncs::default();
        if let Some(i) = own {
            seen[i] = true;
            out.defined.push(i);
        }
        let mut pending = roots;
        pending.reverse();
        while let Some(i) = pending.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            if self.funcs[i].record {
                out.declared.push(i);
            } else {
                out.defined.push(i);
                pending.extend(self.funcs[i].calls.iter().rev());
            }
        }
        out.declared.sort_unstable();
        out
    }
}

/// A function record some task of a stream needs: the per-task module it
/// was found in (which holds it and everything it reaches), its key and
/// its name there.
#[derive(Clone, Debug)]
pub struct NeededRecord<'s> {
    pub module: &'s Module,
    pub key: Key,
    pub name: crate::ir::Name,
    /// What its record stores as metadata ([`function_meta`]).
    pub meta: LaunchMeta,
}

impl<'s> NeededRecord<'s> {
    /// Function `info` of the per-task module `module`.
    pub fn of(module: &'s Module, info: &FuncInfo<'_>) -> NeededRecord<'s> {
        NeededRecord { module, key: info.key, name: info.func.name.clone(), meta: function_meta(info) }
    }
}

/// The metadata stored with a function record: its name when compiled
/// (informational), its symbol as the entry, and no parameters or fields.
pub fn function_meta(info: &FuncInfo<'_>) -> LaunchMeta {
    LaunchMeta {
        task: info.func.name.to_string(),
        entry_symbol: record_symbol(&info.key),
        kind: MetaKind::Function,
        params: Vec::new(),
        fields: Vec::new(),
    }
}

/// Every function record the tasks of `modules` (per-task modules) need,
/// each key once, callees before callers within each task.
pub fn needed_records<'s>(
    modules: impl IntoIterator<Item = &'s Module>,
    config: &CompileConfig,
) -> Vec<NeededRecord<'s>> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for m in modules {
        let Some(task) = m.tasks().next() else { continue };
        let plan = FuncPlan::of(m, config);
        for i in plan.records_needed(&task.body) {
            let f = &plan.funcs[i];
            if seen.insert(f.key) {
                out.push(NeededRecord::of(m, f));
            }
        }
    }
    out
}

/// The distinct functions `body` calls, in name order.
fn callees(body: &Body, by_name: &HashMap<&str, usize>) -> Vec<usize> {
    let mut named: Vec<(&str, usize)> = Vec::new();
    body.each_call(&mut |name| {
        if let Some((&n, &i)) = by_name.get_key_value(name) {
            named.push((n, i));
        }
    });
    named.sort_unstable();
    named.dedup();
    named.into_iter().map(|(_, i)| i).collect()
}

/// The functions in an order where each comes after its callees; `None`
/// when the calls form a cycle.
fn callees_first(calls: &[Vec<usize>]) -> Option<Vec<usize>> {
    // 0: not seen, 1: open, 2: done.
    let mut state = vec![0u8; calls.len()];
    let mut order = Vec::with_capacity(calls.len());
    for root in 0..calls.len() {
        let mut stack = vec![(root, 0usize)];
        while let Some(&mut (i, ref mut next)) = stack.last_mut() {
            if *next == 0 {
                match state[i] {
                    2 => {
                        stack.pop();
                        continue;
                    }
                    1 => return None,
                    _ => state[i] = 1,
                }
            }
            if let Some(&c) = calls[i].get(*next) {
                *next += 1;
                match state[c] {
                    1 => return None,
                    0 => stack.push((c, 0)),
                    _ => {}
                }
            } else {
                state[i] = 2;
                order.push(i);
                stack.pop();
            }
        }
    }
    Some(order)
}

/// A body's own statement count and whether it touches a field.
fn own_facts(body: &Body) -> (u64, bool) {
    let mut n = 0u64;
    let mut fields = false;
    body.walk(body.entry, &mut |s| {
        n += 1;
        body.stmt(s).kind.for_each_field(|_| fields = true);
    });
    (n, fields)
}

/// The key of `f` (see the module doc for the layout).
fn func_key<'k>(f: &Func, config_json: &str, callees: impl Iterator<Item = (&'k str, &'k Key)>) -> Key {
    let mut text = String::with_capacity(256);
    printer::write_items(&mut text, [ItemRef::Func(f)], Renumbering::default());
    let mut h = blake3::Hasher::new();
    h.update(DOMAIN);
    h.update(&KEY_FORMAT_VERSION.to_le_bytes());
    for part in [config_json, text.as_str()] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    for (name, key) in callees {
        h.update(&(name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update(&key.0);
    }
    Key(*h.finalize().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain `@f0 -> @f1 -> ... -> @f{n-1}` of one-call functions and a
    /// task calling `@f0` (`gen-call-chains.py`'s shape), split.
    fn chain(n: usize, edit: Option<usize>) -> crate::ir::Stream {
        let mut src = String::from("field @out : i32[4]\n");
        for i in 0..n {
            // The edit adds one to the argument.
            let (extra, x) =
                if Some(i) == edit { ("  %z = const 1 : i32\n  %y = add %x, %z\n", "%y") } else { ("", "%x") };
            if i + 1 == n {
                src += &format!("func @f{i}(%x: i32) -> i32 {{\n{extra}  ret {x}\n}}\n");
            } else {
                src += &format!("func @f{i}(%x: i32) -> i32 {{\n{extra}  %r = call @f{}({x})\n  ret %r\n}}\n", i + 1);
            }
        }
        src += "kernel @k() {\n  for %i in 0 .. 4 {\n    %v = call @f0(%i)\n    store @out[%i], %v\n  }\n}\n";
        let mut s = crate::parser::parse(&src).unwrap();
        crate::verifier::verify(&s).unwrap();
        crate::passes::run_passes(&crate::passes::default_pipeline(), &mut s).unwrap();
        s
    }

    fn plan_keys(s: &crate::ir::Stream) -> Vec<(String, Key, bool)> {
        let m = &s.modules[0];
        let plan = FuncPlan::of(m, &CompileConfig::default());
        let mut v: Vec<_> = plan.funcs.iter().map(|f| (f.func.name.to_string(), f.key, f.record)).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    #[test]
    fn a_long_chain_is_records_down_to_its_small_tail() {
        let s = chain(100, None);
        let m = &s.modules[0];
        let plan = FuncPlan::of(m, &CompileConfig::default());
        let rec = |name: &str| plan.funcs[plan.index(name).unwrap()].record;
        // f_i inlined whole is 2 * (100 - i) - 1 statements.
        assert!(rec("f0") && rec("f67"));
        assert!(!rec("f68") && !rec("f99"));
        let task = m.tasks().next().unwrap();
        let obj = plan.task_object(&task.body);
        assert_eq!((obj.defined.len(), obj.declared), (0, vec![plan.index("f0").unwrap()]));
        // The last record defines itself and copies the whole tail.
        let last = plan.record_object(plan.index("f67").unwrap());
        assert_eq!(last.defined.len(), 33);
        assert!(last.declared.is_empty());
        let needed = plan.records_needed(&task.body);
        assert_eq!(needed.len(), 68);
        assert_eq!(needed.first(), Some(&plan.index("f67").unwrap()), "callees first");
        assert_eq!(needed.last(), Some(&plan.index("f0").unwrap()));
    }

    #[test]
    fn editing_one_function_changes_the_keys_of_it_and_its_callers_only() {
        let before = plan_keys(&chain(100, None));
        let after = plan_keys(&chain(100, Some(40)));
        let changed: Vec<usize> =
            before.iter().zip(&after).filter(|(a, b)| a.1 != b.1).map(|(a, _)| a.0[1..].parse().unwrap()).collect();
        let mut changed = changed;
        changed.sort_unstable();
        assert_eq!(changed, (0..=40).collect::<Vec<_>>());
    }

    #[test]
    fn a_function_touching_a_field_is_copied_and_so_are_its_callers() {
        let mut src = String::from("field @x : f32[4]\nfunc @g(%i: i32) -> f32 {\n  %v = load @x[%i]\n");
        for k in 0..70 {
            src += &format!("  %v{k} = add %v, %v\n");
        }
        src += "  ret %v\n}\nfunc @h(%i: i32) -> f32 {\n  %v = call @g(%i)\n  ret %v\n}\n";
        src += "kernel @k() {\n  for %i in 0 .. 4 {\n    %v = call @h(%i)\n    store @x[%i], %v\n  }\n}\n";
        let mut s = crate::parser::parse(&src).unwrap();
        crate::verifier::verify(&s).unwrap();
        crate::passes::run_passes(&crate::passes::default_pipeline(), &mut s).unwrap();
        let plan = FuncPlan::of(&s.modules[0], &CompileConfig::default());
        assert!(plan.funcs.iter().all(|f| !f.record));
    }

    #[test]
    fn keys_follow_the_configuration() {
        let s = chain(80, None);
        let m = &s.modules[0];
        let a = FuncPlan::of(m, &CompileConfig::default());
        let config = CompileConfig { fast_math: true, ..CompileConfig::default() };
        let b = FuncPlan::of(m, &config);
        assert!(a.funcs.iter().zip(&b.funcs).all(|(x, y)| x.key != y.key));
        assert!(record_symbol(&a.funcs[0].key).starts_with(RECORD_SYMBOL_PREFIX));
    }
}
