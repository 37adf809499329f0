//! End-to-end tests of `weir vgs`, `weir pvs`, `weir lvs`, `weir devices`
//! and `weir devices watch` against VGs that real LVM2 built on loop
//! devices: the JSON agrees with LVM's own report, `-o` picks the table's
//! columns, the daemon's listings are the direct ones' bytes, a bad
//! `--filter` or column fails clearly, the watcher prints and logs a VG
//! assembling and stops on SIGINT, and an unprivileged listing warns
//! instead of failing.
//!
//! Every command is filtered to the test's own loop devices (other tests
//! attach loop devices at the same time). The privileged tests need root,
//! losetup and lvm, and print `skipping: ...` without them.

#[path = "support/child_lines.rs"]
mod child_lines;
// Only its daemon is used here.
#[allow(dead_code)]
#[path = "support/daemon_child.rs"]
mod daemon_child;
// Only part of it is used here.
#[path = "support/lvm_cli.rs"]
mod lvm_cli;
#[allow(dead_code)]
#[path = "support/privileged.rs"]
mod privileged;
mod support;

use std::collections::BTreeMap;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use child_lines::{Reap, lines_of, wait_line};
use lvm_cli::{filter_args, lv_fleet, skipping, weir_ok};
use privileged::assert_ok;
use serde_json::Value;
use support::Weir;
use weir_lvmfleet::Fleet;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// How long the watcher may take to show a line.
const LINE_TIMEOUT: Duration = Duration::from_secs(30);

fn json_array(text: &str) -> Vec<Value> {
    match serde_json::from_str(text) {
        Ok(Value::Array(a)) => a,
        other => panic!("not a JSON array ({other:?}):\n{text}"),
    }
}

/// A JSON number from LVM's report, which has them as strings.
fn num(row: &BTreeMap<String, String>, key: &str) -> Value {
    let n: u64 = row[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key}: {row:?}"));
    Value::from(n)
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    k.sort_unstable();
    k
}

#[test]
fn vgs_and_pvs_json_agree_with_lvm() {
    if skipping() {
        return;
    }
    let fleet = Fleet::build("cli", &[0, 1, 2], 1, 0).expect("make the fleet");
    let lvm_vg = &fleet.report(
        "vgs",
        "vg_name,vg_uuid,vg_seqno,pv_count,lv_count,vg_size,vg_free,vg_extent_size,\
         vg_mda_count,vg_mda_used_count",
    )[0];
    let vgs = json_array(&weir_ok(&["vgs", "--json"], &fleet));
    assert_eq!(vgs.len(), 1, "{vgs:?}");
    let vg = &vgs[0];
    let expected = serde_json::json!({
        "name": lvm_vg["vg_name"],
        "uuid": lvm_vg["vg_uuid"],
        "seqno": num(lvm_vg, "vg_seqno"),
        "pv_count": num(lvm_vg, "pv_count"),
        "lv_count": num(lvm_vg, "lv_count"),
        "size_bytes": num(lvm_vg, "vg_size"),
        "free_bytes": num(lvm_vg, "vg_free"),
        "extent_size_bytes": num(lvm_vg, "vg_extent_size"),
        "complete": true,
        "missing_pvs": 0,
        "missing_pv_uuids": [],
        "mda_count": num(lvm_vg, "vg_mda_count"),
        "mda_used_count": num(lvm_vg, "vg_mda_used_count"),
        "duplicate_pvs": 0,
    });
    assert_eq!(*vg, expected);
    assert_ne!(vg["size_bytes"], vg["free_bytes"], "the LV uses space");

    let mut lvm_pvs = fleet.report(
        "pvs",
        "pv_name,pv_uuid,vg_name,vg_uuid,pv_size,pv_free,dev_size,pe_start,pv_pe_count,\
         pv_pe_alloc_count,pv_mda_count,pv_mda_used_count",
    );
    lvm_pvs.sort_by(|a, b| a["pv_name"].cmp(&b["pv_name"]));
    let expected: Vec<Value> = lvm_pvs
        .iter()
        .map(|r| {
            serde_json::json!({
                "device": r["pv_name"],
                "uuid": r["pv_uuid"],
                "vg_name": r["vg_name"],
                "vg_uuid": r["vg_uuid"],
                "size_bytes": num(r, "pv_size"),
                "free_bytes": num(r, "pv_free"),
                "dev_size_bytes": num(r, "dev_size"),
                "pe_start_bytes": num(r, "pe_start"),
                "pe_count": num(r, "pv_pe_count"),
                "pe_alloc": num(r, "pv_pe_alloc_count"),
                "mda_count": num(r, "pv_mda_count"),
                "mda_in_use": num(r, "pv_mda_used_count"),
                "duplicate": false,
            })
        })
        .collect();
    let pvs = json_array(&weir_ok(&["pvs", "--json"], &fleet));
    assert_eq!(pvs, expected);

    // The tables name the same VG and PVs.
    let table = weir_ok(&["vgs"], &fleet);
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header[0], "VG");
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row[..3], [fleet.vg_name(), "3", "1"]);
    assert_eq!(lines.next(), None);
    let table = weir_ok(&["pvs"], &fleet);
    let devices: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let mut paths = fleet.paths();
    paths.sort();
    assert_eq!(devices, paths, "sorted by path");
}

/// LVM's `lvs --reportformat json --units b --nosuffix` of the fleet's VG:
/// one row per segment, as LVM gives them with segment fields.
fn lvm_lvs(fleet: &Fleet) -> Vec<BTreeMap<String, String>> {
    fleet.report_json(
        "lvs",
        "lv_name,lv_uuid,vg_name,vg_uuid,lv_size,segtype,stripes,devices,lv_attr,\
         stripe_size,seg_start_pe,seg_size_pe",
        &[fleet.vg_name()],
    )
}

/// `lv_attr` without state and open, which only device-mapper knows
/// (weir prints `X` for both, as LVM does without device-mapper).
fn known_attr(a: &str) -> String {
    a.char_indices()
        .map(|(i, c)| if i == 4 || i == 5 { '?' } else { c })
        .collect()
}

#[test]
fn lvs_json_agrees_with_lvm() {
    if skipping() {
        return;
    }
    let fleet = lv_fleet("lvs");
    let rows = lvm_lvs(&fleet);
    // LVM's rows, one per segment, grouped by LV (in LVM's order).
    let mut by_lv: Vec<(String, Vec<&BTreeMap<String, String>>)> = Vec::new();
    for r in &rows {
        match by_lv.last_mut() {
            Some((name, segs)) if *name == r["lv_name"] => segs.push(r),
            _ => by_lv.push((r["lv_name"].clone(), vec![r])),
        }
    }
    let names: Vec<&str> = by_lv.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["grown", "lin", "ro", "str"], "{rows:#?}");

    let lvs = json_array(&weir_ok(&["lvs", "--json"], &fleet));
    assert_eq!(lvs.len(), by_lv.len(), "{lvs:#?}");
    for (lv, (name, segs)) in lvs.iter().zip(&by_lv) {
        let first = segs[0];
        assert_eq!(lv["name"], name.as_str());
        assert_eq!(lv["uuid"], first["lv_uuid"].as_str());
        assert_eq!(lv["vg_name"], first["vg_name"].as_str());
        assert_eq!(lv["vg_uuid"], first["vg_uuid"].as_str());
        assert_eq!(lv["size_bytes"], num(first, "lv_size"));
        let attr = lv["attr"].as_str().expect("attr");
        assert_eq!(known_attr(attr), known_attr(&first["lv_attr"]), "{name}");
        assert_eq!(&attr[4..6], "XX", "{name}");
        assert_eq!(lv["seg_count"], segs.len());
        let got = lv["segments"].as_array().expect("segments");
        assert_eq!(got.len(), segs.len(), "{name}");
        for (g, want) in got.iter().zip(segs) {
            assert_eq!(g["segtype"], want["segtype"].as_str(), "{name}");
            assert_eq!(g["stripes"], num(want, "stripes"), "{name}");
            assert_eq!(g["stripe_size_bytes"], num(want, "stripe_size"), "{name}");
            assert_eq!(g["start_extent"], num(want, "seg_start_pe"), "{name}");
            assert_eq!(g["extent_count"], num(want, "seg_size_pe"), "{name}");
            assert_eq!(g["devices"], want["devices"].as_str(), "{name}");
        }
        // LVM's single-row fields: its own for one segment, joined as
        // LVM joins a segment's devices for more.
        let devices: Vec<&str> = segs.iter().map(|s| s["devices"].as_str()).collect();
        assert_eq!(lv["devices"], devices.join(","), "{name}");
        if segs.len() == 1 {
            assert_eq!(lv["segtype"], first["segtype"].as_str());
            assert_eq!(lv["stripes"], num(first, "stripes"));
        }
    }
    // The LV extended onto another PV has two linear segments there.
    let grown = &lvs[0];
    assert_eq!(
        (grown["segtype"].clone(), grown["stripes"].clone()),
        ("linear".into(), 1.into())
    );
    assert!(
        grown["devices"]
            .as_str()
            .unwrap()
            .ends_with(&format!("{}(1)", fleet.path(2))),
        "{grown}"
    );
    assert_eq!(lvs[3]["segtype"], "striped");
    assert_eq!(lvs[3]["stripes"], 2);
    assert_eq!(known_attr(lvs[2]["attr"].as_str().unwrap()), "-ra-??----");
}

#[test]
fn lvs_table_columns_follow_o() {
    if skipping() {
        return;
    }
    let fleet = lv_fleet("lvo");
    let rows = lvm_lvs(&fleet);
    let words = |text: &str| -> Vec<Vec<String>> {
        text.lines()
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .collect()
    };

    // The default columns: a row per LV.
    let t = words(&weir_ok(&["lvs"], &fleet));
    assert_eq!(t[0], ["LV", "VG", "ATTR", "LSIZE"]);
    assert_eq!(t.len(), 1 + 4);
    assert_eq!(t[1][..3], ["grown", fleet.vg_name(), "-wi-XX----"]);
    // In LVM's default units (`--units r`), as `lvs` prints it.
    assert_eq!(t[1][3], "8.00m");

    // Chosen by LVM's names: a row per segment once a segment's is there.
    let t = words(&weir_ok(
        &["lvs", "-o", "LV_NAME,segtype,stripes,devices"],
        &fleet,
    ));
    assert_eq!(t[0], ["LV", "TYPE", "#STR", "DEVICES"]);
    let want: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r["lv_name"].clone(),
                r["segtype"].clone(),
                r["stripes"].clone(),
                r["devices"].clone(),
            ]
        })
        .collect();
    assert_eq!(t[1..], want[..]);

    // `+` adds to the defaults.
    let t = words(&weir_ok(&["lvs", "-o", "+seg_count"], &fleet));
    assert_eq!(t[0], ["LV", "VG", "ATTR", "LSIZE", "#SEG"]);
    assert_eq!(t[1][4], "2");

    // And pvs and vgs take -o too.
    let t = words(&weir_ok(&["vgs", "-o", "name,pv_count,lv_count"], &fleet));
    assert_eq!(
        t,
        [
            ["VG", "#PV", "#LV"].map(String::from).to_vec(),
            vec![fleet.vg_name().to_owned(), "3".into(), "4".into()]
        ]
    );
    let t = words(&weir_ok(
        &["pvs", "-o", "pv_name,pv_pe_alloc_count"],
        &fleet,
    ));
    assert_eq!(t[0], ["PV", "ALLOC"]);
    assert_eq!(t.len(), 4);
}

#[test]
fn an_unknown_column_fails_with_status_2_and_lists_the_valid_ones() {
    let out = Command::new(WEIR)
        .args(["lvs", "-o", "lv_name,nope", "--filter", "r|.*|"])
        .stdin(Stdio::null())
        .output()
        .expect("run weir");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert!(
        err.contains("unknown column \"nope\" for weir lvs"),
        "{err}"
    );
    assert!(err.contains("DEVICES (devices)"), "{err}");
    let out = Command::new(WEIR)
        .args(["pvs", "-o", "lv_name"])
        .stdin(Stdio::null())
        .output()
        .expect("run weir");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("for weir pvs (valid columns: PV (pv_name)")
    );
}

#[test]
fn the_daemons_lvm_listings_are_the_direct_bytes() {
    if skipping() {
        return;
    }
    let fleet = lv_fleet("dmn");
    let state = tempfile::tempdir().expect("state directory");
    let socket = state.path().join("weir.sock");
    let mut run_args = vec!["--mounts-enabled=false".to_owned()];
    for p in fleet.filter_patterns() {
        run_args.push("--devices-filter".to_owned());
        run_args.push(p);
    }
    let run_args: Vec<&str> = run_args.iter().map(String::as_str).collect();
    let daemon = daemon_child::Daemon::start(state.path(), &socket, &run_args);
    daemon_child::sync(&socket);
    let via = |args: &[&str]| {
        String::from_utf8(daemon_child::ok(daemon_child::weir(&socket, args))).unwrap()
    };
    let direct = |args: &[&str]| {
        let mut a = vec!["--direct"];
        a.extend_from_slice(args);
        weir_ok(&a, &fleet)
    };
    let mut api = daemon_child::client(&socket);
    let get = |c: &mut weir_client::Client, target: &str| {
        let mut body = Vec::new();
        c.get_text(target, &mut body).expect(target);
        String::from_utf8(body).unwrap()
    };
    for (listing, args, target) in [
        ("lvs", &["lvs", "--json"][..], "/v1/lvm/lvs?format=json"),
        ("lvs", &["lvs"], "/v1/lvm/lvs?format=text"),
        (
            "lvs",
            &["lvs", "-o", "+devices,segtype"],
            "/v1/lvm/lvs?format=text&columns=%2Bdevices%2Csegtype",
        ),
        (
            "pvs",
            &["pvs", "-o", "name,size"],
            "/v1/lvm/pvs?format=text&columns=name,size",
        ),
        ("vgs", &["vgs", "--json"], "/v1/lvm/vgs?format=json"),
    ] {
        let d = direct(args);
        assert!(
            d.contains(&fleet.path(0)) || d.contains(fleet.vg_name()),
            "{listing}: {d}"
        );
        assert_eq!(get(&mut api, target), d, "{target}");
        assert_eq!(via(args), d, "weir {args:?} through the daemon");
    }
    let lines = direct(&["lvs", "-o", "+devices,segtype"]).lines().count();
    assert_eq!(lines, 1 + 5, "a row per segment: grown has two");
    // A bad column is the API's 400, said as such.
    let e = api
        .get_text("/v1/lvm/lvs?format=text&columns=nope", &mut Vec::new())
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("unknown column \"nope\" for weir lvs"),
        "{msg}"
    );
    assert!(msg.contains("bad_request"), "{msg}");
    daemon.stop();
}

#[test]
fn devices_json_lists_the_loop_devices_with_their_pv_and_vg() {
    if skipping() {
        return;
    }
    let fleet = Fleet::build("dev", &[1, 0], 0, 0).expect("make the fleet");
    let lvm_pvs = fleet.report("pvs", "pv_name,pv_uuid");
    let devices = json_array(&weir_ok(&["devices", "--json"], &fleet));
    let contract = [
        "name",
        "path",
        "major",
        "minor",
        "size_bytes",
        "read_only",
        "removable",
        "rotational",
        "type",
        "backing_file",
        "model",
        "serial",
        "wwid",
        "partitions",
        "holders",
        "slaves",
        "pv_uuid",
        "vg_name",
        "error",
    ];
    for d in &devices {
        let k = keys(d);
        for key in contract {
            assert!(k.contains(&key), "no {key} in {d}");
        }
    }
    for (i, path) in fleet.paths().iter().enumerate() {
        let d = devices
            .iter()
            .find(|d| d["path"] == path.as_str())
            .unwrap_or_else(|| panic!("{path} not listed"));
        let uuid = &lvm_pvs.iter().find(|r| r["pv_name"] == *path).unwrap()["pv_uuid"];
        assert_eq!(d["name"], fleet.name(i));
        assert_eq!(d["type"], "loop");
        assert_eq!(d["major"], 7);
        assert_eq!(d["minor"], fleet.minor(i));
        assert_eq!(d["size_bytes"], 16u64 << 20);
        assert_eq!(d["backing_file"], fleet.file(i).to_str().unwrap());
        assert_eq!(d["pv_uuid"], uuid.as_str());
        assert_eq!(d["vg_name"], fleet.vg_name());
        assert_eq!(d["error"], Value::Null);
    }
    // The filter kept every other device unread.
    let ours = fleet.paths();
    for d in devices
        .iter()
        .filter(|d| !ours.iter().any(|p| d["path"] == p.as_str()))
    {
        assert_eq!(d["pv_uuid"], Value::Null, "{d}");
        assert_eq!(d["error"], Value::Null, "{d}");
    }
}

/// Regression test: a `--filter` whose regex does not compile used to say
/// only "bad regex", dropping the regex engine's explanation.
#[test]
fn a_bad_filter_fails_with_status_1_and_says_why() {
    let run = |pattern: &str| {
        Command::new(WEIR)
            .args(["vgs", "--filter", "a|^/dev/loop|", "--filter", pattern])
            .stdin(Stdio::null())
            .output()
            .expect("run weir")
    };
    let check = |out: &Output, wanted: &[&str]| {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(out.stdout.is_empty());
        assert!(err.starts_with("weir: error: --filter: "), "{err}");
        for w in wanted {
            assert!(err.contains(w), "no {w:?} in {err}");
        }
    };
    // The second pattern is #2: messages count patterns from 1.
    check(&run("a|(|"), &["pattern #2", "bad regex", "unclosed group"]);
    check(&run("x|a|"), &["pattern #2", "must begin with 'a' or 'r'"]);
    check(&run("a|loop"), &["pattern #2", "not terminated by '|'"]);
}

#[test]
fn devices_watch_prints_and_logs_the_vg_assembling_and_stops_on_sigint() {
    if skipping() {
        return;
    }
    let mut fleet = Fleet::build("wat", &[1, 0, 2], 0, 0).expect("make the fleet");
    let uuids = fleet.report("pvs", "pv_name,pv_uuid");
    let uuid_of =
        |path: &str| uuids.iter().find(|r| r["pv_name"] == path).unwrap()["pv_uuid"].clone();
    let vg_row = &fleet.report("vgs", "vg_uuid,vg_seqno")[0];
    let (vg_uuid, seqno) = (vg_row["vg_uuid"].clone(), vg_row["vg_seqno"].clone());
    let vg = fleet.vg_name().to_owned();
    for i in 0..fleet.members() {
        fleet.detach(i).expect("detach");
    }

    // `touch` run in its own directory: the VG name it gets is the file
    // it makes there.
    let activated = fleet.scratch().join("activated");
    std::fs::create_dir(&activated).unwrap();
    let w = Weir::new();
    let mut args = vec!["devices", "watch", "--on-vg-complete", "touch"];
    let filters = filter_args(&fleet);
    args.extend(filters.iter().map(String::as_str));
    let mut child = w
        .cmd(&args)
        .current_dir(&activated)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn weir devices watch");
    let out = lines_of(child.stdout.take().unwrap());
    let err = lines_of(child.stderr.take().unwrap());
    let mut child = Reap(child);
    let (mut out_seen, mut err_seen) = (Vec::new(), Vec::new());
    wait_line(
        &err,
        &mut err_seen,
        LINE_TIMEOUT,
        "the watching line",
        |l| l.starts_with("weir: watching block devices ("),
    );

    for i in 0..fleet.members() {
        fleet.attach(i).expect("attach");
        let want = format!("PV_FOUND {} 7:{} ", fleet.name(i), fleet.minor(i));
        let line = wait_line(&out, &mut out_seen, LINE_TIMEOUT, &want, |l| {
            l.starts_with(&want)
        });
        assert_eq!(
            line,
            format!("{want}uuid={} vg={vg}", uuid_of(&fleet.path(i)))
        );
    }
    let want = format!("VG_COMPLETE {vg} ");
    let line = wait_line(&out, &mut out_seen, LINE_TIMEOUT, &want, |l| {
        l.starts_with(&want)
    });
    assert_eq!(line, format!("{want}uuid={vg_uuid} seqno={seqno} pvs=3"));
    let deadline = Instant::now() + LINE_TIMEOUT;
    while !activated.join(&vg).exists() {
        assert!(Instant::now() < deadline, "touch {vg} did not run");
        std::thread::sleep(Duration::from_millis(10));
    }

    let pid = rustix::process::Pid::from_child(&child.0);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT");
    let status = child.wait_exit(LINE_TIMEOUT);
    // The rest of the output, now that the pipes are closed.
    out_seen.extend(out.iter());
    err_seen.extend(err.iter());
    assert!(
        status.success(),
        "{status}; stderr:\n{}",
        err_seen.join("\n")
    );
    let ours: Vec<&String> = out_seen
        .iter()
        .filter(|l| {
            l.split(' ')
                .nth(1)
                .is_some_and(|n| n == vg || fleet.paths().contains(&format!("/dev/{n}")))
        })
        .collect();
    let kinds: Vec<&str> = ours.iter().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "DEVICE_CHANGE",
            "PV_FOUND",
            "DEVICE_CHANGE",
            "PV_FOUND",
            "DEVICE_CHANGE",
            "PV_FOUND",
            "VG_COMPLETE"
        ],
        "{ours:#?}"
    );
    let change = format!(
        "DEVICE_CHANGE {} 7:{} size={} backing_file={}",
        fleet.name(0),
        fleet.minor(0),
        16u64 << 20,
        fleet.file(0).display()
    );
    assert!(ours[0].starts_with(&change), "{}", ours[0]);

    // The log holds the records, and the command's status. A text line is
    // `INDEX TYPE TIME flags=F t=T p=P NAME FIELDS...`.
    let tail = w.ok(&["log", "tail"], b"");
    let logged: Vec<(&str, &str)> = tail
        .lines()
        .map(|l| {
            let t: Vec<&str> = l.split(' ').collect();
            (t[1], t[6])
        })
        .filter(|(_, name)| *name == vg || fleet.paths().contains(&format!("/dev/{name}")))
        .collect();
    let (n0, n1, n2) = (fleet.name(0), fleet.name(1), fleet.name(2));
    assert_eq!(
        logged,
        [
            ("DEVICE_CHANGE", n0.as_str()),
            ("PV_FOUND", &n0),
            ("DEVICE_CHANGE", &n1),
            ("PV_FOUND", &n1),
            ("DEVICE_CHANGE", &n2),
            ("PV_FOUND", &n2),
            ("VG_COMPLETE", &vg),
        ],
        "{tail}"
    );
    let mark = tail
        .lines()
        .find(|l| l.contains(" MARK ") && l.contains(" on-vg-complete "))
        .expect("the on-vg-complete MARK");
    assert!(
        mark.ends_with(&format!(" vg={vg} command=touch status=0")),
        "{mark}"
    );
    assert!(
        tail.lines()
            .next()
            .unwrap()
            .contains(" block devices read ")
    );
    assert!(w.ok(&["log", "verify"], b"").contains(": ok"));
}

/// `setpriv` as uid/gid 65534 with `args`, and no $HOME.
fn as_nobody(args: &[String]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", WEIR])
        .args(args)
        .env_remove("HOME")
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::null())
        .output()
        .expect("run setpriv")
}

#[test]
fn unprivileged_listings_warn_per_unreadable_device_and_succeed() {
    if skipping() || privileged::skip(&["setpriv"]) {
        return;
    }
    if !as_nobody(&["--version".to_owned()]).status.success() {
        eprintln!("skipping: uid 65534 cannot run {WEIR}");
        return;
    }
    let fleet = Fleet::build("nob", &[1, 1], 0, 0).expect("make the fleet");
    let with_filter = |cmd: &[&str]| {
        let mut a: Vec<String> = cmd.iter().map(|s| (*s).to_owned()).collect();
        a.extend(filter_args(&fleet));
        a
    };

    for cmd in [["vgs", "--json"], ["pvs", "--json"]] {
        let out = as_nobody(&with_filter(&cmd));
        assert_ok(&format!("weir {cmd:?} as uid 65534"), &out);
        let listed = json_array(&String::from_utf8(out.stdout).unwrap());
        assert!(listed.is_empty(), "{listed:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), fleet.paths().len(), "{err}");
        for path in fleet.paths() {
            let line = err
                .lines()
                .find(|l| l.starts_with(&format!("weir: warning: {path}: ")))
                .unwrap_or_else(|| panic!("no warning for {path}:\n{err}"));
            assert!(line.contains("Permission denied"), "{line}");
        }
    }

    // `weir devices` carries the reason in each device's `error`.
    let out = as_nobody(&with_filter(&["devices", "--json"]));
    assert_ok("weir devices --json as uid 65534", &out);
    let devices = json_array(&String::from_utf8(out.stdout).unwrap());
    for path in fleet.paths() {
        let d = devices
            .iter()
            .find(|d| d["path"] == path.as_str())
            .unwrap_or_else(|| panic!("{path} not listed"));
        assert_eq!(d["pv_uuid"], Value::Null);
        let e = d["error"].as_str().unwrap_or_else(|| panic!("{d}"));
        assert!(e.contains("Permission denied"), "{e}");
    }

    // Unfiltered: whatever it cannot read, it lists what it can.
    let out = as_nobody(&["vgs".to_owned()]);
    assert_ok("weir vgs as uid 65534", &out);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.lines().all(|l| l.starts_with("weir: warning: ")),
        "{err}"
    );
    assert!(
        String::from_utf8(out.stdout).unwrap().starts_with("VG "),
        "a table header"
    );
}
