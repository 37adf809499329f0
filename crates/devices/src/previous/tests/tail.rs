//! The crash tail: records logged after the checkpoint are applied to
//! it, so a restart logs each change once; records that do not parse
//! change nothing.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use weir_log::{Field, Log, Record, RecordType};

use super::{MemLog, World, loop_dev, sda, sda_part, uuid};
use crate::devnum::DevNum;
use crate::previous::diff::{Reconciled, diff};
use crate::previous::tail::catch_up;
use crate::previous::{Previous, State};
use crate::record;
use crate::tracker::reconcile::append;

/// Logs `found` as the live tracker does (no flags).
fn log_live(log: &Log, found: &[Reconciled]) {
    for r in found {
        let parent = r.parent.map(DevNum::to_be_bytes);
        let _ = record::append(log, &r.change, |_| parent).unwrap();
    }
}

fn state_of(w: &World) -> State {
    State::of(Previous::of(&w.current(), 0))
}

/// The brief's crash: a checkpoint, changes logged after it, a SIGKILL,
/// more changes while down, and a start with the old checkpoint.
#[test]
fn a_restart_after_a_crash_logs_every_change_exactly_once() {
    let p = |n| uuid(b'P', n);
    let mut a = World::default()
        .with(sda(), None)
        .vg("vg0", 1, &[p(0), p(1), p(2), p(3)]);
    for n in 0..4 {
        a = a.with(loop_dev(n, false), None);
    }
    // Logged live after the checkpoint: loop0 and loop1 attached.
    let b = a
        .clone()
        .with(loop_dev(0, true), Some(p(0)))
        .with(loop_dev(1, true), Some(p(1)));
    // While down: loop2 and loop3 attached.
    let c = b
        .clone()
        .with(loop_dev(2, true), Some(p(2)))
        .with(loop_dev(3, true), Some(p(3)));

    let m = MemLog::new();
    let start = m
        .log
        .append(&Record::new(RecordType::MARK).name(b"block devices read"))
        .unwrap();
    let checkpoint = Previous::of(&a.current(), start.index());
    log_live(&m.log, &diff(&state_of(&a), &b.current()));
    // Another source's records in between are not the tracker's.
    let _ = m
        .log
        .append(&Record::new(RecordType::MOUNT_ATTACH).name(b"/mnt"))
        .unwrap();
    m.log.sync().unwrap();

    // Without the tail, loop0 and loop1 would be logged again.
    let stale = diff(&State::of(checkpoint.clone()), &c.current());
    assert_eq!(stale.len(), 9, "{stale:?}");

    let mut state = State::of(checkpoint.clone());
    let report = catch_up(&m.log, &mut state, checkpoint.log_index);
    assert_eq!((report.applied, report.bad), (4, 0));
    assert!(!report.incomplete && report.error.is_none());
    assert_eq!(state.devices, state_of(&b).devices);
    for r in diff(&state, &c.current()) {
        append(&m.log, &r).unwrap();
    }

    // Over the whole log: one DEVICE_CHANGE and one PV_FOUND per device,
    // one VG_COMPLETE.
    let mut count: BTreeMap<(RecordType, Vec<u8>), usize> = BTreeMap::new();
    for r in m.records(1) {
        *count.entry((r.kind, r.name.clone())).or_default() += 1;
    }
    let mut expected: BTreeMap<(RecordType, Vec<u8>), usize> = BTreeMap::new();
    expected.insert((RecordType::MARK, b"block devices read".to_vec()), 1);
    expected.insert((RecordType::MOUNT_ATTACH, b"/mnt".to_vec()), 1);
    expected.insert((RecordType::VG_COMPLETE, b"vg0".to_vec()), 1);
    for n in 0..4 {
        let name = format!("loop{n}").into_bytes();
        expected.insert((RecordType::DEVICE_CHANGE, name.clone()), 1);
        expected.insert((RecordType::PV_FOUND, name), 1);
    }
    assert_eq!(count, expected);
}

/// Every kind of record, applied: the state becomes the one a checkpoint
/// taken at the end would hold.
#[test]
fn the_tail_replays_adds_removes_changes_and_vanished_attributes() {
    let p = |n| uuid(b'P', n);
    let mut modelled = loop_dev(7, true);
    modelled.model = Some("virtual".into());
    modelled.backing_file = Some(PathBuf::from(OsString::from_vec(b"/x/\xfe".to_vec())));
    let a = World::default()
        .with(sda(), None)
        .with(sda_part(1), Some(p(1)))
        .with(modelled, Some(p(7)))
        .with(loop_dev(8, true), Some(p(8)))
        .vg("vg1", 1, &[p(1), p(7)])
        .vg("vg8", 8, &[p(8)]);
    let mut plain = loop_dev(7, true);
    plain.size_bytes = 32 << 20;
    let b = a
        .clone()
        .without("sda1")
        .with(sda_part(2), None)
        .with(plain, Some(p(7)))
        .without("loop8");
    let m = MemLog::new();
    let found = diff(&state_of(&a), &b.current());
    log_live(&m.log, &found);
    let mut state = state_of(&a);
    let report = catch_up(&m.log, &mut state, 0);
    assert_eq!(report.applied, found.len() as u64);
    assert_eq!(state.devices, state_of(&b).devices);
    let vgs: Vec<(&str, bool)> = state
        .vgs
        .values()
        .map(|v| (v.name.as_str(), v.complete))
        .collect();
    assert_eq!(vgs, [("vg1", false), ("vg8", false)]);
    // Nothing left to log.
    assert_eq!(diff(&state, &b.current()), []);
}

/// Appends a record made by hand: what anyone allowed to append may write.
fn append_raw(log: &Log, kind: RecordType, target: &[u8], parent: &[u8], fields: &[(&str, &[u8])]) {
    let fields: Vec<Field<'_>> = fields
        .iter()
        .map(|(k, v)| Field { key: k, value: v })
        .collect();
    let _ = log
        .append(
            &Record::new(kind)
                .target(target)
                .parent(parent)
                .name(b"loop1")
                .fields(&fields),
        )
        .unwrap();
}

#[test]
fn records_that_do_not_parse_change_nothing() {
    let w = World::default().with(loop_dev(1, true), None);
    let m = MemLog::new();
    let dev1 = DevNum { major: 7, minor: 1 }.to_be_bytes();
    let unknown = DevNum { major: 7, minor: 2 }.to_be_bytes();
    let pv = uuid(b'P', 1).0;
    let changed: &[(&str, &[u8])] = &[("changed", b"size"), ("size", b"1")];
    // Each of these is bad in one way.
    append_raw(&m.log, RecordType::DEVICE_CHANGE, &unknown, &[], changed);
    append_raw(&m.log, RecordType::DEVICE_CHANGE, &dev1[..7], &[], changed);
    append_raw(
        &m.log,
        RecordType::DEVICE_CHANGE,
        &dev1,
        &[],
        &[("changed", b"size,ro"), ("size", b"2"), ("ro", b"yes")],
    );
    append_raw(
        &m.log,
        RecordType::DEVICE_CHANGE,
        &dev1,
        &[],
        &[("changed", b"size"), ("size", b"+3")],
    );
    append_raw(
        &m.log,
        RecordType::DEVICE_ADD,
        &unknown,
        &[],
        &[("size", b"1")],
    );
    append_raw(
        &m.log,
        RecordType::PV_FOUND,
        &pv[..31],
        &[],
        &[("dev", b"7:1")],
    );
    append_raw(&m.log, RecordType::PV_FOUND, &pv, &[], &[("dev", b"7:1:0")]);
    append_raw(
        &m.log,
        RecordType::PV_FOUND,
        &pv,
        &[1; 32],
        &[("dev", b"7:1")],
    );
    append_raw(&m.log, RecordType::PV_FOUND, &pv, &[], &[("dev", b"7:9")]);
    append_raw(&m.log, RecordType::VG_COMPLETE, &[b'V'; 32], &[], &[]);
    append_raw(
        &m.log,
        RecordType::VG_INCOMPLETE,
        &[b'V'; 32],
        &[],
        &[("seqno", b"1")],
    );
    // The metadata records, each bad in one way.
    let vg = [b'V'; 32];
    let vg_values: &[(&str, &[u8])] = &[
        ("seqno", b"2"),
        ("extent_count", b"10"),
        ("free_count", b"5"),
        ("extent_size", b"4194304"),
        ("metadata_copies", b"0"),
    ];
    append_raw(&m.log, RecordType::VG_CHANGE, &vg[..31], &[], vg_values);
    append_raw(&m.log, RecordType::VG_CHANGE, &vg, &[], &vg_values[..2]);
    let mut bad_pvs = vg_values.to_vec();
    bad_pvs.push(("pvs_added", b"not-a-uuid"));
    append_raw(&m.log, RecordType::VG_CHANGE, &vg, &[], &bad_pvs);
    let lv = [b'L'; 32];
    let lv_values: &[(&str, &[u8])] = &[
        ("vg", b"vg0"),
        ("size", b"4194304"),
        ("extents", b"1"),
        ("segments", b"1"),
        ("segtype", b"linear"),
        ("status", b"READ"),
        ("layout", b"0123abcd"),
    ];
    append_raw(&m.log, RecordType::LV_ADD, &lv, &[], lv_values);
    append_raw(&m.log, RecordType::LV_ADD, &lv, &vg, &lv_values[..6]);
    let mut bad_layout = lv_values.to_vec();
    bad_layout[6] = ("layout", b"xyz");
    append_raw(&m.log, RecordType::LV_CHANGE, &lv, &vg, &bad_layout);
    append_raw(
        &m.log,
        RecordType::PV_CHANGE,
        &pv,
        &vg,
        &[("dev", b"7:9"), ("vg", b"vg0")],
    );
    // And one good record at the end still counts.
    append_raw(&m.log, RecordType::DEVICE_CHANGE, &dev1, &[], changed);
    let before = state_of(&w);
    let mut state = before.clone();
    let report = catch_up(&m.log, &mut state, 0);
    assert_eq!((report.applied, report.bad), (1, 18));
    assert!(state.vgs.is_empty());
    let mut expected = before;
    expected.devices.values_mut().for_each(|d| d.size_bytes = 1);
    assert_eq!(state, expected);
}

#[test]
fn a_checkpoint_past_the_end_of_the_log_is_reported() {
    let m = MemLog::new();
    let _ = m
        .log
        .append(&Record::new(RecordType::MARK).name(b"x"))
        .unwrap();
    m.log.sync().unwrap();
    let mut state = State::default();
    assert!(catch_up(&m.log, &mut state, 5).incomplete);
    assert!(!catch_up(&m.log, &mut state, 1).incomplete);
    assert!(!catch_up(&m.log, &mut state, 0).incomplete);
}
