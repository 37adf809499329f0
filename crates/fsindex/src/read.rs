//! `Snapshot`: every read, as of one commit. Entries are read a bucket
//! row at a time (bucket.rs): a lookup reads one, a directory's listing
//! its few, and a root's load walks them all in key order, decoding each
//! row in place.

use std::collections::VecDeque;

use redb::{ReadOnlyTable, ReadTransaction, ReadableTable};

use crate::bucket::{self, Items};
use std::panic::AssertUnwindSafe;

use crate::error::{Error, Result};
use crate::key;
use crate::tables::{BUCKETS, DIRS, ROOTS};
use crate::types::{Dir, Entry, EntryRef, EntryRow, Root, RootNo, RootState};
use crate::value::{self, DirRow};

type Bytes = ReadOnlyTable<&'static [u8], &'static [u8]>;
type Range = redb::Range<'static, &'static [u8], &'static [u8]>;

/// A consistent view of the index: later commits do not change what it
/// reads. Holding one keeps the pages it sees from being reused, so drop
/// it when done.
pub struct Snapshot {
    roots: ReadOnlyTable<u32, &'static [u8]>,
    dirs: Bytes,
    buckets: Bytes,
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
    let end = key::prefix_end(prefix);
    Ok(t.range::<&[u8]>(key::bounds(prefix, &end))?)
}

/// Calls `f` with each entry of a bucket row, decoded in place.
fn each_in_row(k: &[u8], v: &[u8], f: &mut impl FnMut(EntryRef<'_>)) -> Result<()> {
    let (parent, _) = key::split_bucket(k)?;
    for item in Items::new(v)? {
        f(item?.with_parent(parent));
    }
    Ok(())
}

/// Runs a read of the store. redb trusts its pages once the file opened:
/// a damaged page can make it panic (a slice out of bounds) rather than
/// fail, so each read is run through this and such a panic is a
/// [`Error::Corrupt`] of that read. redb's read paths take no locks a
/// panic could poison, so the snapshot stays usable.
fn guard<T>(table: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or(Err(Error::Corrupt {
        table,
        what: "page (the store panicked reading it)",
    }))
}

impl Snapshot {
    pub(crate) fn new(tx: ReadTransaction) -> Result<Snapshot> {
        Ok(Snapshot {
            roots: tx.open_table(ROOTS)?,
            dirs: tx.open_table(DIRS)?,
            buckets: tx.open_table(BUCKETS)?,
        })
    }

    /// Every root, complete or building, by number.
    pub fn roots(&self) -> Result<Vec<Root>> {
        guard("roots", || {
            let mut out = Vec::new();
            for row in self.roots.iter()? {
                let (k, v) = row?;
                out.push(root_of(k.value(), v.value())?);
            }
            Ok(out)
        })
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
        guard("roots", || match self.roots.get(no.0)? {
            Some(g) => Ok(Some(root_of(no.0, g.value())?)),
            None => Ok(None),
        })
    }

    fn dir_row(&self, root: RootNo, id: &[u8]) -> Result<Option<DirRow>> {
        guard("dirs", || {
            match self.dirs.get(key::dir(root, id).as_slice())? {
                Some(g) => Ok(Some(value::decode_dir_row(g.value())?)),
                None => Ok(None),
            }
        })
    }

    /// A directory, as `put_dir` described it.
    pub fn dir(&self, root: RootNo, id: &[u8]) -> Result<Option<Dir>> {
        Ok(self.dir_row(root, id)?.and_then(|r| r.dir))
    }

    /// How many buckets hold a directory's entries (0 if it has no row):
    /// for tests and diagnostics of the bucket rule.
    pub fn bucket_count(&self, root: RootNo, id: &[u8]) -> Result<u32> {
        Ok(self.dir_row(root, id)?.map_or(0, |r| 1 << r.shift))
    }

    /// What `name` in directory `parent` points at: one bucket read.
    pub fn entry(&self, root: RootNo, parent: &[u8], name: &[u8]) -> Result<Option<Entry>> {
        let Some(row) = self.dir_row(root, parent)? else {
            return Ok(None);
        };
        let k = key::bucket(&key::dir(root, parent), bucket::of(name, row.shift));
        guard("buckets", || match self.buckets.get(k.as_slice())? {
            Some(g) => bucket::find(g.value(), name),
            None => Ok(None),
        })
    }

    /// A directory's entries, by name (bytewise): its buckets read and
    /// sorted.
    pub fn children(&self, root: RootNo, dir: &[u8]) -> Result<Entries> {
        let mut rows = Vec::new();
        guard("buckets", || {
            for row in scan(&self.buckets, &key::dir(root, dir))? {
                let (k, v) = row?;
                each_in_row(k.value(), v.value(), &mut |e| rows.push(e.to_row()))?;
            }
            Ok(())
        })?;
        rows.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Ok(Entries {
            range: None,
            queue: rows.into(),
        })
    }

    /// Every entry of a root, grouped by directory (in key order; within a
    /// directory in no order to rely on), each one owned.
    pub fn entries(&self, root: RootNo) -> Result<Entries> {
        Ok(Entries {
            range: Some(guard("buckets", || scan(&self.buckets, &key::root(root)))?),
            queue: VecDeque::new(),
        })
    }

    /// Calls `f` with every entry of a root, in the order of
    /// [`Snapshot::entries`], lent in place: the fast way to load a whole
    /// tree. Stops at the first row that does not decode.
    pub fn for_each_entry(&self, root: RootNo, mut f: impl FnMut(EntryRef<'_>)) -> Result<()> {
        // A panic of `f` is the caller's, not damage: caught apart and
        // raised again once out of the store's read.
        let mut theirs = None;
        let read = guard("buckets", || {
            for row in scan(&self.buckets, &key::root(root))? {
                let (k, v) = row?;
                each_in_row(k.value(), v.value(), &mut |e| {
                    if theirs.is_none() {
                        let call = std::panic::catch_unwind(AssertUnwindSafe(|| f(e)));
                        theirs = call.err();
                    }
                })?;
                if theirs.is_some() {
                    break;
                }
            }
            Ok(())
        });
        if let Some(p) = theirs {
            std::panic::resume_unwind(p);
        }
        read
    }

    /// Every directory `put_dir` described in a root, in id order (by
    /// length, then bytes): `(id, row)`.
    pub fn dirs(&self, root: RootNo) -> Result<Dirs> {
        Ok(Dirs {
            range: scan(&self.dirs, &key::root(root))?,
        })
    }
}

/// Entries as a scan yields them.
pub struct Entries {
    range: Option<Range>,
    /// The rest of the bucket row read last.
    queue: VecDeque<EntryRow>,
}

impl Entries {
    fn refill(&mut self) -> Option<Result<()>> {
        let (range, queue) = (self.range.as_mut()?, &mut self.queue);
        guard("buckets", || {
            let Some(row) = range.next() else {
                return Ok(false);
            };
            let (k, v) = row?;
            each_in_row(k.value(), v.value(), &mut |e| queue.push_back(e.to_row()))?;
            Ok(true)
        })
        .map(|more| more.then_some(()))
        .transpose()
    }
}

impl Iterator for Entries {
    type Item = Result<EntryRow>;

    fn next(&mut self) -> Option<Result<EntryRow>> {
        loop {
            if let Some(e) = self.queue.pop_front() {
                return Some(Ok(e));
            }
            if let Err(e) = self.refill()? {
                // A damaged row ends the scan: what follows is not trusted.
                self.range = None;
                self.queue.clear();
                return Some(Err(e));
            }
        }
    }
}

/// Directories as a scan yields them: `(id, row)`.
pub struct Dirs {
    range: Range,
}

impl Iterator for Dirs {
    type Item = Result<(Vec<u8>, Dir)>;

    fn next(&mut self) -> Option<Result<(Vec<u8>, Dir)>> {
        loop {
            let range = &mut self.range;
            let got = guard("dirs", || {
                let Some(row) = range.next() else {
                    return Ok(None);
                };
                let (k, v) = row?;
                let (_, id) = key::split_dir(k.value())?;
                let row = value::decode_dir_row(v.value())?;
                Ok(Some(row.dir.map(|d| (id.to_vec(), d))))
            })
            .transpose()?;
            match got {
                // A row only of the bucket layout: not a described directory.
                Ok(None) => continue,
                Ok(Some(d)) => return Some(Ok(d)),
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
