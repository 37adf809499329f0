//! A VG's metadata ([`VgMeta`]) from its text, as LVM's importer
//! (lib/format_text/import_vsn1.c) reads it: the top-level section is the
//! VG; its `physical_volumes` and `logical_volumes` give the PVs and LVs;
//! the `stripes` of the LVs' segments give each PV's allocated extents.
//!
//! Only what weir reports is extracted, but all of it is checked: names
//! follow LVM's rules, numbers fit LVM's types, uuids parse, every stripe
//! names a volume of the VG, and no PV uuid appears twice. Anything else
//! is a typed [`MetaError`] naming the section and key.

mod fields;
mod lv;
pub mod names;
mod pv;
#[cfg(test)]
pub(crate) mod tests;

use crate::model::{Uuid, VgMeta};
use crate::text::{self, Item};
use fields::{At, Path};

/// Why a parsed text does not describe a VG.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetaError {
    /// No top-level section.
    #[error("no volume group section in the metadata text")]
    NoVg,
    /// More than one top-level section.
    #[error("several volume group sections in the metadata text ({first}, {second})")]
    SeveralVgs {
        /// The first section's name (escaped).
        first: String,
        /// The second's.
        second: String,
    },
    /// `contents` or `version` is not LVM's text format 1.
    #[error("not an LVM2 volume group text: unexpected {key}")]
    NotVgText {
        /// `contents` or `version`.
        key: &'static str,
    },
    /// A required key is absent.
    #[error("{section}: missing {key}")]
    Missing {
        /// The section (`vg/physical_volumes/pv0`).
        section: String,
        /// The key.
        key: String,
    },
    /// A key holds the wrong kind of value.
    #[error("{section}: {key} is not {expected}")]
    WrongType {
        /// The section.
        section: String,
        /// The key (escaped).
        key: String,
        /// What it should be.
        expected: Expected,
    },
    /// A key appears twice in one section.
    #[error("{section}: {key} appears more than once")]
    DuplicateKey {
        /// The section.
        section: String,
        /// The key (escaped).
        key: String,
    },
    /// A number outside what LVM stores (negative, too large, or zero
    /// where zero means nothing).
    #[error("{section}: {key} = {value} is out of range")]
    OutOfRange {
        /// The section.
        section: String,
        /// The key.
        key: String,
        /// The value.
        value: i64,
    },
    /// A uuid that is not 32 characters of `[0-9A-Za-z]`.
    #[error("{section}: {key} is not a valid uuid")]
    BadUuid {
        /// The section.
        section: String,
        /// The key.
        key: String,
    },
    /// A VG, LV or PV-key name that LVM would not accept.
    #[error("{section}: invalid {what} name {name}")]
    BadName {
        /// The section holding it.
        section: String,
        /// Which kind of name.
        what: NameKind,
        /// The name, escaped and truncated.
        name: String,
    },
    /// A status or flags item that is not a flag word.
    #[error("{section}: invalid {key} item {flag}")]
    BadFlag {
        /// The section.
        section: String,
        /// `status` or `flags`.
        key: String,
        /// The item, escaped and truncated.
        flag: String,
    },
    /// A segment's `type` that is not a segment type word.
    #[error("{section}: invalid segment type {value}")]
    BadSegType {
        /// The segment.
        section: String,
        /// The type, escaped and truncated.
        value: String,
    },
    /// `mirrors`, `raids` or `raid0_lvs` is not a list of volumes of the
    /// VG.
    #[error("{section}: {key} do not name volumes of the VG")]
    BadAreas {
        /// The segment.
        section: String,
        /// `mirrors`, `raids` or `raid0_lvs`.
        key: &'static str,
    },
    /// A key that names another LV (`pool`, `origin`, `mirror_log`, ...)
    /// names none of the VG.
    #[error("{section}: {key} names no LV of the VG: {name}")]
    UnknownLv {
        /// The segment.
        section: String,
        /// The key.
        key: &'static str,
        /// The name, escaped and truncated.
        name: String,
    },
    /// `stripes` is not `stripe_count` pairs of (volume name, extent).
    #[error("{section}: stripes are not {stripe_count} (name, extent) pairs")]
    BadStripes {
        /// The segment.
        section: String,
        /// Its `stripe_count`.
        stripe_count: u64,
    },
    /// A stripe names neither a PV nor an LV of the VG.
    #[error("{section}: stripe on unknown volume {name}")]
    UnknownStripe {
        /// The segment.
        section: String,
        /// The name, escaped and truncated.
        name: String,
    },
    /// A stripe's extents run past its PV's `pe_count`.
    #[error("{section}: stripe on {pv} ends past its last extent")]
    StripePastEnd {
        /// The segment.
        section: String,
        /// The PV key.
        pv: String,
    },
    /// Two PVs of the VG have the same uuid.
    #[error("PV uuid {uuid} is listed twice")]
    DuplicatePvId {
        /// The uuid.
        uuid: Uuid,
    },
}

/// The kind of value a key should hold, for [`MetaError::WrongType`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Expected {
    /// An integer.
    #[error("an integer")]
    Int,
    /// A string.
    #[error("a string")]
    Str,
    /// An array.
    #[error("an array")]
    Array,
    /// An array of strings.
    #[error("a list of strings")]
    StrList,
    /// A section.
    #[error("a section")]
    Section,
}

/// Which name [`MetaError::BadName`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameKind {
    /// The VG's.
    #[error("VG")]
    Vg,
    /// An LV's.
    #[error("LV")]
    Lv,
    /// A PV's section key (`pv0`).
    #[error("PV key")]
    PvKey,
}

/// The most bytes of a hostile name an error message shows.
const SHOW_MAX: usize = 64;

/// Text-derived bytes made safe to print: escaped, and cut at
/// [`SHOW_MAX`] bytes.
pub(crate) fn show(bytes: &[u8]) -> String {
    let cut = bytes.get(..SHOW_MAX).unwrap_or(bytes);
    let mut s = cut.escape_ascii().to_string();
    if cut.len() < bytes.len() {
        s.push_str("...");
    }
    s
}

/// Parses one metadata text (as stored in an mda) into the VG it
/// describes.
pub fn parse_vg(text: &[u8]) -> crate::Result<VgMeta> {
    let tree = text::parse(text)?;
    Ok(vg_from_tree(&tree)?)
}

/// The VG a parsed text describes.
pub fn vg_from_tree(tree: &text::Section) -> Result<VgMeta, MetaError> {
    let top = At {
        sec: tree,
        path: Path::TOP,
    };
    // LVM checks these two before anything else (`_vsn1_check_version`).
    if top.str("contents")? != b"Text Format Volume Group" {
        return Err(MetaError::NotVgText { key: "contents" });
    }
    if top.uint("version", u64::MAX)? != 1 {
        return Err(MetaError::NotVgText { key: "version" });
    }
    let mut vgs = tree.entries.iter().filter_map(|e| match &e.item {
        Item::Section(s) => Some((e.key.as_slice(), s)),
        Item::Value(_) => None,
    });
    let (name, sec) = vgs.next().ok_or(MetaError::NoVg)?;
    if let Some((second, _)) = vgs.next() {
        return Err(MetaError::SeveralVgs {
            first: show(name),
            second: show(second),
        });
    }
    if !names::is_valid_name(name) {
        return Err(MetaError::BadName {
            section: Path::TOP.show(),
            what: NameKind::Vg,
            name: show(name),
        });
    }
    let vg = At {
        sec,
        path: Path::TOP.child(name),
    };
    let u32_max = u64::from(u32::MAX);
    let extent_size = vg.uint("extent_size", u32_max)?;
    if extent_size == 0 {
        return Err(MetaError::OutOfRange {
            section: vg.path.show(),
            key: "extent_size".into(),
            value: 0,
        });
    }
    let mut pvs = pv::read_pvs(vg.section("physical_volumes")?)?;
    let lvs = match vg.opt_section("logical_volumes")? {
        Some(lvs) => lv::read_lvs(lvs, &mut pvs)?,
        None => Vec::new(),
    };
    Ok(VgMeta {
        // Checked ASCII by is_valid_name.
        name: String::from_utf8_lossy(name).into_owned(),
        id: vg.uuid("id")?,
        seqno: vg.uint("seqno", u32_max)?,
        status: vg.flags("status")?,
        extent_size,
        metadata_copies: vg.opt_uint("metadata_copies", u32_max)?.unwrap_or(0),
        pvs,
        lvs,
    })
}
