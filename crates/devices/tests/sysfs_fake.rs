//! `Sysfs` against fake trees built in a tempdir, laid out as the kernel
//! lays out /sys (class/block entries are links into devices/): a
//! partitioned disk, a loop device with a backing file, a dm device with
//! slaves, and hostile content.

mod faketree;

use std::fs;
use std::path::Path;

use faketree::{Tree, basic, with};
use weir_devices::sysfs::{AttrError, Kind};
use weir_devices::{Error, Sysfs};

/// sda (rotational SCSI disk, 2 partitions, sda2 held by dm-0), loop0
/// (backing file), dm-0.
fn populated() -> Tree {
    let t = Tree::new();
    let sda = basic("8:0", "2097152", "sda");
    let sda_dir = t.device(
        "pci0/host0/block/sda",
        &with(
            &sda,
            &[
                ("removable", "0\n"),
                ("queue/rotational", "1\n"),
                ("queue/logical_block_size", "4096\n"),
                ("diskseq", "9\n"),
                ("device/model", "QEMU HARDDISK   \n"),
                ("device/serial", "QM00001\n"),
                ("device/wwid", "t10.ATA QEMU HARDDISK\n"),
            ],
        ),
    );
    let p1 = basic("8:1", "2048", "sda1");
    t.device(
        "pci0/host0/block/sda/sda1",
        &with(&p1, &[("partition", "1\n")]),
    );
    let p2 = basic("8:2", "4096", "sda2");
    t.device(
        "pci0/host0/block/sda/sda2",
        &with(&p2, &[("partition", "2\n")]),
    );
    fs::write(sda_dir.join("sda2/holders/dm-0"), "").unwrap();

    t.loop0(&[("loop/backing_file", "/var/tmp/disk.img (deleted)\n")]);
    let dm = basic("253:0", "4096", "dm-0");
    let dm_dir = t.device("virtual/block/dm-0", &with(&dm, &[("wwid", "dm-uuid-x\n")]));
    fs::write(dm_dir.join("slaves/sda2"), "").unwrap();
    t
}

#[test]
fn a_partitioned_disk() {
    let t = populated();
    let sda = t.sysfs().device("sda").unwrap();
    assert_eq!((sda.major, sda.minor), (8, 0));
    assert_eq!(sda.size_bytes, 2097152 * 512);
    assert!(!sda.read_only);
    assert_eq!(sda.removable, Some(false));
    assert_eq!(sda.rotational, Some(true));
    assert_eq!(sda.logical_block_size, Some(4096));
    assert_eq!(
        sda.kind,
        Kind::Disk {
            partitions: vec!["sda1".into(), "sda2".into()]
        }
    );
    assert_eq!(sda.model.as_deref(), Some("QEMU HARDDISK"));
    assert_eq!(sda.serial.as_deref(), Some("QM00001"));
    assert_eq!(sda.wwid.as_deref(), Some("t10.ATA QEMU HARDDISK"));
    assert_eq!(sda.diskseq, Some(9));
    assert_eq!(sda.devname.as_deref(), Some("sda"));
    assert_eq!(sda.dev_path(), Path::new("/dev/sda"));
    assert_eq!(sda.backing_file, None);
    assert!(!sda.is_partition());

    // A partition takes the disk's queue, removable and diskseq.
    let p = t.sysfs().device("sda2").unwrap();
    assert_eq!(
        p.kind,
        Kind::Partition {
            number: 2,
            parent: "sda".into()
        }
    );
    assert_eq!(p.size_bytes, 4096 * 512);
    assert_eq!(p.rotational, Some(true));
    assert_eq!(p.logical_block_size, Some(4096));
    assert_eq!(p.removable, Some(false));
    assert_eq!(p.diskseq, Some(9));
    assert_eq!(p.holders, ["dm-0"]);
    assert_eq!(p.model, None, "partitions have no device/ link");
}

#[test]
fn loop_and_dm_devices() {
    let t = populated();
    let lp = t.sysfs().device("loop0").unwrap();
    assert_eq!(
        lp.backing_file.as_deref(),
        Some(Path::new("/var/tmp/disk.img (deleted)"))
    );
    assert_eq!(lp.rotational, Some(false));
    assert_eq!(lp.kind, Kind::Disk { partitions: vec![] });
    let dm = t.sysfs().device("dm-0").unwrap();
    assert_eq!(dm.slaves, ["sda2"]);
    assert_eq!(dm.wwid.as_deref(), Some("dm-uuid-x"));
    // Absent optional attributes are None.
    assert_eq!(
        (dm.rotational, dm.removable, dm.logical_block_size),
        (None, None, None)
    );
    assert_eq!(
        (dm.diskseq, dm.model.as_deref(), dm.serial.as_deref()),
        (None, None, None)
    );
}

#[test]
fn scan_lists_everything_and_fills_partitions() {
    let t = populated();
    let scan = t.sysfs().scan().unwrap();
    assert!(scan.failed.is_empty(), "{:?}", scan.failed);
    let names: Vec<_> = scan.devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["dm-0", "loop0", "sda", "sda1", "sda2"]);
    // The scan's devices equal one-by-one snapshots.
    for d in &scan.devices {
        assert_eq!(d, &t.sysfs().device(&d.name).unwrap());
    }
    assert_eq!(t.sysfs().names().unwrap(), names);
}

#[test]
fn missing_and_bad_names() {
    let t = populated();
    assert!(matches!(t.sysfs().device("sdz"), Err(Error::Vanished { name }) if name == "sdz"));
    for bad in ["", "..", "../sda", "a/b"] {
        assert!(
            matches!(t.sysfs().device(bad), Err(Error::BadName { .. })),
            "{bad:?}"
        );
    }
    let nowhere = Sysfs::new(t.root.join("nope"));
    assert!(matches!(nowhere.device("sda"), Err(Error::List { .. })));
    assert!(matches!(nowhere.scan(), Err(Error::List { .. })));
}

fn attr_err(t: &Tree, name: &str) -> (&'static str, AttrError) {
    match t.sysfs().device(name) {
        Err(Error::Sysfs { attr, source, .. }) => (attr, source),
        other => panic!("{name}: expected a sysfs error, got {other:?}"),
    }
}

#[test]
fn hostile_content_is_a_typed_error() {
    let t = Tree::new();
    let b = basic("8:16", "1", "x");
    let long = "1".repeat(5000);
    t.device("v/nonnum", &with(&b, &[("size", "12abc\n")]));
    t.device("v/huge", &with(&b, &[("size", "18446744073709551615\n")]));
    t.device(
        "v/toobig",
        &with(&b, &[("size", "99999999999999999999999\n")]),
    );
    t.device("v/baddev", &with(&b, &[("dev", "8-16\n")]));
    t.device("v/badro", &with(&b, &[("ro", "yes\n")]));
    t.device("v/badrot", &with(&b, &[("queue/rotational", "2\n")]));
    t.device(
        "v/badbs",
        &with(&b, &[("queue/logical_block_size", "-512\n")]),
    );
    t.device("v/badpart", &with(&b, &[("partition", "one\n")]));
    t.device("v/long", &with(&b, &[("diskseq", &long)]));
    t.device(
        "v/escape",
        &with(&b, &[("uevent", "DEVNAME=../../etc/shadow\n")]),
    );
    let nodev = t.device("v/nodev", &with(&b, &[]));
    fs::remove_file(nodev.join("dev")).unwrap();

    let (attr, e) = attr_err(&t, "nonnum");
    assert_eq!(attr, "size");
    assert!(
        matches!(e, AttrError::NotNumber { ref text } if text == "12abc"),
        "{e:?}"
    );
    let (attr, e) = attr_err(&t, "huge");
    assert_eq!(attr, "size");
    assert!(matches!(e, AttrError::Invalid { .. }), "{e:?}");
    assert!(matches!(
        attr_err(&t, "toobig").1,
        AttrError::NotNumber { .. }
    ));
    assert!(matches!(
        attr_err(&t, "baddev"),
        ("dev", AttrError::NotDevNum { .. })
    ));
    assert!(matches!(
        attr_err(&t, "badro"),
        ("ro", AttrError::NotFlag { .. })
    ));
    assert!(matches!(
        attr_err(&t, "badrot"),
        ("queue/rotational", AttrError::NotFlag { .. })
    ));
    assert!(matches!(
        attr_err(&t, "badbs"),
        ("queue/logical_block_size", AttrError::NotNumber { .. })
    ));
    assert!(matches!(
        attr_err(&t, "badpart"),
        ("partition", AttrError::NotNumber { .. })
    ));
    assert!(matches!(
        attr_err(&t, "long"),
        ("diskseq", AttrError::TooLong)
    ));
    assert!(matches!(
        attr_err(&t, "escape"),
        ("uevent", AttrError::Invalid { .. })
    ));
    // The directory exists but `dev` does not: a broken tree, not a vanished device.
    assert!(matches!(attr_err(&t, "nodev"), ("dev", AttrError::Missing)));

    // A scan reports each bad device and still lists nothing it could not read.
    let scan = t.sysfs().scan().unwrap();
    assert!(scan.devices.is_empty());
    assert_eq!(scan.failed.len(), 11);
}

#[test]
fn labels_that_are_not_utf8_are_kept_lossily() {
    let t = Tree::new();
    let b = basic("8:32", "8", "sdc");
    let dir = t.device("v/sdc", &with(&b, &[]));
    fs::create_dir_all(dir.join("device")).unwrap();
    fs::write(dir.join("device/serial"), b"AB\xffCD  \n").unwrap();
    let d = t.sysfs().device("sdc").unwrap();
    assert_eq!(d.serial.as_deref(), Some("AB\u{fffd}CD"));
}
