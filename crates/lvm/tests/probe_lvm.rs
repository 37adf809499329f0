//! `probe` on every fixture set against LVM's own `pvs` and `vgs` reports:
//! per-PV figures from the headers and the chosen metadata, and per-VG
//! figures from the highest-seqno copy among the set's PVs.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use support::fixture::{self, SETS};
use support::lvm_report;
use weir_lvm::probe::{Pv, TextCache, probe};
use weir_lvm::{ReadAt, Uuid, VgMeta};

/// Every image of the set, probed with one cache.
fn probe_set(set: &str) -> Vec<(String, Pv)> {
    let cache = TextCache::new();
    fixture::images(set)
        .into_iter()
        .map(|img| {
            let pv = probe(&img.bytes, &cache)
                .unwrap_or_else(|e| panic!("{set}/{}: {e}", img.name))
                .unwrap_or_else(|| panic!("{set}/{}: not a PV", img.name));
            assert!(
                pv.mdas.iter().all(|m| m.problem.is_none()),
                "{set}/{}",
                img.name
            );
            assert!(pv.disagreements.is_empty(), "{set}/{}", img.name);
            assert!(pv.header_bytes_read <= 8192, "{set}/{}", img.name);
            (img.name, pv)
        })
        .collect()
}

/// The newest copy of each VG (by uuid) among the probed PVs.
fn newest_vgs(pvs: &[(String, Pv)]) -> BTreeMap<Uuid, Arc<VgMeta>> {
    let mut out: BTreeMap<Uuid, Arc<VgMeta>> = BTreeMap::new();
    for vg in pvs.iter().filter_map(|(_, pv)| pv.vg.clone()) {
        let slot = out.entry(vg.id).or_insert_with(|| Arc::clone(&vg));
        if vg.seqno > slot.seqno {
            *slot = vg;
        }
    }
    out
}

#[test]
fn pv_figures_match_pvs() {
    for set in SETS {
        let probed = probe_set(set);
        let vgs = newest_vgs(&probed);
        for row in lvm_report::pvs(set) {
            let name = row.str("pv_name");
            let what = format!("{set}/{name}");
            let (_, pv) = probed
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("{what}: no image"));
            assert_eq!(pv.uuid(), row.uuid("pv_uuid"), "{what}");
            assert_eq!(pv.mda_count() as u64, row.num("pv_mda_count"), "{what}");
            assert_eq!(
                pv.mda_in_use() as u64,
                row.num("pv_mda_used_count"),
                "{what}"
            );
            assert_eq!(pv.header.pe_start(), Some(row.num("pe_start")), "{what}");
            assert_eq!(pv.header.device_size, row.num("dev_size"), "{what}");

            // LVM knows a PV's VG from any PV's metadata, not only its own
            // (a PV without an mda in use has none).
            let vg = vgs.values().find(|vg| vg.pv(&pv.uuid()).is_some());
            let Some(vg) = vg else {
                assert_eq!(row.str("vg_name"), "", "{what}: an orphan");
                assert_eq!(pv.vg, None, "{what}");
                continue;
            };
            assert_eq!(vg.name, row.str("vg_name"), "{what}");
            let meta = vg.pv(&pv.uuid()).unwrap();
            let extent = vg.extent_bytes();
            assert_eq!(meta.pe_start * 512, row.num("pe_start"), "{what}");
            assert_eq!(meta.pe_count, row.num("pv_pe_count"), "{what}");
            assert_eq!(meta.pe_alloc, row.num("pv_pe_alloc_count"), "{what}");
            assert_eq!(meta.pe_count * extent, row.num("pv_size"), "{what}");
            assert_eq!(
                (meta.pe_count - meta.pe_alloc) * extent,
                row.num("pv_free"),
                "{what}"
            );
            if let Some(own) = &pv.vg {
                assert_eq!(own.seqno, vg.seqno, "{what}: its mdas in use are current");
                assert_eq!(pv.pv_meta(), Some(meta), "{what}");
            }
        }
    }
}

#[test]
fn vg_figures_match_vgs() {
    for set in SETS {
        let probed = probe_set(set);
        let vgs = newest_vgs(&probed);
        let rows = lvm_report::vgs(set);
        assert_eq!(rows.len(), vgs.len(), "{set}: one VG per report row");
        for row in rows {
            let what = format!("{set}/{}", row.str("vg_name"));
            let vg = &vgs[&row.uuid("vg_uuid")];
            let members: Vec<&Pv> = probed
                .iter()
                .map(|(_, pv)| pv)
                .filter(|pv| vg.pv(&pv.uuid()).is_some())
                .collect();
            // The dup set's copy carries the same PV uuid; LVM never saw it.
            let members: Vec<&Pv> = if set == "dup" {
                members
                    .into_iter()
                    .filter(|pv| pv.vg.as_ref().map(|v| v.seqno) == Some(vg.seqno))
                    .collect()
            } else {
                members
            };
            assert_eq!(vg.name, row.str("vg_name"), "{what}");
            assert_eq!(vg.seqno, row.num("vg_seqno"), "{what}");
            assert_eq!(vg.pvs.len() as u64, row.num("pv_count"), "{what}");
            assert_eq!(vg.lv_count() as u64, row.num("lv_count"), "{what}");
            assert_eq!(vg.size_bytes(), row.num("vg_size"), "{what}");
            assert_eq!(vg.free_bytes(), row.num("vg_free"), "{what}");
            assert_eq!(vg.extent_bytes(), row.num("vg_extent_size"), "{what}");
            let mda_count: usize = members.iter().map(|pv| pv.mda_count()).sum();
            let mda_used: usize = members.iter().map(|pv| pv.mda_in_use()).sum();
            assert_eq!(mda_count as u64, row.num("vg_mda_count"), "{what}");
            assert_eq!(mda_used as u64, row.num("vg_mda_used_count"), "{what}");
            let missing = vg.pvs.len() - members.len();
            assert_eq!(missing as u64, row.num("vg_missing_pv_count"), "{what}");
        }
    }
}

#[test]
fn the_missing_pv_is_the_one_left_out() {
    let probed = probe_set("missing");
    let vgs = newest_vgs(&probed);
    let vg = vgs.values().next().unwrap();
    let note = fixture::note("missing", "missing");
    let missing = Uuid::parse(note[1].as_bytes()).unwrap();
    assert!(vg.pv(&missing).is_some(), "the VG lists pv3");
    assert!(probed.iter().all(|(_, pv)| pv.uuid() != missing));
    assert_eq!(vg.pvs.len(), probed.len() + 1);
}

#[test]
fn a_copy_of_a_pv_has_its_uuid_and_an_older_text() {
    let cache = TextCache::new();
    let pv = probe(&fixture::image("dup", "pv1"), &cache)
        .unwrap()
        .unwrap();
    let copy = probe(&fixture::image("dup", "pv1-copy"), &cache)
        .unwrap()
        .unwrap();
    assert_eq!(pv.uuid(), copy.uuid());
    let (vg, old) = (pv.vg.unwrap(), copy.vg.unwrap());
    assert_eq!(vg.id, old.id);
    assert_eq!(old.seqno + 1, vg.seqno);
    assert_ne!(pv.text_key, copy.text_key);
    assert_eq!(vg.lv_count(), 2);
    assert_eq!(old.lv_count(), 1);
    assert_eq!(cache.stats().texts_read, 2);
    let row = &lvm_report::vgs("dup")[0];
    assert_eq!(vg.seqno, row.num("vg_seqno"));
}

#[test]
fn the_wrapped_text_parses_to_lvms_vg() {
    let cache = TextCache::new();
    let img = fixture::image("wrap", "pv1");
    let pv = probe(&img, &cache).unwrap().unwrap();
    let vg = pv.vg.expect("the wrapped text parsed");
    let row = &lvm_report::vgs("wrap")[0];
    assert_eq!(vg.name, "weirfx_wrap");
    assert_eq!(vg.seqno, row.num("vg_seqno"));
    assert_eq!(vg.free_bytes(), row.num("vg_free"));
    assert_eq!(cache.stats().bytes_read, pv.text_key.unwrap().size);
    assert_eq!(img.size(), 8 << 20);
}
