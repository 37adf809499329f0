//! Exactness: is weir's table the kernel's, and does the log hold exactly
//! one record per mount and per unmount?
//!
//! The kernel is read afresh with the source of the backend under test
//! (listmount + statmount for fanotify, mountinfo for mountinfo: their ids
//! differ), and both tables are compared whole, sorted by id. The log is
//! tallied record by record: for each mount id, how many ATTACH and how many
//! DETACH records name it (target = 8-byte big-endian id). A phase is exact
//! when each of its mounts has exactly one record of the phase's kind and no
//! other mount has any, and no other mount record (move, change) appeared.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use anyhow::Result;
use weir_log::{LogRecord, Reader, RecordType};
use weir_mounts::record::{self, FLAG_COMPARE};
use weir_mounts::{Backend, Mount, Tracker};

/// The ids of a table.
pub(crate) fn ids(t: &[Mount]) -> BTreeSet<u64> {
    t.iter().map(|m| m.id).collect()
}

/// The ids in the kernel's table now, as `backend` names them. Only the ids
/// are needed, so the fanotify backend's listmount is not followed by a
/// statmount of every mount.
pub(crate) fn kernel_ids(backend: Backend) -> Result<BTreeSet<u64>> {
    Ok(match backend {
        Backend::Fanotify => weir_sys::listmount::listmount_all()?.into_iter().collect(),
        Backend::Mountinfo => ids(&weir_mounts::source::read_mountinfo()?),
    })
}

/// Compares the tracker's table with `fresh`, the kernel's read with
/// `weir_mounts::source::read_sorted` after a `sync` (so that every change
/// made so far is in both). `None` when equal, else the first difference.
pub(crate) fn table_diff(tracker: &Tracker, fresh: &[Mount]) -> Option<String> {
    let mine = tracker.mounts();
    if mine == fresh {
        return None;
    }
    let first = mine.iter().zip(fresh).find(|(a, b)| a != b).map_or_else(
        || "one table is a prefix of the other".to_owned(),
        |(a, b)| format!("weir has {a:?}, the kernel {b:?}"),
    );
    Some(format!(
        "weir's table has {} mounts, the kernel's {}; first difference: {first}",
        mine.len(),
        fresh.len()
    ))
}

/// The log's mount records, counted per id.
#[derive(Default, Debug)]
pub(crate) struct Tally {
    attach: HashMap<u64, u32>,
    detach: HashMap<u64, u32>,
    /// MOUNT_MOVE and MOUNT_CHANGE records, and mount records whose target
    /// is not an 8-byte id.
    pub(crate) other: u64,
    /// ATTACH or DETACH records found by a whole-table comparison (after an
    /// overflow, or by the mountinfo backend) rather than from an event.
    pub(crate) compared: u64,
}

impl Tally {
    /// Counts one record.
    pub(crate) fn add(&mut self, r: &LogRecord) {
        let map = match r.kind {
            RecordType::MOUNT_ATTACH => &mut self.attach,
            RecordType::MOUNT_DETACH => &mut self.detach,
            RecordType::MOUNT_MOVE | RecordType::MOUNT_CHANGE => {
                self.other += 1;
                return;
            }
            _ => return,
        };
        let Some(id) = record::mount_id(r) else {
            self.other += 1;
            return;
        };
        *map.entry(id).or_default() += 1;
        if r.flags & FLAG_COMPARE != 0 {
            self.compared += 1;
        }
    }

    /// Counts every record `reader` has now; returns how many it read.
    pub(crate) fn read(&mut self, reader: &mut Reader) -> Result<u64> {
        let mut n = 0;
        while let Some(r) = reader.next_record()? {
            self.add(&r);
            n += 1;
        }
        Ok(n)
    }

    /// How many ids have at least one record of `kind` (cheap).
    pub(crate) fn distinct(&self, kind: RecordType) -> usize {
        self.map(kind).len()
    }

    /// How many of `ids` have at least one record of `kind`.
    pub(crate) fn covered(&self, kind: RecordType, ids: &BTreeSet<u64>) -> usize {
        let m = self.map(kind);
        ids.iter().filter(|id| m.contains_key(id)).count()
    }

    fn map(&self, kind: RecordType) -> &HashMap<u64, u32> {
        if kind == RecordType::MOUNT_DETACH {
            &self.detach
        } else {
            &self.attach
        }
    }

    /// Checks that `ids` have exactly one record of `kind` each, and that
    /// no other id has any.
    pub(crate) fn check(&self, kind: RecordType, ids: &BTreeSet<u64>) -> LogCheck {
        let m = self.map(kind);
        let mut c = LogCheck {
            kind,
            expected: ids.len(),
            once: 0,
            missing: 0,
            duplicated: 0,
            foreign: 0,
            other: self.other,
        };
        for id in ids {
            match m.get(id).copied().unwrap_or(0) {
                0 => c.missing += 1,
                1 => c.once += 1,
                _ => c.duplicated += 1,
            }
        }
        c.foreign = m.keys().filter(|id| !ids.contains(id)).count();
        c
    }
}

/// The outcome of [`Tally::check`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogCheck {
    kind: RecordType,
    pub(crate) expected: usize,
    pub(crate) once: usize,
    pub(crate) missing: usize,
    pub(crate) duplicated: usize,
    /// Ids outside the storm with a record of this kind.
    pub(crate) foreign: usize,
    pub(crate) other: u64,
}

impl LogCheck {
    /// Exactly one record per mount and nothing else.
    pub(crate) fn ok(&self) -> bool {
        self.once == self.expected
            && self.missing == 0
            && self.duplicated == 0
            && self.foreign == 0
            && self.other == 0
    }
}

impl fmt::Display for LogCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind.name().unwrap_or("?");
        if self.ok() {
            write!(f, "{} x{} exactly once", kind, self.once)
        } else {
            write!(
                f,
                "{kind}: {} of {} exactly once, {} missing, {} duplicated, {} for other ids, {} move/change records",
                self.once, self.expected, self.missing, self.duplicated, self.foreign, self.other
            )
        }
    }
}
