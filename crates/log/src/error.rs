//! The error type of `weir-log`.
//!
//! Every failure a caller can act on has its own variant; none carries a
//! free-form message to be matched on.

use std::io;
use std::path::PathBuf;

/// Errors returned by the changelog.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation on the log directory failed.
    #[error("{op} {path}")]
    Io {
        /// What the log was doing.
        op: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// An earlier fsync failed; the log refuses writes until it is reopened,
    /// because the kernel may have dropped dirty pages it can no longer write.
    #[error("the log is poisoned by an earlier fsync failure; reopen it")]
    Poisoned,
    /// The log has been closed.
    #[error("the log is closed")]
    Closed,
    /// The filesystem is full and the log could not make room.
    #[error("no space left for the log (records stay queued and are written once space is freed)")]
    NoSpace,
    /// Records were not made durable, and the log recorded no write or
    /// fsync error to say why: the commit stage stopped short of them
    /// for a cause it did not record.
    #[error(
        "the records after index {durable} were not made durable, for a cause the log did not record"
    )]
    NotDurable {
        /// The last durable index.
        durable: u64,
    },
    /// Writers waited longer than the configured bound for the commit stage.
    #[error("append timed out after {waited_ms} ms: the commit stage is not draining ({cause})")]
    Stalled {
        /// How long the writer waited.
        waited_ms: u64,
        /// The last commit error, if any.
        cause: StallCause,
    },
    /// A record is larger than a segment can hold or the format allows.
    #[error("record of {size} bytes exceeds the limit of {limit} bytes")]
    RecordTooLarge {
        /// Encoded size of the record.
        size: usize,
        /// The largest encoded record accepted.
        limit: usize,
    },
    /// A record field is longer than its length prefix allows.
    #[error("record {field} is {len} bytes; the format allows at most {max}")]
    FieldTooLong {
        /// Which field.
        field: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Bytes on disk do not form a valid record or segment.
    #[error("corrupt log data in {path} at offset {offset}: {kind}")]
    Corrupt {
        /// The segment file.
        path: PathBuf,
        /// Byte offset of the bad data.
        offset: u64,
        /// What is wrong with it.
        kind: crate::codec::DecodeError,
    },
    /// The requested index is older than the oldest retained record.
    #[error("index {requested} was garbage-collected; the oldest retained index is {oldest}")]
    Truncated {
        /// The index asked for.
        requested: u64,
        /// The first index still in the log.
        oldest: u64,
    },
    /// Another process holds the writer lock on this log directory.
    #[error("the log in {path} is locked by another writer{}", holder.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Locked {
        /// The log directory.
        path: PathBuf,
        /// The pid recorded in the lock file, if readable.
        holder: Option<u32>,
    },
    /// No consumer has this name or id.
    #[error("no such consumer: {0}")]
    UnknownConsumer(String),
    /// A consumer with this name already exists.
    #[error("a consumer named {0:?} already exists")]
    ConsumerExists(String),
    /// A consumer name is empty, too long or has characters outside `[A-Za-z0-9._-]`.
    #[error("invalid consumer name {0:?}: use 1-64 characters from [A-Za-z0-9._-]")]
    BadConsumerName(String),
    /// A consumer tried to clear past the last committed record.
    #[error("cannot clear to {requested}: the last record is {last}")]
    ClearBeyondEnd {
        /// The index asked for.
        requested: u64,
        /// The last committed index.
        last: u64,
    },
    /// A wait for an index this log has not handed out: an [`Appended`]
    /// from another log, or from before a reopen that lost the tail it
    /// named.
    ///
    /// [`Appended`]: crate::Appended
    #[error("index {index} was not appended to this log (the next index is {next})")]
    NotAppended {
        /// The index waited for.
        index: u64,
        /// The index the next append gets.
        next: u64,
    },
    /// The consumer state file could not be parsed.
    #[error("consumer state file {path} is invalid")]
    BadConsumerState {
        /// The state file.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The consumer state file parses but breaks a rule the log keeps:
    /// too large, two consumers with one name or id, an id out of range,
    /// or a mask whose ranges are not sorted and disjoint.
    #[error("consumer state file {path} is invalid: {reason}")]
    ConsumerStateInvalid {
        /// The state file.
        path: PathBuf,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// A log holds at most this many consumers, or has handed out every
    /// consumer id.
    #[error("no room for another consumer (at most {limit}, and ids are never reused)")]
    TooManyConsumers {
        /// The most consumers a log holds.
        limit: usize,
    },
    /// Another consumer would make the consumer state file larger than an
    /// open reads back: masks of many ranges take the most room.
    #[error(
        "no room for another consumer: the consumer state file would pass {limit} bytes (masks of many ranges take the most room)"
    )]
    ConsumerStateFull {
        /// The largest state file an open reads.
        limit: u64,
    },
    /// An item of a type mask (or a record type) is neither a name, nor
    /// a number 0-65535, nor a range: empty, or a number out of range.
    #[error(
        "invalid record type {0:?}: expected a type name, a number 0-65535, a range A-B or \"all\""
    )]
    BadType(String),
    /// A record type name that no built-in type has.
    #[error(
        "unknown record type name {0:?}: the names are {names}, or give a number 0-65535 (see docs/records.md)",
        names = crate::kind::type_names()
    )]
    UnknownType(String),
    /// A range `A-B` of a type mask is malformed: a bound is missing, there
    /// are more than two, or `A` is above `B`.
    #[error(
        "invalid record type range {0:?}: expected A-B with A at most B, each a type name or a number 0-65535"
    )]
    BadTypeRange(String),
    /// A type mask's text lists more items than a mask may.
    #[error("a type mask may list at most {limit} items")]
    MaskTooLong {
        /// The most items a mask may list.
        limit: usize,
    },
    /// The options are inconsistent.
    #[error("invalid option {option}: {reason}")]
    BadOption {
        /// Which option.
        option: &'static str,
        /// Why it is rejected.
        reason: &'static str,
    },
    /// The incarnation file is not 32 lowercase hex digits and a newline.
    /// It is never replaced: records already shipped carry the old one.
    #[error("incarnation file {path} is damaged; restore it, or remove it to start a new history")]
    BadIncarnation {
        /// The incarnation file.
        path: PathBuf,
    },
    /// The directory holds a log of a format this build does not read.
    #[error("{path} has log format version {found}; this build reads version {supported}")]
    UnsupportedVersion {
        /// The segment file.
        path: PathBuf,
        /// The version found.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
}

/// Why writers stalled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StallCause {
    /// The commit stage is slow but reports no error.
    Slow,
    /// The commit stage is failing to write (for example, a full disk).
    WriteFailing,
}

impl std::fmt::Display for StallCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StallCause::Slow => "the commit stage is slow",
            StallCause::WriteFailing => "writes are failing",
        })
    }
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        if source.raw_os_error() == Some(rustix::io::Errno::NOSPC.raw_os_error()) {
            return Error::NoSpace;
        }
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
