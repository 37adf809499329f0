//! [`Change`]: what the device tracker logs — a device added, changed or
//! removed, a PV found or lost, a VG complete or incomplete — and how it
//! was seen ([`Change::scan`]).

use weir_lvm::Uuid;
use weir_lvm::assembly::VgRef;

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
        }
    }
}

/// A device's attributes as records carry them: `(field, value)`, the
/// optional ones only when present. DEVICE_CHANGE compares these.
pub fn attributes(d: &BlockDevice) -> Vec<(&'static str, String)> {
    let flag = |b: bool| if b { "1" } else { "0" }.to_owned();
    let mut out = vec![
        ("dev", format!("{}:{}", d.major, d.minor)),
        ("size", d.size_bytes.to_string()),
        ("ro", flag(d.read_only)),
        ("type", device_type(d).to_owned()),
    ];
    let optional = [
        ("removable", d.removable.map(flag)),
        ("rotational", d.rotational.map(flag)),
        (
            "backing_file",
            d.backing_file
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned()),
        ),
        ("model", d.model.clone()),
        ("serial", d.serial.clone()),
        ("wwid", d.wwid.clone()),
        ("diskseq", d.diskseq.map(|n| n.to_string())),
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

/// The attributes that differ between two snapshots of a device, in
/// [`attributes`] order.
pub fn changed_attributes(old: &BlockDevice, new: &BlockDevice) -> Vec<&'static str> {
    let (a, b) = (attributes(old), attributes(new));
    let keys = a.iter().chain(&b).map(|(k, _)| *k);
    let mut changed: Vec<&'static str> = Vec::new();
    for k in keys {
        let va = a.iter().find(|(x, _)| *x == k).map(|(_, v)| v);
        let vb = b.iter().find(|(x, _)| *x == k).map(|(_, v)| v);
        if va != vb && !changed.contains(&k) {
            changed.push(k);
        }
    }
    changed
}
