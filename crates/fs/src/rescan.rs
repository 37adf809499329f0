//! The live tree from the tree as last logged, reading only the
//! directories whose times moved: a restart's comparison, namespace-exact,
//! at the cost of a `statx` per directory and a read of those changed.
//!
//! A change to a directory's entries (a create, a removal, a rename in or
//! out, a link) moves the directory's mtime and ctime on ext4, xfs, btrfs
//! and tmpfs. A directory whose times are those the tree keeps for it
//! (taken before its entries were read, and forgotten by any change the
//! tree applied since) holds the entries the tree says: its subdirectories
//! are the tree's, and only they are looked at. Any other directory (its
//! times moved, or are not known) is read, and so is everything new below
//! it. Renames while nothing watched keep their ids: a directory moved is
//! found in its new parent (whose times moved) and is the same object.
//! The look at the live tree runs on a few threads ([`scan`]).

use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, OFlags, StatxFlags};
use rustix::io::Errno;
use weir_sys::fanotify::fid::open_by_handle_at;

use crate::id::ObjectId;
use crate::tree::{DirTimes, Entry, Set, Tree};

mod scan;

/// What a rescan counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RescanStats {
    /// Directories whose times were looked at.
    pub checked: u64,
    /// Directories read (their times moved, or were not known).
    pub read: u64,
    /// Entries seen in the directories read.
    pub entries: u64,
}

/// A file whose inode changed at or after the moment a content-exact
/// rescan asked about (its ctime), in a directory it read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Changed {
    /// Its directory.
    pub parent: ObjectId,
    /// Its name there.
    pub name: Box<[u8]>,
    /// The object.
    pub id: ObjectId,
    /// Whether its content changed too (its mtime), not only attributes.
    pub written: bool,
}

/// A directory read: its id and its entries.
type Listing = (ObjectId, Vec<(Box<[u8]>, Entry)>);

/// What a rescan found.
#[derive(Debug)]
#[non_exhaustive]
pub struct Rescan {
    /// The live tree.
    pub live: Tree,
    /// What it counted.
    pub stats: RescanStats,
    /// The directories read whose times moved (or were not known).
    pub read: Vec<ObjectId>,
    /// The directories whose entries may differ between the tree as
    /// logged and the live one: those read, and those of subtrees gone.
    pub scope: Set<ObjectId>,
    /// With `content`, the files (not directories) whose ctime is at or
    /// after it, each directory's in its order (directories are read in
    /// parallel, in no set order).
    pub changed: Vec<Changed>,
}

/// The live tree below the root open at `root` (id `root_id`, events with
/// `fsid`), from `known`, the tree as last logged.
pub fn rescan(
    root: BorrowedFd<'_>,
    known: &Tree,
    root_id: &ObjectId,
    fsid: [u32; 2],
) -> Result<Rescan, weir_sys::Error> {
    rescan_with(root, known, root_id, fsid, &|d| known.dir_times(d), None)
}

/// As [`rescan`], with each directory's times as `times` says (a running
/// tracker's tree has handed most of its times to the persistent copy).
/// With `content` (seconds and nanoseconds), content-exact: every
/// directory is read, and the files whose ctime is at or after `content`
/// are in [`Rescan::changed`].
pub fn rescan_with(
    root: BorrowedFd<'_>,
    known: &Tree,
    root_id: &ObjectId,
    fsid: [u32; 2],
    times: &(dyn Fn(&ObjectId) -> Option<DirTimes> + Sync),
    content: Option<(i64, u32)>,
) -> Result<Rescan, weir_sys::Error> {
    look_counted(root, known, root_id, fsid, times, content, &|_| {}).map(|l| l.apply_to(known))
}

/// What a rescan's look at the live tree found, before it is applied to
/// the tree as last logged.
///
/// The look needs only the tree's directories and their times, so a
/// restart can look while the copy's files still load: what it found
/// stands for the loaded tree as long as the log's tail, replayed over
/// the copy, changed no directory (the look then had the very
/// directories, entries and times a look at the loaded tree would have).
#[derive(Debug)]
pub(crate) struct Looked {
    stats: RescanStats,
    listings: Vec<Listing>,
    read: Vec<ObjectId>,
    changed: Vec<Changed>,
}

impl Looked {
    /// What it counted.
    pub(crate) fn stats(&self) -> RescanStats {
        self.stats
    }

    /// The rescan of `known`: what was found applied to it.
    pub(crate) fn apply_to(self, known: &Tree) -> Rescan {
        let (live, scope) = apply(known, &self.listings);
        Rescan {
            live,
            stats: self.stats,
            read: self.read,
            scope,
            changed: self.changed,
        }
    }
}

/// The look of [`rescan_with`], not yet applied to `known`, telling
/// `checked` how many directories it has looked at as it goes.
pub(crate) fn look_counted(
    root: BorrowedFd<'_>,
    known: &Tree,
    root_id: &ObjectId,
    fsid: [u32; 2],
    times: &(dyn Fn(&ObjectId) -> Option<DirTimes> + Sync),
    content: Option<(i64, u32)>,
    checked: &(dyn Fn(u64) + Sync),
) -> Result<Looked, weir_sys::Error> {
    let mnt = rustix::fs::statx(
        root,
        c"",
        AtFlags::EMPTY_PATH,
        StatxFlags::from_bits_retain(weir_sys::statx::STATX_MNT_ID_UNIQUE),
    )
    .map_err(|errno| sys("statx", errno))?
    .stx_mnt_id;
    let ask = scan::Ask {
        root,
        known,
        root_id,
        fsid,
        mnt,
        times,
        content,
        checked,
    };
    let scan::Found {
        stats,
        listings,
        read,
        changed,
    } = scan::scan(&ask, scan::threads())?;
    Ok(Looked {
        stats,
        listings: listings.into_iter().map(|(_, l)| l).collect(),
        read,
        changed,
    })
}

/// `known` with the directories read as read: what moved in first (a
/// directory moved keeps its subtree), then what went; and the scope of
/// the difference.
fn apply(known: &Tree, listings: &[Listing]) -> (Tree, Set<ObjectId>) {
    let mut scope: Set<ObjectId> = listings.iter().map(|(d, _)| d.clone()).collect();
    let mut live = known.clone();
    let mut refused = Vec::new();
    for (d, listing) in listings {
        for (name, e) in listing {
            if live.lookup(d, name).as_ref() != Some(e) && live.insert(d, name, e.clone()).is_err()
            {
                // Below itself as the tree stands now: a cycle of moves,
                // which the removals below undo.
                refused.push((d, name, e));
            }
        }
    }
    for (d, listing) in listings {
        let names: Set<&[u8]> = listing.iter().map(|(n, _)| &n[..]).collect();
        let gone: Vec<Box<[u8]>> = live
            .entries_of(d)
            .filter(|(n, _)| !names.contains(n))
            .map(|(n, _)| Box::from(n))
            .collect();
        for n in gone {
            if let Some(e) = live.remove(d, &n)
                && e.kind.is_dir()
            {
                // Its subtree went with it: as the tree logged it.
                let mut stack = vec![e.id];
                while let Some(x) = stack.pop() {
                    stack.extend(
                        known
                            .entries_of(&x)
                            .filter(|(_, e)| e.kind.is_dir())
                            .map(|(_, e)| e.id),
                    );
                    scope.insert(x);
                }
            }
        }
    }
    // What was refused goes in now, over as many rounds as it takes: an
    // entry of a new directory is refused until its parent's listing put
    // the directory in, whatever order the listings came in.
    while !refused.is_empty() {
        let before = refused.len();
        refused.retain(|(d, name, e)| live.insert(d, name, (*e).clone()).is_err());
        if refused.len() == before {
            break;
        }
    }
    (live, scope)
}

/// Directory `d` of the tree whose root is open at `root`, opened for
/// reading; `None` when it is gone.
pub(crate) fn open_dir(
    root: BorrowedFd<'_>,
    d: &ObjectId,
    root_id: &ObjectId,
) -> Result<Option<OwnedFd>, weir_sys::Error> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if d == root_id {
        return rustix::fs::openat(root, c".", flags, rustix::fs::Mode::empty())
            .map(Some)
            .map_err(|errno| sys("openat", errno));
    }
    match open_by_handle_at(root, &d.handle(), flags) {
        Ok(fd) => Ok(Some(fd)),
        Err(e) if matches!(e.errno(), Some(Errno::STALE | Errno::NOENT)) => Ok(None),
        Err(e) => Err(e),
    }
}

fn sys(call: &'static str, errno: Errno) -> weir_sys::Error {
    weir_sys::Error::Syscall { call, errno }
}
