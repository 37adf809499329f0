//! [`Inventory`]: every block device, what probing it found, and the VGs
//! assembled from the PVs — kept exact one uevent at a time.
//!
//! [`Inventory::scan`] reads everything once (at start, for a listing).
//! After that [`Inventory::on_uevent`] costs one sysfs snapshot of the
//! device the event names and, when it is worth reading, one probe: O(1)
//! in the number of devices, which is seed 000's whole point. A metadata
//! write on an attached device raises no uevent: [`Inventory::on_write`]
//! probes the device that was written, and nothing else. When the
//! kernel dropped uevents, [`Inventory::resync`] reads everything again and
//! logs the difference. A media change's new `diskseq` arrives with no
//! event: [`Inventory::recheck_diskseq`] reads it once the kernel set it.
//!
//! Every change to what the inventory holds moves its
//! [`generation`](Inventory::generation), whether or not it makes a
//! record, so that nothing rendered from it can go stale.

mod apply;
mod media;
mod texts;

use std::collections::{BTreeMap, HashMap};

use weir_lvm::assembly::{Assembly, LvReport, PvReport, VgReport};
use weir_lvm::probe::TextCache;

use crate::change::Change;
use crate::devnum::DevNum;
use crate::filter::Filter;
use crate::fsid::FsId;
use crate::probe::{Probe, probe_all};
use crate::sysfs::{BlockDevice, Detail, Sysfs};
use crate::{Error, Result};

/// One block device and what probing it found.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its sysfs snapshot.
    pub device: BlockDevice,
    /// The probe's result.
    pub probe: Probe,
    /// The filesystem (or swap, or PV) it holds, when it was read and
    /// holds a known one: lsblk's `FSTYPE`, `UUID` and `LABEL`.
    pub fsid: Option<FsId>,
}

/// Counters, for status reports and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Uevents applied (block devices only).
    pub uevents: u64,
    /// Devices probed (whole scans included).
    pub probes: u64,
    /// Bytes read from devices by probes, texts included.
    pub bytes_read: u64,
    /// Whole re-reads after lost uevents.
    pub resyncs: u64,
    /// Probes after a device was written (no uevent).
    pub writes: u64,
    /// udevd's echoes of writes probed already, which were not probed.
    pub echoes: u64,
    /// Readings that found a metadata text being written, read again.
    pub torn: u64,
    /// Torn readings that stayed torn, so the device kept its last whole
    /// reading.
    pub torn_kept: u64,
}

/// The block devices and LVM state of the system.
#[derive(Debug)]
pub struct Inventory {
    sysfs: Sysfs,
    filter: Filter,
    cache: TextCache,
    devices: BTreeMap<DevNum, Entry>,
    names: HashMap<String, DevNum>,
    assembly: Assembly<DevNum>,
    /// Devices whose sysfs attributes could not be read, with why.
    unreadable: Vec<(String, Error)>,
    /// Devices whose media changed while sysfs still showed the old
    /// media's `diskseq`: read again until it moves on.
    awaiting: BTreeMap<DevNum, media::Awaited>,
    /// The texts the probes name, for forgetting those none does.
    texts: texts::TextRefs,
    counters: Counters,
    /// Moves on with every change to what is held.
    generation: u64,
}

impl Inventory {
    /// Reads every block device under `sysfs` and probes those `filter`
    /// accepts, in parallel. Returns the inventory and the changes a start
    /// logs: a `VG_COMPLETE` (flagged `scan`) for each VG already complete.
    pub fn scan(sysfs: Sysfs, filter: Filter) -> Result<(Inventory, Vec<Change>)> {
        Self::scan_with(sysfs, filter, Detail::Full)
    }

    /// [`scan`](Self::scan), reading each device's sysfs attributes with
    /// `detail`: [`Detail::Probe`] is enough for `pvs` and `vgs`.
    pub fn scan_with(
        sysfs: Sysfs,
        filter: Filter,
        detail: Detail,
    ) -> Result<(Inventory, Vec<Change>)> {
        let mut inv = Inventory {
            sysfs,
            filter,
            cache: TextCache::new(),
            devices: BTreeMap::new(),
            names: HashMap::new(),
            assembly: Assembly::new(),
            unreadable: Vec::new(),
            awaiting: BTreeMap::new(),
            texts: texts::TextRefs::default(),
            counters: Counters::default(),
            generation: 0,
        };
        let scan = inv.sysfs.scan_with(detail)?;
        let (probes, bytes) = probe_all(&scan.devices, &inv.filter, &inv.cache);
        inv.counters.probes += scan.devices.len() as u64;
        inv.counters.bytes_read += bytes;
        inv.unreadable = scan.failed;
        let mut changes = Vec::new();
        for (device, (probe, fsid)) in scan.devices.into_iter().zip(probes) {
            let dn = DevNum::of(&device);
            let events = match probe.pv() {
                Some(pv) => inv.assembly.add(dn, crate::probe::seen(pv)),
                None => Vec::new(),
            };
            inv.names.insert(device.name.clone(), dn);
            inv.texts.hold(&probe);
            inv.devices.insert(
                dn,
                Entry {
                    device,
                    probe,
                    fsid,
                },
            );
            // Only completions are logged at start: the MARK stands for
            // every device and PV found.
            changes.extend(
                apply::lvm_changes(&inv.devices, events, true)
                    .into_iter()
                    .filter(|c| matches!(c.kind, crate::ChangeKind::VgComplete { .. })),
            );
        }
        Ok((inv, changes))
    }

    /// The devices, by number.
    pub fn devices(&self) -> impl Iterator<Item = &Entry> {
        self.devices.values()
    }

    /// The device with number `dn`.
    pub fn get(&self, dn: DevNum) -> Option<&Entry> {
        self.devices.get(&dn)
    }

    /// What device `dn` holds (blkid's `TYPE`, `UUID`, `LABEL`), if it is
    /// known, was read, and holds a filesystem known here: for showing a
    /// mount's source by its UUID or label.
    pub fn fsid(&self, dn: DevNum) -> Option<&FsId> {
        self.devices.get(&dn)?.fsid.as_ref()
    }

    /// The device called `name`.
    pub fn by_name(&self, name: &str) -> Option<&Entry> {
        self.devices.get(self.names.get(name)?)
    }

    /// The filter that chooses which devices are probed; listings leave
    /// out what it rejects.
    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// Whether the filter accepts `d` (matched against its node's path).
    pub fn accepts(&self, d: &BlockDevice) -> bool {
        d.dev_path()
            .to_str()
            .is_some_and(|p| self.filter.accepts(p))
    }

    /// Devices whose sysfs attributes could not be read at the last scan.
    pub fn unreadable(&self) -> &[(String, Error)] {
        &self.unreadable
    }

    /// The VGs, as `vgs` reports them.
    pub fn vgs(&self) -> Vec<VgReport> {
        self.assembly.vgs()
    }

    /// The metadata in use for each known VG, in no order.
    pub fn vg_metas(&self) -> impl Iterator<Item = &std::sync::Arc<weir_lvm::VgMeta>> {
        self.assembly.vg_metas()
    }

    /// The PVs, as `pvs` reports them (by device number; see
    /// [`Inventory::get`] for the device).
    pub fn pvs(&self) -> Vec<PvReport<DevNum>> {
        self.assembly.pvs()
    }

    /// The visible LVs of every VG, as `lvs` reports them (a PV's device
    /// by number; see [`Inventory::get`]).
    pub fn lvs(&self) -> Vec<LvReport<DevNum>> {
        self.assembly.lvs(false)
    }

    /// How many devices carry a PV label.
    pub fn pv_count(&self) -> usize {
        self.devices
            .values()
            .filter(|e| e.probe.pv().is_some())
            .count()
    }

    /// The counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// A number that moves on with every change to what the inventory
    /// holds (a device, a probe, the assembly), whether or not the change
    /// made a record: renderings cached by it cannot go stale.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether LVM would read device `dn`, so that a write to it is worth
    /// watching: known, and not skipped (empty, partitioned, filtered).
    pub fn readable(&self, dn: DevNum) -> bool {
        self.devices
            .get(&dn)
            .is_some_and(|e| !matches!(e.probe, Probe::Skipped(_)))
    }

    /// How many parsed metadata texts are cached: at most the distinct
    /// texts on the devices now.
    pub fn texts_cached(&self) -> usize {
        self.cache.len()
    }

    /// The metadata text cache's counters: texts read and bytes.
    pub fn text_stats(&self) -> weir_lvm::probe::CacheStats {
        self.cache.stats()
    }
}
