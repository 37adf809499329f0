//! `weir-mounts`: the mount table, exact and nearly free to keep.
//!
//! - [`model`]: the one [`Mount`] model, whichever source filled it.
//! - [`mountinfo`]: the /proc/self/mountinfo parser (hostile input) and
//!   [`escape`], its octal escapes.
//! - [`source`]: reading the whole table, with listmount + statmount or
//!   mountinfo.
//! - [`table`]: the table and the comparison of two readings; [`change`]:
//!   what a comparison or an event yields.
//! - [`backend`]: choosing fanotify or mountinfo; [`tracker`]: the thread
//!   that keeps the table exact and logs every change ([`record`]), with
//!   whole readings held to a CPU budget.
//! - [`exact`]: whether a tracker's table is the kernel's and its log holds
//!   one record per change, as the tests and the benchmarks check it.
//! - [`usage`]: statvfs(2) of each mount point, for findmnt's df columns.
//! - [`Previous`]: the table as last logged, so that a restarted tracker
//!   logs what changed while it was down, once.
//!
//! Seed 003 is why this crate exists: re-reading the whole table on every
//! change makes a storm of 2000 mounts cost seconds of CPU. Here a fanotify
//! event costs one statmount, and whole readings are rare and budgeted.
#![forbid(unsafe_code)]

pub mod backend;
mod budget;
pub mod change;
mod error;
pub mod escape;
pub mod exact;
pub mod model;
pub mod mountinfo;
mod previous;
pub mod record;
pub mod source;
pub mod table;
pub mod tracker;
pub mod usage;

pub use backend::{Backend, BackendChoice, Snapshot, snapshot};
pub use change::{Attrs, Change, ChangeKind, Seen};
pub use error::{Error, Result};
pub use model::{Mount, MountFlags, Propagation, SuperFlags, UnknownBits};
pub use previous::Previous;
pub use table::Table;
pub use tracker::{OnChange, Tracker, TrackerOptions, TrackerStats};
