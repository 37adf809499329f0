//! `weir-fsindex`: the persistent index of watched directory trees.
//!
//! weir-fs keeps each watched tree in memory and logs every change. To
//! restart without reading every tree again, it keeps this index of each
//! tree: the index plus the log's records after the index it covers is
//! the tree as last logged, and only directories whose mtime or ctime
//! moved need reading. The index knows nothing of weir-fs (which depends
//! on it): ids and names are bytes, kinds have their own codes.
//!
//! - [`Index`]: the file (one per state directory, several roots in it),
//!   its format check, commits; [`Snapshot`]: every read, as of one
//!   commit; [`Batch`]: the changes of one commit, all or none, with the
//!   covered index in the same commit as the rows it covers; [`Build`]:
//!   a root's first reading in chunks, marked building until its last.
//! - Storage: per directory one row (its description, entry count and
//!   bucket count) and its entries in hash buckets (crc32c of the name),
//!   rows of up to a few hundred entries encoded one after another. A
//!   commit groups its changes by directory and bucket and rewrites each
//!   touched bucket once. There is no lookup by id: the caller keeps the
//!   tree in memory and reads the index whole at start-up
//!   ([`Snapshot::for_each_entry`]). The layout of keys and values, the
//!   hash and the bucket rule are in docs/format.md.
//! - Space: redb keeps a file at its largest size; [`Index::space`] says
//!   when [`Index::compact`] is worth calling (after a big root is dropped
//!   or replaced, at a quiet moment, with no snapshot open).
//!
//! # Why redb
//!
//! fjall 3.1 and redb 4.1 were measured on the rows of a 1M-entry tree
//! in the first layout, a row per entry (100k directories, ids of 8 to 28
//! bytes, 8-byte names, 2.1M rows: entry, by-id and directory rows) in walk
//! order, on a shared 2-core VM
//! (`examples/store_choice.rs`; CPU is the process's, every thread):
//!
//! | | redb | fjall |
//! |---|---|---|
//! | CPU µs/row, commits of 1,000 rows | 13.1 | 4.9 |
//! | CPU µs/row, commits of 100,000 rows | 3.6 | 1.8 |
//! | CPU µs/row, one commit of 2.1M rows | 2.4 | 2.4 |
//! | bytes on disk per entry | 270 to 540 | 210 |
//! | load all 1M entries of a root | 190 to 260 ms | 360 to 530 ms |
//!
//! fjall writes more cheaply (its memtable and journal against redb's
//! copy of every page a commit touches), and its figures leave out
//! compactions still running. redb was chosen for what the index is for:
//! - the start-up load, the path the index exists to make cheap, is about
//!   twice as fast;
//! - one file, no background threads (the daemon shares 2 cores with the
//!   log's committer), one dependency (libc), against fjall's directory,
//!   flush and compaction threads and 25 crates; fjall 3 also needs Rust
//!   1.90, above the workspace's 1.89, where redb 4.1 builds;
//! - transactions that read their own writes, so dropping a root, and a
//!   build's last chunk replacing the old root, are one commit;
//! - its crash story is short: copy-on-write B-trees and two checksummed
//!   commit slots; a commit is durable (fsynced) when it returns, and a
//!   crash or power cut reopens at the last durable commit (after a repair
//!   scan of the file when the shutdown was not clean). `Durability::
//!   Deferred` maps to its non-durable commits.
//!
//! # The bucket layout, measured
//!
//! `examples/index_size.rs`: 1M files in 100k directories plus one of
//! 200k, every entry with attributes (1.3M entries), same VM:
//!
//! | | bucket layout |
//! |---|---|
//! | bytes on disk per entry, built (chunks of 100k changes) | 207 |
//! | the same after `compact()` | 170 |
//! | floor: the encoded entries alone | 62 |
//! | after 3M more records (below), not compacted | 340 |
//! | CPU µs per entry, the build | 2.6 to 3.3 |
//! | CPU µs per record, commits of 1,000 records | 45 to 54 |
//! | CPU µs per record, commits of 10,000 | 24 to 33 |
//! | CPU µs per record, commits of 100,000 | 11 to 16 |
//! | load 1.32M entries, lent in place (owned) | 146 to 183 ms (208 to 225) |
//!
//! A record is a create, an unlink or a rename across directories, in
//! random directories, each invalidating its directories' times.
//!
//! The layout cut the bytes on disk (the floor is the encoded entries
//! themselves); it did not bring index maintenance to 1 µs a record. A
//! record's cost is redb's per page: each directory it touches dirties a
//! leaf of `dirs` and one of `buckets` and their branch pages, each read,
//! checksummed and written at commit, so larger commits (more records per
//! page) are cheaper. The caller checkpoints in the largest batches its
//! memory allows (the index may lag the log: the tail is replayed).
#![forbid(unsafe_code)]

mod batch;
mod bucket;
mod build;
mod dir_edit;
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
pub use index::{Index, Space};
pub use read::{Dirs, Entries, Snapshot};
pub use types::{
    Attrs, Dir, Entry, EntryRef, EntryRow, ID_MAX, Kind, NAME_MAX, PATH_MAX, Root, RootNo,
    RootState, Timestamp,
};
