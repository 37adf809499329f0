//! What one metadata update changed: [`VgDelta`] for the VG itself and
//! [`LvDelta`]s for its LVs, computed from the old and the new
//! [`VgMeta`]. Pure and linear in the PVs and LVs of the two texts.
//!
//! LVs are matched by uuid, so `lvrename` is a change of name, not a
//! removal and an addition; PVs by uuid too.

use std::collections::{HashMap, HashSet};

use crate::model::{AreaOn, LvMeta, Uuid, VgMeta};

/// An LV as records name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LvRef {
    /// `lv_name`.
    pub name: String,
    /// `lv_uuid`.
    pub uuid: Uuid,
    /// Its extents (all segments).
    pub extents: u64,
    /// `lv_size` in bytes: its extents times the VG's extent size.
    pub size_bytes: u64,
    /// Its segment types in LVM's names, in segment order, each once
    /// (`linear`, `striped`, `linear,striped` after an extension).
    pub segtype: String,
    /// How many segments it has.
    pub segments: usize,
    /// `status` then `flags`, comma-joined (`READ,WRITE,VISIBLE`), then
    /// `alloc=POLICY` when the text states an allocation policy.
    pub status: String,
    /// A fingerprint of where its extents are (every segment's type,
    /// extents, stripes and areas): LVM's CRC-32 of a canonical rendering,
    /// stable across versions, so a checkpoint can tell that the segments
    /// moved without keeping them.
    pub layout: u32,
}

impl LvRef {
    /// The LV `lv` of a VG whose extents are `extent_bytes` long.
    pub fn of(lv: &LvMeta, extent_bytes: u64) -> LvRef {
        let mut types: Vec<&str> = Vec::new();
        for s in &lv.segments {
            let t = LvMeta::seg_type_name(s);
            if !types.contains(&t) {
                types.push(t);
            }
        }
        let mut status = lv
            .status
            .iter()
            .chain(&lv.flags)
            .cloned()
            .collect::<Vec<_>>()
            .join(",");
        if let Some(p) = &lv.allocation_policy {
            status.push_str(if status.is_empty() {
                "alloc="
            } else {
                ",alloc="
            });
            status.push_str(p);
        }
        LvRef {
            name: lv.name.clone(),
            uuid: lv.id,
            extents: lv.extents,
            size_bytes: lv.extents.saturating_mul(extent_bytes),
            segtype: types.join(","),
            segments: lv.segments.len(),
            status,
            layout: layout(lv),
        }
    }
}

/// The fingerprint of `lv`'s segments (see [`LvRef::layout`]).
fn layout(lv: &LvMeta) -> u32 {
    let mut crc = crate::crc::Crc::new();
    for s in &lv.segments {
        let head = format!(
            "{} {} {} {} {};",
            s.start_extent, s.extent_count, s.seg_type, s.stripe_count, s.stripe_size
        );
        crc.update(head.as_bytes());
        for a in &s.areas {
            match &a.on {
                AreaOn::Pv(u) => crc.update(u.as_str().as_bytes()),
                AreaOn::Lv(n) => crc.update(n.as_bytes()),
            }
            crc.update(format!(" {},", a.start).as_bytes());
        }
    }
    crc.finish()
}

/// What changed in one LV.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LvDelta {
    /// It is in the new text only.
    Add(LvRef),
    /// It is in the old text only.
    Remove(LvRef),
    /// It is in both and differs.
    Change {
        /// Before.
        old: LvRef,
        /// After.
        new: LvRef,
        /// What differs, in this order: `name`, `size`, `segments`,
        /// `status`. `segments` covers any change to where its extents
        /// are (an extension, a pvmove), not only their number.
        changed: Vec<&'static str>,
    },
}

/// What changed in the VG itself between two seqnos.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VgDelta {
    /// The name before, if `vgrename` changed it.
    pub old_name: Option<String>,
    /// PV uuids the new text lists and the old did not, in new-text order.
    pub pvs_added: Vec<Uuid>,
    /// PV uuids the old text listed and the new does not, in old order.
    pub pvs_removed: Vec<Uuid>,
    /// Total extents of its PVs: (old, new).
    pub extent_count: (u64, u64),
    /// Free extents: (old, new).
    pub free_count: (u64, u64),
    /// The extent size in bytes: (old, new).
    pub extent_size: (u64, u64),
    /// `metadata_copies`: (old, new).
    pub metadata_copies: (u64, u64),
    /// `status` flags, comma-joined: (old, new).
    pub status: (String, String),
}

impl VgDelta {
    /// Compares two texts of one VG.
    pub fn of(old: &VgMeta, new: &VgMeta) -> VgDelta {
        let old_ids: HashSet<Uuid> = old.pvs.iter().map(|p| p.id).collect();
        let new_ids: HashSet<Uuid> = new.pvs.iter().map(|p| p.id).collect();
        VgDelta {
            old_name: (old.name != new.name).then(|| old.name.clone()),
            pvs_added: new
                .pvs
                .iter()
                .map(|p| p.id)
                .filter(|id| !old_ids.contains(id))
                .collect(),
            pvs_removed: old
                .pvs
                .iter()
                .map(|p| p.id)
                .filter(|id| !new_ids.contains(id))
                .collect(),
            extent_count: (old.extent_count(), new.extent_count()),
            free_count: (old.free_count(), new.free_count()),
            extent_size: (old.extent_bytes(), new.extent_bytes()),
            metadata_copies: (old.metadata_copies, new.metadata_copies),
            status: (old.status.join(","), new.status.join(",")),
        }
    }

    /// What differs, as record field names, in this order: `name`, `pvs`,
    /// `extent_count`, `free_count`, `extent_size`, `metadata_copies`,
    /// `status`. Empty when only the seqno moved.
    pub fn changed(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.old_name.is_some() {
            out.push("name");
        }
        if !self.pvs_added.is_empty() || !self.pvs_removed.is_empty() {
            out.push("pvs");
        }
        let pairs = [
            ("extent_count", self.extent_count),
            ("free_count", self.free_count),
            ("extent_size", self.extent_size),
            ("metadata_copies", self.metadata_copies),
        ];
        out.extend(pairs.iter().filter(|(_, (a, b))| a != b).map(|(k, _)| *k));
        if self.status.0 != self.status.1 {
            out.push("status");
        }
        out
    }
}

/// The LVs added, removed and changed from `old` to `new`: removals
/// first (old-text order), then changes and additions (new-text order).
pub fn lv_deltas(old: &VgMeta, new: &VgMeta) -> Vec<LvDelta> {
    let (old_ext, new_ext) = (old.extent_bytes(), new.extent_bytes());
    let old_by_id: HashMap<Uuid, &LvMeta> = old.lvs.iter().map(|l| (l.id, l)).collect();
    let new_ids: HashSet<Uuid> = new.lvs.iter().map(|l| l.id).collect();
    let mut out: Vec<LvDelta> = old
        .lvs
        .iter()
        .filter(|l| !new_ids.contains(&l.id))
        .map(|l| LvDelta::Remove(LvRef::of(l, old_ext)))
        .collect();
    for lv in &new.lvs {
        let Some(before) = old_by_id.get(&lv.id) else {
            out.push(LvDelta::Add(LvRef::of(lv, new_ext)));
            continue;
        };
        let mut changed = Vec::new();
        if before.name != lv.name {
            changed.push("name");
        }
        let (a, b) = (LvRef::of(before, old_ext), LvRef::of(lv, new_ext));
        if a.size_bytes != b.size_bytes {
            changed.push("size");
        }
        if before.segments != lv.segments {
            changed.push("segments");
        }
        if a.status != b.status {
            changed.push("status");
        }
        if !changed.is_empty() {
            out.push(LvDelta::Change {
                old: a,
                new: b,
                changed,
            });
        }
    }
    out
}
