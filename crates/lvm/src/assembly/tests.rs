//! Unit tests of VG assembly: the event sequences of the usual cases,
//! duplicates, metadata versions, the reports against what LVM 2.03.16
//! printed, and the cost of a 10,000-PV VG.

use std::sync::Arc;

use super::*;
use crate::meta::parse_vg;
use crate::model::{LvMeta, PvMeta};

fn uuid(n: u32) -> Uuid {
    Uuid::parse(format!("{n:032}").as_bytes()).unwrap()
}

/// A VG named `name` (uuid from `id`) listing PVs `pvs` (uuid numbers),
/// 10 extents each, 4 allocated on the first.
fn vg(name: &str, id: u32, seqno: u64, pvs: &[u32]) -> Arc<VgMeta> {
    Arc::new(VgMeta {
        name: name.into(),
        id: uuid(id),
        seqno,
        status: vec!["READ".into()],
        extent_size: 8192,
        metadata_copies: 0,
        pvs: pvs
            .iter()
            .enumerate()
            .map(|(i, &p)| PvMeta {
                key: format!("pv{i}"),
                id: uuid(p),
                device_hint: String::new(),
                status: vec![],
                flags: vec![],
                dev_size: 100 * 8192,
                pe_start: 2048,
                pe_count: 10,
                pe_alloc: if i == 0 { 4 } else { 0 },
            })
            .collect(),
        lvs: vec![LvMeta {
            name: "lv".into(),
            id: uuid(999),
            status: vec!["VISIBLE".into()],
            flags: Vec::new(),
            visible: true,
            extents: 4,
            allocation_policy: None,
            segments: Vec::new(),
        }],
    })
}

fn seen(pv: u32, meta: Option<&Arc<VgMeta>>) -> PvSeen {
    PvSeen {
        uuid: uuid(pv),
        device_size: 1 << 30,
        pe_start: 1 << 20,
        mda_count: u32::from(meta.is_some()),
        mda_in_use: u32::from(meta.is_some()),
        vg: meta.cloned(),
    }
}

fn vgref(m: &VgMeta) -> VgRef {
    VgRef::of(m)
}

/// Only the PV and completeness events, for the tests about those.
fn core<D>(ev: Vec<Event<D>>) -> Vec<Event<D>> {
    ev.into_iter()
        .filter(|e| {
            matches!(
                e,
                Event::PvFound { .. }
                    | Event::PvLost { .. }
                    | Event::DuplicatePv { .. }
                    | Event::VgComplete { .. }
                    | Event::VgIncomplete { .. }
            )
        })
        .collect()
}

#[test]
fn a_vg_completes_when_its_last_pv_arrives() {
    let m = vg("vg0", 100, 1, &[1, 2]);
    let mut a = Assembly::new();
    let ev = core(a.add("sda", seen(1, Some(&m))));
    assert_eq!(
        ev,
        [Event::PvFound {
            dev: "sda",
            uuid: uuid(1),
            vg: Some(vgref(&m))
        }]
    );
    assert!(!a.vgs()[0].complete);
    assert_eq!(a.vgs()[0].missing, [uuid(2)]);
    let ev = core(a.add("sdb", seen(2, None)));
    assert_eq!(ev.len(), 2);
    assert_eq!(
        ev[1],
        Event::VgComplete {
            vg: vgref(&m),
            pv_count: 2
        }
    );
    let ev = core(a.remove(&"sda"));
    assert_eq!(
        ev,
        [
            Event::PvLost {
                dev: "sda",
                uuid: uuid(1),
                vg: Some(vgref(&m))
            },
            Event::VgIncomplete {
                vg: vgref(&m),
                missing: vec![uuid(1)]
            }
        ]
    );
    // sdb (no metadata) keeps the VG known, incomplete.
    assert_eq!(a.vgs().len(), 1);
    let ev = core(a.add("sda", seen(1, Some(&m))));
    assert!(
        matches!(ev.last(), Some(Event::VgComplete { .. })),
        "{ev:?}"
    );
    // Removing a PV not present, or twice, does nothing.
    assert!(a.remove(&"sdz").is_empty());
}

#[test]
fn pvs_seen_before_their_metadata_count() {
    let m = vg("vg0", 100, 1, &[1, 2, 3]);
    let mut a = Assembly::new();
    for (d, p) in [("sdb", 2), ("sdc", 3)] {
        let ev = core(a.add(d, seen(p, None)));
        assert_eq!(
            ev,
            [Event::PvFound {
                dev: d,
                uuid: uuid(p),
                vg: None
            }]
        );
    }
    assert!(a.vgs().is_empty());
    assert!(a.pvs().iter().all(|p| p.vg_uuid.is_none()));
    let ev = core(a.add("sda", seen(1, Some(&m))));
    assert_eq!(
        ev[1],
        Event::VgComplete {
            vg: vgref(&m),
            pv_count: 3
        }
    );
    assert!(a.pvs().iter().all(|p| p.vg_name == "vg0"));
}

#[test]
fn the_highest_seqno_wins() {
    let v5 = vg("vg0", 100, 5, &[1, 2]);
    let v4 = vg("old", 100, 4, &[1]);
    let v6 = vg("renamed", 100, 6, &[1]);
    let mut a = Assembly::new();
    a.add("sda", seen(1, Some(&v5)));
    // An older copy (which alone would make the VG complete) is ignored.
    let ev = core(a.add("sdb", seen(2, Some(&v4))));
    assert!(matches!(ev.last(), Some(Event::VgComplete { vg, .. }) if vg.seqno == 5));
    a.remove(&"sdb");
    let ev = core(a.add("sdc", seen(3, Some(&v4))));
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(a.vgs()[0].seqno, 5);
    // A newer one (vgreduce of PV 2, and a rename) replaces it, and makes
    // the VG complete again.
    let ev = core(a.add("sda", seen(1, Some(&v6))));
    assert_eq!(
        ev,
        [Event::VgComplete {
            vg: vgref(&v6),
            pv_count: 1
        }]
    );
    let r = &a.vgs()[0];
    assert_eq!((r.name.as_str(), r.seqno, r.pv_count), ("renamed", 6, 1));
    // And stays, even once the device that carried it goes.
    a.add("sdd", seen(1, Some(&v5)));
    a.remove(&"sda");
    assert_eq!(a.vgs()[0].seqno, 6);
}

#[test]
fn duplicates_are_reported_and_counted_once() {
    let m = vg("vg0", 100, 1, &[1, 2]);
    let mut a = Assembly::new();
    a.add("sda", seen(1, Some(&m)));
    let ev = a.add("sdx", seen(1, Some(&m)));
    assert_eq!(
        ev,
        [
            Event::PvFound {
                dev: "sdx",
                uuid: uuid(1),
                vg: Some(vgref(&m))
            },
            Event::DuplicatePv {
                uuid: uuid(1),
                devices: vec!["sda", "sdx"],
                vg: Some(vgref(&m))
            }
        ]
    );
    let r = &a.vgs()[0];
    assert_eq!((r.complete, r.duplicates, r.mda_count), (false, 1, 1));
    let ev = a.add("sdb", seen(2, None));
    assert!(matches!(ev.last(), Some(Event::VgComplete { .. })));
    let dup: Vec<_> = a.pvs().iter().map(|p| (p.device, p.duplicate)).collect();
    assert_eq!(dup, [("sda", false), ("sdb", false), ("sdx", true)]);
    // The first goes: the duplicate takes over, the VG stays complete.
    let ev = a.remove(&"sda");
    assert_eq!(ev.len(), 1, "{ev:?}");
    let dup: Vec<_> = a.pvs().iter().map(|p| (p.device, p.duplicate)).collect();
    assert_eq!(dup, [("sdb", false), ("sdx", false)]);
    assert_eq!(a.vgs()[0].duplicates, 0);
    let ev = a.remove(&"sdx");
    assert!(matches!(ev.last(), Some(Event::VgIncomplete { .. })));
}

#[test]
fn a_change_replaces_what_was_seen() {
    let m = vg("vg0", 100, 1, &[1]);
    let mut a = Assembly::new();
    a.add("sda", seen(1, None));
    // Same PV, now with metadata: no PvFound again, but the VG appears.
    let ev = core(a.add("sda", seen(1, Some(&m))));
    assert_eq!(
        ev,
        [Event::VgComplete {
            vg: vgref(&m),
            pv_count: 1
        }]
    );
    // Relabelled as another PV: lost, then found.
    let ev = core(a.add("sda", seen(7, None)));
    assert_eq!(
        ev,
        [
            Event::PvLost {
                dev: "sda",
                uuid: uuid(1),
                vg: Some(vgref(&m))
            },
            Event::VgIncomplete {
                vg: vgref(&m),
                missing: vec![uuid(1)]
            },
            Event::PvFound {
                dev: "sda",
                uuid: uuid(7),
                vg: None
            }
        ]
    );
    // Nothing refers to the VG any more: it is forgotten.
    assert!(a.vgs().is_empty());
}

#[test]
fn reports_match_lvm() {
    // The VG of meta::tests::REAL as LVM 2.03.16 reported it, plus two
    // orphans (one without an mda) created next to it.
    let m = Arc::new(parse_vg(crate::meta::tests::REAL.as_bytes()).unwrap());
    let mut a = Assembly::new();
    let pv = |p: usize, meta: Option<&Arc<VgMeta>>, size: u64, mdas: u32| PvSeen {
        uuid: m.pvs.get(p).map_or(uuid(p as u32), |x| x.id),
        device_size: size,
        pe_start: 1_048_576,
        mda_count: mdas,
        mda_in_use: mdas,
        vg: meta.cloned(),
    };
    a.add("/dev/loop0", pv(0, Some(&m), 67_108_864, 1));
    a.add("/dev/loop1", pv(1, Some(&m), 67_108_864, 1));
    a.add("/dev/loop2", pv(2, None, 41_943_040, 1));
    a.add("/dev/loop3", pv(3, None, 41_943_040, 0));
    // PV VG PSize PFree #PMda #PMdaUse 1st PE PE Alloc DevSize
    let want = [
        (
            "wtextvg", 62_914_560, 46_137_344, 1, 1_048_576, 15, 4, 67_108_864,
        ),
        (
            "wtextvg", 62_914_560, 54_525_952, 1, 1_048_576, 15, 2, 67_108_864,
        ),
        ("", 41_943_040, 41_943_040, 1, 1_048_576, 0, 0, 41_943_040),
        ("", 41_943_040, 41_943_040, 0, 1_048_576, 0, 0, 41_943_040),
    ];
    let pvs = a.pvs();
    let got: Vec<_> = pvs
        .iter()
        .map(|p| {
            assert_eq!(p.mda_count, p.mda_in_use);
            (
                p.vg_name.as_str(),
                p.size_bytes,
                p.free_bytes,
                p.mda_count,
                p.pe_start,
                p.pe_count,
                p.pe_alloc,
                p.dev_size,
            )
        })
        .collect();
    assert_eq!(got, want);
    // VG #PV #LV VSize VFree #VMda #VMdaUse
    let v = &a.vgs()[0];
    assert_eq!(v.name, "wtextvg");
    assert_eq!((v.pv_count, v.lv_count), (2, 2));
    assert_eq!((v.size_bytes, v.free_bytes), (125_829_120, 100_663_296));
    assert_eq!((v.mda_count, v.mda_used_count), (2, 2));
    assert_eq!(v.extent_size, 4 << 20);
    assert!(v.complete && v.missing.is_empty());
}

#[test]
fn a_pv_without_extents_reports_its_size() {
    let mut m = (*vg("vg0", 100, 1, &[1])).clone();
    m.pvs[0].pe_count = 0;
    m.pvs[0].pe_alloc = 0;
    let m = Arc::new(m);
    let mut a = Assembly::new();
    a.add(0u32, seen(1, Some(&m)));
    let p = &a.pvs()[0];
    assert_eq!((p.size_bytes, p.free_bytes), (100 * 8192 * 512, 0));
}

#[test]
fn ten_thousand_pvs_cost_linear_work() {
    const N: u32 = 10_000;
    let ids: Vec<u32> = (1..=N).collect();
    let m = vg("big", 100, 1, &ids);
    // Every PV carrying the metadata.
    let mut a = Assembly::new();
    let mut completes = 0;
    for &p in &ids {
        let ev = a.add(p, seen(p, Some(&m)));
        completes += ev
            .iter()
            .filter(|e| matches!(e, Event::VgComplete { .. }))
            .count();
    }
    assert_eq!(completes, 1);
    assert_eq!(a.vgs()[0].mda_count, u64::from(N));
    // One pass over the PVs to list them; a quadratic scheme would be ~N²/2.
    assert!(a.work <= u64::from(N), "work {}", a.work);
    for p in &ids {
        a.remove(p);
    }
    assert!(a.vgs().is_empty());
    // Plus one pass for the missing list, one to forget the VG.
    assert!(a.work <= 3 * u64::from(N), "work {}", a.work);

    // Only the last PV carries the metadata.
    let mut a = Assembly::new();
    for &p in &ids[1..] {
        a.add(p, seen(p, None));
    }
    let ev = a.add(ids[0], seen(ids[0], Some(&m)));
    assert!(matches!(ev.last(), Some(Event::VgComplete { .. })));
    assert!(a.work <= u64::from(N), "work {}", a.work);
}

/// `m` with its first LV grown to `extents`, renamed `name`, at `seqno`.
fn edited(m: &VgMeta, seqno: u64, f: impl FnOnce(&mut VgMeta)) -> Arc<VgMeta> {
    let mut n = m.clone();
    n.seqno = seqno;
    f(&mut n);
    Arc::new(n)
}

/// Every PV of `m` re-read carrying `n`, as after an LVM command: the
/// events of each, in order.
fn rewrite(
    a: &mut Assembly<&'static str>,
    devs: &[(&'static str, u32)],
    n: &Arc<VgMeta>,
) -> Vec<Event<&'static str>> {
    devs.iter()
        .flat_map(|&(d, p)| a.add(d, seen(p, Some(n))))
        .collect()
}

#[test]
fn lv_commands_give_one_vg_change_and_their_lv_events() {
    let m = vg("vg0", 100, 1, &[1, 2]);
    let devs = [("sda", 1), ("sdb", 2)];
    let mut a = Assembly::new();
    for &(d, p) in &devs {
        a.add(d, seen(p, Some(&m)));
    }
    // lvcreate: one more LV.
    let n = edited(&m, 2, |v| {
        let mut lv = v.lvs[0].clone();
        lv.name = "new".into();
        lv.id = uuid(998);
        v.lvs.push(lv);
    });
    let ev = rewrite(&mut a, &devs, &n);
    assert_eq!(ev.len(), 2, "{ev:?}");
    let Event::VgChange { old, vg, delta } = &ev[0] else {
        panic!("{ev:?}")
    };
    assert_eq!((old.seqno, vg.seqno), (1, 2));
    assert!(delta.changed().is_empty(), "{delta:?}");
    assert!(
        matches!(&ev[1], Event::LvAdd { lv, .. } if lv.name == "new" && lv.size_bytes == 4 * 8192 * 512)
    );
    // lvextend + lvrename of the first LV: one LV_CHANGE naming both.
    let n2 = edited(&n, 3, |v| {
        v.lvs[0].name = "grown".into();
        v.lvs[0].extents = 6;
    });
    let ev = rewrite(&mut a, &devs, &n2);
    assert_eq!(ev.len(), 2, "{ev:?}");
    match &ev[1] {
        Event::LvChange {
            old, lv, changed, ..
        } => {
            assert_eq!((old.name.as_str(), lv.name.as_str()), ("lv", "grown"));
            assert_eq!(changed, &["name", "size"]);
        }
        other => panic!("{other:?}"),
    }
    // lvremove.
    let n3 = edited(&n2, 4, |v| v.lvs.truncate(1));
    let ev = rewrite(&mut a, &devs, &n3);
    assert!(
        matches!(&ev[1], Event::LvRemove { lv, .. } if lv.name == "new"),
        "{ev:?}"
    );
    assert_eq!(ev.len(), 2);
    // An older copy seen later changes nothing.
    assert!(a.add("sda", seen(1, Some(&n))).is_empty());
}

#[test]
fn vgextend_and_vgreduce_move_a_pv_and_vgremove_removes_the_vg() {
    let m = vg("vg0", 100, 1, &[1]);
    let mut a = Assembly::new();
    a.add("sda", seen(1, Some(&m)));
    // pvcreate: an orphan.
    let ev = a.add("sdb", seen(2, None));
    assert!(
        matches!(&ev[..], [Event::PvFound { vg: None, .. }]),
        "{ev:?}"
    );
    // vgextend writes the new text to both.
    let n = edited(&m, 2, |v| {
        let mut pv = v.pvs[0].clone();
        pv.key = "pv1".into();
        pv.id = uuid(2);
        pv.pe_alloc = 0;
        v.pvs.push(pv);
    });
    let ev = rewrite(&mut a, &[("sda", 1), ("sdb", 2)], &n);
    let Event::VgChange { delta, .. } = &ev[0] else {
        panic!("{ev:?}")
    };
    assert_eq!(delta.pvs_added, [uuid(2)]);
    assert_eq!(delta.changed(), ["pvs", "extent_count", "free_count"]);
    assert!(
        matches!(&ev[1], Event::PvChange { dev: "sdb", vg: Some(v), old_vg: None, .. } if v.name == "vg0"),
        "{ev:?}"
    );
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert!(a.vgs()[0].complete);
    // vgreduce: the VG's text drops it, the PV is rewritten as an orphan.
    let r = edited(&n, 3, |v| v.pvs.truncate(1));
    let mut ev = a.add("sda", seen(1, Some(&r)));
    ev.extend(a.add("sdb", seen(2, None)));
    assert!(
        matches!(
            &ev[1],
            Event::PvChange {
                dev: "sdb",
                vg: None,
                old_vg: Some(_),
                ..
            }
        ),
        "{ev:?}"
    );
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert_eq!(a.vgs().len(), 1);
    // vgremove: the last carrier rewritten as an orphan, still present.
    let ev = a.add("sda", seen(1, None));
    assert_eq!(a.vgs().len(), 0);
    let kinds: Vec<_> = ev
        .iter()
        .map(|e| match e {
            Event::LvRemove { .. } => "lv_remove",
            Event::PvChange { vg: None, .. } => "pv_orphan",
            Event::VgRemove { .. } => "vg_remove",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["lv_remove", "pv_orphan", "vg_remove"], "{ev:?}");
    assert!(a.pvs().iter().all(|p| p.vg_uuid.is_none()));
}

#[test]
fn vgcreate_moves_its_orphans_and_unplugging_forgets_lvs_without_a_remove() {
    let mut a = Assembly::new();
    a.add("sda", seen(1, None));
    a.add("sdb", seen(2, None));
    let m = vg("vg0", 100, 1, &[1, 2]);
    let ev = rewrite(&mut a, &[("sda", 1), ("sdb", 2)], &m);
    let moved = ev
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::PvChange {
                    old_vg: None,
                    vg: Some(_),
                    ..
                }
            )
        })
        .count();
    assert_eq!(moved, 2, "{ev:?}");
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, Event::LvAdd { .. }))
            .count(),
        1
    );
    assert!(
        matches!(ev.last(), Some(Event::VgComplete { .. })),
        "{ev:?}"
    );
    // Both unplugged: incomplete, then forgotten with its LV; no VG_REMOVE.
    let mut ev = a.remove(&"sda");
    ev.extend(a.remove(&"sdb"));
    assert!(
        ev.iter().any(|e| matches!(e, Event::LvRemove { .. })),
        "{ev:?}"
    );
    assert!(
        !ev.iter().any(|e| matches!(e, Event::VgRemove { .. })),
        "{ev:?}"
    );
    assert!(a.vgs().is_empty());
}
