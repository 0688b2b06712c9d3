//! The remote tier's settings: where the server is, and how to use it.
//!
//! Owns: [`RemoteSettings`], made from the `remote*` rows of the settings
//! table ([`RemoteSettings::from_settings`]: the flags `--remote` and
//! `--remote-read-only` as rows of that table ([`RemoteFlags`]), the
//! `KILN_REMOTE*` variables and both `kiln.toml` files, as every setting),
//! the URL rules ([`Endpoint::parse`]) and the secret file's checks
//! ([`read_secret`]).
//!
//! Must never: accept a URL the `redis` crate would not, an unknown
//! scheme, or a secret file that is short or readable by others; every
//! refusal names the setting and where it came from (usage errors).

pub use super::envelope::MacKey;
use crate::settings::{Flag, Settings, Source};
use redis::IntoConnectionInfo;
use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
        let (scheme, rest) =
            url.split_once("://").ok_or_else(|| format!("'{url}' is not a URL (expected redis://HOST:PORT)"))?;
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
    /// How long a compile lease lasts unless renewed.
    pub lease_ttl: Duration,
}

/// The remote flags a tool was given (see [`RemoteFlags::settings_flags`]).
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

impl RemoteFlags {
    /// The flags given, as rows of the settings table (`remote`,
    /// `remote_read_only`), so they take their place in its precedence.
    pub fn settings_flags(&self) -> Vec<Flag> {
        let mut flags = Vec::new();
        if let Some(url) = &self.url {
            flags.push(Flag::new("remote", url.clone()));
        }
        if self.read_only {
            flags.push(Flag::new("remote_read_only", "true"));
        }
        flags
    }
}

impl RemoteSettings {
    /// The remote tier's settings from the `remote*` rows of the settings
    /// table (flags, environment, config files, defaults; the table has
    /// read and type-checked them). `None`: no remote configured. A URL the
    /// crate would not take or a secret file that cannot be used is an
    /// error naming the setting and where it came from.
    pub fn from_settings(s: &Settings) -> Result<Option<RemoteSettings>, SettingError> {
        let Some(url) = s.remote.value.clone() else { return Ok(None) };
        let at = |source: &Source, name: &str, e: String| SettingError(format!("{}: {e}", source.location(name)));
        let endpoint = Endpoint::parse(&url).map_err(|e| at(&s.remote.source, "remote", e))?;
        let mac_key = match &s.remote_secret_file.value {
            Some(p) => Some(read_secret(p).map_err(|e| at(&s.remote_secret_file.source, "remote_secret_file", e))?),
            None => None,
        };
        Ok(Some(RemoteSettings {
            endpoint,
            display: redact(&url),
            read_only: s.remote_read_only.value,
            connect_timeout: s.remote_connect_timeout.value,
            timeout: s.remote_timeout.value,
            ttl: s.remote_ttl.value.map(|d| d.as_secs().max(1)),
            mac_key,
            max_value_len: match s.remote_max_record_size.value.0 {
                0 => super::envelope::MAX_VALUE_LEN,
                n => n,
            },
            lease_ttl: s.remote_lease_ttl.value,
        }))
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

    /// The settings of `flags` over an environment of `vars` only (no
    /// user file, no cache directory).
    fn resolve(flags: &RemoteFlags, vars: &[(&str, &str)]) -> Result<Option<RemoteSettings>, String> {
        let env = |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.into());
        let s = Settings::load_with(&flags.settings_flags(), &env).map_err(|e| e.to_string())?;
        RemoteSettings::from_settings(&s).map_err(|e| e.0)
    }

    fn flags(url: Option<&str>) -> RemoteFlags {
        RemoteFlags { url: url.map(String::from), read_only: false }
    }

    #[test]
    fn urls() {
        assert_eq!(
            Endpoint::parse("redis://127.0.0.1:6379").unwrap(),
            Endpoint::Single("redis://127.0.0.1:6379".into())
        );
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
    fn flag_wins_then_environment_then_defaults() {
        let vars = [
            ("KILN_REMOTE", "redis://e:1"),
            ("KILN_REMOTE_READ_ONLY", "yes"),
            ("KILN_REMOTE_TIMEOUT", "250ms"),
            ("KILN_REMOTE_TTL", "7d"),
        ];
        let s = resolve(&flags(Some("redis://f:1")), &vars).unwrap().unwrap();
        assert_eq!(s.endpoint, Endpoint::Single("redis://f:1".into()));
        assert!(s.read_only);
        assert_eq!(
            (s.connect_timeout, s.timeout, s.ttl),
            (Duration::from_millis(100), Duration::from_millis(250), Some(7 * 86400))
        );
        assert_eq!(s.max_value_len, super::super::envelope::MAX_VALUE_LEN);
        let s = resolve(&flags(None), &vars).unwrap().unwrap();
        assert_eq!(s.endpoint, Endpoint::Single("redis://e:1".into()));
        assert!(resolve(&flags(None), &[("KILN_REMOTE", "")]).unwrap().is_none());
        assert!(resolve(&flags(None), &[("KILN_REMOTE_TIMEOUT", "2s")]).unwrap().is_none());
    }

    #[test]
    fn a_config_file_url_comes_last() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("kiln")).unwrap();
        std::fs::write(dir.path().join("kiln/kiln.toml"), "remote = \"redis://file:1\"\nremote_timeout = \"3s\"\n")
            .unwrap();
        let conf = dir.path().to_str().unwrap();
        let s = resolve(&flags(None), &[("XDG_CONFIG_HOME", conf)]).unwrap().unwrap();
        assert_eq!((s.endpoint, s.timeout), (Endpoint::Single("redis://file:1".into()), Duration::from_secs(3)));
        let s = resolve(&flags(None), &[("XDG_CONFIG_HOME", conf), ("KILN_REMOTE", "redis://e:1")]).unwrap().unwrap();
        assert_eq!(s.endpoint, Endpoint::Single("redis://e:1".into()));
        std::fs::write(dir.path().join("kiln/kiln.toml"), "remote = \"ftp://x\"\n").unwrap();
        let e = resolve(&flags(None), &[("XDG_CONFIG_HOME", conf)]).unwrap_err();
        assert!(e.starts_with("remote in user file ") && e.contains(": unknown scheme 'ftp'"), "{e}");
    }

    #[test]
    fn errors_name_the_setting_and_its_source() {
        let e = resolve(&flags(Some("ftp://x")), &[]).unwrap_err();
        assert!(e.starts_with("--remote: unknown scheme 'ftp'"), "{e}");
        let e = resolve(&flags(None), &[("KILN_REMOTE", "nonsense")]).unwrap_err();
        assert!(e.starts_with("KILN_REMOTE: "), "{e}");
        let e = resolve(&flags(Some("redis://h:1")), &[("KILN_REMOTE_TIMEOUT", "soon")]).unwrap_err();
        assert!(e.starts_with("KILN_REMOTE_TIMEOUT: 'soon'"), "{e}");
        let e = resolve(&flags(Some("redis://h:1")), &[("KILN_REMOTE_TIMEOUT", "0s")]).unwrap_err();
        assert!(e.contains("above zero"), "{e}");
        let e = resolve(&flags(Some("redis://h:1")), &[("KILN_REMOTE_READ_ONLY", "maybe")]).unwrap_err();
        assert!(e.starts_with("KILN_REMOTE_READ_ONLY"), "{e}");
        let e = resolve(&flags(Some("redis://h:1")), &[("KILN_REMOTE_SECRET_FILE", "/nonexistent/s")]).unwrap_err();
        assert!(e.starts_with("KILN_REMOTE_SECRET_FILE: /nonexistent/s:"), "{e}");
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
