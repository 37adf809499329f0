//! A device written while it is probed: the header names a text whose
//! bytes are not yet (or no longer) the ones read. The probe reads it
//! again, and a reading that stays torn is reported in its areas, never
//! taken as the PV's metadata.

mod support;

use std::cell::Cell;
use std::io;

use support::fixture;
use weir_lvm::ReadAt;
use weir_lvm::probe::{TextCache, probe_settled};

/// An image whose reads past the first 4.5 KiB (the texts) come back
/// damaged the first `torn` times, as if LVM were still writing them.
struct Writing {
    bytes: Vec<u8>,
    torn: Cell<u32>,
}

impl ReadAt for Writing {
    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.bytes.as_slice().read_exact_at(offset, buf)?;
        if offset >= 4608 && self.torn.get() > 0 && !buf.is_empty() {
            self.torn.set(self.torn.get() - 1);
            let mid = buf.len() / 2;
            buf[mid] ^= 0x20;
        }
        Ok(())
    }
}

fn device(torn: u32) -> Writing {
    let img = fixture::images("many").remove(0);
    Writing {
        bytes: img.bytes,
        torn: Cell::new(torn),
    }
}

#[test]
fn a_torn_reading_is_read_again() {
    let cache = TextCache::new();
    let dev = device(1);
    let (pv, torn) = probe_settled(&dev, &cache, 3);
    let pv = pv.unwrap().unwrap();
    assert_eq!(torn, 1);
    assert!(!pv.torn());
    assert!(pv.vg.is_some(), "the second reading is whole");
    // The torn text was not cached as that key's parse.
    assert_eq!(cache.stats().texts_read, 2);
}

#[test]
fn a_reading_that_stays_torn_is_reported_not_applied() {
    let cache = TextCache::new();
    let dev = device(10);
    let (pv, torn) = probe_settled(&dev, &cache, 3);
    let pv = pv.unwrap().unwrap();
    assert_eq!(torn, 3);
    assert!(pv.torn());
    assert!(pv.vg.is_none(), "no half-read text is the PV's metadata");
    assert!(cache.is_empty() || cache.get(&pv.mdas[0].text_key.unwrap()).is_none());
}
