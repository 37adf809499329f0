//! Loop device numbers for the fleets: reserving one (a lock file every
//! fleet, in any process, respects), attaching a file at it, and waiting
//! for a detach to show.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The first loop device number the fleets use.
const FIRST_LOOP: u32 = 1900;
/// How many numbers from [`FIRST_LOOP`] they may use.
const LOOP_RANGE: u32 = 500;
/// How long a detach may take to show in sysfs (it is deferred while some
/// other process holds the device open).
const DETACH_TIMEOUT: Duration = Duration::from_secs(20);

/// The numbers this process tried so far: tests running in parallel
/// threads never pick the same one.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// A loop device number reserved by an exclusive lock on
/// `/run/lock/weir-test-loopN.lock` (or in the temporary directory),
/// removed on drop.
#[derive(Debug)]
pub(super) struct Reservation {
    path: PathBuf,
    _file: std::fs::File,
}

impl Reservation {
    /// Takes `number`, unless another fleet holds it.
    fn take(number: u32) -> Option<Reservation> {
        let dir = Path::new("/run/lock");
        let dir = if dir.is_dir() {
            dir.to_owned()
        } else {
            std::env::temp_dir()
        };
        let path = dir.join(format!("weir-test-loop{number}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .ok()?;
        file.try_lock().ok()?;
        // The holder before us may have removed the file between our open
        // and our lock: then the lock is on a file nobody else will see.
        let same = |a: &std::fs::Metadata, b: &std::fs::Metadata| {
            use std::os::unix::fs::MetadataExt;
            a.dev() == b.dev() && a.ino() == b.ino()
        };
        let ours = match (file.metadata(), std::fs::metadata(&path)) {
            (Ok(a), Ok(b)) => same(&a, &b),
            _ => false,
        };
        ours.then_some(Reservation { path, _file: file })
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // Removed while still locked, so no one can lock this file after.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// `losetup /dev/loopN file`.
pub(super) fn losetup_at(number: u32, file: &Path) -> Output {
    Command::new("losetup")
        .arg(format!("/dev/loop{number}"))
        .arg(file)
        .stdin(Stdio::null())
        .output()
        .expect("run losetup")
}

/// Reserves a free number of the range and attaches `file` there,
/// starting at a place that depends on the process, so that two test
/// processes rarely try the same numbers.
pub(super) fn attach_free(file: &Path) -> (u32, Reservation) {
    let start = std::process::id().wrapping_mul(37) % LOOP_RANGE;
    let mut last = None;
    for _ in 0..LOOP_RANGE {
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let number = FIRST_LOOP + (start + k) % LOOP_RANGE;
        let Some(reserved) = Reservation::take(number) else {
            continue;
        };
        // Attached by something that does not take our locks: not ours.
        if is_bound(number) {
            continue;
        }
        let out = losetup_at(number, file);
        if out.status.success() {
            return (number, reserved);
        }
        last = Some(out);
    }
    panic!("no free loop device in loop{FIRST_LOOP}+{LOOP_RANGE}: {last:?}");
}

/// Whether loop device `number` is attached to a file.
fn is_bound(number: u32) -> bool {
    Path::new(&format!("/sys/block/loop{number}/loop")).exists()
}

/// Waits until loop device `number` is unbound: a detach is deferred
/// while another process holds the device open.
pub(super) fn wait_unbound(number: u32) {
    let deadline = Instant::now() + DETACH_TIMEOUT;
    while is_bound(number) {
        assert!(
            Instant::now() < deadline,
            "loop{number} still attached {DETACH_TIMEOUT:?} after losetup -d"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
