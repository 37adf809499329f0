//! The baseline log that weir is compared with: one global lock around
//! index assignment, encoding and `pwrite` (and `fdatasync` in durable
//! mode), which is how Lustre's llog appends changelog records. It writes
//! the very frames weir writes (`weir_log::codec::encode`), so both logs
//! move the same bytes.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use weir_log::{Record, codec};

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The baseline: one lock around index assignment, encoding and `pwrite`,
/// which is how Lustre's llog appends a changelog record.
pub(crate) struct MutexLog {
    state: Mutex<MutexState>,
}

struct MutexState {
    file: File,
    offset: u64,
    next_index: u64,
}

impl MutexLog {
    /// Creates the log file.
    pub(crate) fn create(path: &Path) -> Result<MutexLog> {
        let file = File::create_new(path).with_context(|| format!("create {}", path.display()))?;
        Ok(MutexLog {
            state: Mutex::new(MutexState {
                file,
                offset: 0,
                next_index: 1,
            }),
        })
    }

    /// Appends one record: encode and write it under the lock. With `sync`,
    /// also `fdatasync` under the lock.
    pub(crate) fn append(&self, r: &Record<'_>, sync: bool) -> Result<()> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let frame = codec::encode(r, s.next_index, now_ns())?;
        s.file.write_all_at(&frame, s.offset)?;
        if sync {
            s.file.sync_data()?;
        }
        s.offset += frame.len() as u64;
        s.next_index += 1;
        Ok(())
    }

    /// Records appended so far.
    pub(crate) fn records(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .next_index
            - 1
    }
}
