//! VG assembly: which VGs are complete, from the PVs probed so far.
//!
//! Seed 000's `pvscan` rebuilt its whole view on every uevent. Here each
//! [`Assembly::add`] and [`Assembly::remove`] costs O(1) amortized (hash
//! maps and a per-VG count of present PVs); only a VG's metadata that is
//! new, or newer than the copy held, costs O(PVs in the VG). The result is
//! a list of [`Event`]s for the changelog, and reports ([`Assembly::vgs`],
//! [`Assembly::pvs`], [`Assembly::lvs`]) with LVM 2.03's `vgs`/`pvs`/`lvs`
//! semantics.
//!
//! Rules:
//! - A VG is known by its uuid. Its metadata is the copy with the highest
//!   seqno seen on any of its devices; an older copy never replaces it,
//!   even after the device that carried the newer one goes away.
//! - Its PVs are the uuids that metadata lists; one is present when some
//!   probed device has that uuid, whether or not the device carries
//!   metadata and whether it came before or after the metadata.
//! - Two devices with the same PV uuid are a [`Event::DuplicatePv`]: the
//!   first seen keeps the role; the other counts for nothing until the
//!   first goes away.
//! - A VG is forgotten once no device carries its metadata and none of
//!   its PVs is present (it is incomplete by then, so only its LVs are
//!   reported gone), or once the last device that carried it was
//!   rewritten without it while still present: that is a vgremove
//!   ([`Event::VgRemove`]).
//! - A VG listing no PV is never complete.
//! - Newer metadata for a known VG is an [`Event::VgChange`], followed by
//!   what it did to the LVs ([`Event::LvAdd`], [`Event::LvRemove`],
//!   [`Event::LvChange`]) and to present PVs that it lists or no longer
//!   lists ([`Event::PvChange`]). A VG newly known brings its LVs
//!   ([`Event::LvAdd`]).

mod delta;
mod event;
mod lvs;
#[cfg(test)]
mod prop_tests;
mod report;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

use crate::model::{Uuid, VgMeta};

pub use delta::{LvDelta, LvRef, VgDelta, lv_deltas};
pub use event::{Event, VgRef};
pub use lvs::{DeviceOn, LvAttr, LvReport, SegDevice, SegReport};
pub use report::{PvReport, VgReport};

/// What a probe found on one device.
#[derive(Clone, Debug, PartialEq)]
pub struct PvSeen {
    /// The PV uuid, from the pv_header.
    pub uuid: Uuid,
    /// The device size in bytes, from the pv_header.
    pub device_size: u64,
    /// The first data area's offset in bytes, from the pv_header.
    pub pe_start: u64,
    /// The metadata areas on the PV.
    pub mda_count: u32,
    /// Those not marked ignored.
    pub mda_in_use: u32,
    /// The authoritative metadata copy this PV carries; `None` when it has
    /// no metadata area in use.
    pub vg: Option<Arc<VgMeta>>,
}

/// What is known of one VG.
#[derive(Debug)]
struct VgState {
    /// The newest metadata seen.
    meta: Arc<VgMeta>,
    /// Distinct PV uuids the metadata lists.
    expected: usize,
    /// Of those, how many have a device.
    present: usize,
    /// Extra devices on those uuids (each duplicate counts once).
    dups: usize,
    /// Present devices carrying a copy of this VG's metadata (any seqno).
    carriers: usize,
    /// Whether `complete` was last reported true.
    complete: bool,
    /// The last carrier dropped was rewritten without this VG while it
    /// stayed present (not unplugged).
    last_drop_rewrite: bool,
}

impl VgState {
    fn is_complete(&self) -> bool {
        self.expected > 0 && self.present == self.expected
    }
}

/// The incremental VG-assembly state machine over devices keyed by `D`
/// (`(major, minor)`, a name, ...).
#[derive(Debug)]
pub struct Assembly<D> {
    /// Every probed device.
    devices: HashMap<D, PvSeen>,
    /// The devices of each PV uuid, in the order seen; the first is used.
    pvs: HashMap<Uuid, Vec<D>>,
    /// For each PV uuid, the VGs (by uuid) whose metadata lists it;
    /// normally one.
    listed: HashMap<Uuid, Vec<Uuid>>,
    /// The known VGs, by uuid.
    vgs: HashMap<Uuid, VgState>,
    /// PVs visited by whole-VG passes, for the test that proves the cost.
    work: u64,
}

impl<D> Default for Assembly<D> {
    fn default() -> Self {
        Assembly {
            devices: HashMap::new(),
            pvs: HashMap::new(),
            listed: HashMap::new(),
            vgs: HashMap::new(),
            work: 0,
        }
    }
}

impl<D: Clone + Eq + Hash + Ord + Debug> Assembly<D> {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// A device was probed and holds a PV (a new device, or a change on
    /// one already seen, whose [`PvSeen`] it replaces).
    pub fn add(&mut self, dev: D, pv: PvSeen) -> Vec<Event<D>> {
        let mut events = Vec::new();
        let mut touched = Vec::new();
        if let Some(old) = self.devices.get(&dev) {
            if old.uuid != pv.uuid {
                // Relabelled (pvcreate over it): a different PV entirely.
                events = self.remove(&dev);
            } else {
                let old_vg = old.vg.as_ref().map(|m| m.id);
                let uuid = pv.uuid;
                let new_vg = pv.vg.clone();
                self.devices.insert(dev, pv);
                if let Some(id) = new_vg.as_ref().map(|m| m.id) {
                    touched.push(id);
                }
                if let Some(m) = new_vg {
                    self.carry(m, &mut events);
                }
                if let Some(id) = old_vg {
                    self.drop_carrier(id, true, &mut touched);
                }
                touched.extend(self.listers(&uuid));
                self.transitions(&touched, &mut events);
                return events;
            }
        }
        let uuid = pv.uuid;
        let meta = pv.vg.clone();
        self.devices.insert(dev.clone(), pv);
        let devs = self.pvs.entry(uuid).or_default();
        devs.push(dev.clone());
        let first = devs.len() == 1;
        let dup_devices = (!first).then(|| devs.clone());
        for vg in self.listed.get(&uuid).into_iter().flatten() {
            if let Some(st) = self.vgs.get_mut(vg) {
                if first {
                    st.present += 1;
                } else {
                    st.dups += 1;
                }
            }
        }
        let mut carried = Vec::new();
        if let Some(m) = meta {
            touched.push(m.id);
            self.carry(m, &mut carried);
        }
        events.push(Event::PvFound {
            dev,
            uuid,
            vg: self.vg_ref_of(&uuid),
        });
        if let Some(devices) = dup_devices {
            events.push(Event::DuplicatePv {
                uuid,
                devices,
                vg: self.vg_ref_of(&uuid),
            });
        }
        // Its own PV_FOUND names its VG already.
        events.extend(
            carried
                .into_iter()
                .filter(|e| !matches!(e, Event::PvChange { uuid: u, .. } if *u == uuid)),
        );
        touched.extend(self.listers(&uuid));
        self.transitions(&touched, &mut events);
        events
    }

    /// A device went away (or no longer holds a PV).
    pub fn remove(&mut self, dev: &D) -> Vec<Event<D>> {
        let Some(pv) = self.devices.remove(dev) else {
            return Vec::new();
        };
        let uuid = pv.uuid;
        let vg = self.vg_ref_of(&uuid);
        let mut events = vec![Event::PvLost {
            dev: dev.clone(),
            uuid,
            vg: vg.clone(),
        }];
        let mut touched = self.listers(&uuid);
        let mut remaining = None;
        if let Some(devs) = self.pvs.get_mut(&uuid) {
            devs.retain(|d| d != dev);
            remaining = Some(devs.len());
            if devs.len() >= 2 {
                events.push(Event::DuplicatePv {
                    uuid,
                    devices: devs.clone(),
                    vg,
                });
            }
        }
        if remaining == Some(0) {
            self.pvs.remove(&uuid);
        }
        for vg in &touched {
            if let Some(st) = self.vgs.get_mut(vg) {
                if remaining == Some(0) {
                    st.present = st.present.saturating_sub(1);
                } else {
                    st.dups = st.dups.saturating_sub(1);
                }
            }
        }
        if let Some(m) = &pv.vg {
            self.drop_carrier(m.id, false, &mut touched);
        }
        self.transitions(&touched, &mut events);
        events
    }

    /// The metadata in use for each known VG, in no order.
    pub fn vg_metas(&self) -> impl Iterator<Item = &Arc<VgMeta>> {
        self.vgs.values().map(|st| &st.meta)
    }

    /// The device in use for PV `uuid` (the first seen, of duplicates).
    pub fn device_of(&self, uuid: &Uuid) -> Option<&D> {
        self.pvs.get(uuid)?.first()
    }

    /// The VGs listing PV `uuid`.
    fn listers(&self, uuid: &Uuid) -> Vec<Uuid> {
        self.listed.get(uuid).cloned().unwrap_or_default()
    }

    /// The VG reported for PV `uuid`: the first whose metadata lists it.
    fn vg_ref_of(&self, uuid: &Uuid) -> Option<VgRef> {
        let vg = self.listed.get(uuid)?.first()?;
        self.vgs.get(vg).map(|st| VgRef::of(&st.meta))
    }

    /// A present device carries `meta`: count it, and use `meta` if it is
    /// the VG's first or newer than the one held, reporting what that
    /// changed.
    fn carry(&mut self, meta: Arc<VgMeta>, events: &mut Vec<Event<D>>) {
        let id = meta.id;
        match self.vgs.get_mut(&id) {
            Some(st) => {
                st.carriers += 1;
                if meta.seqno > st.meta.seqno {
                    let old = Arc::clone(&st.meta);
                    self.replace(id, &old, meta, events);
                }
            }
            None => {
                self.vgs.insert(
                    id,
                    VgState {
                        meta: meta.clone(),
                        expected: 0,
                        present: 0,
                        dups: 0,
                        carriers: 1,
                        complete: false,
                        last_drop_rewrite: false,
                    },
                );
                let ids: Vec<Uuid> = meta.pvs.iter().map(|p| p.id).collect();
                let before = self.memberships(&ids);
                self.list(id, Arc::clone(&meta));
                self.moves(before, events);
                let vg = VgRef::of(&meta);
                let extent = meta.extent_bytes();
                events.extend(meta.lvs.iter().map(|lv| Event::LvAdd {
                    vg: vg.clone(),
                    lv: LvRef::of(lv, extent),
                }));
            }
        }
    }

    /// Replaces VG `id`'s metadata `old` by the newer `new`: O(PVs + LVs).
    fn replace(&mut self, id: Uuid, old: &VgMeta, new: Arc<VgMeta>, events: &mut Vec<Event<D>>) {
        let delta = VgDelta::of(old, &new);
        let moved: Vec<Uuid> = delta
            .pvs_added
            .iter()
            .chain(&delta.pvs_removed)
            .copied()
            .collect();
        let before = self.memberships(&moved);
        self.unlist(id);
        self.list(id, Arc::clone(&new));
        let vg = VgRef::of(&new);
        events.push(Event::VgChange {
            old: VgRef::of(old),
            vg: vg.clone(),
            delta,
        });
        self.moves(before, events);
        for d in lv_deltas(old, &new) {
            events.push(match d {
                LvDelta::Add(lv) => Event::LvAdd { vg: vg.clone(), lv },
                LvDelta::Remove(lv) => Event::LvRemove { vg: vg.clone(), lv },
                LvDelta::Change { old, new, changed } => Event::LvChange {
                    vg: vg.clone(),
                    old,
                    lv: new,
                    changed,
                },
            });
        }
    }

    /// The VG each present PV of `ids` is reported in now.
    fn memberships(&self, ids: &[Uuid]) -> Vec<(Uuid, Option<VgRef>)> {
        ids.iter()
            .filter(|u| self.pvs.contains_key(u))
            .map(|u| (*u, self.vg_ref_of(u)))
            .collect()
    }

    /// A [`Event::PvChange`] for each PV of `before` now reported in
    /// another VG (or none).
    fn moves(&self, before: Vec<(Uuid, Option<VgRef>)>, events: &mut Vec<Event<D>>) {
        for (uuid, old_vg) in before {
            let vg = self.vg_ref_of(&uuid);
            if vg.as_ref().map(|v| v.uuid) == old_vg.as_ref().map(|v| v.uuid) {
                continue;
            }
            let Some(dev) = self.pvs.get(&uuid).and_then(|d| d.first()).cloned() else {
                continue;
            };
            events.push(Event::PvChange {
                dev,
                uuid,
                vg,
                old_vg,
            });
        }
    }

    /// One carrier of VG `id` stopped carrying it: it went away, or, when
    /// `rewritten`, it is still present and holds other metadata or none.
    /// (The VG may then be forgotten, once its transitions are reported.)
    fn drop_carrier(&mut self, id: Uuid, rewritten: bool, touched: &mut Vec<Uuid>) {
        if let Some(st) = self.vgs.get_mut(&id) {
            st.carriers = st.carriers.saturating_sub(1);
            st.last_drop_rewrite = rewritten;
            touched.push(id);
        }
    }

    /// Forgets VG `id` if nothing present refers to it any more, or if the
    /// last device carrying it was rewritten without it (vgremove).
    fn forget_if_unseen(&mut self, id: Uuid, events: &mut Vec<Event<D>>) {
        let Some(st) = self.vgs.get(&id) else {
            return;
        };
        if st.carriers > 0 || (st.present > 0 && !st.last_drop_rewrite) {
            return;
        }
        let meta = Arc::clone(&st.meta);
        let removed = st.present > 0;
        let ids: Vec<Uuid> = meta.pvs.iter().map(|p| p.id).collect();
        let before = self.memberships(&ids);
        self.unlist(id);
        self.vgs.remove(&id);
        let vg = VgRef::of(&meta);
        let extent = meta.extent_bytes();
        events.extend(meta.lvs.iter().map(|lv| Event::LvRemove {
            vg: vg.clone(),
            lv: LvRef::of(lv, extent),
        }));
        self.moves(before, events);
        if removed {
            events.push(Event::VgRemove { vg });
        }
    }

    /// Makes `meta` VG `id`'s metadata and recounts its PVs: O(PVs).
    fn list(&mut self, id: Uuid, meta: Arc<VgMeta>) {
        let (mut expected, mut present, mut dups) = (0, 0, 0);
        for pv in &meta.pvs {
            self.work += 1;
            let vgs = self.listed.entry(pv.id).or_default();
            if vgs.contains(&id) {
                continue; // a hand-made VgMeta may repeat a uuid
            }
            vgs.push(id);
            expected += 1;
            if let Some(devs) = self.pvs.get(&pv.id) {
                present += 1;
                dups += devs.len().saturating_sub(1);
            }
        }
        if let Some(st) = self.vgs.get_mut(&id) {
            st.meta = meta;
            st.expected = expected;
            st.present = present;
            st.dups = dups;
        }
    }

    /// Removes VG `id` from the PV listing: O(PVs).
    fn unlist(&mut self, id: Uuid) {
        let Some(st) = self.vgs.get(&id) else {
            return;
        };
        for pv in &st.meta.pvs {
            self.work += 1;
            if let Some(vgs) = self.listed.get_mut(&pv.id) {
                vgs.retain(|v| *v != id);
                if vgs.is_empty() {
                    self.listed.remove(&pv.id);
                }
            }
        }
    }

    /// Emits the completeness transitions of the `touched` VGs, then
    /// forgets those nothing refers to any more.
    fn transitions(&mut self, touched: &[Uuid], events: &mut Vec<Event<D>>) {
        for (i, id) in touched.iter().enumerate() {
            if touched[..i].contains(id) {
                continue;
            }
            let Some(st) = self.vgs.get(id) else {
                continue;
            };
            let now = st.is_complete();
            if now == st.complete {
                continue;
            }
            let meta = Arc::clone(&st.meta);
            let vg = VgRef::of(&meta);
            if now {
                events.push(Event::VgComplete {
                    vg,
                    pv_count: st.expected,
                });
            } else {
                let missing = self.missing(&meta);
                events.push(Event::VgIncomplete { vg, missing });
            }
            if let Some(st) = self.vgs.get_mut(id) {
                st.complete = now;
            }
        }
        // Only now, so that a VG losing its last PV reports it first.
        for (i, id) in touched.iter().enumerate() {
            if !touched[..i].contains(id) {
                self.forget_if_unseen(*id, events);
            }
        }
    }

    /// The PVs `meta` lists that have no device: O(PVs).
    fn missing(&mut self, meta: &VgMeta) -> Vec<Uuid> {
        self.work += meta.pvs.len() as u64;
        meta.pvs
            .iter()
            .map(|p| p.id)
            .filter(|id| !self.pvs.contains_key(id))
            .collect()
    }
}
