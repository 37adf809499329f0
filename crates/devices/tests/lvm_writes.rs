//! The device tracker while LVM2 writes metadata to devices that are
//! already attached, which no uevent reports: every command of a VG's
//! life, run for real, is in the inventory once `sync` returns, equal to
//! LVM's own report, and logged once with the records docs/records.md
//! names. Without inotify watches (past the watch limit) the devices are
//! polled and `sync` is still exact; a restart logs what changed while it
//! was down, once; and the text cache does not grow with the commands run.
//!
//! These tests need root, losetup and lvm, and print `skipping: ...`
//! without them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_devices::{Filter, Inventory, Previous, Tracker, TrackerOptions};
use weir_log::{FLAG_RECONCILED, Log, LogRecord, Options, RecordType};
use weir_lvmfleet::Fleet;

fn skipping() -> bool {
    match weir_lvmfleet::unavailable() {
        Some(why) => {
            eprintln!("skipping: {why}");
            true
        }
        None => false,
    }
}

fn open_log(dir: &std::path::Path) -> Arc<Log> {
    Arc::new(Log::open(dir.join("log"), Options::default()).expect("open log"))
}

fn options(fleet: &Fleet) -> TrackerOptions {
    TrackerOptions {
        filter: Filter::parse(&fleet.filter_patterns()).expect("the fleet's filter parses"),
        sync_timeout: Duration::from_secs(30),
        ..TrackerOptions::default()
    }
}

/// The LVM records (PV_*, VG_*, LV_*) after index `from`: the tracker
/// probes only the fleet's devices, so all of them are the test's.
fn lvm_records(log: &Log, from: u64) -> Vec<LogRecord> {
    log.sync().expect("sync log");
    let mut r = log.reader(from + 1);
    let mut out = Vec::new();
    while let Some(rec) = r.next_record().expect("read log") {
        let name = rec.kind.name().unwrap_or("");
        if ["PV_", "VG_", "LV_"].iter().any(|p| name.starts_with(p)) {
            out.push(rec);
        }
    }
    out
}

/// The index of the last record committed: what a test has logged so far.
fn end(log: &Log) -> u64 {
    log.sync().expect("sync log");
    log.last_index()
}

fn kinds(recs: &[LogRecord]) -> Vec<String> {
    recs.iter().map(|r| r.kind.to_string()).collect()
}

/// What LVM reports and what the inventory holds, in the same words:
/// `pv_name vg_name` per PV, and `vg_name uuid seqno #pv #lv size free`
/// per VG.
fn lvm_view(fleet: &Fleet) -> (Vec<String>, Vec<String>) {
    let mut pvs: Vec<String> = fleet
        .report("pvs", "pv_name,pv_uuid,vg_name")
        .into_iter()
        .map(|r| format!("{} {} {}", r["pv_name"], r["pv_uuid"], r["vg_name"]))
        .collect();
    pvs.sort();
    let vgs = fleet
        .report(
            "vgs",
            "vg_name,vg_uuid,vg_seqno,pv_count,lv_count,vg_size,vg_free",
        )
        .into_iter()
        .map(|r| {
            format!(
                "{} {} {} {} {} {} {}",
                r["vg_name"],
                r["vg_uuid"],
                r["vg_seqno"],
                r["pv_count"],
                r["lv_count"],
                r["vg_size"],
                r["vg_free"]
            )
        })
        .collect();
    (pvs, vgs)
}

fn weir_view(inv: &Inventory) -> (Vec<String>, Vec<String>) {
    let mut pvs: Vec<String> = inv
        .pvs()
        .into_iter()
        .map(|p| {
            let path = inv
                .get(p.device)
                .map(|e| e.device.dev_path().display().to_string())
                .unwrap_or_default();
            format!("{path} {} {}", p.uuid, p.vg_name)
        })
        .collect();
    pvs.sort();
    let vgs = inv
        .vgs()
        .into_iter()
        .map(|v| {
            format!(
                "{} {} {} {} {} {} {}",
                v.name, v.uuid, v.seqno, v.pv_count, v.lv_count, v.size_bytes, v.free_bytes
            )
        })
        .collect();
    (pvs, vgs)
}

#[test]
fn every_lvm_command_is_in_the_inventory_after_sync_and_logged_once() {
    if skipping() {
        return;
    }
    let fleet = Fleet::blank("wr", 4).expect("make the fleet");
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    let t = Tracker::start(Some(Arc::clone(&log)), options(&fleet), None).expect("start");
    assert!(t.stats().watched >= 4, "{:?}", t.stats());
    let mut last = end(&log);
    for (cmd, want) in fleet.life() {
        fleet.run(&cmd);
        t.sync().expect("sync");
        let recs = lvm_records(&log, last);
        assert_eq!(kinds(&recs), want, "after {cmd:?}");
        assert!(
            recs.iter().all(|r| r.flags == 0),
            "seen live, not by a scan: {cmd:?}"
        );
        assert_eq!(
            t.with_inventory(weir_view),
            lvm_view(&fleet),
            "after {cmd:?}"
        );
        last = end(&log);
    }
    assert!(t.stats().writes > 0);
    assert_eq!(t.stats().overflows, 0);
    t.stop().expect("stop");
}

#[test]
fn an_lv_record_names_the_lv_its_vg_and_what_changed() {
    if skipping() {
        return;
    }
    let fleet = Fleet::blank("rec", 2).expect("make the fleet");
    let vg = fleet.vg_name().to_owned();
    fleet.make_vg(&[0, 1], &[0, 1]);
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    let t = Tracker::start(Some(Arc::clone(&log)), options(&fleet), None).expect("start");
    let from = end(&log);
    fleet.lvcreate("lv", 2, &[], &[]);
    fleet.lvm_ok(&[
        "lvextend",
        "--driverloaded",
        "n",
        "-l",
        "+1",
        &format!("{vg}/lv"),
    ]);
    t.sync().expect("sync");
    let recs = lvm_records(&log, from);
    assert_eq!(
        kinds(&recs),
        ["VG_CHANGE", "LV_ADD", "VG_CHANGE", "LV_CHANGE"]
    );
    let lv = fleet.report("lvs", "lv_uuid,vg_uuid,lv_size,vg_seqno");
    let field = |r: &LogRecord, k: &str| String::from_utf8(r.field(k).unwrap().to_vec()).unwrap();
    let undashed = |s: &str| s.bytes().filter(|&b| b != b'-').collect::<Vec<u8>>();
    let add = &recs[1];
    assert_eq!(add.target, undashed(&lv[0]["lv_uuid"]));
    assert_eq!(add.parent, undashed(&lv[0]["vg_uuid"]));
    assert_eq!(add.name, b"lv");
    assert_eq!(field(add, "vg"), vg);
    assert_eq!(field(add, "segtype"), "linear");
    let change = &recs[3];
    assert_eq!(field(change, "changed"), "size,segments");
    assert_eq!(field(change, "size"), lv[0]["lv_size"]);
    assert_eq!(
        field(change, "old_size").parse::<u64>().unwrap() * 3,
        field(change, "size").parse::<u64>().unwrap() * 2
    );
    let vgc = &recs[2];
    assert_eq!(field(vgc, "seqno"), lv[0]["vg_seqno"]);
    assert_eq!(
        field(vgc, "old_seqno").parse::<u64>().unwrap() + 1,
        field(vgc, "seqno").parse::<u64>().unwrap()
    );
    t.stop().expect("stop");
}

#[test]
fn past_the_watch_limit_devices_are_polled_and_sync_stays_exact() {
    if skipping() {
        return;
    }
    let fleet = Fleet::blank("lim", 2).expect("make the fleet");
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    let opts = TrackerOptions {
        max_watches: Some(0),
        ..options(&fleet)
    };
    let t = Tracker::start(Some(Arc::clone(&log)), opts, None).expect("start");
    assert_eq!(t.stats().watched, 0);
    assert_eq!(t.stats().unwatched, 2);
    fleet.make_vg(&[0, 1], &[0, 1]);
    t.sync().expect("sync");
    assert_eq!(t.with_inventory(weir_view), lvm_view(&fleet));
    // Without a sync, the poll finds a write within a few seconds.
    let before = end(&log);
    fleet.lvcreate("lv", 1, &[], &[]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while kinds(&lvm_records(&log, before)) != ["VG_CHANGE", "LV_ADD"] {
        assert!(
            Instant::now() < deadline,
            "{:?}",
            kinds(&lvm_records(&log, before))
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    t.stop().expect("stop");
}

#[test]
fn a_restart_logs_the_commands_run_while_down_once() {
    if skipping() {
        return;
    }
    let fleet = Fleet::blank("rs", 3).expect("make the fleet");
    let vg = fleet.vg_name().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    let p = |i| fleet.path(i);
    fleet.make_vg(&[0, 1, 2], &[0, 1]);
    fleet.lvcreate("a", 1, &[], &[]);
    let t = Tracker::start(Some(Arc::clone(&log)), options(&fleet), None).expect("start");
    let prev: Previous = t.checkpoint();
    t.stop().expect("stop");

    // While down: an LV made, one renamed, a PV added.
    fleet.lvcreate("b", 1, &[], &[]);
    fleet.lvm_ok(&["lvrename", "--driverloaded", "n", &vg, "a", "a2"]);
    fleet.run(&["vgextend".to_owned(), vg.clone(), p(2)]);

    let from = end(&log);
    let opts = TrackerOptions {
        previous: Some(prev),
        ..options(&fleet)
    };
    let t = Tracker::start(Some(Arc::clone(&log)), opts, None).expect("restart");
    let recs = lvm_records(&log, from);
    assert_eq!(
        kinds(&recs),
        ["VG_CHANGE", "LV_CHANGE", "LV_ADD", "PV_CHANGE"],
        "{recs:?}"
    );
    assert!(recs.iter().all(|r| r.flags & FLAG_RECONCILED != 0));
    let again = t.checkpoint();
    t.stop().expect("stop");
    // A second restart finds nothing more.
    let from = end(&log);
    let opts = TrackerOptions {
        previous: Some(again),
        ..options(&fleet)
    };
    let t = Tracker::start(Some(Arc::clone(&log)), opts, None).expect("restart again");
    assert_eq!(kinds(&lvm_records(&log, from)), Vec::<String>::new());
    t.stop().expect("stop");
}

#[test]
fn a_storm_of_lv_commands_keeps_the_text_cache_small_and_the_records_paired() {
    if skipping() {
        return;
    }
    let fleet = Fleet::blank("st", 2).expect("make the fleet");
    fleet.make_vg(&[0, 1], &[0, 1]);
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    let t = Tracker::start(Some(Arc::clone(&log)), options(&fleet), None).expect("start");
    let from = end(&log);
    for i in 0..10 {
        let name = format!("s{i}");
        fleet.lvcreate(&name, 1, &[], &[]);
        fleet.lvremove(&name);
    }
    t.sync().expect("sync");
    let recs = lvm_records(&log, from);
    let count = |k: RecordType| recs.iter().filter(|r| r.kind == k).count();
    assert_eq!(count(RecordType::LV_ADD), 10);
    assert_eq!(count(RecordType::LV_REMOVE), 10);
    assert_eq!(count(RecordType::VG_CHANGE), 20);
    let mut open: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
    for r in &recs {
        match r.kind {
            RecordType::LV_ADD => *open.entry(r.target.clone()).or_default() += 1,
            RecordType::LV_REMOVE => {
                let n = open.get_mut(&r.target).expect("removed after added");
                *n -= 1;
            }
            _ => {}
        }
    }
    assert!(open.values().all(|n| *n == 0), "{open:?}");
    // One VG on the devices: its one text, not the twenty seen.
    assert_eq!(t.with_inventory(Inventory::texts_cached), 1);
    assert_eq!(t.with_inventory(weir_view), lvm_view(&fleet));
    t.stop().expect("stop");
}

/// The on-vg-complete MARKs for `vg` after index `from`.
fn activations(log: &Log, from: u64, vg: &str) -> usize {
    log.sync().expect("sync log");
    let mut r = log.reader(from + 1);
    let mut n = 0;
    while let Some(rec) = r.next_record().expect("read log") {
        if rec.kind == RecordType::MARK
            && rec.name == b"on-vg-complete"
            && rec.field("vg") == Some(vg.as_bytes())
        {
            n += 1;
        }
    }
    n
}

#[test]
fn metadata_alone_makes_a_vg_incomplete_and_complete_again_and_activates_it() {
    if skipping() {
        return;
    }
    let fleet = Fleet::blank("md", 3).expect("make the fleet");
    let vg = fleet.vg_name().to_owned();
    let p = |i| fleet.path(i);
    fleet.make_vg(&[0, 1, 2], &[0, 1]);
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    // The tracker sees the first two devices only: the third is a PV it
    // cannot see, as one not attached here yet would be.
    let patterns = vec![
        format!("a|^{}$|", p(0)),
        format!("a|^{}$|", p(1)),
        "r|.*|".to_owned(),
    ];
    let opts = TrackerOptions {
        filter: Filter::parse(&patterns).expect("filter"),
        on_vg_complete: Some(["/bin/true"].map(str::to_owned).to_vec()),
        ..options(&fleet)
    };
    let t = Tracker::start(Some(Arc::clone(&log)), opts, None).expect("start");
    let from = end(&log);
    fleet.run(&["vgextend".to_owned(), vg.clone(), p(2)]);
    t.sync().expect("sync");
    assert_eq!(
        kinds(&lvm_records(&log, from)),
        ["VG_CHANGE", "VG_INCOMPLETE"]
    );
    let from = end(&log);
    fleet.run(&["vgreduce".to_owned(), vg.clone(), p(2)]);
    t.sync().expect("sync");
    assert_eq!(
        kinds(&lvm_records(&log, from)),
        ["VG_CHANGE", "VG_COMPLETE"]
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while activations(&log, from, &vg) == 0 {
        assert!(Instant::now() < deadline, "no on-vg-complete MARK for {vg}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // One at start (the VG was complete then), one now.
    assert_eq!(t.stats().activations, 2);
    t.stop().expect("stop");
    assert_eq!(activations(&log, from, &vg), 1, "exactly once");
}

#[test]
fn udevds_echo_of_a_write_is_not_probed_again() {
    if skipping() {
        return;
    }
    let fleet = Fleet::blank("echo", 1).expect("make the fleet");
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    let opts = TrackerOptions {
        udev_echoes: Some(true),
        ..options(&fleet)
    };
    let t = Tracker::start(Some(Arc::clone(&log)), opts, None).expect("start");
    fleet.make_vg(&[0], &[]);
    t.sync().expect("sync");
    let probes = |t: &Tracker| t.with_inventory(|i| i.counters().probes);
    let echoes = |t: &Tracker| t.with_inventory(|i| i.counters().echoes);
    let before = probes(&t);
    // What udevd's watch does after that write: a synthesized change.
    let uevent = format!("/sys/class/block/{}/uevent", fleet.name(0));
    std::fs::write(&uevent, "change").expect("synthesize a change uevent");
    t.sync().expect("sync");
    assert_eq!(echoes(&t), 1);
    assert_eq!(probes(&t), before, "the echo was probed");
    // A second one is no echo: probed.
    std::fs::write(&uevent, "change").expect("synthesize a change uevent");
    t.sync().expect("sync");
    assert_eq!(echoes(&t), 1);
    assert_eq!(probes(&t), before + 1);
    t.stop().expect("stop");
}

#[test]
fn a_wiped_label_is_a_lost_pv() {
    if skipping() {
        return;
    }
    let fleet = Fleet::blank("wipe", 1).expect("make the fleet");
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    let t = Tracker::start(Some(Arc::clone(&log)), options(&fleet), None).expect("start");
    fleet.make_vg(&[0], &[]);
    t.sync().expect("sync");
    let from = end(&log);
    let out = std::process::Command::new("wipefs")
        .args(["-a", &fleet.path(0)])
        .output()
        .expect("run wipefs");
    assert!(out.status.success(), "wipefs: {out:?}");
    t.sync().expect("sync");
    assert_eq!(kinds(&lvm_records(&log, from)), ["PV_LOST"]);
    assert_eq!(t.with_inventory(weir_view).0, Vec::<String>::new());
    t.stop().expect("stop");
}

#[test]
fn a_write_that_leaves_the_metadata_as_it_was_reads_no_text() {
    if skipping() {
        return;
    }
    let fleet = Fleet::blank("same", 1).expect("make the fleet");
    fleet.make_vg(&[0], &[0]);
    let dir = tempfile::tempdir().unwrap();
    let log = open_log(dir.path());
    let t = Tracker::start(Some(Arc::clone(&log)), options(&fleet), None).expect("start");
    let texts = |t: &Tracker| t.with_inventory(|i| i.text_stats().texts_read);
    let (before, writes) = (texts(&t), t.stats().writes);
    let from = end(&log);
    // Opened for writing and closed, twice: IN_CLOSE_WRITE, nothing new
    // on disk. The close is this process's, and a fork in a parallel test
    // can hold the file a moment longer: wait for each close to be seen.
    for k in 1..=2 {
        drop(
            std::fs::OpenOptions::new()
                .write(true)
                .open(fleet.path(0))
                .expect("open the device for writing"),
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while t.stats().writes < writes + k {
            assert!(Instant::now() < deadline, "close {k} was never seen");
            t.sync().expect("sync");
        }
    }
    assert_eq!(t.stats().writes, writes + 2, "the closes were seen");
    assert_eq!(
        texts(&t),
        before,
        "the text the device still carries was read again"
    );
    assert_eq!(kinds(&lvm_records(&log, from)), Vec::<String>::new());
    t.stop().expect("stop");
}
