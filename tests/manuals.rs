//! Every tool's manual (`src/manual.rs`) holds what it promises: each
//! example `--help` shows runs, in order, by bash in a scratch directory
//! holding the repository's `testdata/` (with the freshly built tools and
//! LLVM's on `PATH`, a fresh default cache), and each man page
//! `--generate-man` writes has the sections a man page has, examples
//! included. The examples are read from `--help` itself, so the text a user
//! sees is the text that is run.

mod common;

use common::{bin_dir, user_shell};
use std::path::Path;
use std::process::Command;

const TOOLS: [&str; 7] =
    ["kiln-opt", "kiln-key", "kiln-compile", "kiln-run", "kiln-cache-inspect", "kiln-import", "kiln-reduce"];

/// The commands of the "Examples:" section of a `--help` text: each line
/// `    $ COMMAND`, with the lines clap wrapped it onto (indented as deep,
/// not a new command) joined back with a space.
fn examples(help: &str) -> Vec<String> {
    let section = help.split("\nExamples:\n").nth(1).expect("--help has Examples").split("\n\n").next().unwrap_or("");
    let mut out: Vec<String> = Vec::new();
    for line in section.lines() {
        if let Some(cmd) = line.strip_prefix("    $ ") {
            out.push(cmd.to_string());
        } else if let (Some(rest), Some(last)) = (line.strip_prefix("    "), out.last_mut()) {
            last.push(' ');
            last.push_str(rest.trim_start());
        }
    }
    out
}

#[test]
fn every_example_in_help_runs() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for tool in TOOLS {
        let help = Command::new(bin_dir().join(tool)).arg("--help").output().expect("the tool runs");
        let help = String::from_utf8(help.stdout).expect("help is UTF-8");
        let commands = examples(&help);
        assert!(commands.len() >= 2 || tool == "kiln-reduce", "{tool}: too few examples in\n{help}");
        let scratch = tempfile::tempdir().expect("a scratch directory");
        std::os::unix::fs::symlink(repo.join("testdata"), scratch.path().join("testdata")).expect("testdata linked");
        for cmd in &commands {
            assert!(cmd.starts_with(tool) || cmd.contains(&format!(" {tool} ")), "{tool}: '{cmd}' does not use it");
            let out = user_shell(scratch.path(), cmd);
            assert!(
                out.status.success(),
                "{tool} --help example failed ({}): {cmd}\nstdout:\n{}\nstderr:\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn short_help_stays_short() {
    for tool in TOOLS {
        let out = Command::new(bin_dir().join(tool)).arg("-h").output().expect("the tool runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains("Examples:") && !text.contains("Environment:"), "{tool} -h:\n{text}");
    }
}

#[test]
fn every_man_page_has_examples_and_the_usual_sections() {
    let dir = tempfile::tempdir().expect("a scratch directory");
    for tool in TOOLS {
        let out = Command::new(bin_dir().join(tool)).arg("--generate-man").arg(dir.path()).output().expect("runs");
        assert!(out.status.success(), "{tool}: {}", String::from_utf8_lossy(&out.stderr));
        let page = std::fs::read_to_string(dir.path().join(format!("{tool}.1"))).expect("the tool's page");
        for section in ["NAME", "SYNOPSIS", "OPTIONS", "EXAMPLES", "EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO"] {
            assert!(
                page.contains(&format!(".SH \"{section}\"")) || page.contains(&format!(".SH {section}\n")),
                "{tool}.1 lacks {section}:\n{page}"
            );
        }
        assert!(page.contains("NO_COLOR") && page.contains("kiln.toml"), "{tool}.1");
    }
    // Each subcommand's page holds that subcommand's examples only.
    let prune = std::fs::read_to_string(dir.path().join("kiln-cache-inspect-prune.1")).expect("prune's page");
    assert!(prune.contains("\\-\\-dry\\-run") && !prune.contains("verify \\-\\-fix"), "{prune}");
}

#[test]
fn wrapped_examples_are_joined() {
    let help = "x\nExamples:\n  Does a\n    $ kiln-a --flag\n    value file\n  Does b\n    $ kiln-b\n\nExit status:\n";
    assert_eq!(examples(help), ["kiln-a --flag value file", "kiln-b"]);
}
