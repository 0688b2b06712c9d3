//! Compile locks: one `flock` per key, on an empty lock file beside the
//! record (`layout::lock_file_name`), so that processes of one machine
//! missing the same key do not both compile it.
//!
//! Owns: [`Claim`] (what trying a key's lock found) and [`KeyLock`] (an
//! open lock file, held or waited on); the kernel's lock
//! (`std::fs::File::try_lock`, which is `flock(LOCK_EX | LOCK_NB)`) is
//! released when its holder exits or dies, so a dead holder never blocks
//! anyone. A lock file is removed by its holder once the record is
//! written or could not be ([`KeyLock::finish`]); one a dead holder left stays until the next
//! compile of its key. Opening goes through `fs` (`O_NOFOLLOW`,
//! `O_NONBLOCK`).
//!
//! A waiter blocks on the lock ([`KeyLock::take_within`]: `flock` on a
//! thread of its own, so the wait ends the moment the holder releases the
//! lock or dies) for at most the bound its caller gives.
//!
//! Must never: block past the caller's bound (`crate::flight` keeps the
//! run's), fail a run (a lock file that cannot be
//! made or opened is [`Claim::Unavailable`]: the caller compiles as if no
//! one else were there), lock anything but a regular file, or remove a
//! lock file other than the one it holds.

use super::fs::{self as cfs, Identity, OFlags};
use super::layout::lock_file_name;
use super::record::Key;
use std::fs::{File, TryLockError};
use std::io;
use std::os::fd::OwnedFd;
use std::sync::mpsc;
use std::time::Duration;

/// What trying the compile lock of a key found.
pub enum Claim {
    /// This process holds the lock: it compiles the key.
    Mine(KeyLock),
    /// Another process holds it: wait (see [`KeyLock::try_take`]).
    Busy(KeyLock),
    /// No lock can be had (a read-only cache, a lock file that cannot be
    /// created or is not a regular file): compile without one.
    Unavailable,
}

/// A key's lock file, open; held or not.
pub struct KeyLock {
    file: File,
    shard: OwnedFd,
    name: String,
    identity: Identity,
    held: bool,
}

impl KeyLock {
    /// Opens (creating with `mode`) the lock file of `key` in the open
    /// `shard` and tries to lock it.
    pub(super) fn claim(shard: OwnedFd, key: &Key, mode: u32) -> Claim {
        let Ok(mut lock) = Self::open(shard, key, mode) else { return Claim::Unavailable };
        if lock.try_take() {
            Claim::Mine(lock)
        } else {
            Claim::Busy(lock)
        }
    }

    fn open(shard: OwnedFd, key: &Key, mode: u32) -> io::Result<KeyLock> {
        let name = lock_file_name(key);
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NONBLOCK;
        // Another user's lock file in a shared cache may not be writable
        // to us; a lock needs only an open file.
        let fd = match cfs::open_at(&shard, &name, flags, mode) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                cfs::open_read(&shard, &name).map(OwnedFd::from)?
            }
            other => other?,
        };
        let st = cfs::stat_fd(&fd)?;
        if !st.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a lock file is not a regular file"));
        }
        Ok(KeyLock { file: File::from(fd), shard, name, identity: st.identity(), held: false })
    }

    /// Tries to take the lock without blocking; whether it is held now.
    /// An error other than "held by another" counts as taken: the caller
    /// then compiles, today's behaviour without locks.
    pub fn try_take(&mut self) -> bool {
        if !self.held {
            self.held = !matches!(self.file.try_lock(), Err(TryLockError::WouldBlock));
        }
        self.held
    }

    /// Waits at most `bound` for the lock; whether it is held now. The
    /// wait is a blocking `flock` on a second descriptor of the same open
    /// file, on a thread of its own, so it ends the moment the holder
    /// releases the lock (or dies) rather than at the next poll. Past the
    /// bound the thread is left blocked; if it takes the lock later it
    /// gives it back at once, when its descriptor and this one are both
    /// closed (drop this `KeyLock` then). When no thread can be had the
    /// lock is only tried.
    pub fn take_within(&mut self, bound: Duration) -> bool {
        if self.held || self.try_take() || bound.is_zero() {
            return self.held;
        }
        let Ok(file) = self.file.try_clone() else { return self.try_take() };
        let (tx, rx) = mpsc::channel();
        let waiter = std::thread::Builder::new().name("kiln-lock-wait".into()).spawn(move || {
            // An error other than a wait (none is expected of a blocking
            // flock) counts as taken, as in `try_take`.
            let _ = file.lock();
            let _ = tx.send(());
        });
        if waiter.is_err() {
            return self.try_take();
        }
        self.held = rx.recv_timeout(bound).is_ok();
        self.held
    }

    /// Whether this process holds the lock.
    pub fn held(&self) -> bool {
        self.held
    }

    /// The record is stored (or could not be): removes the lock file (if it
    /// is still the one locked) and releases the lock. A process still
    /// waiting on the removed file takes its lock and finds the record (or
    /// none, and compiles).
    pub fn finish(self) {
        if self.held {
            let _ = cfs::remove_if_unchanged(&self.shard, &self.name, Some(self.identity));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::cache::lock::Claim;
    use crate::cache::store::tests::meta;
    use crate::cache::{HostScope, Key, Store, StoreOptions};

    fn store(dir: &std::path::Path, read_only: bool) -> Store {
        let scope = HostScope::new("x86_64-unknown-linux-gnu", "lock", ["+a"]);
        Store::open(dir, scope, StoreOptions { fsync: false, read_only, ..Default::default() }).unwrap()
    }

    #[test]
    fn one_holder_per_key_and_the_file_goes_with_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (store(dir.path(), false), store(dir.path(), false));
        let key = Key::from(blake3::hash(b"k"));
        let Claim::Mine(held) = a.claim(&key) else { panic!("the first claim holds") };
        let Claim::Busy(mut waiting) = b.claim(&key) else { panic!("the second waits") };
        assert!(!waiting.try_take() && !waiting.held());
        let lock_path = a.record_path(&key).with_extension("lock");
        assert!(lock_path.is_file());
        a.put(&key, &meta("t"), b"object").unwrap();
        held.finish();
        assert!(!lock_path.exists(), "the holder removes its lock file");
        // The waiter takes the lock of the removed file and finds the record.
        assert!(waiting.try_take());
        assert!(matches!(b.get(&key).unwrap(), crate::cache::Lookup::Hit(_)));
        // The scan and the size counters see the record only.
        let scan = crate::cache::scan::scan(a.root(), crate::cache::scan::Shards::All).unwrap();
        assert_eq!((scan.records().count(), scan.misplaced.len()), (1, 0));
    }

    #[test]
    fn a_dropped_holder_releases_and_leaves_no_block() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (store(dir.path(), false), store(dir.path(), false));
        let key = Key::from(blake3::hash(b"dead"));
        let Claim::Mine(held) = a.claim(&key) else { panic!("the first claim holds") };
        let Claim::Busy(mut waiting) = b.claim(&key) else { panic!("the second waits") };
        // A holder that dies without storing: the kernel releases it.
        drop(held);
        assert!(waiting.try_take());
        drop(waiting);
        assert!(matches!(b.claim(&key), Claim::Mine(_)), "a lock file left behind blocks no one");
    }

    #[test]
    fn a_waiter_takes_the_lock_when_its_holder_lets_go_and_not_before_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (store(dir.path(), false), store(dir.path(), false));
        let key = Key::from(blake3::hash(b"wait"));
        let Claim::Mine(held) = a.claim(&key) else { panic!("the first claim holds") };
        let Claim::Busy(mut waiting) = b.claim(&key) else { panic!("the second waits") };
        // The bound passes while the holder holds on.
        assert!(!waiting.take_within(std::time::Duration::from_millis(20)) && !waiting.held());
        drop(waiting);
        // A holder that finishes (or dies: its lock is dropped) wakes a
        // blocked waiter, long before the bound.
        let Claim::Busy(mut waiting) = b.claim(&key) else { panic!("still held") };
        let holder = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            drop(held);
        });
        assert!(waiting.take_within(std::time::Duration::from_secs(600)) && waiting.held());
        holder.join().unwrap();
        let Claim::Busy(_) = a.claim(&key) else { panic!("the waiter holds the lock now") };
    }

    #[test]
    fn a_read_only_cache_or_a_planted_directory_has_no_lock() {
        let dir = tempfile::tempdir().unwrap();
        let key = Key::from(blake3::hash(b"ro"));
        let a = store(dir.path(), false);
        assert!(matches!(store(dir.path(), true).claim(&key), Claim::Unavailable));
        let lock_path = a.record_path(&key).with_extension("lock");
        std::fs::create_dir_all(&lock_path).unwrap();
        assert!(matches!(a.claim(&key), Claim::Unavailable));
    }
}
