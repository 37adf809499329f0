//! The crash tail: bringing a checkpointed table up to what the log says.
//!
//! A checkpoint is written from time to time, so after a crash the log may
//! hold records the checkpoint does not cover. Those changes were logged
//! already: they must be neither logged again nor lost. Replaying them, in
//! log order, onto the checkpoint's table gives the table as last logged,
//! which is what the live table must be compared with.
//!
//! Every record sets absolute values (a mount's whole description, its new
//! place, its new options), never a delta, so replaying a record whose
//! change the table already holds is harmless.

use std::collections::{BTreeSet, HashSet};

use weir_log::{Log, LogRecord, RecordType};

use super::Previous;
use crate::model::Mount;
use crate::record::{self, FLAG_GONE, decode};
use crate::table::Table;
use crate::{Error, Result};

/// The table as last logged, and what replaying found.
#[derive(Debug, Default)]
pub(crate) struct Logged {
    /// The table after every MOUNT_* record.
    pub(crate) table: Table,
    /// Ids whose mount is only partly known: a MOVE or CHANGE of a mount
    /// neither the checkpoint nor the tail describes, or a record that did
    /// not decode. Where such an id is still live, its live mount is taken
    /// as is.
    pub(crate) inexact: HashSet<u64>,
    /// Ids logged as attached and gone (`GONE`) whose detach was never
    /// logged: the pair is closed at restart.
    pub(crate) gone: BTreeSet<u64>,
    /// MOUNT_* records replayed.
    pub(crate) records: u64,
    /// The log and the checkpoint do not meet.
    pub(crate) gap: Option<Gap>,
}

/// How a checkpoint and its log can fail to meet. Either way the comparison
/// still runs, but changes in the missing records may be missed or repeated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gap {
    /// The log ends before the checkpoint's index: records the checkpoint
    /// covers were lost (appended, then a crash before they were written).
    LogEndsEarly {
        /// The log's last index.
        last: u64,
    },
    /// Retention deleted records after the checkpoint's index.
    LogStartsLate {
        /// The first index still in the log.
        first: u64,
    },
}

impl Gap {
    /// The MARK's `gap` field.
    pub(crate) fn text(self) -> String {
        match self {
            Gap::LogEndsEarly { last } => format!("log ends at {last}"),
            Gap::LogStartsLate { first } => format!("log starts at {first}"),
        }
    }
}

/// Replays the MOUNT_* records after `prev.log_index` onto `prev.mounts`.
pub(crate) fn replay(log: &Log, prev: Previous) -> Result<Logged> {
    let mut out = Logged {
        table: Table::from_mounts(prev.mounts),
        ..Logged::default()
    };
    let last = log.last_index();
    if last < prev.log_index {
        out.gap = Some(Gap::LogEndsEarly { last });
        return Ok(out);
    }
    let mut from = prev.log_index + 1;
    let first = log.first_index();
    if first > from && last >= from {
        out.gap = Some(Gap::LogStartsLate { first });
        from = first;
    }
    let mut reader = log.reader(from).with_mask(record::mask());
    loop {
        match reader.next_record() {
            Ok(Some(r)) => {
                out.records += 1;
                apply(&mut out, &r);
            }
            Ok(None) => break,
            // Retention may delete a segment while it is read.
            Err(weir_log::Error::Truncated { oldest, .. }) if oldest > reader.position() => {
                out.gap = Some(Gap::LogStartsLate { first: oldest });
                reader = log.reader(oldest).with_mask(record::mask());
            }
            Err(e) => return Err(Error::Log(e)),
        }
    }
    Ok(out)
}

/// Applies one record. A record that does not decode leaves its mount
/// marked inexact rather than failing the restart: the live mount (or, if
/// gone, what is known of it) stands in.
fn apply(out: &mut Logged, r: &LogRecord) {
    let Some(id) = record::mount_id(r) else {
        tracing::warn!(
            index = r.index,
            "a mount record without an 8-byte id; skipped"
        );
        return;
    };
    let gone = r.flags & FLAG_GONE != 0;
    match r.kind {
        RecordType::MOUNT_ATTACH if gone => {
            out.gone.insert(id);
        }
        RecordType::MOUNT_DETACH if gone => {
            out.gone.remove(&id);
        }
        RecordType::MOUNT_ATTACH => match decode::attached(r) {
            Ok(m) => {
                out.table.insert(m);
                out.inexact.remove(&id);
            }
            Err(e) => {
                tracing::warn!(index = r.index, error = %e, "a MOUNT_ATTACH record does not decode");
                out.table.insert(partial(id, r));
                out.inexact.insert(id);
            }
        },
        RecordType::MOUNT_DETACH => {
            out.table.remove(id);
            out.inexact.remove(&id);
        }
        _ => {
            let (mut m, known) = match out.table.remove(id) {
                Some(m) => (m, true),
                None => (partial(id, r), false),
            };
            if let Err(e) = decode::apply(&mut m, r) {
                tracing::warn!(index = r.index, error = %e, "a mount record does not decode");
                out.inexact.insert(id);
            } else if !known {
                out.inexact.insert(id);
            }
            out.table.insert(m);
        }
    }
}

/// What a record alone says of a mount: its id, place and, when the record
/// has them, source and type. The rest is empty.
fn partial(id: u64, r: &LogRecord) -> Mount {
    let parent = <[u8; 8]>::try_from(r.parent.as_slice()).map_or(0, u64::from_be_bytes);
    let field = |k: &str| r.field(k).unwrap_or_default().into();
    Mount {
        id,
        parent_id: parent,
        old_id: 0,
        old_parent_id: 0,
        major: 0,
        minor: 0,
        root: Box::default(),
        mount_point: r.name.as_slice().into(),
        fstype: field("fstype"),
        subtype: None,
        source: field("source"),
        flags: Default::default(),
        super_flags: Default::default(),
        fs_options: Box::default(),
        propagation: Default::default(),
    }
}
