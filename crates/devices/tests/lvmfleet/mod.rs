//! A VG on loop devices, made by real LVM2, for the privileged tests: a
//! guard that builds sparse files, attaches them, runs pvcreate, vgcreate
//! and lvcreate on them with a private `LVM_SYSTEM_DIR`, lets a test detach
//! and reattach them, and tears everything down on drop — only its own
//! devices, by path, even when the test fails.
//!
//! Tests filter the tracker to exactly their own devices, and a device
//! reattached must come back under the same path for that filter to hold.
//! So the loop devices are not taken with `losetup -f` (which hands the
//! lowest free number to whoever asks first, and could give ours away
//! between a detach and the reattach) but at fixed numbers from a range
//! far above what `-f` hands out ([`loopnum`]), each reserved for the
//! fleet's lifetime by a lock file in /run/lock that every fleet, in any
//! process, respects; a number held or attached elsewhere is skipped. The
//! kernel creates a missing loop device on `losetup /dev/loopN`; it stays,
//! unbound, afterwards, like those `-f` creates.
//!
//! Also usable from the weir crate's tests (with `#[path]`), hence no use
//! of weir-devices here.

// Each test binary uses only part of this module.
#![allow(dead_code)]

#[path = "../loopdev/mod.rs"]
mod loopdev;
mod loopnum;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use loopnum::{Reservation, attach_free, losetup_at, wait_unbound};

/// Each PV's file: 3 extents of 4 MiB after the 1 MiB data offset, with
/// room for a second metadata area at the end.
const PV_BYTES: u64 = 16 << 20;
/// The lvm.conf the project's rules give for tests: no devices file, no
/// udev, and no activation (this VM has no device-mapper).
const LVM_CONF: &str = "devices { use_devicesfile = 0
obtain_device_list_from_udev = 0 }
activation { udev_sync = 0
udev_rules = 0 }
global { activation = 0 }
";

/// Why LVM tests cannot run here, if they cannot.
pub(crate) fn unavailable() -> Option<&'static str> {
    if let Some(why) = loopdev::unavailable() {
        return Some(why);
    }
    // `lvm --version` fails without device-mapper; `lvm version` does not.
    let lvm = Command::new("lvm")
        .arg("version")
        .env("LVM_SUPPRESS_FD_WARNINGS", "1")
        .stdin(Stdio::null())
        .output();
    if !lvm.is_ok_and(|o| o.status.success()) {
        return Some("needs lvm(8) from lvm2");
    }
    None
}

/// One loop device slot: a file and the device number it goes to.
#[derive(Debug)]
struct Slot {
    number: u32,
    file: PathBuf,
    attached: bool,
    /// Keeps the number ours while the slot is detached; released last.
    _reserved: Reservation,
}

/// A VG over loop devices, plus spare slots for copies of its PVs.
#[derive(Debug)]
pub(crate) struct Fleet {
    dir: tempfile::TempDir,
    vg: String,
    /// The members (the VG's PVs) first, then the spares.
    slots: Vec<Slot>,
    members: usize,
    /// Whether vgcreate ran, so that teardown removes the VG.
    vg_created: bool,
}

impl Fleet {
    /// Builds VG `weir<pid><tag>` over one PV per entry of `mda_copies`
    /// (its `--pvmetadatacopies`), with an LV of `lv_extents` extents when
    /// that is not 0, and reserves `spares` more loop device numbers for
    /// [`Fleet::attach_copy`]. Everything is attached when it returns.
    pub(crate) fn build(tag: &str, mda_copies: &[u32], lv_extents: u32, spares: usize) -> Fleet {
        let members = mda_copies.len();
        let mut fleet = Fleet::attached(tag, members, members + spares);
        // The spares only needed their numbers.
        for i in fleet.members..fleet.slots.len() {
            fleet.detach(i);
        }
        for (i, copies) in mda_copies.iter().enumerate() {
            let path = fleet.path(i);
            fleet.lvm_ok(&[
                "pvcreate",
                "-y",
                "--pvmetadatacopies",
                &copies.to_string(),
                &path,
            ]);
        }
        let mut args = vec!["vgcreate".to_owned(), fleet.vg.clone()];
        args.extend((0..fleet.members).map(|i| fleet.path(i)));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fleet.lvm_ok(&args);
        fleet.vg_created = true;
        if lv_extents > 0 {
            let vg = fleet.vg.clone();
            fleet.lvm_ok(&[
                "lvcreate",
                "-an",
                "-Zn",
                "-l",
                &lv_extents.to_string(),
                "-n",
                "lv0",
                &vg,
            ]);
        }
        fleet
    }

    /// `n` attached loop devices of `PV_BYTES`, blank: the test runs the
    /// LVM commands itself. [`Fleet::vg_name`] is a name for the VG it may
    /// make; teardown removes a VG of that name, and every PV label.
    pub(crate) fn blank(tag: &str, n: usize) -> Fleet {
        let mut fleet = Fleet::attached(tag, n, n);
        fleet.vg_created = true;
        fleet
    }

    /// `slots` loop devices of `PV_BYTES` attached, `members` of them the
    /// VG's to be, with the private LVM configuration; no LVM command run.
    fn attached(tag: &str, members: usize, slots: usize) -> Fleet {
        let dir = tempfile::Builder::new()
            .prefix("weir-lvmfleet")
            .tempdir_in("/var/tmp")
            .or_else(|_| tempfile::tempdir())
            .expect("temporary directory");
        std::fs::create_dir(dir.path().join("lvm")).expect("mkdir lvm");
        std::fs::write(dir.path().join("lvm/lvm.conf"), LVM_CONF).expect("write lvm.conf");
        let mut fleet = Fleet {
            dir,
            vg: format!("weir{}{tag}", std::process::id()),
            slots: Vec::new(),
            members,
            vg_created: false,
        };
        for i in 0..slots {
            let file = fleet.dir.path().join(format!("slot{i}.img"));
            let f = std::fs::File::create(&file).expect("create image");
            f.set_len(PV_BYTES).expect("size image");
            let (number, reserved) = attach_free(&file);
            fleet.slots.push(Slot {
                number,
                file,
                attached: true,
                _reserved: reserved,
            });
        }
        fleet
    }

    /// The VG's name.
    pub(crate) fn vg_name(&self) -> &str {
        &self.vg
    }

    /// How many PVs the VG has (slots `0..members()`).
    pub(crate) fn members(&self) -> usize {
        self.members
    }

    /// `/dev/loopN` of slot `i`.
    pub(crate) fn path(&self, i: usize) -> String {
        format!("/dev/{}", self.name(i))
    }

    /// `loopN` of slot `i`.
    pub(crate) fn name(&self, i: usize) -> String {
        format!("loop{}", self.slots[i].number)
    }

    /// The minor number of slot `i` (the major is 7).
    pub(crate) fn minor(&self, i: usize) -> u32 {
        self.slots[i].number
    }

    /// The backing file of slot `i`.
    pub(crate) fn file(&self, i: usize) -> &Path {
        &self.slots[i].file
    }

    /// Every slot's path, members and spares.
    pub(crate) fn paths(&self) -> Vec<String> {
        (0..self.slots.len()).map(|i| self.path(i)).collect()
    }

    /// LVM filter patterns accepting exactly this fleet's devices.
    pub(crate) fn filter_patterns(&self) -> Vec<String> {
        let mut p: Vec<String> = self.paths().iter().map(|d| format!("a|^{d}$|")).collect();
        p.push("r|.*|".to_owned());
        p
    }

    /// The private LVM configuration directory.
    pub(crate) fn lvm_system_dir(&self) -> PathBuf {
        self.dir.path().join("lvm")
    }

    /// A scratch directory that lives as long as the fleet.
    pub(crate) fn scratch(&self) -> &Path {
        self.dir.path()
    }

    /// Detaches slot `i` and waits until sysfs shows it unbound.
    pub(crate) fn detach(&mut self, i: usize) {
        let path = self.path(i);
        let out = Command::new("losetup")
            .arg("-d")
            .arg(&path)
            .stdin(Stdio::null())
            .output()
            .expect("run losetup -d");
        assert!(out.status.success(), "losetup -d {path}: {out:?}");
        self.slots[i].attached = false;
        wait_unbound(self.slots[i].number);
    }

    /// Attaches slot `i` again, at its own number.
    pub(crate) fn attach(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        assert!(!slot.attached, "loop{} is attached already", slot.number);
        let out = losetup_at(slot.number, &slot.file);
        assert!(
            out.status.success(),
            "reattaching {} to loop{}: {}",
            slot.file.display(),
            slot.number,
            String::from_utf8_lossy(&out.stderr)
        );
        slot.attached = true;
    }

    /// Copies member `of`'s file into spare slot `spare` (block for block:
    /// the same PV uuid and metadata) and attaches it.
    pub(crate) fn attach_copy(&mut self, spare: usize, of: usize) {
        assert!(spare >= self.members && of < self.members);
        std::fs::copy(&self.slots[of].file, &self.slots[spare].file).expect("copy a PV image");
        self.attach(spare);
    }

    /// Runs `lvm ARGS...` restricted to this fleet's devices; returns its
    /// output, whatever the status.
    pub(crate) fn lvm(&self, args: &[&str]) -> Output {
        let filter: Vec<String> = self
            .filter_patterns()
            .iter()
            .map(|p| format!("\"{p}\""))
            .collect();
        // No hints: lvm would otherwise rewrite the host's /run/lvm/hints.
        let config = format!(
            "devices {{ hints = \"none\" filter = [ {} ] }}",
            filter.join(", ")
        );
        let (cmd, rest) = args.split_first().expect("an lvm command");
        Command::new("lvm")
            .arg(cmd)
            .arg("--config")
            .arg(config)
            .args(rest)
            .env("LVM_SYSTEM_DIR", self.lvm_system_dir())
            .env("LVM_SUPPRESS_FD_WARNINGS", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run lvm")
    }

    /// Runs `lvm ARGS...` and asserts it succeeded.
    pub(crate) fn lvm_ok(&self, args: &[&str]) -> Output {
        let out = self.lvm(args);
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
    pub(crate) fn lvcreate(&self, name: &str, extents: u32, args: &[&str], on: &[usize]) {
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
    pub(crate) fn lvextend(&self, name: &str, extents: u32, on: usize) {
        let lv = format!("{}/{name}", self.vg);
        let n = format!("+{extents}");
        let path = self.path(on);
        self.lvm_ok(&["lvextend", "--driverloaded", "n", "-l", &n, &lv, &path]);
    }

    /// `pvcreate` of slots `on`, then, unless `vg_on` is empty, `vgcreate`
    /// of the fleet's VG over slots `vg_on`.
    pub(crate) fn make_vg(&self, on: &[usize], vg_on: &[usize]) {
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
    pub(crate) fn lvremove(&self, name: &str) {
        let lv = format!("{}/{name}", self.vg);
        self.lvm_ok(&["lvremove", "--driverloaded", "n", "-y", &lv]);
    }

    /// `lvm ARGS...`, asserted to succeed.
    pub(crate) fn run(&self, args: &[String]) {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        self.lvm_ok(&a);
    }

    /// A VG's life over four blank slots, one LVM command at a time, with
    /// the record types each must give (docs/records.md): pvcreate,
    /// vgcreate, a linear and a striped lvcreate, vgextend, lvextend,
    /// lvrename, vgrename, lvremove, vgreduce, pvremove, vgremove.
    pub(crate) fn life(&self) -> Vec<(Vec<String>, Vec<&'static str>)> {
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
    pub(crate) fn report_json(
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
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("LVM's JSON");
        v["report"][0][&what[..2]]
            .as_array()
            .expect("a report array")
            .iter()
            .map(|row| {
                row.as_object()
                    .expect("a row")
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().expect("a string").to_owned()))
                    .collect()
            })
            .collect()
    }

    /// LVM's own report (`vgs` or `pvs`) of `fields` (comma list), in
    /// bytes: one map per row, keyed by field name (`vg_name`, ...).
    pub(crate) fn report(&self, what: &str, fields: &str) -> Vec<BTreeMap<String, String>> {
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

impl Drop for Fleet {
    fn drop(&mut self) {
        // Copies first: LVM must not meet the duplicates while removing.
        for i in self.members..self.slots.len() {
            if self.slots[i].attached {
                self.detach_quietly(i);
            }
        }
        let mut complete = true;
        for i in 0..self.members {
            if !self.slots[i].attached {
                let out = losetup_at(self.slots[i].number, &self.slots[i].file);
                self.slots[i].attached = out.status.success();
                complete &= self.slots[i].attached;
            }
        }
        if self.vg_created && complete {
            let out = self.lvm(&["vgremove", "-f", &self.vg]);
            if !out.status.success() {
                eprintln!(
                    "warning: vgremove {}: {}",
                    self.vg,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        let members: Vec<String> = (0..self.members)
            .filter(|&i| self.slots[i].attached)
            .map(|i| self.path(i))
            .collect();
        if !members.is_empty() {
            let mut args = vec!["pvremove", "-ff", "-y"];
            args.extend(members.iter().map(String::as_str));
            let out = self.lvm(&args);
            if !out.status.success() {
                eprintln!(
                    "warning: pvremove: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        for i in 0..self.members {
            if self.slots[i].attached {
                self.detach_quietly(i);
            }
        }
    }
}

impl Fleet {
    /// Detaches slot `i` by its path, warning instead of panicking (for
    /// drop).
    fn detach_quietly(&mut self, i: usize) {
        let path = self.path(i);
        let ok = Command::new("losetup")
            .arg("-d")
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            self.slots[i].attached = false;
        } else {
            eprintln!("warning: could not detach {path}");
        }
    }
}
