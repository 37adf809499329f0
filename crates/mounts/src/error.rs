//! The error type of weir-mounts.

use std::io;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// /proc/self/mountinfo did not parse.
    #[error("mountinfo: {0}")]
    Mountinfo(#[from] crate::mountinfo::ParseError),
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

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
