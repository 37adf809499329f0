//! VG assembly over the images made with real LVM 2.03.16 (see
//! fixtures/make.sh): every image is probed and added to an [`Assembly`],
//! and its `vgs()`/`pvs()` reports are compared, field by field, with the
//! `vgs`/`pvs` reports LVM printed for the same devices.

mod support;

use std::collections::BTreeMap;

use support::{fixture, lvm_report};
use weir_lvm::Uuid;
use weir_lvm::assembly::{Assembly, Event, PvSeen};
use weir_lvm::probe::{TextCache, probe};

/// Each image of `set` probed, by name.
fn probed(set: &str) -> Vec<(String, PvSeen)> {
    let cache = TextCache::new();
    fixture::images(set)
        .into_iter()
        .map(|img| {
            let pv = probe(img.bytes.as_slice(), &cache)
                .unwrap_or_else(|e| panic!("{set}/{}: {e}", img.name))
                .unwrap_or_else(|| panic!("{set}/{}: no label", img.name));
            let seen = PvSeen {
                uuid: pv.uuid(),
                device_size: pv.header.device_size,
                pe_start: pv.header.pe_start().unwrap_or(0),
                mda_count: u32::try_from(pv.mda_count()).unwrap(),
                mda_in_use: u32::try_from(pv.mda_in_use()).unwrap(),
                vg: pv.vg.clone(),
            };
            (img.name, seen)
        })
        .collect()
}

/// Adds `pvs` in the given order, returning every event.
fn assemble(pvs: &[(String, PvSeen)]) -> (Assembly<String>, Vec<Event<String>>) {
    let mut a = Assembly::new();
    let mut events = Vec::new();
    for (name, seen) in pvs {
        events.extend(a.add(name.clone(), seen.clone()));
    }
    (a, events)
}

#[test]
fn reports_match_lvm_on_every_set() {
    for set in fixture::SETS {
        let (a, _) = assemble(&probed(set));
        // LVM lists a duplicate PV once, on the device it uses.
        let ours: BTreeMap<String, _> = a
            .pvs()
            .into_iter()
            .filter(|p| !p.duplicate)
            .map(|p| (p.device.clone(), p))
            .collect();
        let rows = lvm_report::pvs(set);
        let names: Vec<&str> = rows.iter().map(|r| r.str("pv_name")).collect();
        assert_eq!(ours.keys().collect::<Vec<_>>(), names, "{set}: pvs");
        for row in &rows {
            let p = &ours[row.str("pv_name")];
            let at = format!("{set}/{}", row.str("pv_name"));
            assert_eq!(p.uuid, row.uuid("pv_uuid"), "{at}");
            assert_eq!(p.vg_name, row.str("vg_name"), "{at}");
            let got = [
                p.size_bytes,
                p.free_bytes,
                p.dev_size,
                p.pe_start,
                p.pe_count,
                p.pe_alloc,
                u64::from(p.mda_count),
                u64::from(p.mda_in_use),
            ];
            let want = [
                "pv_size",
                "pv_free",
                "dev_size",
                "pe_start",
                "pv_pe_count",
                "pv_pe_alloc_count",
                "pv_mda_count",
                "pv_mda_used_count",
            ]
            .map(|f| row.num(f));
            assert_eq!(
                got, want,
                "{at}: size free dev_size pe_start pe alloc mdas used"
            );
        }
        let vgs = a.vgs();
        let rows = lvm_report::vgs(set);
        assert_eq!(vgs.len(), rows.len(), "{set}: vgs");
        for (v, row) in vgs.iter().zip(&rows) {
            let at = format!("{set}/{}", v.name);
            assert_eq!(v.name, row.str("vg_name"), "{set}");
            assert_eq!(v.uuid, row.uuid("vg_uuid"), "{at}");
            let got = [
                v.seqno,
                v.pv_count as u64,
                v.lv_count as u64,
                v.size_bytes,
                v.free_bytes,
                v.extent_size,
                v.mda_count,
                v.mda_used_count,
                v.missing.len() as u64,
            ];
            let want = [
                "vg_seqno",
                "pv_count",
                "lv_count",
                "vg_size",
                "vg_free",
                "vg_extent_size",
                "vg_mda_count",
                "vg_mda_used_count",
                "vg_missing_pv_count",
            ]
            .map(|f| row.num(f));
            assert_eq!(
                got, want,
                "{at}: seqno pvs lvs size free extent mdas used missing"
            );
            assert_eq!(v.complete, v.missing.is_empty(), "{at}");
        }
    }
}

#[test]
fn each_vg_completes_once_in_any_order() {
    for set in fixture::SETS {
        let mut pvs = probed(set);
        let complete = lvm_report::vgs(set)
            .iter()
            .filter(|r| r.num("vg_missing_pv_count") == 0)
            .count();
        for round in 0..2 {
            if round == 1 {
                pvs.reverse();
            }
            let (a, events) = assemble(&pvs);
            let n = events
                .iter()
                .filter(|e| matches!(e, Event::VgComplete { .. }))
                .count();
            assert_eq!(n, complete, "{set} round {round}: {events:?}");
            // Removing every device undoes it all and forgets every VG.
            let mut a = a;
            let mut lost = 0;
            for (name, _) in &pvs {
                lost += a
                    .remove(name)
                    .iter()
                    .filter(|e| matches!(e, Event::VgIncomplete { .. }))
                    .count();
            }
            assert_eq!(lost, complete, "{set} round {round}");
            assert!(a.vgs().is_empty() && a.pvs().is_empty(), "{set}");
        }
    }
}

#[test]
fn the_missing_pv_is_named() {
    let (a, events) = assemble(&probed("missing"));
    assert!(!events.iter().any(|e| matches!(e, Event::VgComplete { .. })));
    let want = Uuid::parse(fixture::note("missing", "missing")[1].as_bytes()).unwrap();
    let vgs = a.vgs();
    assert_eq!(vgs[0].missing, [want]);
    assert!(!vgs[0].complete);
}

#[test]
fn the_duplicate_pv_is_reported_and_the_newer_copy_wins() {
    let pvs = probed("dup");
    let older = pvs.iter().find(|(n, _)| n == "pv1-copy").unwrap();
    let newer = pvs.iter().find(|(n, _)| n == "pv1").unwrap();
    let seqno = |s: &PvSeen| s.vg.as_ref().unwrap().seqno;
    assert!(seqno(&older.1) < seqno(&newer.1));
    // The stale copy first: it holds the role, but its metadata gives way
    // to the newer one's as soon as that is seen.
    let (a, events) = assemble(&[older.clone(), newer.clone()]);
    let dup = events.iter().find_map(|e| match e {
        Event::DuplicatePv { devices, .. } => Some(devices.clone()),
        _ => None,
    });
    assert_eq!(dup, Some(vec!["pv1-copy".to_owned(), "pv1".to_owned()]));
    let v = &a.vgs()[0];
    assert_eq!((v.seqno, v.duplicates), (seqno(&newer.1), 1));
    let flags: Vec<_> = a
        .pvs()
        .iter()
        .map(|p| (p.device.clone(), p.duplicate))
        .collect();
    assert_eq!(
        flags,
        [("pv1".to_owned(), true), ("pv1-copy".to_owned(), false)]
    );
}
