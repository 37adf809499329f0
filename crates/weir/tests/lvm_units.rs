//! `weir pvs|vgs|lvs --units U [--nosuffix]` against LVM2's own reports
//! of the same VG on loop devices: every size cell is the string LVM
//! prints, in LVM's default units and in each of `--units`' letters.
//!
//! Needs root, losetup and lvm, and prints `skipping: ...` without them.

#[path = "support/lvm_cli.rs"]
mod lvm_cli;
#[allow(dead_code)]
#[path = "support/privileged.rs"]
mod privileged;

use lvm_cli::{lv_fleet, skipping, weir_ok};
use weir_lvmfleet::Fleet;

/// Each report with columns that hold sizes, the first naming the row.
const REPORTS: [(&str, &str); 3] = [
    ("pvs", "pv_name,pv_size,pv_free,dev_size,pe_start"),
    ("vgs", "vg_name,vg_size,vg_free,vg_extent_size"),
    (
        "lvs",
        "lv_name,lv_size,seg_start,seg_size,stripe_size,seg_start_pe",
    ),
];

/// LVM's rows of `what` with these `units`: its cells, trimmed, sorted
/// by row so that LVM's order and weir's need not agree.
fn lvm_rows(fleet: &Fleet, what: &str, fields: &str, units: &[&str]) -> Vec<Vec<String>> {
    let mut args = vec![
        what,
        "--driverloaded",
        "n",
        "--noheadings",
        "--separator",
        "|",
        "-o",
        fields,
    ];
    args.extend_from_slice(units);
    let select = format!("vg_name={}", fleet.vg_name());
    args.extend(["--select", &select]);
    let out = fleet.lvm_ok(&args);
    let mut rows: Vec<Vec<String>> = String::from_utf8(out.stdout)
        .expect("LVM's report is UTF-8")
        .lines()
        .map(|l| l.split('|').map(|c| c.trim().to_owned()).collect())
        .collect();
    rows.sort();
    rows
}

/// weir's table of the same columns: its cells (a human zero, `0 `,
/// trimmed as LVM's are), sorted by row, without the header.
fn weir_rows(fleet: &Fleet, what: &str, fields: &str, units: &[&str]) -> Vec<Vec<String>> {
    let mut args = vec![what, "--direct", "-o", fields];
    args.extend_from_slice(units);
    let text = weir_ok(&args, fleet);
    let mut rows: Vec<Vec<String>> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    rows.sort();
    rows
}

#[test]
fn sizes_read_as_lvms_in_every_unit() {
    if skipping() {
        return;
    }
    let fleet = lv_fleet("units");
    let mut compared = 0;
    for units in [
        &[][..],
        &["--units", "r"],
        &["--units", "h"],
        &["--units", "H"],
        &["--units", "R"],
        &["--units", "b"],
        &["--units", "B", "--nosuffix"],
        &["--units", "s"],
        &["--units", "k"],
        &["--units", "m", "--nosuffix"],
        &["--units", "g"],
        &["--units", "t"],
        &["--units", "K"],
        &["--units", "M"],
        &["--units", "G"],
        &["--units", "4m"],
        &["--units", "h", "--nosuffix"],
    ] {
        for (what, fields) in REPORTS {
            let lvm = lvm_rows(&fleet, what, fields, units);
            let weir = weir_rows(&fleet, what, fields, units);
            assert!(!lvm.is_empty(), "{what} {units:?}: LVM reported nothing");
            assert_eq!(weir, lvm, "weir {what} {units:?}");
            compared += lvm.len();
        }
    }
    // Every report, in every unit: a VG, its three PVs, and the LVs'
    // segments (grown has two).
    assert!(compared >= 17 * (1 + 3 + 5), "{compared}");
}

#[test]
fn bad_units_fail_with_status_2_and_say_which_are_known() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["pvs", "--direct", "--units", "x"])
        .output()
        .expect("run weir");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad units \"x\": one of h, H, r, R"), "{err}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["vgs", "--direct", "--json", "--units", "m"])
        .output()
        .expect("run weir");
    assert_eq!(out.status.code(), Some(2), "--units with --json: {out:?}");
}
