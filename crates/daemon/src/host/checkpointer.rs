//! The checkpointer: a thread that rewrites the inventory checkpoint every
//! `daemon.checkpoint_secs` when a tracker's generation has moved, and
//! refreshes the `STATUS=` line, which changes exactly then too.
//!
//! Each checkpoint is written only once the log is durable up to the
//! records it reflects (`Log::sync` after taking it): a checkpoint ahead of
//! the log would cover changes a crash may have lost, and the next start
//! would never log them. The first one is written at once, so the window
//! in which a crash makes the next start compare with an older checkpoint
//! is short (the trackers replay the log's tail after it anyway).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use tracing::{debug, warn};
use weir_log::Log;

use super::sources::Sources;
use crate::checkpoint;
use crate::notify;

/// The running checkpointer.
pub(crate) struct Checkpointer {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<()>,
}

/// What the thread needs.
pub(crate) struct Job {
    /// The checkpoint file.
    pub(crate) path: PathBuf,
    /// How often to look.
    pub(crate) interval: Duration,
    /// This boot's id, written into each checkpoint.
    pub(crate) boot_id: String,
    /// The log, synced before each write.
    pub(crate) log: Arc<Log>,
    /// The trackers.
    pub(crate) sources: Sources,
}

impl Checkpointer {
    /// Starts the thread; it writes a first checkpoint at once.
    pub(crate) fn start(job: Job) -> std::io::Result<Checkpointer> {
        let (stop, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("weir-checkpoint".into())
            .spawn(move || run(&job, &rx))?;
        Ok(Checkpointer { stop, thread })
    }

    /// Stops the thread and waits for it, so that it lets go of the
    /// trackers and the log.
    pub(crate) fn stop(self) {
        let _ = self.stop.send(());
        if self.thread.join().is_err() {
            warn!("the checkpoint thread panicked");
        }
    }
}

fn run(job: &Job, stop: &mpsc::Receiver<()>) {
    let mut written = None;
    loop {
        let now = job.sources.generations();
        if written != Some(now) {
            match write(job) {
                Ok(()) => written = Some(now),
                // Tried again at the next tick.
                Err(e) => {
                    warn!(error = %weir_view::chain::error_chain(&e), "cannot write the inventory checkpoint")
                }
            }
            notify::status(&job.sources.status_line());
        }
        match stop.recv_timeout(job.interval) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Takes a checkpoint, makes the log durable up to it, and writes it.
fn write(job: &Job) -> Result<(), crate::Error> {
    let c = job.sources.checkpoint(&job.boot_id, false);
    durable_write(&job.path, &job.log, &c)
}

/// Makes the log durable (so up to every record `c` reflects) and writes
/// `c`.
pub(crate) fn durable_write(
    path: &std::path::Path,
    log: &Log,
    c: &checkpoint::Checkpoint,
) -> Result<(), crate::Error> {
    log.sync().map_err(|source| crate::Error::Log {
        what: "syncing the log before a checkpoint",
        source,
    })?;
    checkpoint::write(path, c)?;
    debug!(path = %path.display(), clean = c.clean, "wrote the inventory checkpoint");
    Ok(())
}
