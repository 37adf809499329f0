//! The error type of weir-fs.

use std::path::PathBuf;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A system call failed.
    #[error(transparent)]
    Sys(#[from] weir_sys::Error),
    /// A root could not be opened or examined.
    #[error("{}: {what}", path.display())]
    Root {
        /// The root.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The cause.
        #[source]
        source: weir_sys::Error,
    },
    /// A root is not a directory.
    #[error("{}: not a directory", path.display())]
    NotADirectory {
        /// The root.
        path: PathBuf,
    },
    /// Two roots overlap: one is inside the other.
    #[error("{} is inside {}: watched roots may not overlap", inner.display(), outer.display())]
    Overlap {
        /// The root inside.
        inner: PathBuf,
        /// The root around it.
        outer: PathBuf,
    },
    /// The filesystem cannot be watched: it has no file handles (some
    /// FUSE, NFS without them, overlayfs, procfs, sysfs), or the kernel
    /// refuses its mark.
    #[error("{}: its filesystem ({fstype}) cannot be watched: {reason}", path.display())]
    Unwatchable {
        /// The root.
        path: PathBuf,
        /// Its filesystem type.
        fstype: String,
        /// Why, in words.
        reason: &'static str,
        /// The kernel's refusal.
        #[source]
        source: weir_sys::Error,
    },
    /// The caller lacks the privilege a filesystem mark needs.
    #[error(
        "{}: watching a filesystem needs CAP_SYS_ADMIN in the user namespace that owns it \
         (for a host filesystem, the initial one: run as root); weir does not fall back to \
         anything weaker",
        path.display()
    )]
    NotPrivileged {
        /// The root.
        path: PathBuf,
        /// The kernel's refusal.
        #[source]
        source: weir_sys::Error,
    },
    /// The kernel is too old for file-id events on whole filesystems.
    #[error("fanotify with file ids and FAN_RENAME needs Linux 5.17 or later")]
    Kernel(#[source] weir_sys::Error),
    /// The tracker's thread has stopped.
    #[error("the filesystem tracker has stopped")]
    Stopped,
    /// Appending to the changelog failed since the last `sync()`: records
    /// may be missing until the log works again (the error was logged
    /// with `tracing` when it happened).
    #[error("the filesystem tracker could not append every record to the changelog")]
    SyncFailed,
    /// Writing or reading the changelog failed.
    #[error("the changelog")]
    Log(#[from] weir_log::Error),
    /// Starting the tracker's thread failed.
    #[error("starting the filesystem tracker thread")]
    Thread(#[source] std::io::Error),
    /// The trees' persistent copy's file or directory could not be made
    /// or set aside.
    #[error("{}: {what} (the trees' persistent copy)", path.display())]
    IndexFile {
        /// The file or directory.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A rescan was asked of a path the tracker does not watch (or no
    /// longer does: its root was removed or moved away).
    #[error("{}: not a watched root", path.display())]
    NotARoot {
        /// The path asked about.
        path: PathBuf,
    },
    /// Reading or writing the trees' persistent copy failed.
    #[error("the trees' persistent copy")]
    Index(#[source] weir_fsindex::Error),
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
