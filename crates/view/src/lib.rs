//! How weir's objects look to people and to programs: the JSON and text
//! forms of log records, consumers, mounts, block devices, PVs, VGs and
//! LVs, the watched directory trees (`weir fs`), and the lines
//! `weir mounts watch`, `weir devices watch` and `weir fs watch` print per
//! change.
//!
//! The CLI prints them when it works directly, and the daemon serves the
//! very same bytes over its API, so `weir mounts` gives one answer whether
//! or not a daemon runs; the LVM listings have one entry point for both,
//! [`lvm_view::render`], `weir devices` its own,
//! [`devices_view::render`], `weir fs` [`fs_view::render`], `weir fs
//! changes` [`fs_changes::render`] and `weir fs rescan`
//! [`fs_rescan::render`].
//! Everything here is pure formatting: no I/O.
#![forbid(unsafe_code)]

pub mod bytes;
pub mod chain;
pub mod consumer;
pub mod devices_columns;
pub mod devices_line;
pub mod devices_view;
pub mod error;
pub mod fs_changes;
pub mod fs_line;
pub mod fs_rescan;
pub mod fs_view;
mod json;
pub mod log_select;
pub mod log_stats;
pub mod log_time;
pub mod lvm_columns;
pub mod lvm_json;
pub mod lvm_table;
pub mod lvm_units;
pub mod lvm_view;
pub mod mounts_df;
pub mod mounts_json;
pub mod mounts_line;
pub mod mounts_table;
pub mod mounts_tree;
pub mod record;
pub mod status;
pub mod status_text;
pub mod table;
pub mod time;

pub use error::{Error, Result};
