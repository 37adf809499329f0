//! The benchmarks' PV fleet: one VG over N PVs on loop devices over sparse
//! 8 MiB images (one 4 MiB extent after LVM's 1 MiB), with one two-extent
//! LV so that the VG's free space is not its size, as the reference LVM
//! measurement made it. weir-lvmfleet makes
//! it and tears it down on drop, so on every error and on Ctrl-C; the
//! devices take whatever numbers `losetup -f` gives, as disks would, since
//! a thousand reserved numbers would each hold a lock file open.

use std::path::Path;

use anyhow::{Result, bail};
pub(crate) use weir_lvmfleet::Fleet;
use weir_lvmfleet::{Numbers, Setup};

use super::stop::Stop;

/// The size of each sparse image.
const IMAGE_BYTES: u64 = 8 << 20;

/// Makes the VG `vg` over `n` PVs, running `lvm`; a signal on `stop` ends
/// the setup and tears down what it made.
pub(crate) fn create(lvm: &Path, vg: &str, n: usize, stop: &Stop) -> Result<Fleet> {
    if n < 2 {
        bail!("the fleet needs at least 2 PVs for its LV, not {n}");
    }
    Ok(Setup::new(vg)
        .image_bytes(IMAGE_BYTES)
        .numbers(Numbers::AnyFree)
        .lvm(lvm.to_owned())
        .interrupt(stop.flag())
        .progress()
        .build(&vec![1; n], 2, 0)?)
}
