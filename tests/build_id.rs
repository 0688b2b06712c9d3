//! The build identity (`src/build_id.rs`): computed over a copy of the
//! source tree, it changes with one byte of a codegen source and with none
//! of a tool's help text or a doc; and the identity compiled into this
//! build is the one of this tree.

use kiln::build_id;
use std::fs;
use std::path::{Path, PathBuf};

/// A copy of what the digest and the checks below read: `src/`,
/// `crates/`, `tools/`, `docs/` and `Cargo.lock`.
fn copy_tree() -> tempfile::TempDir {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    for top in ["src", "crates", "tools", "docs"] {
        for entry in walkdir::WalkDir::new(repo.join(top)) {
            let entry = entry.unwrap();
            if entry.path().components().any(|c| c.as_os_str() == "target") {
                continue;
            }
            let to = dir.path().join(entry.path().strip_prefix(repo).unwrap());
            if entry.file_type().is_dir() {
                fs::create_dir_all(&to).unwrap();
            } else {
                fs::copy(entry.path(), &to).unwrap();
            }
        }
    }
    fs::copy(repo.join("Cargo.lock"), dir.path().join("Cargo.lock")).unwrap();
    dir
}

fn flip_byte(path: &Path) {
    let mut bytes = fs::read(path).unwrap();
    let i = bytes.len() / 2;
    bytes[i] ^= 0x20;
    fs::write(path, bytes).unwrap();
}

fn append(path: &Path, text: &str) {
    let mut s = fs::read_to_string(path).unwrap();
    s.push_str(text);
    fs::write(path, s).unwrap();
}

#[test]
fn compiled_identity_is_this_trees() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(build_id::digest(repo, kiln::config::LLVM_VERSION).unwrap(), kiln::config::BUILD_ID);
    assert_eq!(kiln::config::CompileConfig::default().build_id, kiln::config::BUILD_ID);
}

#[test]
fn one_byte_of_an_input_changes_the_identity() {
    let tree = copy_tree();
    let base = build_id::digest(tree.path(), "22.1.8").unwrap();
    assert_eq!(base.len(), 32);
    // The grammar, lexer and parser too: a kiln-compile process re-parses
    // the task text, so they decide which module is compiled. The math
    // (its polynomials are emitted inline) and the back end's pipeline
    // (emitter.rs and its C++ beside it) are inputs because the lowering
    // reaches them, not because a list names them.
    let inputs = [
        "crates/kiln-codegen/src/lower.rs",
        "crates/kiln-codegen/src/lower/loops.rs",
        "crates/kiln-codegen/src/lower/access.rs",
        "crates/kiln-codegen/src/lower/ops.rs",
        "crates/kiln-codegen/src/lower/kmath.rs",
        "crates/kiln-codegen/src/emitter.rs",
        "crates/kiln-codegen/src/emitter.cpp",
        "src/math.rs",
        "crates/kiln-jit/src/runtime.rs",
        "src/plan.rs",
        "src/key.rs",
        "src/cache/record.rs",
        "src/ir/stmt.rs",
        "crates/kiln-llvm/src/abi.rs",
        "crates/kiln-llvm/src/lib.rs",
        "src/grammar.lalrpop",
        "src/lexer.rs",
        "src/parser.rs",
    ];
    for rel in inputs {
        let path = tree.path().join(rel);
        let original = fs::read(&path).unwrap();
        flip_byte(&path);
        assert_ne!(build_id::digest(tree.path(), "22.1.8").unwrap(), base, "{rel}");
        fs::write(&path, original).unwrap();
    }
    assert_eq!(build_id::digest(tree.path(), "22.1.8").unwrap(), base, "restored");
    // A new module is an input once a reached module declares it; a file
    // nobody declares is not compiled, and changes nothing.
    fs::write(tree.path().join("src/ir/extra.rs"), "// new\n").unwrap();
    assert_eq!(build_id::digest(tree.path(), "22.1.8").unwrap(), base, "an undeclared file");
    append(&tree.path().join("src/ir/mod.rs"), "\nmod extra;\n");
    let declared = build_id::digest(tree.path(), "22.1.8").unwrap();
    fs::write(tree.path().join("src/ir/extra.rs"), "// changed\n").unwrap();
    assert_ne!(build_id::digest(tree.path(), "22.1.8").unwrap(), declared, "a declared module's bytes");
    // A module a reached one starts to use (a path, not a `mod` line) too.
    append(&tree.path().join("crates/kiln-codegen/src/lower/kmath.rs"), "\nuse kiln::settings as _;\n");
    let files = build_id::input_files(tree.path()).unwrap();
    assert!(files.contains(&PathBuf::from("src/settings.rs")), "{files:?}");
    // So are the LLVM version and the locked versions of the bindings.
    assert_ne!(build_id::digest(tree.path(), "22.1.9").unwrap(), base);
    let lock = tree.path().join("Cargo.lock");
    let text = fs::read_to_string(&lock).unwrap();
    let bumped = bump_version(&text, "inkwell");
    fs::write(&lock, &bumped).unwrap();
    assert_ne!(build_id::digest(tree.path(), "22.1.8").unwrap(), base, "inkwell version");
    fs::write(&lock, text).unwrap();
}

/// `Cargo.lock` text with `name`'s version changed.
fn bump_version(lock: &str, name: &str) -> String {
    let marker = format!("name = \"{name}\"\nversion = \"");
    let at = lock.find(&marker).unwrap_or_else(|| panic!("{name} is not in Cargo.lock")) + marker.len();
    format!("{}9{}", &lock[..at], &lock[at..])
}

#[test]
fn docs_help_text_and_other_crates_change_nothing() {
    let tree = copy_tree();
    let base = build_id::digest(tree.path(), "22.1.8").unwrap();
    append(&tree.path().join("docs/cache.md"), "\nAnother paragraph.\n");
    let run = tree.path().join("tools/kiln-run.rs");
    let text = fs::read_to_string(&run).unwrap().replace("Run KIR kernels", "Run your KIR kernels");
    fs::write(&run, text).unwrap();
    append(&tree.path().join("src/passes/cse.rs"), "\n// a comment\n");
    append(&tree.path().join("src/cache/inspect.rs"), "\n// a comment\n");
    // A stats label and the cache's policy decide no object's bytes.
    replace_in(&tree.path().join("src/stats.rs"), "(\"hits\", \"hits\")", "(\"hits\", \"cache hits\")");
    append(&tree.path().join("crates/kiln-jit/src/cached.rs"), "\n// a comment\n");
    append(&tree.path().join("src/cache/counters.rs"), "\n// a comment\n");
    append(&tree.path().join("crates/kiln-jit/src/engine.rs"), "\n// a comment\n");
    append(&tree.path().join("crates/kiln-llvm/src/backend.rs"), "\n// a comment\n");
    replace_in(
        &tree.path().join("src/cache/store.rs"),
        "DEFAULT_MAX_SIZE: u64 = 5 << 30",
        "DEFAULT_MAX_SIZE: u64 = 4 << 30",
    );
    let lock = tree.path().join("Cargo.lock");
    fs::write(&lock, bump_version(&fs::read_to_string(&lock).unwrap(), "clap")).unwrap();
    assert_eq!(build_id::digest(tree.path(), "22.1.8").unwrap(), base);
}

/// Replaces `from` (which must be there) with `to` in the file at `path`.
fn replace_in(path: &Path, from: &str, to: &str) {
    let text = fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} has no {from}", path.display());
    fs::write(path, text.replace(from, to)).unwrap();
}

#[test]
fn every_root_and_boundary_is_real_and_every_boundary_is_met() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for root in build_id::ROOTS {
        assert!(repo.join(root).is_file(), "{root}");
    }
    let (reached, stopped) = build_id::walk(repo).unwrap();
    for (boundary, why) in build_id::BOUNDARIES {
        assert!(repo.join(boundary).is_file(), "{boundary}");
        assert!(!why.is_empty());
        // A boundary the walk never meets is stale: it would hide nothing
        // and mislead a reader. (The C++ one is met as a companion.)
        if boundary.ends_with(".rs") {
            assert!(stopped.contains(Path::new(boundary)), "{boundary} is never reached: remove it");
        }
    }
    let files = build_id::input_files(repo).unwrap();
    for f in [
        "src/math.rs",
        "crates/kiln-codegen/src/emitter.rs",
        "crates/kiln-codegen/src/emitter.cpp",
        "src/grammar.lalrpop",
    ] {
        assert!(files.contains(&PathBuf::from(f)), "{f} is not an input: {files:?}");
    }
    for f in [
        "crates/kiln-llvm/src/backend.rs",
        "crates/kiln-jit/src/orc_session.cpp",
        "crates/kiln-codegen/src/fill.rs",
        "crates/kiln-llvm/src/session.rs",
        "crates/kiln-llvm/src/target_tables.cpp",
        "crates/kiln-jit/src/engine.rs",
        "crates/kiln-jit/src/cached.rs",
        "src/parser/tests.rs",
    ] {
        assert!(!files.contains(&PathBuf::from(f)), "{f} is an input");
    }
    assert!(reached.iter().all(|f| files.contains(f)));
    let locked = build_id::locked_versions(&fs::read_to_string(repo.join("Cargo.lock")).unwrap()).unwrap();
    assert!(
        locked.iter().any(|l| l.starts_with("inkwell ")) && locked.iter().any(|l| l.starts_with("llvm-sys ")),
        "{locked:?}"
    );
}

/// Prints the inputs (`cargo test --test build_id -- --nocapture inputs`).
#[test]
fn inputs() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for f in build_id::input_files(repo).unwrap() {
        println!("{}", f.display());
    }
}
