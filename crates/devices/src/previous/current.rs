//! [`Current`]: the live inventory seen the way records see it — each
//! device with its disk's number and its PV as PV_FOUND names it, each VG
//! with its completeness. Checkpoints are taken from it, and restarts
//! compare the previous state with it.

use std::collections::HashMap;
use std::sync::Arc;

use weir_lvm::assembly::VgRef;
use weir_lvm::{Uuid, VgMeta};

use crate::devnum::DevNum;
use crate::inventory::Inventory;
use crate::sysfs::{BlockDevice, Kind};

/// The inventory, as records describe it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Current<'a> {
    /// Every device, by number.
    pub(crate) devices: Vec<CurrentDevice<'a>>,
    /// Every VG known.
    pub(crate) vgs: Vec<CurrentVg>,
}

/// One device.
#[derive(Clone, Debug)]
pub(crate) struct CurrentDevice<'a> {
    pub(crate) device: &'a BlockDevice,
    /// A partition's disk, when the inventory knows it.
    pub(crate) parent: Option<DevNum>,
    pub(crate) pv: Option<CurrentPv>,
}

/// A device's PV.
#[derive(Clone, Debug)]
pub(crate) struct CurrentPv {
    pub(crate) uuid: Uuid,
    /// The VG whose metadata lists it.
    pub(crate) vg: Option<VgRef>,
    /// The device in use for this uuid, when this one is a duplicate.
    pub(crate) duplicate_of: Option<String>,
}

/// One VG.
#[derive(Clone, Debug)]
pub(crate) struct CurrentVg {
    pub(crate) vg: VgRef,
    /// The PVs its metadata lists.
    pub(crate) pv_count: usize,
    pub(crate) complete: bool,
    /// The listed PVs that are absent.
    pub(crate) missing: Vec<Uuid>,
    /// Its metadata in use.
    pub(crate) meta: Arc<VgMeta>,
}

impl<'a> Current<'a> {
    /// Reads `inv`: O(devices + PVs + VGs).
    pub(crate) fn of(inv: &'a Inventory) -> Current<'a> {
        let metas: HashMap<Uuid, &Arc<VgMeta>> = inv.vg_metas().map(|m| (m.id, m)).collect();
        let vgs: Vec<CurrentVg> = inv
            .vgs()
            .into_iter()
            .filter_map(|v| {
                Some(CurrentVg {
                    meta: Arc::clone(metas.get(&v.uuid)?),
                    vg: VgRef {
                        name: v.name,
                        uuid: v.uuid,
                        seqno: v.seqno,
                    },
                    pv_count: v.pv_count,
                    complete: v.complete,
                    missing: v.missing,
                })
            })
            .collect();
        let seqno: HashMap<Uuid, u64> = vgs.iter().map(|v| (v.vg.uuid, v.vg.seqno)).collect();
        let pvs = inv.pvs();
        // The device in use for each uuid: the one not flagged duplicate.
        let in_use: HashMap<Uuid, DevNum> = pvs
            .iter()
            .filter(|p| !p.duplicate)
            .map(|p| (p.uuid, p.device))
            .collect();
        let mut pv_of: HashMap<DevNum, CurrentPv> = HashMap::new();
        for p in pvs {
            let vg = p.vg_uuid.map(|uuid| VgRef {
                name: p.vg_name.clone(),
                uuid,
                seqno: seqno.get(&uuid).copied().unwrap_or(0),
            });
            let duplicate_of = p
                .duplicate
                .then(|| in_use.get(&p.uuid))
                .flatten()
                .map(|dn| {
                    inv.get(*dn)
                        .map_or_else(|| dn.to_string(), |e| e.device.name.clone())
                });
            pv_of.insert(
                p.device,
                CurrentPv {
                    uuid: p.uuid,
                    vg,
                    duplicate_of,
                },
            );
        }
        let devices = inv
            .devices()
            .map(|e| {
                let d = &e.device;
                let parent = match &d.kind {
                    Kind::Partition { parent, .. } => {
                        inv.by_name(parent).map(|p| DevNum::of(&p.device))
                    }
                    Kind::Disk { .. } => None,
                };
                CurrentDevice {
                    device: d,
                    parent,
                    pv: pv_of.remove(&DevNum::of(d)),
                }
            })
            .collect();
        Current { devices, vgs }
    }
}
