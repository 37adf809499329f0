//! The daemon (placeholder; see the daemon contract).
#![forbid(unsafe_code)]

pub mod api;
pub mod checkpoint;
pub mod config;
mod error;
pub mod host;
pub mod notify;

pub use error::{Error, Result};
pub use host::run;
