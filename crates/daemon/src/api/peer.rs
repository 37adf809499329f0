//! Who is on the other end of a connection: the credentials the kernel
//! recorded when the peer connected (`SO_PEERCRED` for pid, uid and gid,
//! `SO_PEERGROUPS` for the supplementary groups).
//!
//! They are read once at accept and put into every request of the
//! connection as an extension; tests put a [`Peer`] of their choosing into
//! the requests they send to [`crate::api::router`].

use std::os::fd::AsFd;

/// The credentials of a connection's peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// Its pid (as seen from the daemon's pid namespace; `None` when the
    /// kernel could not map it).
    pub pid: Option<u32>,
    /// Its effective uid.
    pub uid: u32,
    /// Its effective gid.
    pub gid: u32,
    /// Its supplementary groups.
    pub groups: Vec<u32>,
}

impl Peer {
    /// A peer with these ids and no supplementary groups (for tests and
    /// in-process callers).
    pub fn new(uid: u32, gid: u32) -> Peer {
        Peer {
            pid: None,
            uid,
            gid,
            groups: Vec::new(),
        }
    }

    /// Reads the credentials of the peer of a connected Unix socket.
    pub fn of(socket: impl AsFd) -> Result<Peer, PeerError> {
        let fd = socket.as_fd();
        let cred = rustix::net::sockopt::socket_peercred(fd).map_err(PeerError::Cred)?;
        let groups = weir_sys::peer::peer_groups(fd).map_err(PeerError::Groups)?;
        Ok(Peer {
            pid: u32::try_from(cred.pid.as_raw_nonzero().get()).ok(),
            uid: cred.uid.as_raw(),
            gid: cred.gid.as_raw(),
            groups,
        })
    }

    /// Whether the peer has `gid` as its primary or a supplementary group.
    pub fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.groups.contains(&gid)
    }
}

/// Why a peer's credentials could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeerError {
    /// `getsockopt(SO_PEERCRED)` failed.
    #[error("reading the peer's credentials (SO_PEERCRED)")]
    Cred(#[source] rustix::io::Errno),
    /// `getsockopt(SO_PEERGROUPS)` failed.
    #[error("reading the peer's groups (SO_PEERGROUPS)")]
    Groups(#[source] weir_sys::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socketpair_peer_is_this_process() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let p = Peer::of(&a).unwrap();
        assert_eq!(p.pid, Some(std::process::id()));
        assert_eq!(p.uid, rustix::process::geteuid().as_raw());
        assert_eq!(p.gid, rustix::process::getegid().as_raw());
        assert!(p.in_group(p.gid));
    }

    #[test]
    fn membership_counts_supplementary_groups() {
        let mut p = Peer::new(1000, 1000);
        assert!(!p.in_group(27));
        p.groups.push(27);
        assert!(p.in_group(27) && p.in_group(1000));
    }
}
