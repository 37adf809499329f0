//! The weir daemon as a library: everything `weir run` hosts, so that the
//! binary stays thin glue.
//!
//! - [`config`]: the settings (`weir.toml`, flags, environment), validated
//!   into the options the host runs with.
//! - [`host`]: opening the changelog, starting the mount, device and
//!   filesystem trackers, the inventory checkpoint, signals, and an orderly
//!   stop ([`run`]).
//! - [`api`]: the HTTP/JSON API on a Unix socket, which serves the same
//!   bytes the CLI prints because both call weir-view.
//! - [`checkpoint`]: the inventory checkpoint file, so a restart can tell
//!   what changed while the daemon was down.
//! - [`notify`]: `sd_notify` readiness and status for systemd.
#![forbid(unsafe_code)]

pub mod api;
pub mod checkpoint;
pub mod config;
mod error;
pub mod host;
pub mod notify;

pub use error::{Error, Result};
pub use host::run;
