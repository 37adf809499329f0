//! Changes as changelog records (DEVICE_*, PV_*, VG_*) and the tracker's
//! MARKs. The layout is documented in docs/records.md.
//!
//! - A device's target is its number, 8 bytes big-endian; a partition's
//!   parent is its disk's number.
//! - A PV's target is its uuid (32 characters, no dashes); its parent the
//!   VG's uuid. A VG's target is its uuid.
//! - Names are the device name or the VG name.

use weir_log::{Appended, Field, Log, Record, RecordType};

use crate::change::{ATTRIBUTES, Change, ChangeKind, attributes};
use crate::sysfs::{BlockDevice, Kind};

/// Record flag: found by reading every device, not from a uevent.
pub const FLAG_SCAN: u16 = 1 << 0;

/// The record type of a change.
pub fn record_type(c: &Change) -> RecordType {
    match c.kind {
        ChangeKind::DeviceAdd(_) => RecordType::DEVICE_ADD,
        ChangeKind::DeviceChange { .. } => RecordType::DEVICE_CHANGE,
        ChangeKind::DeviceRemove(_) => RecordType::DEVICE_REMOVE,
        ChangeKind::PvFound { .. } => RecordType::PV_FOUND,
        ChangeKind::PvLost { .. } => RecordType::PV_LOST,
        ChangeKind::VgComplete { .. } => RecordType::VG_COMPLETE,
        ChangeKind::VgIncomplete { .. } => RecordType::VG_INCOMPLETE,
    }
}

/// Appends the record of one change, flagged [`FLAG_SCAN`] when it was
/// found by a scan. `parent_of` gives a disk's number by its name.
pub fn append(
    log: &Log,
    c: &Change,
    parent_of: impl Fn(&str) -> Option<[u8; 8]>,
) -> weir_log::Result<Appended> {
    let flags = if c.scan { FLAG_SCAN } else { 0 };
    append_flagged(log, c, flags, parent_of)
}

/// Appends the record of one change with `flags` as given (a restart's
/// comparison adds [`weir_log::FLAG_RECONCILED`]).
pub fn append_flagged(
    log: &Log,
    c: &Change,
    flags: u16,
    parent_of: impl Fn(&str) -> Option<[u8; 8]>,
) -> weir_log::Result<Appended> {
    let mut fields: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let (target, parent, name): (Vec<u8>, Vec<u8>, &[u8]) = match &c.kind {
        ChangeKind::DeviceAdd(d) => {
            push_all(&mut fields, attributes(d));
            device_ids(d, &parent_of)
        }
        ChangeKind::DeviceChange { old, new, changed } => {
            fields.push(("changed", changed.join(",").into_bytes()));
            let (a, b) = (attributes(old), attributes(new));
            let value = |attrs: &[(&'static str, Vec<u8>)], key: &str| {
                attrs
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map_or_else(Vec::new, |(_, v)| v.clone())
            };
            for (key, old_key) in ATTRIBUTES.into_iter().filter(|(k, _)| changed.contains(k)) {
                fields.push((key, value(&b, key)));
                fields.push((old_key, value(&a, key)));
            }
            device_ids(new, &parent_of)
        }
        ChangeKind::DeviceRemove(d) => {
            fields.push(("dev", format!("{}:{}", d.major, d.minor).into_bytes()));
            device_ids(d, &parent_of)
        }
        ChangeKind::PvFound {
            dev,
            name,
            uuid,
            vg,
            duplicate_of,
        } => {
            fields.push(("dev", dev.to_string().into_bytes()));
            if let Some(vg) = vg {
                fields.push(("vg", vg.name.clone().into_bytes()));
            }
            if let Some(d) = duplicate_of {
                fields.push(("duplicate_of", d.clone().into_bytes()));
            }
            let parent = vg.as_ref().map_or_else(Vec::new, |v| v.uuid.0.to_vec());
            (uuid.0.to_vec(), parent, name.as_bytes())
        }
        ChangeKind::PvLost {
            dev,
            name,
            uuid,
            vg,
        } => {
            fields.push(("dev", dev.to_string().into_bytes()));
            if let Some(vg) = vg {
                fields.push(("vg", vg.name.clone().into_bytes()));
            }
            let parent = vg.as_ref().map_or_else(Vec::new, |v| v.uuid.0.to_vec());
            (uuid.0.to_vec(), parent, name.as_bytes())
        }
        ChangeKind::VgComplete { vg, pv_count } => {
            fields.push(("seqno", vg.seqno.to_string().into_bytes()));
            fields.push(("pvs", pv_count.to_string().into_bytes()));
            (vg.uuid.0.to_vec(), Vec::new(), vg.name.as_bytes())
        }
        ChangeKind::VgIncomplete { vg, missing } => {
            fields.push(("seqno", vg.seqno.to_string().into_bytes()));
            fields.push(("missing", missing.len().to_string().into_bytes()));
            let uuids: Vec<String> = missing.iter().map(ToString::to_string).collect();
            fields.push(("missing_uuids", uuids.join(",").into_bytes()));
            (vg.uuid.0.to_vec(), Vec::new(), vg.name.as_bytes())
        }
    };
    let fields: Vec<Field<'_>> = fields
        .iter()
        .map(|(k, v)| Field { key: k, value: v })
        .collect();
    let r = Record::new(record_type(c))
        .flags(flags)
        .target(&target)
        .parent(&parent)
        .name(name)
        .fields(&fields);
    log.append(&r)
}

/// Appends a MARK of the device tracker (`source=devices`).
pub fn mark(log: &Log, name: &str, extra: &[(&str, &[u8])]) -> weir_log::Result<Appended> {
    let mut fields = vec![Field {
        key: "source",
        value: b"devices",
    }];
    fields.extend(extra.iter().map(|(k, v)| Field { key: k, value: v }));
    log.append(
        &Record::new(RecordType::MARK)
            .name(name.as_bytes())
            .fields(&fields),
    )
}

fn push_all(fields: &mut Vec<(&'static str, Vec<u8>)>, attrs: Vec<(&'static str, Vec<u8>)>) {
    fields.extend(attrs);
}

/// A device's target (its number), parent (its disk's, for a partition)
/// and name.
fn device_ids<'a>(
    d: &'a BlockDevice,
    parent_of: &impl Fn(&str) -> Option<[u8; 8]>,
) -> (Vec<u8>, Vec<u8>, &'a [u8]) {
    let target = crate::DevNum::of(d).to_be_bytes().to_vec();
    let parent = match &d.kind {
        Kind::Partition { parent, .. } => parent_of(parent).map_or_else(Vec::new, |p| p.to_vec()),
        Kind::Disk { .. } => Vec::new(),
    };
    (target, parent, d.name.as_bytes())
}
