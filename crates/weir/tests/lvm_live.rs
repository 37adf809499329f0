//! LVM2 commands run against devices that are already attached, with
//! `weir run` watching: after each command and a `weir sync`, `weir pvs`,
//! `vgs` and `lvs --json` through the daemon equal LVM2's own
//! `--reportformat json` reports, the daemon's text and JSON forms are
//! the direct reading's bytes, and the command's records are logged once
//! each. The same life with the daemon stopped before each command and
//! started after it logs every change once, flagged RECONCILED. And a
//! storm of `lvcreate`/`lvremove` on a VG of 50 PVs, followed by a
//! consumer, ends with LVM2's inventory and paired records.
//!
//! These tests need root, losetup and lvm, and print `skipping: ...`
//! without them.

#[path = "support/child_lines.rs"]
mod child_lines;
// Only its daemon is used here.
#[allow(dead_code)]
#[path = "support/daemon_child.rs"]
mod daemon_child;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use daemon_child::{Daemon, ok, sync, weir};
use serde_json::Value;
use weir_log::{FLAG_RECONCILED, LogRecord, Reader};
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

/// `weir run` over the fleet's devices only, mounts not tracked.
fn start(fleet: &Fleet, state: &Path) -> Daemon {
    let mut args = vec!["--mounts-enabled=false".to_owned()];
    for p in fleet.filter_patterns() {
        args.push("--devices-filter".to_owned());
        args.push(p);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Daemon::start(state, &state.join("weir.sock"), &args)
}

/// The LVM records (PV_*, VG_*, LV_*) after index `from`, read from the
/// log directory beside the daemon.
fn lvm_records(state: &Path, from: u64) -> Vec<LogRecord> {
    let mut r = Reader::open_dir(state.join("log"), from + 1);
    let mut out = Vec::new();
    while let Some(rec) = r.next_record().expect("read the log") {
        let name = rec.kind.name().unwrap_or("");
        if ["PV_", "VG_", "LV_"].iter().any(|p| name.starts_with(p)) {
            out.push(rec);
        }
    }
    out
}

fn kinds(recs: &[LogRecord]) -> Vec<String> {
    recs.iter().map(|r| r.kind.to_string()).collect()
}

fn json(text: &[u8]) -> Vec<Value> {
    match serde_json::from_slice(text) {
        Ok(Value::Array(a)) => a,
        other => panic!("not a JSON array: {other:?}"),
    }
}

fn num(row: &BTreeMap<String, String>, key: &str) -> Value {
    Value::from(
        row[key]
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("{key}: {row:?}")),
    )
}

/// `weir pvs`, `vgs` and `lvs --json` through the daemon equal LVM's
/// reports, and each listing through the daemon, text and JSON, is the
/// direct reading's bytes.
fn assert_views(fleet: &Fleet, socket: &Path, when: &str) {
    let via = |args: &[&str]| ok(weir(socket, args));
    let mut want: Vec<Value> = fleet
        .report_json("pvs", "pv_name,pv_uuid,vg_name,pv_size,pv_free", &[])
        .iter()
        .map(|r| {
            serde_json::json!([
                r["pv_name"],
                r["pv_uuid"],
                r["vg_name"],
                num(r, "pv_size"),
                num(r, "pv_free")
            ])
        })
        .collect();
    want.sort_by_key(ToString::to_string);
    let mut got: Vec<Value> = json(&via(&["pvs", "--json"]))
        .iter()
        .map(|p| {
            serde_json::json!([
                p["device"],
                p["uuid"],
                p["vg_name"],
                p["size_bytes"],
                p["free_bytes"]
            ])
        })
        .collect();
    got.sort_by_key(ToString::to_string);
    assert_eq!(got, want, "pvs {when}");

    let want: Vec<Value> = fleet
        .report_json(
            "vgs",
            "vg_name,vg_uuid,vg_seqno,pv_count,lv_count,vg_size,vg_free",
            &[],
        )
        .iter()
        .map(|r| {
            serde_json::json!([
                r["vg_name"],
                r["vg_uuid"],
                num(r, "vg_seqno"),
                num(r, "pv_count"),
                num(r, "lv_count"),
                num(r, "vg_size"),
                num(r, "vg_free")
            ])
        })
        .collect();
    let got: Vec<Value> = json(&via(&["vgs", "--json"]))
        .iter()
        .map(|v| {
            serde_json::json!([
                v["name"],
                v["uuid"],
                v["seqno"],
                v["pv_count"],
                v["lv_count"],
                v["size_bytes"],
                v["free_bytes"]
            ])
        })
        .collect();
    assert_eq!(got, want, "vgs {when}");

    // LVM's lvs gives a row per segment with segment fields: compare the
    // LVs' own fields and their segments' devices, joined.
    let mut want: BTreeMap<String, Value> = BTreeMap::new();
    for r in fleet.report_json(
        "lvs",
        "lv_name,lv_uuid,vg_name,lv_size,segtype,stripes,devices",
        &[],
    ) {
        let e = want.entry(r["lv_uuid"].clone()).or_insert_with(|| {
            serde_json::json!([r["lv_name"], r["vg_name"], num(&r, "lv_size"), [], []])
        });
        e[3].as_array_mut()
            .unwrap()
            .push(r["segtype"].clone().into());
        e[4].as_array_mut()
            .unwrap()
            .push(r["devices"].clone().into());
    }
    let got: BTreeMap<String, Value> = json(&via(&["lvs", "--json"]))
        .iter()
        .map(|l| {
            let segs = l["segments"].as_array().expect("segments");
            (
                l["uuid"].as_str().unwrap().to_owned(),
                serde_json::json!([
                    l["name"],
                    l["vg_name"],
                    l["size_bytes"],
                    segs.iter()
                        .map(|s| s["segtype"].clone())
                        .collect::<Vec<_>>(),
                    segs.iter()
                        .map(|s| s["devices"].clone())
                        .collect::<Vec<_>>()
                ]),
            )
        })
        .collect();
    assert_eq!(got, want, "lvs {when}");

    // Every view agrees: through the daemon and read directly.
    let mut filter = Vec::new();
    for p in fleet.filter_patterns() {
        filter.push("--filter".to_owned());
        filter.push(p);
    }
    for args in [
        &["pvs"][..],
        &["pvs", "--json"],
        &["vgs"],
        &["vgs", "--json"],
        &["lvs"],
        &["lvs", "--json"],
    ] {
        let mut direct = weir(socket, &["--direct"]);
        direct.args(args).args(&filter);
        assert_eq!(
            String::from_utf8(via(args)).unwrap(),
            String::from_utf8(ok(direct)).unwrap(),
            "weir {args:?} {when}: the daemon and the direct reading differ"
        );
    }
}

#[test]
fn each_lvm_command_is_in_every_view_after_sync_and_logged_once() {
    if skipping() {
        return;
    }
    let fleet = Fleet::blank("live", 4).expect("make the fleet");
    let state = tempfile::tempdir().expect("state directory");
    let socket = state.path().join("weir.sock");
    let daemon = start(&fleet, state.path());
    let mut last = sync(&socket);
    for (cmd, want) in fleet.life() {
        fleet.run(&cmd);
        let index = sync(&socket);
        let recs = lvm_records(state.path(), last);
        assert_eq!(kinds(&recs), want, "after {cmd:?}");
        assert!(recs.iter().all(|r| r.index <= index), "sync covers them");
        assert!(
            recs.iter().all(|r| r.flags == 0),
            "live, not a scan: {cmd:?}"
        );
        assert_views(&fleet, &socket, &format!("after {cmd:?}"));
        last = index;
    }
    daemon.stop();
}

#[test]
fn each_lvm_command_run_while_the_daemon_is_down_is_reconciled_once() {
    if skipping() {
        return;
    }
    let fleet = Fleet::blank("down", 4).expect("make the fleet");
    let state = tempfile::tempdir().expect("state directory");
    let socket = state.path().join("weir.sock");
    let mut last = {
        let d = start(&fleet, state.path());
        let i = sync(&socket);
        d.stop();
        i
    };
    for (cmd, want) in fleet.life() {
        fleet.run(&cmd);
        let daemon = start(&fleet, state.path());
        let index = sync(&socket);
        let recs = lvm_records(state.path(), last);
        assert_eq!(kinds(&recs), want, "after {cmd:?} while down");
        assert!(
            recs.iter().all(|r| r.flags & FLAG_RECONCILED != 0),
            "after {cmd:?}: {recs:?}"
        );
        assert_views(&fleet, &socket, &format!("after {cmd:?} while down"));
        daemon.stop();
        last = index;
    }
    // Nothing changed since: a start logs nothing more.
    let daemon = start(&fleet, state.path());
    sync(&socket);
    assert_eq!(
        kinds(&lvm_records(state.path(), last)),
        Vec::<String>::new()
    );
    daemon.stop();
}

#[test]
fn a_storm_of_lv_commands_on_fifty_pvs_ends_exact_with_paired_records() {
    if skipping() {
        return;
    }
    const PVS: usize = 50;
    const PAIRS: usize = 100;
    let fleet = Fleet::blank("storm", PVS).expect("make the fleet");
    let all: Vec<usize> = (0..PVS).collect();
    fleet.make_vg(&all, &all);
    let state = tempfile::tempdir().expect("state directory");
    let socket = state.path().join("weir.sock");
    let daemon = start(&fleet, state.path());
    let from = sync(&socket);
    // A consumer follows the LV records as they come.
    let mut follower = weir(&socket, &["log", "tail", "--follow", "--json", "--from"])
        .arg((from + 1).to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("weir log tail --follow");
    let lines = BufReader::new(follower.stdout.take().expect("stdout"));
    let reader = std::thread::spawn(move || {
        let mut seen: Vec<Value> = Vec::new();
        for line in lines.lines() {
            let Ok(line) = line else { break };
            let v: Value = serde_json::from_str(&line).expect("a JSON record");
            let done = v["type"] == "MARK" && v["name"] == "storm over";
            seen.push(v);
            if done {
                break;
            }
        }
        seen
    });
    let started = Instant::now();
    for i in 0..PAIRS {
        let name = format!("s{i}");
        fleet.lvcreate(&name, 1, &[], &[]);
        fleet.lvremove(&name);
    }
    eprintln!("{} LVM commands in {:?}", 2 * PAIRS, started.elapsed());
    let end = sync(&socket);
    // The follower's end: a MARK written after the barrier.
    let mut mark = weir(&socket, &["log", "write", "--type", "MARK"]);
    mark.stdin(Stdio::piped()).stdout(Stdio::null());
    let mut child = mark.spawn().expect("weir log write");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"storm over\n").unwrap();
    assert!(child.wait().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !reader.is_finished() {
        assert!(Instant::now() < deadline, "the follower never saw the end");
        std::thread::sleep(Duration::from_millis(20));
    }
    let seen = reader.join().expect("the follower's thread");
    let _ = follower.kill();
    let _ = follower.wait();
    let of = |t: &str| seen.iter().filter(|v| v["type"] == t).count();
    assert_eq!(of("LV_ADD"), PAIRS);
    assert_eq!(of("LV_REMOVE"), PAIRS);
    assert_eq!(of("VG_CHANGE"), 2 * PAIRS);
    let mut open: BTreeMap<String, i32> = BTreeMap::new();
    for v in &seen {
        let key = v["target"].to_string();
        match v["type"].as_str() {
            Some("LV_ADD") => *open.entry(key).or_default() += 1,
            Some("LV_REMOVE") => {
                let n = open.get_mut(&key).expect("an LV_REMOVE after its LV_ADD");
                *n -= 1;
            }
            _ => {}
        }
    }
    assert!(open.values().all(|n| *n == 0), "{open:?}");
    // The log says the same as the follower, and the inventory is LVM's.
    assert_eq!(
        lvm_records(state.path(), from)
            .iter()
            .filter(|r| r.index <= end)
            .count(),
        4 * PAIRS
    );
    assert_views(&fleet, &socket, "after the storm");
    daemon.stop();
}
