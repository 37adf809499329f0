//! `weir fs watch`: the filesystem tracker in the foreground, until SIGINT
//! or SIGTERM.
//!
//! It opens the log as its writer, as `weir run` does, and lets the
//! tracker append a record for every change; it prints each change as a
//! line on stdout, flushed at once (unless `--quiet`). Once every root is
//! marked it says so on stderr (`weir: watching ...`): from then on no
//! change is missed. A tree too big to read within the start's budget is
//! read after that line, and a line `weir: read ROOT (N entries in S s)`
//! says when it is; its changes wait in the kernel's queue meanwhile. A stop first logs every change made before it
//! (the tracker's own barrier), then closes the log durably.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use weir_daemon::config::Writers;
use weir_fs::{OnChange, RootState, Tracker, TrackerOptions};

use super::foreground::{close_log, print_line};
use crate::cli::FsWatchArgs;
use crate::signals;
use crate::state_dir::StateDir;
use weir_view::fs_line::change_line;

pub(super) fn watch(state: &StateDir, args: &FsWatchArgs) -> Result<()> {
    let stop = signals::stop_flag()?;
    // The tracker's thread is the log's one writer.
    let log = Arc::new(state.open_writer_for(Writers::One)?);
    let opts = TrackerOptions {
        roots: args.roots.clone(),
        mtime_interval: args.mtime_interval(),
        resume: !args.fresh,
        index: Some(state.root().join(weir_fs::INDEX_FILE)),
        content: args.content,
        ..TrackerOptions::default()
    };
    let on_change: Option<OnChange> = if args.quiet {
        None
    } else {
        let stop_on_close: Arc<AtomicBool> = stop.clone();
        Some(Box::new(move |c, how, paths, _root| {
            if print_line(&change_line(c, how, paths)).is_err() {
                // The reader went away (`| head`): end as on a signal.
                stop_on_close.store(true, Ordering::Relaxed);
            }
        }))
    };
    let tracker = match Tracker::start(Some(log.clone()), opts, on_change) {
        Ok(t) => t,
        Err(e) => {
            if let Err(c) = close_log(log) {
                tracing::warn!(error = format!("{c:#}"), "closing the log");
            }
            return Err(anyhow::Error::new(e).context("starting the filesystem tracker"));
        }
    };
    let started = Instant::now();
    let mut reading: Vec<bool> = tracker
        .roots()
        .iter()
        .map(|r| r.state == RootState::Reading)
        .collect();
    for r in tracker.roots() {
        let size = if r.state == RootState::Reading {
            "reading the tree".to_owned()
        } else {
            format!("{} entries", r.entries)
        };
        eprintln!(
            "weir: watching {} ({}, {} mark, {size})",
            r.path.display(),
            r.fstype,
            r.mark,
        );
    }
    while !stop.load(Ordering::Relaxed) && !tracker.is_finished() {
        std::thread::sleep(Duration::from_millis(100));
        if reading.iter().any(|&r| r) {
            for (i, r) in tracker.roots().iter().enumerate() {
                if reading.get(i) == Some(&true) && r.state != RootState::Reading {
                    reading[i] = false;
                    eprintln!(
                        "weir: read {} ({} entries in {:.3} s)",
                        r.path.display(),
                        r.entries,
                        started.elapsed().as_secs_f64()
                    );
                }
            }
        }
    }
    let stopped = tracker.stop().context("the filesystem tracker failed");
    stopped.and(close_log(log))
}
