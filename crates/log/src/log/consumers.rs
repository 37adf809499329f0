//! The consumer side of [`Log`]: register, clear, deregister, list and
//! read, each change saved to `consumers.json` before it returns; what a
//! failed save means for the state in memory; and the store that holds
//! the set (`cursors`) behind its lock, and keeps that lock first.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::health::Poison;
use super::{Inner, Log, now_ns};
use crate::cursors::{ConsumerInfo, Consumers, SaveFailed};
use crate::error::{Error, Result};
use crate::fs::ReplaceError;
use crate::kind::TypeMask;
use crate::reader::Reader;

/// How long `Log::clear` waits for an index already handed out to be
/// committed: far above the flush interval, which bounds that wait, and
/// short enough that a log whose writes fail answers with an error.
const CLEAR_COMMIT_WAIT: Duration = Duration::from_secs(1);

/// The consumer set of an open log, behind its lock.
///
/// The lock comes before every other lock of the log: retention holds it
/// while it reads and updates the segment catalog, and a failed save
/// records the failure and wakes waiters under it. None of those hands
/// out a guard, and their locks are taken only inside their own methods
/// (see `catalog`), so none can be held while this one is taken.
#[derive(Debug)]
pub(crate) struct ConsumerStore(Mutex<Consumers>);

impl ConsumerStore {
    pub(crate) fn new(set: Consumers) -> ConsumerStore {
        ConsumerStore(Mutex::new(set))
    }

    /// Locks the set. Only the catalog, the health and the wakes may be
    /// used while the guard is held (see above).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Consumers> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    /// The error for a failed save of the consumer set, and whether the
    /// change reached the file (so memory keeps it, as readers in other
    /// processes see it). An fsync failure poisons the log.
    pub(crate) fn consumers_not_saved(&self, f: SaveFailed) -> (Error, bool) {
        match f.cause {
            ReplaceError::NotReplaced {
                source,
                fsync: false,
            } => (Error::io("write", f.path, source), false),
            ReplaceError::NotReplaced {
                source,
                fsync: true,
            } => {
                self.poison(Poison::Fsync(&source, "consumer state"));
                (Error::io("fsync", f.path, source), false)
            }
            ReplaceError::Unsynced(source) => {
                self.poison(Poison::Fsync(&source, "consumer state"));
                (Error::io("fsync", &self.dir, source), true)
            }
        }
    }
}

impl Log {
    /// Registers a consumer that reads the types in `mask`, starting after the
    /// last committed record. Returns its id.
    pub fn register(&self, name: &str, mask: TypeMask) -> Result<u32> {
        // Consumer changes are writes: a poisoned log refuses them too.
        self.inner.health.check_open()?;
        let mut c = self.inner.consumers.lock();
        let id = c.register(name, mask, self.inner.last_committed(), now_ns())?;
        self.save(&mut c, |c| {
            let _ = c.remove(name);
        })?;
        Ok(id)
    }

    /// Saves a change to the set; `undo` takes it back from memory when
    /// the file was not replaced (see [`Inner::consumers_not_saved`]).
    fn save(&self, c: &mut Consumers, undo: impl FnOnce(&mut Consumers)) -> Result<()> {
        let Err(f) = c.save(&*self.inner.opts.fs) else {
            return Ok(());
        };
        let (e, kept) = self.inner.consumers_not_saved(f);
        if !kept {
            undo(c);
        }
        Err(e)
    }

    /// Clears a consumer's records up to `upto` (0: everything committed).
    /// Returns the consumer as the clear left it, read under the same lock:
    /// a deregistration racing the call cannot make a clear that succeeded
    /// look like an unknown consumer.
    pub fn clear(&self, name: &str, upto: u64) -> Result<ConsumerInfo> {
        // Before the consumer lock, which retention takes on the committer.
        self.wait_committed(upto);
        self.inner.health.check_open()?;
        let mut c = self.inner.consumers.lock();
        let before = c.get(name)?.clone();
        let (last, now) = (self.inner.last_committed(), now_ns());
        c.clear(name, upto, last, now)?;
        self.save(&mut c, |c| c.restore(before))?;
        let info = c.info(c.get(name)?, last, now);
        drop(c);
        self.inner.signals.kick();
        Ok(info)
    }

    /// Waits, for at most [`CLEAR_COMMIT_WAIT`], until `upto` is
    /// committed if it has been handed out: a consumer may clear the index
    /// `append` just returned, which readers see within the flush interval.
    fn wait_committed(&self, upto: u64) {
        let inner = &self.inner;
        if upto <= inner.last_committed() || upto >= inner.ring.next() {
            return;
        }
        inner.signals.want_committed(upto);
        let deadline = Instant::now() + CLEAR_COMMIT_WAIT;
        while inner.last_committed() < upto && !inner.health.is_closing() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            inner
                .signals
                .wait_committed(upto, deadline - now, || inner.health.is_closing());
        }
    }

    /// Removes a consumer.
    pub fn deregister(&self, name: &str) -> Result<()> {
        self.inner.health.check_open()?;
        let mut c = self.inner.consumers.lock();
        let gone = c.remove(name)?;
        self.save(&mut c, |c| c.restore(gone))?;
        drop(c);
        self.inner.signals.kick();
        Ok(())
    }

    /// Lists the consumers with their lag.
    pub fn consumer_list(&self) -> Vec<ConsumerInfo> {
        let c = self.inner.consumers.lock();
        let (last, now) = (self.inner.last_committed(), now_ns());
        c.list().iter().map(|x| c.info(x, last, now)).collect()
    }

    /// Reads a consumer's records: from just after its cleared index, with
    /// its mask applied.
    pub fn consumer_reader(&self, name: &str) -> Result<Reader> {
        let c = self.inner.consumers.lock();
        let x = c.get(name)?;
        Ok(Reader::live(
            self.inner.clone(),
            x.cleared + 1,
            Some(x.mask.clone()),
        ))
    }
}
