//! Applying a batch inside one write transaction: the roots' changes in
//! order, then each touched directory's changes (dir_edit.rs), grouped by
//! directory and taken in key order, so the B-tree is walked once forward;
//! each root's counts and covered index go in its row.

use std::collections::BTreeMap;

use redb::{ReadableTable, Table, WriteTransaction};

use crate::batch::{DirOp, Op};
use crate::dir_edit;
use crate::error::{Error, Result};
use crate::key;
use crate::tables::{BUCKETS, DIRS, META, NEXT_ROOT, ROOTS};
use crate::types::RootNo;
use crate::value::{self, RootValue};

/// The tables a batch writes, open in one transaction.
struct Tables<'t> {
    roots: Table<'t, u32, &'static [u8]>,
    dirs: Table<'t, &'static [u8], &'static [u8]>,
    buckets: Table<'t, &'static [u8], &'static [u8]>,
    /// Root rows read and changed so far; `None` for one dropped.
    touched: BTreeMap<RootNo, Option<RootValue>>,
    /// Each directory's changes, by its key, in batch order.
    pending: BTreeMap<Vec<u8>, Vec<DirOp>>,
}

impl Tables<'_> {
    fn root(&mut self, no: RootNo) -> Result<&mut RootValue> {
        if !self.touched.contains_key(&no) {
            let v = match self.roots.get(no.0)? {
                Some(g) => Some(value::decode_root(g.value())?),
                None => None,
            };
            self.touched.insert(no, v);
        }
        match self.touched.get_mut(&no) {
            Some(Some(v)) => Ok(v),
            _ => Err(Error::NoRoot(no)),
        }
    }

    fn apply(&mut self, op: Op) -> Result<()> {
        match op {
            Op::CreateRoot {
                no,
                path,
                id,
                log_identity,
                building,
            } => {
                if !building {
                    self.refuse_complete_path(&path)?;
                }
                let v = RootValue {
                    building,
                    covered: 0,
                    dirs: 0,
                    entries: 0,
                    path,
                    id,
                    log_identity,
                };
                self.touched.insert(no, Some(v));
            }
            Op::DropRoot(no) => {
                self.root(no)?;
                let start = key::root(no);
                let end = key::prefix_end(&start);
                for t in [&mut self.dirs, &mut self.buckets] {
                    t.retain_in::<&[u8], _>(key::bounds(&start, &end), |_, _| false)?;
                }
                self.pending.retain(|k, _| !k.starts_with(&start));
                self.touched.insert(no, None);
            }
            Op::Dir { root, id, op } => {
                self.root(root)?;
                self.pending
                    .entry(key::dir(root, &id))
                    .or_default()
                    .push(op);
            }
            Op::Covered { root, covered } => {
                let v = self.root(root)?;
                if covered < v.covered {
                    return Err(Error::CoveredBackwards {
                        root,
                        stored: v.covered,
                        given: covered,
                    });
                }
                v.covered = covered;
            }
            Op::Finish(no) => {
                let path = self.root(no)?.path.clone();
                for old in self.complete_roots_with(&path)? {
                    if old != no {
                        self.apply(Op::DropRoot(old))?;
                    }
                }
                self.root(no)?.building = false;
            }
        }
        Ok(())
    }

    /// The complete roots with this path, as this transaction sees them.
    fn complete_roots_with(&mut self, path: &[u8]) -> Result<Vec<RootNo>> {
        let mut found = Vec::new();
        for row in self.roots.iter()? {
            let (k, v) = row?;
            let no = RootNo(k.value());
            if !self.touched.contains_key(&no) && !value::decode_root(v.value())?.building {
                found.extend((value::decode_root(v.value())?.path == path).then_some(no));
            }
        }
        for (no, v) in &self.touched {
            if let Some(v) = v {
                found.extend((!v.building && v.path == path).then_some(*no));
            }
        }
        Ok(found)
    }

    fn refuse_complete_path(&mut self, path: &[u8]) -> Result<()> {
        if self.complete_roots_with(path)?.is_empty() {
            Ok(())
        } else {
            Err(Error::RootExists {
                path: path.to_vec(),
            })
        }
    }

    /// Applies each directory's changes, then writes back every root row
    /// the batch changed.
    fn finish(mut self) -> Result<()> {
        for (dir_key, ops) in std::mem::take(&mut self.pending) {
            let c = dir_edit::apply(&mut self.dirs, &mut self.buckets, &dir_key, ops)?;
            let (root, _) = key::split_dir(&dir_key)?;
            // Pending changes of a dropped root were dropped with it.
            let v = self.root(root)?;
            v.entries = v.entries.wrapping_add_signed(c.entries);
            v.dirs = v.dirs.wrapping_add_signed(c.dirs);
        }
        for (no, v) in std::mem::take(&mut self.touched) {
            match v {
                Some(v) => self.roots.insert(no.0, value::encode_root(&v).as_slice())?,
                None => self.roots.remove(no.0)?,
            };
        }
        Ok(())
    }
}

/// Applies `ops` in `tx`, and records the next root number if a root was
/// created. On an error the caller drops `tx`, which aborts it.
pub(crate) fn apply(tx: &WriteTransaction, ops: Vec<Op>) -> Result<()> {
    let mut highest = None;
    let mut t = Tables {
        roots: tx.open_table(ROOTS)?,
        dirs: tx.open_table(DIRS)?,
        buckets: tx.open_table(BUCKETS)?,
        touched: BTreeMap::new(),
        pending: BTreeMap::new(),
    };
    for op in ops {
        if let Op::CreateRoot { no, .. } = &op {
            highest = highest.max(Some(no.0));
        }
        t.apply(op)?;
    }
    t.finish()?;
    if let Some(h) = highest {
        let mut meta = tx.open_table(META)?;
        let stored = match meta.get(NEXT_ROOT)? {
            Some(g) => crate::tables::decode_u32(g.value())?,
            None => 1,
        };
        let next = stored.max(h.saturating_add(1));
        meta.insert(NEXT_ROOT, next.to_le_bytes().as_slice())?;
    }
    Ok(())
}
