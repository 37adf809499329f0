//! [`TextCache`]: each distinct metadata text is read and parsed once,
//! however many PVs (and mdas) carry it, and however many threads probe
//! them at once.
//!
//! A text is known by its [`TextKey`], the (checksum, size) its raw_locn
//! states, as lvm2's `lvmcache_lookup_mda` does. Only what depends on the
//! text alone is cached: its parse, good or bad. A failure to *read* it
//! (I/O, a checksum that does not match on this device) belongs to the
//! device, so it is returned but not cached, and the next PV with the same
//! key reads its own copy.
//!
//! The key comes from the disk, and CRC-32 is not a cryptographic hash: a
//! crafted device can state the key of another VG's text and so be given
//! that VG's parsed metadata, or be first and plant its own. It gains no
//! more than it could by copying that text, which it can read too; a caller
//! that must not take one device's word for another's VG can check that
//! the chosen VG lists the probed PV ([`Pv::pv_meta`](super::Pv::pv_meta)).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::VgMeta;

/// What identifies a metadata text: its raw_locn's checksum and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TextKey {
    /// The raw_locn's `checksum` (LVM's CRC of the text).
    pub checksum: u32,
    /// The raw_locn's `size`, in bytes.
    pub size: u64,
}

/// A text's parse, as cached and shared: the VG, or why it is not one.
pub type Parsed = Result<Arc<VgMeta>, Arc<crate::Error>>;

/// Counters of a [`TextCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered without reading.
    pub hits: u64,
    /// Texts read from a device (each a miss).
    pub texts_read: u64,
    /// Bytes of text read.
    pub bytes_read: u64,
}

/// The parsed metadata texts seen so far, by [`TextKey`]. `Sync`: share one
/// between the threads that probe PVs.
#[derive(Debug, Default)]
pub struct TextCache {
    /// One slot per key; a slot's own lock is held while its text is read
    /// and parsed, so that other threads wanting the same key wait for that
    /// one read instead of making their own.
    slots: Mutex<HashMap<TextKey, Arc<Mutex<Option<Parsed>>>>>,
    hits: AtomicU64,
    texts_read: AtomicU64,
    bytes_read: AtomicU64,
}

impl TextCache {
    /// An empty cache.
    pub fn new() -> TextCache {
        TextCache::default()
    }

    /// The parse of the text `key` names: from the cache, or else from
    /// `read` (which must return that text, checksum checked) and
    /// [`crate::meta::parse_vg`]. A `read` error is returned, not cached.
    pub fn get_or_read(
        &self,
        key: TextKey,
        read: impl FnOnce() -> crate::Result<Vec<u8>>,
    ) -> Parsed {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(slots.entry(key).or_default())
        };
        let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(parsed) = slot.as_ref() {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return parsed.clone();
        }
        self.texts_read.fetch_add(1, Ordering::Relaxed);
        let text = read().map_err(Arc::new)?;
        self.bytes_read
            .fetch_add(text.len() as u64, Ordering::Relaxed);
        let parsed = crate::meta::parse_vg(&text).map(Arc::new).map_err(Arc::new);
        *slot = Some(parsed.clone());
        parsed
    }

    /// The cached parse of `key`, if any, without reading or counting.
    pub fn get(&self, key: &TextKey) -> Option<Parsed> {
        let slot = {
            let slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(slots.get(key)?)
        };
        let slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        slot.clone()
    }

    /// Drops `key`'s entry (e.g. once no PV carries that text any more).
    pub fn forget(&self, key: &TextKey) {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.remove(key);
    }

    /// The number of keys looked up so far (and not forgotten).
    pub fn len(&self) -> usize {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// No key was looked up yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The counters so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            texts_read: self.texts_read.load(Ordering::Relaxed),
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
        }
    }
}
