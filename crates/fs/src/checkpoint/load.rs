//! A root's tree from the copy, at a start: trusted only when the copy
//! holds the root whole, for this root directory and this log, and the log
//! still has every record after the index it covers.

use std::collections::{HashMap, VecDeque};
use std::path::Path;

use weir_log::Log;

use super::{Opened, from_copy};
use crate::id::ObjectId;
use crate::kind::Kind;
use crate::tracker::progress::{Phase, ProgressCell};
use crate::tree::{DirTimes, Entry, Tree};

/// A tree loaded from the copy.
pub(crate) struct Loaded {
    pub(crate) tree: Tree,
    /// The copy's root.
    pub(crate) no: weir_fsindex::RootNo,
    /// The last record the copy covers.
    pub(crate) covered: u64,
}

/// What the copy does for a root's start.
pub(crate) enum Load {
    /// It starts it from this tree.
    Yes(Box<Loaded>),
    /// It cannot (why is in the process's log): the walk decides.
    No,
    /// It holds more entries than the caller's budget: ask again later.
    Later,
}

/// Root `path`'s tree from the copy, if it holds at most `budget` entries.
/// `dirs_read` is shown the tree once its directories (with their times)
/// are in, before the other entries load.
pub(crate) fn load(
    opened: &Opened,
    log: &Log,
    path: &Path,
    id: &ObjectId,
    budget: Option<u64>,
    progress: &ProgressCell,
    dirs_read: &mut dyn FnMut(&Tree),
) -> Load {
    match try_load(opened, log, path, id, budget, progress, dirs_read) {
        Ok(Some(l)) => Load::Yes(Box::new(l)),
        Ok(None) => Load::Later,
        Err(why) => {
            tracing::info!(root = %path.display(), why, "the tree's persistent copy is not used; the tree is compared with the log's records alone");
            Load::No
        }
    }
}

/// The most entries a load makes room for at once: the count comes from
/// the copy, which is outside input, so a damaged one must not make a
/// start reserve without bound. A bigger tree grows as it loads.
const RESERVE_MAX: u64 = 1 << 24;

/// How many entries a load reads between two reports of its progress.
const REPORT_EVERY: u64 = 4096;

/// Root `no`'s tree of `entries` entries, read in two scans of the store,
/// not a lookup per directory: the directories (with their times),
/// inserted from the root down, then every other entry, each directory's
/// together. The tree makes room for all of them first.
fn read_tree(
    snap: &weir_fsindex::Snapshot,
    no: weir_fsindex::RootNo,
    id: &ObjectId,
    entries: u64,
    progress: &ProgressCell,
    dirs_read: &mut dyn FnMut(&Tree),
) -> Result<Tree, &'static str> {
    const DIRS: &str = "a directory cannot be read";
    const ENTRIES: &str = "a directory's entries cannot be read";
    let mut tree = Tree::new(id.clone());
    let mut below: HashMap<ObjectId, Vec<(Vec<u8>, ObjectId)>> = HashMap::new();
    let mut times: HashMap<ObjectId, DirTimes> = HashMap::new();
    for row in snap.dirs(no).map_err(|_| DIRS)? {
        let (did, d) = row.map_err(|_| DIRS)?;
        let did = ObjectId::from_bytes(&did).ok_or("it holds an id that is not one")?;
        if d.times_valid {
            let t = DirTimes {
                mtime: (d.mtime.sec, d.mtime.nsec),
                ctime: (d.ctime.sec, d.ctime.nsec),
            };
            times.insert(did.clone(), t);
        }
        if let Some(parent) = d.parent {
            let parent = ObjectId::from_bytes(&parent).ok_or("it holds an id that is not one")?;
            below.entry(parent).or_default().push((d.name, did));
        }
    }
    let dirs = below.values().map(Vec::len).sum::<usize>();
    let files = entries.saturating_sub(dirs as u64).min(RESERVE_MAX);
    tree.reserve(dirs + 1, usize::try_from(files).unwrap_or(0));
    let mut queue = VecDeque::from([id.clone()]);
    while let Some(dir) = queue.pop_front() {
        if let Some(t) = times.remove(&dir) {
            tree.set_dir_times(&dir, t);
        }
        for (name, sub) in below.remove(&dir).unwrap_or_default() {
            let entry = Entry {
                id: sub.clone(),
                kind: Kind::Dir,
            };
            tree.insert(&dir, &name, entry)
                .map_err(|_| "its directories do not make a tree")?;
            progress.add(1);
            queue.push_back(sub);
        }
    }
    dirs_read(&tree);
    let mut bad = None;
    let mut loaded = dirs as u64;
    snap.for_each_entry(no, |e| {
        if bad.is_some() || e.kind == weir_fsindex::Kind::Dir {
            return;
        }
        let (Some(parent), Some(eid)) =
            (ObjectId::from_bytes(e.parent), ObjectId::from_bytes(e.id))
        else {
            bad = Some("it holds an id that is not one");
            return;
        };
        let entry = Entry {
            id: eid,
            kind: from_copy(e.kind),
        };
        if tree.insert(&parent, e.name, entry).is_err() {
            bad = Some("its entries do not make a tree");
        }
        loaded += 1;
        if loaded.is_multiple_of(REPORT_EVERY) {
            progress.set(loaded);
        }
    })
    .map_err(|_| ENTRIES)?;
    bad.map_or(Ok(tree), Err)
}

fn try_load(
    opened: &Opened,
    log: &Log,
    path: &Path,
    id: &ObjectId,
    budget: Option<u64>,
    progress: &ProgressCell,
    dirs_read: &mut dyn FnMut(&Tree),
) -> Result<Option<Loaded>, &'static str> {
    let snap = opened.index.snapshot().map_err(|_| "it cannot be read")?;
    let root = snap
        .root(path.as_os_str().as_encoded_bytes())
        .map_err(|_| "it cannot be read")?
        .ok_or("it does not hold the root")?;
    if root.id != id.as_bytes() {
        return Err("it holds another directory at the root's path");
    }
    if root.log_identity != opened.identity {
        return Err("it was made over another log");
    }
    if root.covered > log.last_index() || root.covered + 1 < log.first_index() {
        return Err("the log no longer holds the records after it");
    }
    if budget.is_some_and(|b| root.entries > b) {
        return Ok(None);
    }
    progress.begin(Phase::Loading, Some(root.entries));
    let tree = read_tree(&snap, root.no, id, root.entries, progress, dirs_read)?;
    if tree.len() as u64 != root.entries {
        return Err("its entries do not make a tree");
    }
    Ok(Some(Loaded {
        tree,
        no: root.no,
        covered: root.covered,
    }))
}

/// The directory times a root's copy holds, read from a snapshot: a
/// running tracker's tree hands its times to the copy with each image.
pub(crate) struct CopyTimes {
    snap: weir_fsindex::Snapshot,
    no: weir_fsindex::RootNo,
}

impl CopyTimes {
    /// The times of the directories of the root at `path` (with id `id`,
    /// made over this log) in `opened`, as committed now; none while the
    /// copy does not hold the root whole.
    pub(crate) fn new(opened: &Opened, path: &Path, id: &ObjectId) -> Option<CopyTimes> {
        let snap = opened.index.snapshot().ok()?;
        let root = snap.root(path.as_os_str().as_encoded_bytes()).ok()??;
        (root.id == id.as_bytes() && root.log_identity == opened.identity)
            .then_some(CopyTimes { snap, no: root.no })
    }

    /// Directory `dir`'s times, when the copy holds valid ones (an error
    /// reading is as none: the directory is then read).
    pub(crate) fn get(&self, dir: &ObjectId) -> Option<DirTimes> {
        let d = self.snap.dir(self.no, dir.as_bytes()).ok()??;
        d.times_valid.then_some(DirTimes {
            mtime: (d.mtime.sec, d.mtime.nsec),
            ctime: (d.ctime.sec, d.ctime.nsec),
        })
    }
}
