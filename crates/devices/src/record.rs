//! Changes as changelog records (DEVICE_*, PV_*, VG_*) and the tracker's
//! MARKs. The layout is documented in docs/records.md.
//!
//! - A device's target is its number, 8 bytes big-endian; a partition's
//!   parent is its disk's number.
//! - A PV's target is its uuid (32 characters, no dashes); its parent the
//!   VG's uuid. A VG's target is its uuid. An LV's target is its uuid, its
//!   parent its VG's.
//! - Names are the device name, the VG name or the LV name.
//! - A change record carries every attribute's new value and, for those in
//!   its `changed` list, the old one under `old_<name>`, so that replaying
//!   records alone rebuilds the state (the restart's crash tail).

use weir_log::{Appended, Field, Log, Record, RecordType};

use weir_lvm::Uuid;
use weir_lvm::assembly::{LvRef, VgDelta, VgRef};

use crate::change::{ATTRIBUTES, Change, ChangeKind, attributes};
use crate::sysfs::{BlockDevice, Kind};

/// Record flag: found by reading every device, not from a uevent.
pub const FLAG_SCAN: u16 = 1 << 0;

/// The names of this source's flags, as `weir log tail` shows them
/// (beside weir-log's shared `RECONCILED`).
pub const FLAG_NAMES: [(u16, &str); 1] = [(FLAG_SCAN, "SCAN")];

/// The record types this module writes, which describe the inventory
/// (its MARKs aside).
pub const TYPES: [RecordType; 13] = [
    RecordType::DEVICE_ADD,
    RecordType::DEVICE_REMOVE,
    RecordType::DEVICE_CHANGE,
    RecordType::PV_FOUND,
    RecordType::PV_LOST,
    RecordType::VG_COMPLETE,
    RecordType::VG_INCOMPLETE,
    RecordType::VG_CHANGE,
    RecordType::VG_REMOVE,
    RecordType::PV_CHANGE,
    RecordType::LV_ADD,
    RecordType::LV_REMOVE,
    RecordType::LV_CHANGE,
];

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
        ChangeKind::VgChange { .. } => RecordType::VG_CHANGE,
        ChangeKind::VgRemove { .. } => RecordType::VG_REMOVE,
        ChangeKind::PvChange { .. } => RecordType::PV_CHANGE,
        ChangeKind::LvAdd { .. } => RecordType::LV_ADD,
        ChangeKind::LvRemove { .. } => RecordType::LV_REMOVE,
        ChangeKind::LvChange { .. } => RecordType::LV_CHANGE,
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
        ChangeKind::VgChange { old, vg, delta } => {
            vg_change_fields(&mut fields, old, vg, delta);
            (vg.uuid.0.to_vec(), Vec::new(), vg.name.as_bytes())
        }
        ChangeKind::VgRemove { vg } => {
            fields.push(("seqno", vg.seqno.to_string().into_bytes()));
            (vg.uuid.0.to_vec(), Vec::new(), vg.name.as_bytes())
        }
        ChangeKind::PvChange {
            dev,
            name,
            uuid,
            vg,
            old_vg,
        } => {
            fields.push(("dev", dev.to_string().into_bytes()));
            let name_of = |v: &Option<VgRef>| {
                v.as_ref()
                    .map_or_else(Vec::new, |v| v.name.clone().into_bytes())
            };
            fields.push(("vg", name_of(vg)));
            fields.push(("old_vg", name_of(old_vg)));
            fields.push((
                "old_vg_uuid",
                old_vg
                    .as_ref()
                    .map_or_else(Vec::new, |v| v.uuid.to_string().into_bytes()),
            ));
            let parent = vg.as_ref().map_or_else(Vec::new, |v| v.uuid.0.to_vec());
            (uuid.0.to_vec(), parent, name.as_bytes())
        }
        ChangeKind::LvAdd { vg, lv } | ChangeKind::LvRemove { vg, lv } => {
            fields.push(("vg", vg.name.clone().into_bytes()));
            lv_fields(&mut fields, lv);
            (lv.uuid.0.to_vec(), vg.uuid.0.to_vec(), lv.name.as_bytes())
        }
        ChangeKind::LvChange {
            vg,
            old,
            lv,
            changed,
        } => {
            fields.push(("vg", vg.name.clone().into_bytes()));
            fields.push(("changed", changed.join(",").into_bytes()));
            lv_fields(&mut fields, lv);
            lv_old_fields(&mut fields, old, changed);
            (lv.uuid.0.to_vec(), vg.uuid.0.to_vec(), lv.name.as_bytes())
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

/// VG_CHANGE: the seqnos, what changed, every attribute's new value, and
/// the old value of each changed one.
fn vg_change_fields(
    fields: &mut Vec<(&'static str, Vec<u8>)>,
    old: &VgRef,
    vg: &VgRef,
    d: &VgDelta,
) {
    let text = |n: u64| n.to_string().into_bytes();
    let uuids = |u: &[Uuid]| {
        u.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
            .into_bytes()
    };
    let changed = d.changed();
    fields.push(("seqno", text(vg.seqno)));
    fields.push(("old_seqno", text(old.seqno)));
    fields.push(("changed", changed.join(",").into_bytes()));
    if let Some(n) = &d.old_name {
        fields.push(("old_name", n.clone().into_bytes()));
    }
    if changed.contains(&"pvs") {
        fields.push(("pvs_added", uuids(&d.pvs_added)));
        fields.push(("pvs_removed", uuids(&d.pvs_removed)));
    }
    let values = [
        ("extent_count", "old_extent_count", d.extent_count),
        ("free_count", "old_free_count", d.free_count),
        ("extent_size", "old_extent_size", d.extent_size),
        ("metadata_copies", "old_metadata_copies", d.metadata_copies),
    ];
    for (key, old_key, (was, now)) in values {
        fields.push((key, text(now)));
        if was != now {
            fields.push((old_key, text(was)));
        }
    }
    fields.push(("status", d.status.1.clone().into_bytes()));
    if d.status.0 != d.status.1 {
        fields.push(("old_status", d.status.0.clone().into_bytes()));
    }
}

/// An LV's attributes as LV_* records carry them.
fn lv_fields(fields: &mut Vec<(&'static str, Vec<u8>)>, lv: &LvRef) {
    fields.extend(lv_values(lv).map(|(k, _, v)| (k, v)));
}

/// The old values of the changed attributes of an LV_CHANGE.
fn lv_old_fields(fields: &mut Vec<(&'static str, Vec<u8>)>, old: &LvRef, changed: &[&str]) {
    // `segments` covers the layout, its count and types; `size` the extents.
    let of = |k: &str| match k {
        "name" => "name",
        "size" | "extents" => "size",
        "segments" | "segtype" | "layout" => "segments",
        _ => "status",
    };
    for (key, old_key, v) in lv_values(old) {
        if key != "name" && changed.contains(&of(key)) {
            fields.push((old_key, v));
        }
    }
    if changed.contains(&"name") {
        fields.push(("old_name", old.name.clone().into_bytes()));
    }
}

/// `(field, old_field, value)` of each LV attribute a record carries.
fn lv_values(lv: &LvRef) -> impl Iterator<Item = (&'static str, &'static str, Vec<u8>)> {
    [
        ("size", "old_size", lv.size_bytes.to_string().into_bytes()),
        (
            "extents",
            "old_extents",
            lv.extents.to_string().into_bytes(),
        ),
        (
            "segments",
            "old_segments",
            lv.segments.to_string().into_bytes(),
        ),
        ("segtype", "old_segtype", lv.segtype.clone().into_bytes()),
        (
            "layout",
            "old_layout",
            format!("{:08x}", lv.layout).into_bytes(),
        ),
        ("status", "old_status", lv.status.clone().into_bytes()),
    ]
    .into_iter()
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
