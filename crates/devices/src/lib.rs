//! `weir-devices`: block devices, kept exact at O(1) cost per device event.
//!
//! Seeds 000 and 001 are why this crate exists: LVM's event activation
//! rescanned every device on every uevent and read every PV's metadata for
//! each command, so a storm of N devices cost O(N²). Here one uevent costs
//! one sysfs snapshot of that device and, for a PV, one small probe of its
//! label and headers; VGs are assembled incrementally as their PVs appear.
//!
//! - [`sysfs`]: snapshots of one block device, or all of them, from
//!   /sys/class/block.
//! - [`uevent`]: the kernel's and udev's uevent messages, parsed (hostile
//!   input) and checked against their sender; the socket is
//!   [`weir_sys::uevent`].
//! - [`filter`]: LVM's `devices/filter` patterns (`a|regex|`, `r|regex|`).
//! - [`devread`]: [`BlockReader`], weir-lvm's `ReadAt` over a device node
//!   with aligned `O_DIRECT` reads.
//!
//! - [`fsid`]: which filesystem a device holds, its UUID and label, read
//!   from its superblock by libblkid's rules ([`FsId`]).
//! - [`probe`]: which devices LVM would read, and reading them (one, or all
//!   in parallel) with weir-lvm.
//! - [`inventory`]: every device, its probe, and the VGs assembled from the
//!   PVs; [`change`]: what applying a uevent yields; [`record`]: changes as
//!   DEVICE_*/PV_*/VG_* records.
//! - [`tracker`]: the thread that applies uevents as they come, logs every
//!   change, runs `--on-vg-complete`, and offers a `sync` barrier.
//! - [`previous`]: the inventory as last logged ([`Previous`]), kept across
//!   restarts so that a start logs only what changed while weir was down.
#![forbid(unsafe_code)]

pub mod change;
pub mod devnum;
pub mod devread;
mod error;
pub mod filter;
pub mod fsid;
pub mod inventory;
pub mod previous;
pub mod probe;
pub mod record;
pub mod sysfs;
pub mod tracker;
pub mod uevent;

pub use change::{Change, ChangeKind};
pub use devnum::DevNum;
pub use devread::BlockReader;
pub use error::{Error, Result};
pub use filter::{Filter, FilterError};
pub use fsid::FsId;
pub use inventory::{Entry, Inventory};
pub use previous::v1::PreviousV1;
pub use previous::{DeviceState, LvState, Previous, PvState, VgDetail, VgState};
pub use probe::{Probe, Skip};
pub use sysfs::{BlockDevice, Scan, Sysfs};
pub use tracker::{OnChange, Tracker, TrackerOptions, TrackerStats};
pub use uevent::{Uevent, UeventError};
