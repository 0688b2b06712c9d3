//! The remote tier's settings: where the server is, and how to use it.
//!
//! Owns: [`RemoteSettings`], the one reading of the `--remote` /
//! `--remote-read-only` flags and the `KILN_REMOTE*` environment variables
//! ([`RemoteSettings::resolve`]; the URL may also come from the `remote`
//! row of the config files, [`RemoteSettings::from_env_or_file`]), the URL rules ([`Endpoint::parse`]) and
//! the secret file's checks ([`read_secret`]).
//!
//! Must never: accept a URL the `redis` crate would not, an unknown
//! scheme, or a secret file that is short or readable by others; every
//! refusal names the setting and where it came from (usage errors).

use redis::IntoConnectionInfo;
use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variable naming the remote (`--remote` wins over it).
pub const REMOTE_ENV: &str = "KILN_REMOTE";
/// `1`/`true`/`yes`: read the remote, never write it.
pub const READ_ONLY_ENV: &str = "KILN_REMOTE_READ_ONLY";
/// How long to wait for a connection (a duration: `100ms`, `2s`).
pub const CONNECT_TIMEOUT_ENV: &str = "KILN_REMOTE_CONNECT_TIMEOUT";
/// How long to wait for one operation's reply.
pub const TIMEOUT_ENV: &str = "KILN_REMOTE_TIMEOUT";
/// Records written expire after this long (Redis `EX`); unset: never.
pub const TTL_ENV: &str = "KILN_REMOTE_TTL";
/// A file holding the secret that signs and verifies records.
pub const SECRET_FILE_ENV: &str = "KILN_REMOTE_SECRET_FILE";

/// The largest record value accepted (a size: `64K`, `200M`); at most
/// the record format's own limit.
pub const MAX_RECORD_SIZE_ENV: &str = "KILN_REMOTE_MAX_RECORD_SIZE";

/// The default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_millis(100);
/// The default operation timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);
/// The fewest bytes a secret file may hold.
pub const MIN_SECRET_LEN: usize = 32;
/// The `blake3::derive_key` context of the record MAC key.
pub const MAC_CONTEXT: &str = "kiln remote tier 2026-11 record MAC v1";

/// A server or a cluster, as the `redis` crate connects to it.
#[derive(Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `redis://` or `rediss://`: one server (the URL as given).
    Single(String),
    /// `redis+cluster://` or `rediss+cluster://`: seed nodes, one URL each.
    Cluster(Vec<String>),
}

impl Endpoint {
    /// Parses a remote URL: `redis://[USER:PASS@]HOST:PORT[/DB]`,
    /// `rediss://...` (TLS), `redis+cluster://[USER:PASS@]HOST:PORT[,HOST:PORT...]`
    /// or `rediss+cluster://...`. Each node URL is checked by the crate.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let (scheme, rest) = url.split_once("://").ok_or_else(|| format!("'{url}' is not a URL (expected redis://HOST:PORT)"))?;
        let node_scheme = match scheme {
            "redis" | "rediss" => {
                url.into_connection_info().map_err(|e| format!("'{url}': {e}"))?;
                return Ok(Endpoint::Single(url.to_string()));
            }
            "redis+cluster" => "redis",
            "rediss+cluster" => "rediss",
            other => {
                return Err(format!(
                    "unknown scheme '{other}' (expected redis, rediss, redis+cluster or rediss+cluster)"
                ))
            }
        };
        let (auth, hosts) = match rest.rsplit_once('@') {
            Some((a, h)) => (format!("{a}@"), h),
            None => (String::new(), rest),
        };
        let hosts = hosts.trim_end_matches('/');
        let mut nodes = Vec::new();
        for h in hosts.split(',') {
            if h.is_empty() || h.contains('/') {
                return Err(format!("'{url}': '{h}' is not HOST:PORT"));
            }
            let node = format!("{node_scheme}://{auth}{h}");
            node.as_str().into_connection_info().map_err(|e| format!("'{url}': node '{h}': {e}"))?;
            nodes.push(node);
        }
        Ok(Endpoint::Cluster(nodes))
    }
}

impl fmt::Debug for Endpoint {
    /// Without passwords.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Single(u) => write!(f, "Single({})", redact(u)),
            Endpoint::Cluster(n) => write!(f, "Cluster({})", n.iter().map(|u| redact(u)).collect::<Vec<_>>().join(",")),
        }
    }
}

/// A URL with any password replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, rest)), Some(_)) => {
            let (auth, host) = rest.rsplit_once('@').unwrap_or(("", rest));
            match auth.split_once(':') {
                Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
                None => format!("{scheme}://***@{host}"),
            }
        }
        _ => url.to_string(),
    }
}

/// The key that signs and verifies records (derived from the secret).
#[derive(Clone, PartialEq, Eq)]
pub struct MacKey(pub [u8; 32]);

impl fmt::Debug for MacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MacKey(..)")
    }
}

/// Everything the remote tier needs to know.
#[derive(Clone, Debug)]
pub struct RemoteSettings {
    pub endpoint: Endpoint,
    /// The URL as given, password redacted (for messages and `--stats`).
    pub display: String,
    pub read_only: bool,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    /// Expiry of written records, whole seconds (at least 1).
    pub ttl: Option<u64>,
    /// Sign written records and accept only signed ones.
    pub mac_key: Option<MacKey>,
    /// The longest value read (see [`super::envelope::MAX_VALUE_LEN`]).
    pub max_value_len: u64,
}

/// The flags a tool passes to [`RemoteSettings::resolve`].
#[derive(Clone, Debug, Default)]
pub struct RemoteFlags {
    /// `--remote URL`.
    pub url: Option<String>,
    /// `--remote-read-only`.
    pub read_only: bool,
}

/// A setting that cannot be used: the message names it and its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingError(pub String);

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SettingError {}

impl RemoteSettings {
    /// The settings from the flags, then the environment (`env` reads a
    /// variable; empty counts as unset). `None`: no remote configured.
    pub fn resolve(flags: &RemoteFlags, env: impl Fn(&str) -> Option<String>) -> Result<Option<RemoteSettings>, SettingError> {
        RemoteSettings::resolve_with_file(flags, None, env)
    }

    /// [`RemoteSettings::resolve`] with a URL from a config file (and where
    /// it came from) as the last resort.
    pub fn resolve_with_file(
        flags: &RemoteFlags,
        file: Option<(String, String)>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<RemoteSettings>, SettingError> {
        let var = |name: &str| env(name).filter(|v| !v.is_empty());
        let (url, source) = match (&flags.url, var(REMOTE_ENV), file) {
            (Some(u), _, _) => (u.clone(), "--remote".to_string()),
            (None, Some(u), _) => (u, format!("${REMOTE_ENV}")),
            (None, None, Some((u, from))) => (u, format!("remote in {from}")),
            (None, None, None) => return Ok(None),
        };
        let endpoint = Endpoint::parse(&url).map_err(|e| SettingError(format!("{source}: {e}")))?;
        let read_only = flags.read_only || var(READ_ONLY_ENV).map(|v| parse_bool(READ_ONLY_ENV, &v)).transpose()?.unwrap_or(false);
        let duration = |name: &str| -> Result<Option<Duration>, SettingError> {
            var(name).map(|v| parse_duration(name, &v)).transpose()
        };
        let connect_timeout = duration(CONNECT_TIMEOUT_ENV)?.unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        let timeout = duration(TIMEOUT_ENV)?.unwrap_or(DEFAULT_TIMEOUT);
        let ttl = duration(TTL_ENV)?.map(|d| d.as_secs().max(1));
        let mac_key = match var(SECRET_FILE_ENV) {
            Some(p) => Some(read_secret(Path::new(&p)).map_err(|e| SettingError(format!("${SECRET_FILE_ENV}: {e}")))?),
            None => None,
        };
        let max_value_len = match var(MAX_RECORD_SIZE_ENV) {
            Some(v) => crate::cache::size::parse_size(&v).map_err(|e| SettingError(format!("${MAX_RECORD_SIZE_ENV}: {e}")))?,
            None => super::envelope::MAX_VALUE_LEN,
        };
        Ok(Some(RemoteSettings { endpoint, display: redact(&url), read_only, connect_timeout, timeout, ttl, mac_key, max_value_len }))
    }

    /// [`RemoteSettings::resolve`] over the process environment.
    pub fn from_env(flags: &RemoteFlags) -> Result<Option<RemoteSettings>, SettingError> {
        RemoteSettings::resolve(flags, |name| std::env::var(name).ok())
    }

    /// [`RemoteSettings::from_env`], with the `remote` row of the config
    /// files ([`crate::settings`]) as the URL when neither the flag nor
    /// `KILN_REMOTE` gives one.
    pub fn from_env_or_file(
        flags: &RemoteFlags,
        file: &crate::settings::Setting<Option<String>>,
    ) -> Result<Option<RemoteSettings>, SettingError> {
        use crate::settings::Source;
        let from_file = match (&file.value, &file.source) {
            (Some(url), Source::UserFile(_) | Source::CacheFile(_)) => Some((url.clone(), file.source.to_string())),
            _ => None,
        };
        RemoteSettings::resolve_with_file(flags, from_file, |name| std::env::var(name).ok())
    }
}

fn parse_bool(name: &str, v: &str) -> Result<bool, SettingError> {
    <bool as crate::settings::SettingValue>::from_text(v).map_err(|e| SettingError(format!("${name}: {e}")))
}

fn parse_duration(name: &str, v: &str) -> Result<Duration, SettingError> {
    match humantime::parse_duration(v) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(SettingError(format!("${name}: a duration must be above zero"))),
        Err(e) => Err(SettingError(format!("${name}: '{v}' is not a duration like 100ms, 2s or 7d ({e})"))),
    }
}

/// Reads a secret file: at least [`MIN_SECRET_LEN`] bytes, readable by
/// its owner only. The key is derived from the whole content.
pub fn read_secret(path: &Path) -> Result<MacKey, String> {
    let shown = PathBuf::from(path).display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {}", crate::diag::io_reason(&e)))?;
    if !meta.is_file() {
        return Err(format!("{shown}: not a regular file"));
    }
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(format!(
            "{shown}: readable or writable by group or others (mode {:o}); run chmod 600 on it",
            mode & 0o777
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{shown}: {}", crate::diag::io_reason(&e)))?;
    if bytes.len() < MIN_SECRET_LEN {
        return Err(format!("{shown}: {} bytes; a secret needs at least {MIN_SECRET_LEN}", bytes.len()));
    }
    Ok(MacKey(blake3::derive_key(MAC_CONTEXT, &bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    fn flags(url: Option<&str>) -> RemoteFlags {
        RemoteFlags { url: url.map(String::from), read_only: false }
    }

    #[test]
    fn urls() {
        assert_eq!(Endpoint::parse("redis://127.0.0.1:6379").unwrap(), Endpoint::Single("redis://127.0.0.1:6379".into()));
        assert_eq!(Endpoint::parse("redis://u:p@h:1/3").unwrap(), Endpoint::Single("redis://u:p@h:1/3".into()));
        assert_eq!(
            Endpoint::parse("redis+cluster://u:p@a:1,b:2/").unwrap(),
            Endpoint::Cluster(vec!["redis://u:p@a:1".into(), "redis://u:p@b:2".into()])
        );
        for bad in ["http://h:1", "h:1", "redis+cluster://a:1,,b:2", "redis+cluster://a:1/0", "redis://h:notaport"] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
        assert!(Endpoint::parse("memcached://h:1").unwrap_err().contains("unknown scheme 'memcached'"));
        assert_eq!(redact("redis://u:secret@h:1"), "redis://u:***@h:1");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
        assert!(!format!("{:?}", Endpoint::parse("redis://u:pw@h:1").unwrap()).contains("pw"));
    }

    #[test]
    fn flag_wins_then_environment() {
        let vars = [(REMOTE_ENV, "redis://e:1"), (READ_ONLY_ENV, "yes"), (TIMEOUT_ENV, "250ms"), (TTL_ENV, "7d")];
        let s = RemoteSettings::resolve(&flags(Some("redis://f:1")), env(&vars)).unwrap().unwrap();
        assert_eq!(s.endpoint, Endpoint::Single("redis://f:1".into()));
        assert!(s.read_only);
        assert_eq!((s.connect_timeout, s.timeout, s.ttl), (DEFAULT_CONNECT_TIMEOUT, Duration::from_millis(250), Some(7 * 86400)));
        let s = RemoteSettings::resolve(&flags(None), env(&vars)).unwrap().unwrap();
        assert_eq!(s.endpoint, Endpoint::Single("redis://e:1".into()));
        assert!(RemoteSettings::resolve(&flags(None), env(&[(REMOTE_ENV, "")])).unwrap().is_none());
    }

    #[test]
    fn a_config_file_url_comes_last() {
        let file = Some(("redis://file:1".to_string(), "cache file /c/kiln.toml".to_string()));
        let s = RemoteSettings::resolve_with_file(&flags(None), file.clone(), env(&[])).unwrap().unwrap();
        assert_eq!(s.endpoint, Endpoint::Single("redis://file:1".into()));
        let s = RemoteSettings::resolve_with_file(&flags(None), file, env(&[(REMOTE_ENV, "redis://e:1")])).unwrap().unwrap();
        assert_eq!(s.endpoint, Endpoint::Single("redis://e:1".into()));
        let bad = Some(("ftp://x".to_string(), "cache file /c/kiln.toml".to_string()));
        let e = RemoteSettings::resolve_with_file(&flags(None), bad, env(&[])).unwrap_err();
        assert!(e.0.starts_with("remote in cache file /c/kiln.toml: unknown scheme"), "{e}");
    }

    #[test]
    fn errors_name_the_setting_and_its_source() {
        let e = RemoteSettings::resolve(&flags(Some("ftp://x")), env(&[])).unwrap_err();
        assert!(e.0.starts_with("--remote: unknown scheme 'ftp'"), "{e}");
        let e = RemoteSettings::resolve(&flags(None), env(&[(REMOTE_ENV, "nonsense")])).unwrap_err();
        assert!(e.0.starts_with("$KILN_REMOTE: "), "{e}");
        let e = RemoteSettings::resolve(&flags(Some("redis://h:1")), env(&[(TIMEOUT_ENV, "soon")])).unwrap_err();
        assert!(e.0.starts_with("$KILN_REMOTE_TIMEOUT: 'soon'"), "{e}");
        let e = RemoteSettings::resolve(&flags(Some("redis://h:1")), env(&[(READ_ONLY_ENV, "maybe")])).unwrap_err();
        assert!(e.0.starts_with("$KILN_REMOTE_READ_ONLY"), "{e}");
        let e = RemoteSettings::resolve(&flags(Some("redis://h:1")), env(&[(SECRET_FILE_ENV, "/nonexistent/s")])).unwrap_err();
        assert!(e.0.starts_with("$KILN_REMOTE_SECRET_FILE: /nonexistent/s:"), "{e}");
    }

    #[test]
    fn secret_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s");
        std::fs::write(&p, [7u8; 40]).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read_secret(&p).unwrap_err().contains("chmod 600"));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let k = read_secret(&p).unwrap();
        assert_eq!(k, MacKey(blake3::derive_key(MAC_CONTEXT, &[7u8; 40])));
        std::fs::write(&p, [7u8; 31]).unwrap();
        assert!(read_secret(&p).unwrap_err().contains("31 bytes"));
    }
}
