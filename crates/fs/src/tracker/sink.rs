//! Where changes go once applied: the log (one record each, appended on
//! weir-log's concurrent path) and the caller's callback.

use std::collections::HashMap;
use std::sync::Arc;

use weir_log::{Appended, Field, Log, Record, RecordType};

use crate::change::{Change, How};
use crate::record::{self, Paths};

/// Called on the tracker's thread for every change, after it is in the
/// tree and the log: the change, how it was found, its paths, and the
/// watched root's path.
pub type OnChange = Box<dyn FnMut(&Change, How, &Paths, &std::path::Path) + Send>;

/// The log and the callback, with what the appends returned.
pub(crate) struct Sink {
    log: Option<Arc<Log>>,
    on_change: Option<OnChange>,
    /// The last record appended, for a durable wait.
    pub(crate) last: Option<Appended>,
    /// The first append that failed since the last `sync()`.
    pub(crate) error: Option<weir_log::Error>,
    /// Records appended.
    pub(crate) records: u64,
    /// The index of each root's latest MARK, by the root's id: a since
    /// query finds the root by it, so retention must keep it.
    marks: HashMap<Vec<u8>, u64>,
}

impl Sink {
    pub(crate) fn new(log: Option<Arc<Log>>, on_change: Option<OnChange>) -> Sink {
        Sink {
            log,
            on_change,
            last: None,
            error: None,
            records: 0,
            marks: HashMap::new(),
        }
    }

    /// The index of the latest MARK about the root with id `target`.
    pub(crate) fn latest_mark(&self, target: &[u8]) -> Option<u64> {
        self.marks.get(target).copied()
    }

    pub(crate) fn log(&self) -> Option<&Arc<Log>> {
        self.log.as_ref()
    }

    /// Appends the record of `c` and tells the callback.
    pub(crate) fn change(&mut self, root: &std::path::Path, c: &Change, how: How, paths: &Paths) {
        if let Some(log) = &self.log {
            let r = record::with_record(c, how, paths, |r| log.append(r));
            self.appended(r);
        }
        self.records += 1;
        if let Some(f) = self.on_change.as_mut() {
            f(c, how, paths, root);
        }
    }

    /// Appends a MARK of this source: `name`, the root's id as target, and
    /// `fields` after `source=fs`.
    pub(crate) fn mark(&mut self, name: &[u8], target: &[u8], fields: &[(&str, &[u8])]) {
        let Some(log) = &self.log else { return };
        let mut fs = Vec::with_capacity(fields.len() + 1);
        fs.push(Field {
            key: "source",
            value: b"fs",
        });
        fs.extend(fields.iter().map(|(k, v)| Field { key: k, value: v }));
        let r = log.append(
            &Record::new(RecordType::MARK)
                .name(name)
                .target(target)
                .fields(&fs),
        );
        if let Ok(a) = &r {
            self.marks.insert(target.to_vec(), a.index());
        }
        self.appended(r);
    }

    fn appended(&mut self, r: weir_log::Result<Appended>) {
        match r {
            Ok(a) => self.last = Some(a),
            Err(e) => {
                tracing::error!(error = %e, "appending a filesystem record failed");
                self.error.get_or_insert(e);
            }
        }
    }
}
