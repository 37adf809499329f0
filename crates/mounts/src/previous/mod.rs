//! Restarting without losing changes: the table as last logged
//! ([`Previous`]), and what a starting tracker logs about the time nothing
//! watched.
//!
//! A daemon checkpoints [`crate::Tracker::checkpoint`] now and then. On the
//! next start the tracker replays the log's MOUNT_* records after the
//! checkpoint ([`tail`]: the crash window), compares the result with a fresh
//! reading and logs each difference once, flagged
//! `COMPARE | weir_log::FLAG_RECONCILED`. Records already in the log are
//! never logged again, and nothing that happened while down is missed.

mod tail;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use weir_log::Log;

pub(crate) use self::tail::Gap;
use self::tail::Logged;
use crate::Result;
use crate::backend::Backend;
use crate::change::{Attrs, Change, ChangeKind, Seen};
use crate::model::Mount;
use crate::table::Table;

/// The mount table as last logged: every MOUNT_* record with an index up to
/// `log_index` is reflected in `mounts`, and none after it.
///
/// [`crate::Tracker::checkpoint`] makes one; [`crate::TrackerOptions`]'s
/// `previous` takes it back at the next start. Write it to disk only once
/// the log is durable up to `log_index` (`Log::wait_durable` or
/// `Log::sync`): a checkpoint ahead of the log covers changes whose records
/// a crash may have lost, and those would never be logged.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Previous {
    /// The mounts, sorted by id.
    pub mounts: Vec<Mount>,
    /// The index of the last record the tracker had appended (0: none, or
    /// no log).
    pub log_index: u64,
}

/// Whether the previous table's ids can be compared with live ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ids {
    /// Same boot, same kind of id.
    Compared,
    /// Another boot: ids start over, so every old mount is detached and
    /// every live one attached.
    OtherBoot,
    /// The previous run used the other backend, whose ids are of another
    /// kind (unique 64-bit ids against mountinfo's): as for another boot.
    OtherBackend,
}

impl Ids {
    /// The MARK's `ids` field.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Ids::Compared => "compared",
            Ids::OtherBoot => "other boot",
            Ids::OtherBackend => "other backend",
        }
    }
}

/// What a restart found.
#[derive(Debug)]
pub(crate) struct Reconciled {
    /// The changes to log, in replay order.
    pub(crate) changes: Vec<Change>,
    /// MOUNT_* records replayed from the log after the checkpoint.
    pub(crate) replayed: u64,
    /// Whether ids were compared.
    pub(crate) ids: Ids,
    /// The checkpoint and the log did not meet.
    pub(crate) gap: Option<Gap>,
}

/// The changes between `prev` (brought up to the log's end, when there is a
/// log) and `fresh`, a reading of `backend`'s source. `same_boot`: the
/// caller knows `prev` was taken in this boot.
pub(crate) fn reconcile(
    log: Option<&Log>,
    prev: Previous,
    fresh: &[Mount],
    backend: Backend,
    same_boot: bool,
) -> Result<Reconciled> {
    let ids = if !same_boot {
        Ids::OtherBoot
    } else if id_kind(&prev.mounts).is_some_and(|k| k != backend) {
        Ids::OtherBackend
    } else {
        Ids::Compared
    };
    let Logged {
        mut table,
        inexact,
        gone,
        records,
        gap,
    } = match log {
        Some(log) => tail::replay(log, prev)?,
        None => Logged {
            table: Table::from_mounts(prev.mounts),
            ..Logged::default()
        },
    };
    let seen = Seen::Reconcile;
    // An attach logged as gone is always followed by its detach; a stop
    // between the two would leave it open for ever.
    let mut changes: Vec<Change> = gone
        .into_iter()
        .map(|id| Change {
            kind: ChangeKind::DetachGone { id },
            seen,
        })
        .collect();
    if ids == Ids::Compared {
        // Where the log says too little about a mount that is still there,
        // the live one stands in: no record rather than a guessed one.
        let live: HashMap<u64, &Mount> = fresh.iter().map(|m| (m.id, m)).collect();
        for id in inexact {
            if let Some(m) = live.get(&id) {
                table.insert((*m).clone());
            }
        }
        let identity = match backend {
            Backend::Fanotify => Attrs::IDENTITY,
            Backend::Mountinfo => Attrs::IDENTITY.with(Attrs::PLACE).with(Attrs::SOURCE),
        };
        changes.extend(table.reconcile_by(fresh.to_vec(), identity, seen));
    } else {
        changes.extend(table.reconcile_by(Vec::new(), Attrs::IDENTITY, seen));
        changes.extend(Table::default().reconcile_by(fresh.to_vec(), Attrs::IDENTITY, seen));
    }
    Ok(Reconciled {
        changes,
        replayed: records,
        ids,
        gap,
    })
}

/// Which backend's ids a table has, `None` when empty. A mountinfo reading
/// has `id == old_id` for every mount; listmount's unique ids start at
/// 2^31, above every old id, so a statmount reading never has it.
fn id_kind(mounts: &[Mount]) -> Option<Backend> {
    if mounts.is_empty() {
        return None;
    }
    let mountinfo = mounts.iter().all(|m| m.id == u64::from(m.old_id));
    Some(if mountinfo {
        Backend::Mountinfo
    } else {
        Backend::Fanotify
    })
}
