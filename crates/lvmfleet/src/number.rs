//! Loop device numbers a fleet keeps for its lifetime: a device detached
//! and attached again comes back under the same path, which a test's
//! filter of exact paths needs.
//!
//! `losetup -f` hands the lowest free number to whoever asks first, and
//! could give ours away between a detach and the reattach. So these
//! numbers come from a range far above what `-f` hands out, each reserved
//! by an exclusive lock on a file in /run/lock that every fleet, in any
//! process, respects; a number held or attached elsewhere is skipped. The
//! kernel creates a missing loop device on `losetup /dev/loopN`; it stays,
//! unbound, afterwards, like those `-f` creates.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::loopdev::{LoopDev, is_bound};
use crate::{Error, Result};

/// The first loop device number the fleets use.
const FIRST_LOOP: u32 = 1900;
/// How many numbers from [`FIRST_LOOP`] they may use.
const LOOP_RANGE: u32 = 500;

/// The numbers this process tried so far: fleets made in parallel threads
/// never pick the same one.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// A loop device number reserved by an exclusive lock on
/// `/run/lock/weir-test-loopN.lock` (or in the temporary directory),
/// removed on drop.
#[derive(Debug)]
pub(crate) struct Reservation {
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

/// Reserves a free number of the range and attaches `file` there,
/// starting at a place that depends on the process, so that two processes
/// rarely try the same numbers.
pub(crate) fn attach_reserved(file: &Path) -> Result<(LoopDev, Reservation)> {
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
        match LoopDev::attach_at(number, file) {
            Ok(dev) => return Ok((dev, reserved)),
            Err(e) => last = Some(e),
        }
    }
    Err(Error::Unexpected(format!(
        "no free loop device in loop{FIRST_LOOP}+{LOOP_RANGE}; last error: {}",
        last.map_or_else(|| "none".to_owned(), |e| e.to_string())
    )))
}
