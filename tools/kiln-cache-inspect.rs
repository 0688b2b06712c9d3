//! `kiln-cache-inspect`: list, count, show, extract, verify and prune
//! Kiln's per-task artifact cache; show or reset its statistics; create a
//! (shared) one; show and set its settings. A `main` over
//! `kiln::cache::inspect` and `kiln::remote::inspect`: argument parsing,
//! and each report printed as its JSON or as the text it renders itself
//! (`kiln::cache::render`, `kiln::remote::render`). See
//! `docs/tools/kiln-cache-inspect.md`.

use clap::{Parser, Subcommand};
use kiln::cache::access::Access;
use kiln::cache::inspect::{self, Cache, InspectOptions, PrunePlan};
use kiln::cache::size::{parse_duration, parse_size};
use kiln::cache::store::init_root;
use kiln::cache::CacheError;
use kiln::settings::{self, Settings};
use kiln::tool::{write_output, ToolError};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

const TOOL: &str = "kiln-cache-inspect";

#[derive(Parser)]
#[command(name = TOOL, version = kiln::VERSION, about = "List, verify, prune and extract from Kiln's per-task artifact cache; show its statistics; create and configure it")]
struct Cli {
    /// The cache root [default: $KILN_CACHE_DIR, else cache_dir in the user's kiln.toml, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln]
    #[arg(long, global = true, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Accept a cache directory that another user owns or that is group- or world-writable (env KILN_ALLOW_INSECURE_CACHE=1)
    #[arg(long, global = true)]
    allow_insecure_cache: bool,
    /// Take SCOPE as this host's scope (by default: the scope a Kiln process with LLVM recorded for this machine)
    #[arg(long, global = true, value_name = "SCOPE")]
    host_scope: Option<String>,
    /// Print JSON for scripts
    #[arg(long, global = true)]
    json: bool,
    /// Inspect this remote cache (redis://HOST:PORT or redis+cluster://HOST:PORT,...) instead of a directory: stats, list, verify, prune
    #[arg(long, global = true, value_name = "URL")]
    remote: Option<String>,
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    common: kiln::cli::Common,
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Set KEY to VALUE in the cache's own kiln.toml (kept whole: other keys and comments stay; a file in error is repaired)
    Set {
        /// A setting's name (see `kiln-cache-inspect config`)
        key: String,
        value: String,
    },
}

#[derive(Subcommand)]
enum Command {
    /// Create a cache at DIR (or the cache directory); with --shared, one a Unix group shares
    Init {
        /// The group that shares the cache: directories setgid to it, records and directories group-writable
        #[arg(long, value_name = "GROUP")]
        shared: Option<String>,
        /// The cache root to create [default: the cache directory]
        dir: Option<PathBuf>,
    },
    /// Print every effective setting and where it came from (default, a kiln.toml, the environment, a flag)
    Config {
        /// Also the settings for Kiln's own tests and benchmarks (test_*)
        #[arg(long)]
        all: bool,
        #[command(subcommand)]
        command: Option<ConfigCommand>,
    },
    /// List scopes (marking this host's) and their records
    List,
    /// Totals per scope and overall (records, bytes, oldest and newest use, temporary leftovers) and the lasting statistics (hits, misses, hit rate, ...); a cache that does not exist yet shows zeros
    Stats,
    /// Reset the lasting statistics of every scope to zero (records stay)
    ZeroStats,
    /// Remove every record of this host's scope, asking nothing, and print what was removed (ccache -C); settings, statistics and other hosts' scopes stay
    Clear {
        /// Print what would be removed; remove nothing
        #[arg(long)]
        dry_run: bool,
    },
    /// Show the full metadata of one record, by key or unique key prefix
    Show {
        /// A key, or a prefix of one (hex)
        key: String,
    },
    /// Write one record's object (a relocatable object file) and, with --meta, its launch metadata as JSON
    Extract {
        /// A key, or a prefix of one (hex)
        key: String,
        /// Where to write the object (`-`: standard output)
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: String,
        /// Where to write the launch metadata as JSON
        #[arg(long, value_name = "FILE")]
        meta: Option<String>,
    },
    /// Check every record; report each damaged one and why
    Verify {
        /// Remove the damaged records
        #[arg(long)]
        fix: bool,
    },
    /// Remove records and leftovers; criteria add up
    Prune {
        /// Remove least recently used records until all records fit in SIZE (e.g. 500M, 2G; 0: no limit, nothing removed)
        #[arg(long, value_name = "SIZE", value_parser = parse_size)]
        max_size: Option<u64>,
        /// Remove records not used for DURATION (e.g. 30d, 12h)
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        older_than: Option<Duration>,
        /// Remove the scopes of other hosts
        #[arg(long)]
        foreign_scopes: bool,
        /// Remove temporary files older than AGE [default AGE: 1h], left by killed writers
        #[arg(long, value_name = "AGE", num_args = 0..=1, require_equals = true,
              default_missing_value = "1h", value_parser = parse_duration)]
        temp: Option<Duration>,
        /// Print what would be removed; remove nothing
        #[arg(long)]
        dry_run: bool,
    },
}

/// `kiln-cache-inspect`'s manual: `--help` after the options, and the man page.
const MANUAL: kiln::manual::Manual = kiln::manual::Manual {
    examples: &[
        ("A run fills the cache; then its sizes and lasting hit rate (ccache -s)", "kiln-run testdata/saxpy.kir > /dev/null && kiln-cache-inspect stats"),
        ("Every record of this host, as JSON", "kiln-cache-inspect list --json"),
        ("Check every record and replace the damaged ones", "kiln-cache-inspect verify --fix"),
        ("What pruning by size and age would remove", "kiln-cache-inspect prune --max-size 500M --older-than 30d --dry-run"),
        ("Keep the cache under 2 GiB (ccache -M)", "kiln-cache-inspect -M 2G"),
        ("Every setting and where it came from", "kiln-cache-inspect config"),
        ("Remove this host's records (ccache -C)", "kiln-cache-inspect clear"),
    ],
    exit_status: &[
        (0, "Success (for verify: no damaged record remains)."),
        (1, "An error (no cache, not a Kiln cache, an untrusted directory, no record matches, an output that cannot be written), or verify found damaged records."),
        (2, "Bad usage (an unknown command or flag, an unreadable size or duration, prune without a criterion)."),
    ],
    settings: kiln::manual::SettingsShown::All,
    files: &[kiln::manual::CONFIG_FILES[0], kiln::manual::CACHE_FILES[0], kiln::manual::CACHE_FILES[1]],
    see_also: &["kiln-opt(1)", "kiln-key(1)", "kiln-compile(1)", "kiln-run(1)", "kiln-import(1)", "kiln-reduce(1)", "ccache(1)", "docs/tools/kiln-cache-inspect.md", "docs/cache.md", "docs/remote.md"],
};

const SPEC: kiln::tool::ToolSpec =
    kiln::tool::ToolSpec { name: TOOL, version: || kiln::version::text(TOOL, None), manual: &MANUAL };

fn main() -> ExitCode {
    kiln::tool::run_tool(&SPEC, run)
}

fn cache_err(e: kiln::cache::CacheError) -> ToolError {
    ToolError::msg(e)
}

fn run(cli: Cli) -> Result<(), ToolError> {
    if let Command::Prune { max_size: None, older_than: None, foreign_scopes: false, temp: None, .. } = cli.command {
        return Err(ToolError::Usage(
            "prune needs at least one of --max-size, --older-than, --foreign-scopes, --temp".into(),
        ));
    }
    if let Some(url) = &cli.remote {
        return remote::run(&cli, url);
    }
    let cache_dir = match &cli.command {
        Command::Init { dir: Some(dir), .. } => Some(dir.as_path()),
        _ => cli.cache_dir.as_deref(),
    };
    let flags = settings::cache_flags(cache_dir, cli.allow_insecure_cache);
    // `config set` repairs the cache's own kiln.toml, so it reads the
    // settings without a file in error; every other command reports it.
    let settings = match &cli.command {
        Command::Config { command: Some(ConfigCommand::Set { .. }), .. } => Settings::load_for_run(&flags)?.0,
        _ => Settings::load(&flags)?,
    };
    kiln::tool::warn_ignored_config(&settings);
    let root = settings.cache_root().map_err(cache_err)?;
    let json = cli.json;
    let options = InspectOptions {
        allow_insecure: settings.allow_insecure.value,
        host_scope: cli.host_scope.clone(),
        shared_group: settings.shared_group.value.clone(),
    };
    let open = || Cache::open(&root, &options).map_err(cache_err);
    let now = kiln::cache::record::unix_now();
    // A cache that does not exist yet has zero statistics, nothing to reset.
    let open_if_there = || match Cache::open(&root, &options) {
        Ok(c) => Ok(Some(c)),
        Err(CacheError::NoCache { .. }) => Ok(None),
        Err(e) => Err(cache_err(e)),
    };
    match cli.command {
        Command::Config { command: None, all } => {
            let rows: Vec<_> = settings.rows().into_iter().filter(|r| all || !settings::for_tests(r.name)).collect();
            emit(json, &rows, || settings::rows_text(&rows))
        }
        Command::Init { shared, .. } => init(&root, &settings, shared.as_deref()),
        Command::Config { command: Some(ConfigCommand::Set { key, value }), .. } => {
            let path = settings::set_in_cache_file(open()?.root(), &key, &value)?;
            let shown = Settings::shown(&key, &value).unwrap_or(value);
            write_output(None, format!("{key} = {shown}, set in {}\n", path.display()).as_bytes())
        }
        Command::List => {
            let listing = open()?.list().map_err(cache_err)?;
            emit(json, &listing, || listing.to_text(now))
        }
        Command::Stats => {
            let stats = match open_if_there()? {
                Some(cache) => cache.stats().map_err(cache_err)?,
                None => inspect::Stats::missing(&root),
            };
            emit(json, &stats, || stats.to_text(now))
        }
        Command::ZeroStats => match open_if_there()? {
            Some(cache) => {
                let zeroed = cache.zero_stats().map_err(cache_err)?;
                emit(json, &zeroed, || format!("statistics reset to zero in {} scope(s)\n", zeroed.len()))
            }
            None => emit(json, &Vec::<String>::new(), || format!("no cache at {}; nothing to reset\n", root.display())),
        },
        Command::Show { key } => {
            let shown = open()?.show(&key).map_err(cache_err)?;
            emit(json, &shown, || shown.to_text(now))
        }
        Command::Extract { key, output, meta } => {
            let record = open()?.extract(&key).map_err(cache_err)?;
            if let Some(path) = meta {
                let mut text = serde_json::to_vec_pretty(&record.meta)
                    .map_err(|e| ToolError::msg(format!("cannot write JSON: {e}")))?;
                text.push(b'\n');
                write_output(Some(&path), &text)?;
            }
            write_output(Some(&output), &record.object)
        }
        Command::Verify { fix } => {
            let cache = open()?;
            let report = cache.verify(fix).map_err(cache_err)?;
            emit(json, &report, || report.to_text(cache.root()))?;
            let left = report.bad.iter().filter(|b| !b.removed).count();
            let entries = report.bad_entries.iter().filter(|b| !b.removed).count();
            if left + entries > 0 {
                let mut what = vec![];
                if left > 0 {
                    what.push(format!("{left} damaged record(s)"));
                }
                if entries > 0 {
                    what.push(format!("{entries} misplaced entr{}", if entries == 1 { "y" } else { "ies" }));
                }
                let what = what.join(" and ");
                return Err(ToolError::msg(if fix {
                    format!("{what} could not be removed")
                } else {
                    format!("{what}; `{TOOL} verify --fix` removes them")
                }));
            }
            Ok(())
        }
        Command::Clear { dry_run } => {
            let cache = open()?;
            if cache.this_host().is_none() {
                return Err(ToolError::msg(
                    "clear: this host's scope is not known yet (no Kiln process with LLVM has used the cache here); pass --host-scope SCOPE",
                ));
            }
            let plan = PrunePlan { clear: true, dry_run, ..PrunePlan::default() };
            let report = cache.prune(&plan).map_err(cache_err)?;
            emit(json, &report, || report.to_text(cache.root(), now))
        }
        Command::Prune { max_size, older_than, foreign_scopes, temp, dry_run } => {
            let cache = open()?;
            let plan = PrunePlan { max_size, older_than, foreign_scopes, temp_older_than: temp, dry_run, clear: false };
            let report = cache.prune(&plan).map_err(cache_err)?;
            emit(json, &report, || report.to_text(cache.root(), now))
        }
    }
}

/// `init`: creates the cache root (shared by `shared`, or by the
/// shared_group setting) and records the group in its kiln.toml.
fn init(root: &Path, settings: &Settings, shared: Option<&str>) -> Result<(), ToolError> {
    let group = shared.map(str::to_string).or_else(|| settings.shared_group.value.clone());
    let access = Access::new(settings.allow_insecure.value, group.as_deref()).map_err(cache_err)?;
    let root = init_root(root, &access).map_err(cache_err)?;
    // Recorded with the cache, so every member's process uses it.
    if let Some(g) = &group {
        settings::set_in_cache_file(&root, "shared_group", g)?;
        access.share(&root.join(settings::FILE_NAME)).map_err(cache_err)?;
    }
    let how = match &group {
        Some(g) => format!("shared by group {g}"),
        None => "private".to_string(),
    };
    write_output(None, format!("cache {} ({how})\n", root.display()).as_bytes())
}

/// Writes `value` as JSON or the text `text` makes, to stdout.
fn emit(json: bool, value: &impl Serialize, text: impl FnOnce() -> String) -> Result<(), ToolError> {
    let out = if json {
        let mut s =
            serde_json::to_string_pretty(value).map_err(|e| ToolError::msg(format!("cannot write JSON: {e}")))?;
        s.push('\n');
        s
    } else {
        text()
    };
    write_output(None, out.as_bytes())
}

/// `--remote`: the same commands over a Redis server or cluster.
mod remote {
    use super::*;
    use kiln::remote::envelope::Expect;
    use kiln::remote::inspect::{Inspector, RemotePrunePlan};
    use kiln::remote::render::RemoteStats;
    use kiln::remote::{client, RemoteFlags, RemoteSettings};

    fn redis_err(remote: &str) -> impl Fn(redis::RedisError) -> ToolError + '_ {
        move |e| ToolError::msg(format!("remote cache {remote}: {e}"))
    }

    /// This host's scope: `--host-scope`, else the one recorded in the
    /// local cache of `settings` (if there is one).
    fn this_host(cli: &Cli, settings: &Settings) -> Option<String> {
        cli.host_scope.clone().or_else(|| kiln::cache::host::native_scope(settings.cache_dir.value.as_deref()?))
    }

    pub fn run(cli: &Cli, url: &str) -> Result<(), ToolError> {
        let mut flags = settings::cache_flags(cli.cache_dir.as_deref(), cli.allow_insecure_cache);
        flags.extend(RemoteFlags { url: Some(url.to_string()), read_only: false }.settings_flags());
        let all = Settings::load(&flags)?;
        let settings = RemoteSettings::from_settings(&all)
            .map_err(|e| ToolError::Usage(e.to_string()))?
            .ok_or_else(|| ToolError::Usage("--remote needs a URL".into()))?;
        let shown = settings.display.clone();
        let this_host = this_host(cli, &all);
        if let Command::Prune { max_size, temp, foreign_scopes, .. } = &cli.command {
            if max_size.is_some() || temp.is_some() {
                return Err(ToolError::Usage(
                    "--remote: prune takes --older-than, --foreign-scopes and --dry-run (size is the server's maxmemory)".into(),
                ));
            }
            if *foreign_scopes && this_host.is_none() {
                return Err(ToolError::Usage(
                    "--foreign-scopes needs this host's scope: pass --host-scope SCOPE".into(),
                ));
            }
        }
        let conn = client::connect(&settings).map_err(redis_err(&shown))?;
        let expect = Expect { mac: settings.mac_key.as_ref(), limit: settings.max_value_len };
        let mut ins = Inspector { conn, remote: shown.clone(), expect, this_host };
        let json = cli.json;
        let now = kiln::cache::record::unix_now();
        match &cli.command {
            Command::List => {
                let l = ins.list().map_err(redis_err(&shown))?;
                emit(json, &l, || l.to_text(now))
            }
            Command::Stats => {
                let l = ins.list().map_err(redis_err(&shown))?;
                let stats = RemoteStats::of(&l);
                emit(json, &stats, || stats.to_text())
            }
            Command::Verify { fix } => {
                let r = ins.verify(*fix).map_err(redis_err(&shown))?;
                emit(json, &r, || r.to_text())?;
                let left = r.bad.iter().filter(|b| !b.removed).count();
                match left {
                    0 => Ok(()),
                    n if *fix => Err(ToolError::msg(format!("{n} bad record(s) could not be removed"))),
                    n => Err(ToolError::msg(format!(
                        "{n} bad record(s); `{TOOL} --remote URL verify --fix` removes them"
                    ))),
                }
            }
            Command::Prune { older_than, foreign_scopes, dry_run, .. } => {
                let plan =
                    RemotePrunePlan { older_than: *older_than, foreign_scopes: *foreign_scopes, dry_run: *dry_run };
                let r = ins.prune(&plan, now).map_err(redis_err(&shown))?;
                emit(json, &r, || r.to_text())
            }
            _ => Err(ToolError::Usage("with --remote the commands are stats, list, verify and prune".into())),
        }
    }
}
