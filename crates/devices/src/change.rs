//! [`Change`]: what the device tracker logs — a device added, changed or
//! removed; a PV found, lost or moved between a VG and the orphans; a VG
//! complete, incomplete, changed or removed; an LV added, changed or
//! removed — and how it was seen ([`Change::scan`]).

use std::os::unix::ffi::OsStrExt;

use weir_lvm::Uuid;
use weir_lvm::assembly::{LvRef, VgDelta, VgRef};

use crate::devnum::DevNum;
use crate::sysfs::{BlockDevice, Kind};

/// One change, in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// What changed.
    pub kind: ChangeKind,
    /// Found by reading every device (at start, or after lost uevents),
    /// not from a uevent about this device.
    pub scan: bool,
}

/// What changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// A block device appeared.
    DeviceAdd(BlockDevice),
    /// A block device's attributes changed.
    DeviceChange {
        /// Before.
        old: Box<BlockDevice>,
        /// After.
        new: Box<BlockDevice>,
        /// The attributes that differ, by their record field names.
        changed: Vec<&'static str>,
    },
    /// A block device went away.
    DeviceRemove(BlockDevice),
    /// A device carries a PV label.
    PvFound {
        /// The device.
        dev: DevNum,
        /// Its name.
        name: String,
        /// The PV uuid.
        uuid: Uuid,
        /// The VG whose metadata lists it, if known.
        vg: Option<VgRef>,
        /// The device that already holds this PV uuid, if this one is a
        /// duplicate (never merged: it is not counted).
        duplicate_of: Option<String>,
    },
    /// A device with a PV label went away, or lost the label.
    PvLost {
        /// The device.
        dev: DevNum,
        /// Its name.
        name: String,
        /// The PV uuid.
        uuid: Uuid,
        /// The VG whose metadata lists it, if known.
        vg: Option<VgRef>,
    },
    /// Every PV of a VG is present (it was not).
    VgComplete {
        /// The VG.
        vg: VgRef,
        /// Its PV count.
        pv_count: usize,
    },
    /// A VG that was complete is not.
    VgIncomplete {
        /// The VG.
        vg: VgRef,
        /// The PVs its metadata lists that are absent.
        missing: Vec<Uuid>,
    },
    /// A VG's metadata was replaced by a newer seqno.
    VgChange {
        /// Before.
        old: VgRef,
        /// After.
        vg: VgRef,
        /// What changed.
        delta: Box<VgDelta>,
    },
    /// A VG's metadata is gone from its present PVs (vgremove).
    VgRemove {
        /// The VG as last known.
        vg: VgRef,
    },
    /// A present PV is listed by another VG now, or by none.
    PvChange {
        /// The device.
        dev: DevNum,
        /// Its name.
        name: String,
        /// The PV uuid.
        uuid: Uuid,
        /// The VG listing it now; `None`: an orphan.
        vg: Option<VgRef>,
        /// The VG that listed it before; `None`: it was an orphan.
        old_vg: Option<VgRef>,
    },
    /// An LV appeared.
    LvAdd {
        /// Its VG.
        vg: VgRef,
        /// The LV.
        lv: LvRef,
    },
    /// An LV went away.
    LvRemove {
        /// Its VG.
        vg: VgRef,
        /// The LV as last known.
        lv: LvRef,
    },
    /// An LV changed.
    LvChange {
        /// Its VG.
        vg: VgRef,
        /// Before.
        old: LvRef,
        /// After.
        lv: LvRef,
        /// What differs: `name`, `size`, `segments`, `status`.
        changed: Vec<&'static str>,
    },
}

impl Change {
    /// The record type's name (`DEVICE_ADD`, `VG_COMPLETE`, ...).
    pub fn name(&self) -> &'static str {
        match &self.kind {
            ChangeKind::DeviceAdd(_) => "DEVICE_ADD",
            ChangeKind::DeviceChange { .. } => "DEVICE_CHANGE",
            ChangeKind::DeviceRemove(_) => "DEVICE_REMOVE",
            ChangeKind::PvFound { .. } => "PV_FOUND",
            ChangeKind::PvLost { .. } => "PV_LOST",
            ChangeKind::VgComplete { .. } => "VG_COMPLETE",
            ChangeKind::VgIncomplete { .. } => "VG_INCOMPLETE",
            ChangeKind::VgChange { .. } => "VG_CHANGE",
            ChangeKind::VgRemove { .. } => "VG_REMOVE",
            ChangeKind::PvChange { .. } => "PV_CHANGE",
            ChangeKind::LvAdd { .. } => "LV_ADD",
            ChangeKind::LvRemove { .. } => "LV_REMOVE",
            ChangeKind::LvChange { .. } => "LV_CHANGE",
        }
    }
}

/// A device's attributes as records carry them: `(field, value)`, the
/// optional ones only when present. DEVICE_CHANGE compares these. Values
/// are bytes: a backing file's path is whatever bytes the kernel shows,
/// UTF-8 or not, and is kept exactly.
pub fn attributes(d: &BlockDevice) -> Vec<(&'static str, Vec<u8>)> {
    let flag = |b: bool| if b { b"1".to_vec() } else { b"0".to_vec() };
    let text = |s: String| s.into_bytes();
    let mut out = vec![
        ("dev", text(format!("{}:{}", d.major, d.minor))),
        ("size", text(d.size_bytes.to_string())),
        ("ro", flag(d.read_only)),
        ("type", device_type(d).as_bytes().to_vec()),
    ];
    let optional = [
        ("removable", d.removable.map(flag)),
        ("rotational", d.rotational.map(flag)),
        (
            "backing_file",
            d.backing_file
                .as_ref()
                .map(|p| p.as_os_str().as_bytes().to_vec()),
        ),
        ("model", d.model.clone().map(text)),
        ("serial", d.serial.clone().map(text)),
        ("wwid", d.wwid.clone().map(text)),
        ("diskseq", d.diskseq.map(|n| text(n.to_string()))),
    ];
    out.extend(optional.into_iter().filter_map(|(k, v)| Some((k, v?))));
    out
}

/// `disk`, `part` or `loop`, as lsblk says.
pub fn device_type(d: &BlockDevice) -> &'static str {
    match &d.kind {
        Kind::Partition { .. } => "part",
        Kind::Disk { .. } if d.major == LOOP_MAJOR => "loop",
        Kind::Disk { .. } => "disk",
    }
}

/// The loop driver's major number (Documentation/admin-guide/devices.txt).
const LOOP_MAJOR: u32 = 7;

/// Every field [`attributes`] can list, in its order, with the name a
/// DEVICE_CHANGE record gives its old value.
pub const ATTRIBUTES: [(&str, &str); 11] = [
    ("dev", "old_dev"),
    ("size", "old_size"),
    ("ro", "old_ro"),
    ("type", "old_type"),
    ("removable", "old_removable"),
    ("rotational", "old_rotational"),
    ("backing_file", "old_backing_file"),
    ("model", "old_model"),
    ("serial", "old_serial"),
    ("wwid", "old_wwid"),
    ("diskseq", "old_diskseq"),
];

/// The attributes that differ between two snapshots of a device, in
/// [`attributes`] order, whether they changed, appeared or went away.
pub fn changed_attributes(old: &BlockDevice, new: &BlockDevice) -> Vec<&'static str> {
    let (a, b) = (attributes(old), attributes(new));
    let value = |attrs: &[(&'static str, Vec<u8>)], key: &str| {
        attrs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.clone())
    };
    ATTRIBUTES
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| value(&a, k) != value(&b, k))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    use std::path::PathBuf;

    use super::*;

    /// An attached loop device, as sysfs shows one.
    fn loop_dev() -> BlockDevice {
        BlockDevice {
            name: "loop5".into(),
            major: 7,
            minor: 5,
            size_bytes: 8 << 20,
            read_only: false,
            removable: Some(false),
            rotational: Some(true),
            logical_block_size: Some(512),
            kind: Kind::Disk {
                partitions: Vec::new(),
            },
            holders: Vec::new(),
            slaves: Vec::new(),
            backing_file: Some(PathBuf::from("/var/tmp/pv5.img")),
            model: None,
            serial: None,
            wwid: None,
            diskseq: Some(12),
            devname: Some("loop5".into()),
        }
    }

    /// A SCSI disk, for the types that are not loops.
    fn sda() -> BlockDevice {
        BlockDevice {
            name: "sda".into(),
            major: 8,
            minor: 0,
            backing_file: None,
            model: Some("QEMU HARDDISK".into()),
            ..loop_dev()
        }
    }

    #[test]
    fn the_same_snapshot_changes_nothing() {
        assert!(changed_attributes(&loop_dev(), &loop_dev()).is_empty());
    }

    #[test]
    fn a_resize_changes_the_size_only() {
        let mut new = loop_dev();
        new.size_bytes *= 2;
        assert_eq!(changed_attributes(&loop_dev(), &new), ["size"]);
    }

    #[test]
    fn another_backing_file_changes_backing_file() {
        let mut new = loop_dev();
        new.backing_file = Some(PathBuf::from("/var/tmp/other.img"));
        assert_eq!(changed_attributes(&loop_dev(), &new), ["backing_file"]);
    }

    /// Regression test: an attribute that appeared was listed after the
    /// others (`size,diskseq,backing_file` for an attach), not in
    /// [`attributes`] order as documented.
    #[test]
    fn a_detach_names_what_went_away_in_attribute_order() {
        let mut new = loop_dev();
        new.size_bytes = 0;
        new.backing_file = None;
        new.diskseq = Some(13);
        assert_eq!(
            changed_attributes(&loop_dev(), &new),
            ["size", "backing_file", "diskseq"]
        );
        // And back: an attribute that appears is a change too.
        assert_eq!(
            changed_attributes(&new, &loop_dev()),
            ["size", "backing_file", "diskseq"]
        );
    }

    #[test]
    fn optional_attributes_disappearing_are_changes() {
        let mut new = loop_dev();
        new.removable = None;
        new.rotational = None;
        new.diskseq = None;
        assert_eq!(
            changed_attributes(&loop_dev(), &new),
            ["removable", "rotational", "diskseq"]
        );
    }

    #[test]
    fn attributes_records_do_not_carry_are_no_change() {
        let mut new = loop_dev();
        new.holders = vec!["dm-0".into()];
        new.logical_block_size = Some(4096);
        new.devname = None;
        assert!(changed_attributes(&loop_dev(), &new).is_empty());
    }

    /// Regression test: values were converted to text lossily, so two
    /// backing files whose paths differ only in bytes that are not UTF-8
    /// compared equal (no DEVICE_CHANGE), and records lost those bytes.
    #[test]
    fn backing_files_that_are_not_utf8_are_kept_and_compared_exactly() {
        let path = |b: &[u8]| Some(PathBuf::from(OsString::from_vec(b.to_vec())));
        let (mut old, mut new) = (loop_dev(), loop_dev());
        old.backing_file = path(b"/tmp/\xff.img");
        new.backing_file = path(b"/tmp/\xfe.img");
        assert_eq!(changed_attributes(&old, &new), ["backing_file"]);
        let attrs = attributes(&old);
        let (_, v) = attrs.iter().find(|(k, _)| *k == "backing_file").unwrap();
        assert_eq!(v, b"/tmp/\xff.img");
    }

    #[test]
    fn every_attribute_is_compared() {
        let all = BlockDevice {
            serial: Some("S1".into()),
            wwid: Some("naa.1".into()),
            model: Some("M".into()),
            ..loop_dev()
        };
        let keys: Vec<&str> = attributes(&all).iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ATTRIBUTES.map(|(k, _)| k));
    }

    #[test]
    fn attributes_list_the_present_ones_in_order() {
        let keys: Vec<&str> = attributes(&loop_dev()).iter().map(|(k, _)| *k).collect();
        assert_eq!(
            keys,
            [
                "dev",
                "size",
                "ro",
                "type",
                "removable",
                "rotational",
                "backing_file",
                "diskseq"
            ]
        );
        let attrs = attributes(&sda());
        let get = |k: &str| {
            attrs
                .iter()
                .find(|(a, _)| *a == k)
                .map(|(_, v)| String::from_utf8(v.clone()).unwrap())
        };
        assert_eq!(get("dev").as_deref(), Some("8:0"));
        assert_eq!(get("size").as_deref(), Some("8388608"));
        assert_eq!(get("ro").as_deref(), Some("0"));
        assert_eq!(get("rotational").as_deref(), Some("1"));
        assert_eq!(get("model").as_deref(), Some("QEMU HARDDISK"));
        assert_eq!(get("backing_file"), None);
    }

    #[test]
    fn device_types_follow_lsblk() {
        assert_eq!(device_type(&loop_dev()), "loop");
        assert_eq!(device_type(&sda()), "disk");
        let part = |major| BlockDevice {
            name: "x1".into(),
            major,
            kind: Kind::Partition {
                number: 1,
                parent: "x".into(),
            },
            ..sda()
        };
        assert_eq!(device_type(&part(8)), "part");
        // A loop device's partition is a partition, whatever its major.
        assert_eq!(device_type(&part(LOOP_MAJOR)), "part");
        assert_eq!(device_type(&part(259)), "part");
    }

    #[test]
    fn change_names_are_the_record_types() {
        let kinds = [
            (ChangeKind::DeviceAdd(loop_dev()), "DEVICE_ADD"),
            (ChangeKind::DeviceRemove(loop_dev()), "DEVICE_REMOVE"),
            (
                ChangeKind::DeviceChange {
                    old: Box::new(loop_dev()),
                    new: Box::new(loop_dev()),
                    changed: Vec::new(),
                },
                "DEVICE_CHANGE",
            ),
        ];
        for (kind, name) in kinds {
            let c = Change { kind, scan: false };
            assert_eq!(c.name(), name);
            assert_eq!(crate::record::record_type(&c).to_string(), name);
        }
    }
}
