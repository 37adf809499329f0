//! `weir fs watch`: the filesystem tracker in the foreground, until SIGINT
//! or SIGTERM.
//!
//! It opens the log as its writer, as `weir run` does, and lets the
//! tracker append a record for every change; it prints each change as a
//! line on stdout, flushed at once (unless `--quiet`). Once every root is
//! marked it says so on stderr (`weir: watching ...`): from then on no
//! change is missed. A tree too big to read within the start's budget is
//! read after that line, and a line `weir: read ROOT (N entries in S s)`
//! says when it is; its changes wait in the kernel's queue meanwhile. On a
//! terminal, a progress bar per root shows its long work (that reading, a
//! restart's reconciliation, the repair after lost events) as it goes, in
//! the words `weir status` uses. A stop first logs every change made
//! before it (the tracker's own barrier), then closes the log durably.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use std::io::IsTerminal as _;

use anyhow::{Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use weir_daemon::config::Writers;
use weir_fs::{OnChange, RootState, RootStatus, Tracker, TrackerOptions};
use weir_view::status::FsProgress;

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
    let mut bars = Bars::new(std::io::stderr().is_terminal(), reading.len());
    bars.show(&tracker.roots());
    while !stop.load(Ordering::Relaxed) && !tracker.is_finished() {
        std::thread::sleep(Duration::from_millis(100));
        let roots = tracker.roots();
        bars.show(&roots);
        if reading.iter().any(|&r| r) {
            for (i, r) in roots.iter().enumerate() {
                if reading.get(i) == Some(&true) && r.state != RootState::Reading {
                    reading[i] = false;
                    bars.println(format!(
                        "weir: read {} ({} entries in {:.3} s)",
                        r.path.display(),
                        r.entries,
                        started.elapsed().as_secs_f64()
                    ));
                }
            }
        }
    }
    bars.clear();
    let stopped = tracker.stop().context("the filesystem tracker failed");
    stopped.and(close_log(log))
}

/// A progress bar per root with long work under way, on a terminal; none
/// elsewhere (its lines then say it all).
struct Bars {
    multi: MultiProgress,
    shown: Vec<Option<ProgressBar>>,
    terminal: bool,
    /// Every bar's style, made once.
    style: ProgressStyle,
}

impl Bars {
    fn new(terminal: bool, roots: usize) -> Bars {
        let target = if terminal {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Bars {
            multi: MultiProgress::with_draw_target(target),
            shown: vec![None; roots],
            terminal,
            style: ProgressStyle::with_template("{prefix} {bar:30} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        }
    }

    /// Each root's bar as its progress stands: made when its work starts,
    /// gone when it ends.
    fn show(&mut self, roots: &[RootStatus]) {
        if !self.terminal {
            return;
        }
        for (r, slot) in roots.iter().zip(self.shown.iter_mut()) {
            let Some(p) = &r.progress else {
                if let Some(b) = slot.take() {
                    b.finish_and_clear();
                }
                continue;
            };
            let words = FsProgress::from(p).words();
            let bar = slot.get_or_insert_with(|| {
                let b = self.multi.add(ProgressBar::new(0));
                b.set_style(self.style.clone());
                b.set_prefix(r.path.display().to_string());
                b
            });
            bar.set_length(p.total.unwrap_or(0));
            bar.set_position(p.done);
            bar.set_message(words);
        }
    }

    /// A line above the bars (a hidden target would drop it, and scripts
    /// wait for these lines).
    fn println(&self, line: String) {
        if !self.terminal || self.multi.println(&line).is_err() {
            eprintln!("{line}");
        }
    }

    fn clear(&mut self) {
        for b in self.shown.iter_mut().filter_map(Option::take) {
            b.finish_and_clear();
        }
    }
}
