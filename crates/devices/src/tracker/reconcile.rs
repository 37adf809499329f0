//! The start after a previous tracker: bring its state up to the end of
//! the log, compare it with the scan just made, and log the difference
//! flagged `SCAN | RECONCILED`, then a MARK that says how much was found.
//!
//! It runs before any uevent is taken, with the inventory's lock held, so
//! the records it appends are the first about this inventory.

use std::sync::atomic::Ordering;

use weir_log::{FLAG_RECONCILED, Log};

use super::Shared;
use super::stats::SharedStats;
use crate::Result;
use crate::change::Change;
use crate::previous::current::Current;
use crate::previous::diff::{Reconciled, diff};
use crate::previous::tail::{TailReport, catch_up};
use crate::previous::{Previous, State};
use crate::record::{self, FLAG_SCAN};

/// The flags of the records a restart's comparison writes.
pub(crate) const FLAGS: u16 = FLAG_SCAN | FLAG_RECONCILED;

/// Logs what changed between `prev` (and the records after it) and the
/// inventory in `st`; returns the changes, logged.
pub(super) fn reconcile(
    log: Option<&Log>,
    stats: &SharedStats,
    st: &mut Shared,
    prev: Previous,
) -> Result<Vec<Change>> {
    let since = prev.log_index;
    let mut state = State::of(prev);
    let tail = match log {
        Some(log) => catch_up(log, &mut state, since),
        None => TailReport::default(),
    };
    let found = diff(&state, &Current::of(&st.inv));
    if let Some(log) = log {
        for r in &found {
            st.last_index = append(log, r)?;
        }
        let incomplete = tail.incomplete || tail.error.is_some();
        let mark = record::mark(
            log,
            "block devices reconciled",
            &[
                ("changes", found.len().to_string().as_bytes()),
                ("since", since.to_string().as_bytes()),
                ("tail", tail.applied.to_string().as_bytes()),
                ("tail_bad", tail.bad.to_string().as_bytes()),
                ("tail_incomplete", if incomplete { b"1" } else { b"0" }),
            ],
        )?;
        st.last_index = mark.index();
    }
    tracing::info!(
        changes = found.len(),
        since,
        tail = tail.applied,
        "block devices reconciled with the previous state"
    );
    stats
        .reconciled
        .fetch_add(found.len() as u64, Ordering::Relaxed);
    Ok(found.into_iter().map(|r| r.change).collect())
}

/// Appends one reconciled change; returns its index.
pub(crate) fn append(log: &Log, r: &Reconciled) -> Result<u64> {
    let parent = r.parent.map(|p| p.to_be_bytes());
    let appended = record::append_flagged(log, &r.change, FLAGS, |_| parent)?;
    Ok(appended.index())
}
