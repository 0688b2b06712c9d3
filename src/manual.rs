//! A tool's manual beyond its options: examples, exit status,
//! environment, files and related pages, written once per tool and shown
//! both by `--help` (after the options) and by the man page
//! (`--generate-man`, for `make install`).
//!
//! Owns: [`Manual`] (one per tool, in its thin main) and its two
//! renderings, [`Manual::help_text`] and [`Manual::man_page`]; the
//! ENVIRONMENT section, derived from the settings table
//! ([`crate::settings::TABLE`]) so a new setting's variable appears in
//! every manual that lists settings.
//!
//! Must never: print or exit; say anything a test does not run or
//! compare (`tests/manuals.rs` runs every example in a scratch directory
//! and checks each man page's sections).

use clap_mangen::roff::{bold, roman, Roff};
use std::fmt::Write as _;

/// One example: what it does, then the command line (run by `bash` from a
/// directory holding the repository's `testdata/`).
pub type Example = (&'static str, &'static str);

/// Which settings' variables the ENVIRONMENT section lists.
#[derive(Clone, Copy, Debug)]
pub enum SettingsShown {
    /// Every user setting (tools that use the cache).
    All,
    /// These settings, by name (tools that only read input).
    Only(&'static [&'static str]),
}

/// A tool's manual.
#[derive(Clone, Copy, Debug)]
pub struct Manual {
    pub examples: &'static [Example],
    /// Each exit status and what it means, in order.
    pub exit_status: &'static [(u8, &'static str)],
    pub settings: SettingsShown,
    /// Files the tool reads or writes besides its operands, and why.
    pub files: &'static [(&'static str, &'static str)],
    /// Related tools and documents (`kiln-run(1)`, `docs/cache.md`).
    pub see_also: &'static [&'static str],
}

/// The variables every tool reads, besides the settings'.
const COMMON_ENVIRONMENT: &[(&str, &str)] = &[
    ("NO_COLOR", "When set and not empty, no colour (as --color=never), unless --color says otherwise."),
    (
        "XDG_CONFIG_HOME, HOME",
        "Where the user's kiln.toml is: $XDG_CONFIG_HOME/kiln/kiln.toml, else ~/.config/kiln/kiln.toml.",
    ),
];

/// The files of every tool's settings.
pub const CONFIG_FILES: &[(&str, &str)] = &[
    ("~/.config/kiln/kiln.toml", "The user's settings (see ENVIRONMENT for where it is); read as untrusted input: a regular file of at most 1 MiB, else one warning and it is ignored."),
];

/// The cache's files, for the tools that use it.
pub const CACHE_FILES: &[(&str, &str)] = &[
    ("~/.cache/kiln/", "The default cache ($KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln): one directory per host scope of task records (docs/cache.md)."),
    ("CACHE/kiln.toml", "The cache's own settings, shared by everyone who uses the cache (kiln-cache-inspect config)."),
];

impl Manual {
    /// The (name, what) rows of the ENVIRONMENT section.
    fn environment(&self) -> Vec<(String, String)> {
        let shown = |name: &str| match self.settings {
            SettingsShown::All => !crate::settings::for_tests(name),
            SettingsShown::Only(names) => names.contains(&name),
        };
        let settings = crate::settings::TABLE
            .iter()
            .filter(|i| shown(i.name))
            .map(|i| (i.env.to_string(), format!("The {} setting: {}", i.name, i.doc)));
        COMMON_ENVIRONMENT.iter().map(|(n, w)| (n.to_string(), w.to_string())).chain(settings).collect()
    }

    /// The sections as `--help` shows them after the options.
    pub fn help_text(&self) -> String {
        let mut out = String::from("Examples:\n");
        for (what, cmd) in self.examples {
            let _ = writeln!(out, "  {what}\n    $ {cmd}");
        }
        out.push_str("\nExit status:\n");
        for (code, what) in self.exit_status {
            let _ = writeln!(out, "  {code}\n      {what}");
        }
        out.push_str("\nEnvironment:\n");
        for (name, what) in self.environment() {
            let _ = writeln!(out, "  {name}\n      {what}");
        }
        out.push_str("\nFiles:\n");
        for (path, what) in self.files {
            let _ = writeln!(out, "  {path}\n      {what}");
        }
        let _ = write!(out, "\nSee also: {}", self.see_also.join(", "));
        out
    }

    /// The man page: clap_mangen's sections from the command (name,
    /// synopsis, description, options, subcommands, version), then this
    /// manual's, with `examples` (the tool's, or those of one subcommand).
    pub fn man_page(&self, cmd: &clap::Command, examples: &[Example]) -> Vec<u8> {
        let man = clap_mangen::Man::new(cmd.clone());
        let mut out = Vec::new();
        // Rendering into memory cannot fail.
        let _ = man.render_title(&mut out);
        let _ = man.render_name_section(&mut out);
        let _ = man.render_synopsis_section(&mut out);
        let _ = man.render_description_section(&mut out);
        if cmd.get_arguments().any(|a| !a.is_hide_set()) {
            let _ = man.render_options_section(&mut out);
        }
        if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
            let _ = man.render_subcommands_section(&mut out);
        }
        let _ = self.roff(examples).to_writer(&mut out);
        if cmd.get_version().or(cmd.get_long_version()).is_some() {
            let _ = man.render_version_section(&mut out);
        }
        out
    }

    fn roff(&self, examples: &[Example]) -> Roff {
        let mut r = Roff::default();
        r.control("SH", ["EXAMPLES"]);
        for (what, cmd) in examples {
            r.control("PP", []).text([roman(*what)]);
            r.control("RS", ["4"]).control("nf", []).text([bold(format!("$ {cmd}"))]).control("fi", []);
            r.control("RE", []);
        }
        r.control("SH", ["EXIT STATUS"]);
        for (code, what) in self.exit_status {
            r.control("TP", []).text([bold(code.to_string())]).text([roman(*what)]);
        }
        r.control("SH", ["ENVIRONMENT"]);
        for (name, what) in self.environment() {
            r.control("TP", []).text([bold(name)]).text([roman(what)]);
        }
        r.control("SH", ["FILES"]);
        for (path, what) in self.files {
            r.control("TP", []).text([bold(*path)]).text([roman(*what)]);
        }
        r.control("SH", ["SEE ALSO"]);
        r.text([roman(self.see_also.join(", "))]);
        r
    }
}

/// The man pages of `cmd` and of each of its visible subcommands (named
/// `TOOL-SUB.1`, as clap_mangen names them): (file name, roff text). A
/// subcommand's page has the tool's EXIT STATUS, ENVIRONMENT, FILES and
/// SEE ALSO, and the tool's examples that use the subcommand.
pub fn man_pages(cmd: &clap::Command, manual: &Manual) -> Vec<(String, Vec<u8>)> {
    let mut cmd = cmd.clone().disable_help_subcommand(true);
    cmd.build();
    let mut pages = vec![(format!("{}.1", cmd.get_name()), manual.man_page(&cmd, manual.examples))];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_display_name().unwrap_or(sub.get_name()).to_string();
        let word = format!(" {} ", sub.get_name());
        let examples: Vec<Example> =
            manual.examples.iter().copied().filter(|(_, c)| format!("{c} ").contains(&word)).collect();
        pages.push((format!("{name}.1"), manual.man_page(sub, &examples)));
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: Manual = Manual {
        examples: &[("Print the canonical form", "kiln-opt testdata/saxpy.kir")],
        exit_status: &[(0, "success"), (1, "bad input")],
        settings: SettingsShown::Only(&["max_input_size"]),
        files: CONFIG_FILES,
        see_also: &["kiln-run(1)", "docs/language.md"],
    };

    #[test]
    fn help_text_has_every_section_in_order() {
        let t = M.help_text();
        let at = |s: &str| t.find(s).unwrap_or_else(|| panic!("{s} missing from\n{t}"));
        assert!(at("Examples:") < at("Exit status:"));
        assert!(at("Exit status:") < at("Environment:") && at("Environment:") < at("Files:"));
        assert!(t.contains("    $ kiln-opt testdata/saxpy.kir\n"), "{t}");
        assert!(t.contains("  1\n      bad input\n"), "{t}");
        assert!(t.contains("  KILN_MAX_INPUT_SIZE\n      The max_input_size setting: "), "{t}");
        assert!(!t.contains("KILN_CACHE_MAX_SIZE"), "only the settings named: {t}");
        assert!(t.ends_with("See also: kiln-run(1), docs/language.md"), "{t}");
    }

    #[test]
    fn every_named_setting_exists_and_all_hides_test_knobs() {
        let all = Manual { settings: SettingsShown::All, ..M }.environment();
        assert!(all.iter().any(|(n, _)| n == "KILN_CACHE_MAX_SIZE"));
        assert!(all.iter().all(|(_, w)| !w.starts_with("The test_")), "{all:?}");
        assert_eq!(M.environment().len(), COMMON_ENVIRONMENT.len() + 1);
    }

    #[test]
    fn man_page_sections() {
        let cmd = clap::Command::new("kiln-x").about("Does x").subcommand(clap::Command::new("stats"));
        let m = Manual { examples: &[("All", "kiln-x stats"), ("Other", "kiln-x other")], ..M };
        let pages = man_pages(&cmd, &m);
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["kiln-x.1", "kiln-x-stats.1"]);
        let top = String::from_utf8(pages[0].1.clone()).unwrap();
        for section in ["NAME", "SYNOPSIS", "EXAMPLES", "EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO"] {
            let heading = if section.contains(' ') { format!(".SH \"{section}\"") } else { format!(".SH {section}") };
            assert!(top.contains(&heading), "{section} missing:\n{top}");
        }
        let sub = String::from_utf8(pages[1].1.clone()).unwrap();
        assert!(sub.contains("kiln\\-x stats") && !sub.contains("kiln\\-x other"), "{sub}");
    }
}
