//! Single-flight compiles: processes (through one cache directory) and
//! machines (through the remote tier) that miss the same tasks share the
//! work instead of each compiling every task.
//!
//! Owns: [`Flight`], one run's claims: which missing keys this process
//! compiles (it holds the key's compile lock, `cache::lock`, and, with a
//! remote, its lease, [`crate::remote::Lease`]) and which it waits for;
//! the wait, bounded by the `compile_wait` setting (past it the process
//! compiles what is left itself, and says so once): on this machine every
//! awaited lock watched at once ([`Flight::wait_all`]), so all of a dead
//! holder's tasks are taken over together, with the bound on idleness
//! (it starts again whenever an awaited record appears); on the remote
//! looking with back-off, one round trip a look that also fetches every
//! other record awaited there; the lease
//! renewal while a batch compiles ([`Flight::renewing`]); and what is held
//! until a record is stored ([`Held::finish`]). `docs/cache.md`,
//! "Single-flight compiles", is the reference.
//!
//! Must never: wait longer than the bound with no awaited record
//! appearing, nor longer in all than the bound on the remote (or than its
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
    /// The most a run waits with none of the tasks others are compiling
    /// finishing (on this machine: the bound is on idleness), and in all
    /// on the remote.
    pub wait: Duration,
    /// Test only (`test_compile_delay`): a sleep before each compile, so a
    /// test can kill a holder mid-compile.
    pub compile_delay: Duration,
    /// The most lock files a run keeps open at once (each held or awaited
    /// key's lock is an open file): past it, a key is compiled without
    /// its lock, as when no lock can be had, so that a kernel of tens of
    /// thousands of tasks never runs out of file descriptors.
    pub max_locks: usize,
}

/// [`FlightOptions::max_locks`] by default: a quarter of the process's
/// limit of open files, between 16 and 4,096.
fn lock_budget() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current.unwrap_or(u64::MAX);
    usize::try_from((soft / 4).clamp(16, 4096)).unwrap_or(4096)
}

impl FlightOptions {
    /// The options the settings decide (`compile_wait`, `test_compile_delay`).
    pub fn from_settings(settings: &Settings) -> FlightOptions {
        FlightOptions {
            wait: settings.compile_wait.value,
            compile_delay: settings.test_compile_delay.value,
            max_locks: lock_budget(),
        }
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
    /// Whether this process holds the key's lease on the remote.
    pub fn leased(&self) -> bool {
        self.lease
    }

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
    /// What is left of the bound (on the remote: in all).
    left: Duration,
    /// How long this run has watched this machine's holders with no
    /// awaited record appearing since the last one did: the bound on
    /// idleness holds across the run's waits, so a run of many kernels
    /// whose holders are idle waits the bound once, not once a kernel.
    idle: Duration,
    held: HashMap<Key, Held>,
    waiting: HashMap<Key, Wait>,
    /// Records of awaited keys a look at the remote returned before their
    /// turn came.
    arrived: HashMap<Key, Record>,
    /// Tasks another compiled that this process waited for and got.
    pub waited: u64,
    /// Time spent waiting.
    pub wait_time: Duration,
    /// Tasks whose wait ran out (the bound passed with no progress): this
    /// process compiled them although their holders may still be at work;
    /// the run's one warning says so.
    pub ran_out: u64,
}

/// The first pause between two looks at the remote while waiting, and the
/// longest (a look is one round trip). A wait on this machine needs none:
/// it blocks on the lock.
const FIRST_PAUSE: Duration = Duration::from_millis(1);
const MAX_REMOTE_PAUSE: Duration = Duration::from_millis(10);
/// The longest pause between two looks at the locks of keys others of
/// this machine are compiling ([`Flight::wait_all`]).
const MAX_LOCAL_PAUSE: Duration = Duration::from_millis(20);

impl Flight {
    /// The options it shares compiles by.
    pub fn options(&self) -> FlightOptions {
        self.options
    }

    pub fn new(options: FlightOptions) -> Flight {
        Flight {
            options,
            left: options.wait,
            idle: Duration::ZERO,
            held: HashMap::new(),
            waiting: HashMap::new(),
            arrived: HashMap::new(),
            waited: 0,
            wait_time: Duration::ZERO,
            ran_out: 0,
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
        // A key this run claimed before and still holds (its compile
        // failed, or its record is not written yet) is its own: locking or
        // leasing it again would wait on itself.
        let held: Vec<Key> = keys.iter().copied().filter(|k| self.held.contains_key(k)).collect();
        let mut open = self.open_locks();
        for key in keys[start..].iter().chain(&keys[..start]) {
            if held.contains(key) {
                continue;
            }
            let claim = if open < self.options.max_locks { store.claim(key) } else { Claim::Unavailable };
            let lock = match claim {
                Claim::Mine(lock) => {
                    open += 1;
                    Some(lock)
                }
                Claim::Busy(lock) => {
                    open += 1;
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
        mine.extend(held);
        keys.iter().copied().filter(|k| mine.contains(k)).collect()
    }

    /// The lock files this run holds open: its keys' and the ones it
    /// waits on.
    fn open_locks(&self) -> usize {
        let held = self.held.values().filter(|h| h.lock.is_some()).count();
        let waiting = self.waiting.values().filter(|w| matches!(w, Wait::Local(_) | Wait::Remote(Some(_)))).count();
        held + waiting
    }

    /// The run's one line about waits that ran out, if any did: this
    /// process compiled tasks their holders may still be compiling.
    pub fn ran_out_warning(&self) -> Option<String> {
        (self.ran_out > 0).then(|| {
            format!(
                "no task another process was compiling finished within compile_wait ({}); compiled {} of them here",
                humantime::format_duration(self.options.wait),
                self.ran_out
            )
        })
    }

    /// Ends a run: the next one's waits start with the whole bound on
    /// idleness (a process may run many, as the Python module's does,
    /// one a call).
    pub fn end_run(&mut self) {
        self.idle = Duration::ZERO;
    }

    /// Whether `key` is being compiled by another (this process waits).
    pub fn is_waiting(&self, key: &Key) -> bool {
        self.waiting.contains_key(key)
    }

    /// Lets go of every key this process still holds: their records will
    /// not be written (a run that failed or was interrupted before it
    /// compiled them), so their lock files go, their locks and leases are
    /// released, and a waiter finds no record and compiles.
    pub fn release_all(&mut self, remote: Option<&RemoteTier>) {
        for (key, held) in std::mem::take(&mut self.held) {
            held.finish(&key, remote);
        }
    }

    /// What this process holds for `key`, taken for the record's write.
    pub fn take(&mut self, key: &Key) -> Option<Held> {
        self.held.remove(key)
    }

    /// Waits for `key`, which another is compiling: until its record is
    /// there, its holder is gone (its lock free, its lease expired or
    /// deleted without a record: this process takes over), or the bound
    /// is spent. On this machine through [`Flight::watch_local`], as every
    /// local wait, so one bound rule (on idleness) holds for them all.
    pub fn wait(&mut self, store: &Store, remote: Option<&RemoteTier>, key: &Key) -> Waited {
        if self.waits_locally(key) {
            return self.watch_local(store, vec![*key], Some(*key)).remove(key).unwrap_or(Waited::Compile);
        }
        let Some(Wait::Remote(lock)) = self.waiting.remove(key) else { return Waited::Compile };
        let t0 = Instant::now();
        let out = self.wait_remote(remote, key, lock, t0);
        let spent = t0.elapsed();
        self.left = self.left.saturating_sub(spent);
        self.wait_time += spent;
        out
    }

    /// Waits for `key`'s record on the remote (another machine holds its
    /// lease), looking with back-off: each look one round trip that also
    /// fetches the other records this process awaits there.
    fn wait_remote(&mut self, remote: Option<&RemoteTier>, key: &Key, lock: Option<KeyLock>, t0: Instant) -> Waited {
        let mut pause = FIRST_PAUSE;
        let mut held = Held { lock, lease: false };
        loop {
            if let Some(record) = self.arrived.remove(key) {
                self.held.insert(*key, held);
                return Waited::Fetched(record);
            }
            let others: Vec<Key> =
                self.waiting.iter().filter(|(_, w)| matches!(w, Wait::Remote(_))).map(|(k, _)| *k).collect();
            let Some((found, fetched)) = remote.and_then(|r| r.look(key, &others)) else { break };
            for (k, f) in others.iter().zip(fetched) {
                if let Fetched::Hit(record) = f {
                    self.arrived.insert(*k, record);
                }
            }
            match found {
                Ok(Fetched::Hit(record)) => {
                    self.held.insert(*key, held);
                    return Waited::Fetched(record);
                }
                // A record that fails its checks is replaced, never loaded.
                Ok(_) => break,
                Err(Lease::Held) => {}
                Err(lease) => {
                    held.lease = lease == Lease::Mine;
                    break;
                }
            }
            let spent = t0.elapsed();
            if spent >= self.left {
                self.ran_out += 1;
                break;
            }
            std::thread::sleep(pause.min(self.left - spent));
            pause = (pause * 2).min(MAX_REMOTE_PAUSE);
        }
        self.held.insert(*key, held);
        Waited::Compile
    }

    /// Waits for all of `keys` that another is compiling, together, and
    /// says how each wait ended, in the order of `keys` (a key not awaited
    /// is `Compile`): those another process of this machine holds are
    /// watched at once ([`Flight::watch_local`]), then those a remote
    /// holder leased are waited for one by one ([`Flight::wait`]). For a
    /// caller with nothing of its own left to store (`kiln-compile`'s fill
    /// stores its own first).
    pub fn wait_all(&mut self, store: &Store, remote: Option<&RemoteTier>, keys: &[Key]) -> Vec<Waited> {
        let local: Vec<Key> = keys.iter().copied().filter(|k| self.waits_locally(k)).collect();
        let mut out = self.watch_local(store, local, None);
        keys.iter().map(|k| out.remove(k).unwrap_or_else(|| self.wait(store, remote, k))).collect()
    }

    /// Waits for `key`, which another is compiling, as [`Flight::wait`];
    /// when another process of this machine holds it, every key this
    /// process awaits on this machine is watched meanwhile, and the
    /// others that came free too (their holder died with them, or went
    /// idle past the bound) are returned, taken over: the caller compiles
    /// them with `key`, as one batch.
    pub fn wait_one(&mut self, store: &Store, remote: Option<&RemoteTier>, key: &Key) -> (Waited, Vec<Key>) {
        if !self.waits_locally(key) {
            return (self.wait(store, remote, key), Vec::new());
        }
        let local: Vec<Key> = self.waiting.keys().copied().filter(|k| self.waits_locally(k)).collect();
        let mut out = self.watch_local(store, local, Some(*key));
        let waited = out.remove(key).unwrap_or(Waited::Compile);
        let taken = out.into_iter().filter(|(_, w)| matches!(w, Waited::Compile)).map(|(k, _)| k).collect();
        (waited, taken)
    }

    /// Whether another process of this machine holds `key`'s lock.
    fn waits_locally(&self, key: &Key) -> bool {
        matches!(self.waiting.get(key), Some(Wait::Local(_)))
    }

    /// Watches the locks of `keys` (others of this machine hold them) at
    /// once: a lock that comes free is taken then, so every task of a
    /// holder that died is taken over in the same round; until `until`'s
    /// wait ends (all of them when `None`). The bound is on idleness, not
    /// on the wait in all: it starts again whenever an awaited record
    /// appears, so a holder that is storing its tasks is waited for; past
    /// it, with no record appearing, every key still watched is taken
    /// over (its holder is idle: no lock, counted in `ran_out`). The
    /// idleness adds up over the run's watches (`idle`): a later kernel's
    /// wait on holders that stayed idle is what was left of the bound,
    /// not the bound again. How each wait that ended, ended.
    fn watch_local(&mut self, store: &Store, mut keys: Vec<Key>, until: Option<Key>) -> HashMap<Key, Waited> {
        let t0 = Instant::now();
        let mut out: HashMap<Key, Waited> = HashMap::new();
        let (mut idle_since, mut pause) = (Instant::now(), FIRST_PAUSE);
        let idle = |since: Instant, earlier: Duration| earlier + since.elapsed();
        let mut idle_earlier = self.idle;
        let done = |out: &HashMap<Key, Waited>, keys: &[Key]| match until {
            Some(k) => out.contains_key(&k),
            None => keys.is_empty(),
        };
        while !keys.is_empty() {
            let before = keys.len();
            keys.retain(|key| match self.try_local(store, key) {
                Some(w) => {
                    if matches!(w, Waited::Appeared) {
                        (idle_since, idle_earlier) = (Instant::now(), Duration::ZERO);
                    }
                    out.insert(*key, w);
                    false
                }
                None => true,
            });
            if keys.len() < before {
                pause = FIRST_PAUSE;
            }
            if done(&out, &keys) {
                keys.clear();
                break;
            }
            if idle(idle_since, idle_earlier) >= self.options.wait {
                break;
            }
            std::thread::sleep(pause.min(self.options.wait.saturating_sub(idle(idle_since, idle_earlier))));
            pause = (pause * 2).min(MAX_LOCAL_PAUSE);
        }
        self.idle = idle(idle_since, idle_earlier);
        // No progress for the bound: compile what is left, without locks.
        for key in keys {
            self.waiting.remove(&key);
            self.held.insert(key, Held::default());
            self.ran_out += 1;
            out.insert(key, Waited::Compile);
        }
        let spent = t0.elapsed();
        self.wait_time += spent;
        self.left = self.left.saturating_sub(spent);
        out
    }

    /// One look at a key another process of this machine holds: its
    /// record appeared, or its lock came free (this process holds it now
    /// and compiles it), or `None`: still held.
    fn try_local(&mut self, store: &Store, key: &Key) -> Option<Waited> {
        let appeared = || store.record_path(key).exists();
        let Some(Wait::Local(lock)) = self.waiting.get_mut(key) else { return Some(Waited::Compile) };
        if appeared() {
            self.waiting.remove(key);
            return Some(Waited::Appeared);
        }
        if !lock.take_within(Duration::ZERO) {
            return None;
        }
        let Some(Wait::Local(lock)) = self.waiting.remove(key) else { return Some(Waited::Compile) };
        if appeared() {
            return Some(Waited::Appeared);
        }
        self.held.insert(*key, Held { lock: Some(lock), lease: false });
        Some(Waited::Compile)
    }

    /// Runs `compile` (a batch of this process's keys), renewing its
    /// leases every third of their ttl until it returns; first the test
    /// delay, if set.
    pub fn renewing<T>(&self, remote: Option<&RemoteTier>, compile: impl FnOnce() -> T) -> T {
        let leased: Vec<Key> = self.held.iter().filter(|(_, h)| h.lease).map(|(k, _)| *k).collect();
        self.renewing_keys(remote, leased, compile)
    }

    /// [`Flight::renewing`] of the leases of `leased`, which the caller
    /// has taken out of the flight ([`Flight::take`]) to release each as
    /// its record is written.
    pub fn renewing_keys<T>(&self, remote: Option<&RemoteTier>, leased: Vec<Key>, compile: impl FnOnce() -> T) -> T {
        let delay = self.options.compile_delay;
        let compile = move || {
            if !delay.is_zero() {
                std::thread::sleep(delay);
            }
            compile()
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{HostScope, StoreOptions};

    /// A store of one scope under `dir`, unsynced.
    fn store_in(dir: &std::path::Path) -> Store {
        let scope = HostScope::new("x86_64-unknown-linux-gnu", "flight", ["+a"]);
        Store::open(dir, scope, StoreOptions { fsync: false, ..Default::default() }).unwrap()
    }

    /// Past the lock budget a key is still this run's to compile, without
    /// a lock file: a kernel of more tasks than the process may open files
    /// never fails for it. The budget counts the locks waited on too.
    #[test]
    fn claims_past_the_lock_budget_compile_without_a_lock() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path());
        let keys: Vec<Key> = (0..10u8).map(|i| Key::from(blake3::hash(&[i]))).collect();
        let options = FlightOptions { max_locks: 3, ..FlightOptions::default() };
        let mut a = Flight::new(options);
        let mine = a.claim(&store, None, &keys);
        assert_eq!(mine, keys, "every key is the first run's to compile");
        let locked: Vec<Key> =
            keys.iter().copied().filter(|k| store.record_path(k).with_extension("lock").exists()).collect();
        assert_eq!((a.open_locks(), locked.len()), (3, 3));
        // A second run waits on the locked keys (within its own budget of
        // 2) and compiles the rest without locks.
        let mut b = Flight::new(FlightOptions { max_locks: 2, ..options });
        let theirs = b.claim(&store, None, &keys);
        assert_eq!(b.open_locks(), 2);
        let waited = keys.iter().filter(|k| b.is_waiting(k)).count();
        assert_eq!((waited, theirs.len()), (2, 8));
    }

    /// The bound on idleness holds across a run's waits: a run that
    /// waited the bound on idle holders for one kernel's tasks does not
    /// wait it again for the next kernel's, which the same idle holders
    /// hold (before, `compile_wait` was spent once a kernel).
    #[test]
    fn idle_holders_are_waited_for_once_a_run_not_once_a_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path());
        let keys: Vec<Key> = (0..4u8).map(|i| Key::from(blake3::hash(&[i]))).collect();
        // The idle holder: it claims every key and never stores a record.
        let mut holder = Flight::new(FlightOptions::default());
        assert_eq!(holder.claim(&store, None, &keys), keys);
        let wait = Duration::from_millis(300);
        let mut run = Flight::new(FlightOptions { wait, ..FlightOptions::default() });
        for kernel in keys.chunks(2) {
            assert!(run.claim(&store, None, kernel).is_empty(), "the holder has them");
            let waited = run.wait_all(&store, None, kernel);
            assert!(waited.iter().all(|w| matches!(w, Waited::Compile)));
        }
        assert_eq!(run.ran_out, 4);
        assert!(run.wait_time >= wait, "the bound was waited once: {:?}", run.wait_time);
        assert!(run.wait_time < wait + wait / 2, "and not again for the second kernel: {:?}", run.wait_time);
        // The next run of the same process (a Python call) has the bound
        // again.
        run.end_run();
        let more: Vec<Key> = (4..6u8).map(|i| Key::from(blake3::hash(&[i]))).collect();
        assert_eq!(holder.claim(&store, None, &more), more);
        assert!(run.claim(&store, None, &more).is_empty());
        let before = run.wait_time;
        run.wait_all(&store, None, &more);
        assert!(run.wait_time - before >= wait, "a new run waits the bound: {:?}", run.wait_time - before);
    }

    /// A run that claims keys it already holds (a compile that failed
    /// and is tried again in the same process) gets them at once: it never
    /// waits on its own locks.
    #[test]
    fn a_key_claimed_again_is_still_mine() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path());
        let keys: Vec<Key> = (0..4u8).map(|i| Key::from(blake3::hash(&[i]))).collect();
        let mut a = Flight::new(FlightOptions::default());
        assert_eq!(a.claim(&store, None, &keys[..2]), &keys[..2]);
        let again = a.claim(&store, None, &keys);
        assert_eq!(again, keys, "held keys and new ones alike are this run's");
        assert!(keys.iter().all(|k| !a.is_waiting(k)));
        // Another run still waits on all of them.
        let mut b = Flight::new(FlightOptions::default());
        assert!(b.claim(&store, None, &keys).is_empty());
    }
}
