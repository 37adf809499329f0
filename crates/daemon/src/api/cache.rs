//! Rendered inventory answers, kept per (listing, format, columns) with
//! the tracker generation they were rendered at.
//!
//! Rendering 10,000 mounts takes milliseconds; a repeated query at the
//! same generation costs a `Bytes` clone instead. A body is stored under
//! the generation read *before* the table was read, so a change racing
//! the rendering can only make the entry look older than it is (and be
//! rendered again), never newer.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;

use weir_view::lvm_units::Units;

use super::query::Format;

/// What is listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Listing {
    Mounts,
    Lvm(Lvm),
}

/// The device tracker's listings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Lvm {
    Pvs,
    Vgs,
    Lvs,
}

/// A cache key: the listing, the format, and the text table's columns
/// (the mount table's `Column` discriminants, or an LVM table's
/// `Columns::key`; empty for JSON, whose bytes never depend on them, and
/// for the default LVM columns).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) listing: Listing,
    pub(crate) format: Format,
    pub(crate) columns: Vec<u8>,
    /// The sizes' units, for an LVM report's table.
    pub(crate) units: Option<Units>,
}

/// The most entries kept: every listing in both formats plus a few column
/// choices. Past it, the cache starts over; a hostile client asking for
/// every column order cannot grow it.
const MAX_ENTRIES: usize = 32;

/// The cache.
#[derive(Default)]
pub(crate) struct RenderCache {
    entries: Mutex<HashMap<Key, (u64, Bytes)>>,
}

impl RenderCache {
    /// The body rendered at `generation`, if there is one.
    pub(crate) fn get(&self, key: &Key, generation: u64) -> Option<Bytes> {
        let map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(key) {
            Some((g, body)) if *g == generation => Some(body.clone()),
            _ => None,
        }
    }

    /// Keeps a body rendered at `generation` (unless a newer one is there).
    pub(crate) fn put(&self, key: Key, generation: u64, body: Bytes) {
        let mut map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if map.get(&key).is_some_and(|(g, _)| *g > generation) {
            return;
        }
        if map.len() >= MAX_ENTRIES && !map.contains_key(&key) {
            map.clear();
        }
        map.insert(key, (generation, body));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(columns: Vec<u8>) -> Key {
        Key {
            listing: Listing::Mounts,
            format: Format::Text,
            columns,
            units: None,
        }
    }

    #[test]
    fn by_generation_and_bounded() {
        let c = RenderCache::default();
        c.put(key(vec![1]), 5, Bytes::from_static(b"five"));
        assert_eq!(c.get(&key(vec![1]), 5).as_deref(), Some(&b"five"[..]));
        assert!(c.get(&key(vec![1]), 6).is_none());
        assert!(c.get(&key(vec![2]), 5).is_none());
        // An older rendering never replaces a newer one.
        c.put(key(vec![1]), 4, Bytes::from_static(b"four"));
        assert_eq!(c.get(&key(vec![1]), 5).as_deref(), Some(&b"five"[..]));
        for i in 0..=MAX_ENTRIES as u8 {
            c.put(key(vec![i, 9]), 1, Bytes::new());
        }
        assert!(c.entries.lock().unwrap().len() <= MAX_ENTRIES);
    }
}
