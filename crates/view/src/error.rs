//! The error type of weir-view: why a choice of columns or a listing is
//! refused. Rendering itself cannot fail; only what the caller asks for
//! can be wrong. Callers tell the cases apart by variant; the message is
//! for people (the CLI's usage errors, the API's 400s).

use crate::table::MAX_COLUMNS;

/// What was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A name no column of `weir mounts` has.
    #[error("unknown column {name:?} (valid columns: {valid})")]
    UnknownMountColumn {
        /// The name as given.
        name: String,
        /// Every column's name.
        valid: String,
    },
    /// A name no column of an LVM listing has.
    #[error("unknown column {name:?} for {listing} (valid columns: {valid})")]
    UnknownColumn {
        /// The name as given.
        name: String,
        /// The listing (`weir lvs`).
        listing: &'static str,
        /// Every column: its header and LVM's names.
        valid: String,
    },
    /// An empty column name (`-o ''`, `-o a,,b`) for an LVM listing.
    #[error("an empty column name in {spec:?}")]
    EmptyColumn {
        /// The whole choice as given.
        spec: String,
    },
    /// Units LVM's `--units` does not know (`x`, `mm`, `0m`).
    #[error(
        "bad units {given:?}: one of h, H, r, R, b, B, s, S, k, K, m, M, g, G, t, T, p, P, e, E, \
         optionally after a positive number (4m)"
    )]
    BadUnits {
        /// The units as given.
        given: String,
    },
    /// More than [`MAX_COLUMNS`] columns.
    #[error("more than {MAX_COLUMNS} columns")]
    TooManyColumns,
    /// A listing without columns to choose (`weir devices`).
    #[error("{listing} has no columns to choose")]
    NoColumns {
        /// The listing.
        listing: &'static str,
    },
    /// Columns chosen for another listing than the one rendered.
    #[error("columns of {columns} given for {listing}")]
    OtherListing {
        /// The listing rendered.
        listing: &'static str,
        /// The listing the columns are for.
        columns: &'static str,
    },
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
