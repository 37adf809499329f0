//! fanotify with file ids (`FAN_REPORT_DFID_NAME_TARGET`): a group that
//! reports each change to a whole filesystem as the directory's file
//! handle, the entry's name and the target's file handle, for a change
//! journal that needs no watch per directory.
//!
//! The group ([`FidGroup`]) is made by the same `fanotify_init` wrapper as
//! the mount watch and marked with `FAN_MARK_FILESYSTEM`, through a path or
//! an opened fd (for a btrfs subvolume, an fd on a mount of the top level:
//! see [`FidGroup::mark_filesystem_fd`]); events carry no fd (`FAN_NOFD`),
//! only ids, so reading them opens nothing. The bytes are decoded by safe
//! code in [`decode_fid_events`]. The ids are `struct file_handle`s:
//! [`name_to_handle_at`] gives a path's, and [`open_by_handle_at`] turns
//! one back into an fd, which fails with `ESTALE` once the object is gone.
//!
//! A filesystem mark needs `CAP_SYS_ADMIN` in the user namespace that owns
//! the superblock (`EPERM` otherwise), and a filesystem that can encode file
//! handles (overlayfs, procfs, sysfs and ramfs give `EOPNOTSUPP`). Without
//! [`FAN_ONDIR`] in the mask, changes to directories are not reported at all.

mod decode;
mod handle;

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::OFlags;
use rustix::io::Errno;
use rustix::path::Arg;

use super::{FAN_CLASS_NOTIF, FAN_CLOEXEC, FAN_MARK_ADD, FAN_NONBLOCK, fanotify_init};
use crate::{Error, Result};

pub use super::{FAN_NOFD, FAN_Q_OVERFLOW, FANOTIFY_METADATA_VERSION};
pub use decode::{DecodeError, DirName, Fid, FidEvent, decode_fid_events};
pub use handle::{
    AT_EMPTY_PATH, AT_HANDLE_FID, AT_HANDLE_MNT_ID_UNIQUE, AT_SYMLINK_FOLLOW, FileHandle,
    MAX_HANDLE_SZ, name_to_handle_at, open_by_handle_at,
};

/// `FAN_REPORT_FID`: events carry the id of the object (5.1).
pub const FAN_REPORT_FID: u32 = 0x0000_0200;
/// `FAN_REPORT_DIR_FID`: events carry the id of the parent directory (5.9).
pub const FAN_REPORT_DIR_FID: u32 = 0x0000_0400;
/// `FAN_REPORT_NAME`: with the directory's id, the entry's name (5.9).
pub const FAN_REPORT_NAME: u32 = 0x0000_0800;
/// `FAN_REPORT_TARGET_FID`: directory-entry events also carry the target's
/// id (5.17). The kernel refuses it (`EINVAL`) without the three above.
pub const FAN_REPORT_TARGET_FID: u32 = 0x0000_1000;
/// `FAN_REPORT_DFID_NAME_TARGET`: all four, as the UAPI header combines
/// them; what [`FidGroup::open`] asks for.
pub const FAN_REPORT_DFID_NAME_TARGET: u32 =
    FAN_REPORT_DIR_FID | FAN_REPORT_NAME | FAN_REPORT_FID | FAN_REPORT_TARGET_FID;

/// `FAN_MARK_REMOVE`.
pub const FAN_MARK_REMOVE: u32 = 0x0000_0002;
/// `FAN_MARK_FILESYSTEM`: the object marked is the superblock of the path.
pub const FAN_MARK_FILESYSTEM: u32 = 0x0000_0100;

/// `FAN_MODIFY`: a file's content changed (per `write`, truncate, or an
/// mtime-only `utimensat`).
pub const FAN_MODIFY: u64 = 0x0000_0002;
/// `FAN_ATTRIB`: metadata changed (mode, owner, times, xattrs, link count).
pub const FAN_ATTRIB: u64 = 0x0000_0004;
/// `FAN_CLOSE_WRITE`: a file open for writing was closed.
pub const FAN_CLOSE_WRITE: u64 = 0x0000_0008;
/// `FAN_MOVED_FROM`: an entry was moved out of a directory.
pub const FAN_MOVED_FROM: u64 = 0x0000_0040;
/// `FAN_MOVED_TO`: an entry was moved into a directory.
pub const FAN_MOVED_TO: u64 = 0x0000_0080;
/// `FAN_CREATE`: an entry was created in a directory.
pub const FAN_CREATE: u64 = 0x0000_0100;
/// `FAN_DELETE`: an entry was removed from a directory.
pub const FAN_DELETE: u64 = 0x0000_0200;
/// `FAN_DELETE_SELF`: the object itself went away (its last link).
pub const FAN_DELETE_SELF: u64 = 0x0000_0400;
/// `FAN_MOVE_SELF`: the object itself was moved.
pub const FAN_MOVE_SELF: u64 = 0x0000_0800;
/// `FAN_RENAME`: one event per rename, with the old and new directory and
/// name (5.17).
pub const FAN_RENAME: u64 = 0x1000_0000;
/// `FAN_ONDIR`: in a mask, report directories too; in an event, the object
/// is a directory.
pub const FAN_ONDIR: u64 = 0x4000_0000;

/// `FAN_EVENT_INFO_TYPE_FID`: the object's id (the target of a
/// directory-entry event).
pub const FAN_EVENT_INFO_TYPE_FID: u8 = 1;
/// `FAN_EVENT_INFO_TYPE_DFID_NAME`: a directory's id and an entry's name.
pub const FAN_EVENT_INFO_TYPE_DFID_NAME: u8 = 2;
/// `FAN_EVENT_INFO_TYPE_DFID`: a directory's id, without a name.
pub const FAN_EVENT_INFO_TYPE_DFID: u8 = 3;
/// `FAN_EVENT_INFO_TYPE_OLD_DFID_NAME`: a rename's old directory and name.
pub const FAN_EVENT_INFO_TYPE_OLD_DFID_NAME: u8 = 10;
/// `FAN_EVENT_INFO_TYPE_NEW_DFID_NAME`: a rename's new directory and name.
pub const FAN_EVENT_INFO_TYPE_NEW_DFID_NAME: u8 = 12;

/// A fanotify group reporting file ids, directory ids and names, to be
/// marked on whole filesystems.
#[derive(Debug)]
pub struct FidGroup {
    fd: OwnedFd,
}

impl FidGroup {
    /// `fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK |
    /// FAN_REPORT_DFID_NAME_TARGET, O_RDONLY | O_CLOEXEC)`. Works without
    /// privilege (5.13+); the queue is bounded (`max_queued_events`), never
    /// `FAN_UNLIMITED_QUEUE`, whose allocations cannot fail and so cannot be
    /// refused under memory pressure. `EINVAL` on kernels before 5.17.
    pub fn open() -> Result<FidGroup> {
        let fd = fanotify_init(
            FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME_TARGET,
            (OFlags::RDONLY | OFlags::CLOEXEC).bits(),
        )?;
        Ok(FidGroup { fd })
    }

    /// Adds `mask` (the `FAN_*` event bits) to a mark on the filesystem
    /// `path` is on. The errno tells the refusals apart: `EPERM` without
    /// `CAP_SYS_ADMIN` over the superblock, `EOPNOTSUPP` or `ENODEV` for a
    /// filesystem without file handles, `EXDEV` for a btrfs subvolume
    /// (whose ids differ from the superblock's; see
    /// [`mark_filesystem_fd`](Self::mark_filesystem_fd)), `EINVAL` for
    /// bits the kernel does not know, `ENOENT` for a missing path. A path
    /// holding a NUL byte gives `EINVAL` before any call.
    pub fn mark_filesystem(&self, path: &Path, mask: u64) -> Result<()> {
        self.mark(FAN_MARK_ADD | FAN_MARK_FILESYSTEM, path, mask)
    }

    /// Removes `mask` from the filesystem mark of `path`'s filesystem; the
    /// mark goes away with its last bit. `ENOENT` when there is no mark.
    pub fn unmark_filesystem(&self, path: &Path, mask: u64) -> Result<()> {
        self.mark(FAN_MARK_REMOVE | FAN_MARK_FILESYSTEM, path, mask)
    }

    /// Adds `mask` to a mark on the filesystem `fd` is on: the same call
    /// as [`mark_filesystem`](Self::mark_filesystem), with the object named
    /// by the fd instead of a path (`fanotify_mark` with `fd` as the dirfd
    /// and a NULL pathname), and the same errnos. The fd must be an opened
    /// file: an `O_PATH` fd, such as `fsmount`'s, gives `EBADF`.
    ///
    /// This is how a btrfs filesystem is watched where only subvolumes
    /// other than the top level are mounted: a path in one gives `EXDEV`,
    /// but an fd on a mount of the top level does not, and that mark
    /// reports the changes in every subvolume, with the top level's fsid.
    /// [`crate::fsmount::detached_mount`] makes such a mount and
    /// [`crate::fsmount::open_root`] opens its root for this call; the
    /// mark outlives both fds, which should be closed once it is placed.
    pub fn mark_filesystem_fd(&self, fd: BorrowedFd<'_>, mask: u64) -> Result<()> {
        super::fanotify_mark_fd(
            self.fd.as_fd(),
            FAN_MARK_ADD | FAN_MARK_FILESYSTEM,
            mask,
            fd,
        )
    }

    /// Removes `mask` from the filesystem mark of `fd`'s filesystem, as
    /// [`unmark_filesystem`](Self::unmark_filesystem) does for a path.
    /// `ENOENT` when there is no mark.
    pub fn unmark_filesystem_fd(&self, fd: BorrowedFd<'_>, mask: u64) -> Result<()> {
        super::fanotify_mark_fd(
            self.fd.as_fd(),
            FAN_MARK_REMOVE | FAN_MARK_FILESYSTEM,
            mask,
            fd,
        )
    }

    fn mark(&self, flags: u32, path: &Path, mask: u64) -> Result<()> {
        path.into_with_c_str(|c| {
            // SAFETY: the group fd is open for the whole call (borrowed from
            // `self`); `c` is a NUL-terminated string that outlives the
            // call; AT_FDCWD resolves it from the current directory.
            let r = unsafe {
                libc::fanotify_mark(self.fd.as_raw_fd(), flags, mask, libc::AT_FDCWD, c.as_ptr())
            };
            if r < 0 {
                return Err(crate::error::last_errno());
            }
            Ok(())
        })
        .map_err(Error::syscall("fanotify_mark"))
    }

    /// How many events are queued, not yet read: `ioctl(FIONREAD)`,
    /// for which fanotify counts `FAN_EVENT_METADATA_LEN` bytes per event
    /// whatever its info records, so the count is exact. It walks the
    /// queue under the group's lock: call it now and then, not per read.
    pub fn queued(&self) -> Result<u64> {
        rustix::io::ioctl_fionread(&self.fd)
            .map(|bytes| bytes / super::decode::METADATA_LEN as u64)
            .map_err(|errno| Error::Syscall {
                call: "ioctl(FIONREAD)",
                errno,
            })
    }

    /// One `read(2)` of whatever is queued into `buf`, for
    /// [`decode_fid_events`]. Non-blocking: `Ok(0)` when nothing is queued
    /// (`EAGAIN`). The kernel copies whole events only; a `buf` too small
    /// for the next one gives `EINVAL` (an event is at most a few hundred
    /// bytes, so 64 KiB or more is the sensible size).
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        loop {
            match rustix::io::read(&self.fd, &mut *buf) {
                Ok(n) => return Ok(n),
                Err(Errno::AGAIN) => return Ok(0),
                Err(Errno::INTR) => {}
                Err(errno) => {
                    return Err(Error::Syscall {
                        call: "read",
                        errno,
                    });
                }
            }
        }
    }
}

impl AsFd for FidGroup {
    /// The fanotify fd, readable (`POLLIN`) when events are queued.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values above are the kernel's: checked against `libc`'s copy of
    /// the UAPI header, which this crate does not use for them because it
    /// lags behind newer kernels elsewhere.
    #[test]
    fn constants_match_the_uapi_header() {
        assert_eq!(FAN_REPORT_FID, libc::FAN_REPORT_FID);
        assert_eq!(FAN_REPORT_DIR_FID, libc::FAN_REPORT_DIR_FID);
        assert_eq!(FAN_REPORT_NAME, libc::FAN_REPORT_NAME);
        assert_eq!(FAN_REPORT_TARGET_FID, libc::FAN_REPORT_TARGET_FID);
        assert_eq!(
            FAN_REPORT_DFID_NAME_TARGET,
            libc::FAN_REPORT_DFID_NAME_TARGET
        );
        assert_eq!(FAN_MARK_REMOVE, libc::FAN_MARK_REMOVE);
        assert_eq!(FAN_MARK_FILESYSTEM, libc::FAN_MARK_FILESYSTEM);
        for (ours, theirs) in [
            (FAN_MODIFY, libc::FAN_MODIFY),
            (FAN_ATTRIB, libc::FAN_ATTRIB),
            (FAN_CLOSE_WRITE, libc::FAN_CLOSE_WRITE),
            (FAN_MOVED_FROM, libc::FAN_MOVED_FROM),
            (FAN_MOVED_TO, libc::FAN_MOVED_TO),
            (FAN_CREATE, libc::FAN_CREATE),
            (FAN_DELETE, libc::FAN_DELETE),
            (FAN_DELETE_SELF, libc::FAN_DELETE_SELF),
            (FAN_MOVE_SELF, libc::FAN_MOVE_SELF),
            (FAN_RENAME, libc::FAN_RENAME),
            (FAN_ONDIR, libc::FAN_ONDIR),
            (FAN_Q_OVERFLOW, libc::FAN_Q_OVERFLOW),
        ] {
            assert_eq!(ours, theirs);
        }
        assert_eq!(FAN_EVENT_INFO_TYPE_FID, libc::FAN_EVENT_INFO_TYPE_FID);
        assert_eq!(
            FAN_EVENT_INFO_TYPE_DFID_NAME,
            libc::FAN_EVENT_INFO_TYPE_DFID_NAME
        );
        assert_eq!(FAN_EVENT_INFO_TYPE_DFID, libc::FAN_EVENT_INFO_TYPE_DFID);
        assert_eq!(
            FAN_EVENT_INFO_TYPE_OLD_DFID_NAME,
            libc::FAN_EVENT_INFO_TYPE_OLD_DFID_NAME
        );
        assert_eq!(
            FAN_EVENT_INFO_TYPE_NEW_DFID_NAME,
            libc::FAN_EVENT_INFO_TYPE_NEW_DFID_NAME
        );
        assert_eq!(MAX_HANDLE_SZ, 128);
        assert_eq!(AT_HANDLE_FID, libc::AT_HANDLE_FID);
        assert_eq!(AT_HANDLE_MNT_ID_UNIQUE, libc::AT_HANDLE_MNT_ID_UNIQUE);
        assert_eq!(AT_EMPTY_PATH, libc::AT_EMPTY_PATH);
        assert_eq!(AT_SYMLINK_FOLLOW, libc::AT_SYMLINK_FOLLOW);
    }

    #[test]
    fn a_path_with_a_nul_is_refused_before_the_call() {
        let g = FidGroup::open().expect("fanotify_init with file ids");
        let e = g
            .mark_filesystem(Path::new("/tmp/a\0b"), FAN_CREATE)
            .unwrap_err();
        assert_eq!(e.errno(), Some(Errno::INVAL));
    }

    #[test]
    fn an_empty_queue_reads_zero() {
        let mut g = FidGroup::open().expect("fanotify_init with file ids");
        let mut buf = [0u8; 4096];
        assert_eq!(g.read(&mut buf).unwrap(), 0);
    }
}
