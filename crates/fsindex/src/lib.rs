//! `weir-fsindex`: the persistent index of watched directory trees.
//!
//! STORE-CHOICE-PLACEHOLDER
#![forbid(unsafe_code)]

mod batch;
mod build;
mod error;
mod index;
mod key;
mod read;
mod tables;
mod types;
mod value;
mod write;

pub use batch::{Batch, Durability};
pub use build::Build;
pub use error::{Error, Result};
pub use index::Index;
pub use read::{Dirs, Entries, Snapshot};
pub use types::{
    Attrs, Dir, Entry, EntryRow, ID_MAX, Kind, NAME_MAX, Name, PATH_MAX, Root, RootNo, RootState,
    Timestamp,
};
