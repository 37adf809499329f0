//! inotify: an instance ([`Inotify`]) and the decoder of its events
//! ([`decode_events`]).
//!
//! weir-devices watches block device nodes (`/dev/loop0`, ...) for
//! `IN_CLOSE_WRITE`, as udev's `watch` option does. A tool that rewrites a
//! device's metadata in place (LVM's commands on an attached PV) opens the
//! node for writing and closes it; the kernel sends no uevent for that, so
//! the close is the only sign.
//!
//! rustix makes the calls. Its `Reader` is not used: the events are decoded
//! by safe code here that checks every length, total on hostile bytes and
//! fuzzed, like this crate's other decoders.
//!
//! What a watch sees: opens and closes through the watched inode only. A
//! device node is an inode of its own `/dev`, so a write through another
//! node of the same device (another devtmpfs, a container's `/dev`) gives
//! no event, and one through an fd kept open gives none until its close.
//! The kernel merges an event identical to the last one queued (same wd,
//! mask, cookie and name), so two closes before a read may be one event.

mod decode;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::inotify::{self as sys, CreateFlags, WatchFlags};
use rustix::io::Errno;

use crate::{Error, Result};

pub use decode::{DecodeError, decode_events};

/// `IN_ACCESS`: the file was read.
pub const IN_ACCESS: u32 = 0x0000_0001;
/// `IN_MODIFY`: the file was written.
pub const IN_MODIFY: u32 = 0x0000_0002;
/// `IN_ATTRIB`: metadata changed (mode, owner, times, link count).
pub const IN_ATTRIB: u32 = 0x0000_0004;
/// `IN_CLOSE_WRITE`: a file opened for writing was closed.
pub const IN_CLOSE_WRITE: u32 = 0x0000_0008;
/// `IN_CLOSE_NOWRITE`: a file not opened for writing was closed.
pub const IN_CLOSE_NOWRITE: u32 = 0x0000_0010;
/// `IN_CLOSE`: either close.
pub const IN_CLOSE: u32 = IN_CLOSE_WRITE | IN_CLOSE_NOWRITE;
/// `IN_OPEN`: the file was opened.
pub const IN_OPEN: u32 = 0x0000_0020;
/// `IN_MOVED_FROM`: a name left the watched directory.
pub const IN_MOVED_FROM: u32 = 0x0000_0040;
/// `IN_MOVED_TO`: a name came into the watched directory.
pub const IN_MOVED_TO: u32 = 0x0000_0080;
/// `IN_CREATE`: a name was created in the watched directory.
pub const IN_CREATE: u32 = 0x0000_0100;
/// `IN_DELETE`: a name was removed from the watched directory.
pub const IN_DELETE: u32 = 0x0000_0200;
/// `IN_DELETE_SELF`: the watched inode was deleted (`IN_IGNORED` follows).
pub const IN_DELETE_SELF: u32 = 0x0000_0400;
/// `IN_MOVE_SELF`: the watched inode was moved.
pub const IN_MOVE_SELF: u32 = 0x0000_0800;
/// `IN_ALL_EVENTS`: every event above.
pub const IN_ALL_EVENTS: u32 = 0x0000_0fff;
/// `IN_UNMOUNT`: the watched inode's filesystem was unmounted (`IN_IGNORED`
/// follows).
pub const IN_UNMOUNT: u32 = 0x0000_2000;
/// `IN_Q_OVERFLOW`: the queue was full and events were lost (`wd` -1).
pub const IN_Q_OVERFLOW: u32 = 0x0000_4000;
/// `IN_IGNORED`: the watch is gone (removed, or its inode deleted or
/// unmounted); its `wd` may be reused.
pub const IN_IGNORED: u32 = 0x0000_8000;
/// `IN_ONLYDIR`: watch the path only if it is a directory.
pub const IN_ONLYDIR: u32 = 0x0100_0000;
/// `IN_DONT_FOLLOW`: do not follow a final symlink.
pub const IN_DONT_FOLLOW: u32 = 0x0200_0000;
/// `IN_EXCL_UNLINK`: no events for names unlinked from a watched directory.
pub const IN_EXCL_UNLINK: u32 = 0x0400_0000;
/// `IN_MASK_CREATE` (4.18): fail with `EEXIST` if the inode is watched.
pub const IN_MASK_CREATE: u32 = 0x1000_0000;
/// `IN_MASK_ADD`: add to an existing watch's mask instead of replacing it.
pub const IN_MASK_ADD: u32 = 0x2000_0000;
/// `IN_ISDIR`: the event's subject is a directory.
pub const IN_ISDIR: u32 = 0x4000_0000;
/// `IN_ONESHOT`: remove the watch after its first event.
pub const IN_ONESHOT: u32 = 0x8000_0000;

/// The read buffer: many events per `read(2)` (an event on a file is 16
/// bytes, one with a name at most 16 + 256 in practice).
const READ_BUF: usize = 64 * 1024;

/// A watch descriptor, as `inotify_add_watch` returns it. The kernel gives
/// the same one for a second watch on the same inode, and may reuse one
/// after its `IN_IGNORED`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Wd(pub i32);

/// One inotify event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The watch it is for (-1 for an overflow).
    pub wd: Wd,
    /// `IN_*` bits: what happened, and `IN_ISDIR` when about a directory.
    pub mask: u32,
    /// Pairs an `IN_MOVED_FROM` with its `IN_MOVED_TO`; 0 otherwise.
    pub cookie: u32,
    /// The name in a watched directory, without the kernel's NUL padding;
    /// empty for an event on the watched inode itself.
    pub name: Vec<u8>,
}

impl Event {
    /// `IN_Q_OVERFLOW`: events were lost, so the caller should rescan what
    /// it watches.
    pub fn overflowed(&self) -> bool {
        self.mask & IN_Q_OVERFLOW != 0
    }

    /// `IN_IGNORED`: the watch is gone; its [`Wd`] no longer means it.
    pub fn ignored(&self) -> bool {
        self.mask & IN_IGNORED != 0
    }
}

/// An inotify instance, non-blocking and close-on-exec.
pub struct Inotify {
    fd: OwnedFd,
    buf: Box<[u8]>,
}

impl Inotify {
    /// `inotify_init1(IN_NONBLOCK | IN_CLOEXEC)`. `EMFILE` is the
    /// `fs.inotify.max_user_instances` limit.
    pub fn open() -> Result<Inotify> {
        let fd = sys::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)
            .map_err(Error::syscall("inotify_init1"))?;
        Ok(Inotify {
            fd,
            buf: vec![0; READ_BUF].into_boxed_slice(),
        })
    }

    /// `inotify_add_watch(path, mask)`: watches `path` (following a final
    /// symlink unless `IN_DONT_FOLLOW`) for the `IN_*` events in `mask`.
    /// A second call for the same inode replaces its mask (or adds to it,
    /// with `IN_MASK_ADD`) and returns the same [`Wd`].
    ///
    /// Errno returned raw so callers can tell `ENOSPC` (the
    /// `fs.inotify.max_user_watches` limit), `ENOENT`, `EACCES` apart.
    pub fn add_watch(&self, path: &Path, mask: u32) -> std::result::Result<Wd, Errno> {
        sys::add_watch(&self.fd, path, WatchFlags::from_bits_retain(mask)).map(Wd)
    }

    /// `inotify_rm_watch(wd)`: the watch's `IN_IGNORED` event follows.
    /// `EINVAL` when `wd` is not a watch of this instance (any more).
    pub fn rm_watch(&self, wd: Wd) -> std::result::Result<(), Errno> {
        sys::remove_watch(&self.fd, wd.0)
    }

    /// Reads every queued event without blocking and appends them decoded
    /// to `out`; returns how many were appended (0 when the queue was
    /// empty: `EAGAIN`). Loops reading until `EAGAIN`, 64 KiB per
    /// `read(2)`, so while events keep coming faster than they are read it
    /// keeps reading.
    ///
    /// On malformed bytes ([`Error::InotifyDecode`]) the events decoded
    /// before the bad one stay in `out` and the rest of that read is lost:
    /// the caller should rescan, as on [`Event::overflowed`].
    pub fn read_batch(&mut self, out: &mut Vec<Event>) -> Result<usize> {
        let before = out.len();
        loop {
            let n = match rustix::io::read(&self.fd, &mut self.buf[..]) {
                Ok(n) => n,
                Err(Errno::AGAIN) => break,
                Err(Errno::INTR) => continue,
                Err(errno) => {
                    return Err(Error::Syscall {
                        call: "read",
                        errno,
                    });
                }
            };
            // inotify never reads 0 bytes into a buffer this large; were it
            // to, reading again would spin.
            if n == 0 {
                break;
            }
            decode_events(&self.buf[..n], out)?;
        }
        Ok(out.len() - before)
    }
}

impl std::fmt::Debug for Inotify {
    // Not derived: the 64 KiB read buffer is noise.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inotify")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

impl AsFd for Inotify {
    /// The inotify fd, readable (`POLLIN`) when events are queued.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values are the kernel's (uapi/linux/inotify.h), which `libc`
    /// copies too.
    #[test]
    fn constants_are_the_kernels() {
        let pairs = [
            (IN_ACCESS, libc::IN_ACCESS),
            (IN_MODIFY, libc::IN_MODIFY),
            (IN_ATTRIB, libc::IN_ATTRIB),
            (IN_CLOSE_WRITE, libc::IN_CLOSE_WRITE),
            (IN_CLOSE_NOWRITE, libc::IN_CLOSE_NOWRITE),
            (IN_CLOSE, libc::IN_CLOSE),
            (IN_OPEN, libc::IN_OPEN),
            (IN_MOVED_FROM, libc::IN_MOVED_FROM),
            (IN_MOVED_TO, libc::IN_MOVED_TO),
            (IN_CREATE, libc::IN_CREATE),
            (IN_DELETE, libc::IN_DELETE),
            (IN_DELETE_SELF, libc::IN_DELETE_SELF),
            (IN_MOVE_SELF, libc::IN_MOVE_SELF),
            (IN_ALL_EVENTS, libc::IN_ALL_EVENTS),
            (IN_UNMOUNT, libc::IN_UNMOUNT),
            (IN_Q_OVERFLOW, libc::IN_Q_OVERFLOW),
            (IN_IGNORED, libc::IN_IGNORED),
            (IN_ONLYDIR, libc::IN_ONLYDIR),
            (IN_DONT_FOLLOW, libc::IN_DONT_FOLLOW),
            (IN_EXCL_UNLINK, libc::IN_EXCL_UNLINK),
            (IN_MASK_CREATE, libc::IN_MASK_CREATE),
            (IN_MASK_ADD, libc::IN_MASK_ADD),
            (IN_ISDIR, libc::IN_ISDIR),
            (IN_ONESHOT, libc::IN_ONESHOT),
        ];
        for (ours, libc) in pairs {
            assert_eq!(ours, libc, "{ours:#x}");
        }
    }

    #[test]
    fn overflowed_and_ignored_read_the_mask() {
        let e = |mask| Event {
            wd: Wd(1),
            mask,
            cookie: 0,
            name: Vec::new(),
        };
        assert!(e(IN_Q_OVERFLOW).overflowed());
        assert!(!e(IN_Q_OVERFLOW).ignored());
        assert!(e(IN_IGNORED).ignored());
        assert!(!e(IN_CLOSE_WRITE).overflowed());
        assert!(!e(IN_CLOSE_WRITE | IN_ISDIR).ignored());
    }
}
