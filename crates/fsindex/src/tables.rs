//! The store's tables and the format record: what `Index::open` checks
//! before it reads anything else.

use redb::TableDefinition;

use crate::error::{Error, Result};

/// The format this build reads and writes.
pub(crate) const FORMAT: u32 = 1;

/// `meta`: `"format"` → u32 LE, `"next_root"` → u32 LE.
pub(crate) const META: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("weir_fsindex_meta");
pub(crate) const FORMAT_KEY: &str = "format";
pub(crate) const NEXT_ROOT: &str = "next_root";
/// `roots`: root number → root value.
pub(crate) const ROOTS: TableDefinition<'_, u32, &[u8]> = TableDefinition::new("roots");
/// `dirs`: root, len(id), id → directory row (its description and its
/// bucket layout).
pub(crate) const DIRS: TableDefinition<'_, &[u8], &[u8]> = TableDefinition::new("dirs");
/// `buckets`: root, len(dir), dir, bucket (u32 BE) → the entries of the
/// bucket.
pub(crate) const BUCKETS: TableDefinition<'_, &[u8], &[u8]> = TableDefinition::new("buckets");

pub(crate) fn decode_u32(b: &[u8]) -> Result<u32> {
    let a: [u8; 4] = b.try_into().map_err(|_| Error::Corrupt {
        table: "meta",
        what: "number",
    })?;
    Ok(u32::from_le_bytes(a))
}
