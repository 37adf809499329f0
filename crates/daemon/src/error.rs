//! The error type of weir-daemon: one variant per way the daemon can fail
//! to start, run or stop, each with its typed cause.

use std::path::PathBuf;

use crate::checkpoint::CheckpointError;
use crate::config::ConfigError;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is invalid or incomplete.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The state directory could not be created.
    #[error("cannot create the state directory {path}")]
    StateDir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The state directory's path exists and is not a directory.
    #[error("the state directory {path} is not a directory")]
    StateDirNotDir {
        /// The path.
        path: PathBuf,
    },
    /// Another process holds the log for writing.
    #[error("the log in {path} is locked: {} holds it for writing", holder.map_or_else(|| "another process".to_owned(), |p| format!("another process (pid {p})")))]
    LogLocked {
        /// The log directory.
        path: PathBuf,
        /// The holder's pid, when known.
        holder: Option<u32>,
    },
    /// The log failed.
    #[error("{what}")]
    Log {
        /// What the daemon was doing.
        what: &'static str,
        /// The cause.
        #[source]
        source: weir_log::Error,
    },
    /// The async runtime or the signal handlers could not be set up.
    #[error("{what}")]
    Runtime {
        /// What failed.
        what: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Another daemon answers on the socket.
    #[error("another daemon is already answering on {path}")]
    AlreadyRunning {
        /// The socket.
        path: PathBuf,
    },
    /// The socket path is taken by something that is not a socket.
    #[error("{path} exists and is not a socket; refusing to replace it")]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
    /// Creating, binding or setting up the socket failed.
    #[error("{what} {path}")]
    Socket {
        /// What was being done.
        what: &'static str,
        /// The socket or its directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The socket-activation environment is malformed.
    #[error("socket activation")]
    Activation(#[from] weir_sys::activation::ActivationError),
    /// Socket activation passed fds, but none is a listening Unix stream
    /// socket.
    #[error("socket activation passed {count} fds, none a listening Unix stream socket")]
    NoActivatedListener {
        /// How many fds were passed.
        count: usize,
    },
    /// The mount tracker failed to start, or stopped with an error.
    #[error("the mount tracker failed")]
    Mounts(#[source] weir_mounts::Error),
    /// The device tracker failed to start, or stopped with an error.
    #[error("the device tracker failed")]
    Devices(#[source] weir_devices::Error),
    /// The filesystem tracker failed to start (a root that cannot be
    /// watched: missing, not a directory, overlapping another, on a
    /// filesystem without file handles, or without the privilege a
    /// filesystem mark needs), or stopped with an error.
    #[error("the filesystem tracker failed")]
    Fs(#[source] weir_fs::Error),
    /// The shipper could not start: no host name to ship under, or
    /// options it refuses.
    #[error("the shipper cannot start")]
    Ship(#[source] weir_ship::Error),
    /// A tracker's thread ended while the daemon ran.
    #[error("the {source_name} tracker stopped on its own")]
    SourceEnded {
        /// `mounts`, `devices` or `fs`.
        source_name: &'static str,
    },
    /// The API server stopped with an error.
    #[error("the API server failed")]
    Api(#[source] crate::api::Error),
    /// The API server ended without being asked to.
    #[error("the API server ended on its own")]
    ServerEnded,
    /// The API server's task panicked or was cancelled.
    #[error("the API server's task failed")]
    ServerTask(#[source] tokio::task::JoinError),
    /// The final inventory checkpoint could not be written.
    #[error("writing the inventory checkpoint")]
    Checkpoint(#[from] CheckpointError),
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
