//! `Batch`: the changes one commit makes, checked as they are added and
//! applied as if in order, all or none (the commit groups a directory's
//! changes, which is the same since directories do not depend on each
//! other).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::{Error, Result};
use crate::key::{check_id, check_name};
use crate::types::{Dir, Entry, PATH_MAX, RootNo, Timestamp};

/// How soon a commit is on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Durability {
    /// On disk when `commit` returns (an fsync): a power cut keeps it.
    Immediate,
    /// Visible to readers at once, on disk with the next `Immediate`
    /// commit: a crash (even of the process alone) reopens the index at
    /// the last `Immediate` commit before it, never between two.
    Deferred,
}

/// One change to a directory: its entries or its description.
#[derive(Clone, Debug)]
pub(crate) enum DirOp {
    Put(Vec<u8>, Entry),
    Remove(Vec<u8>),
    /// Every entry removed.
    Clear,
    Describe(Dir),
    Undescribe,
    Times(Option<(Timestamp, Timestamp)>),
}

/// One change.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    CreateRoot {
        no: RootNo,
        path: Vec<u8>,
        id: Vec<u8>,
        log_identity: Vec<u8>,
        building: bool,
    },
    DropRoot(RootNo),
    /// Grouped by directory at commit (write.rs), in order within one.
    Dir {
        root: RootNo,
        id: Vec<u8>,
        op: DirOp,
    },
    Covered {
        root: RootNo,
        covered: u64,
    },
    /// A build's last chunk: the root becomes complete and replaces the
    /// complete root of the same path, if any.
    Finish(RootNo),
}

/// Changes to commit together ([`Index::commit`](crate::Index::commit)).
///
/// Each call checks its arguments' lengths at once, so a bad id is found
/// where it was made; what depends on the index's contents (a root that
/// is not there, a directory whose times are set) is found by the commit,
/// which then applies nothing.
#[derive(Debug)]
pub struct Batch {
    pub(crate) ops: Vec<Op>,
    next_root: Arc<AtomicU32>,
}

fn check_path(p: &[u8]) -> Result<()> {
    if p.len() > PATH_MAX {
        return Err(Error::PathLength { len: p.len() });
    }
    Ok(())
}

impl Batch {
    pub(crate) fn new(next_root: Arc<AtomicU32>) -> Batch {
        Batch {
            ops: Vec::new(),
            next_root,
        }
    }

    /// How many changes it holds.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    fn dir_op(&mut self, root: RootNo, id: &[u8], op: DirOp) {
        self.ops.push(Op::Dir {
            root,
            id: id.to_vec(),
            op,
        });
    }

    pub(crate) fn reserve_root(&self) -> Result<RootNo> {
        // Numbers are taken when a batch is made, not when it commits, so
        // that the same batch can fill the root; a batch dropped leaves a
        // gap, which costs nothing.
        let no = self
            .next_root
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1))
            .map_err(|_| Error::RootsExhausted)?;
        Ok(RootNo(no))
    }

    pub(crate) fn create(
        &mut self,
        path: &[u8],
        id: &[u8],
        log_identity: &[u8],
        building: bool,
    ) -> Result<RootNo> {
        check_path(path)?;
        check_path(log_identity)?;
        check_id(id)?;
        let no = self.reserve_root()?;
        self.ops.push(Op::CreateRoot {
            no,
            path: path.to_vec(),
            id: id.to_vec(),
            log_identity: log_identity.to_vec(),
            building,
        });
        Ok(no)
    }

    /// Creates a complete root, empty, covering index 0. The commit fails
    /// with [`Error::RootExists`] if a complete root has this path.
    pub fn create_root(&mut self, path: &[u8], id: &[u8], log_identity: &[u8]) -> Result<RootNo> {
        self.create(path, id, log_identity, false)
    }

    /// Removes a root and every row of it. Its directories' changes made
    /// earlier in the batch go with it unapplied, so one that the commit
    /// would refuse (the times of a missing directory) is not an error.
    pub fn drop_root(&mut self, root: RootNo) {
        self.ops.push(Op::DropRoot(root));
    }

    /// Sets what `name` in directory `parent` points at, replacing what it
    /// pointed at before.
    pub fn put_entry(
        &mut self,
        root: RootNo,
        parent: &[u8],
        name: &[u8],
        entry: &Entry,
    ) -> Result<()> {
        check_id(parent)?;
        check_name(name)?;
        check_id(&entry.id)?;
        self.dir_op(root, parent, DirOp::Put(name.to_vec(), entry.clone()));
        Ok(())
    }

    /// Removes `name` from directory `parent`; nothing if it is not there.
    pub fn remove_entry(&mut self, root: RootNo, parent: &[u8], name: &[u8]) -> Result<()> {
        check_id(parent)?;
        check_name(name)?;
        self.dir_op(root, parent, DirOp::Remove(name.to_vec()));
        Ok(())
    }

    /// Sets a directory's row.
    pub fn put_dir(&mut self, root: RootNo, id: &[u8], dir: &Dir) -> Result<()> {
        check_id(id)?;
        if let Some(p) = &dir.parent {
            check_id(p)?;
        }
        check_name(&dir.name)?;
        self.dir_op(root, id, DirOp::Describe(dir.clone()));
        Ok(())
    }

    /// Removes a directory's row (not its entries); nothing if it is not
    /// there.
    pub fn remove_dir(&mut self, root: RootNo, id: &[u8]) -> Result<()> {
        check_id(id)?;
        self.dir_op(root, id, DirOp::Undescribe);
        Ok(())
    }

    /// Replaces a directory whole: its row with `dir`, and its entries
    /// with `entries` (names unique), whatever it held before.
    pub fn replace_dir<'e>(
        &mut self,
        root: RootNo,
        id: &[u8],
        dir: &Dir,
        entries: impl IntoIterator<Item = (&'e [u8], &'e Entry)>,
    ) -> Result<()> {
        self.put_dir(root, id, dir)?;
        self.dir_op(root, id, DirOp::Clear);
        for (name, e) in entries {
            self.put_entry(root, id, name, e)?;
        }
        Ok(())
    }

    /// Removes a directory whole: its row and every entry; nothing if it
    /// is not there.
    pub fn drop_dir(&mut self, root: RootNo, id: &[u8]) -> Result<()> {
        check_id(id)?;
        self.dir_op(root, id, DirOp::Clear);
        self.dir_op(root, id, DirOp::Undescribe);
        Ok(())
    }

    /// Sets a directory's times and marks them valid (a checkpoint).
    pub fn set_dir_times(
        &mut self,
        root: RootNo,
        id: &[u8],
        mtime: Timestamp,
        ctime: Timestamp,
    ) -> Result<()> {
        check_id(id)?;
        self.dir_op(root, id, DirOp::Times(Some((mtime, ctime))));
        Ok(())
    }

    /// Marks a directory's times not valid (a change in it was logged).
    pub fn invalidate_dir_times(&mut self, root: RootNo, id: &[u8]) -> Result<()> {
        check_id(id)?;
        self.dir_op(root, id, DirOp::Times(None));
        Ok(())
    }

    /// Sets the log index the root's rows cover, in the same commit as the
    /// rows: the index is never ahead of what it says it covers. It only
    /// grows: the commit fails with [`Error::CoveredBackwards`] if
    /// `covered` is below what the root covers (as stored, or as set
    /// earlier in this batch).
    pub fn set_covered(&mut self, root: RootNo, covered: u64) {
        self.ops.push(Op::Covered { root, covered });
    }
}
