//! The index's errors: one typed variant per way a call can fail.

use std::path::PathBuf;

use crate::types::RootNo;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file is not a redb database, or one too damaged to open.
    #[error("{}: not an index file (or a damaged one)", path.display())]
    NotAnIndex {
        /// The file.
        path: PathBuf,
        /// What the store said, if it got that far.
        #[source]
        source: Option<redb::DatabaseError>,
    },
    /// The file could not be opened or created.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A redb database, but not one this crate wrote: it has tables and no
    /// format record.
    #[error("{}: a database of something else (no weir-fsindex format record)", path.display())]
    Foreign {
        /// The file.
        path: PathBuf,
    },
    /// The file's format version is one this build does not know: written
    /// by a newer weir, or damaged. Nothing in it is read.
    #[error("{}: index format version {found}, this build reads only {known}", path.display())]
    UnknownVersion {
        /// The file.
        path: PathBuf,
        /// The version it holds.
        found: u32,
        /// The version this build reads and writes.
        known: u32,
    },
    /// Another process (or another `Index` in this one) has the file open.
    #[error("{}: the index is open elsewhere", path.display())]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// A row the index wrote does not decode: the file is damaged.
    #[error("damaged index: a {what} in table {table} does not decode")]
    Corrupt {
        /// The table.
        table: &'static str,
        /// The part that is wrong.
        what: &'static str,
    },
    /// The store failed (I/O, a failed checksum, a commit that did not
    /// complete).
    #[error("index store: {0}")]
    Store(#[source] redb::Error),
    /// An id is empty or longer than [`ID_MAX`](crate::ID_MAX) bytes.
    #[error("an id of {len} bytes (1 to 255 are allowed)")]
    IdLength {
        /// Its length.
        len: usize,
    },
    /// A name is longer than [`NAME_MAX`](crate::NAME_MAX) bytes.
    #[error("a name of {len} bytes (at most 255 are allowed)")]
    NameLength {
        /// Its length.
        len: usize,
    },
    /// A root's path or log identity is longer than
    /// [`PATH_MAX`](crate::PATH_MAX) bytes.
    #[error("a root path or log identity of {len} bytes (at most 4096 are allowed)")]
    PathLength {
        /// Its length.
        len: usize,
    },
    /// A batch names a root the index does not hold.
    #[error("{0} is not in the index")]
    NoRoot(RootNo),
    /// A batch sets the times of a directory the index does not hold.
    #[error("{root}: no directory with that id")]
    NoDir {
        /// The root.
        root: RootNo,
        /// The directory's id.
        id: Vec<u8>,
    },
    /// A root with that path is already complete in the index.
    #[error("a root with path {path:?} is already in the index")]
    RootExists {
        /// The path.
        path: Vec<u8>,
    },
    /// A batch sets a root's covered index below the one it has: the index
    /// only moves forward along the log.
    #[error("{root}: covered index {given} is below the stored {stored}")]
    CoveredBackwards {
        /// The root.
        root: RootNo,
        /// What it covers.
        stored: u64,
        /// What the batch set.
        given: u64,
    },
    /// A snapshot is still open: compaction needs every one dropped.
    #[error("a snapshot of the index is still open")]
    SnapshotOpen,
    /// Every root number has been given out.
    #[error("no root number left")]
    RootsExhausted,
}

/// The index's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

macro_rules! from_store {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::Store(e.into())
            }
        }
    )*};
}

from_store!(
    redb::Error,
    redb::StorageError,
    redb::TableError,
    redb::TransactionError,
    redb::CommitError
);
