//! The supplementary groups of the peer of a connected Unix socket
//! (`SO_PEERGROUPS`, Linux 4.13+).
//!
//! rustix offers `SO_PEERCRED` (pid, uid, primary gid) but not the group
//! list, and the daemon's access rule ("a member of group `weir`") needs
//! it: most members have `weir` as a supplementary group, not as their
//! primary one. The kernel captured both at `connect` time, so they are the
//! credentials of whoever opened the connection, not of a later holder of
//! the fd.
//!
//! The answer is decoded by safe code ([`decode_groups`]) that checks its
//! length, so a short or odd answer is an error rather than garbage.

use std::os::fd::{AsRawFd, BorrowedFd};

use rustix::io::Errno;

use crate::error::last_errno;
use crate::{Error, Result};

/// `SO_PEERGROUPS` (asm-generic/socket.h; the same on x86 and arm).
const SO_PEERGROUPS: i32 = 59;
/// `SOL_SOCKET`.
const SOL_SOCKET: i32 = 1;
/// `sizeof(gid_t)`.
const GID_LEN: usize = 4;
/// The first buffer: room for 64 groups, which fits nearly everyone.
const FIRST_GROUPS: usize = 64;
/// `NGROUPS_MAX` (65536): the kernel never holds more groups per cred, so
/// a larger size asked for is refused before allocating.
const MAX_GROUPS: usize = 65536;

/// The supplementary groups of the process that connected `fd`'s peer end,
/// as the kernel recorded them at `connect`.
pub fn peer_groups(fd: BorrowedFd<'_>) -> Result<Vec<u32>> {
    let mut buf = vec![0u8; FIRST_GROUPS * GID_LEN];
    // At most two rounds: the list is fixed at connect, so the size the
    // kernel asks for in the first round is enough for the second.
    for _ in 0..2 {
        match getsockopt_groups(fd, &mut buf) {
            Ok(len) => {
                return decode_groups(buf.get(..len).ok_or(Error::Malformed {
                    what: "SO_PEERGROUPS length exceeds the buffer",
                })?);
            }
            Err(Errno::RANGE) => {
                // The kernel wrote the size it needs into the length.
                let need = buf.len();
                if need > MAX_GROUPS * GID_LEN {
                    return Err(Error::Malformed {
                        what: "SO_PEERGROUPS asks for more than NGROUPS_MAX groups",
                    });
                }
            }
            Err(errno) => {
                return Err(Error::Syscall {
                    call: "getsockopt(SO_PEERGROUPS)",
                    errno,
                });
            }
        }
    }
    Err(Error::Malformed {
        what: "SO_PEERGROUPS kept asking for a larger buffer",
    })
}

/// One `getsockopt(SOL_SOCKET, SO_PEERGROUPS)` into `buf`. On success the
/// answer's length; on `ERANGE`, `buf` is resized to the length the kernel
/// said it needs (bounded by the caller).
fn getsockopt_groups(fd: BorrowedFd<'_>, buf: &mut Vec<u8>) -> std::result::Result<usize, Errno> {
    let cap = buf.len().min(MAX_GROUPS * GID_LEN);
    let mut len = libc::socklen_t::try_from(cap).map_err(|_| Errno::RANGE)?;
    // SAFETY: `buf` is a live, writable allocation of at least `len` bytes
    // (cap <= buf.len()), and `len` is a live local; the kernel writes at
    // most `len` bytes to the buffer and one socklen_t to `len`. A gid_t
    // array needs no alignment beyond bytes here, since we decode the bytes
    // ourselves.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            SOL_SOCKET,
            SO_PEERGROUPS,
            buf.as_mut_ptr().cast(),
            &raw mut len,
        )
    };
    let got = usize::try_from(len).map_err(|_| Errno::RANGE)?;
    if r == 0 {
        return Ok(got);
    }
    let errno = last_errno();
    if errno == Errno::RANGE {
        // Grow to what the kernel asked for, or past the bound so that the
        // caller refuses it.
        buf.resize(got.min(MAX_GROUPS * GID_LEN + GID_LEN), 0);
    }
    Err(errno)
}

/// Decodes an `SO_PEERGROUPS` answer: native-endian `gid_t`s. A length
/// that is not a whole number of gids is an error.
pub fn decode_groups(bytes: &[u8]) -> Result<Vec<u32>> {
    if !bytes.len().is_multiple_of(GID_LEN) {
        return Err(Error::Malformed {
            what: "SO_PEERGROUPS answer is not a whole number of gids",
        });
    }
    Ok(bytes
        .chunks_exact(GID_LEN)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn decodes_whole_gids_only() {
        let mut b = Vec::new();
        for g in [0u32, 27, 65534] {
            b.extend_from_slice(&g.to_ne_bytes());
        }
        assert_eq!(decode_groups(&b).unwrap(), [0, 27, 65534]);
        assert!(decode_groups(&b[..5]).is_err());
        assert_eq!(decode_groups(&[]).unwrap(), Vec::<u32>::new());
    }

    #[test]
    fn a_socketpair_peer_has_our_groups() {
        let (a, _b) = UnixStream::pair().unwrap();
        let mut got = peer_groups(a.as_fd()).unwrap();
        let mut want = rustix::process::getgroups()
            .unwrap()
            .into_iter()
            .map(|g| g.as_raw())
            .collect::<Vec<_>>();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
    }

    /// More groups than the first buffer holds: the ERANGE round. Only this
    /// thread's credentials change (the raw syscall, not glibc's
    /// process-wide one), and they end with the thread.
    #[test]
    fn many_groups_take_a_second_round() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipping: setting groups needs root");
            return;
        }
        let want: Vec<u32> = (1000..1000 + 3 * FIRST_GROUPS as u32).collect();
        let w = want.clone();
        let got = std::thread::spawn(move || {
            let gids: Vec<rustix::process::Gid> = w
                .iter()
                .map(|&g| rustix::process::Gid::from_raw(g))
                .collect();
            rustix::thread::set_thread_groups(&gids).unwrap();
            let (a, _b) = UnixStream::pair().unwrap();
            peer_groups(a.as_fd()).unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(got, want);
    }

    #[test]
    fn not_a_socket_is_a_syscall_error() {
        let f = std::fs::File::open("/proc/self/stat").unwrap();
        let e = peer_groups(f.as_fd()).unwrap_err();
        assert_eq!(e.errno(), Some(Errno::NOTSOCK));
    }
}
