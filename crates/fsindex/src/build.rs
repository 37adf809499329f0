//! `Build`: a root's whole first reading, committed in chunks.
//!
//! A tree of a million entries is a hundred megabytes of pages; one
//! transaction of them all holds every dirty page in memory until it
//! commits. A build commits every `chunk` changes instead, with the root marked building, and
//! only its last commit makes it complete (and drops the complete root it
//! replaces), so a crash or an error mid-way never leaves a half-built
//! root that looks whole.

use crate::batch::{Batch, Durability, Op};
use crate::error::Result;
use crate::index::Index;
use crate::types::{Dir, Entry, RootNo};

/// A root being built ([`Index::replace_root`]).
#[derive(Debug)]
pub struct Build<'a> {
    index: &'a Index,
    root: RootNo,
    batch: Batch,
    chunk: usize,
}

impl<'a> Build<'a> {
    pub(crate) fn start(
        index: &'a Index,
        path: &[u8],
        id: &[u8],
        log_identity: &[u8],
        chunk: usize,
    ) -> Result<Build<'a>> {
        let mut batch = index.batch();
        let root = batch.create(path, id, log_identity, true)?;
        index.commit(batch)?;
        Ok(Build {
            index,
            root,
            batch: index.batch(),
            chunk: chunk.max(1),
        })
    }

    /// The new root's number.
    pub fn root(&self) -> RootNo {
        self.root
    }

    fn flush_if_full(&mut self) -> Result<()> {
        if self.batch.len() >= self.chunk {
            let full = std::mem::replace(&mut self.batch, self.index.batch());
            // The chunks need not be durable one by one: a crash loses the
            // build either way, and the last commit is durable.
            self.index.commit_with(full, Durability::Deferred)?;
        }
        Ok(())
    }

    /// Adds an entry.
    pub fn put_entry(&mut self, parent: &[u8], name: &[u8], entry: &Entry) -> Result<()> {
        self.batch.put_entry(self.root, parent, name, entry)?;
        self.flush_if_full()
    }

    /// Adds a directory.
    pub fn put_dir(&mut self, id: &[u8], dir: &Dir) -> Result<()> {
        self.batch.put_dir(self.root, id, dir)?;
        self.flush_if_full()
    }

    /// Commits the rest durably, with the root complete and covering
    /// `covered`; the complete root of the same path it replaces, if any,
    /// is dropped in the same commit. A build dropped without `finish`
    /// leaves its root building: [`Batch::drop_root`] removes it.
    pub fn finish(mut self, covered: u64) -> Result<RootNo> {
        self.batch.set_covered(self.root, covered);
        self.batch.ops.push(Op::Finish(self.root));
        self.index.commit(self.batch)?;
        Ok(self.root)
    }
}
