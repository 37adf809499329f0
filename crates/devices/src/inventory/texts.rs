//! [`TextRefs`]: which metadata texts the devices' probes still use, so
//! that the shared [`TextCache`] forgets a text once no device carries it.
//!
//! Every LVM command that writes metadata leaves a new text (a new
//! checksum) on each PV of its VG. Without this, a daemon that watches
//! thousands of `lvcreate`s would keep the parse of every text it ever
//! saw; with it, the cache holds at most the texts on the devices now,
//! and a text is still read once for all the PVs that carry it.

use std::collections::HashMap;

use weir_lvm::probe::{TextCache, TextKey};

use crate::probe::Probe;

/// How many areas of the probed devices name each text.
#[derive(Debug, Default)]
pub(super) struct TextRefs {
    refs: HashMap<TextKey, usize>,
}

impl TextRefs {
    /// Counts the texts `probe`'s areas name.
    pub(super) fn hold(&mut self, probe: &Probe) {
        for key in keys(probe) {
            *self.refs.entry(key).or_default() += 1;
        }
    }

    /// Stops counting `probe`'s texts; a text no area names any more is
    /// forgotten by `cache`.
    pub(super) fn release(&mut self, probe: &Probe, cache: &TextCache) {
        for key in keys(probe) {
            if let Some(n) = self.refs.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.refs.remove(&key);
                    cache.forget(&key);
                }
            }
        }
    }
}

/// The keys of the texts a probe's areas name.
fn keys(probe: &Probe) -> impl Iterator<Item = TextKey> + '_ {
    probe
        .pv()
        .into_iter()
        .flat_map(|pv| pv.mdas.iter().filter_map(|m| m.text_key))
}
