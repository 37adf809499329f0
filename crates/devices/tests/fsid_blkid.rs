//! The filesystem prober against the real tool (root, losetup and blkid
//! needed; each filesystem skipped, with the reason printed, when its mkfs
//! is missing): images made by mkfs.ext2/3/4, mkfs.xfs, mkfs.btrfs,
//! mkswap and mkfs.vfat, each with a label and a chosen UUID where the
//! tool takes one, attached as loop devices; `TYPE`, `UUID` and `LABEL`
//! must be what `blkid -p -o export` prints, byte for byte, both from
//! [`fsid::probe`], through the inventory's [`probe_device`] and from
//! [`Inventory::fsid`] after a scan.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;

use weir_devices::fsid::{self, FsId};
use weir_devices::probe::probe_device;
use weir_devices::{BlockReader, DevNum, Filter, Inventory, Sysfs};
use weir_lvm::probe::TextCache;
use weir_lvmfleet::LoopDev;

/// A UUID of our choosing, a different one for each image `n`: the tests
/// run in parallel, and mkfs.btrfs refuses a UUID that any attached
/// device already carries.
fn uuid(n: u8) -> String {
    format!("3f1c2a9e-5b7d-4e60-8a1b-0c2d3e4f5a{n:02x}")
}

/// `blkid -p -o export`'s TYPE, UUID and LABEL, its escapes undone
/// (`\` before shell-special characters in the export format).
fn blkid(dev: &Path) -> Option<(String, Option<String>, Option<Vec<u8>>)> {
    let out = tool("blkid")
        .args(["-p", "-o", "export"])
        .arg(dev)
        .output()
        .expect("run blkid");
    let (mut t, mut u, mut l) = (None, None, None);
    for line in out.stdout.split(|&b| b == b'\n') {
        let Some(eq) = line.iter().position(|&b| b == b'=') else {
            continue;
        };
        let (key, value) = (&line[..eq], unescape(&line[eq + 1..]));
        match key {
            b"TYPE" => t = Some(String::from_utf8(value).unwrap()),
            b"UUID" => u = Some(String::from_utf8(value).unwrap()),
            b"LABEL" => l = Some(value),
            _ => {}
        }
    }
    Some((t?, u, l))
}

/// Undoes blkid's `safe_print`: `\` before shell-special characters,
/// `M-` for a byte above 127, `^X` for a control character (`^?` for
/// DEL). Ambiguous for labels holding `M-` or `^` themselves, which the
/// labels here do not.
fn unescape(v: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        let mut high = 0;
        if v[i..].starts_with(b"M-") && i + 2 < v.len() {
            high = 0x80;
            i += 2;
        }
        let b = match v[i] {
            b'^' if i + 1 < v.len() => {
                i += 1;
                v[i] ^ 0x40
            }
            b'\\' if i + 1 < v.len() => {
                i += 1;
                v[i]
            }
            b => b,
        };
        out.push(b | high);
        i += 1;
    }
    out
}

fn image(dir: &Path, name: &str, mib: u64) -> std::path::PathBuf {
    let path = dir.join(name);
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(mib << 20).unwrap();
    path
}

/// The command `tool`, found in `$PATH` or the sbin directories.
fn tool(name: &str) -> Command {
    Command::new(weir_lvmfleet::find_tool(name).expect("checked before"))
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run mkfs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Attaches `img`, probes it both ways and compares with blkid.
fn check(img: &Path, want_type: &str) -> FsId {
    let dev = LoopDev::attach(img).expect("attach a loop device");
    let reader = BlockReader::open(dev.path()).unwrap();
    let got = fsid::probe(&reader).unwrap().expect("a filesystem");
    let (t, u, l) = blkid(dev.path()).expect("blkid names a type");
    assert_eq!(t, want_type);
    assert_eq!(got.fstype, t, "{}", img.display());
    assert_eq!(got.uuid, u, "{}", img.display());
    assert_eq!(got.label, l, "{}", img.display());
    // The inventory's path: one probe of the device as sysfs shows it.
    let snap = Sysfs::default().device(dev.name()).unwrap();
    let probed = probe_device(&snap, &Filter::accept_all(), &TextCache::new());
    assert_eq!(probed.fsid.as_ref(), Some(&got));
    // And as the inventory keeps it, by device number.
    let only = [format!("a|^/dev/{}$|", dev.name()), "r|.*|".to_owned()];
    let (inv, _) = Inventory::scan(Sysfs::default(), Filter::parse(&only).unwrap()).unwrap();
    assert_eq!(inv.fsid(DevNum::of(&snap)), Some(&got));
    drop(inv);
    eprintln!("{want_type}: {got:?} matches blkid");
    // Open, the device would not detach.
    drop(reader);
    dev.detach().unwrap();
    got
}

fn unavailable(tools: &[&str]) -> Option<String> {
    if let Some(why) = weir_lvmfleet::loop_unavailable() {
        return Some(why.to_owned());
    }
    tools
        .iter()
        .chain(&["blkid"])
        .find(|t| weir_lvmfleet::find_tool(t).is_none())
        .map(|t| format!("{t} is not installed"))
}

macro_rules! skip_without {
    ($($tool:expr),*) => {
        if let Some(why) = unavailable(&[$($tool),*]) {
            eprintln!("skipping: {why}");
            return;
        }
    };
}

#[test]
fn ext2_ext3_ext4_match_blkid() {
    skip_without!("mkfs.ext4");
    let dir = tempfile::tempdir().unwrap();
    for (n, ty, label) in [
        (1, "ext2", "two"),
        (2, "ext3", "three"),
        (3, "ext4", "four-fs"),
    ] {
        let img = image(dir.path(), ty, 64);
        run(tool("mkfs.ext4")
            .args(["-q", "-F", "-t", ty, "-L", label, "-U", &uuid(n)])
            .arg(&img));
        let got = check(&img, ty);
        assert_eq!(got.uuid, Some(uuid(n)));
        assert_eq!(got.label.as_deref(), Some(label.as_bytes()));
    }
}

#[test]
fn ext4_labels_full_length_and_not_utf8_match_blkid() {
    skip_without!("mkfs.ext4");
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "ext4", 64);
    run(tool("mkfs.ext4")
        .args(["-q", "-F", "-L", "sixteen-bytes-xx", "-U", &uuid(4)])
        .arg(&img));
    let got = check(&img, "ext4");
    assert_eq!(got.label.as_deref(), Some(&b"sixteen-bytes-xx"[..]));
    // Bytes no tool writes: patch the label field and fix the
    // superblock's checksum (metadata_csum) by hand.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&img)
        .unwrap();
    let mut sb = vec![0u8; 1024];
    f.read_exact_at(&mut sb, 1024).unwrap();
    sb[0x78..0x88].copy_from_slice(b"caf\xe9 \xff\x01label\"$`x");
    let crc = !crc32c::crc32c_append(0, &sb[..0x3fc]);
    sb[0x3fc..0x400].copy_from_slice(&crc.to_le_bytes());
    f.write_all_at(&sb, 1024).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let got = check(&img, "ext4");
    assert_eq!(
        got.label.as_deref(),
        Some(&b"caf\xe9 \xff\x01label\"$`x"[..])
    );
}

#[test]
fn xfs_matches_blkid() {
    skip_without!("mkfs.xfs");
    let dir = tempfile::tempdir().unwrap();
    for (n, name, label) in [(5, "xfs", "data"), (6, "xfs-full", "twelve-bytes")] {
        let img = image(dir.path(), name, 320);
        run(tool("mkfs.xfs")
            .args(["-q", "-f", "-L", label, "-m"])
            .arg(format!("uuid={}", uuid(n)))
            .arg(&img));
        let got = check(&img, "xfs");
        assert_eq!(got.uuid, Some(uuid(n)));
        assert_eq!(got.label.as_deref(), Some(label.as_bytes()));
    }
}

#[test]
fn btrfs_matches_blkid() {
    skip_without!("mkfs.btrfs");
    let dir = tempfile::tempdir().unwrap();
    // The longest label btrfs takes (255 bytes), which blkid cuts.
    let long = "L".repeat(255);
    for (n, name, label) in [(7, "btrfs", "pool"), (8, "btrfs-long", long.as_str())] {
        let img = image(dir.path(), name, 160);
        run(tool("mkfs.btrfs")
            .args(["-q", "-f", "-L", label, "-U", &uuid(n)])
            .arg(&img));
        let got = check(&img, "btrfs");
        assert_eq!(got.uuid, Some(uuid(n)));
    }
}

#[test]
fn swap_matches_blkid() {
    skip_without!("mkswap");
    let dir = tempfile::tempdir().unwrap();
    for (n, name, label) in [(9, "swap", "swp"), (10, "swap-full", "sixteen-bytes-xx")] {
        let img = image(dir.path(), name, 16);
        run(tool("mkswap")
            .args(["-q", "-L", label, "-U", &uuid(n)])
            .arg(&img));
        let got = check(&img, "swap");
        assert_eq!(got.uuid, Some(uuid(n)));
    }
}

#[test]
fn vfat_matches_blkid() {
    skip_without!("mkfs.vfat");
    let dir = tempfile::tempdir().unwrap();
    for (name, mib, fat) in [("fat16", 64, "16"), ("fat32", 300, "32")] {
        let img = image(dir.path(), name, mib);
        run(tool("mkfs.vfat")
            .args(["-F", fat, "-n", "BOOTFS", "-i", "1a2b3c4d"])
            .arg(&img));
        let got = check(&img, "vfat");
        assert_eq!(got.uuid.as_deref(), Some("1A2B-3C4D"));
        assert_eq!(got.label.as_deref(), Some(&b"BOOTFS"[..]));
    }
    // blkid's LABEL is the root directory's volume entry, not the boot
    // sector's copy: change the first alone, on the FAT16 volume.
    let img = dir.path().join("fat16");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&img)
        .unwrap();
    let mut bs = [0u8; 512];
    f.read_exact_at(&mut bs, 0).unwrap();
    let le16 = |at: usize| u64::from(u16::from_le_bytes([bs[at], bs[at + 1]]));
    let root = (le16(0x0e) + u64::from(bs[0x10]) * le16(0x16)) * le16(0x0b);
    let mut ent = [0u8; 12];
    f.read_exact_at(&mut ent, root).unwrap();
    assert_eq!(
        &ent, b"BOOTFS     \x08",
        "the label is the root's first entry"
    );
    f.write_all_at(b"ROOT LBL   ", root).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let got = check(&img, "vfat");
    assert_eq!(got.label.as_deref(), Some(&b"ROOT LBL"[..]));
}

#[test]
fn an_unformatted_device_holds_nothing() {
    skip_without!();
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "blank", 1);
    let dev = LoopDev::attach(&img).expect("attach a loop device");
    let reader = BlockReader::open(dev.path()).unwrap();
    assert_eq!(fsid::probe(&reader).unwrap(), None);
    assert_eq!(blkid(dev.path()), None);
    drop(reader);
    dev.detach().unwrap();
}
