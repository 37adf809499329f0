//! Logging what the worker applied: each change's record and the MARKs,
//! appended under the state's write lock; then the `on_change` callbacks,
//! after it.
//!
//! Appending under the lock keeps a checkpoint exact: the table never holds
//! a change whose record is not appended yet, nor is the index of a record
//! published before its change is in the table.

use std::sync::RwLock;
use std::sync::atomic::Ordering;

use weir_log::Appended;

use super::State;
use super::worker::Worker;
use crate::change::Change;
use crate::record;

impl Worker {
    /// Appends a MARK record from the tracker: the table was read whole
    /// (at the start, or after events were lost), so a consumer knows where
    /// the records stop being one per event.
    pub(super) fn mark(&mut self, st: &mut State, name: &[u8], extra: &[(&'static str, &[u8])]) {
        let Some(log) = self.log.clone() else { return };
        let backend = self.backend.to_string();
        let mut fields = vec![
            weir_log::Field {
                key: "source",
                value: b"mounts",
            },
            weir_log::Field {
                key: "backend",
                value: backend.as_bytes(),
            },
        ];
        fields.extend(
            extra
                .iter()
                .map(|(k, v)| weir_log::Field { key: k, value: v }),
        );
        let r = weir_log::Record::new(weir_log::RecordType::MARK)
            .name(name)
            .fields(&fields);
        let appended = log.append(&r);
        self.appended(st, appended, "a mount MARK record");
    }

    /// Logs changes just applied to `st.table`, still under its write lock,
    /// so that a checkpoint never holds a change whose record is not yet
    /// appended, nor the index of a record whose change it lacks.
    pub(super) fn record(&mut self, st: &mut State, changes: &[Change]) {
        if changes.is_empty() {
            return;
        }
        self.stats
            .changes
            .fetch_add(changes.len() as u64, Ordering::Relaxed);
        self.stats.generation.fetch_add(1, Ordering::Release);
        let Some(log) = self.log.clone() else { return };
        for c in changes {
            let appended = record::append(&log, c);
            self.appended(st, appended, "a mount record");
        }
    }

    /// Notes an append's outcome: the index the checkpoint covers, or the
    /// error the next `sync()` returns.
    fn appended(&mut self, st: &mut State, r: weir_log::Result<Appended>, what: &str) {
        match r {
            Ok(a) => {
                self.last_appended = Some(a);
                st.log_index = a.index();
            }
            Err(e) => {
                tracing::error!(error = %e, "appending {what} failed");
                self.log_error.get_or_insert(e);
            }
        }
    }

    /// Reports changes to `on_change`, after the lock is released: the
    /// callback may read the table.
    pub(super) fn notify(&mut self, changes: &[Change]) {
        if let Some(f) = &mut self.on_change {
            for c in changes {
                f(c);
            }
        }
    }
}

/// The state's write lock; a panic elsewhere does not make the table
/// unusable (every change to it is whole before the lock is released).
pub(super) fn write(state: &RwLock<State>) -> std::sync::RwLockWriteGuard<'_, State> {
    state.write().unwrap_or_else(|p| p.into_inner())
}
