//! MOUNT_* records read back: an ATTACH record to the [`Mount`] it
//! describes, and a MOVE or CHANGE applied to the mount it is about.
//!
//! A restarting tracker replays the records its previous run logged after
//! its last checkpoint, so that what it compares with the live table is the
//! table *as logged*, and no change is logged twice or missed. The values are
//! the text [`super::append`] wrote (docs/records.md); they are parsed with
//! the mountinfo parser's own rules, since the text is mountinfo's. Records
//! come from disk: every part is checked and a bad one is a typed error.
//!
//! What a record does not hold: the old 32-bit ids (`old_id`,
//! `old_parent_id`) are left 0 in a decoded mount. Neither is compared nor
//! written to any record, and a restarting tracker takes live mounts' values.

use weir_log::{LogRecord, RecordType};

use crate::change::Attrs;
use crate::escape::find;
use crate::model::{Mount, Propagation};
use crate::mountinfo::parse::{dev, mount_flags, optional_field, super_options};

/// Why a record does not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The record is not of the type this call reads.
    #[error("record type {0} is not the one expected")]
    WrongType(RecordType),
    /// The target or parent is not an 8-byte id.
    #[error("the {0} is not an 8-byte mount id")]
    BadId(&'static str),
    /// A field the record must have is missing.
    #[error("field `{0}` is missing")]
    MissingField(&'static str),
    /// A field's value does not parse.
    #[error("field `{0}` does not parse")]
    BadField(&'static str),
    /// A CHANGE names an attribute whose value no record carries
    /// (`identity`, `place`), or one this version does not know.
    #[error("attribute `{0}` changed, but the record holds no value for it")]
    NoValue(String),
}

/// An 8-byte big-endian id.
fn id(bytes: &[u8], part: &'static str) -> Result<u64, DecodeError> {
    <[u8; 8]>::try_from(bytes)
        .map(u64::from_be_bytes)
        .map_err(|_| DecodeError::BadId(part))
}

fn field<'a>(r: &'a LogRecord, key: &'static str) -> Result<&'a [u8], DecodeError> {
    r.field(key).ok_or(DecodeError::MissingField(key))
}

/// The mount an ATTACH record describes (not one with the `GONE` flag,
/// which holds an id only). `old_id` and `old_parent_id` are 0: the record
/// does not hold them.
pub fn attached(r: &LogRecord) -> Result<Mount, DecodeError> {
    if r.kind != RecordType::MOUNT_ATTACH || r.flags & super::FLAG_GONE != 0 {
        return Err(DecodeError::WrongType(r.kind));
    }
    let (major, minor) = dev(field(r, "dev")?).map_err(|_| DecodeError::BadField("dev"))?;
    let full = field(r, "fstype")?;
    // As in mountinfo: `type.subtype`, and a type has no dot of its own.
    let (fstype, subtype) = match find(full, b'.') {
        Some(dot) => (&full[..dot], Some(full[dot + 1..].into())),
        None => (full, None),
    };
    let (super_flags, fs_options) =
        super_options(field(r, "super")?).map_err(|_| DecodeError::BadField("super"))?;
    Ok(Mount {
        id: id(&r.target, "target")?,
        parent_id: id(&r.parent, "parent")?,
        old_id: 0,
        old_parent_id: 0,
        major,
        minor,
        root: field(r, "root")?.into(),
        mount_point: r.name.as_slice().into(),
        fstype: fstype.into(),
        subtype,
        source: field(r, "source")?.into(),
        flags: options(field(r, "options")?)?,
        super_flags,
        fs_options: fs_options.into(),
        propagation: propagation(field(r, "propagation")?)?,
    })
}

/// Applies a MOVE or CHANGE record to `m`, the mount it is about as it was
/// just before. On an error `m` may be partly updated.
pub fn apply(m: &mut Mount, r: &LogRecord) -> Result<(), DecodeError> {
    if r.kind != RecordType::MOUNT_MOVE && r.kind != RecordType::MOUNT_CHANGE {
        return Err(DecodeError::WrongType(r.kind));
    }
    // Both carry the place the mount has after the record.
    m.mount_point = r.name.as_slice().into();
    m.parent_id = id(&r.parent, "parent")?;
    if r.kind == RecordType::MOUNT_MOVE {
        return Ok(());
    }
    let changed = field(r, "changed")?;
    for name in changed.split(|&b| b == b',').filter(|w| !w.is_empty()) {
        let Some((attr, key, _)) = Attrs::VALUED
            .iter()
            .find(|(_, key, _)| key.as_bytes() == name)
        else {
            return Err(DecodeError::NoValue(
                String::from_utf8_lossy(name).into_owned(),
            ));
        };
        let value = field(r, key)?;
        match *attr {
            Attrs::OPTIONS => m.flags = options(value)?,
            Attrs::SUPER => {
                let (flags, rest) =
                    super_options(value).map_err(|_| DecodeError::BadField("super"))?;
                m.super_flags = flags;
                m.fs_options = rest.into();
            }
            Attrs::PROPAGATION => m.propagation = propagation(value)?,
            _ => m.source = value.into(),
        }
    }
    Ok(())
}

fn options(v: &[u8]) -> Result<crate::MountFlags, DecodeError> {
    mount_flags(v).map_err(|_| DecodeError::BadField("options"))
}

/// `shared:1 master:2`, or `private`: mountinfo's optional fields.
fn propagation(v: &[u8]) -> Result<Propagation, DecodeError> {
    let mut p = Propagation::default();
    if v == b"private" {
        return Ok(p);
    }
    for word in v.split(|&b| b == b' ') {
        optional_field(word, &mut p).map_err(|_| DecodeError::BadField("propagation"))?;
    }
    Ok(p)
}

#[cfg(test)]
mod tests;
