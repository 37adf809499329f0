//! Socket activation (`sd_listen_fds(3)`): taking ownership of the
//! listening sockets a service manager passed to this process.
//!
//! systemd (or `systemd-socket-activate`) opens the sockets, places them at
//! fd 3 onwards, and says so in `LISTEN_PID` (the process they are meant
//! for) and `LISTEN_FDS` (how many). Turning those raw numbers into
//! `OwnedFd`s needs `unsafe`, hence this module; the environment itself is
//! hostile input and is parsed by safe code ([`parse_env`]).
//!
//! The variables are left in the environment: removing them is unsound
//! once other threads run, and a child sees a `LISTEN_PID` that is not its
//! own and ignores them. The fds are made close-on-exec, so children do not
//! inherit them, and a process-wide flag hands them out once.

use std::ffi::OsStr;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::io::Errno;

use crate::error::last_errno;

/// `SD_LISTEN_FDS_START`: the first passed fd.
pub const LISTEN_FDS_START: RawFd = 3;
/// The most fds taken; systemd passes one per `Listen…=` line, so a larger
/// count is a corrupt environment, not a configuration.
pub const MAX_LISTEN_FDS: u32 = 1024;

/// Set once the fds have been handed out.
static TAKEN: AtomicBool = AtomicBool::new(false);

/// What is wrong with the activation environment.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ActivationError {
    /// `LISTEN_PID` is not a process id.
    #[error("LISTEN_PID is not a process id: {value:?}")]
    BadPid {
        /// The value, lossily decoded.
        value: String,
    },
    /// `LISTEN_FDS` is not a count.
    #[error("LISTEN_FDS is not a count: {value:?}")]
    BadCount {
        /// The value, lossily decoded.
        value: String,
    },
    /// `LISTEN_FDS` is larger than any real service is given.
    #[error("LISTEN_FDS is {count}; at most {MAX_LISTEN_FDS} are accepted")]
    TooMany {
        /// The count.
        count: u32,
    },
    /// A passed fd is not open (the environment lied, or it was closed).
    #[error("fd {fd} from socket activation: {errno}")]
    NotOpen {
        /// The fd.
        fd: RawFd,
        /// What `fcntl` said.
        errno: Errno,
    },
}

/// How many fds the environment passes to process `own_pid`: 0 when the
/// variables are absent or meant for another process.
pub fn parse_env(
    listen_pid: Option<&OsStr>,
    listen_fds: Option<&OsStr>,
    own_pid: u32,
) -> Result<u32, ActivationError> {
    let (Some(pid), Some(fds)) = (listen_pid, listen_fds) else {
        return Ok(0);
    };
    let lossy = |s: &OsStr| s.to_string_lossy().into_owned();
    let pid: u32 = pid
        .to_str()
        .and_then(|s| s.parse().ok())
        .filter(|&p| p != 0)
        .ok_or_else(|| ActivationError::BadPid { value: lossy(pid) })?;
    if pid != own_pid {
        return Ok(0);
    }
    let count: u32 = fds
        .to_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| ActivationError::BadCount { value: lossy(fds) })?;
    if count > MAX_LISTEN_FDS {
        return Err(ActivationError::TooMany { count });
    }
    Ok(count)
}

/// The fds passed to this process, in order, owned and close-on-exec; empty
/// without socket activation, and on every call after the first that
/// returned some.
pub fn listen_fds() -> Result<Vec<OwnedFd>, ActivationError> {
    let count = parse_env(
        std::env::var_os("LISTEN_PID").as_deref(),
        std::env::var_os("LISTEN_FDS").as_deref(),
        std::process::id(),
    )?;
    if count == 0 || TAKEN.swap(true, Ordering::AcqRel) {
        return Ok(Vec::new());
    }
    // count <= MAX_LISTEN_FDS, so the sum cannot overflow.
    let end = LISTEN_FDS_START + RawFd::try_from(count).unwrap_or(0);
    let mut fds = Vec::with_capacity(count as usize);
    for fd in LISTEN_FDS_START..end {
        // SAFETY: fcntl(F_GETFD) only reads the flags of a descriptor
        // number; a number that is not open yields EBADF, no memory is
        // touched.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        if flags < 0 {
            return Err(ActivationError::NotOpen {
                fd,
                errno: last_errno(),
            });
        }
        // SAFETY: as above; F_SETFD only sets the descriptor's flags.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) } < 0 {
            return Err(ActivationError::NotOpen {
                fd,
                errno: last_errno(),
            });
        }
        // SAFETY: the fd is open (checked above) and was passed to this
        // process by its service manager for this purpose: nothing else in
        // the process owns it. TAKEN makes this the only place that takes
        // it, once, so no second OwnedFd for the same number can exist.
        fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    Ok(fds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pid: Option<&str>, fds: Option<&str>, own: u32) -> Result<u32, ActivationError> {
        parse_env(pid.map(OsStr::new), fds.map(OsStr::new), own)
    }

    #[test]
    fn counts_only_for_this_process() {
        assert_eq!(parse(Some("42"), Some("2"), 42), Ok(2));
        assert_eq!(parse(Some("41"), Some("2"), 42), Ok(0));
        assert_eq!(parse(None, Some("2"), 42), Ok(0));
        assert_eq!(parse(Some("42"), None, 42), Ok(0));
        assert_eq!(parse(Some("42"), Some("0"), 42), Ok(0));
    }

    #[test]
    fn refuses_garbage() {
        assert!(matches!(
            parse(Some("x"), Some("1"), 42),
            Err(ActivationError::BadPid { .. })
        ));
        assert!(matches!(
            parse(Some("0"), Some("1"), 0),
            Err(ActivationError::BadPid { .. })
        ));
        assert!(matches!(
            parse(Some("42"), Some("-1"), 42),
            Err(ActivationError::BadCount { .. })
        ));
        assert!(matches!(
            parse(Some("42"), Some("99999999999"), 42),
            Err(ActivationError::BadCount { .. })
        ));
        assert_eq!(
            parse(Some("42"), Some("1025"), 42),
            Err(ActivationError::TooMany { count: 1025 })
        );
    }

    #[test]
    fn no_environment_no_fds() {
        // The test harness is not socket-activated.
        if std::env::var_os("LISTEN_FDS").is_none() {
            assert!(listen_fds().unwrap().is_empty());
        }
    }
}
