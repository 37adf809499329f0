//! The storm itself: raw bind mounts and unmounts under the tmpfs, with
//! the gates where it waits for the test's main thread.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::{MOUNTS, UNMOUNT_EVERY};

/// The storm pauses for [`PACE`] after this many operations.
const PACE_EVERY: usize = 25;
const PACE: Duration = Duration::from_millis(2);
/// Where the storm holds, in the round that holds, for a checkpoint.
pub(crate) const HOLD: usize = 300;
/// The storm waits here (its operation count) until the kill, so that the
/// kill always lands before the storm's end however slow the daemon is.
pub(crate) const GATE: usize = MOUNTS + MOUNTS / UNMOUNT_EVERY - 10;

/// Where a storm is, shared with the test's main thread.
#[derive(Default)]
pub(crate) struct Progress {
    /// Operations done.
    pub(crate) ops: AtomicUsize,
    /// Set once the daemon is killed: the storm passes [`GATE`].
    pub(crate) killed: AtomicBool,
    /// Set once a checkpoint was written during the storm: it passes
    /// [`HOLD`] in the round that holds there.
    pub(crate) checkpointed: AtomicBool,
}

/// Waits until `flag` is set (a minute at most).
fn wait_for(flag: &AtomicBool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !flag.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "{what} never came");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// 600 bind mounts of `src` onto `dirs`, unmounting every third again:
/// some at once (often before the daemon can read them), some 20 mounts
/// later. Counts its operations; waits at [`GATE`] for the kill and, if
/// `hold`, at [`HOLD`] for a checkpoint.
pub(crate) fn storm(dirs: &[PathBuf], src: &Path, hold: bool, p: &Progress) {
    let mut pending = std::collections::VecDeque::new();
    let op = |what: &dyn Fn()| {
        match p.ops.load(Ordering::SeqCst) {
            GATE => wait_for(&p.killed, "the kill"),
            HOLD if hold => wait_for(&p.checkpointed, "a checkpoint"),
            _ => {}
        }
        what();
        // A short breath now and then, so that even the budgeted mountinfo
        // backend reads the table a few times during the storm.
        if p.ops.fetch_add(1, Ordering::SeqCst) % PACE_EVERY == PACE_EVERY - 1 {
            std::thread::sleep(PACE);
        }
    };
    let unmount = |p: &Path| {
        rustix::mount::unmount(p, rustix::mount::UnmountFlags::empty())
            .unwrap_or_else(|e| panic!("umount {p:?}: {e}"));
    };
    for (i, d) in dirs.iter().enumerate() {
        op(&|| rustix::mount::mount_bind(src, d).unwrap_or_else(|e| panic!("bind {d:?}: {e}")));
        if i % UNMOUNT_EVERY == 1 {
            let lag = if (i / UNMOUNT_EVERY).is_multiple_of(2) {
                0
            } else {
                20
            };
            pending.push_back((i + lag, i));
        }
        while let Some(&(due, j)) = pending.front() {
            if due > i {
                break;
            }
            pending.pop_front();
            op(&|| unmount(&dirs[j]));
        }
    }
    for (_, j) in pending {
        op(&|| unmount(&dirs[j]));
    }
}
