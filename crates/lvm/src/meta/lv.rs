//! The VG's `logical_volumes` section: one [`LvMeta`] per subsection, and
//! each PV's allocated extents from the segments' `stripes`.
//!
//! As in LVM (lib/striped/striped.c), a `stripes` array holds
//! `stripe_count` pairs of (volume name, first extent), and each area gets
//! `extent_count / stripe_count` extents. A name may be a PV key or an LV
//! (stacked segments); only PVs get extents counted. Other segment types
//! (`mirrors`, `raids`, thin, cache) name LVs, whose own segments hold
//! the stripes, so nothing is counted twice.

use std::collections::{HashMap, HashSet};

use super::fields::At;
use super::{MetaError, NameKind, names, show};
use crate::model::{LvMeta, PvMeta};
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
        for (_, seg) in lv.child_sections() {
            let count = seg.uint("extent_count", u64::from(u32::MAX))?;
            seg.uint("start_extent", u64::from(u32::MAX))?;
            extents = extents.saturating_add(count);
            if let Some(stripes) = seg.opt_array("stripes")? {
                let areas = Areas {
                    pv_index: &pv_index,
                    lv_names: &lv_names,
                    pvs,
                };
                areas.count(seg, count, stripes, &mut alloc)?;
            }
        }
        lvs.push(LvMeta {
            // Checked ASCII by is_valid_name.
            name: String::from_utf8_lossy(name).into_owned(),
            id: lv.uuid("id")?,
            visible: status.iter().any(|s| s == "VISIBLE"),
            status,
            extents,
        });
    }
    for (pv, a) in pvs.iter_mut().zip(alloc) {
        pv.pe_alloc = a;
    }
    Ok(lvs)
}

/// What a segment's stripes are resolved against.
struct Areas<'a> {
    pv_index: &'a HashMap<&'a [u8], usize>,
    lv_names: &'a HashSet<&'a [u8]>,
    pvs: &'a [PvMeta],
}

impl Areas<'_> {
    /// Adds one segment's stripe areas to `alloc` (indexed like the PVs).
    fn count(
        &self,
        seg: At<'_>,
        extent_count: u64,
        stripes: &[Scalar],
        alloc: &mut [u64],
    ) -> Result<(), MetaError> {
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
        Ok(())
    }
}
