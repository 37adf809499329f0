//! One directory's changes in a commit: its row and each bucket they touch
//! read once, edited in memory and written once, so a commit costs one
//! rewrite per touched bucket however many records landed in it. When the
//! entry count crosses the bucket rule (bucket.rs), every bucket of the
//! directory is rewritten at the new count, once: amortized O(1) an entry.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry as Slot;

use redb::{ReadableTable, Table};

use crate::batch::DirOp;
use crate::bucket::{self, Names};
use crate::error::{Error, Result};
use crate::key;
use crate::value::{self, DirRow};

type Bytes<'t> = Table<'t, &'static [u8], &'static [u8]>;

/// How a directory's changes moved its root's counts.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts {
    pub(crate) entries: i64,
    pub(crate) dirs: i64,
}

/// A bucket read for editing, and whether an edit changed it.
struct Loaded {
    names: Names,
    dirty: bool,
}

fn load<'m>(
    buckets: &Bytes<'_>,
    dir_key: &[u8],
    loaded: &'m mut BTreeMap<u32, Loaded>,
    no: u32,
) -> Result<&'m mut Loaded> {
    match loaded.entry(no) {
        Slot::Occupied(o) => Ok(o.into_mut()),
        Slot::Vacant(v) => {
            let names = match buckets.get(key::bucket(dir_key, no).as_slice())? {
                Some(g) => bucket::decode(g.value())?,
                None => Names::new(),
            };
            Ok(v.insert(Loaded {
                names,
                dirty: false,
            }))
        }
    }
}

/// Applies `ops`, in order, to the directory whose key is `dir_key`.
pub(crate) fn apply(
    dirs: &mut Bytes<'_>,
    buckets: &mut Bytes<'_>,
    dir_key: &[u8],
    ops: Vec<DirOp>,
) -> Result<Counts> {
    let old_row = dirs.get(dir_key)?.map(|g| g.value().to_vec());
    let mut row = match &old_row {
        Some(b) => value::decode_dir_row(b)?,
        None => DirRow::default(),
    };
    let before = (row.entries, row.dir.is_some());
    let mut loaded = BTreeMap::new();
    for op in ops {
        match op {
            DirOp::Put(name, entry) => {
                let b = load(buckets, dir_key, &mut loaded, bucket::of(&name, row.shift))?;
                let tail = bucket::encode_tail(&entry);
                match b.names.insert(name, tail.clone()) {
                    Some(old) => b.dirty |= old != tail,
                    None => (row.entries, b.dirty) = (row.entries + 1, true),
                }
            }
            DirOp::Remove(name) => {
                let b = load(buckets, dir_key, &mut loaded, bucket::of(&name, row.shift))?;
                if b.names.remove(&name).is_some() {
                    (row.entries, b.dirty) = (row.entries - 1, true);
                }
            }
            DirOp::Clear => {
                // Every bucket goes; edits made before in this commit with it.
                let end = key::prefix_end(dir_key);
                buckets.retain_in::<&[u8], _>(key::bounds(dir_key, &end), |_, _| false)?;
                loaded.clear();
                (row.entries, row.shift) = (0, 0);
            }
            DirOp::Describe(d) => row.dir = Some(d),
            DirOp::Undescribe => row.dir = None,
            DirOp::Times(times) => {
                let Some(d) = row.dir.as_mut() else {
                    let (root, id) = key::split_dir(dir_key)?;
                    return Err(Error::NoDir {
                        root,
                        id: id.to_vec(),
                    });
                };
                match times {
                    Some((mtime, ctime)) => {
                        (d.mtime, d.ctime, d.times_valid) = (mtime, ctime, true)
                    }
                    None => d.times_valid = false,
                }
            }
        }
    }
    let shift = bucket::shift_for(row.entries, row.shift);
    if shift != row.shift {
        rebucket(buckets, dir_key, loaded, shift)?;
        row.shift = shift;
    } else {
        for (no, b) in loaded.into_iter().filter(|(_, b)| b.dirty) {
            let k = key::bucket(dir_key, no);
            if b.names.is_empty() {
                buckets.remove(k.as_slice())?;
            } else {
                buckets.insert(k.as_slice(), bucket::encode(&b.names).as_slice())?;
            }
        }
    }
    if row.dir.is_none() && row.entries == 0 {
        // Nothing described and nothing in it: no row, as if never seen.
        if old_row.is_some() {
            dirs.remove(dir_key)?;
        }
        row.shift = 0;
    } else {
        let new_row = value::encode_dir_row(&row);
        if old_row.as_deref() != Some(new_row.as_slice()) {
            dirs.insert(dir_key, new_row.as_slice())?;
        }
    }
    Ok(Counts {
        entries: row.entries as i64 - before.0 as i64,
        dirs: i64::from(row.dir.is_some()) - i64::from(before.1),
    })
}

/// Rewrites every bucket of a directory at `2^shift` buckets: the ones
/// this commit edited as edited, the others as stored.
fn rebucket(
    buckets: &mut Bytes<'_>,
    dir_key: &[u8],
    mut loaded: BTreeMap<u32, Loaded>,
    shift: u8,
) -> Result<()> {
    let end = key::prefix_end(dir_key);
    // Gathered unsorted and sorted once per new bucket: merging sorted
    // buckets one by one would cost the directory's size per bucket.
    let mut all = Vec::new();
    for row in buckets.range::<&[u8]>(key::bounds(dir_key, &end))? {
        let (k, v) = row?;
        let (_, no) = key::split_bucket(k.value())?;
        if !loaded.contains_key(&no) {
            all.extend(bucket::decode(v.value())?);
        }
    }
    for b in loaded.values_mut() {
        all.extend(std::mem::take(&mut b.names));
    }
    buckets.retain_in::<&[u8], _>(key::bounds(dir_key, &end), |_, _| false)?;
    let mut split: BTreeMap<u32, Names> = BTreeMap::new();
    for (name, tail) in all {
        split
            .entry(bucket::of(&name, shift))
            .or_default()
            .insert(name, tail);
    }
    for (no, names) in split {
        buckets.insert(
            key::bucket(dir_key, no).as_slice(),
            bucket::encode(&names).as_slice(),
        )?;
    }
    Ok(())
}
