//! [`Inventory::on_uevent`] against a fake sysfs tree the test changes
//! between events, for what a live kernel shows only by chance: a media
//! change applied before the kernel gave the disk its new `diskseq`.

mod faketree;

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use faketree::Tree;
use weir_devices::{ChangeKind, DevNum, Filter, Inventory, uevent};

const LOOP0: DevNum = DevNum { major: 7, minor: 0 };

/// A tree with one attached loop device, loop0, at `diskseq` 5; and the
/// path of its `diskseq` attribute.
fn attached_loop() -> (Tree, PathBuf) {
    let t = Tree::new();
    let dir = t.loop0(&[
        ("loop/backing_file", "/var/tmp/disk.img\n"),
        ("diskseq", "5\n"),
    ]);
    (t, dir.join("diskseq"))
}

/// The inventory of `t`, probing nothing.
fn scan(t: &Tree) -> Inventory {
    let filter = Filter::parse(&["r|.*|"]).expect("a reject-all filter");
    Inventory::scan(t.sysfs(), filter).expect("scan").0
}

/// A kernel uevent on loop0: `action`, with `extra` properties.
fn event(action: &str, seqnum: u64, extra: &str) -> weir_devices::Uevent {
    let text = format!(
        "{action}@/devices/virtual/block/loop0\0ACTION={action}\0\
         DEVPATH=/devices/virtual/block/loop0\0SUBSYSTEM=block\0MAJOR=7\0MINOR=0\0\
         DEVNAME=loop0\0DEVTYPE=disk\0{extra}SEQNUM={seqnum}\0"
    );
    uevent::parse(text.as_bytes()).expect("a well-formed uevent")
}

/// A `change` on loop0 with `extra` properties.
fn change(seqnum: u64, extra: &str) -> weir_devices::Uevent {
    event("change", seqnum, extra)
}

/// The media change that ends a detach, carrying the old media's number.
fn media_change(seqnum: u64, old_diskseq: u64) -> weir_devices::Uevent {
    change(
        seqnum,
        &format!("DISKSEQ={old_diskseq}\0DISK_MEDIA_CHANGE=1\0"),
    )
}

/// The detach: size 0, no backing file; the kernel then sends a plain
/// `change` and the media change, both with the old number.
fn detach(t: &Tree) {
    let dir = t.root.join("devices/virtual/block/loop0");
    fs::write(dir.join("size"), "0\n").unwrap();
    fs::write(dir.join("loop/backing_file"), "").unwrap();
}

fn diskseq(inv: &Inventory) -> Option<u64> {
    inv.get(LOOP0).and_then(|e| e.device.diskseq)
}

/// Regression: the tracker read a media change's `diskseq` before the
/// kernel's bump and took the event's number + 1. The kernel takes the
/// next value of a counter every disk shares, so with other disks
/// attached in between (CI, 2026-11-22: 3376 kept, the kernel showed
/// 3380) the number was wrong until the next event. Now the device waits
/// for sysfs to show a new number, and takes that one.
#[test]
fn a_media_change_read_before_the_bump_takes_the_number_sysfs_shows_next() {
    let (t, seq) = attached_loop();
    let mut inv = scan(&t);
    assert_eq!(diskseq(&inv), Some(5));
    detach(&t);

    let first = inv.on_uevent(&change(10, "DISKSEQ=5\0"));
    assert!(matches!(
        first.as_slice(),
        [c] if matches!(&c.kind, ChangeKind::DeviceChange { changed, .. }
            if changed.iter().all(|a| *a == "size" || *a == "backing_file"))
    ));
    assert!(!inv.awaits_diskseq(), "a plain change waits for nothing");

    // The media change, read before the kernel's bump.
    let media = inv.on_uevent(&media_change(11, 5));
    assert!(media.is_empty(), "nothing changed yet: {media:?}");
    assert_eq!(diskseq(&inv), Some(5));
    assert!(inv.awaits_diskseq());

    // Not bumped yet: still waiting.
    assert!(inv.recheck_diskseq(Duration::from_secs(60)).is_empty());
    assert!(inv.awaits_diskseq());

    // Other disks took 6 to 8; this one gets 9.
    fs::write(&seq, "9\n").unwrap();
    let bumped = inv.recheck_diskseq(Duration::from_secs(60));
    match bumped.as_slice() {
        [c] => match &c.kind {
            ChangeKind::DeviceChange { old, new, changed } => {
                assert_eq!(changed, &["diskseq"]);
                assert_eq!((old.diskseq, new.diskseq), (Some(5), Some(9)));
                assert!(!c.scan, "a media change is no scan");
            }
            other => panic!("not a DEVICE_CHANGE: {other:?}"),
        },
        other => panic!("one change expected, got {other:?}"),
    }
    assert_eq!(diskseq(&inv), Some(9));
    assert!(!inv.awaits_diskseq());
    assert!(inv.recheck_diskseq(Duration::from_secs(60)).is_empty());
}

/// A media change read after the bump changes the number at once, and
/// leaves nothing to wait for.
#[test]
fn a_media_change_read_after_the_bump_takes_the_new_number_at_once() {
    let (t, seq) = attached_loop();
    let mut inv = scan(&t);
    detach(&t);
    fs::write(&seq, "12\n").unwrap();
    let changes = inv.on_uevent(&media_change(11, 5));
    assert_eq!(diskseq(&inv), Some(12), "{changes:?}");
    assert!(!inv.awaits_diskseq());
}

/// A disc keeps its old number until opened: after the patience the
/// device is no longer read, and keeps what sysfs shows.
#[test]
fn a_device_that_keeps_its_number_is_waited_for_no_longer_than_the_patience() {
    let (t, _seq) = attached_loop();
    let mut inv = scan(&t);
    inv.on_uevent(&media_change(11, 5));
    assert!(inv.awaits_diskseq());
    assert!(inv.recheck_diskseq(Duration::ZERO).is_empty());
    assert!(!inv.awaits_diskseq());
    assert_eq!(diskseq(&inv), Some(5));
}

/// A later event on the device, or its removal, ends the wait: its own
/// reading is the newer one.
#[test]
fn a_later_event_or_a_removal_ends_the_wait() {
    let (t, seq) = attached_loop();
    let mut inv = scan(&t);
    inv.on_uevent(&media_change(11, 5));
    assert!(inv.awaits_diskseq());
    // Attached again: its event carries the number sysfs shows.
    fs::write(&seq, "7\n").unwrap();
    inv.on_uevent(&change(12, "DISKSEQ=7\0"));
    assert!(!inv.awaits_diskseq());
    assert_eq!(diskseq(&inv), Some(7));

    inv.on_uevent(&media_change(13, 7));
    assert!(inv.awaits_diskseq());
    inv.on_uevent(&event("remove", 14, ""));
    assert!(!inv.awaits_diskseq());
    assert!(inv.get(LOOP0).is_none());
}
