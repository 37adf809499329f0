//! The device tracker against real loop devices and real LVM2 metadata:
//! PVs attached one by one complete their VG exactly once; a detach makes
//! it incomplete and a reattach complete again; the records read back from
//! the log carry the documented target, parent, name and fields; the
//! `--on-vg-complete` command gets the VG name and its status is logged;
//! a start with the VG already complete logs it flagged `SCAN`.
//!
//! `Tracker::sync` is the only wait for uevents (no sleeps). The command
//! runs on its own thread, so its effects are awaited with a deadline.
//! Each tracker is filtered to its test's own devices; other devices'
//! DEVICE_* records are ignored. These tests need root, losetup and lvm,
//! and print `skipping: ...` without them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use weir_devices::record::FLAG_SCAN;
use weir_devices::{Change, ChangeKind, Filter, OnChange, Probe, Tracker, TrackerOptions};
use weir_log::{Log, LogRecord, Options, RecordType};
use weir_lvmfleet::Fleet;

/// How long the on-vg-complete command may take to show its effects.
const ACTIVATION_TIMEOUT: Duration = Duration::from_secs(30);

fn skipping() -> bool {
    match weir_lvmfleet::unavailable() {
        Some(why) => {
            eprintln!("skipping: {why}");
            true
        }
        None => false,
    }
}

/// The changes shown to the OnChange callback, in order.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Change>>>);

impl Seen {
    fn callback(&self) -> OnChange {
        let list = Arc::clone(&self.0);
        Box::new(move |c: &Change| list.lock().unwrap().push(c.clone()))
    }

    fn all(&self) -> Vec<Change> {
        self.0.lock().unwrap().clone()
    }

    /// The changes from position `from` on that concern `fleet`'s devices
    /// or VG.
    fn ours_since(&self, fleet: &Fleet, from: usize) -> Vec<Change> {
        self.all()[from..]
            .iter()
            .filter(|c| concerns(fleet, c))
            .cloned()
            .collect()
    }

    fn vg_completions(&self, vg: &str) -> usize {
        self.all()
            .iter()
            .filter(|c| matches!(&c.kind, ChangeKind::VgComplete { vg: v, .. } if v.name == vg))
            .count()
    }
}

fn concerns(fleet: &Fleet, c: &Change) -> bool {
    let ours = |name: &str| fleet.paths().contains(&format!("/dev/{name}"));
    match &c.kind {
        ChangeKind::DeviceAdd(d) | ChangeKind::DeviceRemove(d) => ours(&d.name),
        ChangeKind::DeviceChange { new, .. } => ours(&new.name),
        ChangeKind::PvFound { name, .. }
        | ChangeKind::PvLost { name, .. }
        | ChangeKind::PvChange { name, .. } => ours(name),
        ChangeKind::VgComplete { vg, .. }
        | ChangeKind::VgIncomplete { vg, .. }
        | ChangeKind::VgChange { vg, .. }
        | ChangeKind::VgRemove { vg }
        | ChangeKind::LvAdd { vg, .. }
        | ChangeKind::LvRemove { vg, .. }
        | ChangeKind::LvChange { vg, .. } => vg.name == fleet.vg_name(),
    }
}

/// Whether record `r` names one of `fleet`'s devices or its VG: the
/// tracker logs every block device, other tests' loop devices included.
fn record_concerns(fleet: &Fleet, r: &LogRecord) -> bool {
    let name = String::from_utf8_lossy(&r.name);
    name == fleet.vg_name() || fleet.paths().contains(&format!("/dev/{name}"))
}

fn open_log(dir: &Path) -> Arc<Log> {
    Arc::new(Log::open(dir.join("log"), Options::default()).expect("open log"))
}

fn start(
    fleet: &Fleet,
    log: &Arc<Log>,
    seen: &Seen,
    on_vg_complete: Option<Vec<String>>,
) -> Tracker {
    let opts = TrackerOptions {
        filter: Filter::parse(&fleet.filter_patterns()).expect("the fleet's filter parses"),
        on_vg_complete,
        // Generous: a barrier that gives up falls back to a re-read, whose
        // changes are flagged SCAN, and the tests check that they are not.
        sync_timeout: Duration::from_secs(30),
        ..TrackerOptions::default()
    };
    Tracker::start(Some(Arc::clone(log)), opts, Some(seen.callback())).expect("start tracker")
}

/// Every record appended so far.
fn records(log: &Log) -> Vec<LogRecord> {
    log.sync().expect("sync log");
    let mut r = log.reader(1);
    let mut out = Vec::new();
    while let Some(rec) = r.next_record().expect("read log") {
        out.push(rec);
    }
    out
}

fn field<'a>(r: &'a LogRecord, key: &str) -> &'a str {
    let v = r
        .field(key)
        .unwrap_or_else(|| panic!("{} has no {key}: {r:?}", r.kind));
    std::str::from_utf8(v).expect("a UTF-8 field")
}

/// A device's record target: `major << 32 | minor`, big-endian.
fn devnum_target(minor: u32) -> Vec<u8> {
    ((7u64 << 32) | u64::from(minor)).to_be_bytes().to_vec()
}

/// A uuid's record form: the 32 characters without dashes.
fn undashed(uuid: &str) -> Vec<u8> {
    uuid.bytes().filter(|&b| b != b'-').collect()
}

/// The fleet's PV uuids by path, and its VG's uuid and seqno, from LVM.
struct Truth {
    pv_uuid: BTreeMap<String, String>,
    vg_uuid: String,
    seqno: u64,
}

fn truth(fleet: &Fleet) -> Truth {
    let pvs = fleet.report("pvs", "pv_name,pv_uuid");
    let vgs = fleet.report("vgs", "vg_uuid,vg_seqno");
    Truth {
        pv_uuid: pvs
            .into_iter()
            .map(|r| (r["pv_name"].clone(), r["pv_uuid"].clone()))
            .collect(),
        vg_uuid: vgs[0]["vg_uuid"].clone(),
        seqno: vgs[0]["vg_seqno"].parse().unwrap(),
    }
}

/// Polls until `ok` holds, up to `ACTIVATION_TIMEOUT`.
fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + ACTIVATION_TIMEOUT;
    while !ok() {
        assert!(
            Instant::now() < deadline,
            "{what}: not within {ACTIVATION_TIMEOUT:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The on-vg-complete MARKs for `vg`.
fn activation_marks(log: &Log, vg: &str) -> Vec<LogRecord> {
    records(log)
        .into_iter()
        .filter(|r| {
            r.kind == RecordType::MARK
                && r.name == b"on-vg-complete"
                && r.field("vg") == Some(vg.as_bytes())
        })
        .collect()
}

/// The records of four PVs attached one by one, the first without a
/// metadata area; returns the VG_COMPLETE's index.
fn assert_attach_records(
    fleet: &Fleet,
    truth: &Truth,
    recs: &[LogRecord],
    overflowed: bool,
) -> u64 {
    let vg = fleet.vg_name();
    let vg_target = undashed(&truth.vg_uuid);
    for i in 0..fleet.members() {
        let name = fleet.name(i).into_bytes();
        let change = recs
            .iter()
            .find(|r| r.kind == RecordType::DEVICE_CHANGE && r.name == name)
            .unwrap_or_else(|| panic!("no DEVICE_CHANGE of loop {i}"));
        assert_eq!(change.target, devnum_target(fleet.minor(i)));
        assert!(change.parent.is_empty());
        let changed: Vec<&str> = field(change, "changed").split(',').collect();
        assert!(changed.contains(&"size") && changed.contains(&"backing_file"));
        assert_eq!(field(change, "size"), (16u64 << 20).to_string());
        assert_eq!(field(change, "old_size"), "0");
        assert_eq!(
            field(change, "backing_file"),
            fleet.file(i).to_str().unwrap()
        );
        assert_eq!(field(change, "old_backing_file"), "");

        let found: Vec<&LogRecord> = recs
            .iter()
            .filter(|r| r.kind == RecordType::PV_FOUND && r.name == name)
            .collect();
        assert_eq!(found.len(), 1, "{found:?}");
        let found = found[0];
        assert!(found.index > change.index);
        assert_eq!(found.target, undashed(&truth.pv_uuid[&fleet.path(i)]));
        assert_eq!(field(found, "dev"), format!("7:{}", fleet.minor(i)));
        assert_eq!(found.field("duplicate_of"), None);
        if i == 0 {
            // Found before any metadata named its VG: an orphan so far.
            assert!(found.parent.is_empty(), "{found:?}");
            assert_eq!(found.field("vg"), None);
        } else {
            assert_eq!(found.parent, vg_target);
            assert_eq!(field(found, "vg"), vg);
        }
        assert!(overflowed || found.flags & FLAG_SCAN == 0);
    }
    let completes: Vec<&LogRecord> = recs
        .iter()
        .filter(|r| r.kind == RecordType::VG_COMPLETE && r.target == vg_target)
        .collect();
    assert_eq!(completes.len(), 1, "{completes:?}");
    let complete = completes[0];
    assert!(complete.parent.is_empty());
    assert_eq!(complete.name, vg.as_bytes());
    assert_eq!(field(complete, "seqno"), truth.seqno.to_string());
    assert_eq!(field(complete, "pvs"), "4");
    let last_found = recs
        .iter()
        .filter(|r| r.kind == RecordType::PV_FOUND && r.name == fleet.name(3).into_bytes())
        .map(|r| r.index)
        .next()
        .unwrap();
    assert!(complete.index > last_found);
    complete.index
}

/// The records of member `i` detached from the complete VG.
/// A loop detach ends with the media-change uevent, after which the
/// kernel gives the empty device a new diskseq: its own DEVICE_CHANGE,
/// with nothing else changed.
fn assert_diskseq_bump(c: &Change) {
    match &c.kind {
        ChangeKind::DeviceChange { old, new, changed } => {
            assert_eq!(changed, &["diskseq"], "{c:?}");
            assert!(new.diskseq > old.diskseq, "{c:?}");
        }
        other => panic!("not the diskseq change: {other:?}"),
    }
}

fn assert_detach_records(fleet: &Fleet, truth: &Truth, recs: &[LogRecord], i: usize) {
    let (vg, vg_target) = (fleet.vg_name(), undashed(&truth.vg_uuid));
    let gone = truth.pv_uuid[&fleet.path(i)].as_str();
    let lost = recs
        .iter()
        .find(|r| r.kind == RecordType::PV_LOST)
        .expect("a PV_LOST record");
    assert_eq!(lost.target, undashed(gone));
    assert_eq!(lost.parent, vg_target);
    assert_eq!(lost.name, fleet.name(i).into_bytes());
    assert_eq!(field(lost, "dev"), format!("7:{}", fleet.minor(i)));
    assert_eq!(field(lost, "vg"), vg);
    let incomplete = recs
        .iter()
        .find(|r| r.kind == RecordType::VG_INCOMPLETE)
        .expect("a VG_INCOMPLETE record");
    assert!(incomplete.index > lost.index);
    assert_eq!(incomplete.target, vg_target);
    assert!(incomplete.parent.is_empty());
    assert_eq!(incomplete.name, vg.as_bytes());
    assert_eq!(field(incomplete, "seqno"), truth.seqno.to_string());
    assert_eq!(field(incomplete, "missing"), "1");
    assert_eq!(field(incomplete, "missing_uuids"), gone);
}

#[test]
fn pvs_attached_one_by_one_complete_the_vg_once_then_detach_and_reattach() {
    if skipping() {
        return;
    }
    let mut fleet = Fleet::build("trk", &[0, 1, 2, 1], 1, 0).expect("make the fleet");
    let truth = truth(&fleet);
    let vg = fleet.vg_name().to_owned();
    for i in 0..fleet.members() {
        fleet.detach(i).expect("detach");
    }
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    let seen = Seen::default();
    // The command appends its last argument, the VG name, to a file.
    let names = dir.path().join("activated");
    let script = format!("printf '%s\\n' \"$1\" >> '{}'", names.display());
    let argv = ["/bin/sh", "-c", &script, "sh"].map(str::to_owned).to_vec();
    let t = start(&fleet, &log, &seen, Some(argv));

    t.with_inventory(|inv| {
        assert!(inv.vgs().is_empty(), "{:?}", inv.vgs());
        for i in 0..fleet.members() {
            let e = inv.by_name(&fleet.name(i)).expect("a detached loop device");
            assert!(matches!(e.probe, Probe::Skipped(_)), "{:?}", e.probe);
        }
    });
    let start_mark = &records(&log)[0];
    assert_eq!(start_mark.kind, RecordType::MARK);
    assert_eq!(start_mark.name, b"block devices read");
    assert_eq!(field(start_mark, "source"), "devices");
    assert_eq!(field(start_mark, "pvs"), "0");
    assert_eq!(field(start_mark, "vgs"), "0");
    assert!(field(start_mark, "devices").parse::<usize>().unwrap() >= fleet.members());

    // Attach each PV; after each, the barrier alone makes the inventory
    // exact.
    for i in 0..fleet.members() {
        fleet.attach(i).expect("attach");
        t.sync().expect("sync");
        let uuid = &truth.pv_uuid[&fleet.path(i)];
        t.with_inventory(|inv| {
            let e = inv.by_name(&fleet.name(i)).expect("attached device");
            let pv = e.probe.pv().unwrap_or_else(|| panic!("{:?}", e.probe));
            assert_eq!(&pv.uuid().to_string(), uuid);
            assert_eq!(inv.pv_count(), i + 1);
            let vgs = inv.vgs();
            if i == 0 {
                // The first PV has no metadata area: no VG is known yet.
                assert!(vgs.is_empty(), "{vgs:?}");
                assert_eq!(inv.pvs()[0].vg_name, "");
            } else {
                assert_eq!(vgs.len(), 1);
                assert_eq!(vgs[0].name, vg);
                assert_eq!(vgs[0].complete, i == 3, "after PV {i}");
                assert_eq!(vgs[0].missing.len(), 3 - i);
                assert!(inv.pvs().iter().all(|p| p.vg_name == vg));
            }
        });
        assert_eq!(
            seen.vg_completions(&vg),
            usize::from(i == 3),
            "VG_COMPLETE after PV {i}"
        );
    }
    let overflowed = t.stats().overflows > 0;
    let ours = seen.ours_since(&fleet, 0);
    let kinds: Vec<&str> = ours.iter().map(Change::name).collect();
    assert_eq!(
        kinds,
        [
            "DEVICE_CHANGE",
            "PV_FOUND",
            "DEVICE_CHANGE",
            "PV_FOUND",
            // The metadata arrives: the first PV (no metadata area) leaves
            // the orphans, and the VG's LV is known.
            "PV_CHANGE",
            "LV_ADD",
            "DEVICE_CHANGE",
            "PV_FOUND",
            "DEVICE_CHANGE",
            "PV_FOUND",
            "VG_COMPLETE"
        ]
    );
    assert!(overflowed || ours.iter().all(|c| !c.scan), "{ours:?}");

    // The records, as docs/records.md describes them.
    let complete_index = assert_attach_records(&fleet, &truth, &records(&log), overflowed);

    // The command ran once, with the VG name, and its status is logged.
    wait_until("the on-vg-complete MARK", || {
        !activation_marks(&log, &vg).is_empty()
    });
    assert_eq!(std::fs::read_to_string(&names).unwrap(), format!("{vg}\n"));
    let mark = &activation_marks(&log, &vg)[0];
    assert_eq!(field(mark, "source"), "devices");
    assert_eq!(field(mark, "status"), "0");
    assert!(field(mark, "command").starts_with("/bin/sh -c "));
    assert!(mark.index > complete_index);

    // Detach one PV: PV_LOST, then VG_INCOMPLETE naming it.
    let gone = truth.pv_uuid[&fleet.path(2)].clone();
    let from = seen.all().len();
    fleet.detach(2).expect("detach");
    t.sync().expect("sync");
    let ours = seen.ours_since(&fleet, from);
    let kinds: Vec<&str> = ours.iter().map(Change::name).collect();
    assert_eq!(
        kinds,
        ["DEVICE_CHANGE", "PV_LOST", "VG_INCOMPLETE", "DEVICE_CHANGE"]
    );
    assert_diskseq_bump(&ours[3]);
    match &ours[1].kind {
        ChangeKind::PvLost {
            name, uuid, vg: v, ..
        } => {
            assert_eq!(*name, fleet.name(2));
            assert_eq!(uuid.to_string(), gone);
            assert_eq!(v.as_ref().map(|v| v.name.as_str()), Some(vg.as_str()));
        }
        other => panic!("{other:?}"),
    }
    match &ours[2].kind {
        ChangeKind::VgIncomplete { missing, .. } => {
            let missing: Vec<String> = missing.iter().map(ToString::to_string).collect();
            assert_eq!(missing, [gone.as_str()]);
        }
        other => panic!("{other:?}"),
    }
    t.with_inventory(|inv| {
        let vgs = inv.vgs();
        assert!(!vgs[0].complete);
        assert_eq!(vgs[0].missing.len(), 1);
        assert_eq!(vgs[0].missing[0].to_string(), gone);
    });
    assert_detach_records(&fleet, &truth, &records(&log), 2);

    // Reattach: complete again, a second transition, a second command.
    fleet.attach(2).expect("attach");
    t.sync().expect("sync");
    assert_eq!(seen.vg_completions(&vg), 2);
    t.with_inventory(|inv| assert!(inv.vgs()[0].complete));
    let vg_target = undashed(&truth.vg_uuid);
    let completes = records(&log)
        .iter()
        .filter(|r| r.kind == RecordType::VG_COMPLETE && r.target == vg_target)
        .count();
    assert_eq!(completes, 2);
    wait_until("the second on-vg-complete MARK", || {
        activation_marks(&log, &vg).len() == 2
    });
    assert_eq!(
        std::fs::read_to_string(&names).unwrap(),
        format!("{vg}\n{vg}\n")
    );
    assert_eq!(t.stats().activations, 2);
    t.stop().expect("the tracker stops cleanly");
}

#[test]
fn a_start_with_the_vg_complete_logs_it_flagged_scan_and_tracks_a_copy() {
    if skipping() {
        return;
    }
    let mut fleet = Fleet::build("scn", &[1, 1], 0, 1).expect("make the fleet");
    let truth = truth(&fleet);
    let vg = fleet.vg_name().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    let seen = Seen::default();
    // A command that fails: its status is logged all the same.
    let argv = ["/bin/sh", "-c", "exit 3", "sh"]
        .map(str::to_owned)
        .to_vec();
    let t = start(&fleet, &log, &seen, Some(argv));

    let recs = records(&log);
    assert_eq!(recs[0].kind, RecordType::MARK);
    assert_eq!(recs[0].name, b"block devices read");
    assert_eq!(field(&recs[0], "pvs"), "2");
    assert_eq!(field(&recs[0], "vgs"), "1");
    let vg_target = undashed(&truth.vg_uuid);
    let scan_records: Vec<&LogRecord> = recs
        .iter()
        .filter(|r| r.kind != RecordType::MARK && record_concerns(&fleet, r))
        .collect();
    // The MARK stands for every device and PV found: only the VG follows.
    assert_eq!(scan_records.len(), 1, "{scan_records:?}");
    let complete = scan_records[0];
    assert_eq!(complete.kind, RecordType::VG_COMPLETE);
    assert_eq!(complete.flags, FLAG_SCAN);
    assert_eq!(complete.target, vg_target);
    assert_eq!(complete.name, vg.as_bytes());
    assert_eq!(field(complete, "pvs"), "2");
    let ours = seen.ours_since(&fleet, 0);
    assert_eq!(ours.len(), 1);
    assert!(ours[0].scan && ours[0].name() == "VG_COMPLETE");
    wait_until("the on-vg-complete MARK", || {
        !activation_marks(&log, &vg).is_empty()
    });
    assert_eq!(field(&activation_marks(&log, &vg)[0], "status"), "3");

    // A copy of PV 0 appears: found as its duplicate, the VG unchanged.
    let from = seen.all().len();
    fleet.attach_copy(2, 0).expect("attach a copy");
    t.sync().expect("sync");
    let ours = seen.ours_since(&fleet, from);
    let kinds: Vec<&str> = ours.iter().map(Change::name).collect();
    assert_eq!(kinds, ["DEVICE_CHANGE", "PV_FOUND"]);
    match &ours[1].kind {
        ChangeKind::PvFound {
            name, duplicate_of, ..
        } => {
            assert_eq!(*name, fleet.name(2));
            assert_eq!(duplicate_of.as_deref(), Some(fleet.name(0).as_str()));
        }
        other => panic!("{other:?}"),
    }
    let recs = records(&log);
    let dup = recs
        .iter()
        .find(|r| r.kind == RecordType::PV_FOUND && r.name == fleet.name(2).into_bytes())
        .expect("the copy's PV_FOUND");
    assert_eq!(field(dup, "duplicate_of"), fleet.name(0));
    assert_eq!(dup.target, undashed(&truth.pv_uuid[&fleet.path(0)]));
    t.with_inventory(|inv| {
        let vgs = inv.vgs();
        assert!(vgs[0].complete && vgs[0].duplicates == 1, "{vgs:?}");
    });

    // The original goes: the copy takes over, the VG stays complete.
    let from = seen.all().len();
    fleet.detach(0).expect("detach");
    t.sync().expect("sync");
    let ours = seen.ours_since(&fleet, from);
    let kinds: Vec<&str> = ours.iter().map(Change::name).collect();
    assert_eq!(kinds, ["DEVICE_CHANGE", "PV_LOST", "DEVICE_CHANGE"]);
    assert_diskseq_bump(&ours[2]);
    t.with_inventory(|inv| {
        let vgs = inv.vgs();
        assert!(vgs[0].complete && vgs[0].duplicates == 0, "{vgs:?}");
    });
    assert_eq!(seen.vg_completions(&vg), 1);
    t.stop().expect("the tracker stops cleanly");
}

/// Regression test: the barrier waited for a uevent numbered at least the
/// kernel's counter, and a tracker that had received none since it
/// started (an idle system) waited the whole timeout on every `sync`,
/// then re-read every device. The scan at start covers every event before
/// it, so an idle `sync` needs neither.
#[test]
fn a_sync_on_an_idle_tracker_neither_waits_for_a_uevent_nor_re_reads() {
    if skipping() {
        return;
    }
    let opts = TrackerOptions {
        filter: Filter::parse(&["r|.*|"]).expect("a reject-all filter"),
        sync_timeout: Duration::from_secs(30),
        ..TrackerOptions::default()
    };
    let t = Tracker::start(None, opts, None).expect("start tracker");
    for _ in 0..3 {
        t.sync().expect("sync");
    }
    assert_eq!(t.stats().overflows, 0, "{:?}", t.stats());
    assert_eq!(t.with_inventory(|inv| inv.counters().resyncs), 0);
    t.stop().expect("the tracker stops cleanly");
}

/// Regression: a loop detach ends with a `change` uevent that carries
/// `DISK_MEDIA_CHANGE=1` and the old media's `DISKSEQ`; the kernel bumps
/// the number right after. The tracker took the event's number and kept a
/// stale `diskseq`, so the daemon's `weir devices` differed from a fresh
/// reading, and the next start logged a change that had been watched.
#[test]
fn a_detached_loop_device_has_the_diskseq_the_kernel_shows() {
    if skipping() {
        return;
    }
    let mut fleet = Fleet::build("diskseq", &[1], 0, 0).expect("make the fleet");
    let tmp = tempfile::tempdir().expect("tempdir");
    let log = open_log(tmp.path());
    let seen = Seen::default();
    let t = start(&fleet, &log, &seen, None);
    let minor = fleet.minor(0);
    let name = fleet.name(0);
    let kernel = |name: &str| -> u64 {
        std::fs::read_to_string(format!("/sys/class/block/{name}/diskseq"))
            .expect("read diskseq")
            .trim()
            .parse()
            .expect("diskseq is a number")
    };
    let tracked = |t: &Tracker| {
        t.with_inventory(|inv| {
            inv.devices()
                .find(|e| e.device.minor == minor && e.device.major == 7)
                .and_then(|e| e.device.diskseq)
        })
    };
    for round in 0..2 {
        fleet.detach(0).expect("detach");
        t.sync().expect("sync");
        assert_eq!(
            tracked(&t),
            Some(kernel(&name)),
            "round {round}: diskseq after the detach"
        );
        fleet.attach(0).expect("attach");
        t.sync().expect("sync");
        assert_eq!(
            tracked(&t),
            Some(kernel(&name)),
            "round {round}: diskseq after the attach"
        );
    }
    t.stop().expect("the tracker stops cleanly");
}
