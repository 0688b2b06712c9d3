//! `make install`'s script (`scripts/install.sh`) over the freshly built
//! tools: every tool, its man pages and its bash, zsh and fish completions
//! land under the prefix, and each page set and completion mentions every
//! flag the tool's `--help` (and each subcommand's) lists, so the generated
//! files cannot fall behind the clap definitions.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

const TOOLS: [&str; 7] =
    ["kiln-opt", "kiln-key", "kiln-compile", "kiln-run", "kiln-cache-inspect", "kiln-import", "kiln-reduce"];

fn bin_dir() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kiln-opt")).parent().expect("binaries have a directory")
}

fn help(tool: &str, sub: Option<&str>) -> String {
    let mut c = Command::new(bin_dir().join(tool));
    c.args(sub).arg("--help").env_remove("KILN_CACHE_DIR");
    let out = c.output().expect("the tool runs");
    assert!(out.status.success(), "{tool} {sub:?} --help failed");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// Every `--long` flag a help text lists (at the start of an option line).
fn flags(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("-").and_then(|r| r.split_once(", ")).map(|(_, r)| r).unwrap_or(l);
            let name: String =
                l.strip_prefix("--")?.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// The subcommands a help text lists (none for most tools).
fn subcommands(help: &str) -> Vec<String> {
    let Some(i) = help.find("Commands:\n") else { return Vec::new() };
    help[i + "Commands:\n".len()..]
        .lines()
        .take_while(|l| l.starts_with("  "))
        // A wrapped description continues deeper indented.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn install_puts_tools_pages_and_completions_in_place_mentioning_every_flag() {
    let prefix = tempfile::tempdir().expect("a scratch prefix");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(repo.join("scripts/install.sh"))
        .arg(bin_dir())
        .arg(prefix.path())
        .env_remove("DESTDIR")
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "install.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    let p = prefix.path();
    for tool in TOOLS {
        assert!(p.join("bin").join(tool).is_file(), "{tool} installed");
        let top = help(tool, None);
        let mut all_flags = flags(&top);
        let subs = subcommands(&top);
        for s in &subs {
            all_flags.extend(flags(&help(tool, Some(s))));
        }
        assert!(all_flags.contains("color") && all_flags.contains("help"), "{tool}: {all_flags:?}");
        // The man pages of a tool and its subcommands; roff escapes `-`.
        let mut man = String::new();
        for entry in std::fs::read_dir(p.join("share/man/man1")).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name == format!("{tool}.1") || name.starts_with(&format!("{tool}-")) {
                man.push_str(&std::fs::read_to_string(&path).unwrap().replace('\\', ""));
            }
        }
        assert!(man.contains(&format!(".TH {tool}")), "{tool}: no man page");
        for s in &subs {
            assert!(p.join(format!("share/man/man1/{tool}-{s}.1")).is_file(), "{tool} {s}: no man page");
        }
        let completions = [
            format!("share/bash-completion/completions/{tool}"),
            format!("share/zsh/site-functions/_{tool}"),
            format!("share/fish/vendor_completions.d/{tool}.fish"),
        ];
        for flag in &all_flags {
            assert!(man.contains(&format!("--{flag}")), "{tool}: the man pages lack --{flag}");
            for c in &completions {
                let text = std::fs::read_to_string(p.join(c)).unwrap_or_else(|e| panic!("{c}: {e}"));
                // fish names a long option `-l flag`; bash and zsh `--flag`.
                let found = text.contains(&format!("--{flag}")) || text.contains(&format!("-l {flag}"));
                assert!(found, "{c} lacks --{flag}");
            }
        }
    }
    // kiln-quadrants: the command and the package it runs.
    assert!(p.join("bin/kiln-quadrants").is_file());
    for f in ["__init__", "__main__", "capture", "records", "replay"] {
        assert!(p.join(format!("share/kiln/python/kiln_quadrants/{f}.py")).is_file(), "{f}.py installed");
    }
}

#[test]
fn flags_and_subcommands_are_read_from_help() {
    let h = "Usage: t\n\nCommands:\n  list  List\n  help  Help\n\nOptions:\n  -o <FILE>  out\n      --color <WHEN>  c\n  -h, --help  Print help\n";
    assert_eq!(flags(h).into_iter().collect::<Vec<_>>(), ["color", "help"]);
    assert_eq!(subcommands(h), ["list"]);
}
