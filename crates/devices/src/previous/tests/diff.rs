//! The comparison of a previous state with a scan: which changes, in
//! which order, and the records they make.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use weir_log::{FLAG_RECONCILED, RecordType};

use super::{MemLog, World, field, loop_dev, sda, sda_part, uuid};
use crate::change::ChangeKind;
use crate::devnum::DevNum;
use crate::previous::diff::{Reconciled, diff};
use crate::previous::{Previous, PvState, State};
use crate::record::FLAG_SCAN;
use crate::tracker::reconcile::append;

/// The changes from `before` to `after`.
fn changes(before: &World, after: &World) -> Vec<Reconciled> {
    let prev = Previous::of(&before.current(), 5);
    diff(&State::of(prev), &after.current())
}

/// `(record type, name)` of each change.
fn summary(found: &[Reconciled]) -> Vec<(&'static str, String)> {
    found
        .iter()
        .map(|r| {
            let name = match &r.change.kind {
                ChangeKind::DeviceAdd(d) | ChangeKind::DeviceRemove(d) => d.name.clone(),
                ChangeKind::DeviceChange { new, .. } => new.name.clone(),
                ChangeKind::PvFound { name, .. } | ChangeKind::PvLost { name, .. } => name.clone(),
                ChangeKind::PvChange { name, .. } => name.clone(),
                ChangeKind::VgComplete { vg, .. }
                | ChangeKind::VgIncomplete { vg, .. }
                | ChangeKind::VgChange { vg, .. }
                | ChangeKind::VgRemove { vg } => vg.name.clone(),
                ChangeKind::LvAdd { lv, .. }
                | ChangeKind::LvRemove { lv, .. }
                | ChangeKind::LvChange { lv, .. } => lv.name.clone(),
            };
            (r.change.name(), name)
        })
        .collect()
}

fn expect(list: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    list.iter().map(|(k, n)| (*k, (*n).to_owned())).collect()
}

/// Appends the changes as the tracker does and reads them back.
fn logged(found: &[Reconciled]) -> Vec<weir_log::LogRecord> {
    let m = MemLog::new();
    for r in found {
        append(&m.log, r).unwrap();
    }
    m.records(1)
}

#[test]
fn an_unchanged_system_logs_nothing() {
    let mut odd = loop_dev(4, true);
    odd.backing_file = Some(PathBuf::from(OsString::from_vec(b"/tmp/\xff.img".to_vec())));
    odd.wwid = Some("naa.5000".into());
    let w = World::default()
        .with(sda(), None)
        .with(sda_part(1), Some(uuid(b'P', 1)))
        .with(sda_part(2), None)
        .with(odd, Some(uuid(b'P', 2)))
        .with(loop_dev(5, false), None)
        .vg("vg0", 1, &[uuid(b'P', 1), uuid(b'P', 2)]);
    assert_eq!(changes(&w, &w), []);
}

/// The brief's restart: PVs attached while weir was down, and a copy of
/// one of them that was attached at the checkpoint detached.
#[test]
fn pvs_attached_while_down_are_changes_pvs_found_and_one_completion() {
    let (p0, p1, p2) = (uuid(b'P', 0), uuid(b'P', 1), uuid(b'P', 2));
    let base = World::default()
        .with(sda(), None)
        .with(sda_part(1), None)
        .vg("vg0", 1, &[p0, p1, p2]);
    let mut before = base.clone().with(loop_dev(9, true), Some(p0));
    let mut after = base.with(loop_dev(9, false), None);
    for n in 0..3 {
        before = before.with(loop_dev(n, false), None);
        after = after.with(loop_dev(n, true), Some(uuid(b'P', n)));
    }
    let found = changes(&before, &after);
    assert_eq!(
        summary(&found),
        expect(&[
            ("PV_LOST", "loop9"),
            ("DEVICE_CHANGE", "loop0"),
            ("DEVICE_CHANGE", "loop1"),
            ("DEVICE_CHANGE", "loop2"),
            ("DEVICE_CHANGE", "loop9"),
            ("PV_FOUND", "loop0"),
            ("PV_FOUND", "loop1"),
            ("PV_FOUND", "loop2"),
            ("VG_COMPLETE", "vg0"),
        ])
    );
    assert!(found.iter().all(|r| r.change.scan && r.parent.is_none()));

    let recs = logged(&found);
    assert!(
        recs.iter().all(|r| r.flags == FLAG_SCAN | FLAG_RECONCILED),
        "{recs:?}"
    );
    let lost = &recs[0];
    assert_eq!(lost.kind, RecordType::PV_LOST);
    assert_eq!(lost.target, p0.0);
    assert_eq!(lost.parent, uuid(b'V', 1).0);
    assert_eq!(field(lost, "dev"), "7:9");
    assert_eq!(field(lost, "vg"), "vg0");
    let attach = &recs[1];
    assert_eq!(attach.target, DevNum { major: 7, minor: 0 }.to_be_bytes());
    assert_eq!(field(attach, "changed"), "size,backing_file,diskseq");
    assert_eq!(field(attach, "size"), "16777216");
    assert_eq!(field(attach, "old_size"), "0");
    assert_eq!(field(attach, "backing_file"), "/var/tmp/pv0.img");
    assert_eq!(field(attach, "old_backing_file"), "");
    assert_eq!(field(attach, "diskseq"), "1100");
    assert_eq!(field(attach, "old_diskseq"), "100");
    let detach = &recs[4];
    assert_eq!(detach.name, b"loop9");
    assert_eq!(field(detach, "size"), "0");
    assert_eq!(field(detach, "old_backing_file"), "/var/tmp/pv9.img");
    let found0 = &recs[5];
    assert_eq!(found0.kind, RecordType::PV_FOUND);
    assert_eq!(found0.target, p0.0);
    assert_eq!(found0.parent, uuid(b'V', 1).0);
    assert_eq!(field(found0, "dev"), "7:0");
    assert_eq!(field(found0, "vg"), "vg0");
    // The copy that held this uuid is gone: not a duplicate.
    assert_eq!(found0.field("duplicate_of"), None);
    let complete = &recs[8];
    assert_eq!(complete.kind, RecordType::VG_COMPLETE);
    assert_eq!(complete.target, uuid(b'V', 1).0);
    assert_eq!(complete.name, b"vg0");
    assert_eq!(field(complete, "pvs"), "3");
    assert_eq!(field(complete, "seqno"), "7");
}

#[test]
fn only_completeness_transitions_are_logged_for_vgs() {
    let p = |n| uuid(b'P', n);
    let vgs = |w: World| {
        w.vg("vga", 1, &[p(10), p(11)])
            .vg("vgb", 2, &[p(20)])
            .vg("vgc", 3, &[p(30), p(31)])
            .vg("vgd", 4, &[p(40), p(41)])
    };
    let before = vgs(World::default())
        .with(loop_dev(10, true), Some(p(10)))
        .with(loop_dev(11, true), Some(p(11)))
        .with(loop_dev(20, true), Some(p(20)))
        .with(loop_dev(30, true), Some(p(30)))
        .with(loop_dev(31, true), Some(p(31)))
        .with(loop_dev(40, true), Some(p(40)));
    let after = before
        .clone()
        // vgb's only PV goes with its device: the VG is forgotten.
        .without("loop20")
        // vgc's second PV loses its label; the device stays as it was.
        .with(loop_dev(31, true), None)
        // vgd gets its missing PV.
        .with(loop_dev(41, true), Some(p(41)));
    let found = changes(&before, &after);
    assert_eq!(
        summary(&found),
        expect(&[
            ("PV_LOST", "loop20"),
            ("PV_LOST", "loop31"),
            ("VG_INCOMPLETE", "vgb"),
            ("VG_INCOMPLETE", "vgc"),
            ("DEVICE_REMOVE", "loop20"),
            ("DEVICE_ADD", "loop41"),
            ("PV_FOUND", "loop41"),
            ("VG_COMPLETE", "vgd"),
        ])
    );
    let missing = |i: usize| match &found[i].change.kind {
        ChangeKind::VgIncomplete { missing, .. } => missing.clone(),
        other => panic!("{other:?}"),
    };
    // Forgotten: what it lacks is its PVs as last seen.
    assert_eq!(missing(2), [p(20)]);
    assert_eq!(missing(3), [p(31)]);
    let recs = logged(&found);
    assert_eq!(field(&recs[3], "missing"), "1");
    assert_eq!(field(&recs[3], "missing_uuids"), p(31).to_string());
}

#[test]
fn removed_renamed_and_new_devices_name_their_disk() {
    let sda_num = DevNum { major: 8, minor: 0 };
    let before = World::default()
        .with(sda(), None)
        .with(sda_part(1), None)
        .with(sda_part(2), None)
        .with(loop_dev(3, false), None);
    let mut resized = sda_part(2);
    resized.size_bytes *= 2;
    let mut renamed = loop_dev(3, false);
    renamed.name = "other3".into();
    let after = before
        .clone()
        .without("sda1")
        .with(resized, None)
        .with(renamed, None)
        .with(sda_part(3), None);
    let found = changes(&before, &after);
    assert_eq!(
        summary(&found),
        expect(&[
            ("DEVICE_REMOVE", "loop3"),
            ("DEVICE_REMOVE", "sda1"),
            ("DEVICE_CHANGE", "sda2"),
            ("DEVICE_ADD", "other3"),
            ("DEVICE_ADD", "sda3"),
        ])
    );
    let recs = logged(&found);
    let by_name = |n: &str| recs.iter().find(|r| r.name == n.as_bytes()).unwrap();
    let gone = by_name("sda1");
    assert_eq!(gone.parent, sda_num.to_be_bytes());
    assert_eq!(field(gone, "dev"), "8:1");
    assert_eq!(by_name("sda2").parent, sda_num.to_be_bytes());
    assert_eq!(field(by_name("sda2"), "changed"), "size");
    let new = by_name("sda3");
    assert_eq!(new.kind, RecordType::DEVICE_ADD);
    assert_eq!(new.parent, sda_num.to_be_bytes());
    assert_eq!(field(new, "type"), "part");
    assert_eq!(field(new, "model"), "QEMU HARDDISK");
    assert!(by_name("other3").parent.is_empty());
}

#[test]
fn a_relabelled_pv_is_lost_then_found_and_a_copy_names_the_original() {
    let p = |n| uuid(b'P', n);
    let before = World::default()
        .with(loop_dev(4, true), Some(p(50)))
        .with(loop_dev(5, true), Some(p(51)))
        .with(loop_dev(6, false), None);
    // pvcreate over loop4; vgcreate over loop5 (same PV, now in a VG: a
    // PV_CHANGE, as live); loop6 attached to a copy of loop5.
    let after = before
        .clone()
        .with(loop_dev(4, true), Some(p(52)))
        .with(loop_dev(6, true), Some(p(51)))
        .vg("vgf", 6, &[p(51)]);
    let found = changes(&before, &after);
    assert_eq!(
        summary(&found),
        expect(&[
            ("PV_LOST", "loop4"),
            ("DEVICE_CHANGE", "loop6"),
            ("PV_FOUND", "loop4"),
            ("PV_FOUND", "loop6"),
            ("PV_CHANGE", "loop5"),
            ("VG_COMPLETE", "vgf"),
        ])
    );
    match &found[3].change.kind {
        ChangeKind::PvFound {
            uuid, duplicate_of, ..
        } => {
            assert_eq!(*uuid, p(51));
            assert_eq!(duplicate_of.as_deref(), Some("loop5"));
        }
        other => panic!("{other:?}"),
    }
    let recs = logged(&found);
    assert_eq!(field(&recs[3], "duplicate_of"), "loop5");
}

/// A checkpoint is read from a file anyone with write access to the
/// state directory could have changed: uuids that are not 32
/// alphanumerics are left out instead of reaching `Uuid`'s display, and a
/// device listed twice counts once (the last).
#[test]
fn a_hostile_previous_state_does_not_panic() {
    let w = World::default().with(loop_dev(1, true), None);
    let mut prev = Previous::of(&w.current(), 3);
    let mut twice = prev.devices[0].clone();
    twice.size_bytes = 1;
    twice.pv = Some(PvState {
        uuid: [0xff; 32],
        vg_uuid: Some([b'-'; 32]),
        vg_name: "x".into(),
    });
    prev.devices.push(twice);
    prev.vgs.push(crate::previous::VgState {
        uuid: [0; 32],
        name: "bad".into(),
        seqno: 1,
        complete: true,
        missing: 0,
        detail: None,
    });
    let found = diff(&State::of(prev), &w.current());
    assert_eq!(
        summary(&found),
        expect(&[("DEVICE_CHANGE", "loop1")]),
        "{found:?}"
    );
}

#[test]
fn lv_commands_while_down_are_one_vg_change_and_their_lv_records() {
    let p = |n| uuid(b'P', n);
    let base = World::default()
        .with(loop_dev(1, true), Some(p(1)))
        .with(loop_dev(2, true), Some(p(2)))
        .vg("vgl", 1, &[p(1), p(2)]);
    let before = base.clone().lv("vgl", "keep", 1, 2).lv("vgl", "gone", 2, 1);
    // lvremove gone, lvrename + lvextend keep, lvcreate new.
    let mut after = base.lv("vgl", "kept", 1, 3).lv("vgl", "new", 3, 1);
    after.vgs[0].seqno = 10;
    let found = changes(&before, &after);
    assert_eq!(
        summary(&found),
        expect(&[
            ("VG_CHANGE", "vgl"),
            ("LV_REMOVE", "gone"),
            ("LV_CHANGE", "kept"),
            ("LV_ADD", "new"),
        ])
    );
    let recs = logged(&found);
    assert_eq!(field(&recs[0], "old_seqno"), "7");
    assert_eq!(field(&recs[0], "seqno"), "10");
    assert_eq!(field(&recs[2], "changed"), "name,size,segments");
    assert_eq!(field(&recs[2], "old_name"), "keep");
    assert_eq!(field(&recs[2], "size"), (3u64 * 8192 * 512).to_string());
    assert!(
        recs.iter()
            .all(|r| r.flags & weir_log::FLAG_RECONCILED != 0)
    );
    // Nothing changed: nothing logged.
    assert!(changes(&after, &after).is_empty());
}

#[test]
fn a_vg_removed_while_down_is_a_vg_remove_not_an_incomplete_vg() {
    let p = |n| uuid(b'P', n);
    let orphans = World::default()
        .with(loop_dev(1, true), Some(p(1)))
        .with(loop_dev(2, true), Some(p(2)));
    let with_vg = orphans
        .clone()
        .vg("vgr", 2, &[p(1), p(2)])
        .lv("vgr", "lv", 1, 2);
    let found = changes(&with_vg, &orphans);
    assert_eq!(
        summary(&found),
        expect(&[
            ("LV_REMOVE", "lv"),
            ("PV_CHANGE", "loop1"),
            ("PV_CHANGE", "loop2"),
            ("VG_REMOVE", "vgr"),
        ])
    );
    // And made while down: the PVs move, the LV appears, it completes.
    let found = changes(&orphans, &with_vg);
    assert_eq!(
        summary(&found),
        expect(&[
            ("PV_CHANGE", "loop1"),
            ("PV_CHANGE", "loop2"),
            ("LV_ADD", "lv"),
            ("VG_COMPLETE", "vgr"),
        ])
    );
    // Unplugged while down: incomplete (its LV goes with it), no removal.
    let found = changes(&with_vg, &World::default());
    let kinds: Vec<_> = summary(&found).into_iter().map(|(k, _)| k).collect();
    assert!(
        kinds.contains(&"VG_INCOMPLETE") && !kinds.contains(&"VG_REMOVE"),
        "{kinds:?}"
    );
}

#[test]
fn a_version_1_vg_gets_no_metadata_records() {
    let p = |n| uuid(b'P', n);
    let w = World::default()
        .with(loop_dev(1, true), Some(p(1)))
        .vg("vg1", 1, &[p(1)])
        .lv("vg1", "lv", 1, 1);
    let mut prev = Previous::of(&w.current(), 3);
    for v in &mut prev.vgs {
        v.detail = None;
        v.seqno = 1;
    }
    assert!(diff(&State::of(prev), &w.current()).is_empty());
}
