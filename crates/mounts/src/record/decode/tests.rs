//! Records written by `record::append` decode back to what was written.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use weir_log::mem::MemFs;
use weir_log::{Log, LogRecord, Options, RecordType};

use super::*;
use crate::change::{Change, ChangeKind, Seen};
use crate::model::{MountFlags, SuperFlags};
use crate::record;

fn mem_log(dir: &std::path::Path) -> Log {
    Log::open(dir, Options::default().fs(Arc::new(MemFs::new()))).expect("open log")
}

/// Appends `changes` and reads their records back.
fn roundtrip(log: &Log, changes: &[Change]) -> Vec<LogRecord> {
    let from = log.last_index() + 1;
    let mut last = None;
    for c in changes {
        last = Some(record::append(log, c).expect("append"));
    }
    if let Some(a) = last {
        log.wait_durable(a).expect("durable");
    }
    log.reader(from).map(|r| r.expect("read")).collect()
}

fn bytes(max: usize) -> impl Strategy<Value = Box<[u8]>> {
    proptest::collection::vec(any::<u8>(), 0..max).prop_map(Vec::into_boxed_slice)
}

/// The filesystem's own options: anything whose first word is not a
/// superblock flag name (mountinfo's text cannot tell those apart either).
fn fs_options() -> impl Strategy<Value = Box<[u8]>> {
    bytes(24).prop_filter("first word is a superblock flag", |o| {
        let first = o.split(|&b| b == b',').next().unwrap_or_default();
        !SuperFlags::NAMED.iter().any(|(_, n)| n.as_bytes() == first)
    })
}

fn propagation() -> impl Strategy<Value = Propagation> {
    (
        proptest::option::of(1u64..1000),
        proptest::option::of(1u64..1000),
        proptest::option::of(1u64..1000),
        any::<bool>(),
    )
        .prop_map(|(shared, master, from, unbindable)| Propagation {
            shared,
            master,
            // mountinfo text shows propagate_from only for a slave.
            propagate_from: master.and(from),
            unbindable,
        })
}

fn mount() -> impl Strategy<Value = Mount> {
    let fstype = proptest::collection::vec(any::<u8>().prop_filter("dot", |&b| b != b'.'), 1..8);
    let subtype = proptest::option::of(bytes(8));
    (
        (any::<u64>(), any::<u64>(), any::<u32>(), any::<u32>()),
        (bytes(16), bytes(24), fstype, subtype, bytes(16)),
        (0..=MountFlags::ALL.0, 0..=SuperFlags::ALL.0, fs_options()),
        propagation(),
    )
        .prop_map(
            |(
                (id, parent_id, major, minor),
                (root, point, fstype, subtype, source),
                (f, sf, o),
                p,
            )| {
                Mount {
                    id,
                    parent_id,
                    old_id: 0,
                    old_parent_id: 0,
                    major,
                    minor,
                    root,
                    mount_point: point,
                    fstype: fstype.into_boxed_slice(),
                    subtype,
                    source,
                    flags: MountFlags(f),
                    super_flags: SuperFlags(sf),
                    fs_options: o,
                    propagation: p,
                }
            },
        )
}

/// An ATTACH record gives back the mount it was written from, every byte.
#[test]
fn attach_records_decode_to_their_mount() {
    let dir = tempfile::tempdir().unwrap();
    let log = mem_log(dir.path());
    let mut runner = TestRunner::default();
    runner
        .run(&mount(), |m| {
            let c = Change {
                kind: ChangeKind::Attach(m.clone()),
                seen: Seen::Event,
            };
            let recs = roundtrip(&log, &[c]);
            prop_assert_eq!(recs.len(), 1);
            prop_assert_eq!(attached(&recs[0]).unwrap(), m);
            Ok(())
        })
        .unwrap();
}

/// Replaying the MOVE and CHANGE records of one mount's changes on its old
/// reading gives its new one.
#[test]
fn move_and_change_records_replay_to_the_new_mount() {
    let dir = tempfile::tempdir().unwrap();
    let log = mem_log(dir.path());
    let mut runner = TestRunner::default();
    let pair = (mount(), mount()).prop_map(|(old, mut new)| {
        // The same mount: the same id and what it is of.
        new.id = old.id;
        new.major = old.major;
        new.minor = old.minor;
        new.root = old.root.clone();
        new.fstype = old.fstype.clone();
        new.subtype = old.subtype.clone();
        (old, new)
    });
    runner
        .run(&pair, |(old, new)| {
            let changes = Change::between(&old, &new, Seen::Compare);
            let recs = roundtrip(&log, &changes);
            prop_assert_eq!(recs.len(), changes.len());
            let mut m = old.clone();
            for r in &recs {
                apply(&mut m, r).unwrap();
            }
            prop_assert_eq!(m, new);
            Ok(())
        })
        .unwrap();
}

fn record(kind: RecordType, fields: &[(&str, &[u8])]) -> LogRecord {
    LogRecord {
        index: 1,
        time_ns: 0,
        kind,
        flags: 0,
        target: 7u64.to_be_bytes().to_vec(),
        parent: 1u64.to_be_bytes().to_vec(),
        name: b"/mnt".to_vec(),
        fields: fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.to_vec()))
            .collect(),
    }
}

const ATTACH: [(&str, &[u8]); 7] = [
    ("root", b"/"),
    ("source", b"tmpfs"),
    ("fstype", b"tmpfs"),
    ("options", b"rw,relatime"),
    ("super", b"rw,size=1024k"),
    ("propagation", b"shared:3"),
    ("dev", b"0:40"),
];

/// Hostile records: each damaged part is its own typed error, never a
/// panic or a guess.
#[test]
fn damaged_records_are_typed_errors() {
    let good = record(RecordType::MOUNT_ATTACH, &ATTACH);
    let m = attached(&good).unwrap();
    assert_eq!((m.id, m.parent_id, m.minor), (7, 1, 40));
    assert_eq!(m.propagation.shared, Some(3));

    let mut short = good.clone();
    short.target.pop();
    assert_eq!(attached(&short), Err(DecodeError::BadId("target")));

    for (i, (key, _)) in ATTACH.iter().enumerate() {
        let mut fields = ATTACH.to_vec();
        fields.remove(i);
        let r = record(RecordType::MOUNT_ATTACH, &fields);
        assert!(
            matches!(attached(&r), Err(DecodeError::MissingField(k)) if k == *key),
            "without {key}"
        );
    }
    for (key, bad) in [
        ("dev", b"40".as_slice()),
        ("dev", b"0:99999999999"),
        ("options", b"maybe,nosuid"),
        ("super", b""),
        ("propagation", b"shared:x"),
    ] {
        let mut fields = ATTACH.to_vec();
        fields.retain(|(k, _)| *k != key);
        fields.push((key, bad));
        let r = record(RecordType::MOUNT_ATTACH, &fields);
        assert!(
            matches!(attached(&r), Err(DecodeError::BadField(k)) if k == key),
            "{key}={:?}",
            String::from_utf8_lossy(bad)
        );
    }

    let mut gone = good.clone();
    gone.flags = record::FLAG_GONE;
    assert!(matches!(attached(&gone), Err(DecodeError::WrongType(_))));

    let mut m = attached(&good).unwrap();
    let identity = record(RecordType::MOUNT_CHANGE, &[("changed", b"identity")]);
    assert!(matches!(apply(&mut m, &identity), Err(DecodeError::NoValue(w)) if w == "identity"));
    let valueless = record(RecordType::MOUNT_CHANGE, &[("changed", b"options")]);
    assert_eq!(
        apply(&mut m, &valueless),
        Err(DecodeError::MissingField("options"))
    );
    assert!(matches!(
        apply(&mut m, &good),
        Err(DecodeError::WrongType(_))
    ));
}
