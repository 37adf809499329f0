//! The error type of weir-devices: one variant per source of failure, each
//! with its typed cause, so callers can tell "the device went away" (a
//! normal race with the kernel) from "sysfs said something absurd".

use std::io;
use std::path::PathBuf;

use crate::filter::FilterError;
use crate::sysfs::AttrError;
use crate::uevent::UeventError;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A sysfs attribute of a device could not be read or did not parse.
    #[error("sysfs {name}/{attr}")]
    Sysfs {
        /// The device (`sda1`).
        name: String,
        /// The attribute, relative to the device's directory (`size`,
        /// `queue/rotational`).
        attr: &'static str,
        /// Why.
        #[source]
        source: AttrError,
    },
    /// The device's sysfs directory is gone: it was removed while (or
    /// before) it was read. A `remove` uevent follows or preceded it.
    #[error("block device {name} vanished")]
    Vanished {
        /// The device.
        name: String,
    },
    /// A device name that cannot be a sysfs entry (empty, `.`, `..`, or with
    /// a `/` or NUL): refused before it is joined to a path.
    #[error("invalid block device name {name:?}")]
    BadName {
        /// The name as given.
        name: String,
    },
    /// Listing a sysfs directory (`class/block`) failed.
    #[error("listing {path}")]
    List {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Opening a device node failed.
    #[error("opening {path}")]
    Open {
        /// The device node.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A uevent did not parse or came from an untrusted sender.
    #[error(transparent)]
    Uevent(#[from] UeventError),
    /// A `devices/filter` list did not parse.
    #[error(transparent)]
    Filter(#[from] FilterError),
    /// A system call in weir-sys failed.
    #[error(transparent)]
    Sys(#[from] weir_sys::Error),
    /// Writing the changelog failed.
    #[error("writing the changelog")]
    Log(#[from] weir_log::Error),
    /// The tracker's thread has stopped.
    #[error("the device tracker has stopped")]
    Stopped,
    /// The tracker's thread could not be started.
    #[error("starting the device tracker's thread")]
    Thread {
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Reading LVM metadata failed.
    #[error("reading LVM metadata")]
    Lvm(#[from] weir_lvm::Error),
    /// Reading a device for its filesystem's superblock failed (other
    /// than by its end: a device too small for a format just is not one).
    #[error("reading the {what} at offset {offset}")]
    FsRead {
        /// What was being read (`head`, `btrfs superblock`, ...).
        what: &'static str,
        /// Its byte offset on the device.
        offset: u64,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
