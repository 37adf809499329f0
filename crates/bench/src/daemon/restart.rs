//! Restart: the daemon is stopped, 50 mounts are made and 20 PV loop
//! devices attached while it is down, and it is started again. Every one
//! of those changes must be in the log exactly once, flagged RECONCILED:
//! a MOUNT_ATTACH per mount point and a PV_FOUND per PV uuid.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use weir_log::{FLAG_RECONCILED, Reader, RecordType};

use super::child::Daemon;
use crate::loopdev::run_tool;
use crate::lvm::fleet::Fleet;
use crate::storm::driver::{Loop, Workspace};

/// What the restart found.
#[derive(Debug, Default)]
pub(crate) struct Restart {
    pub(crate) mounts: usize,
    pub(crate) pvs: usize,
    /// Mount points with exactly one reconciled MOUNT_ATTACH.
    pub(crate) mounts_reconciled: usize,
    /// PV uuids with exactly one reconciled PV_FOUND.
    pub(crate) pvs_reconciled: usize,
    /// Reconciled records about our objects beyond one each.
    pub(crate) duplicates: usize,
    /// From `weir run` to its first answer, s.
    pub(crate) start_s: f64,
    pub(crate) ok: bool,
}

/// Everything needed to start the daemon again.
pub(crate) struct Start<'a> {
    pub(crate) weir: &'a Path,
    pub(crate) state: &'a Path,
    pub(crate) socket: &'a Path,
    pub(crate) stderr: PathBuf,
}

/// Stops `d`, makes the changes, starts a new daemon and checks the log.
pub(crate) fn run(
    d: Daemon,
    start: &Start<'_>,
    ws: &Workspace,
    mounts: usize,
    fleet: &mut Fleet,
) -> Result<(Daemon, Restart)> {
    d.stop().context("stopping the daemon for the restart")?;
    ws.attach(Loop::Raw, mounts)?;
    fleet.attach_rest()?;
    let t = Instant::now();
    let d = Daemon::start(
        start.weir,
        start.state,
        start.socket,
        &start.stderr,
        Duration::from_secs(120),
    )?;
    let start_s = t.elapsed().as_secs_f64();
    run_tool(&mut d.cli(&["sync"]))?;

    let mut by_point: HashMap<Vec<u8>, usize> = (0..mounts)
        .map(|i| (ws.target(i).as_os_str().as_encoded_bytes().to_vec(), 0))
        .collect();
    let mut by_pv: HashMap<String, usize> = fleet
        .pvids()
        .iter()
        .map(|u| (u.replace('-', ""), 0))
        .collect();
    let mut r = Reader::open_dir(start.state.join("log"), 1);
    while let Some(rec) = r.next_record()? {
        if rec.flags & FLAG_RECONCILED == 0 {
            continue;
        }
        if rec.kind == RecordType::MOUNT_ATTACH {
            if let Some(n) = by_point.get_mut(&rec.name) {
                *n += 1;
            }
        } else if rec.kind == RecordType::PV_FOUND
            && let Some(n) = std::str::from_utf8(&rec.target)
                .ok()
                .and_then(|u| by_pv.get_mut(u))
        {
            *n += 1;
        }
    }
    let once = |m: &dyn Fn() -> Vec<usize>| m().iter().filter(|&&n| n == 1).count();
    let extra = |v: Vec<usize>| v.iter().map(|&n| n.saturating_sub(1)).sum::<usize>();
    let res = Restart {
        mounts,
        pvs: by_pv.len(),
        mounts_reconciled: once(&|| by_point.values().copied().collect()),
        pvs_reconciled: once(&|| by_pv.values().copied().collect()),
        duplicates: extra(by_point.values().copied().collect())
            + extra(by_pv.values().copied().collect()),
        start_s,
        ok: false,
    };
    let ok =
        res.mounts_reconciled == mounts && res.pvs_reconciled == res.pvs && res.duplicates == 0;
    Ok((d, Restart { ok, ..res }))
}
