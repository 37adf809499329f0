//! The fleet's LVM commands as tests use them: each asserts that it
//! succeeded, so that a test reads as the commands it runs, and the VG's
//! life one command at a time with the records each must give.

use std::collections::BTreeMap;
use std::process::Output;

use super::Fleet;
use crate::env::report_rows;

impl Fleet {
    /// Runs `lvm ARGS...` and asserts it succeeded.
    pub fn lvm_ok(&self, args: &[&str]) -> Output {
        let out = self.lvm(args).expect("run lvm");
        assert!(
            out.status.success(),
            "lvm {args:?} failed with {}:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// `lvcreate` of LV `name`, `extents` extents, with `args` (stripes,
    /// permissions, ...) and then the PVs (slots) it must use, if any.
    /// Without device-mapper the LV is never activated nor zeroed.
    pub fn lvcreate(&self, name: &str, extents: u32, args: &[&str], on: &[usize]) {
        let n = extents.to_string();
        let mut a = vec![
            "lvcreate",
            "--driverloaded",
            "n",
            "-an",
            "--zero",
            "n",
            "-l",
            &n,
            "-n",
            name,
        ];
        a.extend_from_slice(args);
        a.push(&self.vg);
        let paths: Vec<String> = on.iter().map(|&i| self.path(i)).collect();
        a.extend(paths.iter().map(String::as_str));
        self.lvm_ok(&a);
    }

    /// `lvextend` of LV `name` by `extents` extents, on slot `on`'s PV: a
    /// second segment when that is not where the LV ends.
    pub fn lvextend(&self, name: &str, extents: u32, on: usize) {
        let lv = format!("{}/{name}", self.vg);
        let n = format!("+{extents}");
        let path = self.path(on);
        self.lvm_ok(&["lvextend", "--driverloaded", "n", "-l", &n, &lv, &path]);
    }

    /// `pvcreate` of slots `on`, then, unless `vg_on` is empty, `vgcreate`
    /// of the fleet's VG over slots `vg_on`.
    pub fn make_vg(&self, on: &[usize], vg_on: &[usize]) {
        let paths = |slots: &[usize]| slots.iter().map(|&i| self.path(i)).collect::<Vec<_>>();
        let mut a = vec!["pvcreate".to_owned(), "-y".to_owned()];
        a.extend(paths(on));
        self.run(&a);
        if !vg_on.is_empty() {
            let mut a = vec!["vgcreate".to_owned(), self.vg.clone()];
            a.extend(paths(vg_on));
            self.run(&a);
        }
    }

    /// `lvremove` of LV `name`.
    pub fn lvremove(&self, name: &str) {
        let lv = format!("{}/{name}", self.vg);
        self.lvm_ok(&["lvremove", "--driverloaded", "n", "-y", &lv]);
    }

    /// `lvm ARGS...`, asserted to succeed.
    pub fn run(&self, args: &[String]) {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        self.lvm_ok(&a);
    }

    /// A VG's life over four blank slots, one LVM command at a time, with
    /// the record types each must give (docs/records.md): pvcreate,
    /// vgcreate, a linear and a striped lvcreate, vgextend, lvextend,
    /// lvrename, vgrename, lvremove, vgreduce, pvremove, vgremove.
    pub fn life(&self) -> Vec<(Vec<String>, Vec<&'static str>)> {
        let vg = self.vg.clone();
        let renamed = format!("{vg}r");
        let p = |i: usize| self.path(i);
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let dm = "--driverloaded";
        vec![
            (
                args(&["pvcreate", "-y", &p(0), &p(1), &p(2), &p(3)]),
                vec!["PV_FOUND"; 4],
            ),
            (
                args(&["vgcreate", &vg, &p(0), &p(1), &p(2)]),
                vec!["PV_CHANGE", "PV_CHANGE", "PV_CHANGE", "VG_COMPLETE"],
            ),
            (
                args(&[
                    "lvcreate", dm, "n", "-an", "-Zn", "-l", "1", "-n", "lin", &vg,
                ]),
                vec!["VG_CHANGE", "LV_ADD"],
            ),
            (
                args(&[
                    "lvcreate", dm, "n", "-an", "-Zn", "-i", "2", "-l", "2", "-n", "str", &vg,
                ]),
                vec!["VG_CHANGE", "LV_ADD"],
            ),
            (
                args(&["vgextend", &vg, &p(3)]),
                vec!["VG_CHANGE", "PV_CHANGE"],
            ),
            (
                args(&["lvextend", dm, "n", "-l", "+1", &format!("{vg}/lin")]),
                vec!["VG_CHANGE", "LV_CHANGE"],
            ),
            (
                args(&["lvrename", dm, "n", &vg, "lin", "lin2"]),
                vec!["VG_CHANGE", "LV_CHANGE"],
            ),
            (args(&["vgrename", &vg, &renamed]), vec!["VG_CHANGE"]),
            (
                args(&["lvremove", dm, "n", "-y", &format!("{renamed}/lin2")]),
                vec!["VG_CHANGE", "LV_REMOVE"],
            ),
            (
                args(&["vgreduce", &renamed, &p(3)]),
                vec!["VG_CHANGE", "PV_CHANGE"],
            ),
            (args(&["pvremove", "-y", &p(3)]), vec!["PV_LOST"]),
            (
                args(&["vgremove", dm, "n", "-f", &renamed]),
                // One wipe: its LV goes with the VG, its PVs are orphans.
                vec![
                    "LV_REMOVE",
                    "PV_CHANGE",
                    "PV_CHANGE",
                    "PV_CHANGE",
                    "VG_REMOVE",
                ],
            ),
        ]
    }

    /// LVM's JSON report (`--reportformat json`) of `what` (`pvs`, `vgs`,
    /// `lvs`) and `fields`, in bytes: one map per row (per segment for
    /// `lvs` with segment fields), every value a string as LVM gives it.
    pub fn report_json(
        &self,
        what: &str,
        fields: &str,
        extra: &[&str],
    ) -> Vec<BTreeMap<String, String>> {
        let mut args = vec![
            what,
            "--driverloaded",
            "n",
            "--reportformat",
            "json",
            "--units",
            "b",
            "--nosuffix",
            "-o",
            fields,
        ];
        args.extend_from_slice(extra);
        let out = self.lvm_ok(&args);
        report_rows(&out.stdout, what, &what[..2])
            .expect("LVM's JSON report")
            .iter()
            .map(|row| {
                row.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().expect("a string").to_owned()))
                    .collect()
            })
            .collect()
    }

    /// LVM's own report (`vgs` or `pvs`) of `fields` (comma list), in
    /// bytes: one map per row, keyed by field name (`vg_name`, ...).
    pub fn report(&self, what: &str, fields: &str) -> Vec<BTreeMap<String, String>> {
        let out = self.lvm_ok(&[
            what,
            "--noheadings",
            "--nosuffix",
            "--units",
            "b",
            "--nameprefixes",
            "--unquoted",
            "--separator",
            "|",
            "-o",
            fields,
        ]);
        String::from_utf8(out.stdout)
            .expect("lvm's report is UTF-8")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|l| {
                l.split('|')
                    .map(|kv| {
                        let (k, v) = kv.split_once('=').expect("KEY=VALUE");
                        let k = k.strip_prefix("LVM2_").unwrap_or(k).to_ascii_lowercase();
                        (k, v.to_owned())
                    })
                    .collect()
            })
            .collect()
    }
}
