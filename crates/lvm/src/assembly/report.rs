//! The `weir vgs` and `weir pvs` reports, with LVM 2.03's semantics
//! (lib/metadata/pv.c, vg.c): for a PV in a VG, `pv_size` is
//! `pe_count × extent_size` (the metadata's `dev_size` when it has no
//! extents) and `pv_free` is `(pe_count − pe_alloc) × extent_size`; for an
//! orphan both are the device size. Sizes are in bytes.

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hash;

use super::{Assembly, VgState};
use crate::model::{PvMeta, SECTOR, Uuid};

/// One line of `weir vgs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VgReport {
    /// `vg_name`.
    pub name: String,
    /// `vg_uuid`.
    pub uuid: Uuid,
    /// `vg_seqno`.
    pub seqno: u64,
    /// `pv_count`: the PVs the metadata lists, present or not.
    pub pv_count: usize,
    /// `lv_count`: the visible LVs.
    pub lv_count: usize,
    /// `vg_size`.
    pub size_bytes: u64,
    /// `vg_free`.
    pub free_bytes: u64,
    /// `vg_extent_size`, in bytes.
    pub extent_size: u64,
    /// Every listed PV is present.
    pub complete: bool,
    /// The listed PVs that are absent, in metadata order.
    pub missing: Vec<Uuid>,
    /// `vg_mda_count`: metadata areas on the present PVs.
    pub mda_count: u64,
    /// `vg_mda_used_count`: those not ignored.
    pub mda_used_count: u64,
    /// Extra devices carrying the uuid of one of its PVs.
    pub duplicates: usize,
}

/// One line of `weir pvs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PvReport<D> {
    /// The device.
    pub device: D,
    /// `pv_uuid`.
    pub uuid: Uuid,
    /// `vg_name`; empty for an orphan.
    pub vg_name: String,
    /// `vg_uuid`; `None` for an orphan.
    pub vg_uuid: Option<Uuid>,
    /// `pv_size`.
    pub size_bytes: u64,
    /// `pv_free`.
    pub free_bytes: u64,
    /// `dev_size`: the device size (from the pv_header).
    pub dev_size: u64,
    /// `pe_start`: the metadata's for a PV in a VG, else the pv_header's.
    pub pe_start: u64,
    /// `pv_pe_count` (0 for an orphan).
    pub pe_count: u64,
    /// `pv_pe_alloc_count` (0 for an orphan).
    pub pe_alloc: u64,
    /// `pv_mda_count`.
    pub mda_count: u32,
    /// `pv_mda_used_count`.
    pub mda_in_use: u32,
    /// Another device, seen first, has the same uuid; this one is unused.
    pub duplicate: bool,
}

impl<D: Clone + Eq + Hash + Ord + Debug> Assembly<D> {
    /// Every known VG, sorted by name (then uuid), as `vgs` lists them.
    pub fn vgs(&self) -> Vec<VgReport> {
        let mut out: Vec<VgReport> = self.vgs.values().map(|st| self.vg_report(st)).collect();
        out.sort_by(|a, b| (&a.name, a.uuid).cmp(&(&b.name, b.uuid)));
        out
    }

    fn vg_report(&self, st: &VgState) -> VgReport {
        let meta = &st.meta;
        let (mut mda_count, mut mda_used_count) = (0u64, 0u64);
        let mut missing = Vec::new();
        for pv in &meta.pvs {
            match self.active(&pv.id) {
                Some(seen) => {
                    mda_count += u64::from(seen.mda_count);
                    mda_used_count += u64::from(seen.mda_in_use);
                }
                None => missing.push(pv.id),
            }
        }
        VgReport {
            name: meta.name.clone(),
            uuid: meta.id,
            seqno: meta.seqno,
            pv_count: meta.pvs.len(),
            lv_count: meta.lv_count(),
            size_bytes: meta.size_bytes(),
            free_bytes: meta.free_bytes(),
            extent_size: meta.extent_bytes(),
            complete: st.is_complete(),
            missing,
            mda_count,
            mda_used_count,
            duplicates: st.dups,
        }
    }

    /// The device in use for PV `uuid`, and what was seen on it.
    fn active(&self, uuid: &Uuid) -> Option<&super::PvSeen> {
        let dev = self.pvs.get(uuid)?.first()?;
        self.devices.get(dev)
    }

    /// Every device holding a PV, sorted by device, as `pvs` lists them
    /// (duplicates included, flagged).
    pub fn pvs(&self) -> Vec<PvReport<D>> {
        // Each PV uuid's entry in the metadata of the VG it is reported
        // in, built once so the report is linear.
        let mut in_vg: HashMap<Uuid, (&VgState, &PvMeta)> = HashMap::new();
        for (id, st) in &self.vgs {
            for pv in &st.meta.pvs {
                let first = self.listed.get(&pv.id).and_then(|v| v.first());
                if first == Some(id) {
                    in_vg.entry(pv.id).or_insert((st, pv));
                }
            }
        }
        let mut out: Vec<PvReport<D>> = self
            .devices
            .iter()
            .map(|(dev, seen)| {
                let duplicate = self
                    .pvs
                    .get(&seen.uuid)
                    .and_then(|d| d.first())
                    .is_some_and(|first| first != dev);
                let mut r = PvReport {
                    device: dev.clone(),
                    uuid: seen.uuid,
                    vg_name: String::new(),
                    vg_uuid: None,
                    size_bytes: seen.device_size,
                    free_bytes: seen.device_size,
                    dev_size: seen.device_size,
                    pe_start: seen.pe_start,
                    pe_count: 0,
                    pe_alloc: 0,
                    mda_count: seen.mda_count,
                    mda_in_use: seen.mda_in_use,
                    duplicate,
                };
                if let Some((st, pv)) = in_vg.get(&seen.uuid) {
                    let extent = st.meta.extent_bytes();
                    r.vg_name.clone_from(&st.meta.name);
                    r.vg_uuid = Some(st.meta.id);
                    // LVM's pv->size: the metadata's dev_size, or the
                    // device's when the text has none.
                    let pv_size = match pv.dev_size {
                        0 => seen.device_size,
                        s => s.saturating_mul(SECTOR),
                    };
                    r.size_bytes = match pv.pe_count {
                        0 => pv_size,
                        n => n.saturating_mul(extent),
                    };
                    r.free_bytes = pv
                        .pe_count
                        .saturating_sub(pv.pe_alloc)
                        .saturating_mul(extent);
                    r.pe_start = pv.pe_start.saturating_mul(SECTOR);
                    r.pe_count = pv.pe_count;
                    r.pe_alloc = pv.pe_alloc;
                }
                r
            })
            .collect();
        out.sort_by(|a, b| a.device.cmp(&b.device));
        out
    }
}
