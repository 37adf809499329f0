//! The difference between the previous state and a fresh scan, as the
//! changes the tracker would have logged had it been watching.
//!
//! Order: what went away first, as the tracker logs it live (PV_LOST,
//! VG_INCOMPLETE, DEVICE_REMOVE), then DEVICE_CHANGE, DEVICE_ADD,
//! PV_FOUND; then the metadata: VG_CHANGE with its LV_* records, the
//! LV_REMOVEs of VGs gone, PV_CHANGE, VG_REMOVE, the LV_ADDs of VGs new,
//! and VG_COMPLETE; within each, by device number or VG name (LVs in
//! metadata order). A device number that now carries another name is
//! another device: a DEVICE_REMOVE and a DEVICE_ADD.
//!
//! A VG whose previous state has no details (a version 1 checkpoint) gets
//! no VG_CHANGE or LV_* records: there is nothing to compare with.

use std::collections::{BTreeMap, HashSet};

use weir_lvm::Uuid;
use weir_lvm::assembly::{LvRef, VgDelta, VgRef};

use super::current::{Current, CurrentDevice, CurrentVg};
use super::{DeviceState, LvState, State, VgDetail, VgState, uuid};
use crate::change::{Change, ChangeKind, changed_attributes};
use crate::devnum::DevNum;

/// A change found by the comparison, with its record's parent (a
/// partition's disk), which the previous state knows for a device that is
/// gone and the scan for one that is there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reconciled {
    pub(crate) change: Change,
    pub(crate) parent: Option<DevNum>,
}

/// The changes from `prev` to `now`, in logging order.
pub(crate) fn diff(prev: &State, now: &Current<'_>) -> Vec<Reconciled> {
    let now_devs: BTreeMap<DevNum, &CurrentDevice<'_>> = now
        .devices
        .iter()
        .map(|d| (DevNum::of(d.device), d))
        .collect();
    // The same device in both: same number, same name.
    let same = |p: &DeviceState| {
        now_devs
            .get(&p.dev)
            .copied()
            .filter(|d| d.device.name == p.name)
    };
    let mut out = Vec::new();
    let mut push = |kind: ChangeKind, parent: Option<DevNum>| {
        out.push(Reconciled {
            change: Change { kind, scan: true },
            parent,
        });
    };

    // PVs gone: the device went, lost its label, or carries another PV.
    for p in prev.devices.values() {
        let Some(pv) = &p.pv else { continue };
        let now_uuid = same(p).and_then(|d| d.pv.as_ref()).map(|n| n.uuid.0);
        if now_uuid == Some(pv.uuid) {
            continue;
        }
        let Some(id) = uuid(&pv.uuid) else { continue };
        let vg = pv.vg_uuid.and_then(|v| {
            Some(VgRef {
                name: pv.vg_name.clone(),
                uuid: uuid(&v)?,
                seqno: prev.vgs.get(&v).map_or(0, |s| s.seqno),
            })
        });
        push(
            ChangeKind::PvLost {
                dev: p.dev,
                name: p.name.clone(),
                uuid: id,
                vg,
            },
            None,
        );
    }

    // VGs complete before and not now.
    let present: HashSet<Uuid> = now
        .devices
        .iter()
        .filter_map(|d| d.pv.as_ref().map(|p| p.uuid))
        .collect();
    // VGs gone while some PV they listed is still there: removed, not
    // unplugged (VG_REMOVE, not VG_INCOMPLETE).
    let removed: HashSet<[u8; 32]> = prev
        .vgs
        .values()
        .filter(|v| !now.vgs.iter().any(|n| n.vg.uuid.0 == v.uuid))
        .filter(|v| listed(prev, v).iter().any(|u| present.contains(u)))
        .map(|v| v.uuid)
        .collect();
    let mut lost_vgs: Vec<(VgRef, Vec<Uuid>)> = Vec::new();
    for v in prev
        .vgs
        .values()
        .filter(|v| v.complete && !removed.contains(&v.uuid))
    {
        let Some(id) = uuid(&v.uuid) else { continue };
        match now.vgs.iter().find(|n| n.vg.uuid == id) {
            Some(n) if n.complete => {}
            Some(n) => lost_vgs.push((n.vg.clone(), n.missing.clone())),
            None => {
                // Forgotten: no device carries its metadata any more. Its
                // PVs as last seen that are nowhere now are what it lacks.
                let mut missing: Vec<Uuid> = Vec::new();
                for pv in prev.devices.values().filter_map(|d| d.pv.as_ref()) {
                    if pv.vg_uuid == Some(v.uuid)
                        && let Some(u) = uuid(&pv.uuid)
                        && !present.contains(&u)
                        && !missing.contains(&u)
                    {
                        missing.push(u);
                    }
                }
                let vg = VgRef {
                    name: v.name.clone(),
                    uuid: id,
                    seqno: v.seqno,
                };
                lost_vgs.push((vg, missing));
            }
        }
    }
    lost_vgs.sort_by(|a, b| (&a.0.name, a.0.uuid).cmp(&(&b.0.name, b.0.uuid)));
    for (vg, missing) in lost_vgs {
        push(ChangeKind::VgIncomplete { vg, missing }, None);
    }

    // Devices gone.
    for p in prev.devices.values().filter(|p| same(p).is_none()) {
        let disk = p.parent.and_then(|dn| prev.name_of(dn)).unwrap_or("");
        push(ChangeKind::DeviceRemove(p.to_device(disk)), p.parent);
    }

    // Devices changed.
    for p in prev.devices.values() {
        let Some(d) = same(p) else { continue };
        let disk = p.parent.and_then(|dn| prev.name_of(dn)).unwrap_or("");
        let old = p.to_device(disk);
        let changed = changed_attributes(&old, d.device);
        if !changed.is_empty() {
            push(
                ChangeKind::DeviceChange {
                    old: Box::new(old),
                    new: Box::new(d.device.clone()),
                    changed,
                },
                d.parent,
            );
        }
    }

    // Devices new.
    let is_new = |d: &CurrentDevice<'_>| {
        prev.devices
            .get(&DevNum::of(d.device))
            .is_none_or(|p| p.name != d.device.name)
    };
    for d in now.devices.iter().filter(|d| is_new(d)) {
        push(ChangeKind::DeviceAdd(d.device.clone()), d.parent);
    }

    // PVs new: on a new device, a device that had none, or another PV.
    for d in &now.devices {
        let Some(pv) = &d.pv else { continue };
        let dn = DevNum::of(d.device);
        let had = prev
            .devices
            .get(&dn)
            .filter(|p| p.name == d.device.name)
            .and_then(|p| p.pv.as_ref())
            .map(|p| p.uuid);
        if had == Some(pv.uuid.0) {
            continue;
        }
        push(
            ChangeKind::PvFound {
                dev: dn,
                name: d.device.name.clone(),
                uuid: pv.uuid,
                vg: pv.vg.clone(),
                duplicate_of: pv.duplicate_of.clone(),
            },
            None,
        );
    }

    metadata(prev, now, &removed, &mut push);

    // VGs complete now and not before: the transition the live tracker
    // logs once.
    let mut completed: Vec<_> = now
        .vgs
        .iter()
        .filter(|n| n.complete && !prev.vgs.get(&n.vg.uuid.0).is_some_and(|p| p.complete))
        .collect();
    completed.sort_by(|a, b| (&a.vg.name, a.vg.uuid).cmp(&(&b.vg.name, b.vg.uuid)));
    for n in completed {
        push(
            ChangeKind::VgComplete {
                vg: n.vg.clone(),
                pv_count: n.pv_count,
            },
            None,
        );
    }
    out
}

/// The PV uuids VG `v` listed: its details', or else the devices that
/// named it.
fn listed(prev: &State, v: &VgState) -> Vec<Uuid> {
    match &v.detail {
        Some(d) if !d.pvs.is_empty() => d.pvs.iter().filter_map(|p| uuid(p)).collect(),
        _ => prev
            .devices
            .values()
            .filter_map(|d| d.pv.as_ref())
            .filter(|p| p.vg_uuid == Some(v.uuid))
            .filter_map(|p| uuid(&p.uuid))
            .collect(),
    }
}

/// What the metadata changed: VG_CHANGE and LV_* of VGs in both, LV_REMOVE
/// of VGs gone, PV_CHANGE, VG_REMOVE, LV_ADD of VGs new.
fn metadata(
    prev: &State,
    now: &Current<'_>,
    removed: &HashSet<[u8; 32]>,
    push: &mut impl FnMut(ChangeKind, Option<DevNum>),
) {
    let mut now_vgs: Vec<&CurrentVg> = now.vgs.iter().collect();
    now_vgs.sort_by(|a, b| (&a.vg.name, a.vg.uuid).cmp(&(&b.vg.name, b.vg.uuid)));
    for n in &now_vgs {
        let Some(p) = prev.vgs.get(&n.vg.uuid.0) else {
            continue;
        };
        let Some(d) = &p.detail else { continue };
        // Seqno 0: a VG the crash tail first met in an LV record, whose
        // seqno no record gave (LVM's start at 1).
        if p.seqno != 0 && (p.seqno != n.vg.seqno || p.name != n.vg.name) {
            let old = VgRef {
                name: p.name.clone(),
                uuid: n.vg.uuid,
                seqno: p.seqno,
            };
            let delta = vg_delta(p, d, &n.meta);
            push(
                ChangeKind::VgChange {
                    old,
                    vg: n.vg.clone(),
                    delta: Box::new(delta),
                },
                None,
            );
        }
        for c in lv_changes(&d.lvs, n) {
            push(c, None);
        }
    }
    let mut gone: Vec<&VgState> = prev
        .vgs
        .values()
        .filter(|v| !now.vgs.iter().any(|n| n.vg.uuid.0 == v.uuid))
        .collect();
    gone.sort_by(|a, b| (&a.name, a.uuid).cmp(&(&b.name, b.uuid)));
    for v in &gone {
        let Some(id) = uuid(&v.uuid) else { continue };
        let vg = VgRef {
            name: v.name.clone(),
            uuid: id,
            seqno: v.seqno,
        };
        for lv in v.detail.iter().flat_map(|d| &d.lvs) {
            if let Some(lv) = lv.to_ref() {
                push(ChangeKind::LvRemove { vg: vg.clone(), lv }, None);
            }
        }
    }
    // PVs that stayed and are listed by another VG now, or by none.
    for d in &now.devices {
        let Some(pv) = &d.pv else { continue };
        let dn = DevNum::of(d.device);
        let Some(p) = prev
            .devices
            .get(&dn)
            .filter(|p| p.name == d.device.name)
            .and_then(|p| p.pv.as_ref())
            .filter(|p| p.uuid == pv.uuid.0)
        else {
            continue;
        };
        let now_vg = pv.vg.as_ref().map(|v| v.uuid.0);
        if p.vg_uuid == now_vg {
            continue;
        }
        let old_vg = p.vg_uuid.and_then(|v| {
            Some(VgRef {
                name: p.vg_name.clone(),
                uuid: uuid(&v)?,
                seqno: prev.vgs.get(&v).map_or(0, |s| s.seqno),
            })
        });
        push(
            ChangeKind::PvChange {
                dev: dn,
                name: d.device.name.clone(),
                uuid: pv.uuid,
                vg: pv.vg.clone(),
                old_vg,
            },
            None,
        );
    }
    for v in gone.iter().filter(|v| removed.contains(&v.uuid)) {
        let Some(id) = uuid(&v.uuid) else { continue };
        let vg = VgRef {
            name: v.name.clone(),
            uuid: id,
            seqno: v.seqno,
        };
        push(ChangeKind::VgRemove { vg }, None);
    }
    for n in now_vgs
        .iter()
        .filter(|n| !prev.vgs.contains_key(&n.vg.uuid.0))
    {
        let extent = n.meta.extent_bytes();
        for lv in &n.meta.lvs {
            push(
                ChangeKind::LvAdd {
                    vg: n.vg.clone(),
                    lv: LvRef::of(lv, extent),
                },
                None,
            );
        }
    }
}

/// VG_CHANGE's delta from what the previous state knew.
fn vg_delta(p: &VgState, d: &VgDetail, meta: &weir_lvm::VgMeta) -> VgDelta {
    let now = VgDetail::of(meta);
    let mut delta = VgDelta::of(meta, meta);
    delta.old_name = (p.name != meta.name).then(|| p.name.clone());
    // A VG first known from the crash tail may not know its PV list.
    if !d.pvs.is_empty() {
        delta.pvs_added = now
            .pvs
            .iter()
            .filter(|u| !d.pvs.contains(u))
            .filter_map(|u| uuid(u))
            .collect();
        delta.pvs_removed = d
            .pvs
            .iter()
            .filter(|u| !now.pvs.contains(u))
            .filter_map(|u| uuid(u))
            .collect();
    }
    delta.extent_count.0 = d.extent_count;
    delta.free_count.0 = d.free_count;
    delta.extent_size.0 = d.extent_size;
    delta.metadata_copies.0 = d.metadata_copies;
    delta.status.0.clone_from(&d.status);
    delta
}

/// The LV_* records from the previous LVs to `n`'s: removals, then
/// changes and additions in metadata order.
fn lv_changes(before: &[LvState], n: &CurrentVg) -> Vec<ChangeKind> {
    let extent = n.meta.extent_bytes();
    let now: Vec<LvRef> = n.meta.lvs.iter().map(|l| LvRef::of(l, extent)).collect();
    let mut out = Vec::new();
    for b in before {
        if !now.iter().any(|l| l.uuid.0 == b.uuid)
            && let Some(lv) = b.to_ref()
        {
            out.push(ChangeKind::LvRemove {
                vg: n.vg.clone(),
                lv,
            });
        }
    }
    for lv in now {
        let Some(old) = before
            .iter()
            .find(|b| b.uuid == lv.uuid.0)
            .and_then(LvState::to_ref)
        else {
            out.push(ChangeKind::LvAdd {
                vg: n.vg.clone(),
                lv,
            });
            continue;
        };
        let mut changed = Vec::new();
        if old.name != lv.name {
            changed.push("name");
        }
        if old.size_bytes != lv.size_bytes {
            changed.push("size");
        }
        if (old.layout, old.segments, &old.segtype) != (lv.layout, lv.segments, &lv.segtype) {
            changed.push("segments");
        }
        if old.status != lv.status {
            changed.push("status");
        }
        if !changed.is_empty() {
            out.push(ChangeKind::LvChange {
                vg: n.vg.clone(),
                old,
                lv,
                changed,
            });
        }
    }
    out
}
