//! Restarts against real loop devices and real LVM2 metadata: a tracker
//! takes a checkpoint and stops; PVs are attached (and one detached) while
//! none runs; a tracker started with that checkpoint logs each change once,
//! flagged `RECONCILED`, completes the VG once and runs `--on-vg-complete`
//! for it. After a crash (a checkpoint older than the last records), the
//! records logged after it are not logged again.
//!
//! The trackers see every block device of the host; the assertions are
//! about this test's own devices, plus a check that no device other than
//! a loop device (which other tests may attach meanwhile) is reported.
//! These tests need root, losetup and lvm, and print `skipping: ...`
//! without them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_devices::record::FLAG_SCAN;
use weir_devices::{Filter, Previous, Tracker, TrackerOptions};
use weir_log::{FLAG_RECONCILED, Log, LogRecord, Options, RecordType};
use weir_lvmfleet::Fleet;

/// The flags of a reconciled record.
const RECONCILED: u16 = FLAG_SCAN | FLAG_RECONCILED;

fn skipping() -> bool {
    match weir_lvmfleet::unavailable() {
        Some(why) => {
            eprintln!("skipping: {why}");
            true
        }
        None => false,
    }
}

fn start(
    fleet: &Fleet,
    log: &Arc<Log>,
    previous: Option<Previous>,
    on_vg_complete: Option<Vec<String>>,
) -> Tracker {
    let opts = TrackerOptions {
        filter: Filter::parse(&fleet.filter_patterns()).expect("the fleet's filter parses"),
        sync_timeout: Duration::from_secs(30),
        previous,
        on_vg_complete,
        ..TrackerOptions::default()
    };
    Tracker::start(Some(Arc::clone(log)), opts, None).expect("start tracker")
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

fn undashed(uuid: &str) -> Vec<u8> {
    uuid.bytes().filter(|&b| b != b'-').collect()
}

/// The fleet's PV uuids by path and its VG's uuid, from LVM.
fn truth(fleet: &Fleet) -> (BTreeMap<String, String>, String) {
    let pvs = fleet
        .report("pvs", "pv_name,pv_uuid")
        .into_iter()
        .map(|r| (r["pv_name"].clone(), r["pv_uuid"].clone()))
        .collect();
    let vg = fleet.report("vgs", "vg_uuid")[0]["vg_uuid"].clone();
    (pvs, vg)
}

/// The records about `fleet`'s devices or VG, by (type, name).
fn ours<'a>(
    fleet: &Fleet,
    recs: &'a [LogRecord],
) -> BTreeMap<(RecordType, String), Vec<&'a LogRecord>> {
    let mut out: BTreeMap<(RecordType, String), Vec<&LogRecord>> = BTreeMap::new();
    for r in recs.iter().filter(|r| r.kind != RecordType::MARK) {
        let name = String::from_utf8_lossy(&r.name).into_owned();
        if name == fleet.vg_name() || fleet.paths().contains(&format!("/dev/{name}")) {
            out.entry((r.kind, name)).or_default().push(r);
        }
    }
    out
}

fn the_mark<'a>(recs: &'a [LogRecord], name: &str, after: u64) -> &'a LogRecord {
    let marks: Vec<&LogRecord> = recs
        .iter()
        .filter(|r| r.kind == RecordType::MARK && r.name == name.as_bytes() && r.index > after)
        .collect();
    assert_eq!(marks.len(), 1, "{name}: {marks:?}");
    marks[0]
}

fn wait_for_file(path: &Path, content: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(path).ok().as_deref() != Some(content) {
        assert!(
            Instant::now() < deadline,
            "{} never held {content:?}: {:?}",
            path.display(),
            std::fs::read_to_string(path)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn twenty_pvs_attached_while_down_are_reconciled_once() {
    if skipping() {
        return;
    }
    const PVS: usize = 20;
    let mut fleet = Fleet::build("rcn", &[1; PVS], 0, 1).expect("make the fleet");
    let (pv_uuid, vg_uuid) = truth(&fleet);
    let vg = fleet.vg_name().to_owned();
    for i in 0..PVS {
        fleet.detach(i).expect("detach");
    }
    // At the checkpoint, only a copy of PV 0 is attached, in the spare.
    let spare = PVS;
    fleet.attach_copy(spare, 0).expect("attach a copy");
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Log::open(dir.path().join("log"), Options::default()).unwrap());

    let t1 = start(&fleet, &log, None, None);
    t1.sync().expect("sync");
    let checkpoint = t1.checkpoint();
    t1.stop().expect("the first tracker stops cleanly");
    let spare_state = checkpoint
        .devices
        .iter()
        .find(|d| d.name == fleet.name(spare))
        .expect("the spare in the checkpoint");
    let spare_pv = spare_state.pv.as_ref().expect("the copy's PV");
    assert_eq!(spare_pv.uuid.to_vec(), undashed(&pv_uuid[&fleet.path(0)]));
    assert_eq!(spare_pv.vg_name, vg);
    let vg_state = checkpoint
        .vgs
        .iter()
        .find(|v| v.name == vg)
        .expect("the VG, known from the copy's metadata");
    assert!(!vg_state.complete);
    assert_eq!(vg_state.missing, (PVS - 1) as u64);
    assert!(checkpoint.log_index >= 1);
    // The checkpoint names the last record the tracker appended, which
    // readers see only once the committer has written it: so sync first.
    // (Asserted before the sync, this failed when the committer had not.)
    log.sync().expect("sync the log");
    assert!(checkpoint.log_index <= log.last_index());

    // While no tracker runs: the copy goes, the 20 PVs come.
    fleet.detach(spare).expect("detach");
    for i in 0..PVS {
        fleet.attach(i).expect("attach");
    }

    let activated = dir.path().join("activated");
    let script = format!("printf '%s\\n' \"$1\" >> '{}'", activated.display());
    let argv = ["/bin/sh", "-c", &script, "sh"].map(str::to_owned).to_vec();
    // Committed, so that `since` is past every record logged so far: the
    // committer may not have written the first tracker's last ones yet.
    log.sync().expect("sync the log");
    let since = log.last_index();
    let t2 = start(&fleet, &log, Some(checkpoint.clone()), Some(argv));
    let all = records(&log);
    let recs: Vec<LogRecord> = all.into_iter().filter(|r| r.index > since).collect();
    let reconciled: Vec<&LogRecord> = recs
        .iter()
        .filter(|r| r.flags & FLAG_RECONCILED != 0)
        .collect();
    assert!(
        reconciled.iter().all(|r| r.flags == RECONCILED),
        "{reconciled:?}"
    );
    // Only loop devices can have changed on this host meanwhile.
    for r in &reconciled {
        if !matches!(r.kind, RecordType::VG_COMPLETE | RecordType::VG_INCOMPLETE) {
            assert!(r.name.starts_with(b"loop"), "{r:?}");
        }
    }
    let mark = the_mark(&recs, "block devices reconciled", since);
    assert_eq!(field(mark, "since"), checkpoint.log_index.to_string());
    assert_eq!(field(mark, "changes"), reconciled.len().to_string());
    assert!(reconciled.iter().all(|r| r.index < mark.index));
    assert_eq!(t2.stats().reconciled, reconciled.len() as u64);

    let ours = ours(&fleet, &recs);
    let one = |kind: RecordType, name: &str| -> &LogRecord {
        let list = ours
            .get(&(kind, name.to_owned()))
            .map_or(&[][..], Vec::as_slice);
        assert_eq!(list.len(), 1, "{kind} {name}: {list:?}");
        assert_eq!(list[0].flags, RECONCILED);
        list[0]
    };
    let vg_target = undashed(&vg_uuid);
    for i in 0..PVS {
        let name = fleet.name(i);
        let change = one(RecordType::DEVICE_CHANGE, &name);
        let changed: Vec<&str> = field(change, "changed").split(',').collect();
        assert!(changed.contains(&"size") && changed.contains(&"backing_file"));
        assert_eq!(field(change, "size"), (16u64 << 20).to_string());
        assert_eq!(field(change, "old_size"), "0");
        assert_eq!(
            field(change, "backing_file"),
            fleet.file(i).to_str().unwrap()
        );
        let found = one(RecordType::PV_FOUND, &name);
        assert!(found.index > change.index);
        assert_eq!(found.target, undashed(&pv_uuid[&fleet.path(i)]));
        assert_eq!(found.parent, vg_target);
        assert_eq!(field(found, "vg"), vg);
        assert_eq!(field(found, "dev"), format!("7:{}", fleet.minor(i)));
        assert_eq!(found.field("duplicate_of"), None);
    }
    let spare_name = fleet.name(spare);
    let detach = one(RecordType::DEVICE_CHANGE, &spare_name);
    assert_eq!(field(detach, "size"), "0");
    assert_eq!(field(detach, "old_size"), (16u64 << 20).to_string());
    let lost = one(RecordType::PV_LOST, &spare_name);
    assert_eq!(lost.target, undashed(&pv_uuid[&fleet.path(0)]));
    assert_eq!(lost.parent, vg_target);
    assert_eq!(field(lost, "dev"), format!("7:{}", fleet.minor(spare)));
    assert!(lost.index < detach.index, "PV_LOST comes first");
    let complete = one(RecordType::VG_COMPLETE, &vg);
    assert_eq!(complete.target, vg_target);
    assert_eq!(field(complete, "pvs"), PVS.to_string());
    assert!(ours.values().flatten().all(|r| r.index <= complete.index));
    // 21 changes, 20 PVs found, 1 lost, 1 completion: nothing else.
    assert_eq!(ours.values().map(Vec::len).sum::<usize>(), 2 * PVS + 3);

    // The completion runs the command, as a live one would.
    wait_for_file(&activated, &format!("{vg}\n"));
    assert_eq!(t2.stats().activations, 1);

    // The new checkpoint: the VG complete, as of the reconciled MARK or
    // later.
    let now = t2.checkpoint();
    assert!(now.log_index >= mark.index);
    let v = now.vgs.iter().find(|v| v.name == vg).unwrap();
    assert!(v.complete && v.missing == 0);
    let pvs = now
        .devices
        .iter()
        .filter(|d| {
            d.pv.as_ref()
                .is_some_and(|p| p.vg_uuid.map(|u| u.to_vec()) == Some(vg_target.clone()))
        })
        .count();
    assert_eq!(pvs, PVS);
    t2.stop().expect("the second tracker stops cleanly");
}

#[test]
fn after_a_crash_the_records_past_the_checkpoint_are_not_logged_again() {
    if skipping() {
        return;
    }
    const PVS: usize = 6;
    let mut fleet = Fleet::build("crs", &[1; PVS], 0, 0).expect("make the fleet");
    let vg = fleet.vg_name().to_owned();
    for i in 0..PVS {
        fleet.detach(i).expect("detach");
    }
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Log::open(dir.path().join("log"), Options::default()).unwrap());

    let t1 = start(&fleet, &log, None, None);
    let stale = t1.checkpoint();
    let gen0 = t1.generation();
    // Logged live after the checkpoint, as if the next one was never
    // written: the process is killed with this checkpoint the last.
    for i in 0..3 {
        fleet.attach(i).expect("attach");
    }
    t1.sync().expect("sync");
    assert!(t1.generation() > gen0);
    t1.stop().expect("the first tracker stops cleanly");
    // While down.
    for i in 3..PVS {
        fleet.attach(i).expect("attach");
    }
    // Committed, so that `since` is past every record logged so far: the
    // committer may not have written the first tracker's last ones yet.
    log.sync().expect("sync the log");
    let since = log.last_index();
    let t2 = start(&fleet, &log, Some(stale.clone()), None);
    let recs = records(&log);
    let ours = ours(&fleet, &recs);
    for i in 0..PVS {
        let name = fleet.name(i);
        for kind in [RecordType::DEVICE_CHANGE, RecordType::PV_FOUND] {
            let list = &ours[&(kind, name.clone())];
            assert_eq!(list.len(), 1, "{kind} {name}: {list:?}");
            // The first three were logged live; the rest at the restart.
            let want = if i < 3 { 0 } else { RECONCILED };
            assert_eq!(list[0].flags, want, "{:?}", list[0]);
            assert_eq!(list[0].index > since, i >= 3);
        }
    }
    let completes = &ours[&(RecordType::VG_COMPLETE, vg.clone())];
    assert_eq!(completes.len(), 1);
    assert_eq!(completes[0].flags, RECONCILED);
    assert_eq!(ours.values().map(Vec::len).sum::<usize>(), 2 * PVS + 1);
    let mark = the_mark(&recs, "block devices reconciled", since);
    assert_eq!(field(mark, "since"), stale.log_index.to_string());
    // At least the six records of the first three PVs were read back.
    assert!(field(mark, "tail").parse::<u64>().unwrap() >= 6);
    assert_eq!(field(mark, "tail_bad"), "0");
    assert_eq!(field(mark, "tail_incomplete"), "0");
    t2.stop().expect("the second tracker stops cleanly");
}
