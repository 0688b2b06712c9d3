//! The remote tier: compiled task records shared across machines through
//! a Redis server or a Redis Cluster, behind the local store.
//!
//! Owns: the settings ([`settings`]), the value format with its signature
//! ([`envelope`]), the connection and its commands ([`client`]), the
//! run's view of the remote ([`RemoteTier`]: batched lookups, writes,
//! compile leases ([`Lease`]), counters, and giving up after the first
//! error) and the inspection
//! behind `kiln-cache-inspect --remote` ([`inspect`], its reports' text in
//! [`render`]).
//!
//! Must never: touch LLVM, print or exit; hand a caller a record that has
//! not passed every check of [`envelope::open`]; write when read-only; let
//! a failing server fail a run (the first error disables the tier for the
//! rest of the process and leaves one warning); talk to any server but
//! the configured one.
//!
//! `docs/remote.md` is the reference: set-up, security model, failure
//! rules, key layout.

pub mod client;
pub mod envelope;
pub mod inspect;
pub mod render;
pub mod settings;

pub use envelope::Rejected;
pub use settings::{RemoteFlags, RemoteSettings, SettingError};

use crate::cache::record::{Key, Record};
pub use crate::stats::RemoteStats;
use crate::stats::{bump, bump_time, RemoteAtomics};
use client::Conn;
use envelope::Expect;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest error text a warning quotes, in characters.
pub const MAX_REASON: usize = 120;

/// `text` on one line: control characters and non-ASCII escaped (Rust's
/// `escape_default`), cut to [`MAX_REASON`] characters with `…`.
fn one_line(text: &str) -> String {
    let escaped: String = text
        .chars()
        .flat_map(|c| if c == ' ' || c.is_ascii_graphic() { vec![c] } else { c.escape_default().collect() })
        .collect();
    match escaped.char_indices().nth(MAX_REASON) {
        Some((at, _)) => format!("{}…", &escaped[..at]),
        None => escaped,
    }
}

/// What a lookup of one key found.
// Returned once per key and matched at once (as `cache::Lookup`): boxing
// the record would only add an allocation per hit.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Fetched {
    /// A record that passed every check.
    Hit(Record),
    /// No value (or the tier is off).
    Miss,
    /// A value that failed a check; counted, never to be loaded.
    Rejected(Rejected),
}

/// Whether this process may compile a key no tier holds, as the remote's
/// compile lease of the key decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lease {
    /// This process took the lease: it compiles, renews the lease while it
    /// does, and deletes it once the record is stored.
    Mine,
    /// Another holds it (Kiln's or not): wait for the record, at most the
    /// bound, then compile.
    Held,
    /// No lease (the tier is off or read-only): compile.
    None,
}

/// The connection, once tried.
enum State {
    NotYet,
    Open(Box<Conn>),
    /// Given up on (an error was met).
    Off,
}

/// One process's use of the remote: shared by the run and its background
/// writers. The connection is opened at the first use; the first error of
/// any kind turns the tier off for good.
pub struct RemoteTier {
    settings: RemoteSettings,
    scope: String,
    state: Mutex<State>,
    off: AtomicBool,
    counters: RemoteAtomics,
    warning: Mutex<Option<String>>,
    /// The value of this process's leases: host, process, and a random
    /// part (a reused pid on another boot is another owner).
    owner: String,
}

impl RemoteTier {
    /// A tier for records of `scope`; nothing is sent yet.
    pub fn new(settings: RemoteSettings, scope: &str) -> RemoteTier {
        RemoteTier {
            settings,
            scope: scope.to_string(),
            state: Mutex::new(State::NotYet),
            off: AtomicBool::new(false),
            counters: RemoteAtomics::default(),
            warning: Mutex::new(None),
            owner: envelope::lease_owner(),
        }
    }

    /// The settings in use.
    pub fn settings(&self) -> &RemoteSettings {
        &self.settings
    }

    /// Whether the tier is still in use (no error yet).
    pub fn is_on(&self) -> bool {
        !self.off.load(Ordering::Relaxed)
    }

    /// Whether records are written (on, and not read-only).
    pub fn writes(&self) -> bool {
        self.is_on() && !self.settings.read_only
    }

    /// The warning of the error that turned the tier off, once.
    pub fn take_warning(&self) -> Option<String> {
        self.warning.lock().ok()?.take()
    }

    /// The counters so far.
    pub fn stats(&self) -> RemoteStats {
        self.counters.snapshot()
    }

    /// Runs `op` on the connection (opening it first if needed); `None`
    /// when the tier is off or `op` failed, which turns it off.
    fn with_conn<T>(&self, what: &str, op: impl FnOnce(&mut Conn) -> redis::RedisResult<T>) -> Option<T> {
        if !self.is_on() {
            return None;
        }
        let t0 = Instant::now();
        let mut state = self.state.lock().ok()?;
        if matches!(*state, State::NotYet) {
            match client::connect(&self.settings) {
                Ok(c) => *state = State::Open(Box::new(c)),
                Err(e) => {
                    // Off before the lock is released: a thread waiting
                    // for it must not connect again.
                    *state = State::Off;
                    drop(state);
                    let bound = ("remote_connect_timeout", self.settings.connect_timeout);
                    self.give_up("connect", &e, bound, t0.elapsed());
                    return None;
                }
            }
        }
        let State::Open(conn) = &mut *state else { return None };
        bump(&self.counters.requests, 1);
        let bound = conn.reply_bound(&self.settings);
        let result = op(conn);
        if result.is_err() {
            *state = State::Off;
        }
        drop(state);
        match result {
            Ok(v) => {
                bump_time(&self.counters.waiting, t0.elapsed());
                Some(v)
            }
            Err(e) => {
                self.give_up(what, &e, bound, t0.elapsed());
                None
            }
        }
    }

    /// Turns the tier off; the first error leaves the one warning: one
    /// line, a timeout said as such with the setting that bounds it, any
    /// other error's text (which may hold the server's bytes) escaped and
    /// cut to [`MAX_REASON`] characters.
    fn give_up(&self, what: &str, e: &redis::RedisError, bound: (&str, Duration), spent: Duration) {
        bump_time(&self.counters.waiting, spent);
        bump(&self.counters.errors, 1);
        let kind = if e.is_timeout() {
            &self.counters.timeouts
        } else if what == "connect" {
            &self.counters.connect_errors
        } else {
            &self.counters.other_errors
        };
        bump(kind, 1);
        if let Ok(mut s) = self.state.lock() {
            *s = State::Off;
        }
        // Only the first error speaks.
        if !self.off.swap(true, Ordering::Relaxed) {
            if let Ok(mut w) = self.warning.lock() {
                let reason = if e.is_timeout() {
                    format!("timed out after {} ms (the {} setting)", bound.1.as_millis(), bound.0)
                } else {
                    one_line(&e.to_string())
                };
                *w = Some(format!(
                    "remote cache {}: {what} failed: {reason}; going on without it for the rest of this run",
                    self.settings.display
                ));
            }
        }
    }

    fn expect(&self) -> Expect<'_> {
        Expect { mac: self.settings.mac_key.as_ref(), limit: self.settings.max_value_len }
    }

    /// Looks up `keys` together (one round trip). Each value is checked in
    /// full (see [`envelope::open`]) before it is returned as a hit.
    pub fn get_many(&self, keys: &[Key]) -> Vec<Fetched> {
        let names: Vec<String> = keys.iter().map(|k| envelope::key_name(&self.scope, k)).collect();
        let Some(values) = self.with_conn("lookup", |c| c.get_values(&names)) else {
            return keys.iter().map(|_| Fetched::Miss).collect();
        };
        keys.iter().zip(values).map(|(key, value)| self.open_value(key, value)).collect()
    }

    /// The server's `value` under `key`'s name, checked in full and
    /// counted.
    fn open_value(&self, key: &Key, value: Option<Vec<u8>>) -> Fetched {
        let c = &self.counters;
        let Some(bytes) = value else {
            bump(&c.misses, 1);
            return Fetched::Miss;
        };
        bump(&c.bytes_read, bytes.len() as u64);
        match envelope::open(&self.scope, key, &bytes, self.expect()) {
            Ok(r) => {
                bump(&c.hits, 1);
                Fetched::Hit(r)
            }
            Err(why) => {
                bump(&c.rejected, 1);
                Fetched::Rejected(why)
            }
        }
    }

    /// A waiter's look at `key`, which another machine is compiling, and
    /// at `others` (the keys it awaits next), in one round trip
    /// ([`client::Conn::look`]): `key`'s record (checked as any), or else
    /// its lease, taken when no one holds it ([`Lease::Mine`]) or not
    /// ([`Lease::Held`]); and what `others` hold. `None` when no lease
    /// can be had (the tier is off, read-only, or the look failed and
    /// turned it off): the caller compiles.
    pub fn look(&self, key: &Key, others: &[Key]) -> Option<(Result<Fetched, Lease>, Vec<Fetched>)> {
        if !self.writes() {
            return None;
        }
        let name = envelope::key_name(&self.scope, key);
        let lease = envelope::lease_name(&self.scope, key);
        let names: Vec<String> = others.iter().map(|k| envelope::key_name(&self.scope, k)).collect();
        let look = self.with_conn("lookup", |c| c.look(&name, &lease, &self.owner, self.lease_ms(), &names))?;
        let found = match look.found {
            client::Found::Value(bytes) => Ok(self.open_value(key, Some(bytes))),
            client::Found::Taken => Err(Lease::Mine),
            client::Found::Held => Err(Lease::Held),
        };
        let others = others.iter().zip(look.others).map(|(k, v)| self.open_value(k, v)).collect();
        Some((found, others))
    }

    /// Counts a hit whose record its consumer refused after all (its
    /// launch metadata differs, or its object would not load) as rejected.
    pub fn refused(&self) {
        self.counters.hits.fetch_sub(1, Ordering::Relaxed);
        bump(&self.counters.rejected, 1);
    }

    /// Tries to take the compile lease of each of `keys` (one round trip;
    /// see `docs/remote.md`, "Compile leases"). No lease is taken when
    /// the tier is off or read-only (this process would never store the
    /// record others would wait for): every key is then [`Lease::None`].
    pub fn lease(&self, keys: &[Key]) -> Vec<Lease> {
        if !self.writes() || keys.is_empty() {
            return keys.iter().map(|_| Lease::None).collect();
        }
        let names = self.lease_names(keys);
        let ttl = self.lease_ms();
        match self.with_conn("lease", |c| c.lease(&names, &self.owner, ttl)) {
            Some(taken) => taken.into_iter().map(|t| if t { Lease::Mine } else { Lease::Held }).collect(),
            None => keys.iter().map(|_| Lease::None).collect(),
        }
    }

    /// Extends this process's leases of `keys` by the lease ttl from now.
    pub fn renew(&self, keys: &[Key]) {
        if !keys.is_empty() {
            let names = self.lease_names(keys);
            self.with_conn("lease renewal", |c| c.keep_leases(&names, &self.owner, self.lease_ms()));
        }
    }

    /// Deletes this process's leases of `keys` (its record is stored, or
    /// it gave up); a lease another took over is left alone.
    pub fn release(&self, keys: &[Key]) {
        if !keys.is_empty() && self.is_on() {
            let names = self.lease_names(keys);
            self.with_conn("lease release", |c| c.keep_leases(&names, &self.owner, 0));
        }
    }

    /// The lease ttl, in whole milliseconds (at least 1).
    fn lease_ms(&self) -> u64 {
        u64::try_from(self.settings.lease_ttl.as_millis()).unwrap_or(u64::MAX).max(1)
    }

    fn lease_names(&self, keys: &[Key]) -> Vec<String> {
        keys.iter().map(|k| envelope::lease_name(&self.scope, k)).collect()
    }

    /// Counts a record this process made but does not send (read-only, or
    /// the tier is off).
    pub fn skip(&self) {
        bump(&self.counters.skipped, 1);
    }

    /// Writes the encoded `record` under `key` (signed when a secret is
    /// set, with the TTL when one is set); whether it was written. Nothing
    /// is sent when read-only or off.
    pub fn put(&self, key: &Key, record: &[u8]) -> bool {
        if !self.writes() {
            self.skip();
            return false;
        }
        let name = envelope::key_name(&self.scope, key);
        let value = envelope::seal(&name, record, self.settings.mac_key.as_ref());
        let ttl = self.settings.ttl;
        let done = self.with_conn("write", |c| c.set(&name, &value, ttl)).is_some();
        if done {
            bump(&self.counters.stored, 1);
            bump(&self.counters.bytes_written, value.len() as u64);
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::settings::Endpoint;
    use super::*;
    use std::net::TcpListener;

    /// A tier whose server accepts connections (the kernel's backlog) and
    /// never answers, as a SIGSTOPped `redis-server` does.
    fn silent_server() -> (TcpListener, RemoteTier) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("redis://{}", listener.local_addr().unwrap());
        let settings = RemoteSettings {
            endpoint: Endpoint::parse(&url).unwrap(),
            display: url,
            read_only: false,
            connect_timeout: Duration::from_millis(50),
            timeout: Duration::from_millis(50),
            ttl: None,
            mac_key: None,
            max_value_len: envelope::MAX_VALUE_LEN,
            lease_ttl: Duration::from_secs(10),
        };
        (listener, RemoteTier::new(settings, "scope"))
    }

    /// The connections the listener has accepted so far.
    fn accepted(listener: &TcpListener) -> usize {
        listener.set_nonblocking(true).unwrap();
        std::iter::from_fn(|| listener.accept().ok()).count()
    }

    /// A tier whose server answers the first request with `reply`.
    fn hostile_server(reply: Vec<u8>) -> RemoteTier {
        use std::io::{Read, Write};
        let (listener, tier) = silent_server();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = listener.accept() {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = s.write_all(&reply);
                std::thread::sleep(Duration::from_millis(500));
            }
        });
        tier
    }

    #[test]
    fn a_hostile_server_costs_one_line_of_warning() {
        let nested = "*1\r\n".repeat(100_000).into_bytes();
        let mut garbage = b"-ERR \x1b[31m\r\n".to_vec();
        garbage.extend(b"\x00\xff nonsense \n".repeat(1000));
        for reply in [nested, garbage, b"$99999999999\r\nxyz".to_vec()] {
            let tier = hostile_server(reply);
            assert!(matches!(tier.get_many(&[Key([7; 32])])[..], [Fetched::Miss]));
            let w = tier.take_warning().expect("one warning");
            assert!(!w.contains('\n') && !w.contains('\r') && !w.contains('\u{1b}'), "{w:?}");
            assert!(w.chars().count() < 300, "{w:?}");
            assert!(!tier.is_on() && tier.take_warning().is_none());
        }
    }

    #[test]
    fn error_text_is_one_escaped_line_of_bounded_length() {
        assert_eq!(one_line("bad\r\nreply \u{1b}[31m"), "bad\\r\\nreply \\u{1b}[31m");
        let long = one_line(&"x".repeat(10_000));
        assert_eq!(long.chars().count(), MAX_REASON + 1);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn a_silent_server_costs_one_timeout_then_nothing() {
        let (listener, tier) = silent_server();
        let keys = [Key([1; 32]), Key([2; 32])];
        assert!(matches!(tier.get_many(&keys)[..], [Fetched::Miss, Fetched::Miss]));
        // The TCP connect succeeds (the kernel accepts); the lookup's reply
        // is waited for within the connect timeout.
        let warning = tier.take_warning().expect("one warning");
        assert!(
            warning.contains("lookup failed: timed out after 50 ms (the remote_connect_timeout setting)"),
            "{warning}"
        );
        // Everything after the first timeout is answered without the server.
        for key in &keys {
            assert!(!tier.put(key, b"record"));
        }
        assert!(matches!(tier.get_many(&keys)[..], [Fetched::Miss, Fetched::Miss]));
        let s = tier.stats();
        assert_eq!((s.requests, s.errors, s.stored, s.misses), (1, 1, 0, 0), "{s:?}");
        assert!(!tier.is_on() && tier.take_warning().is_none());
        assert_eq!(accepted(&listener), 1);
    }
}
