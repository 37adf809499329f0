//! Applying one uevent, or a whole re-read, to the [`Inventory`].
//!
//! Every path ends in [`Inventory::put`] or [`Inventory::drop_device`], so
//! a device's entry, its name and its PV in the assembly never disagree.

use std::collections::{BTreeMap, BTreeSet};

use weir_lvm::assembly::Event;

use super::{Entry, Inventory, media};
use crate::change::{Change, ChangeKind, changed_attributes};
use crate::devnum::DevNum;
use crate::probe::{probe_device, seen};
use crate::sysfs::{BlockDevice, Kind};
use crate::uevent::{Action, Uevent};
use crate::{Error, Result};

impl Inventory {
    /// Applies one uevent; returns the changes it made, in order. Events
    /// of other subsystems change nothing.
    pub fn on_uevent(&mut self, ev: &Uevent) -> Vec<Change> {
        if !ev.is_block() {
            return Vec::new();
        }
        self.counters.uevents += 1;
        let name = ev.name().to_owned();
        let known = match (ev.major, ev.minor) {
            (Some(major), Some(minor)) => Some(DevNum { major, minor }),
            _ => self.names.get(&name).copied(),
        };
        // A later event supersedes a wait for a media change's number.
        if let Some(dn) = known {
            self.awaiting.remove(&dn);
        }
        match ev.action {
            Action::Remove => known.map_or_else(Vec::new, |dn| self.drop_device(dn, false)),
            // add, change, move, online, offline, bind...: whatever it was,
            // the device's state now is in sysfs. A change on a known
            // device re-reads only what a change can change.
            _ => match self.read_device(ev) {
                Ok(dev) => {
                    self.note_media_change(ev, &dev);
                    self.put(dev, false)
                }
                // Gone already: its remove event is queued behind this one,
                // but the device is gone now.
                Err(Error::Vanished { .. }) => {
                    known.map_or_else(Vec::new, |dn| self.drop_device(dn, false))
                }
                Err(e) => {
                    tracing::warn!(device = %name, error = %e, "reading a block device");
                    Vec::new()
                }
            },
        }
    }

    /// The device's current snapshot: for a `change` on the device the
    /// event's number names, a refresh of what a change can change; else a
    /// whole read.
    fn read_device(&self, ev: &Uevent) -> Result<BlockDevice> {
        let name = ev.name();
        if ev.action == Action::Change
            && let (Some(major), Some(minor)) = (ev.major, ev.minor)
            && let Some(old) = self.devices.get(&DevNum { major, minor })
            && old.device.name == name
        {
            // A media change's number is the old media's: read sysfs's
            // (see `media`).
            let diskseq = if media::is_media_change(ev) {
                None
            } else {
                ev.diskseq
            };
            return self.sysfs.refresh(&old.device, diskseq);
        }
        self.sysfs.device(name)
    }

    /// Reads every device again and applies the difference, flagged `scan`:
    /// after the kernel dropped uevents (ENOBUFS), nothing else is exact.
    pub fn resync(&mut self) -> Result<Vec<Change>> {
        self.counters.resyncs += 1;
        let scan = self.sysfs.scan()?;
        let fresh: BTreeSet<DevNum> = scan.devices.iter().map(DevNum::of).collect();
        let gone: Vec<DevNum> = self
            .devices
            .keys()
            .filter(|dn| !fresh.contains(dn))
            .copied()
            .collect();
        let mut changes = Vec::new();
        for dn in gone {
            changes.extend(self.drop_device(dn, true));
        }
        for dev in scan.devices {
            changes.extend(self.put(dev, true));
        }
        self.unreadable = scan.failed;
        Ok(changes)
    }

    /// Files `dev` (new, or a fresh snapshot of a known device), probes it
    /// and updates the assembly.
    pub(super) fn put(&mut self, dev: BlockDevice, scan: bool) -> Vec<Change> {
        let dn = DevNum::of(&dev);
        let mut changes = Vec::new();
        // The same name under another number: the old device is gone.
        if let Some(&other) = self.names.get(&dev.name)
            && other != dn
        {
            changes.extend(self.drop_device(other, scan));
        }
        let old = self.devices.get(&dn).map(|e| e.device.clone());
        match &old {
            None => changes.push(Change {
                kind: ChangeKind::DeviceAdd(dev.clone()),
                scan,
            }),
            Some(old) => {
                let changed = changed_attributes(old, &dev);
                if !changed.is_empty() {
                    changes.push(Change {
                        kind: ChangeKind::DeviceChange {
                            old: Box::new(old.clone()),
                            new: Box::new(dev.clone()),
                            changed,
                        },
                        scan,
                    });
                }
            }
        }
        if let Kind::Partition { parent, .. } = &dev.kind {
            self.note_partition(parent, &dev.name);
        }
        let (probe, bytes) = probe_device(&dev, &self.filter, &self.cache);
        self.counters.probes += 1;
        self.counters.bytes_read += bytes;
        let events = match probe.pv() {
            Some(pv) => self.assembly.add(dn, seen(pv)),
            None => self.assembly.remove(&dn),
        };
        self.names.insert(dev.name.clone(), dn);
        self.devices.insert(dn, Entry { device: dev, probe });
        changes.extend(lvm_changes(&self.devices, events, scan));
        changes
    }

    /// Forgets device `dn`: its PV leaves the assembly first, so PV_LOST
    /// and VG_INCOMPLETE precede DEVICE_REMOVE.
    fn drop_device(&mut self, dn: DevNum, scan: bool) -> Vec<Change> {
        self.awaiting.remove(&dn);
        let events = self.assembly.remove(&dn);
        let mut changes = lvm_changes(&self.devices, events, scan);
        if let Some(e) = self.devices.remove(&dn) {
            if self.names.get(&e.device.name) == Some(&dn) {
                self.names.remove(&e.device.name);
            }
            if let Kind::Partition { parent, .. } = &e.device.kind {
                self.forget_partition(parent, &e.device.name);
            }
            changes.push(Change {
                kind: ChangeKind::DeviceRemove(e.device),
                scan,
            });
        }
        changes
    }

    /// A disk's partition list follows its partitions' events: the kernel
    /// sends none for the disk itself.
    fn note_partition(&mut self, disk: &str, part: &str) {
        if let Some(Kind::Disk { partitions }) = self.disk_kind(disk)
            && !partitions.iter().any(|p| p == part)
        {
            partitions.push(part.to_owned());
            partitions.sort();
        }
    }

    fn forget_partition(&mut self, disk: &str, part: &str) {
        if let Some(Kind::Disk { partitions }) = self.disk_kind(disk) {
            partitions.retain(|p| p != part);
        }
    }

    fn disk_kind(&mut self, disk: &str) -> Option<&mut Kind> {
        let dn = self.names.get(disk)?;
        self.devices.get_mut(dn).map(|e| &mut e.device.kind)
    }
}

/// Turns assembly events into changes, naming devices from `devices`. A
/// duplicate is folded into the PV_FOUND of the device that duplicates.
pub(super) fn lvm_changes(
    devices: &BTreeMap<DevNum, Entry>,
    events: Vec<Event<DevNum>>,
    scan: bool,
) -> Vec<Change> {
    let name = |dn: &DevNum| {
        devices
            .get(dn)
            .map_or_else(|| dn.to_string(), |e| e.device.name.clone())
    };
    let mut out: Vec<Change> = Vec::new();
    for ev in events {
        let kind = match ev {
            Event::PvFound { dev, uuid, vg } => ChangeKind::PvFound {
                dev,
                name: name(&dev),
                uuid,
                vg,
                duplicate_of: None,
            },
            Event::PvLost { dev, uuid, vg } => ChangeKind::PvLost {
                dev,
                name: name(&dev),
                uuid,
                vg,
            },
            Event::DuplicatePv { uuid, devices, .. } => {
                tracing::warn!(
                    pv = %uuid,
                    devices = ?devices.iter().map(&name).collect::<Vec<_>>(),
                    "several devices carry the same PV uuid; the first is used"
                );
                if let (
                    Some(first),
                    Some(Change {
                        kind: ChangeKind::PvFound { duplicate_of, .. },
                        ..
                    }),
                ) = (devices.first(), out.last_mut())
                {
                    *duplicate_of = Some(name(first));
                }
                continue;
            }
            Event::VgComplete { vg, pv_count } => ChangeKind::VgComplete { vg, pv_count },
            Event::VgIncomplete { vg, missing } => ChangeKind::VgIncomplete { vg, missing },
            // Newer kinds of events are not logged until weir knows them.
            _ => continue,
        };
        out.push(Change { kind, scan });
    }
    out
}
