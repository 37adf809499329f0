//! What [`Assembly`](super::Assembly) reports as it goes: [`Event`]s,
//! each naming its VG fully ([`VgRef`]) so that a logger needs nothing
//! else.

use super::delta::{LvRef, VgDelta};
use crate::model::{Uuid, VgMeta};

/// A VG as events name it: enough for a log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VgRef {
    /// The VG name.
    pub name: String,
    /// The VG uuid.
    pub uuid: Uuid,
    /// The seqno of the metadata in use.
    pub seqno: u64,
}

impl VgRef {
    pub(super) fn of(meta: &VgMeta) -> Self {
        VgRef {
            name: meta.name.clone(),
            uuid: meta.id,
            seqno: meta.seqno,
        }
    }
}

/// A change in what is assembled.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event<D> {
    /// A device with a PV label appeared.
    PvFound {
        /// The device.
        dev: D,
        /// Its PV uuid.
        uuid: Uuid,
        /// The VG whose metadata lists it, if any is known.
        vg: Option<VgRef>,
    },
    /// A device with a PV label went away.
    PvLost {
        /// The device.
        dev: D,
        /// Its PV uuid.
        uuid: Uuid,
        /// The VG whose metadata lists it, if any was known.
        vg: Option<VgRef>,
    },
    /// Several devices carry the same PV uuid (a clone, a multipath path
    /// seen twice); the first in `devices` holds the role.
    DuplicatePv {
        /// The PV uuid.
        uuid: Uuid,
        /// Every device with it, the one in use first.
        devices: Vec<D>,
        /// The VG whose metadata lists it, if any.
        vg: Option<VgRef>,
    },
    /// Every PV of a VG is now present (it was not).
    VgComplete {
        /// The VG.
        vg: VgRef,
        /// Its PV count.
        pv_count: usize,
    },
    /// A complete VG lost PVs, or its new metadata lists absent ones.
    VgIncomplete {
        /// The VG.
        vg: VgRef,
        /// The PVs its metadata lists that are absent.
        missing: Vec<Uuid>,
    },
    /// A VG's metadata was replaced by a newer seqno.
    VgChange {
        /// The VG as it was.
        old: VgRef,
        /// The VG now.
        vg: VgRef,
        /// What changed.
        delta: VgDelta,
    },
    /// No present device carries a VG's metadata any more, though some of
    /// its PVs are still there: it was removed (vgremove), not unplugged.
    VgRemove {
        /// The VG, as last known.
        vg: VgRef,
    },
    /// A present PV is now listed by another VG's metadata, or by none
    /// (vgextend, vgreduce, vgcreate, vgremove).
    PvChange {
        /// The device in use for it.
        dev: D,
        /// Its PV uuid.
        uuid: Uuid,
        /// The VG that lists it now; `None`: an orphan.
        vg: Option<VgRef>,
        /// The VG that listed it before; `None`: it was an orphan.
        old_vg: Option<VgRef>,
    },
    /// An LV appeared: in a newer text, or with a VG newly known.
    LvAdd {
        /// Its VG.
        vg: VgRef,
        /// The LV.
        lv: LvRef,
    },
    /// An LV went away: from a newer text, or with its VG.
    LvRemove {
        /// Its VG.
        vg: VgRef,
        /// The LV, as last known.
        lv: LvRef,
    },
    /// An LV changed in a newer text.
    LvChange {
        /// Its VG.
        vg: VgRef,
        /// Before.
        old: LvRef,
        /// After.
        lv: LvRef,
        /// What differs (see [`LvDelta::Change`](super::LvDelta::Change)).
        changed: Vec<&'static str>,
    },
}
