//! The VG's `logical_volumes` section: one [`LvMeta`] per subsection, and
//! each PV's allocated extents from the segments' `stripes`.
//!
//! As in LVM (lib/striped/striped.c), a `stripes` array holds
//! `stripe_count` pairs of (volume name, first extent), and each area gets
//! `extent_count / stripe_count` extents. A name may be a PV key or an LV
//! (stacked segments); only PVs get extents counted. Other segment types
//! (`mirrors`, `raids`, thin, cache) name LVs, whose own segments hold
//! the stripes, so nothing is counted twice.
//!
//! Each segment is kept too ([`LvSegment`]): its type, stripes and areas,
//! with PV keys resolved to PV uuids, and the other LVs it names (a pool's
//! metadata, a snapshot's origin, ...) by role, for `lvs` (whose `lv_attr`
//! is mostly the roles LVs play for each other) and for telling what an
//! update changed. Which key names what follows each segment type's
//! importer in LVM (lib/thin, lib/cache_segtype, lib/mirror, lib/raid,
//! lib/snapshot, lib/vdo, lib/writecache, lib/integrity).

use std::collections::{HashMap, HashSet};

use super::fields::At;
use super::{MetaError, NameKind, names, show};
use crate::model::{AreaOn, LinkRole, LvMeta, LvSegment, PvMeta, SegArea, SegLink};
use crate::text::Scalar;

/// Reads every LV, in text order, and adds each stripe's extents to its
/// PV's `pe_alloc`.
pub(super) fn read_lvs(section: At<'_>, pvs: &mut [PvMeta]) -> Result<Vec<LvMeta>, MetaError> {
    let pv_index: HashMap<&[u8], usize> = pvs
        .iter()
        .enumerate()
        .map(|(i, p)| (p.key.as_bytes(), i))
        .collect();
    // Every LV name first: a stripe may name an LV listed after its own.
    let mut lv_names = HashSet::with_capacity(section.sec.entries.len());
    let mut lv_sections = Vec::with_capacity(section.sec.entries.len());
    for child in section.subsections() {
        let (name, lv) = child?;
        if !names::is_valid_name(name) {
            return Err(MetaError::BadName {
                section: section.path.show(),
                what: NameKind::Lv,
                name: show(name),
            });
        }
        if !lv_names.insert(name) {
            return Err(MetaError::DuplicateKey {
                section: section.path.show(),
                key: show(name),
            });
        }
        lv_sections.push((name, lv));
    }
    // Added to the PVs only once everything checked out.
    let mut alloc = vec![0u64; pvs.len()];
    let mut lvs = Vec::with_capacity(lv_sections.len());
    for (name, lv) in lv_sections {
        let status = lv.flags("status")?;
        let mut extents = 0u64;
        let mut segments = Vec::new();
        let areas = Areas {
            pv_index: &pv_index,
            lv_names: &lv_names,
            pvs,
        };
        for (_, seg) in lv.child_sections() {
            let count = seg.uint("extent_count", u64::from(u32::MAX))?;
            let start_extent = seg.uint("start_extent", u64::from(u32::MAX))?;
            extents = extents.saturating_add(count);
            let mut segment = LvSegment {
                start_extent,
                extent_count: count,
                seg_type: seg_type(seg)?,
                stripe_count: 0,
                stripe_size: seg
                    .opt_uint("stripe_size", u64::from(u32::MAX))?
                    .unwrap_or(0),
                areas: Vec::new(),
                links: Vec::new(),
                zero_new_blocks: false,
            };
            if let Some(stripes) = seg.opt_array("stripes")? {
                segment.stripe_count = areas.count(seg, count, stripes, &mut alloc)?;
                segment.areas = areas.pairs(seg, stripes, "stripes")?;
            } else if let Some(mirrors) = seg.opt_array("mirrors")? {
                segment.areas = areas.pairs(seg, mirrors, "mirrors")?;
            } else if let Some((raids, key)) = raid_list(seg)? {
                for area in areas.names(seg, raids, key)? {
                    match area.on {
                        // LVM tells a RAID's metadata LVs by name too.
                        AreaOn::Lv(lv) if lv.contains("_rmeta_") => segment.links.push(SegLink {
                            role: LinkRole::RaidMetadata,
                            lv,
                        }),
                        _ => segment.areas.push(area),
                    }
                }
            }
            let (area_key, link_keys) = named_lvs(LvMeta::seg_type_base(&segment));
            if let Some(key) = area_key
                && let Some(lv) = areas.named_lv(seg, key)?
            {
                segment.areas.push(SegArea {
                    on: AreaOn::Lv(lv),
                    start: 0,
                });
            }
            for &(key, role) in link_keys {
                if let Some(lv) = areas.named_lv(seg, key)? {
                    segment.links.push(SegLink { role, lv });
                }
            }
            segment.zero_new_blocks = seg
                .opt_uint("zero_new_blocks", u64::from(u32::MAX))?
                .is_some_and(|z| z != 0);
            segments.push(segment);
        }
        lvs.push(LvMeta {
            // Checked ASCII by is_valid_name.
            name: String::from_utf8_lossy(name).into_owned(),
            id: lv.uuid("id")?,
            visible: status.iter().any(|s| s == "VISIBLE"),
            status,
            flags: lv.opt_flags("flags")?.unwrap_or_default(),
            extents,
            allocation_policy: policy(lv)?,
            segments,
        });
    }
    for (pv, a) in pvs.iter_mut().zip(alloc) {
        pv.pe_alloc = a;
    }
    Ok(lvs)
}

/// A segment's `type`: a word of `[a-z0-9_-]` (LVM's names: `striped`,
/// `thin-pool`, `raid10`, ...), then any `+FLAG`s of `[A-Z0-9_]` LVM adds
/// for old versions to refuse (`cache-pool+METADATA_FORMAT`,
/// `raid5+RESHAPE`); at most 64 bytes.
fn seg_type(seg: At<'_>) -> Result<String, MetaError> {
    let t = seg.str("type")?;
    let mut parts = t.split(|&b| b == b'+');
    let base = parts.next().unwrap_or_default();
    let ok = !base.is_empty()
        && t.len() <= 64
        && base
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'))
        && parts.all(|f| {
            !f.is_empty()
                && f.iter()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_')
        });
    if !ok {
        return Err(MetaError::BadSegType {
            section: seg.path.show(),
            value: show(t),
        });
    }
    // Checked ASCII just above.
    Ok(String::from_utf8_lossy(t).into_owned())
}

/// An LV's `allocation_policy`, checked like a flag word.
fn policy(lv: At<'_>) -> Result<Option<String>, MetaError> {
    let Some(p) = lv.opt_str("allocation_policy")? else {
        return Ok(None);
    };
    // Old metadata may say `next free`.
    let ok = !p.is_empty()
        && p.len() <= 32
        && p.iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b' '));
    if !ok {
        return Err(MetaError::BadFlag {
            section: lv.path.show(),
            key: "allocation_policy".into(),
            flag: show(p),
        });
    }
    // Checked ASCII just above.
    Ok(Some(String::from_utf8_lossy(p).into_owned()))
}

/// A RAID segment's LV list and its key: `raids`, or `raid0_lvs` (raid0
/// without metadata LVs).
fn raid_list<'a>(seg: At<'a>) -> Result<Option<(&'a [Scalar], &'static str)>, MetaError> {
    for key in ["raids", "raid0_lvs"] {
        if let Some(list) = seg.opt_array(key)? {
            return Ok(Some((list, key)));
        }
    }
    Ok(None)
}

/// For a segment type: the key naming the one LV it maps onto, if any,
/// and the keys naming the other LVs it uses.
fn named_lvs(base: &str) -> (Option<&'static str>, &'static [(&'static str, LinkRole)]) {
    use LinkRole::*;
    match base {
        "mirror" => (None, &[("mirror_log", MirrorLog)]),
        "thin-pool" => (Some("pool"), &[("metadata", PoolMetadata)]),
        "cache-pool" => (Some("data"), &[("metadata", PoolMetadata)]),
        "cache" => (Some("origin"), &[("cache_pool", CachePool)]),
        "writecache" => (Some("origin"), &[("writecache", Writecache)]),
        "integrity" => (Some("origin"), &[("meta_dev", IntegrityMetadata)]),
        "vdo" => (Some("vdo_pool"), &[]),
        "vdo-pool" => (Some("data"), &[]),
        "snapshot" => (
            None,
            &[
                ("origin", SnapshotOrigin),
                ("cow_store", SnapshotCow),
                ("merging_store", MergingCow),
            ],
        ),
        "thin" => (
            None,
            &[
                ("thin_pool", ThinPool),
                ("origin", ThinOrigin),
                ("merge", ThinMerge),
                ("external_origin", ExternalOrigin),
            ],
        ),
        _ => (None, &[]),
    }
}

/// What a segment's stripes are resolved against.
struct Areas<'a> {
    pv_index: &'a HashMap<&'a [u8], usize>,
    lv_names: &'a HashSet<&'a [u8]>,
    pvs: &'a [PvMeta],
}

impl Areas<'_> {
    /// Adds one segment's stripe areas to `alloc` (indexed like the PVs);
    /// returns its `stripe_count`.
    fn count(
        &self,
        seg: At<'_>,
        extent_count: u64,
        stripes: &[Scalar],
        alloc: &mut [u64],
    ) -> Result<u64, MetaError> {
        let stripe_count = seg.uint("stripe_count", u64::from(u32::MAX))?;
        let bad = || MetaError::BadStripes {
            section: seg.path.show(),
            stripe_count,
        };
        if stripe_count == 0 || stripes.len() as u64 != stripe_count.saturating_mul(2) {
            return Err(bad());
        }
        let area_len = extent_count / stripe_count;
        for pair in stripes.chunks_exact(2) {
            let (Scalar::Str(name), Scalar::Int(first)) = (&pair[0], &pair[1]) else {
                return Err(bad());
            };
            let first = u64::try_from(*first).map_err(|_| bad())?;
            if let Some(&i) = self.pv_index.get(name.as_slice()) {
                let pv = &self.pvs[i];
                if first.saturating_add(area_len) > pv.pe_count {
                    return Err(MetaError::StripePastEnd {
                        section: seg.path.show(),
                        pv: pv.key.clone(),
                    });
                }
                alloc[i] = alloc[i].saturating_add(area_len);
            } else if !self.lv_names.contains(name.as_slice()) {
                return Err(MetaError::UnknownStripe {
                    section: seg.path.show(),
                    name: show(name),
                });
            }
        }
        Ok(stripe_count)
    }

    /// The volume a segment names: a PV key or an LV of the VG.
    fn volume(&self, name: &[u8]) -> Option<AreaOn> {
        if let Some(&i) = self.pv_index.get(name) {
            return Some(AreaOn::Pv(self.pvs[i].id));
        }
        // Checked ASCII by is_valid_name when the LV names were read.
        self.lv_names
            .contains(name)
            .then(|| AreaOn::Lv(String::from_utf8_lossy(name).into_owned()))
    }

    /// `stripes` or `mirrors`: (volume, first extent) pairs.
    fn pairs(
        &self,
        seg: At<'_>,
        items: &[Scalar],
        key: &'static str,
    ) -> Result<Vec<SegArea>, MetaError> {
        let bad = || MetaError::BadAreas {
            section: seg.path.show(),
            key,
        };
        if !items.len().is_multiple_of(2) {
            return Err(bad());
        }
        items
            .chunks_exact(2)
            .map(|pair| match (&pair[0], &pair[1]) {
                (Scalar::Str(name), Scalar::Int(first)) => Ok(SegArea {
                    on: self.volume(name).ok_or_else(bad)?,
                    start: u64::try_from(*first).map_err(|_| bad())?,
                }),
                _ => Err(bad()),
            })
            .collect()
    }

    /// `raids` or `raid0_lvs`: LV names (metadata and image LVs,
    /// alternating, or images alone).
    fn names(
        &self,
        seg: At<'_>,
        items: &[Scalar],
        key: &'static str,
    ) -> Result<Vec<SegArea>, MetaError> {
        let bad = || MetaError::BadAreas {
            section: seg.path.show(),
            key,
        };
        items
            .iter()
            .map(|item| match item {
                Scalar::Str(name) => Ok(SegArea {
                    on: self.volume(name).ok_or_else(bad)?,
                    start: 0,
                }),
                _ => Err(bad()),
            })
            .collect()
    }

    /// The LV a string key names (`pool = "pool_tdata"`), if the key is
    /// there: it must name an LV of the VG.
    fn named_lv(&self, seg: At<'_>, key: &'static str) -> Result<Option<String>, MetaError> {
        let Some(name) = seg.opt_str(key)? else {
            return Ok(None);
        };
        if !self.lv_names.contains(name) {
            return Err(MetaError::UnknownLv {
                section: seg.path.show(),
                key,
                name: show(name),
            });
        }
        // Checked ASCII by is_valid_name when the LV names were read.
        Ok(Some(String::from_utf8_lossy(name).into_owned()))
    }
}
