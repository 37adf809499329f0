//! The kernel's uevent stream: a `NETLINK_KOBJECT_UEVENT` socket bound to
//! the kernel's multicast group (1) and/or udev's (2).
//!
//! The socket, its options and `bind` go through rustix. `recvmsg` does
//! not: rustix decodes `SCM_CREDENTIALS` into a `UCred` whose `pid` is a
//! `NonZeroI32`, and the kernel sends its own uevents with pid 0. So the
//! call is made with `libc` and the control bytes are decoded here by safe
//! code ([`decode_creds`]) that checks every length.
//!
//! This layer only reports facts about each message (sender port, group,
//! credentials, truncation); which senders to trust is the caller's choice.
//! The rule is: group 1 comes from the kernel (port 0), udev's messages from
//! uid 0. Anyone may open a socket, so anything else is forged.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::io::Errno;
use rustix::net::netlink::{KOBJECT_UEVENT, SocketAddrNetlink};
use rustix::net::{AddressFamily, SocketFlags, SocketType};

use crate::{Error, Result};

/// The kernel's multicast group: raw uevents, `ACTION@DEVPATH\0…`.
pub const UEVENT_GROUP_KERNEL: u32 = 1;
/// udev's multicast group: uevents re-sent by udevd after its rules ran,
/// with a `libudev\0` header.
pub const UEVENT_GROUP_UDEV: u32 = 2;
/// The receive buffer asked for. A storm of thousands of devices (a SAN
/// rescan) must not overflow it before the reader wakes.
pub const RCVBUF_BYTES: usize = 128 * 1024 * 1024;
/// A buffer this long holds any uevent: the kernel's are under 2 KiB
/// (`UEVENT_BUFFER_SIZE`), udevd's fit the 8 KiB that libudev reads.
pub const MAX_MESSAGE: usize = 8192;

/// `SOL_SOCKET`/`SCM_CREDENTIALS`, as `struct cmsghdr` names them.
const SOL_SOCKET: i32 = 1;
const SCM_CREDENTIALS: i32 = 2;
/// `sizeof(struct ucred)`: pid, uid, gid.
const UCRED_LEN: usize = 12;
/// The control buffer: room for one `SCM_CREDENTIALS` and some slack, as
/// 8-byte words so that it is aligned like a `cmsghdr`.
const CONTROL_WORDS: usize = 8;

/// Which multicast groups to join.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Groups {
    /// Group 1: the kernel's own uevents.
    pub kernel: bool,
    /// Group 2: udevd's re-sent uevents.
    pub udev: bool,
}

impl Groups {
    /// The `nl_groups` bit mask for `bind`.
    pub fn mask(self) -> u32 {
        let mut m = 0;
        if self.kernel {
            m |= group_bit(UEVENT_GROUP_KERNEL);
        }
        if self.udev {
            m |= group_bit(UEVENT_GROUP_UDEV);
        }
        m
    }
}

/// Credentials the sender's kernel attached (`SCM_CREDENTIALS`); all zero
/// for a message from the kernel itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Creds {
    /// The sending process, 0 for the kernel.
    pub pid: i32,
    /// Its user id.
    pub uid: u32,
    /// Its group id.
    pub gid: u32,
}

/// The facts about one received message; its bytes are `buf[..len]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// How many bytes of the caller's buffer hold the message.
    pub len: usize,
    /// The message was longer than the buffer and was cut (`MSG_TRUNC`).
    pub truncated: bool,
    /// The sender's netlink port id: 0 for the kernel.
    pub port_id: u32,
    /// The multicast group it was sent to (1 kernel, 2 udev); `None` for a
    /// unicast message.
    pub group: Option<u32>,
    /// The sender's credentials; `None` if the kernel attached none.
    pub creds: Option<Creds>,
}

impl Message {
    /// The sender's uid, from its credentials.
    pub fn uid(&self) -> Option<u32> {
        self.creds.map(|c| c.uid)
    }
}

/// What one [`UeventSocket::recv`] got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recv {
    /// A message.
    Message(Message),
    /// Nothing is queued.
    WouldBlock,
    /// The receive buffer overflowed (`ENOBUFS`): the kernel dropped
    /// messages, so the caller must resync from sysfs.
    Overflow,
}

/// A non-blocking uevent socket, pollable (`POLLIN`) through [`AsFd`].
#[derive(Debug)]
pub struct UeventSocket {
    fd: OwnedFd,
}

impl UeventSocket {
    /// Opens the socket, turns on `SO_PASSCRED`, grows the receive buffer
    /// to [`RCVBUF_BYTES`] (`SO_RCVBUFFORCE` with `CAP_NET_ADMIN`, else
    /// `SO_RCVBUF`, which the kernel caps at `rmem_max`) and binds to
    /// `groups`. With no group it receives nothing but unicasts.
    pub fn open(groups: Groups) -> Result<UeventSocket> {
        let fd = rustix::net::socket_with(
            AddressFamily::NETLINK,
            SocketType::DGRAM,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
            Some(KOBJECT_UEVENT),
        )
        .map_err(Error::syscall("socket"))?;
        rustix::net::sockopt::set_socket_passcred(&fd, true)
            .map_err(Error::syscall("setsockopt SO_PASSCRED"))?;
        if rustix::net::sockopt::set_socket_recv_buffer_size_force(&fd, RCVBUF_BYTES).is_err() {
            rustix::net::sockopt::set_socket_recv_buffer_size(&fd, RCVBUF_BYTES)
                .map_err(Error::syscall("setsockopt SO_RCVBUF"))?;
        }
        rustix::net::bind(&fd, &SocketAddrNetlink::new(0, groups.mask()))
            .map_err(Error::syscall("bind"))?;
        Ok(UeventSocket { fd })
    }

    /// The receive buffer the kernel granted, in bytes (`SO_RCVBUF`; the
    /// kernel reports twice what was set, for its bookkeeping).
    pub fn recv_buffer_size(&self) -> Result<usize> {
        rustix::net::sockopt::socket_recv_buffer_size(&self.fd)
            .map_err(Error::syscall("getsockopt SO_RCVBUF"))
    }

    /// Receives one message into `buf` (use [`MAX_MESSAGE`] bytes). Never
    /// blocks; retries on `EINTR`.
    pub fn recv(&mut self, buf: &mut [u8]) -> Result<Recv> {
        loop {
            match recvmsg(self.fd.as_fd(), buf) {
                Ok(m) => return Ok(Recv::Message(m)),
                Err(Error::Syscall {
                    errno: Errno::INTR, ..
                }) => continue,
                Err(Error::Syscall {
                    errno: Errno::AGAIN,
                    ..
                }) => return Ok(Recv::WouldBlock),
                Err(Error::Syscall {
                    errno: Errno::NOBUFS,
                    ..
                }) => return Ok(Recv::Overflow),
                Err(e) => return Err(e),
            }
        }
    }
}

impl AsFd for UeventSocket {
    /// The socket, readable (`POLLIN`) when a message is queued.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// `recvmsg(fd, {buf}, control for SCM_CREDENTIALS, 0)`.
fn recvmsg(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<Message> {
    // SAFETY: `sockaddr_nl` is plain integers; all-zero is a valid value.
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    let mut control = [0u64; CONTROL_WORDS];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero msghdr is valid (null pointers, zero lengths);
    // the fields that matter are set just below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&raw mut addr).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_nl>() as libc::socklen_t;
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control) as _;
    // SAFETY: every pointer in `msg` points to a live local or to `buf`,
    // each with the length given beside it, and all outlive the call; the
    // kernel writes at most those lengths. `MSG_CMSG_CLOEXEC`: should an fd
    // ever arrive, it must not leak into children.
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &raw mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(Error::last_os("recvmsg"));
    }
    let len = usize::try_from(n).map_err(|_| Error::Malformed {
        what: "recvmsg returned a negative length",
    })?;
    if (msg.msg_namelen as usize) < size_of::<libc::sockaddr_nl>()
        || i32::from(addr.nl_family) != libc::AF_NETLINK
    {
        return Err(Error::Malformed {
            what: "recvmsg gave no netlink sender address",
        });
    }
    let control_len = (msg.msg_controllen as usize).min(size_of_val(&control));
    let mut control_bytes = [0u8; CONTROL_WORDS * 8];
    for (b, w) in control_bytes.chunks_exact_mut(8).zip(control) {
        b.copy_from_slice(&w.to_ne_bytes());
    }
    Ok(Message {
        len: len.min(buf.len()),
        truncated: msg.msg_flags & libc::MSG_TRUNC != 0,
        port_id: addr.nl_pid,
        group: lowest_group(addr.nl_groups),
        creds: decode_creds(&control_bytes[..control_len])?,
    })
}

/// The `nl_groups` bit of multicast group `group` (1-based).
fn group_bit(group: u32) -> u32 {
    1 << (group - 1)
}

/// The group a message was sent to, from the `nl_groups` mask the kernel
/// puts in the sender address (one bit for a multicast, none for unicast).
fn lowest_group(mask: u32) -> Option<u32> {
    (mask != 0).then(|| mask.trailing_zeros() + 1)
}

/// Finds `SCM_CREDENTIALS` in the control bytes of a `recvmsg`: a run of
/// `cmsghdr { size_t cmsg_len; int cmsg_level; int cmsg_type; }`, each
/// followed by its data and padded to a `size_t` boundary. Safe code, total
/// on any input: a header whose length points outside the bytes is
/// [`Error::Malformed`].
pub fn decode_creds(control: &[u8]) -> Result<Option<Creds>> {
    const WORD: usize = size_of::<usize>();
    let hdr_len = align(WORD + 8);
    let mut off = 0usize;
    while control.len().saturating_sub(off) >= hdr_len {
        let cmsg_len = usize_at(control, off).ok_or(MALFORMED_CMSG)?;
        let level = i32_at(control, off + WORD).ok_or(MALFORMED_CMSG)?;
        let kind = i32_at(control, off + WORD + 4).ok_or(MALFORMED_CMSG)?;
        let end = off.checked_add(cmsg_len).ok_or(MALFORMED_CMSG)?;
        if cmsg_len < hdr_len || end > control.len() {
            return Err(MALFORMED_CMSG);
        }
        let data = &control[off + hdr_len..end];
        if level == SOL_SOCKET && kind == SCM_CREDENTIALS {
            if data.len() < UCRED_LEN {
                return Err(MALFORMED_CMSG);
            }
            return Ok(Some(Creds {
                pid: i32_at(data, 0).ok_or(MALFORMED_CMSG)?,
                uid: u32_at(data, 4).ok_or(MALFORMED_CMSG)?,
                gid: u32_at(data, 8).ok_or(MALFORMED_CMSG)?,
            }));
        }
        off = off.saturating_add(align(cmsg_len));
    }
    Ok(None)
}

const MALFORMED_CMSG: Error = Error::Malformed {
    what: "control message length outside the buffer",
};

/// `CMSG_ALIGN`: rounds up to a multiple of `size_t`.
fn align(len: usize) -> usize {
    let word = size_of::<usize>();
    len.saturating_add(word - 1) / word * word
}

fn usize_at(buf: &[u8], off: usize) -> Option<usize> {
    const WORD: usize = size_of::<usize>();
    let b: [u8; WORD] = buf.get(off..off.checked_add(WORD)?)?.try_into().ok()?;
    Some(usize::from_ne_bytes(b))
}

fn u32_at(buf: &[u8], off: usize) -> Option<u32> {
    crate::bytes::u32_at(buf, off)
}

fn i32_at(buf: &[u8], off: usize) -> Option<i32> {
    crate::bytes::i32_at(buf, off)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One control message as the kernel lays it out.
    fn cmsg(level: i32, kind: i32, data: &[u8]) -> Vec<u8> {
        let hdr = align(size_of::<usize>() + 8);
        let mut v = Vec::new();
        v.extend_from_slice(&(hdr + data.len()).to_ne_bytes());
        v.extend_from_slice(&level.to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.resize(hdr, 0);
        v.extend_from_slice(data);
        v.resize(align(v.len()), 0);
        v
    }

    fn ucred(pid: i32, uid: u32, gid: u32) -> Vec<u8> {
        [pid.to_ne_bytes(), uid.to_ne_bytes(), gid.to_ne_bytes()].concat()
    }

    #[test]
    fn finds_credentials_after_other_messages() {
        let mut c = cmsg(SOL_SOCKET, 99, &[1, 2, 3]);
        c.extend(cmsg(SOL_SOCKET, SCM_CREDENTIALS, &ucred(0, 0, 0)));
        assert_eq!(
            decode_creds(&c).unwrap(),
            Some(Creds {
                pid: 0,
                uid: 0,
                gid: 0
            })
        );
        let c = cmsg(SOL_SOCKET, SCM_CREDENTIALS, &ucred(4242, 1000, 100));
        assert_eq!(decode_creds(&c).unwrap().map(|c| c.uid), Some(1000));
        assert_eq!(decode_creds(&c).unwrap().map(|c| c.pid), Some(4242));
    }

    #[test]
    fn no_credentials_and_short_tails_are_none() {
        assert_eq!(decode_creds(&[]).unwrap(), None);
        assert_eq!(decode_creds(&[0; 7]).unwrap(), None);
        let c = cmsg(6, SCM_CREDENTIALS, &ucred(1, 2, 3));
        assert_eq!(decode_creds(&c).unwrap(), None, "wrong level");
    }

    #[test]
    fn lengths_outside_the_buffer_are_malformed() {
        let mut c = cmsg(SOL_SOCKET, SCM_CREDENTIALS, &ucred(1, 2, 3));
        c[..size_of::<usize>()].copy_from_slice(&usize::MAX.to_ne_bytes());
        assert!(matches!(decode_creds(&c), Err(Error::Malformed { .. })));
        c[..size_of::<usize>()].copy_from_slice(&3usize.to_ne_bytes());
        assert!(matches!(decode_creds(&c), Err(Error::Malformed { .. })));
        let short = cmsg(SOL_SOCKET, SCM_CREDENTIALS, &[0; 4]);
        assert!(matches!(decode_creds(&short), Err(Error::Malformed { .. })));
    }

    #[test]
    fn group_masks() {
        assert_eq!(Groups::default().mask(), 0);
        assert_eq!(
            Groups {
                kernel: true,
                udev: false
            }
            .mask(),
            1
        );
        assert_eq!(
            Groups {
                kernel: true,
                udev: true
            }
            .mask(),
            3
        );
        assert_eq!(lowest_group(0), None);
        assert_eq!(lowest_group(1), Some(UEVENT_GROUP_KERNEL));
        assert_eq!(lowest_group(2), Some(UEVENT_GROUP_UDEV));
    }

    proptest::proptest! {
        #[test]
        fn decode_creds_is_total(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..96)) {
            let _ = decode_creds(&bytes);
        }
    }
}
