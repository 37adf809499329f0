//! The error type of weir-lvm: one variant per layer of the format, each
//! with its own typed cause.

use std::io;

/// What went wrong reading a PV.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the device failed.
    #[error("reading {what} at byte {offset}")]
    Io {
        /// What was being read (`"label"`, `"mda_header"`, ...).
        what: &'static str,
        /// Where.
        offset: u64,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The label, pv_header or mda_header is malformed.
    #[error(transparent)]
    Disk(#[from] crate::disk_error::DiskError),
    /// The metadata text does not parse.
    #[error(transparent)]
    Text(#[from] crate::text::TextError),
    /// The metadata text parses but does not describe a VG.
    #[error(transparent)]
    Meta(#[from] crate::meta::MetaError),
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
