//! Applying a batch inside one write transaction: the rows, the by-id
//! rows that follow them, each root's counts and covered index.

use std::collections::BTreeMap;

use redb::{ReadableTable, Table, WriteTransaction};

use crate::batch::Op;
use crate::error::{Error, Result};
use crate::key;
use crate::tables::{BY_ID, DIRS, ENTRIES, META, NEXT_ROOT, ROOTS};
use crate::types::RootNo;
use crate::value::{self, RootValue};

/// The tables a batch writes, open in one transaction.
struct Tables<'t> {
    roots: Table<'t, u32, &'static [u8]>,
    dirs: Table<'t, &'static [u8], &'static [u8]>,
    entries: Table<'t, &'static [u8], &'static [u8]>,
    by_id: Table<'t, &'static [u8], &'static [u8]>,
    /// Root rows read and changed so far; `None` for one dropped.
    touched: BTreeMap<RootNo, Option<RootValue>>,
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

    fn remove_by_id(
        &mut self,
        root: RootNo,
        entry_value: &[u8],
        parent: &[u8],
        name: &[u8],
    ) -> Result<()> {
        let old = value::decode_entry(entry_value)?;
        self.by_id
            .remove(key::by_id(root, &old.id, parent, name).as_slice())?;
        Ok(())
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
                for t in [&mut self.dirs, &mut self.entries, &mut self.by_id] {
                    match &end {
                        Some(end) => t.retain_in(start.as_slice()..end.as_slice(), |_, _| false)?,
                        None => t.retain_in(start.as_slice().., |_, _| false)?,
                    }
                }
                self.touched.insert(no, None);
            }
            Op::PutEntry {
                root,
                parent,
                name,
                entry,
            } => {
                self.root(root)?;
                let k = key::entry(root, &parent, &name);
                let old = self
                    .entries
                    .insert(k.as_slice(), value::encode_entry(&entry).as_slice())?;
                let old = old.map(|g| g.value().to_vec());
                match old {
                    Some(old) => self.remove_by_id(root, &old, &parent, &name)?,
                    None => self.root(root)?.entries += 1,
                }
                self.by_id.insert(
                    key::by_id(root, &entry.id, &parent, &name).as_slice(),
                    &[][..],
                )?;
            }
            Op::RemoveEntry { root, parent, name } => {
                self.root(root)?;
                let k = key::entry(root, &parent, &name);
                let old = self
                    .entries
                    .remove(k.as_slice())?
                    .map(|g| g.value().to_vec());
                if let Some(old) = old {
                    self.remove_by_id(root, &old, &parent, &name)?;
                    self.root(root)?.entries -= 1;
                }
            }
            Op::PutDir { root, id, dir } => {
                self.root(root)?;
                let k = key::dir(root, &id);
                if self
                    .dirs
                    .insert(k.as_slice(), value::encode_dir(&dir).as_slice())?
                    .is_none()
                {
                    self.root(root)?.dirs += 1;
                }
            }
            Op::RemoveDir { root, id } => {
                self.root(root)?;
                if self.dirs.remove(key::dir(root, &id).as_slice())?.is_some() {
                    self.root(root)?.dirs -= 1;
                }
            }
            Op::DirTimes { root, id, times } => {
                self.root(root)?;
                let k = key::dir(root, &id);
                let old = self.dirs.get(k.as_slice())?.map(|g| g.value().to_vec());
                let mut dir = match old {
                    Some(b) => value::decode_dir(&b)?,
                    None => return Err(Error::NoDir { root, id }),
                };
                match times {
                    Some((mtime, ctime)) => {
                        (dir.mtime, dir.ctime, dir.times_valid) = (mtime, ctime, true)
                    }
                    None => dir.times_valid = false,
                }
                self.dirs
                    .insert(k.as_slice(), value::encode_dir(&dir).as_slice())?;
            }
            Op::Covered { root, covered } => self.root(root)?.covered = covered,
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

    /// Writes back every root row the batch changed.
    fn finish(mut self) -> Result<()> {
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
        entries: tx.open_table(ENTRIES)?,
        by_id: tx.open_table(BY_ID)?,
        touched: BTreeMap::new(),
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
