//! What the foreground trackers (`weir mounts watch`, `weir devices watch`)
//! share: a line per change on stdout, flushed at once so a pipe sees it
//! when it happens, and closing the log durably once the tracker has let go
//! of it.

use std::io::Write;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};

/// Prints `line` and a newline on stdout, flushed even into a pipe.
pub(super) fn print_line(line: &str) -> std::io::Result<()> {
    let mut out = crate::stdout::lock();
    writeln!(out, "{line}")?;
    out.flush()
}

/// Closes the log durably; the tracker must have stopped and dropped its
/// handle.
pub(super) fn close_log(log: Arc<weir_log::Log>) -> Result<()> {
    let log = Arc::try_unwrap(log).map_err(|_| anyhow!("the log is still in use"))?;
    log.close().context("closing the log")
}
