//! Marking a root's filesystem: one fanotify filesystem mark per
//! filesystem, whatever the number of roots on it.
//!
//! The kernel refuses a filesystem mark through a btrfs subvolume other
//! than the top level (`EXDEV`: the subvolume's fsid is not the
//! superblock's). weir then mounts the same filesystem's top level
//! (`subvolid=5`) as a detached, read-only mount that no path reaches,
//! marks the filesystem through it and closes it: the mark belongs to the
//! superblock, so it outlives that mount and sees every subvolume, with
//! the top level's fsid in its events. Nothing is mounted anywhere a user
//! could see, and no mount is left behind.

use std::fmt;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use weir_sys::fanotify::fid::{
    FAN_ATTRIB, FAN_CLOSE_WRITE, FAN_CREATE, FAN_DELETE, FAN_DELETE_SELF, FAN_MODIFY, FAN_ONDIR,
    FAN_RENAME, FidGroup,
};
use weir_sys::statmount::{Statmounter, mask};

use crate::{Error, Result};

/// The events a watch asks for: entry changes (with directories), renames
/// as one event, attributes, content written, closes after writing, and
/// an object's last name going (`FAN_DELETE_SELF`), which settles merged
/// events about it without a look at the filesystem.
pub(crate) const EVENTS: u64 = FAN_CREATE
    | FAN_DELETE
    | FAN_RENAME
    | FAN_ATTRIB
    | FAN_MODIFY
    | FAN_CLOSE_WRITE
    | FAN_DELETE_SELF
    | FAN_ONDIR;

/// How a root's filesystem is marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MarkKind {
    /// `FAN_MARK_FILESYSTEM` through the root itself.
    Filesystem,
    /// `FAN_MARK_FILESYSTEM` through a detached mount of the btrfs top
    /// level, since the root is in another subvolume.
    BtrfsTopLevel,
}

impl MarkKind {
    /// The name `weir fs` and the records show.
    pub fn name(self) -> &'static str {
        match self {
            MarkKind::Filesystem => "filesystem",
            MarkKind::BtrfsTopLevel => "btrfs-top-level",
        }
    }
}

impl fmt::Display for MarkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A root, opened and marked.
#[derive(Debug)]
pub(crate) struct Marked {
    pub(crate) path: PathBuf,
    pub(crate) fd: OwnedFd,
    pub(crate) fstype: String,
    pub(crate) mark: MarkKind,
    /// The fsid the filesystem's events carry.
    pub(crate) fsid: [u32; 2],
}

/// Opens `path` and marks its filesystem in `group`.
pub(crate) fn mark(group: &FidGroup, path: &Path) -> Result<Marked> {
    let root_err = |what, errno| Error::Root {
        path: path.to_owned(),
        what,
        source: weir_sys::Error::Syscall {
            call: "open",
            errno,
        },
    };
    let fd = match rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOTDIR) => {
            return Err(Error::NotADirectory {
                path: path.to_owned(),
            });
        }
        Err(e) => return Err(root_err("opening the root", e)),
    };
    let mount_id = weir_sys::statx::mount_id_unique(path).map_err(|source| Error::Root {
        path: path.to_owned(),
        what: "finding the root's mount",
        source,
    })?;
    let sm = Statmounter::new()
        .stat(mount_id, mask::FS_TYPE | mask::SB_SOURCE)
        .map_err(|source| Error::Root {
            path: path.to_owned(),
            what: "reading the root's mount (statmount)",
            source,
        })?;
    let fstype = String::from_utf8_lossy(sm.fs_type.as_deref().unwrap_or(b"unknown")).into_owned();
    let (mark, fsid) = match group.mark_filesystem(path, EVENTS) {
        Ok(()) => {
            let fsid = weir_sys::statfs::fsid(fd.as_fd()).map_err(|source| Error::Root {
                path: path.to_owned(),
                what: "reading the root's filesystem id (statfs)",
                source,
            })?;
            (MarkKind::Filesystem, fsid)
        }
        Err(e) if e.errno() == Some(Errno::XDEV) && fstype == "btrfs" => {
            let fsid = mark_btrfs_top(group, path, sm.sb_source.as_deref(), &fstype)?;
            (MarkKind::BtrfsTopLevel, fsid)
        }
        Err(e) => return Err(refusal(path, &fstype, e)),
    };
    Ok(Marked {
        path: path.to_owned(),
        fd,
        fstype,
        mark,
        fsid,
    })
}

/// Marks the filesystem through a detached mount of its top level, and
/// returns the fsid its events carry (the top level's).
fn mark_btrfs_top(
    group: &FidGroup,
    path: &Path,
    source: Option<&[u8]>,
    fstype: &str,
) -> Result<[u32; 2]> {
    let Some(dev) = source.filter(|s| s.starts_with(b"/dev/")) else {
        return Err(Error::Unwatchable {
            path: path.to_owned(),
            fstype: fstype.to_owned(),
            reason: "a btrfs subvolume whose device is unknown: the top level cannot be mounted to mark it",
            source: weir_sys::Error::Syscall {
                call: "fanotify_mark",
                errno: Errno::XDEV,
            },
        });
    };
    let dev = Path::new(std::ffi::OsStr::from_bytes(dev));
    let top = weir_sys::fsmount::detached_mount("btrfs", dev, &[("subvolid", "5")], true)
        .map_err(|e| refusal(path, fstype, e))?;
    let fsid = weir_sys::statfs::fsid(top.as_fd()).map_err(|e| refusal(path, fstype, e))?;
    // fanotify_mark refuses the O_PATH fd fsmount gives: mark through
    // the mount's root directory instead.
    let dir = weir_sys::fsmount::open_root(top.as_fd()).map_err(|e| refusal(path, fstype, e))?;
    let r = group.mark_filesystem_fd(dir.as_fd(), EVENTS);
    // The mark is the superblock's: the mount can go at once.
    drop(dir);
    drop(top);
    r.map_err(|e| refusal(path, fstype, e))?;
    Ok(fsid)
}

/// The error for a mark the kernel refused.
fn refusal(path: &Path, fstype: &str, e: weir_sys::Error) -> Error {
    let unwatchable = |reason| Error::Unwatchable {
        path: path.to_owned(),
        fstype: fstype.to_owned(),
        reason,
        source: e.clone(),
    };
    match e.errno() {
        Some(Errno::PERM | Errno::ACCESS) => Error::NotPrivileged {
            path: path.to_owned(),
            source: e,
        },
        Some(Errno::OPNOTSUPP | Errno::NODEV | Errno::NOSYS) => unwatchable(
            "it cannot encode file handles (FUSE without export support, NFS, overlayfs, procfs and sysfs are such)",
        ),
        Some(Errno::XDEV) => {
            unwatchable("the kernel gives its subtrees an fsid of their own (EXDEV)")
        }
        Some(Errno::INVAL) => Error::Kernel(e),
        _ => unwatchable("the kernel refused the mark"),
    }
}
