//! The first layout of [`Previous`](super::Previous), as checkpoints of
//! version 1 hold it: no VG details and no LVs. Read, never written.

use serde::{Deserialize, Serialize};

use super::{DeviceState, Previous, VgState};

/// [`Previous`] as version 1 wrote it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviousV1 {
    /// Every block device, by number (unchanged since).
    pub devices: Vec<DeviceState>,
    /// Every VG known, by uuid.
    pub vgs: Vec<VgStateV1>,
    /// The index of the last record the tracker had appended.
    pub log_index: u64,
}

/// [`VgState`] as version 1 wrote it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VgStateV1 {
    /// The VG uuid: 32 characters, no dashes.
    pub uuid: [u8; 32],
    /// Its name.
    pub name: String,
    /// The seqno of the metadata in use.
    pub seqno: u64,
    /// Every PV its metadata lists is present.
    pub complete: bool,
    /// How many of them are absent.
    pub missing: u64,
}

impl From<PreviousV1> for Previous {
    fn from(p: PreviousV1) -> Previous {
        Previous {
            devices: p.devices,
            vgs: p
                .vgs
                .into_iter()
                .map(|v| VgState {
                    uuid: v.uuid,
                    name: v.name,
                    seqno: v.seqno,
                    complete: v.complete,
                    missing: v.missing,
                    detail: None,
                })
                .collect(),
            log_index: p.log_index,
        }
    }
}
