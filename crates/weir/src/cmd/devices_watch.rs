//! `weir devices watch`: the device tracker in the foreground, until SIGINT
//! or SIGTERM.
//!
//! It opens the log as its writer, exactly as `weir run` does, and lets the
//! tracker append a DEVICE_*, PV_* or VG_* record for every change; it also
//! prints each change as a line on stdout, flushed at once. Once the first
//! scan is done and uevents are flowing, it says so on stderr (`weir:
//! watching block devices (...)`), so a script knows when it may start.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use weir_devices::{Change, OnChange, Tracker, TrackerOptions};

use super::foreground::{close_log, print_line};
use super::lvm::filter;
use crate::cli::DevicesWatchArgs;
use crate::signals;
use crate::state_dir::StateDir;
use weir_view::devices_line::change_line;

pub(super) fn watch(state: &StateDir, args: &DevicesWatchArgs) -> Result<()> {
    let stop = signals::stop_flag()?;
    let on_vg_complete = match &args.on_vg_complete {
        Some(cmd) => {
            let argv: Vec<String> = cmd.split_whitespace().map(str::to_owned).collect();
            if argv.is_empty() {
                bail!("--on-vg-complete: the command is empty");
            }
            Some(argv)
        }
        None => None,
    };
    let opts = TrackerOptions {
        filter: filter(&args.filter)?,
        on_vg_complete,
        ..TrackerOptions::default()
    };
    let log = Arc::new(state.open_writer()?);
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
            if let Err(c) = close_log(log) {
                tracing::warn!(error = format!("{c:#}"), "closing the log");
            }
            return Err(anyhow::Error::new(e).context("starting the device tracker"));
        }
    };
    let (devices, pvs, vgs) =
        tracker.with_inventory(|inv| (inv.devices().count(), inv.pv_count(), inv.vgs().len()));
    let groups = tracker.groups();
    eprintln!(
        "weir: watching block devices ({devices} devices, {pvs} PVs, {vgs} VGs; {} uevents)",
        if groups.udev { "udev" } else { "kernel" }
    );

    while !stop.load(Ordering::Relaxed) && !tracker.is_finished() {
        std::thread::sleep(Duration::from_millis(100));
    }
    let stopped = tracker.stop().context("the device tracker failed");
    stopped.and(close_log(log))
}
