//! `weir mounts watch`: the mount tracker in the foreground, until SIGINT
//! or SIGTERM.
//!
//! It opens the log as its writer, exactly as `weir run` does, and lets the
//! tracker append a MOUNT_* record for every change; it also prints each
//! change as a line on stdout, flushed at once, so a pipe sees it when it
//! happens. A closed stdout stops it like a signal. The backend, and why
//! `auto` fell back, always goes to stderr: a watcher that silently polls
//! is worth knowing about.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};
use weir_mounts::{Change, OnChange, Tracker, TrackerOptions};

use super::foreground::{close_log, print_line};
use super::mounts::fallback_note;
use crate::cli::MountsWatchArgs;
use crate::signals;
use crate::state_dir::StateDir;
use weir_view::mounts_line::change_line;

pub(super) fn watch(state: &StateDir, args: &MountsWatchArgs) -> Result<()> {
    // Handlers first, as in `weir run`: a signal must stop us cleanly.
    let stop = signals::stop_flag()?;
    let log = Arc::new(state.open_writer()?);
    let opts = TrackerOptions {
        backend: args.backend,
        budget: args.budget / 100.0,
        audit_interval: (args.audit_secs > 0).then(|| Duration::from_secs(args.audit_secs)),
        ..TrackerOptions::default()
    };
    let stop_on_close = stop.clone();
    let on_change: OnChange = Box::new(move |c: &Change| {
        if print_line(&change_line(c)).is_err() {
            // The reader went away (`| head`): end as on a signal.
            stop_on_close.store(true, Ordering::Relaxed);
        }
    });
    let tracker = match Tracker::start(Some(log.clone()), opts, Some(on_change)) {
        Ok(t) => t,
        Err(e) => {
            // The tracker's error is the one to report; the log still
            // closes durably.
            if let Err(c) = close_log(log) {
                tracing::warn!(error = format!("{c:#}"), "closing the log");
            }
            return Err(anyhow::Error::new(e).context("starting the mount tracker"));
        }
    };
    let why = fallback_note(tracker.fallback_reason());
    eprintln!(
        "weir: watching mounts with the {} backend{why}",
        tracker.backend()
    );

    // Until a signal, a closed stdout, or the tracker's own end (an error
    // it cannot recover from, reported by `stop`).
    while !stop.load(Ordering::Relaxed) && !tracker.is_finished() {
        std::thread::sleep(Duration::from_millis(100));
    }
    let stopped = tracker.stop().context("the mount tracker failed");
    stopped.and(close_log(log))
}
