//! The error type of weir-mounts.

use std::io;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// /proc/self/mountinfo did not parse. The message includes the
    /// parse error, which is therefore not also its `source()`: a chain
    /// printer would show it twice.
    #[error("mountinfo: {0}")]
    Mountinfo(crate::mountinfo::ParseError),
    /// Reading a file failed.
    #[error("{what}")]
    Io {
        /// What was being read.
        what: &'static str,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A system call failed.
    #[error(transparent)]
    Sys(#[from] weir_sys::Error),
    /// The fanotify backend cannot run here (kernel older than 6.15, or no
    /// CAP_SYS_ADMIN over the mount namespace).
    #[error("fanotify mount events are unavailable")]
    Fanotify(#[source] weir_sys::Error),
    /// The tracker's thread has stopped.
    #[error("the mount tracker has stopped")]
    Stopped,
    /// Another `sync()` of the same round failed (its caller got the cause).
    #[error("the mount table could not be brought up to date")]
    SyncFailed,
    /// Writing the changelog failed.
    #[error("writing the changelog")]
    Log(#[from] weir_log::Error),
}

impl From<crate::mountinfo::ParseError> for Error {
    fn from(e: crate::mountinfo::ParseError) -> Error {
        Error::Mountinfo(e)
    }
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
