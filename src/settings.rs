//! The tools' settings: one table of named settings, read from the config
//! files (`kiln.toml`), the environment and the command line, each value
//! with where it came from.
//!
//! Owns: the table ([`TABLE`], made with [`Settings`] by one `settings!`
//! row per setting: name, type, default, environment variable, whether the
//! cache's own file may hold it, and its doc), the precedence (default <
//! user file < the cache's file < environment < flag), the reading of the
//! two files with file:line:col errors, and [`set_in_cache_file`], the
//! atomic rewrite behind `kiln-cache-inspect config set`.
//!
//! Must never: print or exit; accept an unknown key or a value of the wrong
//! type silently; write a config file except whole (temporary file and
//! rename); read a setting any other way than through this table.
//!
//! Adding a setting is one row of the `settings!` call below (and reading
//! its field where it is used).

use crate::cache::size::{format_size, parse_size};
use crate::cache::{self, CacheError, StoreOptions};
use serde::Serialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The config file's name, in the cache root and in the user's directory
/// (the cache's layout owns it: `prune` and the set-up know the file).
pub use crate::cache::layout::SETTINGS_FILE as FILE_NAME;

/// Where a setting's value came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "where", rename_all = "snake_case")]
pub enum Source {
    Default,
    /// The user's `$XDG_CONFIG_HOME/kiln/kiln.toml` (or `~/.config/...`).
    UserFile(PathBuf),
    /// The cache's own `kiln.toml` at its root.
    CacheFile(PathBuf),
    /// An environment variable.
    Env(&'static str),
    /// A command-line flag.
    Flag(&'static str),
}

impl Source {
    /// Where the setting `name` came from, for a message about its value
    /// that is found wrong after reading: the flag, the variable, or the
    /// setting in its file.
    pub fn location(&self, name: &str) -> String {
        match self {
            Source::Flag(flag) => flag.to_string(),
            Source::Env(var) => var.to_string(),
            Source::Default => format!("{name} (default)"),
            Source::UserFile(_) | Source::CacheFile(_) => format!("{name} in {self}"),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::UserFile(p) => write!(f, "user file {}", p.display()),
            Source::CacheFile(p) => write!(f, "cache file {}", p.display()),
            Source::Env(v) => write!(f, "environment {v}"),
            Source::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// A setting's value and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting<T> {
    pub value: T,
    pub source: Source,
}

/// A size in bytes, written `5G`, `500M`, `1.5GiB` or a plain number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(pub u64);

/// How a setting's type reads and shows its values.
pub trait SettingValue: Clone {
    /// The type's name in help and errors.
    const TYPE: &'static str;
    /// A value from the TOML file.
    fn from_toml(v: &toml::Value) -> Result<Self, String>;
    /// A value from an environment variable, a flag or `config set`.
    fn from_text(s: &str) -> Result<Self, String>;
    /// How `config set` writes the text `s` (already checked) into TOML.
    fn toml_form(s: &str) -> toml_edit::Value {
        s.into()
    }
    /// The value as `config` shows it; `None` when unset.
    fn show(&self) -> Option<String>;
}

fn expected(ty: &str, v: &toml::Value) -> String {
    format!("expected {ty}, found {} {v}", v.type_str())
}

impl SettingValue for bool {
    const TYPE: &'static str = "a boolean";
    fn from_toml(v: &toml::Value) -> Result<bool, String> {
        v.as_bool().ok_or_else(|| expected(Self::TYPE, v))
    }
    fn from_text(s: &str) -> Result<bool, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(format!("expected a boolean (1/0, true/false, yes/no, on/off), found '{s}'")),
        }
    }
    fn toml_form(s: &str) -> toml_edit::Value {
        bool::from_text(s).unwrap_or_default().into()
    }
    fn show(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl SettingValue for Size {
    const TYPE: &'static str = "a size (a number of GiB, or with a unit: K, M, G, T powers of 1024, KB, MB, GB, TB of 1000, B; e.g. 5, 500M, 2GB)";
    fn from_toml(v: &toml::Value) -> Result<Size, String> {
        match v {
            // A bare number is GiB, as in ccache, written or quoted.
            toml::Value::Integer(n) if *n >= 0 => Size::from_text(&n.to_string()),
            toml::Value::String(s) => Size::from_text(s),
            _ => Err(expected(Self::TYPE, v)),
        }
    }
    fn from_text(s: &str) -> Result<Size, String> {
        parse_size(s).map(Size)
    }
    fn show(&self) -> Option<String> {
        Some(match self.0 {
            0 => "0 (no limit)".to_string(),
            n => format!("{} ({n} bytes)", format_size(n)),
        })
    }
}

/// An optional string (a group name, a URL): unset unless given.
impl SettingValue for Option<String> {
    const TYPE: &'static str = "a string";
    fn from_toml(v: &toml::Value) -> Result<Option<String>, String> {
        v.as_str().map(|s| Some(s.to_string())).ok_or_else(|| expected(Self::TYPE, v))
    }
    fn from_text(s: &str) -> Result<Option<String>, String> {
        Ok(Some(s.to_string()))
    }
    fn show(&self) -> Option<String> {
        self.clone()
    }
}

impl SettingValue for Option<PathBuf> {
    const TYPE: &'static str = "a path";
    fn from_toml(v: &toml::Value) -> Result<Option<PathBuf>, String> {
        v.as_str().map(|s| Some(PathBuf::from(s))).ok_or_else(|| expected(Self::TYPE, v))
    }
    fn from_text(s: &str) -> Result<Option<PathBuf>, String> {
        Ok(Some(PathBuf::from(s)))
    }
    fn show(&self) -> Option<String> {
        self.as_ref().map(|p| p.display().to_string())
    }
}

/// A duration above zero, written `100ms`, `2s`, `7d` (humantime's forms).
impl SettingValue for Duration {
    const TYPE: &'static str = "a duration (e.g. 100ms, 2s, 7d)";
    fn from_toml(v: &toml::Value) -> Result<Duration, String> {
        v.as_str().ok_or_else(|| expected(Self::TYPE, v)).and_then(Duration::from_text)
    }
    fn from_text(s: &str) -> Result<Duration, String> {
        match crate::cache::size::parse_duration(s)? {
            d if d.is_zero() => Err(format!("'{s}': a duration must be above zero")),
            d => Ok(d),
        }
    }
    fn show(&self) -> Option<String> {
        Some(humantime::format_duration(*self).to_string())
    }
}

/// An optional duration (a records' expiry): unset unless given.
impl SettingValue for Option<Duration> {
    const TYPE: &'static str = <Duration as SettingValue>::TYPE;
    fn from_toml(v: &toml::Value) -> Result<Option<Duration>, String> {
        Duration::from_toml(v).map(Some)
    }
    fn from_text(s: &str) -> Result<Option<Duration>, String> {
        Duration::from_text(s).map(Some)
    }
    fn show(&self) -> Option<String> {
        self.as_ref().and_then(SettingValue::show)
    }
}

/// A tier policy: `auto`, `quick` or `opt`.
impl SettingValue for crate::config::TierPolicy {
    const TYPE: &'static str = "a tier policy (auto, quick or opt)";
    fn from_toml(v: &toml::Value) -> Result<Self, String> {
        v.as_str().ok_or_else(|| expected(Self::TYPE, v)).and_then(Self::from_text)
    }
    fn from_text(s: &str) -> Result<Self, String> {
        Self::from_keyword(s).ok_or_else(|| format!("expected auto, quick or opt, found '{s}'"))
    }
    fn show(&self) -> Option<String> {
        Some(self.keyword().to_string())
    }
}

/// One row of the table, as `config` and the docs show it.
#[derive(Clone, Copy, Debug)]
pub struct Info {
    pub name: &'static str,
    /// The environment variable that overrides the files.
    pub env: &'static str,
    /// The command-line flag that overrides the environment, in the tools
    /// that take it (see [`Flag::new`]).
    pub flag: Option<&'static str>,
    pub ty: &'static str,
    /// Whether the cache's own `kiln.toml` may set it (`cache_dir` cannot
    /// be read from a file inside the cache it names).
    pub in_cache_file: bool,
    pub doc: &'static str,
}

/// One effective setting, for `kiln-cache-inspect config`.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub name: &'static str,
    /// The value as text; `None` when unset.
    pub value: Option<String>,
    pub source: Source,
    pub env: &'static str,
}

/// The settings as `kiln-cache-inspect config` prints them: one line a
/// setting, `NAME = VALUE  (SOURCE)`, names aligned.
pub fn rows_text(rows: &[Row]) -> String {
    use std::fmt::Write as _;
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for r in rows {
        let value = r.value.as_deref().unwrap_or("(unset)");
        let _ = writeln!(out, "{:<width$} = {value}  ({})", r.name, r.source);
    }
    out
}

macro_rules! settings {
    ($( $name:ident : $ty:ty = $default:expr, env $env:literal, flag $flag:expr, cache_file $cf:literal, $doc:literal; )+) => {
        /// Every setting's effective value and source.
        #[derive(Clone, Debug)]
        pub struct Settings {
            $( #[doc = $doc] pub $name: Setting<$ty>, )+
            /// The config files that were not read because they cannot be
            /// (not a regular file, too large): each the caller's one
            /// warning.
            pub ignored: Vec<SettingsError>,
        }

        /// The table of settings, in the order `config` shows them.
        pub const TABLE: &[Info] = &[
            $( Info {
                name: stringify!($name),
                env: $env,
                flag: $flag,
                ty: <$ty as SettingValue>::TYPE,
                in_cache_file: $cf,
                doc: $doc,
            }, )+
        ];

        impl Settings {
            /// Every setting at its default.
            pub fn defaults() -> Settings {
                Settings { $( $name: Setting { value: $default, source: Source::Default }, )+ ignored: Vec::new() }
            }

            /// Sets `name` from a TOML value or from text; `Ok(false)` for
            /// an unknown name.
            fn set(&mut self, name: &str, raw: Raw<'_>, source: Source) -> Result<bool, String> {
                match name {
                    $( stringify!($name) => {
                        let value = match raw {
                            Raw::Toml(v) => <$ty as SettingValue>::from_toml(v)?,
                            Raw::Text(s) => <$ty as SettingValue>::from_text(s)?,
                        };
                        self.$name = Setting { value, source };
                        Ok(true)
                    } )+
                    _ => Ok(false),
                }
            }

            /// The value `text` sets `name` to, in words (`5.0 GiB (5368709120
            /// bytes)`), as `config set` echoes it; `None` for an unknown
            /// name or a text that is no value of the setting.
            pub fn shown(name: &str, text: &str) -> Option<String> {
                match name {
                    $( stringify!($name) => <$ty as SettingValue>::from_text(text).ok().and_then(|v| v.show()), )+
                    _ => None,
                }
            }

            /// How `config set` writes `text` (already checked) for `name`.
            fn toml_form(name: &str, text: &str) -> Option<toml_edit::Value> {
                match name {
                    $( stringify!($name) => Some(<$ty as SettingValue>::toml_form(text)), )+
                    _ => None,
                }
            }

            /// Every setting with its value and source, in table order.
            pub fn rows(&self) -> Vec<Row> {
                vec![ $( Row {
                    name: stringify!($name),
                    value: self.$name.value.show(),
                    source: self.$name.source.clone(),
                    env: $env,
                }, )+ ]
            }
        }
    };
}

settings! {
    cache_dir: Option<PathBuf> = None, env "KILN_CACHE_DIR", flag Some("--cache-dir"), cache_file false,
        "The cache root (default: $XDG_CACHE_HOME/kiln, else ~/.cache/kiln).";
    max_size: Size = Size(5 << 30), env "KILN_CACHE_MAX_SIZE", flag None, cache_file true,
        "The size the cache's records are kept within (default 5 GiB; a bare number is GiB, 0 no limit).";
    shared_group: Option<String> = None, env "KILN_CACHE_SHARED_GROUP", flag None, cache_file true,
        "The Unix group that shares the cache: its directories are setgid to it, records and directories group-writable, and group-writable entries of that group are trusted.";
    read_only: bool = false, env "KILN_CACHE_READ_ONLY", flag None, cache_file true,
        "Look records up but never write: compiled tasks are not stored, damaged records are left, recency is not updated.";
    allow_insecure: bool = false, env "KILN_ALLOW_INSECURE_CACHE", flag Some("--allow-insecure-cache"), cache_file false,
        "Accept cache directories that another user owns or that others may write; never from the cache's own file, which would waive the check of the directory holding it.";
    remote: Option<String> = None, env "KILN_REMOTE", flag Some("--remote"), cache_file true,
        "The remote tier's URL: redis://HOST:PORT[/DB], rediss://... or redis+cluster://HOST:PORT[,HOST:PORT...].";
    remote_read_only: bool = false, env "KILN_REMOTE_READ_ONLY", flag Some("--remote-read-only"), cache_file true,
        "Read the remote tier, never write it.";
    remote_connect_timeout: Duration = Duration::from_millis(100), env "KILN_REMOTE_CONNECT_TIMEOUT", flag None, cache_file true,
        "How long to wait for a connection to the remote before going on without it.";
    remote_timeout: Duration = Duration::from_secs(1), env "KILN_REMOTE_TIMEOUT", flag None, cache_file true,
        "How long to wait for one reply of the remote before going on without it.";
    remote_ttl: Option<Duration> = None, env "KILN_REMOTE_TTL", flag None, cache_file true,
        "Records written to the remote expire after this long (whole seconds, Redis EX); unset: never.";
    remote_secret_file: Option<PathBuf> = None, env "KILN_REMOTE_SECRET_FILE", flag None, cache_file false,
        "A file (at least 32 bytes, mode 600) whose secret signs written records and without whose signature no record is accepted; never from the cache's own file.";
    remote_max_record_size: Size = Size(0), env "KILN_REMOTE_MAX_RECORD_SIZE", flag None, cache_file true,
        "The largest remote value read (larger ones are rejected unread); 0: no limit of its own, only the format's (the largest record in its envelope).";
    remote_lease_ttl: Duration = Duration::from_secs(10), env "KILN_REMOTE_LEASE_TTL", flag None, cache_file true,
        "A machine compiling a task no tier holds leases it on the remote for this long, renewed while it compiles: others wait for its record; a dead holder's lease expires after this.";
    compile_wait: Duration = Duration::from_secs(30), env "KILN_COMPILE_WAIT", flag None, cache_file true,
        "How long a run (or a kiln-compile --cache-dir fill) waits for tasks another process or machine is compiling (its lock or lease) with none of them finishing before compiling them itself (on the remote: in all).";
    test_compile_delay: Duration = Duration::ZERO, env "KILN_TEST_COMPILE_DELAY", flag None, cache_file false,
        "Test only: kiln-run and kiln-compile --cache-dir sleep this long before each batch of compiles, so tests can kill a lock holder mid-compile.";
    target_cpu: Option<String> = None, env "KILN_TARGET_CPU", flag Some("--target-cpu"), cache_file false,
        "kiln-run compiles for this CPU instead of the detected one (a simulated host), checked against LLVM's list (help lists them); never from the cache's own file, which hosts share.";
    target_features: Option<String> = None, env "KILN_TARGET_FEATURES", flag Some("--target-features"), cache_file false,
        "kiln-run compiles for these CPU features (+sse2,-avx,...) instead of the detected ones, checked against LLVM's list; never from the cache's own file.";
    tier: crate::config::TierPolicy = crate::config::TierPolicy::Auto, env "KILN_TIER", flag Some("--tier"), cache_file true,
        "Which tiers kiln-run compiles: auto (a task the cache lacks starts on its quick tier while the optimised one compiles in the background and replaces it), quick, or opt (optimised before the first launch).";
    max_input_size: Size = Size(256 << 20), env "KILN_MAX_INPUT_SIZE", flag None, cache_file false,
        "The largest input file a tool reads (default 256 MiB; 0 no limit): a larger one is an error before it is read.";
}

/// A value to set: from a TOML file, or text (environment, flag, `config
/// set`).
enum Raw<'a> {
    Toml(&'a toml::Value),
    Text(&'a str),
}

/// A bad setting: where (`FILE:LINE:COL`, an environment variable or a
/// flag) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    pub location: String,
    pub message: String,
    /// It came from the command line or the environment: a usage error
    /// (exit 2) rather than bad input (exit 1).
    pub usage: bool,
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for SettingsError {}

fn file_error(path: &Path, text: &str, offset: Option<usize>, message: String) -> SettingsError {
    let location = match offset {
        Some(at) => {
            let before = &text.as_bytes()[..at.min(text.len())];
            let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
            let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let col = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
            format!("{}:{line}:{col}", path.display())
        }
        None => path.display().to_string(),
    };
    SettingsError { location, message, usage: false }
}

/// The name of the setting an unknown `name` is closest to, if any is
/// close (a typo's likely intent).
fn suggestion(name: &str) -> String {
    let names = || TABLE.iter().map(|i| i.name);
    // A name inside the other, the same without underscores, or a typo
    // (edit distance at most a third of the longer name: `max_sise`).
    let close = names()
        .find(|n| n.contains(name) || name.contains(n) || n.replace('_', "") == name.replace(['_', '-'], ""))
        .or_else(|| crate::cli::nearest(name, names()));
    match close {
        Some(n) => format!(" (did you mean '{n}'?)"),
        None => format!(" (known: {})", TABLE.iter().map(|i| i.name).collect::<Vec<_>>().join(", ")),
    }
}

/// Applies the settings of a config file's text to `settings`.
/// `cache_file` says which of the two files it is (the cache's may not
/// hold every setting).
pub fn apply_file(settings: &mut Settings, path: &Path, text: &str, cache_file: bool) -> Result<(), SettingsError> {
    type Entries = BTreeMap<toml::Spanned<String>, toml::Spanned<toml::Value>>;
    let entries: Entries =
        toml::from_str(text).map_err(|e| file_error(path, text, e.span().map(|s| s.start), e.message().to_string()))?;
    let source = if cache_file { Source::CacheFile(path.into()) } else { Source::UserFile(path.into()) };
    for (key, value) in &entries {
        let name = key.get_ref().as_str();
        let at = |message: String| file_error(path, text, Some(key.span().start), message);
        match TABLE.iter().find(|i| i.name == name) {
            None => return Err(at(format!("unknown setting '{name}'{}", suggestion(name)))),
            Some(info) if cache_file && !info.in_cache_file => {
                return Err(at(format!("'{name}' cannot be set in the cache's own {FILE_NAME}")))
            }
            Some(_) => {}
        }
        settings
            .set(name, Raw::Toml(value.get_ref()), source.clone())
            .map_err(|m| file_error(path, text, Some(value.span().start), format!("bad value for '{name}': {m}")))?;
    }
    Ok(())
}

/// Whether setting `name` is for Kiln's own tests and benchmarks (its
/// name starts with `test_`): `config` lists it only when asked
/// (`--all`); it is read like any other.
pub fn for_tests(name: &str) -> bool {
    name.starts_with("test_")
}

/// The user's config file: `$XDG_CONFIG_HOME/kiln/kiln.toml` (when that is
/// absolute), else `$HOME/.config/kiln/kiln.toml`.
pub fn user_file(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = var("XDG_CONFIG_HOME").filter(|p| p.is_absolute()).or_else(|| var("HOME").map(|h| h.join(".config")))?;
    Some(base.join("kiln").join(FILE_NAME))
}

/// Reads a config file if it exists; `None` when it does not.
/// Whether the cache directory `root` can be reached: an error when its
/// path cannot be followed (a parent the user may not search, a component
/// that is a file, a loop of links). A root that does not exist yet, or is
/// not a directory, is the store's to create or report.
fn check_reachable(root: &Path) -> Result<(), SettingsError> {
    match std::fs::metadata(root) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(SettingsError {
            location: root.display().to_string(),
            message: format!("cannot reach the cache directory: {}", crate::diag::io_reason(&e)),
            usage: false,
        }),
        _ => Ok(()),
    }
}

/// The most a config file may hold: far above any real one, and small
/// enough that reading it costs nothing.
pub const MAX_FILE_SIZE: u64 = 1 << 20;

/// What reading a config file found.
enum FileText {
    /// No such file: nothing to apply.
    Absent,
    Text(String),
    /// A file that is not read (a FIFO, a device, a directory, over
    /// [`MAX_FILE_SIZE`]): the reason, for one warning.
    Unusable(SettingsError),
}

/// Reads a config file as untrusted input: opened without blocking (a
/// FIFO never hangs the process), only a regular file is read, and at
/// most [`MAX_FILE_SIZE`] bytes of it (a link to `/dev/zero` or a file
/// that grows is never read whole). An error is a file that exists but
/// cannot be read, or is not UTF-8.
fn read_file(path: &Path) -> Result<FileText, SettingsError> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let at = |message: String| SettingsError { location: path.display().to_string(), message, usage: false };
    let file = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path) {
        Ok(f) => f,
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
            return Ok(FileText::Absent)
        }
        Err(e) => return Err(at(format!("cannot read: {}", crate::diag::io_reason(&e)))),
    };
    let meta = file.metadata().map_err(|e| at(format!("cannot read: {}", crate::diag::io_reason(&e))))?;
    let kind = meta.file_type();
    let what = if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else {
        None
    };
    if let Some(what) = what {
        return Ok(FileText::Unusable(at(format!("not read: {what}, not a regular file"))));
    }
    let too_large = || FileText::Unusable(at(format!("not read: larger than {MAX_FILE_SIZE} bytes")));
    if meta.len() > MAX_FILE_SIZE {
        return Ok(too_large());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_SIZE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| at(format!("cannot read: {}", crate::diag::io_reason(&e))))?;
    if bytes.len() as u64 > MAX_FILE_SIZE {
        return Ok(too_large());
    }
    String::from_utf8(bytes).map(FileText::Text).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        SettingsError {
            location: format!("{}:{line}", path.display()),
            message: format!("not UTF-8 text: {e}"),
            usage: false,
        }
    })
}

/// A setting given on the command line: the setting's name, its flag (for
/// messages) and its text.
#[derive(Clone, Debug)]
pub struct Flag {
    pub name: &'static str,
    pub flag: &'static str,
    pub text: String,
}

impl Flag {
    /// The setting `name` given by its flag, as [`TABLE`] names it.
    ///
    /// # Panics
    /// When `name` is not a row with a flag: a programming error that any
    /// test of the flag shows.
    pub fn new(name: &'static str, text: impl Into<String>) -> Flag {
        let info = TABLE.iter().find(|i| i.name == name);
        let flag = info.and_then(|i| i.flag).unwrap_or_else(|| panic!("setting {name} has no flag in the table"));
        Flag { name, flag, text: text.into() }
    }

    /// The flag as a tool's command line takes it: `--flag=TEXT`, or the
    /// switch alone for a boolean setting (a switch is only given as true).
    pub fn to_arg(&self) -> String {
        let switch = TABLE.iter().any(|i| i.name == self.name && i.ty == <bool as SettingValue>::TYPE);
        if switch {
            self.flag.to_string()
        } else {
            format!("{}={}", self.flag, self.text)
        }
    }
}

/// The flags every cache-using tool has: `--cache-dir DIR` and
/// `--allow-insecure-cache` (only those given).
pub fn cache_flags(cache_dir: Option<&Path>, allow_insecure: bool) -> Vec<Flag> {
    let mut flags = Vec::new();
    if let Some(dir) = cache_dir {
        flags.push(Flag::new("cache_dir", dir.display().to_string()));
    }
    if allow_insecure {
        flags.push(Flag::new("allow_insecure", "true"));
    }
    flags
}

/// The settings table as Markdown, for `docs/`: one row per setting whose
/// name starts with `prefix` (`""` for all), with its flag, variable,
/// type, default, whether the cache's own file may hold it, and its doc.
/// `tests/tidy.rs` checks that the tables in `docs/` are this text.
pub fn markdown_table(prefix: &str) -> String {
    let mut out = String::from(
        "| setting | flag | environment | type | default | in the cache's `kiln.toml` | meaning |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let defaults = Settings::defaults().rows();
    for (info, row) in TABLE.iter().zip(defaults).filter(|(i, _)| i.name.starts_with(prefix)) {
        let code = |s: &str| format!("`{s}`");
        let flag = info.flag.map(code).unwrap_or_default();
        let default = row.value.unwrap_or_else(|| "unset".to_string());
        let cache_file = if info.in_cache_file { "yes" } else { "no" };
        let doc = info.doc.replace('|', "\\|");
        let (name, env) = (code(info.name), code(info.env));
        out.push_str(&format!("| {name} | {flag} | {env} | {} | {default} | {cache_file} | {doc} |\n", info.ty));
    }
    out
}

impl Settings {
    /// The effective settings of this process: defaults, the user file,
    /// the cache's file, `KILN_*` variables, then `flags`.
    pub fn load(flags: &[Flag]) -> Result<Settings, SettingsError> {
        Settings::load_with(flags, &|name| std::env::var_os(name))
    }

    /// [`Settings::load`] over any environment (for tests).
    pub fn load_with(flags: &[Flag], env: &dyn Fn(&str) -> Option<OsString>) -> Result<Settings, SettingsError> {
        Settings::load_from(flags, env, true).map_err(|(e, _)| e)
    }

    /// What a run reads (`kiln-run`): [`Settings::load`], except that the
    /// cache's own `kiln.toml` never fails it. When that file cannot be
    /// used (unreadable, a directory, not UTF-8, malformed, a bad key or
    /// value, a cache directory that cannot be reached), the settings are
    /// read again without it, the cache is used read-only (nothing is
    /// written to a cache whose settings are unknown), and the problem is
    /// returned for the run's one warning. Every other error (the user's
    /// file, the environment, a flag) is still an error.
    pub fn load_for_run(flags: &[Flag]) -> Result<(Settings, Option<SettingsError>), SettingsError> {
        Settings::load_for_run_with(flags, &|name| std::env::var_os(name))
    }

    /// [`Settings::load_for_run`] over any environment (for tests).
    pub fn load_for_run_with(
        flags: &[Flag],
        env: &dyn Fn(&str) -> Option<OsString>,
    ) -> Result<(Settings, Option<SettingsError>), SettingsError> {
        match Settings::load_from(flags, env, true) {
            Ok(s) => Ok((s, None)),
            Err((problem, true)) => {
                let mut s = Settings::load_from(flags, env, false).map_err(|(e, _)| e)?;
                s.read_only.value = true;
                Ok((s, Some(problem)))
            }
            Err((e, false)) => Err(e),
        }
    }

    /// The settings, reading the cache's own file or not; an error says
    /// whether that file caused it.
    fn load_from(
        flags: &[Flag],
        env: &dyn Fn(&str) -> Option<OsString>,
        cache_file: bool,
    ) -> Result<Settings, (SettingsError, bool)> {
        let other = |e| (e, false);
        let mut s = Settings::defaults();
        if let Some(path) = user_file(env) {
            match read_file(&path).map_err(other)? {
                FileText::Text(text) => apply_file(&mut s, &path, &text, false).map_err(other)?,
                FileText::Unusable(e) => s.ignored.push(e),
                FileText::Absent => {}
            }
        }
        // The cache directory decides which cache file is read, so it is
        // settled first, with the precedence of every setting.
        s.apply_env_and_flags(env, flags, |info| info.name == "cache_dir").map_err(other)?;
        if s.cache_dir.value.is_none() {
            s.cache_dir.value = cache::default_cache_dir(env).ok();
        }
        if let Some(root) = s.cache_dir.value.clone().filter(|_| cache_file) {
            let path = root.join(FILE_NAME);
            let in_file = |e| (e, true);
            check_reachable(&root).map_err(in_file)?;
            match read_file(&path).map_err(in_file)? {
                FileText::Text(text) => apply_file(&mut s, &path, &text, true).map_err(in_file)?,
                // The cache's settings are unknown: as for a damaged file.
                FileText::Unusable(e) => return Err(in_file(e)),
                FileText::Absent => {}
            }
        }
        s.apply_env_and_flags(env, flags, |info| info.name != "cache_dir").map_err(other)?;
        Ok(s)
    }

    /// Applies the environment, then the flags, of the settings `which`
    /// selects. An empty variable counts as unset.
    fn apply_env_and_flags(
        &mut self,
        env: &dyn Fn(&str) -> Option<OsString>,
        flags: &[Flag],
        which: impl Fn(&Info) -> bool,
    ) -> Result<(), SettingsError> {
        for info in TABLE.iter().filter(|i| which(i)) {
            if let Some(v) = env(info.env).filter(|v| !v.is_empty()) {
                let text = v.to_string_lossy();
                self.set(info.name, Raw::Text(&text), Source::Env(info.env)).map_err(|m| SettingsError {
                    location: info.env.to_string(),
                    message: m,
                    usage: true,
                })?;
            }
        }
        for f in flags.iter().filter(|f| TABLE.iter().any(|i| i.name == f.name && which(i))) {
            self.set(f.name, Raw::Text(&f.text), Source::Flag(f.flag)).map_err(|m| SettingsError {
                location: f.flag.to_string(),
                message: m,
                usage: true,
            })?;
        }
        Ok(())
    }

    /// The cache root, or why there is none.
    pub fn cache_root(&self) -> Result<PathBuf, CacheError> {
        self.cache_dir.value.clone().ok_or(CacheError::NoDefaultDir)
    }

    /// The store options these settings decide (the rest stay at their
    /// defaults for the caller to fill).
    pub fn store_options(&self) -> StoreOptions {
        StoreOptions {
            allow_insecure: self.allow_insecure.value,
            read_only: self.read_only.value,
            shared_group: self.shared_group.value.clone(),
            // 0 is no limit, to the store too.
            max_size: self.max_size.value.0,
            ..StoreOptions::default()
        }
    }
}

/// Sets `name` to `text` in the cache's own `kiln.toml` under `root`,
/// keeping its other keys and comments; the file is replaced whole
/// (temporary file and rename). Returns the file's path.
pub fn set_in_cache_file(root: &Path, name: &str, text: &str) -> Result<PathBuf, SettingsError> {
    let usage = |message: String| SettingsError { location: format!("config set {name}"), message, usage: true };
    let info =
        TABLE.iter().find(|i| i.name == name).ok_or_else(|| usage(format!("unknown setting{}", suggestion(name))))?;
    if !info.in_cache_file {
        return Err(usage(format!("'{name}' cannot be set in the cache's own {FILE_NAME}")));
    }
    Settings::defaults().set(name, Raw::Text(text), Source::Default).map_err(usage)?;
    let path = root.join(FILE_NAME);
    // A file that is not TOML text (not UTF-8, malformed) is past
    // keeping: it is replaced by one holding this setting. A TOML file
    // keeps its other keys and comments.
    let mut doc: toml_edit::DocumentMut = match read_file(&path) {
        Ok(FileText::Text(old)) => old.parse().unwrap_or_default(),
        Ok(FileText::Absent) => toml_edit::DocumentMut::new(),
        // Not a regular file: replacing it would follow a link or swap a
        // FIFO another process may hold; the user removes it first.
        Ok(FileText::Unusable(e)) => return Err(e),
        Err(_) if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) => toml_edit::DocumentMut::new(),
        Err(e) => return Err(e),
    };
    let value = Settings::toml_form(name, text).ok_or_else(|| usage("unknown setting".into()))?;
    doc[name] = toml_edit::Item::Value(value);
    // The file as it will be must be valid: a bad key or value elsewhere
    // in it stays an error to fix (or to overwrite with `config set`).
    let new = doc.to_string();
    apply_file(&mut Settings::defaults(), &path, &new, true)?;
    write_atomic(root, new.as_bytes()).map_err(|e| SettingsError {
        location: path.display().to_string(),
        message: format!("cannot write: {}", crate::diag::io_reason(&e)),
        usage: false,
    })?;
    Ok(path)
}

/// Writes `FILE_NAME` in `dir` whole, readable by everyone who may use
/// the cache whatever the umask: the cache's one atomic small-file write
/// (`cache::fs::write_atomic`), so its temporary is one `prune --temp`
/// knows.
fn write_atomic(dir: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = cache::fs::open_dir_path(&std::fs::canonicalize(dir)?)?;
    cache::fs::write_atomic(&dir, FILE_NAME, bytes, cache::fs::FileMode::Exact(0o644))
}

#[cfg(test)]
mod tests;
