//! What the tools' command lines share: LLVM's spellings of their flags,
//! the one `-O` parser, the `--color` choice.
//!
//! Owns: [`LLVM_SPELLINGS`], the one table of LLVM option spellings
//! (`opt`/`llc`/`lli`'s single-dash long options) each tool accepts as an
//! alias of its own flag, and [`rewrite_llvm_spellings`], which applies it
//! to argv before clap sees it (clap takes no single-dash long options);
//! [`parse_opt_level`], the `-O` value parser of every tool; [`ColorWhen`]
//! and [`color_choice`], the decision whether diagnostics are coloured;
//! [`ConfigArgs`], the one group of flags that spells a
//! [`CompileConfig`] on every tool that compiles or keys.
//!
//! Must never: print, exit or look at the terminal itself (the caller says
//! whether standard error is one), or know a tool's other flags.

use crate::config::{CodeModel, CompileConfig, Denormals, OptLevel};

/// One LLVM spelling and the Kiln flag it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spelling {
    /// The LLVM option name, without dashes (`mcpu`).
    pub llvm: &'static str,
    /// The Kiln flag it becomes (`--target-cpu`); empty: accepted and
    /// dropped (a no-op, as `-S` on `kiln-opt`, whose output is always text).
    pub kiln: &'static str,
    /// Whether the option takes a value (`-mcpu=NAME` or `-mcpu NAME`).
    pub takes_value: bool,
    /// The tools that accept it (where the meaning is the same as LLVM's).
    pub tools: &'static [&'static str],
}

const OPT: &str = "kiln-opt";
const RUN: &str = "kiln-run";
const COMPILE: &str = "kiln-compile";
const KEY: &str = "kiln-key";
const IMPORT: &str = "kiln-import";

/// LLVM spelling → Kiln flag, per tool. `-O<N>` needs no entry: clap takes
/// it as the short option it is in LLVM too.
pub const LLVM_SPELLINGS: &[Spelling] = &[
    Spelling { llvm: "passes", kiln: "--passes", takes_value: true, tools: &[OPT] },
    Spelling { llvm: "time-passes", kiln: "--time-passes", takes_value: false, tools: &[OPT] },
    Spelling { llvm: "print-after-all", kiln: "--print-after-all", takes_value: false, tools: &[OPT] },
    Spelling { llvm: "print-changed", kiln: "--print-changed", takes_value: false, tools: &[OPT] },
    Spelling { llvm: "verify-each", kiln: "--verify-each", takes_value: false, tools: &[OPT] },
    Spelling { llvm: "S", kiln: "", takes_value: false, tools: &[OPT] },
    Spelling { llvm: "mcpu", kiln: "--target-cpu", takes_value: true, tools: &[RUN, COMPILE] },
    Spelling { llvm: "mattr", kiln: "--target-features", takes_value: true, tools: &[RUN, COMPILE] },
    Spelling { llvm: "filetype", kiln: "--emit", takes_value: true, tools: &[COMPILE] },
    Spelling { llvm: "ffast-math", kiln: "--fast-math", takes_value: false, tools: &[RUN, COMPILE, KEY] },
    Spelling {
        llvm: "ferror-limit",
        kiln: "--error-limit",
        takes_value: true,
        tools: &[OPT, KEY, COMPILE, RUN, IMPORT],
    },
];

/// The spellings `tool` accepts.
pub fn spellings_for(tool: &str) -> impl Iterator<Item = &'static Spelling> + '_ {
    LLVM_SPELLINGS.iter().filter(move |s| s.tools.contains(&tool))
}

/// Rewrites the LLVM spellings `tool` accepts (`-mcpu=x`, `--mcpu x`,
/// `-passes=a,b`, `-S`) into its own flags, leaving every other argument
/// as it is. Stops at `--`; a value that follows an option taking one is
/// never rewritten.
pub fn rewrite_llvm_spellings(tool: &str, args: Vec<String>) -> Vec<String> {
    let args = if tool == CACHE_INSPECT { rewrite_ccache_spellings(args) } else { args };
    let mut out = Vec::with_capacity(args.len());
    let mut iter = args.into_iter();
    if let Some(argv0) = iter.next() {
        out.push(argv0);
    }
    while let Some(arg) = iter.next() {
        if arg == "--" {
            out.push(arg);
            out.extend(iter);
            break;
        }
        match rewrite_one(tool, &arg) {
            Some((new, spelling)) => {
                if !new.is_empty() {
                    out.push(new);
                }
                // `-mcpu NAME`: the value passes through untouched.
                if spelling.takes_value && !arg.contains('=') {
                    out.extend(iter.next());
                }
            }
            None => out.push(arg),
        }
    }
    out
}

/// A tool's flags as [`single_dash_longs`] needs them: each long flag's
/// name (without dashes), each short flag, and whether each takes a value.
#[derive(Clone, Debug, Default)]
pub struct FlagNames {
    pub longs: Vec<(String, bool)>,
    pub shorts: Vec<(char, bool)>,
}

/// LLVM's tools take any long option with one dash (`cl::opt`), so Kiln's
/// take theirs so too: `-stats` is `--stats`, `-print-after=offload` is
/// `--print-after=offload`, when the name (before any `=`) is a long flag
/// of the tool. A single-dash word whose first letter is no short flag of
/// the tool and that names no long flag is an error naming the whole word
/// and the nearest long flag, rather than clap's complaint about its first
/// letter. Left alone: everything after `--`, anything clap would take as
/// short flags (`-O2`, `-q`), and the value after a flag that takes one
/// (`--target-features -avx`, `-o -x`).
pub fn single_dash_longs(args: Vec<String>, flags: &FlagNames) -> Result<Vec<String>, String> {
    let long = |name: &str| flags.longs.iter().find(|(l, _)| l == name).map(|&(_, v)| v);
    let mut out = Vec::with_capacity(args.len());
    let mut iter = args.into_iter();
    out.extend(iter.next());
    while let Some(arg) = iter.next() {
        if arg == "--" {
            out.push(arg);
            out.extend(iter);
            break;
        }
        // `--name VALUE` and `-x VALUE`: the value passes untouched.
        let valued = match arg.strip_prefix("--") {
            Some(body) => !body.contains('=') && long(body).unwrap_or(false),
            None => {
                let mut cs = arg.chars().skip(1);
                let (c, rest) = (cs.next(), cs.next());
                rest.is_none() && flags.shorts.iter().any(|&(s, v)| Some(s) == c && v)
            }
        };
        let Some(body) = arg.strip_prefix('-').filter(|b| b.len() > 1 && !b.starts_with('-')) else {
            out.push(arg);
            if valued {
                out.extend(iter.next());
            }
            continue;
        };
        let (name, joined) = body.split_once('=').map_or((body, false), |(n, _)| (n, true));
        if let Some(takes) = long(name) {
            out.push(format!("-{arg}"));
            if takes && !joined {
                out.extend(iter.next());
            }
            continue;
        }
        let first = body.chars().next().unwrap_or('-');
        if !first.is_ascii_alphabetic() || flags.shorts.iter().any(|&(s, _)| s == first) {
            out.push(arg);
            continue;
        }
        let hint = nearest(name, flags.longs.iter().map(|(l, _)| l.as_str())).map(|n| format!("; did you mean --{n}?"));
        return Err(format!("unknown flag '{arg}'{}", hint.unwrap_or_default()));
    }
    Ok(out)
}

const CACHE_INSPECT: &str = "kiln-cache-inspect";

/// ccache's options that `kiln-cache-inspect` takes for its commands, in
/// place of the command (`ccache -s` is `stats`): the option, the
/// arguments it stands for, and whether it takes a value (appended: `-M
/// 5G` is `config set max_size 5G`).
pub const CCACHE_SPELLINGS: &[(&str, &[&str], bool)] = &[
    ("-s", &["stats"], false),
    ("-z", &["zero-stats"], false),
    ("-C", &["clear"], false),
    ("-M", &["config", "set", "max_size"], true),
];

/// `kiln-cache-inspect`'s global options that take a value as the next
/// argument (which is then no command).
const CACHE_INSPECT_VALUED: &[&str] = &["--cache-dir", "--host-scope", "--remote", "--color", "--error-limit"];

/// `args` with a ccache option in the place of the command replaced by
/// the command it stands for; one after a command is left to clap.
fn rewrite_ccache_spellings(args: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len() + 3);
    let mut iter = args.into_iter();
    out.extend(iter.next());
    while let Some(arg) = iter.next() {
        if let Some((_, to, valued)) = CCACHE_SPELLINGS.iter().find(|(s, _, _)| *s == arg) {
            out.extend(to.iter().map(|s| s.to_string()));
            if *valued {
                out.extend(iter.next());
            }
            out.extend(iter);
            break;
        }
        let takes_value = CACHE_INSPECT_VALUED.contains(&arg.as_str());
        let command = !arg.starts_with('-');
        out.push(arg);
        if takes_value {
            out.extend(iter.next());
        } else if command {
            out.extend(iter);
            break;
        }
    }
    out
}

/// `arg` as Kiln's flag, if it is an LLVM spelling `tool` accepts.
fn rewrite_one(tool: &str, arg: &str) -> Option<(String, &'static Spelling)> {
    let body = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'))?;
    let (name, value) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    };
    let s = spellings_for(tool).find(|s| s.llvm == name)?;
    match (value, s.takes_value) {
        (Some(v), true) => Some((format!("{}={v}", s.kiln), s)),
        (None, _) => Some((s.kiln.to_string(), s)),
        // `-S=x`: not LLVM's spelling either; clap reports it.
        (Some(_), false) => None,
    }
}

/// The `--help` paragraph listing the LLVM spellings `tool` accepts;
/// empty when it accepts none.
pub fn spellings_help(tool: &str) -> String {
    let items: Vec<String> = spellings_for(tool)
        .map(|s| match (s.kiln.is_empty(), s.takes_value) {
            (true, _) => format!("-{} (accepted, no effect)", s.llvm),
            (false, true) => format!("-{}=X (= {}=X)", s.llvm, s.kiln),
            (false, false) => format!("-{} (= {})", s.llvm, s.kiln),
        })
        .collect();
    if items.is_empty() {
        String::new()
    } else {
        format!("LLVM spellings accepted: {}.", items.join(", "))
    }
}

/// `-O`'s value for every tool: `0` to `3`, as LLVM's tools take it.
pub fn parse_opt_level(s: &str) -> Result<OptLevel, String> {
    OptLevel::ALL
        .into_iter()
        .find(|l| s == l.number().to_string())
        .ok_or_else(|| format!("expected 0, 1, 2 or 3, got '{s}'"))
}

/// The compile configuration's flags, flattened into every tool that
/// compiles or keys (`kiln-compile`, `kiln-run`, `kiln-key`): the one
/// mapping from the command line to a [`CompileConfig`]. The fields the
/// command line does not set (record format, versions, build identity)
/// are this build's own.
#[derive(clap::Args, Debug, Clone)]
pub struct ConfigArgs {
    /// Optimisation level of the LLVM pipeline, 0 to 3 (part of every task's key)
    #[arg(short = 'O', value_name = "LEVEL", default_value = "2", value_parser = parse_opt_level)]
    pub opt: OptLevel,

    /// Allow LLVM's fast-math transformations, and vectorise math calls to glibc's libmvec (part of every key; results may differ from the interpreter's)
    #[arg(long)]
    pub fast_math: bool,

    /// Leave out the bounds checks of field accesses (part of every key; an out-of-bounds access is then undefined)
    #[arg(long)]
    pub no_bounds_checks: bool,

    /// The code model objects are compiled for (part of every key)
    #[arg(long, value_name = "MODEL", default_value_t = CompileConfig::default().code_model)]
    pub code_model: CodeModel,

    /// What float operations do with subnormal numbers (part of every key; both engines compute in the mode)
    #[arg(long, value_name = "MODE", default_value_t = Denormals::Preserve)]
    pub denormals: Denormals,
}

impl ConfigArgs {
    /// The configuration these flags spell.
    pub fn config(&self) -> CompileConfig {
        CompileConfig {
            opt_level: self.opt,
            fast_math: self.fast_math,
            bounds_checks: !self.no_bounds_checks,
            code_model: self.code_model,
            denormals: self.denormals,
            ..CompileConfig::default()
        }
    }
}

/// `--code-model`'s values: the names [`CodeModel::keyword`] owns.
impl clap::ValueEnum for CodeModel {
    fn value_variants<'a>() -> &'a [Self] {
        &CodeModel::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match self {
            CodeModel::Default => "the target's default",
            CodeModel::Small => "code and data within 2 GiB",
            CodeModel::Large => "no limit on distances (the default on x86-64)",
        };
        Some(clap::builder::PossibleValue::new(self.keyword()).help(help))
    }
}

/// `--denormals`'s values: the names [`Denormals::keyword`] owns.
impl clap::ValueEnum for Denormals {
    fn value_variants<'a>() -> &'a [Self] {
        &Denormals::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match self {
            Denormals::Preserve => "keep subnormal inputs and results (IEEE 754)",
            Denormals::Flush => "flush them to zero, as Quadrants' CPU backend does",
        };
        Some(clap::builder::PossibleValue::new(self.keyword()).help(help))
    }
}

/// `--kernel`'s value for every tool: `NAME` or `@NAME` (the same kernel),
/// without the `@`.
pub fn parse_kernel_name(s: &str) -> Result<String, String> {
    let name = s.strip_prefix('@').unwrap_or(s);
    let word = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    let number = !name.is_empty() && name.chars().all(|c| c.is_ascii_digit());
    if word || number {
        Ok(name.to_string())
    } else {
        Err(format!("expected a kernel name (`NAME` or `@NAME`), got '{s}'"))
    }
}

/// The message for a `--kernel` that names no kernel of `file`: the
/// nearest name by edit distance when one is close (`did you mean @x?`, as
/// clap and rustc suggest), and the kernels there are when they are few.
pub fn no_such_kernel<'a>(name: &str, file: &str, kernels: impl IntoIterator<Item = &'a str>) -> String {
    format!("no kernel named @{name} in {file}{}", suggest(name, &Names::KERNELS, kernels))
}

/// What [`suggest`] looks names up among: the noun for the list, and the
/// sigil every name is written with.
pub struct Names {
    pub plural: &'static str,
    pub sigil: &'static str,
}

impl Names {
    pub const KERNELS: Names = Names { plural: "kernels", sigil: "@" };
    pub const TASKS: Names = Names { plural: "tasks", sigil: "@" };
    pub const FIELDS: Names = Names { plural: "fields", sigil: "@" };
    pub const SETTINGS: Names = Names { plural: "settings", sigil: "" };
}

/// The candidate nearest to `name` by edit distance, when one is close:
/// at most a third of the longer name's length (one edit for short names).
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|k| (strsim::damerau_levenshtein(name, k), k))
        .filter(|&(d, k)| d <= (name.len().max(k.len()) / 3).max(1))
        .min()
        .map(|(_, k)| k)
}

/// What follows a "no such name" message, the same wherever a name is
/// looked up (kernels, tasks, fields, settings): `; did you mean @x?` when
/// one candidate is close by edit distance (at most a third of the longer
/// name), and the candidates when there are a few (`(kernels: @a, @b)`)
/// or none (`(it has no kernels)`).
pub fn suggest<'a>(name: &str, names: &Names, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let all: Vec<&str> = candidates.into_iter().collect();
    let sigil = names.sigil;
    let mut text = String::new();
    if let Some(k) = nearest(name, all.iter().copied()) {
        text.push_str(&format!("; did you mean {sigil}{k}?"));
    }
    match all.len() {
        0 => text.push_str(&format!(" (it has no {})", names.plural)),
        1..=8 => {
            let list: Vec<String> = all.iter().map(|k| format!("{sigil}{k}")).collect();
            text.push_str(&format!(" ({}: {})", names.plural, list.join(", ")));
        }
        _ => {}
    }
    text
}

/// `--color`'s value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// When standard error is a terminal and NO_COLOR is not set
    #[default]
    Auto,
    /// Always (even with NO_COLOR set)
    Always,
    /// Never
    Never,
}

impl ColorWhen {
    fn parse(s: &str) -> Option<ColorWhen> {
        match s {
            "auto" => Some(ColorWhen::Auto),
            "always" => Some(ColorWhen::Always),
            "never" => Some(ColorWhen::Never),
            _ => None,
        }
    }
}

/// The last `--color` of argv before `--` (an invalid value counts as
/// `auto`; clap reports it). Read before clap parses, so that clap's own
/// errors are coloured by the same rule.
pub fn color_flag(args: &[String]) -> ColorWhen {
    let mut choice = ColorWhen::Auto;
    let mut iter = args.iter().skip(1);
    while let Some(a) = iter.next() {
        if a == "--" {
            break;
        }
        let value = match a.strip_prefix("--color") {
            Some(rest) if rest.starts_with('=') => Some(&rest[1..]),
            Some("") => iter.next().map(String::as_str),
            _ => None,
        };
        if let Some(v) = value {
            choice = ColorWhen::parse(v).unwrap_or(ColorWhen::Auto);
        }
    }
    choice
}

/// Whether to colour: `always` and `never` say so; `auto` colours a
/// terminal unless `NO_COLOR` is set to anything non-empty
/// (<https://no-color.org>).
pub fn color_choice(when: ColorWhen, stderr_is_terminal: bool, no_color: Option<&str>) -> bool {
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => stderr_is_terminal && no_color.is_none_or(str::is_empty),
    }
}

/// The number of errors a tool reports before it stops, as clang's
/// `-ferror-limit` defaults.
pub const DEFAULT_ERROR_LIMIT: usize = 20;

/// The most threads `--threads` takes (`kiln-run`, `kiln-compile`): far
/// above any machine Kiln runs on, and low enough that a mistyped count is
/// a usage error at once rather than thousands of threads started.
pub const MAX_THREADS: u32 = 256;

/// The parser of `--threads N`: 1 to [`MAX_THREADS`].
pub fn threads_parser() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=i64::from(MAX_THREADS))
}

/// The parser of `--seed N`: an integer from 0 to 2^64 - 1, decimal or
/// `0x` hexadecimal.
pub fn parse_seed(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse::<u64>(),
    };
    parsed.map_err(|_| format!("the seed must be an integer from 0 to {}, not '{s}'", u64::MAX))
}

/// The threads to use: `--threads`, else every core (at most
/// [`MAX_THREADS`]).
pub fn thread_count(flag: Option<u32>) -> usize {
    let cores = || std::thread::available_parallelism().map_or(1, |n| n.get());
    flag.map_or_else(|| cores().min(MAX_THREADS as usize), |n| n as usize)
}

/// The diagnostics flags of every tool that reads KIR (flattened into its
/// clap definition); [`crate::tool::run_tool`] reads them by id.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct DiagArgs {
    /// Stop after N errors, 0 for no limit (clang's -ferror-limit=N)
    #[arg(long, value_name = "N", default_value_t = DEFAULT_ERROR_LIMIT)]
    pub error_limit: usize,

    /// How errors and warnings are written on standard error: as LLVM's tools write them, or one JSON object per line (for editors and CI)
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "human")]
    pub diagnostics_format: DiagnosticsFormat,
}

impl DiagArgs {
    /// The id of `--error-limit` in the parsed arguments.
    pub const ERROR_LIMIT_ID: &'static str = "error_limit";
    /// The id of `--diagnostics-format` in the parsed arguments.
    pub const FORMAT_ID: &'static str = "diagnostics_format";
}

/// `--diagnostics-format`'s value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DiagnosticsFormat {
    /// `FILE:LINE:COL: error: MESSAGE`, the source line and a caret
    #[default]
    Human,
    /// One JSON object per line: severity, message, file, line, column, end_line, end_column, span, notes
    Json,
}

/// `--time-trace[=FILE]` (`kiln-opt`, `kiln-key`; `src/trace.rs`).
#[derive(clap::Args, Debug, Clone)]
pub struct TraceArgs {
    /// Write where the time went as Chrome Trace Event JSON (clang's -ftime-trace; open it in Perfetto or chrome://tracing) to FILE, or to INPUT.time-trace.json
    #[arg(long = "time-trace", value_name = "FILE", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub time_trace: Option<String>,
}

impl TraceArgs {
    /// Where the trace goes, if asked for: FILE, else the input's file
    /// name (`stdin` for `-`) with `.time-trace.json`, in the current
    /// directory.
    pub fn path(&self, input: &str) -> Option<String> {
        let given = self.time_trace.as_deref()?;
        if !given.is_empty() {
            return Some(given.to_string());
        }
        let stem = std::path::Path::new(input).file_stem().and_then(|s| s.to_str()).filter(|_| input != "-");
        Some(format!("{}.time-trace.json", stem.unwrap_or("stdin")))
    }
}

/// The trailing flags of every tool that reads KIR and traces its work
/// (`kiln-opt`, `kiln-key`, `kiln-compile`, `kiln-run`): `--time-trace`,
/// the diagnostics flags and the common ones, in that order in `--help`.
#[derive(clap::Args, Debug, Clone)]
pub struct TracedToolArgs {
    #[command(flatten)]
    pub trace: TraceArgs,

    #[command(flatten)]
    pub diag: DiagArgs,

    #[command(flatten)]
    pub common: Common,
}

/// The flags every tool has (flattened into each tool's clap definition).
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct Common {
    /// Colour diagnostics: auto (on a terminal, unless NO_COLOR is set), always or never
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto", global = true)]
    pub color: ColorWhen,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn llvm_spellings_become_kiln_flags() {
        let got = rewrite_llvm_spellings(OPT, argv("kiln-opt -passes=cse,dce -S -time-passes --verify-each in.kir"));
        assert_eq!(got, argv("kiln-opt --passes=cse,dce --time-passes --verify-each in.kir"));
        let got = rewrite_llvm_spellings(COMPILE, argv("kiln-compile -mcpu=znver3 -mattr -avx -filetype=asm x.kir"));
        assert_eq!(got, argv("kiln-compile --target-cpu=znver3 --target-features -avx --emit=asm x.kir"));
    }

    #[test]
    fn only_the_tools_spellings_and_not_after_double_dash() {
        // kiln-run has no -passes: left for clap to reject.
        assert_eq!(rewrite_llvm_spellings(RUN, argv("kiln-run -passes=cse x")), argv("kiln-run -passes=cse x"));
        // -S is kiln-opt's only.
        assert_eq!(rewrite_llvm_spellings(COMPILE, argv("kiln-compile -S")), argv("kiln-compile -S"));
        assert_eq!(rewrite_llvm_spellings(OPT, argv("kiln-opt -- -S")), argv("kiln-opt -- -S"));
        // Kiln's own flags and -O pass through.
        let same = argv("kiln-run --target-cpu=x -O3 -o f --print @y");
        assert_eq!(rewrite_llvm_spellings(RUN, same.clone()), same);
    }

    #[test]
    fn ccache_options_stand_for_the_command_they_name() {
        let r = |s: &str| rewrite_llvm_spellings(CACHE_INSPECT, argv(s));
        assert_eq!(r("k -s"), argv("k stats"));
        assert_eq!(r("k --cache-dir /c -s --json"), argv("k --cache-dir /c stats --json"));
        assert_eq!(r("k -z"), argv("k zero-stats"));
        assert_eq!(r("k -C"), argv("k clear"));
        assert_eq!(r("k -M 5G"), argv("k config set max_size 5G"));
        // After a command, an option is that command's: clap decides.
        assert_eq!(r("k show -s"), argv("k show -s"));
        // Only kiln-cache-inspect's.
        assert_eq!(rewrite_llvm_spellings(OPT, argv("kiln-opt -s")), argv("kiln-opt -s"));
    }

    #[test]
    fn any_long_flag_takes_one_dash_as_llvm_tools_take_them() {
        let flags = FlagNames {
            longs: [("stats", false), ("print-after", true), ("fast-math", false), ("target-features", true)]
                .map(|(l, v)| (l.to_string(), v))
                .to_vec(),
            shorts: vec![('O', true), ('q', false), ('o', true)],
        };
        let r = |s: &str| single_dash_longs(argv(s), &flags);
        assert_eq!(
            r("t -stats -print-after=offload -fast-math x"),
            Ok(argv("t --stats --print-after=offload --fast-math x"))
        );
        // Short flags and their clusters, values and what follows `--` stay.
        assert_eq!(r("t -O2 -q -o out -- -stats"), Ok(argv("t -O2 -q -o out -- -stats")));
        assert_eq!(r("t --stats -5"), Ok(argv("t --stats -5")));
        // A flag's value is never a flag: `--target-features -avx`, `-o -x`,
        // and after a one-dash long flag too.
        assert_eq!(r("t --target-features -avx -o -x"), Ok(argv("t --target-features -avx -o -x")));
        assert_eq!(r("t -target-features -avx"), Ok(argv("t --target-features -avx")));
        assert_eq!(r("t -print-after offload"), Ok(argv("t --print-after offload")));
        // A word that is no flag: named whole, with the nearest long flag.
        assert_eq!(r("t -statz"), Err("unknown flag '-statz'; did you mean --stats?".to_string()));
        assert_eq!(r("t -zzzz"), Err("unknown flag '-zzzz'".to_string()));
    }

    #[test]
    fn every_spelling_names_a_known_tool() {
        for s in LLVM_SPELLINGS {
            assert!(!s.tools.is_empty());
            for t in s.tools {
                assert!([OPT, RUN, COMPILE, KEY, IMPORT].contains(t), "{t}");
            }
        }
        assert!(spellings_help(OPT).contains("-passes=X (= --passes=X)"));
        assert!(spellings_help(OPT).contains("-S (accepted, no effect)"));
        assert_eq!(
            spellings_help("kiln-key"),
            "LLVM spellings accepted: -ffast-math (= --fast-math), -ferror-limit=X (= --error-limit=X)."
        );
        assert_eq!(spellings_help("kiln-cache-inspect"), "");
    }

    #[test]
    fn kernel_names_with_or_without_the_sigil() {
        assert_eq!(parse_kernel_name("@saxpy").as_deref(), Ok("saxpy"));
        assert_eq!(parse_kernel_name("saxpy").as_deref(), Ok("saxpy"));
        assert_eq!(parse_kernel_name("@7").as_deref(), Ok("7"));
        assert!(parse_kernel_name("@@saxpy").is_err());
        assert!(parse_kernel_name("").is_err());
        assert!(parse_kernel_name("a b").is_err());
        assert_eq!(
            no_such_kernel("saxyp", "f.kir", ["saxpy", "fill"]),
            "no kernel named @saxyp in f.kir; did you mean @saxpy? (kernels: @saxpy, @fill)"
        );
        assert_eq!(no_such_kernel("zzz", "f.kir", ["saxpy"]), "no kernel named @zzz in f.kir (kernels: @saxpy)");
        assert_eq!(no_such_kernel("k", "f.kir", []), "no kernel named @k in f.kir (it has no kernels)");
        let many: Vec<String> = (0..20).map(|i| format!("kernel{i}")).collect();
        assert_eq!(
            no_such_kernel("kernel3x", "f.kir", many.iter().map(String::as_str)),
            "no kernel named @kernel3x in f.kir; did you mean @kernel3?"
        );
    }

    #[test]
    fn opt_levels() {
        assert_eq!(parse_opt_level("3"), Ok(OptLevel::O3));
        assert!(parse_opt_level("4").is_err());
        assert!(parse_opt_level("s").is_err());
    }

    #[test]
    fn color_rules() {
        assert_eq!(color_flag(&argv("t --color=never x")), ColorWhen::Never);
        assert_eq!(color_flag(&argv("t --color always --color=never --color always")), ColorWhen::Always);
        assert_eq!(color_flag(&argv("t -- --color=always")), ColorWhen::Auto);
        assert_eq!(color_flag(&argv("t --color=bogus")), ColorWhen::Auto);
        assert!(color_choice(ColorWhen::Auto, true, None));
        assert!(color_choice(ColorWhen::Auto, true, Some("")));
        assert!(!color_choice(ColorWhen::Auto, true, Some("1")));
        assert!(!color_choice(ColorWhen::Auto, false, None));
        assert!(color_choice(ColorWhen::Always, false, Some("1")));
        assert!(!color_choice(ColorWhen::Never, true, None));
    }
}
