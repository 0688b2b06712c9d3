//! The README's tour runs verbatim: every command of its `sh` block is run,
//! in order, by bash in a scratch directory that holds the repository's
//! `testdata/` (the tour's paths are relative to the repository's root),
//! with the freshly built tools and LLVM's tools on `PATH` and a fresh
//! default cache. A command that fails, or a file the tour names that does
//! not exist, fails the test, so the README cannot drift from the tools.

mod common;

use common::user_shell;
use std::path::Path;

/// The lines of the first ```sh block after the tour's heading, without
/// comments and blank lines.
fn tour_commands(readme: &str) -> Vec<String> {
    let start = readme.find("## A five-minute tour").expect("README.md has the tour");
    let rest = &readme[start..];
    let open = rest.find("```sh\n").expect("the tour has an sh block") + "```sh\n".len();
    let close = rest[open..].find("```").expect("the sh block is closed");
    rest[open..open + close]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[test]
fn readme_tour_runs_verbatim() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(repo.join("README.md")).expect("README.md is readable");
    let commands = tour_commands(&readme);
    assert!(commands.len() >= 20, "the tour lost its commands: {commands:?}");
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let dir = scratch.path();
    std::os::unix::fs::symlink(repo.join("testdata"), dir.join("testdata")).expect("testdata linked");
    for cmd in &commands {
        let out = user_shell(dir, cmd);
        assert!(
            out.status.success(),
            "README tour command failed ({}): {cmd}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn readme_opens_with_the_two_commands() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let block = readme.split("```sh\n").nth(1).and_then(|b| b.split("```").next()).expect("a first sh block");
    let commands: Vec<&str> =
        block.lines().map(|l| l.split('#').next().unwrap_or("").trim()).filter(|l| !l.is_empty()).collect();
    assert_eq!(commands, ["make demo", "make test"]);
}

#[test]
fn extraction_skips_comments_and_blank_lines() {
    let readme =
        "x\n## A five-minute tour\ntext\n```sh\n# c\nkiln-opt a\n\n  kiln-key b  \n```\n```sh\nnot this\n```\n";
    assert_eq!(tour_commands(readme), ["kiln-opt a", "kiln-key b"]);
}
