//! What the LVM CLI tests share: whether real LVM2 on loop devices is
//! available, `weir` run filtered to a fleet's own devices, and a VG with
//! LVs of each shape.
#![allow(dead_code)]

use std::process::{Command, Stdio};

use weir_lvmfleet::Fleet;

use crate::privileged::assert_ok;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// Whether the privileged LVM tests cannot run here; says why once.
pub(crate) fn skipping() -> bool {
    match weir_lvmfleet::unavailable() {
        Some(why) => {
            eprintln!("skipping: {why}");
            true
        }
        None => false,
    }
}

/// `--filter P` for each of the fleet's patterns.
pub(crate) fn filter_args(fleet: &Fleet) -> Vec<String> {
    fleet
        .filter_patterns()
        .into_iter()
        .flat_map(|p| ["--filter".to_owned(), p])
        .collect()
}

/// `weir ARGS... <the fleet's filter>`, asserted to succeed; its stdout.
pub(crate) fn weir_ok(args: &[&str], fleet: &Fleet) -> String {
    let out = Command::new(WEIR)
        .args(args)
        .args(filter_args(fleet))
        .stdin(Stdio::null())
        .output()
        .expect("run weir");
    assert_ok(&format!("weir {args:?}"), &out);
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

/// A VG of three PVs holding `lin` (linear, on the first PV), `str` (two
/// stripes of 64 KiB), `grown` (made on the first PV and extended onto
/// the third: two segments) and `ro` (read-only, `--alloc anywhere`).
pub(crate) fn lv_fleet(tag: &str) -> Fleet {
    let fleet = Fleet::build(tag, &[1, 1, 1], 0, 0).expect("make the fleet");
    fleet.lvcreate("lin", 1, &[], &[0]);
    fleet.lvcreate("str", 2, &["-i", "2", "-I", "64k"], &[1, 2]);
    fleet.lvcreate("grown", 1, &[], &[0]);
    fleet.lvextend("grown", 1, 2);
    fleet.lvcreate("ro", 1, &["-pr", "--alloc", "anywhere"], &[1]);
    fleet
}
