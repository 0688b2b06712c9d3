//! Every console example in `README.md` and `docs/` runs, and shows what
//! the docs say it shows (issue 28): read from the markdown itself, as
//! trycmd reads it.
//!
//! A console example is a fenced block with lines starting `$ `: each is a
//! command, and the lines after it, up to the next command, are what it
//! prints (standard output and error, as a terminal shows them). A block
//! runs as one bash script in a scratch directory that holds a copy of the
//! repository's `testdata/` and `lit-tests/` (so examples use files that
//! are in the repository), with the freshly built tools and LLVM's on
//! `PATH`, a fresh default cache, no colour. Expected lines match exactly
//! (trailing blanks aside), except that `[..]` in a line matches any text
//! and a line `...` matches any number of lines, as in trycmd. A command
//! may end in a here-document (its lines are the command's, up to the
//! terminator); a block whose fence follows the line `<!-- continues -->`
//! goes on in the previous block's directory and shell.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One console example: its file and line, and its commands with what each
/// shows.
struct Example {
    file: String,
    line: usize,
    steps: Vec<(String, Vec<String>)>,
}

/// The mark, on the line before a console block's fence, that the block
/// goes on in the previous block's directory and shell (a walk-through
/// told in several blocks, such as the README's first kernel).
const CONTINUES: &str = "<!-- continues -->";

/// The console examples of one markdown text.
fn examples(file: &str, text: &str) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let mut block: Option<(usize, Vec<String>)> = None;
    let mut continues = false;
    let mut previous = "";
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            match block.take() {
                None => {
                    block = Some((i + 2, Vec::new()));
                    continues = previous.trim() == CONTINUES;
                }
                Some((start, lines)) => {
                    if lines.iter().any(|l| l.starts_with("$ ")) {
                        match out.last_mut() {
                            Some(last) if continues => last.steps.extend(steps(&lines)),
                            _ => out.push(Example { file: file.to_string(), line: start, steps: steps(&lines) }),
                        }
                    }
                }
            }
        } else if let Some((_, lines)) = &mut block {
            lines.push(line.to_string());
        }
        if !line.trim().is_empty() {
            previous = line;
        }
    }
    out
}

/// A block's commands, each with the lines it shows. A command ending in
/// a here-document (`<<'EOF'`) takes the lines up to its terminator as
/// its own text, not as what it shows.
fn steps(lines: &[String]) -> Vec<(String, Vec<String>)> {
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    let mut heredoc: Option<String> = None;
    for l in lines {
        if let (Some(end), Some((cmd, _))) = (&heredoc, steps.last_mut()) {
            cmd.push('\n');
            cmd.push_str(l);
            if l == end {
                heredoc = None;
            }
            continue;
        }
        match l.strip_prefix("$ ") {
            Some(cmd) => {
                heredoc = cmd.rsplit_once("<<").map(|(_, tag)| tag.trim().trim_matches('\'').to_string());
                steps.push((cmd.to_string(), Vec::new()));
            }
            None => {
                if let Some((_, shown)) = steps.last_mut() {
                    shown.push(l.trim_end().to_string());
                }
            }
        }
    }
    // A blank line between one command's output and the next command is
    // layout, not output.
    for (_, shown) in &mut steps {
        while shown.last().is_some_and(|l| l.is_empty()) {
            shown.pop();
        }
    }
    steps
}

/// Whether `line` matches the expected `pattern` (`[..]`: any text).
fn line_matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == line;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !line.starts_with(first) || line.len() < first.len() + last.len() || !line.ends_with(last) {
        return false;
    }
    let mut rest = &line[first.len()..line.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    true
}

/// Whether the actual lines match the expected ones (`...`: any lines).
fn lines_match(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e == "..." => (0..=actual.len()).any(|k| lines_match(rest, &actual[k..])),
        Some((e, rest)) => actual.split_first().is_some_and(|(a, more)| line_matches(e, a) && lines_match(rest, more)),
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_kiln-opt")).parent().expect("binaries have a directory").to_path_buf()
}

/// Runs one example; what each command printed.
fn run(example: &Example) -> Vec<Vec<String>> {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("repo");
    std::fs::create_dir(&dir).unwrap();
    for top in ["testdata", "lit-tests", "tools"] {
        let status = Command::new("cp").arg("-r").arg(repo().join(top)).arg(&dir).status().unwrap();
        assert!(status.success());
    }
    // The release tools `make demo` builds, where the README puts them
    // on PATH.
    std::fs::create_dir(dir.join("target")).unwrap();
    std::os::unix::fs::symlink(bin_dir(), dir.join("target/release")).unwrap();
    let venv = repo().join("target/quadrants-venv");
    if venv.exists() {
        std::os::unix::fs::symlink(&venv, dir.join("target-venv")).unwrap();
    }
    const MARK: &str = "\u{1e}kiln-doc-step";
    let mut script = String::from("exec 2>&1\n");
    for (i, (cmd, _)) in example.steps.iter().enumerate() {
        script.push_str(&format!("printf '%s\\n' '{MARK}{i}'\n{cmd}\n"));
    }
    let path = format!("{}:/usr/lib/llvm-22/bin:{}", bin_dir().display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(&dir)
        .env("PATH", path)
        .env("HOME", scratch.path().join("home"))
        .env("KILN_CACHE_DIR", scratch.path().join("cache"))
        .env("XDG_CONFIG_HOME", scratch.path().join("config"))
        .env("KILN_BIN_DIR", bin_dir())
        .env("KILN_QUADRANTS_PYTHON", venv.join("bin/python"))
        .env("NO_COLOR", "1")
        .env_remove("KILN_TARGET_CPU")
        .env_remove("KILN_TARGET_FEATURES")
        .env_remove("KILN_REMOTE")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut shown: Vec<Vec<String>> = Vec::new();
    for line in text.lines() {
        if line.starts_with(MARK) {
            shown.push(Vec::new());
        } else if let Some(s) = shown.last_mut() {
            s.push(line.trim_end().to_string());
        }
    }
    shown
}

/// The markdown files whose examples are checked.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    for dir in ["docs", "docs/tools"] {
        let mut here: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        here.sort();
        files.extend(here);
    }
    files
}

#[test]
fn every_console_example_in_the_docs_runs_and_shows_what_it_says() {
    let quadrants = repo().join("target/quadrants-venv/bin/python").exists();
    let mut failures = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let rel = doc.strip_prefix(repo()).unwrap().display().to_string();
        for ex in examples(&rel, &std::fs::read_to_string(&doc).unwrap()) {
            if !quadrants && ex.steps.iter().any(|(c, _)| c.contains("kiln-quadrants")) {
                eprintln!("{}:{}: skipped: no Quadrants venv (make quadrants)", ex.file, ex.line);
                continue;
            }
            let shown = run(&ex);
            for (i, (cmd, expected)) in ex.steps.iter().enumerate() {
                checked += 1;
                let actual = shown.get(i).cloned().unwrap_or_default();
                if !lines_match(expected, &actual) {
                    failures.push(format!(
                        "{}:{}: `{cmd}` shows\n{}\n  instead of\n{}",
                        ex.file,
                        ex.line,
                        actual.join("\n"),
                        expected.join("\n")
                    ));
                }
            }
        }
    }
    assert!(checked >= 20, "only {checked} examples found");
    assert!(failures.is_empty(), "{} examples drifted:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn continued_blocks_share_a_shell_and_heredocs_are_commands() {
    let md = "```console\n$ cat > a <<'EOF'\nx\nEOF\n```\n\n<!-- continues -->\n```console\n$ cat a\nx\n```\n```console\n$ b\n```\n";
    let ex = examples("f.md", md);
    assert_eq!(ex.len(), 2);
    let cmds: Vec<&str> = ex[0].steps.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(cmds, ["cat > a <<'EOF'\nx\nEOF", "cat a"]);
    assert_eq!(ex[0].steps[0].1, Vec::<String>::new());
    assert_eq!(ex[0].steps[1].1, ["x"]);
}

#[test]
fn the_matcher() {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert!(line_matches("a [..] c", "a b b c"));
    assert!(!line_matches("a [..] c", "a b d"));
    assert!(line_matches("[..]", "anything"));
    assert!(lines_match(&v(&["x", "...", "z"]), &v(&["x", "y1", "y2", "z"])));
    assert!(lines_match(&v(&["x", "...", "z"]), &v(&["x", "z"])));
    assert!(!lines_match(&v(&["x", "z"]), &v(&["x", "y", "z"])));
    assert!(!lines_match(&v(&["x"]), &v(&[])));
}
