//! Buckets: a directory's entries split by a hash of their names into
//! rows of the `buckets` table, the rule for how many, and the compact
//! encoding of the entries in one row.
//!
//! A row per entry cost a B-tree key and its overhead per entry; a row per
//! bucket shares them among up to a few hundred entries and makes a commit
//! cost one rewrite per touched bucket, however many records landed in it.
//!
//! The hash is part of the format, so it must not change with the Rust
//! version or the process: crc32c (Castagnoli, unseeded, as
//! `crc32c::crc32c` computes it) of the name's bytes. An entry of a
//! directory with `2^shift` buckets is in bucket `crc32c(name) & (2^shift
//! - 1)`.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::types::{Entry, EntryRef, Kind};
use crate::value::{self, Reader, SHIFT_MAX, V1};

/// A directory grows (doubles its buckets, or more) when it holds more
/// than this many entries per bucket on average.
pub(crate) const GROW_ABOVE: u64 = 256;
/// It shrinks when it holds fewer than this many per bucket: a quarter of
/// the growth mark, so a directory at either edge does not flap.
pub(crate) const SHRINK_BELOW: u64 = 64;

/// The kind byte's flag: the attributes follow.
const HAS_ATTRS: u8 = 0x80;

/// The bucket `name` is in, in a directory of `2^shift` buckets.
pub(crate) fn of(name: &[u8], shift: u8) -> u32 {
    let mask = ((1u64 << shift) - 1) as u32;
    crc32c::crc32c(name) & mask
}

/// The shift a directory of `entries` entries should have, given the one
/// it has: unchanged unless it is past the growth or shrink mark, then the
/// fewest buckets that hold at most [`GROW_ABOVE`] each on average.
pub(crate) fn shift_for(entries: u64, shift: u8) -> u8 {
    let n = 1u64 << shift;
    if entries <= GROW_ABOVE * n && (shift == 0 || entries >= SHRINK_BELOW * n) {
        return shift;
    }
    let want = entries.div_ceil(GROW_ABOVE).max(1).next_power_of_two();
    (want.trailing_zeros() as u8).min(SHIFT_MAX)
}

/// One bucket's entries being edited: name → the encoded rest of the
/// entry (id, kind, attributes), kept in name order as the row is.
pub(crate) type Names = BTreeMap<Vec<u8>, Vec<u8>>;

/// The bytes of an entry after its name: `[len][id][kind | 0x80 if
/// attributes][attributes]`.
pub(crate) fn encode_tail(e: &Entry) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + e.id.len() + 36);
    // Lengths were checked when the entry was added to the batch.
    out.push(e.id.len() as u8);
    out.extend_from_slice(&e.id);
    let flag = if e.attrs.is_some() { HAS_ATTRS } else { 0 };
    out.push(e.kind.code() | flag);
    if let Some(a) = &e.attrs {
        value::put_attrs(&mut out, a);
    }
    out
}

/// A bucket row: `[1]`, then each entry as `[len][name]` and its tail, in
/// name order.
pub(crate) fn encode(names: &Names) -> Vec<u8> {
    let size: usize = names.iter().map(|(n, t)| 1 + n.len() + t.len()).sum();
    let mut out = Vec::with_capacity(1 + size);
    out.push(V1);
    for (name, tail) in names {
        out.push(name.len() as u8);
        out.extend_from_slice(name);
        out.extend_from_slice(tail);
    }
    out
}

/// An entry of a bucket row, decoded in place.
pub(crate) struct Item<'a> {
    pub(crate) name: &'a [u8],
    /// The encoded bytes after the name.
    pub(crate) tail: &'a [u8],
    pub(crate) id: &'a [u8],
    pub(crate) kind: Kind,
    pub(crate) attrs: Option<crate::types::Attrs>,
}

impl<'a> Item<'a> {
    pub(crate) fn with_parent(&self, parent: &'a [u8]) -> EntryRef<'a> {
        EntryRef {
            parent,
            name: self.name,
            id: self.id,
            kind: self.kind,
            attrs: self.attrs,
        }
    }

    pub(crate) fn entry(&self) -> Entry {
        self.with_parent(&[]).entry()
    }
}

/// The entries of a bucket row, each checked as it is read: a row that
/// does not decode, or whose names are not in strictly increasing order,
/// is damaged.
pub(crate) struct Items<'a> {
    r: Reader<'a>,
    prev: Option<&'a [u8]>,
    failed: bool,
}

impl<'a> Items<'a> {
    pub(crate) fn new(row: &'a [u8]) -> Result<Items<'a>> {
        Ok(Items {
            r: Reader::new(row, "buckets")?,
            prev: None,
            failed: false,
        })
    }

    fn item(&mut self) -> Result<Item<'a>> {
        let r = &mut self.r;
        let name = r.bytes8()?;
        if self.prev.is_some_and(|p| p >= name) {
            return Err(r.bad("names out of order"));
        }
        self.prev = Some(name);
        let tail = r.rest();
        let id = r.bytes8()?;
        if id.is_empty() {
            return Err(r.bad("empty id"));
        }
        let code = r.u8()?;
        let kind = Kind::from_code(code & !HAS_ATTRS).ok_or(r.bad("kind"))?;
        let attrs = if code & HAS_ATTRS != 0 {
            Some(r.attrs()?)
        } else {
            None
        };
        let tail = &tail[..tail.len() - r.rest().len()];
        Ok(Item {
            name,
            tail,
            id,
            kind,
            attrs,
        })
    }
}

impl<'a> Iterator for Items<'a> {
    type Item = Result<Item<'a>>;

    fn next(&mut self) -> Option<Result<Item<'a>>> {
        if self.failed || self.r.rest().is_empty() {
            return None;
        }
        let item = self.item();
        self.failed = item.is_err();
        Some(item)
    }
}

/// A bucket row's entries, to edit.
pub(crate) fn decode(row: &[u8]) -> Result<Names> {
    let mut names = Names::new();
    for item in Items::new(row)? {
        let item = item?;
        names.insert(item.name.to_vec(), item.tail.to_vec());
    }
    Ok(names)
}

/// What `name` points at in a bucket row.
pub(crate) fn find(row: &[u8], name: &[u8]) -> Result<Option<Entry>> {
    for item in Items::new(row)? {
        let item = item?;
        if item.name == name {
            return Ok(Some(item.entry()));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Attrs, Timestamp};

    #[test]
    fn the_hash_is_fixed() {
        // Part of the format: these must never change.
        assert_eq!(crc32c::crc32c(b""), 0);
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(of(b"123456789", 0), 0);
        assert_eq!(of(b"123456789", 4), 0x3);
        assert_eq!(of(b"123456789", 31), 0x6306_9283);
    }

    #[test]
    fn the_rule_grows_and_shrinks_with_slack() {
        assert_eq!(shift_for(0, 0), 0);
        assert_eq!(shift_for(256, 0), 0);
        assert_eq!(shift_for(257, 0), 1);
        assert_eq!(shift_for(200_000, 0), 10);
        assert_eq!(shift_for(200, 1), 1);
        assert_eq!(shift_for(127, 1), 0);
        assert_eq!(shift_for(1000, 4), 2);
        assert_eq!(shift_for(u64::MAX, 0), SHIFT_MAX);
    }

    #[test]
    fn round_trips_and_refuses_damage() {
        let t = Timestamp {
            sec: -1,
            nsec: 999_999_999,
        };
        let mut names = Names::new();
        let e = Entry {
            id: vec![0xff; 255],
            kind: Kind::Block,
            attrs: Some(Attrs {
                size: u64::MAX,
                mtime: t,
                ctime: t,
                nlink: 1,
            }),
        };
        let f = Entry {
            id: vec![1],
            kind: Kind::Unknown,
            attrs: None,
        };
        names.insert(b"".to_vec(), encode_tail(&e));
        names.insert(b"\n\xff".to_vec(), encode_tail(&f));
        let row = encode(&names);
        assert_eq!(decode(&row).unwrap(), names);
        assert_eq!(find(&row, b"").unwrap(), Some(e));
        assert_eq!(find(&row, b"\n\xff").unwrap(), Some(f));
        assert_eq!(find(&row, b"x").unwrap(), None);
        assert!(decode(&row[..row.len() - 1]).is_err());
        let mut kind = row.clone();
        let at = row.len() - 1;
        kind[at] = 9;
        assert!(decode(&kind).is_err());
        // The two entries swapped: out of order.
        let mut swapped = vec![V1];
        swapped.extend_from_slice(&row[row.len() - 6..]);
        swapped.extend_from_slice(&row[1..row.len() - 6]);
        assert!(decode(&swapped).is_err());
        assert!(decode(&[2]).is_err());
    }
}
