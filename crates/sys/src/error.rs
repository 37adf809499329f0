//! The error type of weir-sys.
//!
//! Callers must tell "the mount is gone" (ENOENT), "no privilege" (EPERM)
//! and "kernel too old" (ENOSYS, EINVAL) apart, so a failed call keeps its
//! errno as a value ([`Error::errno`]) rather than only as text.

use rustix::io::Errno;

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A system call failed.
    #[error("{call}: {errno}")]
    Syscall {
        /// The call, by its kernel name (`"statmount"`, `"fanotify_mark"`).
        call: &'static str,
        /// What the kernel said.
        errno: Errno,
    },
    /// The kernel returned bytes that do not decode (a truncated record, a
    /// length or offset outside the buffer, a string without its NUL).
    #[error("malformed kernel answer: {what}")]
    Malformed {
        /// Which check failed.
        what: &'static str,
    },
    /// An inotify `read` returned events that do not decode.
    #[error("malformed inotify events")]
    InotifyDecode(#[from] crate::inotify::DecodeError),
    /// A fanotify file-id `read` returned events that do not decode.
    #[error("malformed fanotify file-id events")]
    FidDecode(#[from] crate::fanotify::fid::DecodeError),
    /// The call succeeded but the kernel did not answer what was asked,
    /// because it is too old to know it.
    #[error("not supported by this kernel: {what}")]
    Unsupported {
        /// What was missing from the answer.
        what: &'static str,
    },
}

impl Error {
    /// The errno of a failed system call, `None` for the other errors.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            Error::Syscall { errno, .. } => Some(*errno),
            _ => None,
        }
    }

    /// Builds [`Error::Syscall`] from the thread's current `errno`, for the
    /// calls made through `libc` that return -1 and set it.
    pub(crate) fn last_os(call: &'static str) -> Error {
        Error::Syscall {
            call,
            errno: last_errno(),
        }
    }

    /// A `map_err` adapter for rustix results.
    pub(crate) fn syscall(call: &'static str) -> impl FnOnce(Errno) -> Error {
        move |errno| Error::Syscall { call, errno }
    }
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The thread's current `errno`, for the calls made through `libc` that
/// return -1 and set it.
pub(crate) fn last_errno() -> Errno {
    Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_is_kept_as_a_value() {
        let e = Error::Syscall {
            call: "statmount",
            errno: Errno::NOENT,
        };
        assert_eq!(e.errno(), Some(Errno::NOENT));
        assert!(e.to_string().starts_with("statmount: "), "{e}");
        let m = Error::Malformed { what: "x" };
        assert_eq!(m.errno(), None);
        assert_eq!(m.to_string(), "malformed kernel answer: x");
        let i = Error::from(crate::inotify::DecodeError::Truncated { at: 16 });
        assert_eq!(i.errno(), None);
        let source = std::error::Error::source(&i).map(ToString::to_string);
        assert_eq!(
            source.as_deref(),
            Some("inotify event at byte 16: header truncated")
        );
    }
}
