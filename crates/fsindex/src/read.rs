//! `Snapshot`: every read, as of one commit.

use redb::{ReadOnlyTable, ReadTransaction, ReadableTable};

use crate::error::Result;
use crate::key;
use crate::tables::{BY_ID, DIRS, ENTRIES, ROOTS};
use crate::types::{Dir, Entry, EntryRow, Name, Root, RootNo, RootState};
use crate::value;

type Bytes = ReadOnlyTable<&'static [u8], &'static [u8]>;
type Range = redb::Range<'static, &'static [u8], &'static [u8]>;

/// A consistent view of the index: later commits do not change what it
/// reads. Holding one keeps the pages it sees from being reused, so drop
/// it when done.
pub struct Snapshot {
    roots: ReadOnlyTable<u32, &'static [u8]>,
    dirs: Bytes,
    entries: Bytes,
    by_id: Bytes,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").finish_non_exhaustive()
    }
}

fn root_of(no: u32, b: &[u8]) -> Result<Root> {
    let v = value::decode_root(b)?;
    Ok(Root {
        no: RootNo(no),
        path: v.path,
        id: v.id,
        log_identity: v.log_identity,
        covered: v.covered,
        state: if v.building {
            RootState::Building
        } else {
            RootState::Complete
        },
        dirs: v.dirs,
        entries: v.entries,
    })
}

/// The rows whose keys start with `prefix`.
fn scan(t: &Bytes, prefix: &[u8]) -> Result<Range> {
    Ok(match key::prefix_end(prefix) {
        Some(end) => t.range(prefix..end.as_slice())?,
        None => t.range(prefix..)?,
    })
}

impl Snapshot {
    pub(crate) fn new(tx: ReadTransaction) -> Result<Snapshot> {
        Ok(Snapshot {
            roots: tx.open_table(ROOTS)?,
            dirs: tx.open_table(DIRS)?,
            entries: tx.open_table(ENTRIES)?,
            by_id: tx.open_table(BY_ID)?,
        })
    }

    /// Every root, complete or building, by number.
    pub fn roots(&self) -> Result<Vec<Root>> {
        let mut out = Vec::new();
        for row in self.roots.iter()? {
            let (k, v) = row?;
            out.push(root_of(k.value(), v.value())?);
        }
        Ok(out)
    }

    /// The complete root with this path, if there is one (a build of it
    /// that has not finished is not returned: see [`Snapshot::roots`]).
    pub fn root(&self, path: &[u8]) -> Result<Option<Root>> {
        Ok(self
            .roots()?
            .into_iter()
            .find(|r| r.path == path && r.state == RootState::Complete))
    }

    /// The root with this number, complete or not.
    pub fn root_by_no(&self, no: RootNo) -> Result<Option<Root>> {
        match self.roots.get(no.0)? {
            Some(g) => Ok(Some(root_of(no.0, g.value())?)),
            None => Ok(None),
        }
    }

    /// A directory's row.
    pub fn dir(&self, root: RootNo, id: &[u8]) -> Result<Option<Dir>> {
        match self.dirs.get(key::dir(root, id).as_slice())? {
            Some(g) => Ok(Some(value::decode_dir(g.value())?)),
            None => Ok(None),
        }
    }

    /// What `name` in directory `parent` points at.
    pub fn entry(&self, root: RootNo, parent: &[u8], name: &[u8]) -> Result<Option<Entry>> {
        match self
            .entries
            .get(key::entry(root, parent, name).as_slice())?
        {
            Some(g) => Ok(Some(value::decode_entry(g.value())?)),
            None => Ok(None),
        }
    }

    /// A directory's entries, by name (bytewise).
    pub fn children(&self, root: RootNo, dir: &[u8]) -> Result<Entries> {
        Ok(Entries {
            range: scan(&self.entries, &key::dir(root, dir))?,
        })
    }

    /// Every entry of a root, grouped by directory (in id order), for
    /// loading a whole tree.
    pub fn entries(&self, root: RootNo) -> Result<Entries> {
        Ok(Entries {
            range: scan(&self.entries, &key::root(root))?,
        })
    }

    /// Every directory of a root, in id order: `(id, row)`.
    pub fn dirs(&self, root: RootNo) -> Result<Dirs> {
        Ok(Dirs {
            range: scan(&self.dirs, &key::root(root))?,
        })
    }

    /// Every name of an id (its hard links), by directory and name.
    pub fn names_of(&self, root: RootNo, id: &[u8]) -> Result<Vec<Name>> {
        let prefix = key::dir(root, id);
        let mut out = Vec::new();
        for row in scan(&self.by_id, &prefix)? {
            let (k, _) = row?;
            let (parent, name) = key::split_by_id(k.value(), prefix.len())?;
            out.push(Name {
                parent: parent.to_vec(),
                name: name.to_vec(),
            });
        }
        Ok(out)
    }
}

/// Entries as a scan yields them.
pub struct Entries {
    range: Range,
}

impl Iterator for Entries {
    type Item = Result<EntryRow>;

    fn next(&mut self) -> Option<Result<EntryRow>> {
        let row = self.range.next()?;
        Some(row.map_err(Into::into).and_then(|(k, v)| {
            let (parent, name) = key::split_entry(k.value())?;
            let entry = value::decode_entry(v.value())?;
            Ok(EntryRow {
                parent: parent.to_vec(),
                name: name.to_vec(),
                entry,
            })
        }))
    }
}

/// Directories as a scan yields them: `(id, row)`.
pub struct Dirs {
    range: Range,
}

impl Iterator for Dirs {
    type Item = Result<(Vec<u8>, Dir)>;

    fn next(&mut self) -> Option<Result<(Vec<u8>, Dir)>> {
        let row = self.range.next()?;
        Some(row.map_err(Into::into).and_then(|(k, v)| {
            let id = k.value().get(5..).ok_or(crate::Error::Corrupt {
                table: "dirs",
                what: "key",
            })?;
            Ok((id.to_vec(), value::decode_dir(v.value())?))
        }))
    }
}
