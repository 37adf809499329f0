//! Content-exact restarts (`TrackerOptions::content`): besides the
//! namespace, the files written or whose attributes were set while nothing
//! watched get an `MTIME` or `SATTR` record, flagged `RECONCILED`.
//!
//! A file's ctime moves with every change to its inode, content or
//! attributes, and no call sets it back, so a file whose ctime is at or
//! after the moment the previous run last logged about the root changed
//! since (or just before: the margin makes a late change of the last run
//! count again rather than be missed). Its mtime says which record.
//! Directories are left out: their times move with their entries. Each
//! object gets one record, under its first name found, however many hard
//! links it has.

use std::collections::HashSet;

use weir_log::Log;

use super::root::Root;
use super::sink::Sink;
use crate::change::{Change, How};
use crate::id::ObjectId;
use crate::record;
use crate::rescan::Changed;
use crate::tree::Tree;

/// How far before the previous run's last record a change still counts:
/// the kernel's file times come from a coarse clock, and events still
/// queued when a run was killed were never logged.
const MARGIN_NS: u64 = 2_000_000_000;

/// The ctime from which files count as changed: the time of the last
/// filesystem record from `covered` on, less [`MARGIN_NS`].
pub(crate) fn horizon(log: &Log, covered: u64) -> weir_log::Result<(i64, u32)> {
    let mut reader = log.reader(covered.max(1)).with_mask(record::mask());
    let mut last = 0u64;
    while let Some(r) = reader.next_record()? {
        last = last.max(r.time_ns);
    }
    let t = last.saturating_sub(MARGIN_NS);
    let secs = i64::try_from(t / 1_000_000_000).unwrap_or(i64::MAX);
    Ok((secs, (t % 1_000_000_000) as u32))
}

/// Those of `changed` that `known` (the tree as logged, before the
/// comparison) holds, once each: the others are new, and their creation
/// says it all. A file whose ctime alone moved and that was renamed, or
/// gained or lost a link, is left out too: that moves the ctime, and its
/// RENME, HLINK or UNLNK says it.
pub(crate) fn known_changed(changed: Vec<Changed>, known: &Tree, live: &Tree) -> Vec<Changed> {
    let mut seen: HashSet<ObjectId> = HashSet::new();
    changed
        .into_iter()
        .filter(|c| known.contains(&c.id))
        .filter(|c| {
            c.written
                || (known
                    .lookup(&c.parent, &c.name)
                    .is_some_and(|e| e.id == c.id)
                    && known.links(&c.id) == live.links(&c.id))
        })
        .filter(|c| seen.insert(c.id.clone()))
        .collect()
}

impl Root {
    /// Logs an `MTIME` (written) or `SATTR` for each of `changed` still
    /// under its name in the tree; returns how many.
    pub(crate) fn log_content(&mut self, changed: Vec<Changed>, sink: &mut Sink) -> u64 {
        let mut n = 0;
        for c in changed {
            if self
                .tree
                .lookup(&c.parent, &c.name)
                .is_none_or(|e| e.id != c.id)
            {
                continue;
            }
            let (parent, name, id) = (c.parent, c.name.into_vec(), c.id);
            let change = if c.written {
                Change::Modify { parent, name, id }
            } else {
                Change::Attr { parent, name, id }
            };
            self.emit(change, How::Reconciled, sink);
            n += 1;
        }
        n
    }
}
