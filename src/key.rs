//! Task keys: the content hash under which a task's compiled object is
//! cached.
//!
//! Owns: the canonical per-task text and the [`Key`]. The canonical text of
//! a task is its per-task module — its fields and functions in module
//! order, then the task item — printed with every value renamed `%0, %1,
//! ...` in definition order (parameters first) in each body, the task
//! named `@task` and its kernel `@kernel`, and no module name.
//!
//! The fields and functions are exactly the module's, in its order,
//! because that is what codegen compiles: the object takes the fields'
//! base pointers in module order, so two modules listing the same fields in
//! another order, or one more field, must not share an object. What makes
//! keys insensitive to unused items and to item order is `split-tasks`
//! (`crate::passes::split`), which gives every task module exactly the
//! fields it touches and the functions it calls, each sorted by name. So,
//! for a kernel file keyed through [`crate::passes::to_task_stream`], value names, comments,
//! layout, the order of items, items a task does not use, other tasks, and
//! the names of the task and its kernel never change a key; any change to
//! what the task computes or touches does.
//!
//! The key is blake3 over, in order: the domain tag `kiln task key\0`, the
//! key format version ([`KEY_FORMAT_VERSION`], 4 bytes little-endian), the
//! compile configuration serialised whole with serde_json in its declared
//! field order — its length (8 bytes LE) and bytes — and the canonical
//! text's length (8 bytes LE) and bytes. Hashing the serialised
//! struct means a field added to [`CompileConfig`] is in every key without
//! anyone remembering to add it. [`explain`] returns exactly these parts.
//!
//! Must never: depend on anything outside the task's module and the
//! configuration (the host is in the cache directory's scope, not in the
//! key), or print.

pub mod functions;

use crate::config::CompileConfig;
use crate::ir::*;
use crate::printer::{self, ItemRef, Namer, ValueName};
use std::collections::HashMap;
use std::fmt;

/// The version of the key's format: bump it when the canonical text or the
/// hashed layout changes, so old keys can never match new objects.
pub const KEY_FORMAT_VERSION: u32 = 1;

/// The name every task carries in its canonical text.
pub const TASK_PLACEHOLDER: &str = "task";
/// The name every task's kernel carries in its canonical text.
pub const KERNEL_PLACEHOLDER: &str = "kernel";

const DOMAIN: &[u8] = b"kiln task key\0";

/// A task's key: the cache's own key type (a blake3 digest shown as 64
/// lowercase hex digits), so keys and records can never disagree on form.
pub use crate::cache::Key;

/// The canonical text of a task (see the module doc): the printer's text
/// of its per-task module, through the [`Renumbering`] namer. Nothing is
/// copied: keying runs at hundreds of MB/s of text this way.
pub fn canonical_text(m: &Module, task: &TaskItem) -> String {
    let mut out = String::with_capacity(512);
    write_canonical(&mut out, m, task);
    out
}

/// Appends the canonical text of a task to `out`: `m`'s fields and
/// functions (see the module doc for why all of them), then the task.
pub fn write_canonical(out: &mut String, m: &Module, task: &TaskItem) {
    write_canonical_with(out, m, task, &mut FuncTexts::default());
}

/// The canonical text of each function printed so far, by the function's
/// address. The task modules of a split stream share their functions
/// (`Arc<Func>`), and a function's text is the same in every module (the
/// namer starts again in every body), so keying K tasks that reach the
/// same L functions prints each function once, not K times. Valid while
/// the modules it was filled from are borrowed.
#[derive(Default)]
struct FuncTexts(HashMap<*const Func, String>);

/// [`write_canonical`], taking each function's text from `texts`: the same
/// bytes as printing the items `fields, functions, task` together.
fn write_canonical_with(out: &mut String, m: &Module, task: &TaskItem, texts: &mut FuncTexts) {
    let items = m.fields().map(ItemRef::Field).chain(m.funcs().map(ItemRef::Func)).chain([ItemRef::Task(task)]);
    let mut prev_field = None;
    for it in items {
        let is_field = matches!(it, ItemRef::Field(_));
        if prev_field.is_some_and(|p| printer::blank_line_between(p, is_field)) {
            out.push('\n');
        }
        match it {
            ItemRef::Func(f) => out.push_str(texts.0.entry(f as *const Func).or_insert_with(|| {
                let mut s = String::new();
                printer::write_items(&mut s, [it], Renumbering::default());
                s
            })),
            _ => printer::write_items(out, [it], Renumbering::default()),
        }
        prev_field = Some(is_field);
    }
}

/// The key's naming: each body's values `%0, %1, ...` in definition order
/// (parameters, a task header's variables, then in print order each
/// statement's result and each loop's variable); the task `@task` of
/// `@kernel`. A use with no definition (the verifier rejects it) keeps its
/// name.
#[derive(Default)]
pub struct Renumbering {
    /// The number of each value of the current body, `u32::MAX` until it
    /// is defined.
    num: SecondaryMap<Value, u32>,
    next: u32,
}

impl Namer for Renumbering {
    fn begin_body(&mut self, body: &Body) {
        self.num = SecondaryMap::for_arena(body.values(), u32::MAX);
        self.next = 0;
    }
    fn define(&mut self, v: Value) {
        if let Some(n) = self.num.get_mut(v) {
            *n = self.next;
            self.next += 1;
        }
    }
    fn name<'b>(&self, body: &'b Body, v: Value) -> ValueName<'b> {
        match self.num.get(v) {
            Some(&n) if n != u32::MAX => ValueName::Number(n),
            _ => ValueName::Text(body.name(v)),
        }
    }
    fn task_names<'b>(&self, _: &'b TaskItem) -> (&'b str, &'b str) {
        (TASK_PLACEHOLDER, KERNEL_PLACEHOLDER)
    }
    /// Where a statement came from changes no object: never keyed.
    fn locations(&self) -> bool {
        false
    }
}

/// The key of a canonical text under a configuration.
pub fn key_of_text(text: &str, config: &CompileConfig) -> Key {
    key_of_parts(text, &config_json(config))
}

/// The key of a canonical text and a configuration's JSON (see the module
/// doc for the layout).
fn key_of_parts(text: &str, config_json: &str) -> Key {
    key_with_prefix(&config_prefix(config_json), text)
}

/// The hasher state after everything that precedes the text: keying many
/// tasks under one configuration hashes that part once.
fn config_prefix(config_json: &str) -> blake3::Hasher {
    let mut h = blake3::Hasher::new();
    h.update(DOMAIN);
    h.update(&KEY_FORMAT_VERSION.to_le_bytes());
    h.update(&(config_json.len() as u64).to_le_bytes());
    h.update(config_json.as_bytes());
    h
}

fn key_with_prefix(prefix: &blake3::Hasher, text: &str) -> Key {
    let mut h = prefix.clone();
    h.update(&(text.len() as u64).to_le_bytes());
    h.update(text.as_bytes());
    Key(*h.finalize().as_bytes())
}

/// The configuration as it is hashed: its wire form
/// ([`CompileConfig::to_wire`], serde_json with fields in declared order),
/// the very text a `kiln-compile` process is sent.
pub fn config_json(config: &CompileConfig) -> String {
    config.to_wire()
}

/// The key of task item `task` of module `m`.
pub fn task_key(m: &Module, task: &TaskItem, config: &CompileConfig) -> Key {
    key_of_text(&canonical_text(m, task), config)
}

/// One task's key, with what it was computed from.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskKey {
    /// The task's name in the stream.
    pub task: Name,
    /// The kernel it came from.
    pub kernel: Name,
    pub key: Key,
    /// The canonical text that was hashed.
    pub text: String,
}

/// The keys of every task item of a split stream, in stream order.
pub fn stream_keys(stream: &Stream, config: &CompileConfig) -> Vec<TaskKey> {
    let mut out = Vec::new();
    each_task_key(stream, config, |t, key, text| {
        out.push(TaskKey { task: t.name.clone(), kernel: t.kernel.clone(), key, text })
    });
    out
}

/// Calls `f` with every task item of a split stream, its key and its
/// canonical text, in stream order.
fn each_task_key(stream: &Stream, config: &CompileConfig, mut f: impl FnMut(&TaskItem, Key, String)) {
    let prefix = config_prefix(&config_json(config));
    let mut texts = FuncTexts::default();
    for m in &stream.modules {
        for t in m.tasks() {
            let _key = crate::trace::span("key", "key", &t.name);
            let mut text = String::with_capacity(512);
            write_canonical_with(&mut text, m, t, &mut texts);
            f(t, key_with_prefix(&prefix, &text), text);
        }
    }
}

/// Exactly what went into a key.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    pub key: Key,
    pub format_version: u32,
    /// The canonical text, as hashed.
    pub text: String,
    /// The configuration's JSON, as hashed.
    pub config_json: String,
    /// Each configuration field and its value, in declared order.
    pub config_fields: Vec<(String, serde_json::Value)>,
}

/// Explains the key of task item `task` of module `m`.
pub fn explain(m: &Module, task: &TaskItem, config: &CompileConfig) -> Explanation {
    let text = canonical_text(m, task);
    let config_json = config_json(config);
    Explanation {
        key: key_of_text(&text, config),
        format_version: KEY_FORMAT_VERSION,
        config_fields: config_fields(&config_json),
        text,
        config_json,
    }
}

/// The fields of a serialised configuration in the order they were
/// written (serde_json's own map type would sort them).
pub fn config_fields(json: &str) -> Vec<(String, serde_json::Value)> {
    struct Ordered(Vec<(String, serde_json::Value)>);
    impl<'de> serde::Deserialize<'de> for Ordered {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Ordered, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Ordered;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Ordered, A::Error> {
                    let mut v = Vec::new();
                    while let Some(e) = a.next_entry()? {
                        v.push(e);
                    }
                    Ok(Ordered(v))
                }
            }
            d.deserialize_map(V)
        }
    }
    serde_json::from_str::<Ordered>(json).map(|o| o.0).unwrap_or_default()
}

/// The keys of a stream's tasks under one configuration, in the form
/// `kiln-key --json` prints and `--diff` reads back.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KeySet {
    pub format_version: u32,
    pub config: CompileConfig,
    pub tasks: Vec<KeyEntry>,
}

/// One task of a [`KeySet`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KeyEntry {
    pub task: String,
    pub kernel: String,
    #[serde(deserialize_with = "parse_key")]
    pub key: Key,
    /// blake3 of the canonical text alone, so that a diff can tell a change
    /// of text from a change of configuration.
    #[serde(deserialize_with = "parse_key")]
    pub text_digest: Key,
    /// The canonical text (not written to JSON: the digest stands for it).
    #[serde(skip)]
    pub text: Option<String>,
}

/// Reads a key from its hex text (the cache's `Key` serialises as hex).
fn parse_key<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(d)?;
    text.parse().map_err(serde::de::Error::custom)
}

impl KeySet {
    /// The keys of a split stream's tasks.
    pub fn of_stream(stream: &Stream, config: &CompileConfig) -> KeySet {
        KeySet { format_version: KEY_FORMAT_VERSION, config: config.clone(), tasks: entries(stream, config, true) }
    }

    /// The keys of every task of KIR text (kernels offloaded and split by
    /// [`crate::passes::to_task_stream`]), without their texts: what `kiln-key` and
    /// `kiln-key --json` print. Input of bare items is keyed a batch of
    /// kernels at a time ([`crate::frontend::per_kernel`]), so memory stays
    /// within a small multiple of the input and the work linear in it; anything else, and any error, goes
    /// through the whole stream, so results and diagnostics are exactly
    /// those of `parse`, `verify`, `to_task_stream` and [`Self::of_stream`].
    pub fn of_text(text: &str, config: &CompileConfig) -> Result<KeySet, crate::diag::Diagnostics> {
        let set = |tasks| KeySet { format_version: KEY_FORMAT_VERSION, config: config.clone(), tasks };
        // Every task comes from the batch's kernels, held in full: the
        // other items named like them are signatures, with empty bodies.
        let per_kernel = crate::frontend::per_kernel(text, |m| {
            crate::passes::to_task_stream(Stream { modules: vec![m] }).ok().map(|s| entries(&s, config, false))
        });
        if let Some(tasks) = per_kernel.and_then(|r| r.into_iter().collect::<Option<Vec<_>>>()) {
            return Ok(set(tasks.into_iter().flatten().collect()));
        }
        let stream = crate::parser::parse(text)?;
        crate::verifier::verify(&stream)?;
        Ok(set(entries(&crate::passes::to_task_stream(stream)?, config, false)))
    }
}

/// The key entries of a split stream's tasks, with their texts or not.
fn entries(stream: &Stream, config: &CompileConfig, keep_text: bool) -> Vec<KeyEntry> {
    let mut out = Vec::new();
    each_task_key(stream, config, |t, key, text| {
        out.push(KeyEntry {
            task: t.name.to_string(),
            kernel: t.kernel.to_string(),
            key,
            text_digest: Key(*blake3::hash(text.as_bytes()).as_bytes()),
            text: keep_text.then_some(text),
        })
    });
    out
}

/// How one task's key differs between two key sets.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    Unchanged,
    Added,
    Removed,
    Changed {
        /// The canonical text changed; with both texts at hand, the first
        /// line that differs (1-based) and its old and new contents.
        text: Option<Option<(usize, String, String)>>,
        /// Configuration fields that changed: name, old and new value.
        config: Vec<(String, serde_json::Value, serde_json::Value)>,
        /// The key format version changed.
        format: bool,
    },
}

/// Compares two key sets task by task (matched by name): the new set's
/// tasks in order, then the tasks only the old set has.
pub fn diff(old: &KeySet, new: &KeySet) -> Vec<(String, Change)> {
    let old_cfg = config_fields(&config_json(&old.config));
    let new_cfg = config_fields(&config_json(&new.config));
    let config: Vec<(String, serde_json::Value, serde_json::Value)> = new_cfg
        .iter()
        .filter_map(|(name, nv)| {
            let ov = old_cfg.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()).unwrap_or(serde_json::Value::Null);
            (ov != *nv).then(|| (name.clone(), ov, nv.clone()))
        })
        .collect();
    // Tasks by name, the first of a name as a scan would find it.
    let by_name = |set: &'_ KeySet| {
        let mut m: HashMap<String, usize> = HashMap::with_capacity(set.tasks.len());
        for (i, t) in set.tasks.iter().enumerate() {
            m.entry(t.task.clone()).or_insert(i);
        }
        m
    };
    let (old_by_name, new_by_name) = (by_name(old), by_name(new));
    let mut out = Vec::new();
    for n in &new.tasks {
        let Some(o) = old_by_name.get(&n.task).map(|&i| &old.tasks[i]) else {
            out.push((n.task.clone(), Change::Added));
            continue;
        };
        if o.key == n.key {
            out.push((n.task.clone(), Change::Unchanged));
            continue;
        }
        let text = (o.text_digest != n.text_digest).then(|| match (&o.text, &n.text) {
            (Some(a), Some(b)) => first_difference(a, b),
            _ => None,
        });
        out.push((
            n.task.clone(),
            Change::Changed { text, config: config.clone(), format: old.format_version != new.format_version },
        ));
    }
    for o in &old.tasks {
        if !new_by_name.contains_key(&o.task) {
            out.push((o.task.clone(), Change::Removed));
        }
    }
    out
}

fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    let mut n = 0;
    loop {
        n += 1;
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x == y => continue,
            (x, y) => return Some((n, x.unwrap_or("").to_string(), y.unwrap_or("").to_string())),
        }
    }
}
