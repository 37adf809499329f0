//! Detached mounts made with the new mount API (`fsopen(2)`, `fsconfig(2)`,
//! `fsmount(2)`, Linux 5.2): a mount that no mount table lists, held only
//! by its fd.
//!
//! A change journal needs one to mark a btrfs filesystem whose only
//! attached mounts are of subvolumes other than the top level: a
//! filesystem mark through a path in such a subvolume is refused with
//! `EXDEV`, but one through a detached mount of the top level
//! (`subvolid=5`) is not. Such a mount changes nothing anyone else can
//! see, and needs no directory to mount on.
//!
//! rustix makes these calls safely, so this module has no `unsafe`.

use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::mount::{FsMountFlags, FsOpenFlags, MountAttrFlags};

use crate::{Error, Result};

/// A detached mount of a `fstype` filesystem on `source`: `fsopen(fstype,
/// FSOPEN_CLOEXEC)`, `fsconfig(FSCONFIG_SET_STRING)` of `source` and then
/// of each `(key, value)` of `options` in order,
/// `fsconfig(FSCONFIG_CMD_CREATE)` and `fsmount(FSMOUNT_CLOEXEC)`, with
/// `MOUNT_ATTR_RDONLY` when `read_only`.
///
/// The fd is the mount itself, as `fsmount` gives it: an `O_PATH` fd of
/// its root. It serves as a dirfd (`openat`, [`crate::statfs::fsid`]) but
/// not where the kernel wants an opened file, as `fanotify_mark` with a
/// NULL path does (`EBADF`); [`open_root`] opens one. While it is open it
/// keeps the mount, and so the superblock, alive: the filesystem cannot be
/// fully unmounted and its device stays busy. Close it as soon as it has
/// served (a fanotify filesystem mark placed through it outlives it).
///
/// When `source` already holds a mounted filesystem of that type, the
/// kernel gives a new mount of the same superblock, as mounting the device
/// a second time does. `read_only` makes only this mount read-only (a
/// per-mount attribute); the superblock is left as it is.
///
/// Needs `CAP_SYS_ADMIN` (`EPERM` from `fsopen` otherwise). Errors keep
/// the call and its errno: `ENODEV` from `fsopen` for an unknown `fstype`;
/// `EINVAL` from `fsconfig FSCONFIG_SET_STRING` for an option the
/// filesystem does not know; from `fsconfig FSCONFIG_CMD_CREATE`, what the
/// filesystem says of the source (`ENOENT` for a missing path, `ENOTBLK`
/// for one that is no block device, ...). The kernel's messages on the
/// context's fd are not read: the errno is the whole error. A key, value
/// or path holding a NUL byte is `EINVAL` before any call. Options are
/// strings only; a flag without a value (`FSCONFIG_SET_FLAG`) has no form
/// here.
pub fn detached_mount(
    fstype: &str,
    source: &Path,
    options: &[(&str, &str)],
    read_only: bool,
) -> Result<OwnedFd> {
    let fs = rustix::mount::fsopen(fstype, FsOpenFlags::FSOPEN_CLOEXEC)
        .map_err(Error::syscall("fsopen"))?;
    rustix::mount::fsconfig_set_string(&fs, "source", source)
        .map_err(Error::syscall("fsconfig FSCONFIG_SET_STRING"))?;
    for &(key, value) in options {
        rustix::mount::fsconfig_set_string(&fs, key, value)
            .map_err(Error::syscall("fsconfig FSCONFIG_SET_STRING"))?;
    }
    rustix::mount::fsconfig_create(&fs).map_err(Error::syscall("fsconfig FSCONFIG_CMD_CREATE"))?;
    let attr = if read_only {
        MountAttrFlags::MOUNT_ATTR_RDONLY
    } else {
        MountAttrFlags::empty()
    };
    rustix::mount::fsmount(&fs, FsMountFlags::FSMOUNT_CLOEXEC, attr)
        .map_err(Error::syscall("fsmount"))
}

/// The root directory of the mount `mount` (an fd from [`detached_mount`],
/// or any directory fd), opened for reading where `mount` may be only an
/// `O_PATH` fd: `openat(mount, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)`.
///
/// It holds the mount, and so the superblock, until it is closed: closing
/// `mount` first dissolves a detached mount as a lazy unmount would, and
/// this fd keeps it alive. Close it too once it has served.
pub fn open_root(mount: BorrowedFd<'_>) -> Result<OwnedFd> {
    rustix::fs::openat(
        mount,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(Error::syscall("openat"))
}

#[cfg(test)]
mod tests {
    use rustix::io::Errno;

    use super::*;

    /// The bits passed are the kernel's: rustix's values against `libc`'s
    /// copy of the UAPI header.
    #[test]
    fn flags_match_the_uapi_header() {
        assert_eq!(FsOpenFlags::FSOPEN_CLOEXEC.bits(), libc::FSOPEN_CLOEXEC);
        assert_eq!(FsMountFlags::FSMOUNT_CLOEXEC.bits(), libc::FSMOUNT_CLOEXEC);
        assert_eq!(
            u64::from(MountAttrFlags::MOUNT_ATTR_RDONLY.bits()),
            libc::MOUNT_ATTR_RDONLY
        );
    }

    #[test]
    fn a_nul_is_refused_before_the_call() {
        let e = detached_mount("tmp\0fs", Path::new("none"), &[], true).unwrap_err();
        assert_eq!(
            e,
            Error::Syscall {
                call: "fsopen",
                errno: Errno::INVAL
            }
        );
    }
}
