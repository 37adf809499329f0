//! The index's own small types: root numbers, entry kinds, times and
//! attributes, and the rows as a reader gets them back.
//!
//! weir-fs depends on this crate, not the reverse, so ids and names are
//! plain bytes here and the kinds have their own codes.

use std::fmt;

/// Longest id the index takes: an fsid and a file handle fit well below
/// (`MAX_HANDLE_SZ` is 128, plus 12 bytes of header); the key layout gives
/// an id one length byte.
pub const ID_MAX: usize = 255;
/// Longest name: Linux's `NAME_MAX`.
pub const NAME_MAX: usize = 255;
/// Longest root path and log identity (two-byte lengths).
pub const PATH_MAX: usize = 4096;

/// A root's number in the index: assigned when the root is created, never
/// reused by that file while the root exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RootNo(pub u32);

impl fmt::Display for RootNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "root {}", self.0)
    }
}

/// What an entry is. The codes are the on-disk byte (docs/format.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Kind {
    /// Not known (a non-directory gone before it was looked at).
    Unknown,
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A FIFO.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device.
    Char,
    /// A block device.
    Block,
}

impl Kind {
    /// Every kind, in code order.
    pub const ALL: [Kind; 8] = [
        Kind::Unknown,
        Kind::File,
        Kind::Dir,
        Kind::Symlink,
        Kind::Fifo,
        Kind::Socket,
        Kind::Char,
        Kind::Block,
    ];

    /// The byte the index stores.
    pub fn code(self) -> u8 {
        match self {
            Kind::Unknown => 0,
            Kind::File => 1,
            Kind::Dir => 2,
            Kind::Symlink => 3,
            Kind::Fifo => 4,
            Kind::Socket => 5,
            Kind::Char => 6,
            Kind::Block => 7,
        }
    }

    /// The kind of a stored byte, if it is one.
    pub fn from_code(c: u8) -> Option<Kind> {
        Kind::ALL.get(usize::from(c)).copied()
    }
}

/// A time as `statx` gives it: seconds since the epoch and nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp {
    /// Seconds since 1970-01-01 UTC (negative before).
    pub sec: i64,
    /// Nanoseconds, below 10^9.
    pub nsec: u32,
}

/// An entry's attributes, when they are known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Attrs {
    /// Size in bytes.
    pub size: u64,
    /// Last modification.
    pub mtime: Timestamp,
    /// Last status change.
    pub ctime: Timestamp,
    /// Hard links.
    pub nlink: u32,
}

/// What a name in a directory points at.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The object's id.
    pub id: Vec<u8>,
    /// Its kind.
    pub kind: Kind,
    /// Its attributes, if known.
    pub attrs: Option<Attrs>,
}

/// A directory of a root, by its id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Dir {
    /// The directory it is in; `None` for the root directory.
    pub parent: Option<Vec<u8>>,
    /// Its name there (empty for the root directory).
    pub name: Vec<u8>,
    /// Its mtime when its entries were last read or checkpointed.
    pub mtime: Timestamp,
    /// Its ctime, likewise.
    pub ctime: Timestamp,
    /// Whether `mtime` and `ctime` describe the entries the index holds.
    /// Cleared when a change in the directory is logged, set again by a
    /// checkpoint: a restart reads again every directory whose times are
    /// not valid, whatever `statx` says.
    pub times_valid: bool,
}

/// One entry of a directory, as a scan yields it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EntryRow {
    /// The directory's id.
    pub parent: Vec<u8>,
    /// The name in it.
    pub name: Vec<u8>,
    /// What the name points at.
    pub entry: Entry,
}

/// One entry as [`Snapshot::for_each_entry`](crate::Snapshot::for_each_entry)
/// lends it: slices of the stored row, decoded in place, so loading a
/// whole tree copies each byte once, into the caller's own structures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryRef<'a> {
    /// The directory's id.
    pub parent: &'a [u8],
    /// The name in it.
    pub name: &'a [u8],
    /// The object's id.
    pub id: &'a [u8],
    /// Its kind.
    pub kind: Kind,
    /// Its attributes, if known.
    pub attrs: Option<Attrs>,
}

impl EntryRef<'_> {
    /// The entry, owned.
    pub fn entry(&self) -> Entry {
        Entry {
            id: self.id.to_vec(),
            kind: self.kind,
            attrs: self.attrs,
        }
    }

    /// The row, owned.
    pub fn to_row(&self) -> EntryRow {
        EntryRow {
            parent: self.parent.to_vec(),
            name: self.name.to_vec(),
            entry: self.entry(),
        }
    }
}

/// Whether a root's rows are all there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RootState {
    /// A build in chunks (`Index::replace_root`) has not finished: its
    /// rows are a part of the tree, and its covered index means nothing.
    Building,
    /// Every row is there: the tree as logged up to `covered`.
    Complete,
}

/// A root and what its rows cover.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Root {
    /// Its number.
    pub no: RootNo,
    /// Its path.
    pub path: Vec<u8>,
    /// The root directory's id.
    pub id: Vec<u8>,
    /// Which log the covered index is of (opaque to the index).
    pub log_identity: Vec<u8>,
    /// Every record up to and including this index is applied, none after.
    pub covered: u64,
    /// Whether it is complete.
    pub state: RootState,
    /// How many directories it describes (`put_dir` rows).
    pub dirs: u64,
    /// How many entries it has.
    pub entries: u64,
}
