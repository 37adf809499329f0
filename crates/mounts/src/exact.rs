//! Exactness: is a tracker's table the kernel's, and does the log hold
//! exactly one record per mount and per unmount? The mount-storm benchmark
//! and the tests check a storm with this same code.
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

use weir_log::{LogRecord, Reader, RecordType};

use crate::record::{self, FLAG_COMPARE};
use crate::{Backend, Mount, Result};

/// The ids of a table.
pub fn ids(t: &[Mount]) -> BTreeSet<u64> {
    t.iter().map(|m| m.id).collect()
}

/// The ids in the kernel's table now, as `backend` names them. Only the ids
/// are needed, so the fanotify backend's listmount is not followed by a
/// statmount of every mount.
pub fn kernel_ids(backend: Backend) -> Result<BTreeSet<u64>> {
    Ok(match backend {
        Backend::Fanotify => weir_sys::listmount::listmount_all()?.into_iter().collect(),
        Backend::Mountinfo => ids(&crate::source::read_mountinfo()?),
    })
}

/// How a tracker's table differs from the kernel's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDiff {
    /// Mounts in the tracker's table.
    pub mine: usize,
    /// Mounts in the kernel's.
    pub kernel: usize,
    /// The first pair that differs, in id order; `None` when one table is
    /// a prefix of the other.
    pub first: Option<(Mount, Mount)>,
}

impl fmt::Display for TableDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "weir's table has {} mounts, the kernel's {}; first difference: ",
            self.mine, self.kernel
        )?;
        match &self.first {
            Some((a, b)) => write!(f, "weir has {a:?}, the kernel {b:?}"),
            None => f.write_str("one table is a prefix of the other"),
        }
    }
}

/// Compares a tracker's table, `mine` (`Tracker::mounts`), with `fresh`,
/// the kernel's read with [`crate::source::read_sorted`] after a `sync`
/// (so that every change made so far is in both). `None` when equal.
pub fn table_diff(mine: &[Mount], fresh: &[Mount]) -> Option<TableDiff> {
    if mine == fresh {
        return None;
    }
    Some(TableDiff {
        mine: mine.len(),
        kernel: fresh.len(),
        first: mine
            .iter()
            .zip(fresh)
            .find(|(a, b)| a != b)
            .map(|(a, b)| (a.clone(), b.clone())),
    })
}

/// The log's mount records, counted per id.
#[derive(Default, Debug)]
pub struct Tally {
    attach: HashMap<u64, u32>,
    detach: HashMap<u64, u32>,
    /// MOUNT_MOVE and MOUNT_CHANGE records, and mount records whose target
    /// is not an 8-byte id.
    pub other: u64,
    /// ATTACH or DETACH records found by a whole-table comparison (after an
    /// overflow, or by the mountinfo backend) rather than from an event.
    pub compared: u64,
}

impl Tally {
    /// Counts one record.
    pub fn add(&mut self, r: &LogRecord) {
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
    pub fn read(&mut self, reader: &mut Reader) -> weir_log::Result<u64> {
        let mut n = 0;
        while let Some(r) = reader.next_record()? {
            self.add(&r);
            n += 1;
        }
        Ok(n)
    }

    /// How many ids have at least one record of `kind` (cheap).
    pub fn distinct(&self, kind: RecordType) -> usize {
        self.map(kind).len()
    }

    /// How many of `ids` have at least one record of `kind`.
    pub fn covered(&self, kind: RecordType, ids: &BTreeSet<u64>) -> usize {
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
    pub fn check(&self, kind: RecordType, ids: &BTreeSet<u64>) -> LogCheck {
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
pub struct LogCheck {
    /// The record type checked.
    pub kind: RecordType,
    /// How many ids should have one record each.
    pub expected: usize,
    /// How many have exactly one.
    pub once: usize,
    /// How many have none.
    pub missing: usize,
    /// How many have more than one.
    pub duplicated: usize,
    /// Ids outside the expected set with a record of this kind.
    pub foreign: usize,
    /// MOUNT_MOVE and MOUNT_CHANGE records, and mount records whose target
    /// is not an 8-byte id.
    pub other: u64,
}

impl LogCheck {
    /// Exactly one record per mount and nothing else.
    pub fn ok(&self) -> bool {
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
