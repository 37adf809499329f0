//! The spare segment: the next segment's file, zero-filled in the
//! background (see [`Preallocation`](crate::Preallocation)).
//!
//! Once the active segment is a quarter full (so a log opened for a few
//! records writes none), a short-lived thread creates `spare.wlog.tmp`,
//! reserves the segment's size, writes zeros through it and fsyncs it. The
//! committer's next roll renames the spare into place and writes its
//! header; a roll that finds the spare not ready yet creates the segment
//! with `fallocate` alone, as without zero fill, and the spare serves the
//! roll after. The name does not parse as a segment's, so recovery, readers
//! and `verify` never take a spare for one; opening the log removes a spare
//! left by a crash.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use crate::fs::{File, FileSystem, remove_if_present, write_all_at};

/// The spare's file name in the log directory.
pub(crate) const SPARE_FILE: &str = "spare.wlog.tmp";

/// Zeros are written in pieces of this size.
const ZERO_CHUNK: usize = 1 << 20;

/// The spare's path in `dir`.
pub(crate) fn spare_path(dir: &Path) -> PathBuf {
    dir.join(SPARE_FILE)
}

/// A spare being prepared, or prepared.
#[derive(Debug)]
pub(crate) struct Spare {
    job: JoinHandle<io::Result<Box<dyn File>>>,
}

impl Spare {
    /// Starts preparing a spare of `capacity` bytes in `dir`. `None` if
    /// no thread could be started (the log then goes on without one).
    pub(crate) fn start(fs: Arc<dyn FileSystem>, dir: &Path, capacity: u64) -> Option<Spare> {
        let path = spare_path(dir);
        let job = thread::Builder::new()
            .name("weir-log-spare".into())
            .spawn(move || prepare(&*fs, &path, capacity));
        match job {
            Ok(job) => Some(Spare { job }),
            Err(e) => {
                tracing::warn!(error = %e, "starting the spare segment's thread failed");
                None
            }
        }
    }

    /// Whether the spare is prepared (or failed).
    pub(crate) fn is_ready(&self) -> bool {
        self.job.is_finished()
    }

    /// The prepared file, waiting for it if need be.
    pub(crate) fn take(self) -> io::Result<Box<dyn File>> {
        self.job
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the spare segment's thread panicked")))
    }

    /// Waits for the spare and removes its file: a closed log holds no
    /// unused preallocation.
    pub(crate) fn discard(self, fs: &dyn FileSystem, dir: &Path) {
        drop(self.take());
        remove_stale(fs, dir);
    }
}

/// Removes a spare file from `dir`, if there is one.
pub(crate) fn remove_stale(fs: &dyn FileSystem, dir: &Path) {
    if let Err(e) = remove_if_present(fs, &spare_path(dir)) {
        tracing::warn!(dir = %dir.display(), error = %e, "removing the spare segment failed");
    }
}

/// Creates the spare afresh: reserve, zeros, fsync. On failure the file is
/// removed, and the roll that wanted it falls back to `fallocate`.
fn prepare(fs: &dyn FileSystem, path: &Path, capacity: u64) -> io::Result<Box<dyn File>> {
    remove_if_present(fs, path)?;
    let file = fs.create(path)?;
    let filled = (|| {
        // Reserved first: a full disk fails here, before any zero is written.
        file.allocate(capacity)?;
        let zeros = vec![0u8; ZERO_CHUNK];
        let mut off = 0;
        while off < capacity {
            let n = usize::try_from(capacity - off).map_or(ZERO_CHUNK, |n| n.min(ZERO_CHUNK));
            write_all_at(&*file, &zeros[..n], off)?;
            off += n as u64;
        }
        file.sync_all()
    })();
    match filled {
        Ok(()) => Ok(file),
        Err(e) => {
            drop(file);
            let _ = fs.remove(path);
            Err(e)
        }
    }
}
