//! fanotify mount notifications (`FAN_REPORT_MNT`, Linux 6.15): one event
//! per mount attached to, detached from or moved within a mount namespace.
//!
//! rustix has no fanotify, so the group is made with `libc`'s
//! `fanotify_init`/`fanotify_mark` and then owned as an [`OwnedFd`]; reads
//! go through rustix. Events are decoded by safe code in [`decode_events`].
//!
//! A watch sees mounts of the namespace it marked: mounts made in a private
//! child namespace give no event, mounts propagated into it do. Remounts and
//! propagation changes (`--make-shared`) give none either.
//!
//! [`fid`] is the other use of fanotify here: a group reporting file ids
//! for the changes to whole filesystems.

mod decode;
pub mod fid;

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::{Error, Result};

pub use decode::{decode_events, decode_events_with_fds};

/// `FAN_CLASS_NOTIF`: notification only, no permission events.
pub const FAN_CLASS_NOTIF: u32 = 0x0000_0000;
/// `FAN_CLOEXEC`.
pub const FAN_CLOEXEC: u32 = 0x0000_0001;
/// `FAN_NONBLOCK`: `read` fails with `EAGAIN` instead of waiting.
pub const FAN_NONBLOCK: u32 = 0x0000_0002;
/// `FAN_REPORT_MNT` (6.14): events carry a mount info record, no fd.
pub const FAN_REPORT_MNT: u32 = 0x0000_4000;
/// `FAN_MARK_ADD`.
pub const FAN_MARK_ADD: u32 = 0x0000_0001;
/// `FAN_MARK_MNTNS` (6.14): the object marked is the mount namespace given
/// by the dirfd (an nsfs fd).
pub const FAN_MARK_MNTNS: u32 = 0x0000_0110;
/// `FAN_MNT_ATTACH`: a mount appeared (both bits: it moved).
pub const FAN_MNT_ATTACH: u64 = 0x0100_0000;
/// `FAN_MNT_DETACH`: a mount went away (both bits: it moved).
pub const FAN_MNT_DETACH: u64 = 0x0200_0000;
/// `FAN_Q_OVERFLOW`: the queue was full and events were lost.
pub const FAN_Q_OVERFLOW: u64 = 0x0000_4000;
/// `FANOTIFY_METADATA_VERSION`: the only layout this code knows.
pub const FANOTIFY_METADATA_VERSION: u8 = 3;
/// `FAN_EVENT_INFO_TYPE_MNT`: the info record holding a mount id.
pub const FAN_EVENT_INFO_TYPE_MNT: u8 = 7;
/// `FAN_NOFD`: the `fd` of an event that carries none.
pub const FAN_NOFD: i32 = -1;

/// The read buffer: many events per `read(2)` (an event is 40 bytes).
const READ_BUF: usize = 64 * 1024;

/// One mount change, by the mount's unique 64-bit id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MountEvent {
    /// A mount was attached (mounted, or propagated in).
    Attach(u64),
    /// A mount was detached (unmounted).
    Detach(u64),
    /// A mount was moved (`mount --move`): one event with both bits.
    Move(u64),
    /// The kernel's queue overflowed and events were lost: rescan.
    Overflow,
}

/// A fanotify group watching the caller's mount namespace for attach,
/// detach and move.
pub struct MountWatch {
    fd: OwnedFd,
    buf: Box<[u8]>,
    /// fds found in events, closed after each read (kept to reuse it).
    fds: Vec<RawFd>,
}

impl MountWatch {
    /// `fanotify_init` + mark `/proc/self/ns/mnt`. Errors keep the errno:
    /// `EPERM` without `CAP_SYS_ADMIN` over the namespace, `EINVAL` (or
    /// `ENOSYS`) on kernels before 6.15.
    pub fn open() -> Result<MountWatch> {
        let fd = fanotify_init(
            FAN_CLASS_NOTIF | FAN_REPORT_MNT | FAN_CLOEXEC | FAN_NONBLOCK,
            OFlags::RDONLY.bits(),
        )?;
        let ns = rustix::fs::open(
            "/proc/self/ns/mnt",
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(Error::syscall("open /proc/self/ns/mnt"))?;
        fanotify_mark_fd(
            fd.as_fd(),
            FAN_MARK_ADD | FAN_MARK_MNTNS,
            FAN_MNT_ATTACH | FAN_MNT_DETACH,
            ns.as_fd(),
        )?;
        Ok(MountWatch {
            fd,
            buf: vec![0; READ_BUF].into_boxed_slice(),
            fds: Vec::new(),
        })
    }

    /// Reads whatever is queued, in batches: one `read(2)` of a 64 KiB
    /// buffer per call; call again until it returns 0. Non-blocking: returns
    /// `Ok(0)` when nothing is queued (`EAGAIN`). Appends decoded events to
    /// `out` and returns how many.
    ///
    /// Any fd an event carries is closed here. On a malformed batch the
    /// events decoded before the bad one stay in `out`; the rest of the
    /// batch is lost, so the caller should rescan as on
    /// [`MountEvent::Overflow`].
    pub fn read_batch(&mut self, out: &mut Vec<MountEvent>) -> Result<usize> {
        let before = out.len();
        loop {
            let n = match rustix::io::read(&self.fd, &mut self.buf[..]) {
                Ok(n) => n,
                Err(Errno::AGAIN) => return Ok(0),
                Err(Errno::INTR) => continue,
                Err(errno) => {
                    return Err(Error::Syscall {
                        call: "read",
                        errno,
                    });
                }
            };
            if n == 0 {
                return Ok(0);
            }
            let res = decode_events_with_fds(&self.buf[..n], out, &mut self.fds);
            for fd in self.fds.drain(..) {
                close_event_fd(fd);
            }
            res?;
            // A batch of only unknown event kinds decodes to nothing; read
            // on, so that 0 keeps meaning "the queue is drained".
            if out.len() > before {
                return Ok(out.len() - before);
            }
        }
    }
}

impl std::fmt::Debug for MountWatch {
    // Not derived: the 64 KiB read buffer is noise.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MountWatch")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

impl AsFd for MountWatch {
    /// The fanotify fd, readable (`POLLIN`) when events are queued.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// `fanotify_init(flags, event_f_flags)`.
fn fanotify_init(flags: u32, event_f_flags: u32) -> Result<OwnedFd> {
    // SAFETY: plain integer arguments; returns a new fd or -1 with errno.
    let raw = unsafe { libc::fanotify_init(flags, event_f_flags) };
    if raw < 0 {
        return Err(Error::last_os("fanotify_init"));
    }
    // SAFETY: `raw` is a new fd that nothing else refers to; we take it.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// `fanotify_mark(fd, flags, mask, dirfd, NULL)`: a mark whose object is
/// given by `dirfd` itself, not by a path: a namespace mark's nsfs fd, or
/// any fd on the mount or filesystem to be marked.
fn fanotify_mark_fd(
    fd: BorrowedFd<'_>,
    flags: u32,
    mask: u64,
    dirfd: BorrowedFd<'_>,
) -> Result<()> {
    // SAFETY: both fds are open for the whole call (borrowed); a NULL path
    // is allowed and means "the object is dirfd itself".
    let r = unsafe {
        libc::fanotify_mark(
            fd.as_raw_fd(),
            flags,
            mask,
            dirfd.as_raw_fd(),
            std::ptr::null(),
        )
    };
    if r < 0 {
        return Err(Error::last_os("fanotify_mark"));
    }
    Ok(())
}

/// Closes an fd the kernel put in an event. Mount events carry `FAN_NOFD`;
/// should one ever carry an fd, it was opened for us and would leak.
fn close_event_fd(fd: RawFd) {
    if fd >= 0 {
        // SAFETY: `fd` came from the kernel in an event we just read: it is
        // a new fd in our table that nothing else knows, so we own it and
        // closing it cannot close anyone else's.
        drop(unsafe { OwnedFd::from_raw_fd(fd) });
    }
}
