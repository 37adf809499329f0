//! Changes as changelog records (MOUNT_ATTACH, MOUNT_DETACH, MOUNT_MOVE,
//! MOUNT_CHANGE). The layout is documented in docs/records.md.
//!
//! - target: the mount id, 8 bytes big-endian; parent: the parent's id.
//! - name: the mount point, raw bytes.
//! - fields: text values (paths stay raw bytes).
//!
//! [`decode`] reads them back: a restarting tracker replays the records
//! logged after its checkpoint (see [`crate::Previous`]).

pub mod decode;

use weir_log::{FLAG_RECONCILED, Field, Log, LogRecord, Record, RecordType, TypeMask};

use crate::change::{Attrs, Change, ChangeKind, Seen};
use crate::model::Mount;

/// Record flag: the change was found by comparing whole tables, not from an
/// event about this mount.
pub const FLAG_COMPARE: u16 = 1 << 0;
/// Record flag: the mount was gone before weir could read it; the record
/// holds its id only.
pub const FLAG_GONE: u16 = 1 << 1;
/// The names of this source's flags, as `weir log tail` shows them
/// (beside weir-log's shared `RECONCILED`).
pub const FLAG_NAMES: [(u16, &str); 2] = [(FLAG_COMPARE, "COMPARE"), (FLAG_GONE, "GONE")];

/// The record types this module writes: MOUNT_ATTACH, MOUNT_DETACH,
/// MOUNT_MOVE and MOUNT_CHANGE.
pub const TYPES: [RecordType; 4] = [
    RecordType::MOUNT_ATTACH,
    RecordType::MOUNT_DETACH,
    RecordType::MOUNT_MOVE,
    RecordType::MOUNT_CHANGE,
];

/// A mask of [`TYPES`], for readers of mount records only.
pub fn mask() -> TypeMask {
    let mut m = TypeMask::none();
    for t in TYPES {
        m.insert(t);
    }
    m
}

/// The record type of a change.
pub fn record_type(c: &Change) -> RecordType {
    match c.kind {
        ChangeKind::Attach(_) | ChangeKind::AttachGone { .. } => RecordType::MOUNT_ATTACH,
        ChangeKind::Detach(_) | ChangeKind::DetachGone { .. } => RecordType::MOUNT_DETACH,
        ChangeKind::Move { .. } => RecordType::MOUNT_MOVE,
        ChangeKind::Change { .. } => RecordType::MOUNT_CHANGE,
    }
}

/// The mount id a MOUNT_* record is about (its target), or `None` when the
/// target is not the 8 bytes this module writes.
pub fn mount_id(r: &LogRecord) -> Option<u64> {
    <[u8; 8]>::try_from(r.target.as_slice())
        .ok()
        .map(u64::from_be_bytes)
}

/// Appends the record of one change; returns what `append` returned.
pub fn append(log: &Log, c: &Change) -> weir_log::Result<weir_log::Appended> {
    let mut flags = match c.seen {
        Seen::Event => 0,
        Seen::Compare => FLAG_COMPARE,
        Seen::Reconcile => FLAG_COMPARE | FLAG_RECONCILED,
    };
    let kind = record_type(c);
    let mut fields: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let (id, parent, name): (u64, u64, &[u8]) = match &c.kind {
        ChangeKind::Attach(m) => {
            describe(m, &mut fields);
            (m.id, m.parent_id, &m.mount_point)
        }
        ChangeKind::Detach(m) => {
            fields.push(("source", m.source.to_vec()));
            fields.push(("fstype", m.fstype_full()));
            (m.id, m.parent_id, &m.mount_point)
        }
        ChangeKind::AttachGone { id } | ChangeKind::DetachGone { id } => {
            flags |= FLAG_GONE;
            (*id, 0, b"")
        }
        ChangeKind::Move { old, new } => {
            fields.push(("from", old.mount_point.to_vec()));
            fields.push(("from_parent", old.parent_id.to_string().into_bytes()));
            (new.id, new.parent_id, &new.mount_point)
        }
        ChangeKind::Change { old, new } => {
            let d = Attrs::between(old, new);
            fields.push(("changed", d.to_text().into_bytes()));
            for (a, key, old_key) in Attrs::VALUED {
                if d.contains(a)
                    && let (Some(n), Some(o)) = (a.value_of(new), a.value_of(old))
                {
                    fields.push((key, n));
                    fields.push((old_key, o));
                }
            }
            (new.id, new.parent_id, &new.mount_point)
        }
    };
    let target = id.to_be_bytes();
    let parent = parent.to_be_bytes();
    let fields: Vec<Field<'_>> = fields
        .iter()
        .map(|(k, v)| Field { key: k, value: v })
        .collect();
    let r = Record::new(kind)
        .flags(flags)
        .target(&target)
        .parent(&parent)
        .name(name)
        .fields(&fields);
    log.append(&r)
}

/// The fields of an ATTACH record: everything about the mount.
fn describe(m: &Mount, fields: &mut Vec<(&'static str, Vec<u8>)>) {
    fields.push(("root", m.root.to_vec()));
    fields.push(("source", m.source.to_vec()));
    fields.push(("fstype", m.fstype_full()));
    fields.push(("options", m.flags.to_text().into_bytes()));
    fields.push(("super", m.super_options()));
    fields.push(("propagation", m.propagation.to_text().into_bytes()));
    fields.push(("dev", m.dev_text().into_bytes()));
}
