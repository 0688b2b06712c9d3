//! Tidy checks, as rust-analyzer's: facts the compiler cannot check but a
//! test can, over the source tree and the docs.
//!
//! - The settings tables in `docs/` are `settings::markdown_table`'s text.
//!   `KILN_UPDATE_DOCS=1 cargo test --test tidy` rewrites them.
//! - Every `KILN_*` variable named in the sources and docs is a row of the
//!   settings table, or one of the few that are not settings (below).
//! - The LLVM wall is a crate boundary: the root package (the LLVM-free
//!   core and its tools) depends on no LLVM crate, and the JIT's crate
//!   (`kiln-run`) on no code generator, as `cargo metadata` resolves them.
//! - The code map of `docs/ARCHITECTURE.md`, a `### ` section per folder
//!   or group of modules, names every file of `src/` and of each crate's
//!   `crates/*/src/`: a section's heading
//!   names the file's path, or a folder above it while the section names
//!   the file by its path below that folder. Every path and test
//!   (`FILE::FUNCTION`) the document names exists, and each invariant it
//!   lists says what holds it, a test or no test.
//! - A constant is defined once: no two files define a top-level constant
//!   of the same name and value.
//! - No function of the libraries or `tools/` is longer than [`MAX_FN_LINES`]
//!   lines: each can be reviewed in one screen.
//! - No KIR is spelt in a string outside the printer (`KIR_SPELT`): a
//!   front end that makes IR builds it with `ir::Builder`, and the one
//!   printer writes it.

use kiln::settings::{self, TABLE};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The files below `dir` (relative to the crate root) ending in one of
/// `exts`, sorted.
fn files(dir: &str, exts: &[&str]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(root().join(dir))
        .into_iter()
        .map(|e| e.expect("walk the tree").into_path())
        .filter(|p| p.is_file() && exts.iter().any(|x| p.extension().is_some_and(|e| e == *x)))
        .map(|p| p.strip_prefix(root()).unwrap().to_path_buf())
        .collect();
    out.sort();
    out
}

/// The libraries' sources ending in one of `exts`: the root package's
/// `src/` and each workspace crate's `crates/*/src/`, sorted.
fn sources(exts: &[&str]) -> Vec<PathBuf> {
    let crates = files("crates", exts).into_iter().filter(|p| p.iter().nth(2).is_some_and(|d| d == "src"));
    files("src", exts).into_iter().chain(crates).collect()
}

fn read(path: &Path) -> String {
    fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const BEGIN: &str = "<!-- settings-table ";
const END: &str = "<!-- end settings-table -->";

/// `text` with each `<!-- settings-table PREFIX -->` block's body replaced
/// by the generated table.
fn with_generated_tables(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(BEGIN) {
        let header_end = at + rest[at..].find("-->\n").expect("an unclosed settings-table marker") + 4;
        let prefix = rest[at + BEGIN.len()..header_end - 4].trim();
        let prefix = if prefix == "all" { "" } else { prefix };
        let end = header_end + rest[header_end..].find(END).expect("a settings-table block without its end marker");
        out.push_str(&rest[..header_end]);
        out.push_str(&settings::markdown_table(prefix));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn settings_tables_in_the_docs_are_the_table() {
    let update = std::env::var_os("KILN_UPDATE_DOCS").is_some();
    let mut blocks = 0;
    for doc in files("docs", &["md"]) {
        let text = read(&doc);
        blocks += text.matches(BEGIN).count();
        let want = with_generated_tables(&text);
        if want == text {
            continue;
        }
        if update {
            fs::write(root().join(&doc), want).unwrap();
        } else {
            panic!(
                "{}: a settings table differs from src/settings.rs; run KILN_UPDATE_DOCS=1 cargo test --test tidy",
                doc.display()
            );
        }
    }
    assert!(blocks >= 2, "docs/cache.md and docs/remote.md hold generated settings tables");
}

/// `KILN_*` variables that are not settings: build-time stamps, the test
/// and benchmark harnesses' knobs, the Python bridge's interpreter, and
/// this file's own switch.
const NOT_SETTINGS: &[&str] = &[
    "KILN_BUILD_ID",
    "KILN_LLVM_VERSION",
    "KILN_LLVM_LINK",
    "KILN_BIN_DIR",
    "KILN_QUADRANTS_PYTHON",
    "KILN_UPDATE_DOCS",
    "KILN_BENCH_",
    "KILN_CACHE_TEST_",
];

#[test]
fn every_kiln_variable_is_a_setting() {
    let re = regex_lite::Regex::new(r"KILN_[A-Z0-9_]+").unwrap();
    let settings: BTreeSet<&str> = TABLE.iter().map(|i| i.env).collect();
    let mut unknown = BTreeSet::new();
    let sources = ["src", "tools", "docs", "scripts", "lit-tests"].into_iter();
    let mut paths: Vec<PathBuf> =
        sources.flat_map(|d| files(d, &["rs", "md", "sh", "py", "test", "kir", "lalrpop", "cpp"])).collect();
    paths.extend(["README.md", "Makefile", "build.rs"].map(PathBuf::from));
    for path in paths {
        for m in re.find_iter(&read(&path)) {
            let var = m.as_str();
            if !settings.contains(var) && !NOT_SETTINGS.iter().any(|p| var.starts_with(p)) {
                unknown.insert(format!("{}: {var}", path.display()));
            }
        }
    }
    assert!(unknown.is_empty(), "variables read outside the settings table: {unknown:#?}");
}

/// The architecture document.
const ARCHITECTURE: &str = "docs/ARCHITECTURE.md";

/// `text` without its fenced code blocks (whose backticks are not quotes).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The part of `text` under the `## TITLE` heading, up to the next `## `.
fn part<'a>(text: &'a str, title: &str) -> &'a str {
    let heading = format!("\n## {title}\n");
    let start = text.find(&heading).unwrap_or_else(|| panic!("{ARCHITECTURE} has no `## {title}`")) + 1;
    let end = text[start + 3..].find("\n## ").map_or(text.len(), |e| start + 3 + e + 1);
    &text[start..end]
}

/// The code map: each `### ` section under `## Code map`, as the paths
/// its heading names and the section's text (heading included).
fn code_map() -> Vec<(Vec<String>, String)> {
    let text = prose(&read(Path::new(ARCHITECTURE)));
    part(&text, "Code map")
        .split("\n### ")
        .skip(1)
        .map(|s| {
            let heading = s.lines().next().unwrap_or("");
            (quoted(heading).into_iter().map(String::from).collect(), s.to_string())
        })
        .collect()
}

/// The names in backticks in `text`.
fn quoted(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// A section names a file when its heading names the file's path, or a
/// folder above it while its text names the path below that folder
/// (`src/cache/` and `fs.rs`, `crates/kiln-codegen/src/` and `lower/ops.rs`).
fn names(heading: &[String], text: &str, path: &str) -> bool {
    heading.iter().any(|h| {
        h == path
            || (h.ends_with('/') && path.strip_prefix(h.as_str()).is_some_and(|rest| quoted(text).contains(&rest)))
    })
}

#[test]
fn the_code_map_names_every_source_file() {
    let sections = code_map();
    assert!(sections.len() >= 10, "the code map's sections: {sections:#?}");
    let mut missing = Vec::new();
    for file in sources(&["rs", "lalrpop", "cpp"]) {
        let path = file.to_str().unwrap();
        let name = file.file_name().unwrap().to_str().unwrap();
        // Test modules belong to the module they test.
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        if !sections.iter().any(|(heading, text)| names(heading, text, path)) {
            missing.push(path.to_string());
        }
    }
    assert!(missing.is_empty(), "files the code map of {ARCHITECTURE} does not name: {missing:#?}");
    for (heading, text) in &sections {
        assert!(!heading.is_empty(), "a code map section whose heading names no path: {text}");
        for p in heading {
            assert!(root().join(p).exists(), "{ARCHITECTURE}'s code map has a section on {p}, which does not exist");
        }
    }
}

/// Where the paths this repository's documents name begin.
const TREES: &[&str] = &["src/", "crates/", "tests/", "lit-tests/", "tools/", "scripts/", "docs/", "testdata/"];

/// Every path `docs/ARCHITECTURE.md` names in backticks exists, and every
/// test it names as `FILE::FUNCTION` is a function of that file (`fn` in
/// Rust, `def` in Python). Every invariant of the code map and of
/// `## Invariants` (a list item) says what holds it: `(held …` or
/// `(no test holds …`.
#[test]
fn the_architecture_names_only_what_exists() {
    let text = prose(&read(Path::new(ARCHITECTURE)));
    let mut wrong = Vec::new();
    for q in quoted(&text) {
        let (path, test) = q.split_once("::").map_or((q, None), |(p, t)| (p, Some(t)));
        if !(path == "build.rs" || TREES.iter().any(|t| path.starts_with(t))) {
            continue;
        }
        if !root().join(path).exists() {
            wrong.push(format!("`{q}`: no such path"));
        } else if let Some(name) = test {
            let source = read(Path::new(path));
            if ![format!("fn {name}("), format!("def {name}(")].iter().any(|d| source.contains(d.as_str())) {
                wrong.push(format!("`{q}`: {path} defines no test {name}"));
            }
        }
    }
    let mut items = 0;
    for title in ["Code map", "Invariants"] {
        // A list item runs from its `- ` line to the next line that is not
        // indented under it.
        for item in part(&text, title).split("\n- ").skip(1) {
            let item: String = item.lines().take_while(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
            items += 1;
            if !item.contains("(held ") && !item.contains("(no test holds") {
                wrong.push(format!("an invariant that does not say what holds it: {item}"));
            }
        }
    }
    assert!(items >= 20, "the invariants of {ARCHITECTURE}: {items}");
    assert!(wrong.is_empty(), "{ARCHITECTURE}: {wrong:#?}");
}

#[test]
fn constants_are_defined_once() {
    let re =
        regex_lite::Regex::new(r"(?m)^(?:pub(?:\([a-z]+\))? )?const ([A-Z][A-Z0-9_]*): ([^=]+) = ([^;]+);").unwrap();
    let mut seen: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for file in sources(&["rs"]) {
        for c in re.captures_iter(&read(&file)) {
            let key = (c[1].to_string(), c[3].trim().to_string());
            seen.entry(key).or_default().insert(file.display().to_string());
        }
    }
    let twice: Vec<_> = seen.into_iter().filter(|(_, files)| files.len() > 1).collect();
    assert!(twice.is_empty(), "the same constant defined in more than one file: {twice:#?}");
}

/// The longest a function may be, from its `fn` line to its closing brace.
const MAX_FN_LINES: usize = 150;

/// Functions longer than `max` lines in `text`: (line number, name,
/// lines). A function is a `fn` line that does not close on itself, and
/// it ends at the first line that is its indentation and `}` (rustfmt's
/// layout, which `make test` holds).
fn long_functions(text: &str, max: usize) -> Vec<(usize, String, usize)> {
    let re = regex_lite::Regex::new(
        r#"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:unsafe\s+)?(?:extern\s+"C"\s+)?fn\s+(\w+)"#,
    )
    .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut long = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(c) = re.captures(line) else { continue };
        if line.trim_end().ends_with('}') || line.trim_end().ends_with(';') {
            continue;
        }
        let close = format!("{}}}", &c[1]);
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
            if end + 2 > max {
                long.push((i + 1, c[2].to_string(), end + 2));
            }
        }
    }
    long
}

#[test]
fn no_function_is_longer_than_a_screen() {
    let sample = format!("fn short() {{\n}}\n\n    pub(crate) fn long() {{\n{}    }}\n", "        x;\n".repeat(150));
    assert_eq!(long_functions(&sample, MAX_FN_LINES), [(4, "long".to_string(), 152)], "the check itself");
    let mut found = Vec::new();
    for file in sources(&["rs"]).into_iter().chain(files("tools", &["rs"])) {
        for (line, name, n) in long_functions(&read(&file), MAX_FN_LINES) {
            found.push(format!("{}:{line}: fn {name} is {n} lines", file.display()));
        }
    }
    assert!(found.is_empty(), "functions over {MAX_FN_LINES} lines (split them): {found:#?}");
}

/// KIR statements spelt in a string literal: a value defined (`%x = add`,
/// `{x} = const`), an effect (`store @f[`, `atomic add %p`), or an item's or
/// a task's or a loop's header (`task @t serial`, `kernel @k(`, a
/// header's `{{`, `for %i in`, `if %c {{`).
const KIR_SPELT: &str = r#""[^"\n]*(?:(?:%[\w.{}]+|\{\w*\}) = (?:const|add|sub|mul|div|rem|cmp|load|alloca|select|cast|atomic|neg|not|abs|sqrt|call)\b|\b(?:store|atomic [a-z]+) [%@{]|\b(?:task|kernel|func) @[\w.{}]+(?:\(|[^"\n]* \{\{| serial| range_for| struct_for| of @)|\bfor [%{][\w.{}]+ in |\bif [%{][\w.{}]+ \{\{)"#;

/// The lines of `text` outside its test module (`#[cfg(test)]` and what
/// follows, which rustfmt puts last).
fn non_test_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().take_while(|(_, l)| l.trim() != "#[cfg(test)]")
}

#[test]
fn no_kir_is_spelt_outside_the_printer() {
    let re = regex_lite::Regex::new(KIR_SPELT).unwrap();
    let old = [
        r#"b.line(format!("{z} = const 0 : {t}"));"#,
        r#"format!("  task @{name} {head} {{")"#,
        r#""store @x[%i], %v""#,
        r#"b.line(format!("for {r} in {lo} .. {hi} {{"));"#,
    ];
    for spelt in old {
        assert!(re.is_match(spelt), "the check itself: {spelt}");
    }
    assert!(!re.is_match(r#"format!("kernel @{}: task @{}: no field @{name}", k, t)"#), "the check itself");
    let mut found = Vec::new();
    for file in sources(&["rs"]).into_iter().chain(files("tools", &["rs"])) {
        let name = file.file_name().unwrap().to_str().unwrap();
        if file == Path::new("src/printer.rs") || name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        for (i, line) in non_test_lines(&read(&file)) {
            if re.is_match(line) {
                found.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "KIR spelt outside the printer (build IR with ir::Builder): {found:#?}");
}

/// The packages the normal and build dependencies of `package` reach in
/// the workspace's resolved graph (`cargo metadata`), by name.
fn dependency_closure(metadata: &serde_json::Value, package: &str) -> BTreeSet<String> {
    let name_of = |id: &str| id_name(metadata, id);
    let nodes = metadata["resolve"]["nodes"].as_array().expect("cargo metadata resolves the graph");
    let start = nodes.iter().find(|n| name_of(n["id"].as_str().unwrap()) == package).expect("the package");
    let (mut seen, mut todo) = (BTreeSet::new(), vec![start]);
    while let Some(node) = todo.pop() {
        for dep in node["deps"].as_array().unwrap() {
            let kinds = dep["dep_kinds"].as_array().unwrap();
            if kinds.iter().all(|k| k["kind"].as_str() == Some("dev")) {
                continue;
            }
            let id = dep["pkg"].as_str().unwrap();
            if seen.insert(name_of(id)) {
                todo.push(nodes.iter().find(|n| n["id"].as_str() == Some(id)).unwrap());
            }
        }
    }
    seen
}

/// A package's name from its id in `cargo metadata`'s output.
fn id_name(metadata: &serde_json::Value, id: &str) -> String {
    let packages = metadata["packages"].as_array().unwrap();
    let p = packages.iter().find(|p| p["id"].as_str() == Some(id)).unwrap_or_else(|| panic!("no package {id}"));
    p["name"].as_str().unwrap().to_string()
}

#[test]
fn the_llvm_wall_is_a_crate_boundary() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline", "--manifest-path"])
        .arg(root().join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let llvm = ["inkwell", "llvm-sys", "kiln-llvm", "kiln-codegen", "kiln-jit"];
    let core = dependency_closure(&metadata, "kiln");
    assert!(core.contains("blake3") && core.contains("redis"), "the check reads the graph: {core:?}");
    let crossing: Vec<_> = llvm.iter().filter(|c| core.contains(**c)).collect();
    assert!(crossing.is_empty(), "the LLVM-free core (and kiln-opt, kiln-key, ...) depends on {crossing:?}");
    let jit = dependency_closure(&metadata, "kiln-jit");
    assert!(jit.contains("inkwell") && jit.contains("kiln-llvm"), "{jit:?}");
    assert!(!jit.contains("kiln-codegen"), "the JIT (and kiln-run) depends on the code generator");
    assert!(
        !dependency_closure(&metadata, "kiln-codegen").contains("kiln-jit"),
        "the code generator depends on the JIT"
    );
}
