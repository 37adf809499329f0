//! The difference between the previous state and a fresh scan, as the
//! changes the tracker would have logged had it been watching.
//!
//! Order: what went away first, as the tracker logs it live (PV_LOST,
//! VG_INCOMPLETE, DEVICE_REMOVE), then DEVICE_CHANGE, DEVICE_ADD,
//! PV_FOUND and VG_COMPLETE; within each, by device number or VG name.
//! A device number that now carries another name is another device: a
//! DEVICE_REMOVE and a DEVICE_ADD.

use std::collections::{BTreeMap, HashSet};

use weir_lvm::Uuid;
use weir_lvm::assembly::VgRef;

use super::current::{Current, CurrentDevice};
use super::{DeviceState, State, uuid};
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
    let mut lost_vgs: Vec<(VgRef, Vec<Uuid>)> = Vec::new();
    for v in prev.vgs.values().filter(|v| v.complete) {
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
