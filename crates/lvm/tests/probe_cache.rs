//! The text cache and the choice of the authoritative copy: each distinct
//! text is read once across PVs and threads, ignored mdas are never read
//! and their stale text never wins, and copies that differ are reported.

mod support;

use std::sync::Arc;

use support::fixture;
use support::patch::{self, MDA1_AT, fix_mda_crc, get_u32, get_u64, put_u32, raw_locn};
use weir_lvm::Error;
use weir_lvm::disk_error::DiskError;
use weir_lvm::mda::RAW_LOCN_IGNORED;
use weir_lvm::probe::{Disagreement, TextCache, probe};

#[test]
fn many_pvs_read_their_one_text_once() {
    let cache = TextCache::new();
    let images = fixture::images("many");
    assert_eq!(images.len(), 6);
    let pvs: Vec<_> = images
        .iter()
        .map(|img| probe(&img.bytes, &cache).unwrap().unwrap())
        .collect();
    let stats = cache.stats();
    assert_eq!(stats.texts_read, 1);
    assert_eq!(stats.hits, 5);
    assert_eq!(stats.bytes_read, pvs[0].text_key.unwrap().size);
    assert_eq!(cache.len(), 1);
    let first = pvs[0].vg.as_ref().unwrap();
    for pv in &pvs {
        assert!(
            Arc::ptr_eq(pv.vg.as_ref().unwrap(), first),
            "one shared parse"
        );
    }
    // Probing again reads nothing new.
    probe(&images[3].bytes, &cache).unwrap().unwrap();
    assert_eq!(cache.stats().texts_read, 1);
}

#[test]
fn threads_probing_the_same_text_read_it_once() {
    let images = fixture::images("many");
    for _ in 0..20 {
        let cache = TextCache::new();
        std::thread::scope(|s| {
            for img in &images {
                let cache = &cache;
                s.spawn(move || probe(&img.bytes, cache).unwrap().unwrap());
            }
        });
        let stats = cache.stats();
        assert_eq!((stats.texts_read, stats.hits), (1, 5));
    }
}

#[test]
fn two_mdas_with_the_same_text_cost_one_read() {
    let cache = TextCache::new();
    let pv = probe(&fixture::image("mdacopies", "pv2"), &cache)
        .unwrap()
        .unwrap();
    assert_eq!(pv.mda_count(), 2);
    assert_eq!(pv.mda_in_use(), 2);
    assert_eq!(pv.mdas[0].text_key, pv.mdas[1].text_key);
    assert_eq!((cache.stats().texts_read, cache.stats().hits), (1, 1));
    assert_eq!(pv.chosen_mda, Some(0));
    assert!(pv.disagreements.is_empty());
}

#[test]
fn a_pv_without_mdas_has_no_vg_of_its_own() {
    let cache = TextCache::new();
    let pv = probe(&fixture::image("mdacopies", "pv0"), &cache)
        .unwrap()
        .unwrap();
    assert_eq!((pv.mda_count(), pv.mda_in_use()), (0, 0));
    assert!(pv.vg.is_none() && pv.text_key.is_none());
    assert_eq!(pv.header_bytes_read, weir_lvm::probe::HEAD_SIZE as u64);
    assert_eq!(cache.stats().texts_read, 0);
}

#[test]
fn ignored_mdas_are_not_read_and_their_stale_text_does_not_win() {
    let cache = TextCache::new();
    let pvs: Vec<_> = fixture::images("vgcopies")
        .into_iter()
        .map(|img| (img.name, probe(&img.bytes, &cache).unwrap().unwrap()))
        .collect();
    // Only the current text was read, though four PVs hold a stale one.
    assert_eq!(cache.stats().texts_read, 1);
    let mut in_use = 0;
    for (name, pv) in &pvs {
        assert_eq!(pv.mda_count(), 2, "{name}");
        in_use += pv.mda_in_use();
        for m in pv.mdas.iter().filter(|m| m.ignored()) {
            assert!(
                m.text_key.is_none() && m.vg.is_none(),
                "{name}: ignored mda read"
            );
            // The stale text is there on disk, with another checksum.
            let stale = m.header.as_ref().unwrap().committed().unwrap();
            assert!(stale.ignored());
            if let Some(key) = pv.text_key {
                assert_ne!(key.checksum, stale.checksum, "{name}");
            }
        }
        match pv.mda_in_use() {
            0 => assert!(pv.vg.is_none(), "{name}: all mdas ignored"),
            _ => assert_eq!(pv.vg.as_ref().unwrap().seqno, 5, "{name}"),
        }
        assert!(
            pv.disagreements.is_empty(),
            "{name}: ignored mdas do not disagree"
        );
    }
    assert_eq!(in_use, 3, "vgmetadatacopies 3");
}

/// A vgcopies PV with one mda in use (seqno 5) and one ignored holding
/// the stale seqno 3: with 3 mdas in use among 6 PVs of 2 mdas, at least
/// one PV has exactly one. Returns the image and the two mdas' (index,
/// offset), the one in use first.
fn mixed_pv() -> (Vec<u8>, (usize, usize), (usize, usize)) {
    for img in fixture::images("vgcopies") {
        let bytes = img.bytes;
        let mdas = [0, 1].map(|i| {
            let at = get_u64(&bytes, patch::PV_HEADER_AT + 40 + 32 + 16 * i) as usize;
            (i, at, get_u32(&bytes, raw_locn(at, 0, 20)))
        });
        let used: Vec<_> = mdas.iter().filter(|m| m.2 == 0).collect();
        let ignored: Vec<_> = mdas.iter().filter(|m| m.2 == RAW_LOCN_IGNORED).collect();
        if let ([u], [i]) = (&used[..], &ignored[..]) {
            return (bytes, (u.0, u.1), (i.0, i.1));
        }
    }
    panic!("no vgcopies PV has one mda in use and one ignored");
}

fn set_ignored(img: &mut [u8], mda: usize, ignored: bool) {
    put_u32(img, raw_locn(mda, 0, 20), u32::from(ignored));
    fix_mda_crc(img, mda);
}

#[test]
fn the_highest_seqno_wins_and_the_older_copy_is_reported() {
    let (mut img, (new, new_at), (old, old_at)) = mixed_pv();
    let cache = TextCache::new();
    let pv = probe(&img, &cache).unwrap().unwrap();
    assert_eq!(pv.chosen_mda, Some(new));
    assert_eq!(pv.vg.as_ref().unwrap().seqno, 5);
    assert!(
        pv.disagreements.is_empty(),
        "the ignored copy is not compared"
    );

    set_ignored(&mut img, old_at, false);
    let pv = probe(&img, &cache).unwrap().unwrap();
    assert_eq!(pv.chosen_mda, Some(new));
    assert_eq!(pv.vg.as_ref().unwrap().seqno, 5);
    let old_key = pv.mdas[old].text_key.unwrap();
    assert_eq!(
        pv.disagreements,
        vec![Disagreement::Differs {
            mda: old,
            key: old_key,
            seqno: 3
        }]
    );
    assert_eq!(cache.stats().texts_read, 2);

    // Both ignored: no VG of its own. Only the stale one in use: it is all
    // this PV has, so it is chosen (assembly compares it with other PVs').
    set_ignored(&mut img, old_at, true);
    set_ignored(&mut img, new_at, true);
    let pv = probe(&img, &cache).unwrap().unwrap();
    assert_eq!((pv.mda_in_use(), pv.vg), (0, None));
    set_ignored(&mut img, old_at, false);
    let pv = probe(&img, &cache).unwrap().unwrap();
    assert_eq!(pv.chosen_mda, Some(old));
    assert_eq!(pv.vg.unwrap().seqno, 3);
}

#[test]
fn a_bad_copy_is_unusable_and_the_good_one_wins() {
    let (mut img, (new, _), (old, old_at)) = mixed_pv();
    set_ignored(&mut img, old_at, false);
    // Damage the stale copy's text: its checksum no longer matches.
    let off = get_u64(&img, raw_locn(old_at, 0, 0)) as usize;
    img[old_at + off + 3] ^= 0x20;
    let cache = TextCache::new();
    let pv = probe(&img, &cache).unwrap().unwrap();
    assert_eq!(pv.chosen_mda, Some(new));
    assert_eq!(pv.vg.as_ref().unwrap().seqno, 5);
    assert_eq!(pv.disagreements, vec![Disagreement::Unusable { mda: old }]);
    let problem = pv.mdas[old].problem.as_deref().unwrap();
    assert!(
        matches!(problem, Error::Disk(DiskError::TextChecksum { .. })),
        "{problem:?}"
    );
    // A bad read is the device's, not the text's: it is not cached, so
    // another PV with an intact copy would still read its own.
    assert!(cache.get(&pv.mdas[old].text_key.unwrap()).is_none());
}

#[test]
fn a_text_that_does_not_parse_is_cached_as_such() {
    // Replace the text's first byte so it no longer names a VG section,
    // and make both checksums match again: the text is well placed and
    // intact, it just is not LVM metadata.
    let mut img = fixture::image("dup", "pv1");
    let off = get_u64(&img, raw_locn(MDA1_AT, 0, 0)) as usize;
    let size = get_u64(&img, raw_locn(MDA1_AT, 0, 8)) as usize;
    let text = MDA1_AT + off;
    img[text..text + 7].copy_from_slice(b"{{{{{{{");
    let checksum = weir_lvm::crc::calc(&img[text..text + size]);
    put_u32(&mut img, raw_locn(MDA1_AT, 0, 16), checksum);
    fix_mda_crc(&mut img, MDA1_AT);
    let cache = TextCache::new();
    for _ in 0..2 {
        let pv = probe(&img, &cache).unwrap().unwrap();
        assert!(pv.vg.is_none());
        let problem = pv.mdas[0].problem.as_deref().unwrap();
        assert!(
            matches!(problem, Error::Text(_) | Error::Meta(_)),
            "{problem:?}"
        );
    }
    assert_eq!((cache.stats().texts_read, cache.stats().hits), (1, 1));
}
