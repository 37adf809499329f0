//! `weir-log`: a concurrent, durable, multi-consumer changelog.
//!
//! Records get a gap-free `u64` index at append. Many threads append at once
//! with no global lock: each claims its index with one compare-and-swap and
//! encodes its record into its own ring slot, and a single committer writes
//! batches to preallocated segment files and syncs them (group commit).
//! A byte once written is never rewritten, and every durable commit is padded
//! to a 4 KiB boundary, so segments stay contiguous on copy-on-write
//! filesystems. Consumers register with a type mask, read from their cursor
//! and clear what they have processed; segments everyone has cleared are
//! deleted.
//!
//! The crate knows nothing about Linux objects: record types, ids and names
//! are opaque to it. The on-disk format is specified in `docs/format.md`.
//!
//! ```no_run
//! use weir_log::{Log, Options, Record, RecordType};
//! let log = Log::open("/tmp/example-log", Options::default())?;
//! let a = log.append(&Record::new(RecordType::CREAT).name(b"file"))?;
//! let d = log.wait_durable(a)?;
//! assert_eq!(a.index(), d.index());
//! # Ok::<(), weir_log::Error>(())
//! ```
#![forbid(unsafe_code)]

/// A named fail point: a place where a test built with the `failpoints`
/// feature can pause or slow the thread that reaches it, or call back into
/// the test (see the `fail` crate). Without the feature it is nothing at
/// all.
macro_rules! fail_point {
    ($name:literal) => {
        #[cfg(feature = "failpoints")]
        fail::fail_point!($name);
    };
}

mod active;
mod announce;
mod catalog;
mod clock;
pub mod codec;
mod commit;
mod cursors;
mod error;
pub mod fault;
pub mod fs;
mod incarnation;
mod inspect;
mod kind;
mod last_of_type;
mod latency;
mod log;
pub mod mem;
mod options;
mod reader;
mod record;
mod recovery;
mod retention;
mod ring;
mod scan;
pub mod segment;
mod spare;
mod thread_cpu;
mod verify;

pub use crate::cursors::{
    CONSUMERS_FILE, ConsumerInfo, MAX_CONSUMERS, check_name as check_consumer_name, read_consumers,
};
pub use crate::error::{Error, Result, StallCause};
pub use crate::incarnation::{BadIncarnation, INCARNATION_FILE, Incarnation, read_incarnation};
pub use crate::inspect::{Summary, inspect};
pub use crate::kind::{RecordType, TypeMask};
pub use crate::latency::Histogram;
pub use crate::log::{Appended, Durable, LOCK_FILE, Log, Stats};
pub use crate::options::{FullPolicy, Options, Preallocation, Retention};
pub use crate::reader::Reader;
pub use crate::record::{FLAG_RECONCILED, Field, LogRecord, Record, RecordRef};
pub use crate::recovery::{RecoveryReport, TornTail};
pub use crate::verify::{Problem, VerifyReport, verify};
