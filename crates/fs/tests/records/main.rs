//! Every record weir-fs writes, field by field, on tmpfs and ext4: the
//! MARK a watch starts with, CREAT, MKDIR, MKNOD (fifo, socket, char and
//! block nodes), SLINK, HLINK, UNLNK and RMDIR (with `LAST` only on an
//! object's last name), RENME within and across directories, over an
//! existing file, as a `RENAME_EXCHANGE`, into the tree from outside it
//! (`IN`, the contents then `COMPARE`) and out of it (`OUT`), SATTR, and
//! MTIME (coalesced per close, and per interval for a file kept open);
//! and names that are not UTF-8, hold a newline or are 255 bytes long.
//!
//! The exactness test (exact.rs) checks that the records replay to the
//! live tree. This checks the layout a consumer reads without weir's
//! decoder: each record's type, flags, target, parent and name, and its
//! exact set of fields and their values, with every id compared with the
//! live object's (`statfs` fsid + `name_to_handle_at`) and every `path`
//! relative to the root. One operation at a time, each followed by
//! `sync`, so each step's records are exactly the ones it caused; every
//! session ends with its whole log replayed and compared with the tree.
//!
//! Two of these found bugs, now fixed: a directory's SATTR (`dir_attrs_*`:
//! an event on a directory itself carries no FID record), and
//! RENAME_EXCHANGE split by a read between its two events (`exchanges_*`).

#[path = "../support/mod.rs"]
mod support;

mod session;

mod attrs;
mod entries;
mod exchanges;
mod mark;
mod moves;
mod names;
mod renames;
