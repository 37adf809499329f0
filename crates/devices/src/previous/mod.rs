//! [`Previous`]: the device inventory as the tracker last logged it, kept
//! across restarts so that a start logs only what changed while no weir
//! was watching.
//!
//! It holds exactly what the tracker's records are computed from — each
//! device's record attributes, its PV, each VG's completeness, the VG's
//! own attributes and its LVs as VG_CHANGE and LV_* records name them —
//! and no metadata text: a checkpoint of a thousand PVs stays small.
//!
//! Its layout is part of the daemon's checkpoint file. The first version
//! had no VG details and no LVs; [`v1`] reads it, and a VG read from it
//! has no [`VgDetail`]: its LVs are taken as they are found, not logged
//! as changes. On start the
//! tracker brings it up to the end of the log (`tail`: records written
//! after the checkpoint, before a crash), compares it with a fresh scan
//! (`diff`) and logs the difference flagged `RECONCILED`.

pub(crate) mod current;
pub(crate) mod diff;
pub(crate) mod tail;
#[cfg(test)]
mod tests;
pub mod v1;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use weir_lvm::assembly::LvRef;
use weir_lvm::{Uuid, VgMeta};

use crate::devnum::DevNum;
use crate::sysfs::{BlockDevice, Kind};
use current::Current;

/// The inventory as last logged: enough to compute every record the
/// tracker would write about it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Previous {
    /// Every block device, by number.
    pub devices: Vec<DeviceState>,
    /// Every VG known, by uuid.
    pub vgs: Vec<VgState>,
    /// The index of the last record the tracker had appended when this
    /// was taken: the state is the one that record left. 0 without a log.
    pub log_index: u64,
}

/// One block device: the attributes DEVICE_ADD carries, and its PV.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceState {
    /// Its number (the record target).
    pub dev: DevNum,
    /// Its name.
    pub name: String,
    /// A partition's disk (the record parent), when it was known.
    pub parent: Option<DevNum>,
    /// Whether it is a partition (`type` = `part`; else `disk`, or `loop`
    /// for the loop driver's major).
    pub partition: bool,
    /// `size`, in bytes.
    pub size_bytes: u64,
    /// `ro`.
    pub read_only: bool,
    /// `removable`.
    pub removable: Option<bool>,
    /// `rotational`.
    pub rotational: Option<bool>,
    /// `backing_file`, the kernel's bytes.
    pub backing_file: Option<Vec<u8>>,
    /// `model`.
    pub model: Option<String>,
    /// `serial`.
    pub serial: Option<String>,
    /// `wwid`.
    pub wwid: Option<String>,
    /// `diskseq`.
    pub diskseq: Option<u64>,
    /// The PV it carries, if any.
    pub pv: Option<PvState>,
}

/// A PV as PV_FOUND names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PvState {
    /// The PV uuid: 32 characters, no dashes.
    pub uuid: [u8; 32],
    /// The uuid of the VG whose metadata lists it; `None` for an orphan.
    pub vg_uuid: Option<[u8; 32]>,
    /// That VG's name; empty for an orphan.
    pub vg_name: String,
}

/// A VG as VG_COMPLETE and VG_INCOMPLETE name it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VgState {
    /// The VG uuid: 32 characters, no dashes.
    pub uuid: [u8; 32],
    /// Its name.
    pub name: String,
    /// The seqno of the metadata in use.
    pub seqno: u64,
    /// Every PV its metadata lists is present.
    pub complete: bool,
    /// How many of them are absent.
    pub missing: u64,
    /// What VG_CHANGE and LV_* records say of it; `None` when it was read
    /// from a checkpoint older than these records.
    pub detail: Option<VgDetail>,
}

/// A VG's own attributes and its LVs, as VG_CHANGE and LV_* name them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VgDetail {
    /// The PV uuids its metadata lists, in its order.
    pub pvs: Vec<[u8; 32]>,
    /// Total extents of its PVs.
    pub extent_count: u64,
    /// Free extents.
    pub free_count: u64,
    /// The extent size in bytes.
    pub extent_size: u64,
    /// `metadata_copies`.
    pub metadata_copies: u64,
    /// `status` flags, comma-joined.
    pub status: String,
    /// Its LVs, in metadata order.
    pub lvs: Vec<LvState>,
}

/// An LV as LV_* records name it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LvState {
    /// The LV uuid: 32 characters, no dashes.
    pub uuid: [u8; 32],
    /// Its name.
    pub name: String,
    /// Its extents.
    pub extents: u64,
    /// Its size in bytes.
    pub size_bytes: u64,
    /// Its segment types, comma-joined.
    pub segtype: String,
    /// Its segment count.
    pub segments: u64,
    /// `status` flags and allocation policy, comma-joined.
    pub status: String,
    /// The fingerprint of its segments' layout.
    pub layout: u32,
}

impl VgDetail {
    /// What records say of `meta`.
    pub(crate) fn of(meta: &VgMeta) -> VgDetail {
        VgDetail {
            pvs: meta.pvs.iter().map(|p| p.id.0).collect(),
            extent_count: meta.extent_count(),
            free_count: meta.free_count(),
            extent_size: meta.extent_bytes(),
            metadata_copies: meta.metadata_copies,
            status: meta.status.join(","),
            lvs: meta
                .lvs
                .iter()
                .map(|lv| LvState::of(&LvRef::of(lv, meta.extent_bytes())))
                .collect(),
        }
    }
}

impl LvState {
    /// What records say of `lv`.
    pub(crate) fn of(lv: &LvRef) -> LvState {
        LvState {
            uuid: lv.uuid.0,
            name: lv.name.clone(),
            extents: lv.extents,
            size_bytes: lv.size_bytes,
            segtype: lv.segtype.clone(),
            segments: lv.segments as u64,
            status: lv.status.clone(),
            layout: lv.layout,
        }
    }

    /// The [`LvRef`] a record about it names; `None` for a uuid that is
    /// not one.
    pub(crate) fn to_ref(&self) -> Option<LvRef> {
        Some(LvRef {
            name: self.name.clone(),
            uuid: uuid(&self.uuid)?,
            extents: self.extents,
            size_bytes: self.size_bytes,
            segtype: self.segtype.clone(),
            segments: usize::try_from(self.segments).unwrap_or(usize::MAX),
            status: self.status.clone(),
            layout: self.layout,
        })
    }
}

impl Previous {
    /// The state `now` shows, as of record `log_index`.
    pub(crate) fn of(now: &Current<'_>, log_index: u64) -> Previous {
        let devices = now
            .devices
            .iter()
            .map(|d| {
                let mut s = DeviceState::of(d.device, d.parent);
                s.pv = d.pv.as_ref().map(|pv| PvState {
                    uuid: pv.uuid.0,
                    vg_uuid: pv.vg.as_ref().map(|v| v.uuid.0),
                    vg_name: pv.vg.as_ref().map(|v| v.name.clone()).unwrap_or_default(),
                });
                s
            })
            .collect();
        let vgs = now
            .vgs
            .iter()
            .map(|v| VgState {
                uuid: v.vg.uuid.0,
                name: v.vg.name.clone(),
                seqno: v.vg.seqno,
                complete: v.complete,
                missing: v.missing.len() as u64,
                detail: Some(VgDetail::of(&v.meta)),
            })
            .collect();
        Previous {
            devices,
            vgs,
            log_index,
        }
    }
}

impl DeviceState {
    /// A device with number `dev` and nothing else known yet.
    pub(crate) fn empty(dev: DevNum) -> DeviceState {
        DeviceState {
            dev,
            name: String::new(),
            parent: None,
            partition: false,
            size_bytes: 0,
            read_only: false,
            removable: None,
            rotational: None,
            backing_file: None,
            model: None,
            serial: None,
            wwid: None,
            diskseq: None,
            pv: None,
        }
    }

    /// What records say of `d`, a partition of disk `parent`; no PV.
    pub(crate) fn of(d: &BlockDevice, parent: Option<DevNum>) -> DeviceState {
        DeviceState {
            name: d.name.clone(),
            parent,
            partition: d.is_partition(),
            size_bytes: d.size_bytes,
            read_only: d.read_only,
            removable: d.removable,
            rotational: d.rotational,
            backing_file: d
                .backing_file
                .as_ref()
                .map(|p| p.as_os_str().as_bytes().to_vec()),
            model: d.model.clone(),
            serial: d.serial.clone(),
            wwid: d.wwid.clone(),
            diskseq: d.diskseq,
            ..DeviceState::empty(DevNum::of(d))
        }
    }

    /// A [`BlockDevice`] with these attributes, for the records of the
    /// differences; what records do not carry (holders, block size,
    /// partition lists) is empty. `parent_name` is a partition's disk.
    pub(crate) fn to_device(&self, parent_name: &str) -> BlockDevice {
        BlockDevice {
            name: self.name.clone(),
            major: self.dev.major,
            minor: self.dev.minor,
            size_bytes: self.size_bytes,
            read_only: self.read_only,
            removable: self.removable,
            rotational: self.rotational,
            logical_block_size: None,
            kind: if self.partition {
                Kind::Partition {
                    number: 0,
                    parent: parent_name.to_owned(),
                }
            } else {
                Kind::Disk {
                    partitions: Vec::new(),
                }
            },
            holders: Vec::new(),
            slaves: Vec::new(),
            backing_file: self
                .backing_file
                .as_ref()
                .map(|b| PathBuf::from(OsString::from_vec(b.clone()))),
            model: self.model.clone(),
            serial: self.serial.clone(),
            wwid: self.wwid.clone(),
            diskseq: self.diskseq,
            devname: None,
        }
    }
}

/// [`Previous`] keyed for lookups, while the tail is applied and the
/// difference computed: a checkpoint listing a key twice keeps the last.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct State {
    pub(crate) devices: BTreeMap<DevNum, DeviceState>,
    pub(crate) vgs: BTreeMap<[u8; 32], VgState>,
}

impl State {
    pub(crate) fn of(prev: Previous) -> State {
        State {
            devices: prev.devices.into_iter().map(|d| (d.dev, d)).collect(),
            vgs: prev.vgs.into_iter().map(|v| (v.uuid, v)).collect(),
        }
    }

    /// The name of device `dn`, if known.
    pub(crate) fn name_of(&self, dn: DevNum) -> Option<&str> {
        self.devices.get(&dn).map(|d| d.name.as_str())
    }
}

/// A uuid from a checkpoint or a record, checked: [`Uuid`]'s display
/// assumes its 32 alphanumeric characters.
pub(crate) fn uuid(b: &[u8]) -> Option<Uuid> {
    if b.len() != 32 {
        return None;
    }
    Uuid::parse(b)
}
