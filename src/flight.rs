//! Single-flight compiles: processes (through one cache directory) and
//! machines (through the remote tier) that miss the same tasks share the
//! work instead of each compiling every task.
//!
//! Owns: [`Flight`], one run's claims: which missing keys this process
//! compiles (it holds the key's compile lock, `cache::lock`, and, with a
//! remote, its lease, [`crate::remote::Lease`]) and which it waits for;
//! the wait (polling with back-off, bounded in all by the `compile_wait`
//! setting: past it the process compiles what is left itself); the lease
//! renewal while a batch compiles ([`Flight::renewing`]); and what is held
//! until a record is stored ([`Held::finish`]). `docs/cache.md`,
//! "Single-flight compiles", is the reference.
//!
//! Must never: wait longer in all than the bound (or than the remote's
//! own timeouts: an error turns the tier off and ends a remote wait at
//! once); fail a run (no lock or lease to be had means compile, as if
//! alone); load anything (the caller looks the record up, through every
//! check, once a wait ends); touch LLVM, print or exit.

use crate::cache::lock::{Claim, KeyLock};
use crate::cache::{Key, Record, Store};
use crate::remote::{Fetched, Lease, RemoteTier};
use crate::settings::Settings;
use std::collections::HashMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How a run shares its compiles.
#[derive(Clone, Copy, Debug)]
pub struct FlightOptions {
    /// The most a run waits in all for tasks others are compiling.
    pub wait: Duration,
    /// Test only (`test_compile_delay`): a sleep before each compile, so a
    /// test can kill a holder mid-compile.
    pub compile_delay: Duration,
}

impl FlightOptions {
    /// The options the settings decide (`compile_wait`, `test_compile_delay`).
    pub fn from_settings(settings: &Settings) -> FlightOptions {
        FlightOptions { wait: settings.compile_wait.value, compile_delay: settings.test_compile_delay.value }
    }
}

impl Default for FlightOptions {
    /// The settings table's defaults.
    fn default() -> FlightOptions {
        FlightOptions::from_settings(&Settings::defaults())
    }
}

/// What this process holds for a key it compiles, until the record is
/// stored.
#[derive(Default)]
pub struct Held {
    lock: Option<KeyLock>,
    lease: bool,
}

impl Held {
    /// The record of `key` is written (or could not be: a full disk): the
    /// lock file goes and the lock is released; the lease is deleted. A
    /// waiter then finds the record, or takes over.
    pub fn finish(self, key: &Key, remote: Option<&RemoteTier>) {
        if let Some(lock) = self.lock {
            lock.finish();
        }
        if let (true, Some(r)) = (self.lease, remote) {
            r.release(&[*key]);
        }
    }
}

/// Whom a waited-for key waits on.
enum Wait {
    /// Another process of this machine holds the key's lock.
    Local(KeyLock),
    /// Another machine holds the lease (this process holds the local lock,
    /// when it got one, so this machine's others wait on it).
    Remote(Option<KeyLock>),
}

/// How a wait ended.
// Returned once per wait and matched at once (as `cache::Lookup`): boxing
// the record would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub enum Waited {
    /// The record is in the local store now (look it up: it may still
    /// fail its checks, and is then replaced).
    Appeared,
    /// The remote returned it (checked as every remote record is).
    Fetched(Record),
    /// No record, and this process holds the key now, or the bound is
    /// spent, or the remote is off: compile it.
    Compile,
}

/// A run's single-flight state (see the module's doc).
pub struct Flight {
    options: FlightOptions,
    /// What is left of the bound.
    left: Duration,
    held: HashMap<Key, Held>,
    waiting: HashMap<Key, Wait>,
    /// Tasks another compiled that this process waited for and got.
    pub waited: u64,
    /// Time spent waiting.
    pub wait_time: Duration,
}

/// The first pause between two looks while waiting, and the longest: a
/// look at the local store is one `stat`, one at the remote two round
/// trips.
const FIRST_PAUSE: Duration = Duration::from_millis(1);
const MAX_LOCAL_PAUSE: Duration = Duration::from_millis(10);
const MAX_REMOTE_PAUSE: Duration = Duration::from_millis(10);

impl Flight {
    pub fn new(options: FlightOptions) -> Flight {
        Flight {
            options,
            left: options.wait,
            held: HashMap::new(),
            waiting: HashMap::new(),
            waited: 0,
            wait_time: Duration::ZERO,
        }
    }

    /// Of `keys` (missing from every tier), the ones this process compiles
    /// now: those whose lock it took (and lease, with a remote), or that
    /// have no lock to take. Each is tried without blocking, starting at
    /// an offset of this process's own, so processes starting together
    /// tend to take different tasks. The others are waited for by
    /// [`Flight::wait`]; a key whose record appeared meanwhile is in
    /// neither list.
    pub fn claim(&mut self, store: &Store, remote: Option<&RemoteTier>, keys: &[Key]) -> Vec<Key> {
        let start = if keys.is_empty() { 0 } else { std::process::id() as usize % keys.len() };
        let mut mine = Vec::new();
        for key in keys[start..].iter().chain(&keys[..start]) {
            let lock = match store.claim(key) {
                Claim::Mine(lock) => Some(lock),
                Claim::Busy(lock) => {
                    self.waiting.insert(*key, Wait::Local(lock));
                    continue;
                }
                Claim::Unavailable => None,
            };
            if lock.is_some() && store.record_path(key).exists() {
                continue;
            }
            self.held.insert(*key, Held { lock, lease: false });
            mine.push(*key);
        }
        if let Some(r) = remote {
            for (key, lease) in mine.clone().iter().zip(r.lease(&mine)) {
                match lease {
                    Lease::Mine => self.held.entry(*key).or_default().lease = true,
                    Lease::Held => {
                        let lock = self.held.remove(key).and_then(|h| h.lock);
                        self.waiting.insert(*key, Wait::Remote(lock));
                    }
                    Lease::None => {}
                }
            }
            mine.retain(|k| !self.waiting.contains_key(k));
        }
        keys.iter().copied().filter(|k| mine.contains(k)).collect()
    }

    /// Whether `key` is being compiled by another (this process waits).
    pub fn is_waiting(&self, key: &Key) -> bool {
        self.waiting.contains_key(key)
    }

    /// What this process holds for `key`, taken for the record's write.
    pub fn take(&mut self, key: &Key) -> Option<Held> {
        self.held.remove(key)
    }

    /// Waits for `key`, which another is compiling: until its record is
    /// there, its holder is gone (its lock free, its lease expired or
    /// deleted without a record: this process takes over), or the bound
    /// is spent.
    pub fn wait(&mut self, store: &Store, remote: Option<&RemoteTier>, key: &Key) -> Waited {
        let Some(mut wait) = self.waiting.remove(key) else { return Waited::Compile };
        let t0 = Instant::now();
        let mut pause = FIRST_PAUSE;
        let out = loop {
            if let Some(done) = self.look(store, remote, key, &mut wait) {
                break done;
            }
            let spent = t0.elapsed();
            if spent >= self.left {
                let lock = match wait {
                    Wait::Local(_) => None,
                    Wait::Remote(lock) => lock,
                };
                self.held.insert(*key, Held { lock, lease: false });
                break Waited::Compile;
            }
            std::thread::sleep(pause.min(self.left - spent));
            let max = if matches!(wait, Wait::Local(_)) { MAX_LOCAL_PAUSE } else { MAX_REMOTE_PAUSE };
            pause = (pause * 2).min(max);
        };
        let spent = t0.elapsed();
        self.left = self.left.saturating_sub(spent);
        self.wait_time += spent;
        out
    }

    /// One look at a waited-for key; `None`: keep waiting.
    fn look(&mut self, store: &Store, remote: Option<&RemoteTier>, key: &Key, wait: &mut Wait) -> Option<Waited> {
        match wait {
            Wait::Local(lock) => {
                if store.record_path(key).exists() {
                    return Some(Waited::Appeared);
                }
                if !lock.try_take() {
                    return None;
                }
                // Free: stored just before it was released, or its holder
                // died (or failed) without a record.
                if store.record_path(key).exists() {
                    return Some(Waited::Appeared);
                }
                let lock = std::mem::replace(wait, Wait::Remote(None));
                let Wait::Local(lock) = lock else { return Some(Waited::Compile) };
                self.held.insert(*key, Held { lock: Some(lock), lease: false });
                Some(Waited::Compile)
            }
            Wait::Remote(lock) => {
                let Some(r) = remote.filter(|r| r.is_on()) else {
                    self.held.insert(*key, Held { lock: lock.take(), lease: false });
                    return Some(Waited::Compile);
                };
                if let Some(Fetched::Hit(record)) = r.get_many(&[*key]).pop() {
                    return Some(Waited::Fetched(record));
                }
                match r.lease(&[*key]).pop() {
                    Some(Lease::Held) => None,
                    lease => {
                        let lease = lease == Some(Lease::Mine);
                        self.held.insert(*key, Held { lock: lock.take(), lease });
                        Some(Waited::Compile)
                    }
                }
            }
        }
    }

    /// Runs `compile` (a batch of this process's keys), renewing its
    /// leases every third of their ttl until it returns; first the test
    /// delay, if set.
    pub fn renewing<T>(&self, remote: Option<&RemoteTier>, compile: impl FnOnce() -> T) -> T {
        let delay = self.options.compile_delay;
        let compile = move || {
            if !delay.is_zero() {
                std::thread::sleep(delay);
            }
            compile()
        };
        let leased: Vec<Key> = self.held.iter().filter(|(_, h)| h.lease).map(|(k, _)| *k).collect();
        let Some(r) = remote.filter(|_| !leased.is_empty()) else { return compile() };
        let every = r.settings().lease_ttl / 3;
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            s.spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    r.renew(&leased);
                }
            });
            let out = compile();
            drop(stop);
            out
        })
    }
}
