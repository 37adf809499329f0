//! Applying one uevent, or a whole re-read, to the [`Inventory`].
//!
//! Every path ends in [`Inventory::put`], [`Inventory::drop_device`] or
//! [`Inventory::file_probe`], so a device's entry, its name, its PV in the
//! assembly and the texts it holds in the cache never disagree, and each
//! moves the generation.

use std::collections::{BTreeMap, BTreeSet};

use weir_lvm::assembly::Event;

use super::{Entry, Inventory, media};
use crate::change::{Change, ChangeKind, changed_attributes};
use crate::devnum::DevNum;
use crate::probe::{Probe, probe_device, seen};
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

    /// A synthesized `change` uevent that echoes a write probed already
    /// (udevd's `watch`): the device's sysfs snapshot is refreshed, and it
    /// is probed again only if its attributes moved. Anything else is
    /// [`on_uevent`](Self::on_uevent).
    pub fn on_echo(&mut self, ev: &Uevent) -> Vec<Change> {
        if ev.is_block()
            && ev.action == Action::Change
            && let (Some(major), Some(minor)) = (ev.major, ev.minor)
            && let dn = (DevNum { major, minor })
            && let Some(old) = self.devices.get(&dn)
            && old.device.name == ev.name()
            && let Ok(dev) = self.read_device(ev)
            && changed_attributes(&old.device, &dev).is_empty()
        {
            self.counters.uevents += 1;
            self.counters.echoes += 1;
            self.generation += 1;
            if let Some(e) = self.devices.get_mut(&dn) {
                e.device = dev;
            }
            return Vec::new();
        }
        self.on_uevent(ev)
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
        let probed = probe_device(&dev, &self.filter, &self.cache);
        self.names.insert(dev.name.clone(), dn);
        match self.devices.get_mut(&dn) {
            Some(e) => e.device = dev,
            // Until its probe is filed, a placeholder that names no text.
            None => {
                let probe = Probe::Skipped(crate::probe::Skip::Empty);
                self.devices.insert(
                    dn,
                    Entry {
                        device: dev,
                        probe,
                        fsid: None,
                    },
                );
            }
        }
        changes.extend(self.file_probe(dn, probed, scan));
        changes
    }

    /// A device LVM would read was written (closed after writing; no
    /// uevent comes for that): probes it again and applies what changed.
    /// One label and header read; the text only if it is new.
    pub fn on_write(&mut self, dn: DevNum) -> Vec<Change> {
        if !self.readable(dn) {
            return Vec::new();
        }
        self.counters.writes += 1;
        let Some(e) = self.devices.get(&dn) else {
            return Vec::new();
        };
        let probed = probe_device(&e.device, &self.filter, &self.cache);
        self.file_probe(dn, probed, false)
    }

    /// Files a fresh probe of known device `dn`: the assembly, the texts
    /// held, the counters and the generation follow it. A reading that
    /// stayed torn, of a PV whose last reading was whole, is not filed:
    /// the device keeps that reading until a write or an event reads it
    /// again, whole.
    pub(super) fn file_probe(
        &mut self,
        dn: DevNum,
        probed: crate::probe::Probed,
        scan: bool,
    ) -> Vec<Change> {
        self.generation += 1;
        self.counters.probes += 1;
        self.counters.bytes_read += probed.bytes;
        self.counters.torn += u64::from(probed.torn);
        let Some(entry) = self.devices.get_mut(&dn) else {
            return Vec::new();
        };
        let probe = probed.probe;
        if let (Some(new), Some(old)) = (probe.pv(), entry.probe.pv())
            && new.torn()
            && new.vg.is_none()
            && old.vg.is_some()
            && new.uuid() == old.uuid()
        {
            self.counters.torn_kept += 1;
            tracing::warn!(
                device = %entry.device.name,
                "the LVM metadata stayed torn over {} readings; keeping the last whole reading",
                probed.torn
            );
            return Vec::new();
        }
        entry.fsid = probed.fsid;
        // Held before the old one is released: a text both name stays
        // cached.
        self.texts.hold(&probe);
        let old = std::mem::replace(&mut entry.probe, probe);
        self.texts.release(&old, &self.cache);
        let events = match entry.probe.pv() {
            Some(pv) => self.assembly.add(dn, seen(pv)),
            None => self.assembly.remove(&dn),
        };
        lvm_changes(&self.devices, events, scan)
    }

    /// Forgets device `dn`: its PV leaves the assembly first, so PV_LOST
    /// and VG_INCOMPLETE precede DEVICE_REMOVE.
    fn drop_device(&mut self, dn: DevNum, scan: bool) -> Vec<Change> {
        self.generation += 1;
        self.awaiting.remove(&dn);
        let events = self.assembly.remove(&dn);
        let mut changes = lvm_changes(&self.devices, events, scan);
        if let Some(e) = self.devices.remove(&dn) {
            self.texts.release(&e.probe, &self.cache);
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
            Event::VgChange { old, vg, delta } => ChangeKind::VgChange {
                old,
                vg,
                delta: Box::new(delta),
            },
            Event::VgRemove { vg } => ChangeKind::VgRemove { vg },
            Event::PvChange {
                dev,
                uuid,
                vg,
                old_vg,
            } => ChangeKind::PvChange {
                dev,
                name: name(&dev),
                uuid,
                vg,
                old_vg,
            },
            Event::LvAdd { vg, lv } => ChangeKind::LvAdd { vg, lv },
            Event::LvRemove { vg, lv } => ChangeKind::LvRemove { vg, lv },
            Event::LvChange {
                vg,
                old,
                lv,
                changed,
            } => ChangeKind::LvChange {
                vg,
                old,
                lv,
                changed,
            },
            // Newer kinds of events are not logged until weir knows them.
            _ => continue,
        };
        out.push(Change { kind, scan });
    }
    out
}
