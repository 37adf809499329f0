//! The first reading when a previous table is given: replay the log's tail,
//! compare, log the differences as reconciled, then one MARK.

use std::sync::atomic::Ordering;

use super::emit::write;
use super::worker::Worker;
use crate::Result;
use crate::previous::{self, Previous};
use crate::table::Table;

impl Worker {
    /// Like `initial_read`, but the mounts that came, went or changed since
    /// `prev` was logged are logged too, each once, and the MARK says
    /// `mount table reconciled`. Runs before the thread starts, so before
    /// any event is applied.
    pub(super) fn initial_reconcile(&mut self, prev: Previous) -> Result<()> {
        self.rearm_pollpri();
        let fresh = self.read_fresh()?;
        let since = prev.log_index;
        let found = previous::reconcile(
            self.log.as_deref(),
            prev,
            &fresh,
            self.backend,
            self.opts.same_boot,
        )?;
        if let Some(gap) = found.gap {
            tracing::warn!(
                since,
                gap = gap.text(),
                "the mount checkpoint and the log do not meet: changes in between may be missed or repeated"
            );
        }
        let mounts = fresh.len().to_string();
        let changes = found.changes.len().to_string();
        let since_text = since.to_string();
        let replayed = found.replayed.to_string();
        let gap = found.gap.map(|g| g.text());
        let mut fields: Vec<(&'static str, &[u8])> = vec![
            ("mounts", mounts.as_bytes()),
            ("changes", changes.as_bytes()),
            ("since", since_text.as_bytes()),
            ("replayed", replayed.as_bytes()),
            ("ids", found.ids.text().as_bytes()),
        ];
        if let Some(g) = &gap {
            fields.push(("gap", g.as_bytes()));
        }
        let state = self.state.clone();
        {
            let mut st = write(&state);
            // The live reading itself, not the compared table: mounts that
            // compared equal keep the live values the log does not hold
            // (the old 32-bit ids of mounts attached in the tail).
            st.table = Table::from_mounts(fresh);
            self.stats.generation.fetch_add(1, Ordering::Release);
            self.record(&mut st, &found.changes);
            self.stats
                .reconciled
                .fetch_add(found.changes.len() as u64, Ordering::Relaxed);
            self.mark(&mut st, b"mount table reconciled", &fields);
        }
        self.stats.readings.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            changes = found.changes.len(),
            since,
            replayed = found.replayed,
            "mount table reconciled with the previous one"
        );
        self.notify(&found.changes);
        Ok(())
    }
}
