//! `Sysfs` against the real /sys: a whole scan, and a loop device with a
//! partition attached by this test (root, losetup and addpart needed).

use std::os::unix::fs::MetadataExt;

use weir_devices::Sysfs;
use weir_devices::sysfs::Kind;
use weir_lvmfleet::LoopDev;

#[test]
fn the_real_tree_scans_cleanly() {
    let scan = Sysfs::default().scan().expect("scan /sys");
    assert!(!scan.devices.is_empty(), "no block devices in /sys");
    assert!(scan.failed.is_empty(), "{:?}", scan.failed);
    for d in &scan.devices {
        // Every real device has a node name and a nonzero major.
        assert!(d.devname.is_some(), "{d:?}");
        assert!(d.major != 0, "{d:?}");
        if let Kind::Partition { parent, .. } = &d.kind {
            // Its disk may vanish in between (other tests detach loops).
            if let Some(p) = scan.get(parent) {
                assert!(
                    matches!(&p.kind, Kind::Disk { partitions } if partitions.contains(&d.name)),
                    "{p:?} should list {}",
                    d.name
                );
            }
        }
    }
}

#[test]
fn a_partitioned_loop_device() {
    if let Some(why) = weir_lvmfleet::loop_unavailable() {
        eprintln!("skipping: {why}");
        return;
    }
    if !weir_lvmfleet::have("addpart") {
        eprintln!("skipping: needs addpart(8) from util-linux");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("disk.img");
    std::fs::write(&image, vec![0u8; 4 << 20]).unwrap();
    let dev = LoopDev::attach_partscan(&image).expect("attach a loop device");
    dev.add_partition(1, 2048, 2048).expect("addpart");
    let name = dev.name().to_owned();
    let name = name.as_str();
    let part = format!("{name}p1");

    let sysfs = Sysfs::default();
    let disk = sysfs.device(name).unwrap();
    assert_eq!(disk.size_bytes, 4 << 20);
    assert_eq!(
        disk.backing_file.as_deref(),
        Some(image.canonicalize().unwrap().as_path())
    );
    assert_eq!(
        disk.kind,
        Kind::Disk {
            partitions: vec![part.clone()]
        }
    );
    assert_eq!(disk.devname.as_deref(), Some(name));
    assert_eq!(disk.dev_path(), dev.path());
    assert_eq!(disk.logical_block_size, Some(512));
    assert!(disk.diskseq.is_some());
    assert!(!disk.read_only);
    let rdev = std::fs::metadata(dev.path()).unwrap().rdev();
    assert_eq!(
        (disk.major, disk.minor),
        (rustix::fs::major(rdev), rustix::fs::minor(rdev))
    );

    let p = sysfs.device(&part).unwrap();
    assert_eq!(
        p.kind,
        Kind::Partition {
            number: 1,
            parent: name.to_owned()
        }
    );
    assert_eq!(p.size_bytes, 2048 * 512);
    assert_eq!(p.diskseq, disk.diskseq);
    assert_eq!(p.logical_block_size, disk.logical_block_size);
    assert_eq!(p.rotational, disk.rotational);
    assert_eq!(p.backing_file, None);

    let scan = sysfs.scan().unwrap();
    let d = scan.get(name).expect("the scan lists the loop device");
    assert_eq!(d.kind, disk.kind);
    assert_eq!(scan.get(&part), Some(&p));

    drop(dev);
    // Detached: the loop node stays, without a backing file or partitions.
    if let Ok(d) = sysfs.device(name) {
        assert_eq!(d.backing_file, None);
        assert_eq!(d.kind, Kind::Disk { partitions: vec![] });
    }
}
