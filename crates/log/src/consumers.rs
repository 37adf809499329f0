//! Consumers: named cursors with a type mask, persisted across reopen.
//!
//! A consumer reads from just after its cleared index and clears what it has
//! processed. The set lives in `consumers.json`, replaced by rename on every
//! change, so a reader in another process always sees a whole file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fs::{FileSystem, ReplaceError, read_file, replace_file};
use crate::kind::TypeMask;

/// The consumer state file name.
pub const CONSUMERS_FILE: &str = "consumers.json";
const STATE_VERSION: u32 = 1;

/// A consumer as listed by [`crate::Log::consumers`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerInfo {
    /// Numeric id, unique over the log's life.
    pub id: u32,
    /// The name it registered with.
    pub name: String,
    /// The types it reads.
    pub mask: TypeMask,
    /// Every index up to this one is cleared.
    pub cleared: u64,
    /// Records committed after `cleared`.
    pub lag: u64,
    /// Time since it registered or last cleared.
    pub idle: Duration,
    /// When it registered, ns since the epoch.
    pub registered_ns: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Saved {
    id: u32,
    name: String,
    mask: Vec<(u16, u16)>,
    cleared: u64,
    registered_ns: u64,
    last_active_ns: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct SavedFile {
    version: u32,
    next_id: u32,
    consumers: Vec<Saved>,
}

#[derive(Debug, Clone)]
pub(crate) struct Consumer {
    pub(crate) id: u32,
    pub(crate) name: String,
    pub(crate) mask: TypeMask,
    pub(crate) cleared: u64,
    pub(crate) registered_ns: u64,
    pub(crate) last_active_ns: u64,
    /// The time of the oldest record waiting for it (the one after
    /// `cleared`, the first field), as retention last read it: kept
    /// in memory only, so that a lagging consumer costs one read per clear.
    pub(crate) waiting_since: Option<(u64, u64)>,
}

/// A save of the consumer set that failed.
#[derive(Debug)]
pub(crate) struct SaveFailed {
    pub(crate) path: PathBuf,
    pub(crate) cause: ReplaceError,
}

/// The consumer set of one log.
#[derive(Debug)]
pub(crate) struct Consumers {
    path: PathBuf,
    next_id: u32,
    list: Vec<Consumer>,
    /// Changed since the last save that reached the file: what another
    /// process reads, and a reopen finds, may be behind.
    dirty: bool,
}

pub(crate) fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(Error::BadConsumerName(name.to_owned()))
    }
}

impl Consumers {
    /// Loads the set from `dir`, or an empty set if there is no file.
    pub(crate) fn load(fs: &dyn FileSystem, dir: &Path) -> Result<Consumers> {
        let path = dir.join(CONSUMERS_FILE);
        let Some(bytes) = read_file(fs, &path).map_err(|e| Error::io("read", &path, e))? else {
            return Ok(Consumers {
                path,
                next_id: 1,
                list: Vec::new(),
                dirty: false,
            });
        };
        let f: SavedFile =
            serde_json::from_slice(&bytes).map_err(|source| Error::BadConsumerState {
                path: path.clone(),
                source,
            })?;
        if f.version != STATE_VERSION {
            return Err(Error::UnsupportedVersion {
                path,
                found: f.version,
                supported: STATE_VERSION,
            });
        }
        let mut list = Vec::with_capacity(f.consumers.len());
        for s in f.consumers {
            check_name(&s.name)?;
            list.push(Consumer {
                id: s.id,
                mask: TypeMask::from_ranges(&s.mask),
                name: s.name,
                cleared: s.cleared,
                registered_ns: s.registered_ns,
                last_active_ns: s.last_active_ns,
                waiting_since: None,
            });
        }
        let next_id = f
            .next_id
            .max(list.iter().map(|c| c.id + 1).max().unwrap_or(1));
        Ok(Consumers {
            path,
            next_id,
            list,
            dirty: false,
        })
    }

    /// Writes the set to its file. Once the file is replaced the set is no
    /// longer dirty, even if the directory's fsync then failed: readers see
    /// it already.
    pub(crate) fn save(&mut self, fs: &dyn FileSystem) -> std::result::Result<(), SaveFailed> {
        let f = SavedFile {
            version: STATE_VERSION,
            next_id: self.next_id,
            consumers: self
                .list
                .iter()
                .map(|c| Saved {
                    id: c.id,
                    name: c.name.clone(),
                    mask: c.mask.ranges(),
                    cleared: c.cleared,
                    registered_ns: c.registered_ns,
                    last_active_ns: c.last_active_ns,
                })
                .collect(),
        };
        let bytes = serde_json::to_vec_pretty(&f).expect("consumer state serializes");
        let r = replace_file(fs, &self.path, &bytes);
        if !matches!(r, Err(ReplaceError::NotReplaced { .. })) {
            self.dirty = false;
        }
        r.map_err(|cause| SaveFailed {
            path: self.path.clone(),
            cause,
        })
    }

    /// Whether the set changed since it last reached its file.
    pub(crate) fn dirty(&self) -> bool {
        self.dirty
    }

    pub(crate) fn get(&self, name: &str) -> Result<&Consumer> {
        self.list
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| Error::UnknownConsumer(name.to_owned()))
    }

    pub(crate) fn list(&self) -> &[Consumer] {
        &self.list
    }

    /// The consumers, for retention's in-memory bookkeeping (see
    /// [`Consumer::waiting_since`]); what is saved is not changed here.
    pub(crate) fn list_mut(&mut self) -> &mut [Consumer] {
        &mut self.list
    }

    /// Moves `name`'s cleared index forward to `to`, past records its mask
    /// excludes (see `retention`). Saved with the next save.
    pub(crate) fn move_past(&mut self, name: &str, to: u64) {
        if let Some(c) = self.list.iter_mut().find(|c| c.name == name)
            && to > c.cleared
        {
            c.cleared = to;
            self.dirty = true;
        }
    }

    /// Adds a consumer that starts after `last` (it sees records from `last + 1`).
    pub(crate) fn register(
        &mut self,
        name: &str,
        mask: TypeMask,
        last: u64,
        now: u64,
    ) -> Result<u32> {
        check_name(name)?;
        if self.list.iter().any(|c| c.name == name) {
            return Err(Error::ConsumerExists(name.to_owned()));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.dirty = true;
        self.list.push(Consumer {
            id,
            name: name.to_owned(),
            mask,
            cleared: last,
            registered_ns: now,
            last_active_ns: now,
            waiting_since: None,
        });
        Ok(id)
    }

    /// Clears `name` up to `upto` (0 means everything up to `last`). Clearing
    /// backwards is a no-op. Returns whether anything changed.
    pub(crate) fn clear(&mut self, name: &str, upto: u64, last: u64, now: u64) -> Result<bool> {
        let upto = if upto == 0 { last } else { upto };
        if upto > last {
            return Err(Error::ClearBeyondEnd {
                requested: upto,
                last,
            });
        }
        let c = self
            .list
            .iter_mut()
            .find(|c| c.name == name)
            .ok_or_else(|| Error::UnknownConsumer(name.to_owned()))?;
        c.last_active_ns = now;
        if upto > c.cleared {
            c.cleared = upto;
        }
        self.dirty = true;
        Ok(true)
    }

    pub(crate) fn remove(&mut self, name: &str) -> Result<Consumer> {
        let at = self
            .list
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| Error::UnknownConsumer(name.to_owned()))?;
        self.dirty = true;
        Ok(self.list.remove(at))
    }

    /// Puts back a consumer's earlier state (after a failed save).
    pub(crate) fn restore(&mut self, c: Consumer) {
        match self.list.iter_mut().find(|x| x.name == c.name) {
            Some(x) => *x = c,
            None => {
                self.list.push(c);
                self.list.sort_by_key(|c| c.id);
            }
        }
    }

    /// Pulls every cleared index back to `last` at most. After a power cut
    /// the log may end before a consumer's cursor; the indexes past the end
    /// will be given to new records, which the consumer must not skip.
    /// Returns the names of the consumers moved.
    pub(crate) fn clamp_to(&mut self, last: u64) -> Vec<String> {
        let mut moved = Vec::new();
        for c in self.list.iter_mut().filter(|c| c.cleared > last) {
            c.cleared = last;
            moved.push(c.name.clone());
            self.dirty = true;
        }
        moved
    }

    /// The lowest cleared index, or `None` without consumers.
    pub(crate) fn min_cleared(&self) -> Option<u64> {
        self.list.iter().map(|c| c.cleared).min()
    }

    /// The most idle consumer among those that still need `index`: oldest
    /// last activity first, then furthest behind.
    pub(crate) fn most_idle_needing(&self, index: u64) -> Option<&Consumer> {
        self.list
            .iter()
            .filter(|c| c.cleared < index)
            .min_by_key(|c| (c.last_active_ns, c.cleared))
    }

    pub(crate) fn info(&self, c: &Consumer, last: u64, now: u64) -> ConsumerInfo {
        ConsumerInfo {
            id: c.id,
            name: c.name.clone(),
            mask: c.mask.clone(),
            cleared: c.cleared,
            lag: last.saturating_sub(c.cleared),
            idle: Duration::from_nanos(now.saturating_sub(c.last_active_ns)),
            registered_ns: c.registered_ns,
        }
    }
}

/// Reads the consumer list of a log directory without opening the log
/// (for readers in other processes).
pub fn read_consumers(
    fs: &dyn FileSystem,
    dir: &Path,
    last: u64,
    now: u64,
) -> Result<Vec<ConsumerInfo>> {
    let c = Consumers::load(fs, dir)?;
    Ok(c.list.iter().map(|x| c.info(x, last, now)).collect())
}
