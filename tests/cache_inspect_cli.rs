//! `kiln-cache-inspect`'s exit codes: 0 success, 1 a user error or damage
//! found, 2 bad usage; and a closed pipe ends it quietly.

use std::path::Path;
use std::process::{Command, Stdio};

const INSPECT: &str = env!("CARGO_BIN_EXE_kiln-cache-inspect");

fn code(root: &Path, args: &[&str]) -> i32 {
    Command::new(INSPECT).arg("--cache-dir").arg(root).args(args).output().unwrap().status.code().unwrap()
}

fn fill(root: &Path, n: u32) {
    let store = kiln::cache::Store::open(
        root,
        kiln::cache::HostScope::new("x86_64-unknown-linux-gnu", "cli", ["+a"]),
        kiln::cache::StoreOptions::default(),
    )
    .unwrap();
    for i in 0..n {
        let meta = kiln::config::LaunchMeta {
            task: format!("@t{i}"),
            entry_symbol: format!("t{i}"),
            kind: kiln::config::MetaKind::Serial,
            params: vec![],
            fields: vec![],
        };
        store.put(&kiln::cache::Key::from(blake3::hash(&i.to_le_bytes())), &meta, &[i as u8; 64]).unwrap();
    }
}

#[test]
fn exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("c");
    assert_eq!(code(&root, &["list"]), 1, "missing cache");
    assert_eq!(code(&root, &["stats"]), 0, "missing cache: zero statistics");
    assert!(!root.exists(), "stats created the cache");
    fill(&root, 3);
    for args in [&["list"][..], &["stats", "--json"], &["verify"], &["prune", "--max-size", "1G"], &["show", "0"]] {
        let expected = if args[0] == "show" { None } else { Some(0) };
        let got = code(&root, args);
        match expected {
            Some(e) => assert_eq!(got, e, "{args:?}"),
            // A one-digit prefix may match none, one or several records.
            None => assert!(got == 0 || got == 1, "{args:?}: {got}"),
        }
    }
    assert_eq!(code(&root, &["prune"]), 2, "no criterion");
    assert_eq!(code(&root, &["prune", "--max-size", "lots"]), 2, "bad size");
    assert_eq!(code(&root, &["prune", "--older-than", "-1d"]), 2, "bad duration");
    assert_eq!(code(&root, &["nonsense"]), 2, "unknown subcommand");
    assert_eq!(code(&root, &["show", "zz"]), 1, "not a key");

    // Damage makes verify exit 1, and verify --fix 0.
    let record = walk_one_record(&root);
    std::fs::write(&record, b"garbage").unwrap();
    assert_eq!(code(&root, &["verify"]), 1);
    assert_eq!(code(&root, &["verify", "--fix"]), 0);
    assert_eq!(code(&root, &["verify"]), 0);
}

fn walk_one_record(root: &Path) -> std::path::PathBuf {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.path().extension().is_some_and(|x| x == "kobj"))
        .unwrap()
        .into_path()
}

#[test]
fn closed_pipe_is_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("c");
    fill(&root, 300);
    let mut child = Command::new(INSPECT)
        .arg("--cache-dir")
        .arg(&root)
        .args(["list", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}
