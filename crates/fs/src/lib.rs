//! `weir-fs`: a change journal for local filesystems.
//!
//! Linux has no persistent change journal (NTFS has its USN journal, macOS
//! FSEvents). Watchers use inotify: a watch per directory, a crawl at
//! start, a recrawl on every overflow. weir-fs puts one fanotify
//! filesystem mark with file ids on each watched filesystem (no watch per
//! directory, no kernel memory per directory) and logs every change to the
//! watched trees as a changelog record with Lustre's type names, by file
//! id, with the path resolved from what it has logged.
//!
//! - [`id`]: object ids (the fsid and the file handle) as records hold them.
//! - [`kind`]: what an entry is.
//! - [`tree`]: a watched tree by id, as records describe it; [`change`]:
//!   what happened to one, and applying it; [`record`]: changes as records,
//!   and back ([`record::decode`]).
//! - [`replay`]: a tree as the log describes it; [`since`]: what changed
//!   under a root since a log index, from the records after it.
//! - [`walk`]: reading a live tree; [`rescan`]: reading only the
//!   directories whose times moved since a tree was logged; [`diff`]: the
//!   changes between two trees.
//! - [`tracker`]: marks, the thread, the event rules, sync cookies and the
//!   comparison after lost events.
//! - `probe`: looking at one live entry through its directory's handle.
//! - `checkpoint`: the persistent copy of each tree (weir-fsindex), kept
//!   from the tree's touches, that a restart starts from.
//!
//! Seed 004 (Lustre's changelog) is why this exists: its users (policy
//! engines, backup, sync, indexers) need one ordered record of every
//! namespace change, by file id, and nothing gives them that on ext4, xfs,
//! btrfs or tmpfs.
#![forbid(unsafe_code)]

pub mod change;
mod checkpoint;
pub mod diff;
mod error;
pub mod id;
pub mod kind;
mod probe;
pub mod record;
pub mod replay;
pub mod rescan;
pub mod since;
pub mod tracker;
pub mod tree;
pub mod walk;

pub use change::{Change, How};
pub use checkpoint::{INDEX_CONSUMER, INDEX_FILE};
pub use error::{Error, Result};
pub use id::ObjectId;
pub use kind::Kind;
pub use tracker::{
    MarkKind, OnChange, Phase, Progress, RESCANNED, Rescanned, RootState, RootStatus, Tracker,
    TrackerOptions, TrackerStats,
};
pub use tree::{DirImage, DirTimes, Entry, Tree, TreeError};
