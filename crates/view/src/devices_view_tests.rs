//! Tests of the `weir devices` renderer on fake sysfs trees: the tree
//! drawing, the devices left out and `all`, the columns, the filter, the
//! JSON form. The fake devices' names exist in no /dev, so probing them
//! fails harmlessly (they are never real devices of the machine).

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::Value;
use weir_devices::{Filter, Inventory, Sysfs};
use weir_mounts::{MountFlags, Propagation, SuperFlags};

use super::*;

/// A fake sysfs root.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("class/block")).unwrap();
        Tree { dir }
    }

    /// A device at `devices/virtual/block/<rel>`: `dev` is `major:minor`,
    /// `sectors` its size; a partition when `partition` is given.
    fn device(&self, rel: &str, dev: &str, sectors: u64, partition: Option<u32>, slaves: &[&str]) {
        let dir = self.dir.path().join("devices/virtual/block").join(rel);
        fs::create_dir_all(dir.join("holders")).unwrap();
        fs::create_dir_all(dir.join("slaves")).unwrap();
        let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
        let (major, minor) = dev.split_once(':').unwrap();
        let devtype = if partition.is_some() {
            "partition"
        } else {
            "disk"
        };
        let mut attrs = vec![
            ("dev", format!("{dev}\n")),
            ("size", format!("{sectors}\n")),
            ("ro", "0\n".to_owned()),
            (
                "uevent",
                format!("MAJOR={major}\nMINOR={minor}\nDEVNAME={name}\nDEVTYPE={devtype}\n"),
            ),
        ];
        match partition {
            Some(n) => attrs.push(("partition", format!("{n}\n"))),
            None => attrs.push(("removable", "0\n".to_owned())),
        }
        for (k, v) in attrs {
            fs::write(dir.join(k), v).unwrap();
        }
        for s in slaves {
            fs::write(dir.join("slaves").join(s), "").unwrap();
        }
        symlink(
            Path::new("../../devices/virtual/block").join(rel),
            self.dir.path().join("class/block").join(name),
        )
        .unwrap();
    }

    fn inventory(&self, filter: &[&str]) -> Inventory {
        let filter = Filter::parse(filter).unwrap();
        Inventory::scan(Sysfs::new(self.dir.path()), filter)
            .unwrap()
            .0
    }
}

/// wdx (a disk with two partitions, the second built on by dm-7),
/// xloop0 attached and xloop1 detached (size 0), zdisk (empty, not a
/// loop device). The loop devices' minors are over 255, so lsblk lists
/// them after the others.
fn fixture() -> Tree {
    let t = Tree::new();
    t.device("wdx", "250:0", 2 << 21, None, &[]);
    t.device("wdx/wdx1", "250:1", 1 << 21, Some(1), &[]);
    t.device("wdx/wdx2", "250:2", 1 << 21, Some(2), &[]);
    t.device("dm-7", "251:7", 1 << 20, None, &["wdx2"]);
    t.device("xloop0", "7:900", 16384, None, &[]);
    t.device("xloop1", "7:901", 0, None, &[]);
    t.device("zdisk", "252:0", 0, None, &[]);
    t
}

fn mount(major: u32, minor: u32, point: &[u8]) -> Mount {
    Mount {
        id: 1,
        parent_id: 1,
        old_id: 1,
        old_parent_id: 1,
        major,
        minor,
        root: b"/".as_slice().into(),
        mount_point: point.into(),
        fstype: b"ext4".as_slice().into(),
        subtype: None,
        source: b"/dev/x".as_slice().into(),
        flags: MountFlags::default(),
        super_flags: SuperFlags::default(),
        fs_options: b"".as_slice().into(),
        propagation: Propagation::default(),
    }
}

fn text(inv: &Inventory, mounts: &[Mount], all: bool, list: bool, cols: &str) -> String {
    let opts = DevicesOptions {
        all,
        list,
        columns: DevColumns::parse(cols).unwrap(),
    };
    render(inv, mounts, &opts, Format::Text)
}

#[test]
fn draws_the_tree_and_hides_detached_loop_devices() {
    let t = fixture();
    let inv = t.inventory(&[]);
    let mounts = [mount(250, 1, b"/boot"), mount(251, 7, b"/srv")];
    let got = render(&inv, &mounts, &DevicesOptions::default(), Format::Text);
    assert_eq!(
        got,
        "\
NAME     MAJ:MIN RM SIZE RO TYPE MOUNTPOINTS
wdx      250:0    0   2G  0 disk
├─wdx1   250:1    0   1G  0 part /boot
└─wdx2   250:2    0   1G  0 part
  └─dm-7 251:7    0 512M  0 disk /srv
zdisk    252:0    0   0B  0 disk
xloop0     7:900  0   8M  0 loop
"
    );
}

#[test]
fn all_shows_the_empty_ones_and_list_drops_the_drawing() {
    let t = fixture();
    let inv = t.inventory(&[]);
    let got = text(&inv, &[], true, true, "name,size,type");
    assert_eq!(
        got,
        "\
NAME   SIZE TYPE
wdx      2G disk
wdx1     1G part
wdx2     1G part
dm-7   512M disk
zdisk    0B disk
xloop0   8M loop
xloop1   0B loop
"
    );
}

#[test]
fn several_mount_points_take_a_line_each() {
    let t = fixture();
    let inv = t.inventory(&[]);
    let mounts = [
        mount(250, 1, b"/boot"),
        mount(250, 1, b"/mnt/b"),
        mount(250, 1, b"/boot"),
    ];
    let got = text(&inv, &mounts, false, false, "NAME,MOUNTPOINTS,FSTYPE");
    assert!(
        got.contains("├─wdx1   /boot       ext4\n│        /mnt/b\n└─wdx2\n"),
        "{got}"
    );
}

#[test]
fn the_filter_leaves_out_what_it_rejects_and_all_marks_it() {
    let t = fixture();
    let inv = t.inventory(&["r|/dev/wdx2|", "r|/dev/xloop|"]);
    let got = text(&inv, &[], false, false, "name,type");
    // dm-7 loses its parent, so it is a root.
    assert_eq!(
        got,
        "NAME   TYPE\nwdx    disk\n└─wdx1 part\ndm-7   disk\nzdisk  disk\n"
    );
    let all = text(&inv, &[], true, true, "name,lvm");
    assert!(all.contains("\nwdx2   filtered\n"), "{all}");
    assert!(all.contains("\nxloop0 filtered\n"), "{all}");
    assert!(all.contains("\nxloop1 empty\n"), "{all}");
}

#[test]
fn plus_adds_to_the_default_columns() {
    let t = fixture();
    let inv = t.inventory(&[]);
    let got = text(&inv, &[], false, true, "+kname,pkname,path");
    let head = got.lines().next().unwrap();
    assert_eq!(
        head,
        "NAME   MAJ:MIN RM SIZE RO TYPE MOUNTPOINTS KNAME  PKNAME PATH"
    );
    assert!(
        got.contains("\nwdx1   250:1    0   1G  0 part             wdx1   wdx    /dev/wdx1\n"),
        "{got}"
    );
}

#[test]
fn json_lists_the_same_devices_with_their_mount_points() {
    let t = fixture();
    let inv = t.inventory(&["r|/dev/zdisk|"]);
    let mounts = [mount(250, 1, b"/boot")];
    let json = |all| {
        let opts = DevicesOptions {
            all,
            ..DevicesOptions::default()
        };
        let v: Value = serde_json::from_str(&render(&inv, &mounts, &opts, Format::Json)).unwrap();
        v.as_array().unwrap().clone()
    };
    let names = |v: &[Value]| -> Vec<String> {
        v.iter()
            .map(|d| d["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let some = json(false);
    assert_eq!(names(&some), ["wdx", "wdx1", "wdx2", "dm-7", "xloop0"]);
    let wdx1 = &some[1];
    assert_eq!(wdx1["mountpoints"], serde_json::json!(["/boot"]));
    assert_eq!(wdx1["parent"], "wdx");
    assert_eq!(wdx1["filtered"], false);
    // Never read (no such /dev node): no filesystem, but every key.
    for key in ["fstype", "uuid", "label"] {
        assert_eq!(wdx1[key], Value::Null, "{key}");
    }
    let every = json(true);
    assert_eq!(every.len(), 7);
    let zdisk = every.iter().find(|d| d["name"] == "zdisk").unwrap();
    assert_eq!(zdisk["filtered"], true);
    assert_eq!(zdisk["mountpoints"], serde_json::json!([]));
}

#[test]
fn the_fs_columns_fall_back_to_the_mounted_type() {
    let t = fixture();
    let inv = t.inventory(&[]);
    let mounts = [mount(250, 1, b"/boot")];
    let out = text(&inv, &mounts, false, true, "NAME,FSTYPE,LABEL,UUID");
    let header = out.lines().next().unwrap();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["NAME", "FSTYPE", "LABEL", "UUID"]
    );
    let wdx1 = out.lines().find(|l| l.starts_with("wdx1 ")).unwrap();
    assert_eq!(
        wdx1.split_whitespace().collect::<Vec<_>>(),
        ["wdx1", "ext4"],
        "{out}"
    );
}
