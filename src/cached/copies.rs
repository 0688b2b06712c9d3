//! The local copies of the records the remote returned, made by one
//! thread of their own while the run goes on.
//!
//! Owns: [`LocalCopies`], the provider's one copy worker, fed in the order
//! the run learns things: the shard directories of the keys the local
//! store lacks, as soon as they are known (before the remote is even
//! asked), then the records of a kernel this process fetched and loaded,
//! together once the kernel is ready (one wake-up of the worker per
//! kernel, not one per record). A copy's costly steps are the new
//! directory and the new file (an inode each, `docs/performance.md`,
//! "Fleet"); on the worker they overlap the round trip to the remote, the
//! loads and the run instead of following them.
//!
//! Must never: write a record this process has not loaded (the caller
//! sends a record only once it loaded), sync a copy (a fetched record can
//! be fetched again; the rename still makes it appear whole, and a torn
//! one fails its checksum and is replaced), or outlive the provider:
//! [`LocalCopies::finish`] (at the latest, the provider's drop) waits for
//! every copy and returns each result.

use super::Job;
use crate::cache::{CacheError, Key, Store};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// One step of the copies, in the order the run sends them.
enum Step {
    /// Make the shard directories of keys the local store lacks.
    Shards(Vec<Key>),
    /// Write records the remote returned and this process loaded.
    Write(Vec<Arc<Job>>),
}

/// The worker: where its steps go, and the thread, which returns each
/// write's result.
type Worker = (Sender<Step>, JoinHandle<Vec<Result<(), CacheError>>>);

/// The copy worker of one provider, started by the first step sent after
/// a [`LocalCopies::finish`] (or ever).
pub(super) struct LocalCopies {
    store: Arc<Store>,
    worker: Option<Worker>,
    /// Steps left for [`LocalCopies::finish`]: no thread could be started,
    /// or the worker is gone.
    queued: Vec<Step>,
    /// Records to write, sent together by [`LocalCopies::flush`].
    pending: Vec<Arc<Job>>,
    /// Records sent since the last finish (what a warning counts).
    sent: usize,
}

/// Why [`LocalCopies::finish`] has no results: the worker panicked after
/// this many records were sent to it.
pub(super) struct Lost(pub usize);

impl LocalCopies {
    pub(super) fn new(store: Arc<Store>) -> LocalCopies {
        LocalCopies { store, worker: None, queued: Vec::new(), pending: Vec::new(), sent: 0 }
    }

    /// Makes the shard directories of `keys` in the background.
    pub(super) fn shards(&mut self, keys: Vec<Key>) {
        self.send(Step::Shards(keys));
    }

    /// Writes `job` into the local store in the background, with the
    /// next [`LocalCopies::flush`] (after the steps sent before it).
    pub(super) fn write(&mut self, job: Arc<Job>) {
        self.sent += 1;
        self.pending.push(job);
    }

    /// Sends the records [`LocalCopies::write`] kept to the worker.
    pub(super) fn flush(&mut self) {
        if !self.pending.is_empty() {
            let jobs = std::mem::take(&mut self.pending);
            self.send(Step::Write(jobs));
        }
    }

    fn send(&mut self, step: Step) {
        if self.worker.is_none() && self.queued.is_empty() {
            self.worker = self.spawn();
        }
        let step = match &self.worker {
            Some((tx, _)) => match tx.send(step) {
                Ok(()) => return,
                // The worker stopped (a write failed, or it panicked):
                // `finish` decides.
                Err(e) => e.0,
            },
            None => step,
        };
        self.queued.push(step);
    }

    fn spawn(&self) -> Option<Worker> {
        let (tx, rx) = channel();
        let store = self.store.clone();
        let thread = std::thread::Builder::new().name("kiln-cache-copy".into());
        let handle = thread.spawn(move || work(&store, rx)).ok()?;
        Some((tx, handle))
    }

    /// Waits for every copy sent so far (or makes the queued ones now):
    /// each write's result, in order; the first failure ends the writes
    /// (later ones are not tried).
    pub(super) fn finish(&mut self) -> Result<Vec<Result<(), CacheError>>, Lost> {
        self.flush();
        let sent = std::mem::take(&mut self.sent);
        let mut done = match self.worker.take() {
            Some((tx, handle)) => {
                drop(tx);
                handle.join().map_err(|_| Lost(sent))?
            }
            None => Vec::new(),
        };
        if done.iter().all(Result::is_ok) {
            done.extend(work(&self.store, self.queued.drain(..)));
        }
        self.queued.clear();
        Ok(done)
    }
}

/// Runs `steps` in order until a write fails: a shard directory that
/// cannot be made is left for its record's write to fail on (and say why).
fn work(store: &Store, steps: impl IntoIterator<Item = Step>) -> Vec<Result<(), CacheError>> {
    let mut done: Vec<Result<(), CacheError>> = Vec::new();
    for step in steps {
        match step {
            Step::Shards(keys) => {
                let _span = crate::trace::span("cache", "make shard directories", &format!("({} tasks)", keys.len()));
                keys.iter().for_each(|k| drop(store.make_shard_dir(k)));
            }
            Step::Write(jobs) => {
                for j in jobs {
                    let _span = crate::trace::span("cache", "copy a fetched record", &j.1.task);
                    let put = store.put_fetched(&j.0, &j.1, &j.2, j.3);
                    let failed = put.is_err();
                    done.push(put);
                    if failed {
                        return done;
                    }
                }
            }
        }
    }
    done
}
