//! The VG's `physical_volumes` section: one [`PvMeta`] per subsection.

use std::collections::HashSet;

use super::fields::At;
use super::{MetaError, NameKind, names, show};
use crate::model::PvMeta;

/// Reads every PV, in text order. `pe_alloc` is left at 0 for the LVs'
/// segments to fill in.
pub(super) fn read_pvs(section: At<'_>) -> Result<Vec<PvMeta>, MetaError> {
    let mut pvs = Vec::with_capacity(section.sec.entries.len());
    let mut keys = HashSet::with_capacity(section.sec.entries.len());
    let mut ids = HashSet::with_capacity(section.sec.entries.len());
    for child in section.subsections() {
        let (key, pv) = child?;
        if !names::is_valid_name(key) {
            return Err(MetaError::BadName {
                section: section.path.show(),
                what: NameKind::PvKey,
                name: show(key),
            });
        }
        if !keys.insert(key) {
            return Err(MetaError::DuplicateKey {
                section: section.path.show(),
                key: show(key),
            });
        }
        let id = pv.uuid("id")?;
        if !ids.insert(id) {
            return Err(MetaError::DuplicatePvId { uuid: id });
        }
        pvs.push(PvMeta {
            // Checked ASCII by is_valid_name.
            key: String::from_utf8_lossy(key).into_owned(),
            id,
            // A path hint, printed by no one as is: escape it.
            device_hint: pv.opt_str("device")?.map(show_hint).unwrap_or_default(),
            status: pv.flags("status")?,
            flags: pv.opt_flags("flags")?.unwrap_or_default(),
            // A "late addition" to the format: optional, 0 when absent.
            dev_size: pv.opt_uint("dev_size", u64::MAX)?.unwrap_or(0),
            pe_start: pv.uint("pe_start", u64::MAX)?,
            pe_count: pv.uint("pe_count", u64::from(u32::MAX))?,
            pe_alloc: 0,
        });
    }
    Ok(pvs)
}

/// A device hint made printable: non-printing and non-ASCII bytes escaped.
fn show_hint(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}
