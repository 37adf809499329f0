//! The crash tail: the device records a tracker appended after its last
//! checkpoint, before it was killed. Applying them to the checkpoint gives
//! the state the log describes, so a restart neither logs those changes a
//! second time nor misses the ones after them.
//!
//! The records are read back from the log, which anyone allowed to append
//! may have written: each is checked, and one that does not parse changes
//! nothing (it is counted and named in a warning).

use weir_log::{Log, LogRecord, RecordType, TypeMask};

use super::{DeviceState, LvState, PvState, State, VgDetail, VgState, uuid};
use crate::change::ATTRIBUTES;
use crate::devnum::DevNum;
use crate::record::TYPES;

/// Why a record of the tail was not applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum BadRecord {
    /// The target is not a device number or a uuid.
    #[error("{kind} record {index}: bad target")]
    Target {
        /// The record type.
        kind: RecordType,
        /// The record's index.
        index: u64,
    },
    /// A field the type requires is absent.
    #[error("{kind} record {index}: no {key} field")]
    Missing {
        /// The record type.
        kind: RecordType,
        /// The record's index.
        index: u64,
        /// The field.
        key: &'static str,
    },
    /// A field's value does not parse.
    #[error("{kind} record {index}: bad {key} field")]
    Field {
        /// The record type.
        kind: RecordType,
        /// The record's index.
        index: u64,
        /// The field.
        key: String,
    },
    /// It names a device the state does not hold.
    #[error("{kind} record {index}: unknown device {dev}")]
    UnknownDevice {
        /// The record type.
        kind: RecordType,
        /// The record's index.
        index: u64,
        /// The device.
        dev: DevNum,
    },
}

/// What reading the tail found.
#[derive(Debug, Default)]
pub(crate) struct TailReport {
    /// Records applied.
    pub(crate) applied: u64,
    /// Records that did not parse, left out.
    pub(crate) bad: u64,
    /// Records after the checkpoint are gone (retention deleted them), or
    /// the log ends before the checkpoint's index: the tail is not whole.
    pub(crate) incomplete: bool,
    /// Reading stopped on this error.
    pub(crate) error: Option<weir_log::Error>,
}

/// Applies every inventory record after index `since` to `state`.
pub(crate) fn catch_up(log: &Log, state: &mut State, since: u64) -> TailReport {
    let mut report = TailReport::default();
    // Readers see committed records only: a tracker that ran in this
    // process may have appended some that are not yet.
    if let Err(e) = log.sync() {
        tracing::warn!(
            error = &e as &dyn std::error::Error,
            "syncing the log before reading the device records"
        );
    }
    let from = since.saturating_add(1);
    let last = log.last_index();
    if since > last || (last >= from && log.first_index() > from) {
        report.incomplete = true;
        tracing::warn!(
            checkpoint = since,
            first = log.first_index(),
            last,
            "the log does not hold every record after the device checkpoint"
        );
    }
    let mut mask = TypeMask::none();
    for t in TYPES {
        mask.insert(t);
    }
    let mut reader = log.reader(from).with_mask(mask);
    loop {
        match reader.next_record() {
            Ok(Some(r)) => match state.apply(&r) {
                Ok(()) => report.applied += 1,
                Err(e) => {
                    tracing::warn!(error = %e, "a device record after the checkpoint is left out");
                    report.bad += 1;
                }
            },
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(
                    error = &e as &dyn std::error::Error,
                    "reading the device records after the checkpoint"
                );
                report.error = Some(e);
                break;
            }
        }
    }
    report
}

impl State {
    /// Applies one record: the last record about a key wins. A record
    /// that does not parse changes nothing.
    pub(crate) fn apply(&mut self, r: &LogRecord) -> Result<(), BadRecord> {
        let bad_target = || BadRecord::Target {
            kind: r.kind,
            index: r.index,
        };
        match r.kind {
            RecordType::DEVICE_ADD => {
                let dn = DevNum::from_be_slice(&r.target).ok_or_else(bad_target)?;
                let mut d = DeviceState::empty(dn);
                describe(&mut d, r)?;
                for key in ["size", "ro", "type"] {
                    if r.field(key).is_none() {
                        return Err(missing(r, key));
                    }
                }
                for (key, _) in ATTRIBUTES {
                    if let Some(v) = r.field(key) {
                        set(&mut d, key, v).map_err(|()| bad_field(r, key))?;
                    }
                }
                self.devices.insert(dn, d);
            }
            RecordType::DEVICE_CHANGE => {
                let dn = DevNum::from_be_slice(&r.target).ok_or_else(bad_target)?;
                let mut d = self.device(r, dn)?.clone();
                describe(&mut d, r)?;
                let changed = r.field("changed").ok_or_else(|| missing(r, "changed"))?;
                for key in changed.split(|&b| b == b',').filter(|k| !k.is_empty()) {
                    let key = std::str::from_utf8(key).map_err(|_| bad_field(r, "changed"))?;
                    // An attribute that went away is written empty.
                    let v = r.field(key).unwrap_or_default();
                    set(&mut d, key, v).map_err(|()| bad_field(r, key))?;
                }
                self.devices.insert(dn, d);
            }
            RecordType::DEVICE_REMOVE => {
                let dn = DevNum::from_be_slice(&r.target).ok_or_else(bad_target)?;
                self.devices.remove(&dn);
            }
            // A PV that moved between VGs is named as a found one is.
            RecordType::PV_FOUND | RecordType::PV_CHANGE => {
                let pv = uuid(&r.target).ok_or_else(bad_target)?;
                let dn = dev_field(r)?;
                let vg_uuid = match r.parent.as_slice() {
                    [] => None,
                    p => Some(uuid(p).ok_or_else(|| bad_field(r, "parent"))?.0),
                };
                let vg_name = text(r, "vg")?.unwrap_or_default();
                self.device(r, dn)?;
                if let Some(d) = self.devices.get_mut(&dn) {
                    d.pv = Some(PvState {
                        uuid: pv.0,
                        vg_uuid,
                        vg_name,
                    });
                }
            }
            RecordType::PV_LOST => {
                let pv = uuid(&r.target).ok_or_else(bad_target)?;
                let dn = dev_field(r)?;
                if let Some(d) = self.devices.get_mut(&dn)
                    && d.pv.as_ref().is_some_and(|p| p.uuid == pv.0)
                {
                    d.pv = None;
                }
            }
            RecordType::VG_COMPLETE | RecordType::VG_INCOMPLETE => {
                let vg = uuid(&r.target).ok_or_else(bad_target)?;
                let name = String::from_utf8(r.name.clone()).map_err(|_| bad_field(r, "name"))?;
                let seqno = number(r, "seqno")?.ok_or_else(|| missing(r, "seqno"))?;
                let complete = r.kind == RecordType::VG_COMPLETE;
                let missing_pvs = if complete {
                    0
                } else {
                    number(r, "missing")?.ok_or_else(|| missing(r, "missing"))?
                };
                // Completeness says nothing of the VG's details: kept.
                let detail = self.vgs.get(&vg.0).and_then(|v| v.detail.clone());
                self.vgs.insert(
                    vg.0,
                    VgState {
                        uuid: vg.0,
                        name,
                        seqno,
                        complete,
                        missing: missing_pvs,
                        detail,
                    },
                );
            }
            RecordType::VG_CHANGE => {
                let vg = uuid(&r.target).ok_or_else(bad_target)?;
                let name = String::from_utf8(r.name.clone()).map_err(|_| bad_field(r, "name"))?;
                let seqno = number(r, "seqno")?.ok_or_else(|| missing(r, "seqno"))?;
                let value = |key| number(r, key)?.ok_or_else(|| missing(r, key));
                let (extent_count, free_count) = (value("extent_count")?, value("free_count")?);
                let (extent_size, copies) = (value("extent_size")?, value("metadata_copies")?);
                let status = text(r, "status")?.unwrap_or_default();
                let added = uuid_list(r, "pvs_added")?;
                let removed = uuid_list(r, "pvs_removed")?;
                // A rename renames the VG of its PVs too (PV_FOUND named it).
                if r.field("old_name").is_some() {
                    for pv in self.devices.values_mut().filter_map(|d| d.pv.as_mut()) {
                        if pv.vg_uuid == Some(vg.0) {
                            pv.vg_name.clone_from(&name);
                        }
                    }
                }
                let st = self.vg_entry(vg.0, &name);
                st.name = name;
                st.seqno = seqno;
                if let Some(d) = st.detail.as_mut() {
                    d.pvs.retain(|p| !removed.contains(p));
                    for p in added {
                        if !d.pvs.contains(&p) {
                            d.pvs.push(p);
                        }
                    }
                    d.extent_count = extent_count;
                    d.free_count = free_count;
                    d.extent_size = extent_size;
                    d.metadata_copies = copies;
                    d.status = status;
                }
            }
            RecordType::VG_REMOVE => {
                let vg = uuid(&r.target).ok_or_else(bad_target)?;
                self.vgs.remove(&vg.0);
            }
            RecordType::LV_ADD | RecordType::LV_CHANGE | RecordType::LV_REMOVE => {
                let lv = uuid(&r.target).ok_or_else(bad_target)?;
                let vg = uuid(&r.parent).ok_or_else(|| bad_field(r, "parent"))?;
                let vg_name = text(r, "vg")?.ok_or_else(|| missing(r, "vg"))?;
                let state = if r.kind == RecordType::LV_REMOVE {
                    None
                } else {
                    Some(lv_state(r, lv.0)?)
                };
                // A VG read from a version 1 checkpoint has no LV list to
                // keep current: its LVs are taken as found at restart.
                if let Some(d) = self.vg_entry(vg.0, &vg_name).detail.as_mut() {
                    match (d.lvs.iter().position(|l| l.uuid == lv.0), state) {
                        (Some(i), Some(s)) => d.lvs[i] = s,
                        (None, Some(s)) => d.lvs.push(s),
                        (Some(i), None) => {
                            d.lvs.remove(i);
                        }
                        (None, None) => {}
                    }
                }
            }
            // Not an inventory record: nothing to apply.
            _ => {}
        }
        Ok(())
    }

    /// VG `id`'s state, made (incomplete, nothing known of it but its
    /// name) when a record names a VG the state does not hold yet.
    fn vg_entry(&mut self, id: [u8; 32], name: &str) -> &mut VgState {
        self.vgs.entry(id).or_insert_with(|| VgState {
            uuid: id,
            name: name.to_owned(),
            seqno: 0,
            complete: false,
            missing: 0,
            detail: Some(VgDetail::default()),
        })
    }

    fn device(&self, r: &LogRecord, dn: DevNum) -> Result<&DeviceState, BadRecord> {
        self.devices.get(&dn).ok_or(BadRecord::UnknownDevice {
            kind: r.kind,
            index: r.index,
            dev: dn,
        })
    }
}

/// A device record's name and parent.
fn describe(d: &mut DeviceState, r: &LogRecord) -> Result<(), BadRecord> {
    d.name = String::from_utf8(r.name.clone()).map_err(|_| bad_field(r, "name"))?;
    d.parent = match r.parent.as_slice() {
        [] => None,
        p => Some(DevNum::from_be_slice(p).ok_or_else(|| bad_field(r, "parent"))?),
    };
    Ok(())
}

/// Sets attribute `key` from its record value; empty means absent for
/// the optional ones. Unknown keys (a newer writer's) are ignored.
fn set(d: &mut DeviceState, key: &str, v: &[u8]) -> Result<(), ()> {
    let flag = |v: &[u8]| match v {
        b"0" => Ok(false),
        b"1" => Ok(true),
        _ => Err(()),
    };
    let optional = |v: &[u8]| (!v.is_empty()).then(|| v.to_vec());
    let text = |v: &[u8]| {
        optional(v)
            .map(String::from_utf8)
            .transpose()
            .map_err(|_| ())
    };
    match key {
        "size" => d.size_bytes = decimal(v).ok_or(())?,
        "ro" => d.read_only = flag(v)?,
        "type" => {
            d.partition = match v {
                b"part" => true,
                b"disk" | b"loop" => false,
                _ => return Err(()),
            }
        }
        "removable" => d.removable = optional(v).map(|v| flag(&v)).transpose()?,
        "rotational" => d.rotational = optional(v).map(|v| flag(&v)).transpose()?,
        "backing_file" => d.backing_file = optional(v),
        "model" => d.model = text(v)?,
        "serial" => d.serial = text(v)?,
        "wwid" => d.wwid = text(v)?,
        "diskseq" => {
            d.diskseq = optional(v).map(|v| decimal(&v).ok_or(())).transpose()?;
        }
        // `dev` is the target's; newer attributes are not kept.
        _ => {}
    }
    Ok(())
}

/// A decimal `u64`, digits only.
fn decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

fn dev_field(r: &LogRecord) -> Result<DevNum, BadRecord> {
    let v = r.field("dev").ok_or_else(|| missing(r, "dev"))?;
    DevNum::parse(v).ok_or_else(|| bad_field(r, "dev"))
}

fn text(r: &LogRecord, key: &'static str) -> Result<Option<String>, BadRecord> {
    r.field(key)
        .map(|v| String::from_utf8(v.to_vec()).map_err(|_| bad_field(r, key)))
        .transpose()
}

fn number(r: &LogRecord, key: &'static str) -> Result<Option<u64>, BadRecord> {
    r.field(key)
        .map(|v| decimal(v).ok_or_else(|| bad_field(r, key)))
        .transpose()
}

/// An LV_ADD or LV_CHANGE record's LV.
fn lv_state(r: &LogRecord, id: [u8; 32]) -> Result<LvState, BadRecord> {
    let value = |key| number(r, key)?.ok_or_else(|| missing(r, key));
    let layout = r.field("layout").ok_or_else(|| missing(r, "layout"))?;
    let layout = std::str::from_utf8(layout)
        .ok()
        .filter(|s| s.len() == 8)
        .and_then(|s| u32::from_str_radix(s, 16).ok())
        .ok_or_else(|| bad_field(r, "layout"))?;
    Ok(LvState {
        uuid: id,
        name: String::from_utf8(r.name.clone()).map_err(|_| bad_field(r, "name"))?,
        extents: value("extents")?,
        size_bytes: value("size")?,
        segtype: text(r, "segtype")?.unwrap_or_default(),
        segments: value("segments")?,
        status: text(r, "status")?.unwrap_or_default(),
        layout,
    })
}

/// A comma list of dashed uuids; absent or empty is none.
fn uuid_list(r: &LogRecord, key: &'static str) -> Result<Vec<[u8; 32]>, BadRecord> {
    let Some(v) = r.field(key) else {
        return Ok(Vec::new());
    };
    v.split(|&b| b == b',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            weir_lvm::Uuid::parse(s)
                .map(|u| u.0)
                .ok_or_else(|| bad_field(r, key))
        })
        .collect()
}

fn missing(r: &LogRecord, key: &'static str) -> BadRecord {
    BadRecord::Missing {
        kind: r.kind,
        index: r.index,
        key,
    }
}

fn bad_field(r: &LogRecord, key: &str) -> BadRecord {
    BadRecord::Field {
        kind: r.kind,
        index: r.index,
        key: key.to_owned(),
    }
}
