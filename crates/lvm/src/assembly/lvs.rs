//! The `weir lvs` report, with LVM 2.03's semantics (lib/report/report.c,
//! lib/metadata/lv.c), computed from each known VG's metadata alone.
//!
//! - One [`LvReport`] per LV, sorted by VG name (then uuid) and LV name, as
//!   `lvs` sorts. Only the LVs `lvs` lists, unless `all` (`lvs -a`); never
//!   a snapshot's internal `snapshotN` LV, which `lvs -a` hides too.
//! - `lv_size` is the LV's extents times the extent size (LVM subtracts a
//!   RAID's reshape space too, which weir does not read).
//! - Each segment has LVM's `segtype` (`linear` for one stripe), `stripes`
//!   (its areas: stripes, or mirror or RAID legs), `stripe_size`, and its
//!   `devices`: a PV's device (none when the PV is missing, LVM's
//!   `[unknown]`) and first extent, or an LV (LVM shows extent 0 for an LV).
//! - [`LvAttr`] is `lv_attr` as far as the metadata decides it. Most of it
//!   is what each LV is to the others (an image, a pool's data, a
//!   snapshot's origin), which LVM works out when it imports the text and
//!   weir works out here the same way, in one pass over the segments.
//!   What needs device-mapper is what LVM itself prints without it: state
//!   and open `X`, RAID health `X`, mirror and RAID images `I` (not known
//!   to be in sync).

use std::collections::{HashMap, VecDeque};
use std::fmt::{self, Debug};
use std::hash::Hash;

use super::Assembly;
use crate::model::{AreaOn, LinkRole, LvMeta, SECTOR, Uuid, VgMeta};

/// One LV of `weir lvs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LvReport<D> {
    /// `vg_name`.
    pub vg_name: String,
    /// `vg_uuid`.
    pub vg_uuid: Uuid,
    /// `lv_name`.
    pub name: String,
    /// `lv_uuid`.
    pub uuid: Uuid,
    /// Whether plain `lvs` lists it (`lvs -a` shows the others in
    /// brackets).
    pub visible: bool,
    /// `lv_size`, in bytes.
    pub size_bytes: u64,
    /// The VG's extent size, in bytes (segment starts and sizes are in
    /// extents).
    pub extent_size: u64,
    /// `lv_attr`.
    pub attr: LvAttr,
    /// Its segments, in LV order.
    pub segments: Vec<SegReport<D>>,
}

/// One segment of an [`LvReport`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegReport<D> {
    /// `segtype`: `linear`, `striped`, `mirror`, `raid1`, `thin`, ...
    pub seg_type: String,
    /// `stripes`: the number of areas (stripes, mirror or RAID legs).
    pub stripes: u64,
    /// `stripe_size`, in bytes (0 when it has none).
    pub stripe_size: u64,
    /// `seg_start_pe`: its first extent in the LV.
    pub start_extent: u64,
    /// `seg_size_pe`: its extents.
    pub extent_count: u64,
    /// `devices`, one per area, in order.
    pub devices: Vec<SegDevice<D>>,
}

/// One area of a segment, as `devices` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegDevice<D> {
    /// What the area is on.
    pub on: DeviceOn<D>,
    /// The first extent shown: the PV extent; 0 for an LV, as LVM shows it.
    pub start: u64,
}

/// What an area is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceOn<D> {
    /// A PV of the VG, and the device it is on; `None` when the PV has no
    /// device (LVM's `[unknown]`).
    Pv {
        /// The PV's uuid.
        uuid: Uuid,
        /// Its device.
        device: Option<D>,
    },
    /// An LV of the VG, by name.
    Lv(String),
}

/// LVM's 10 `lv_attr` characters:
///
/// | # | meaning | from |
/// |---|---|---|
/// | 1 | type: `m`irror, `r`aid, `V` thin, `t` thin pool, `o`rigin, `s`napshot, `C`ache, `e` metadata, `I` image, `l`og, `p`vmove, `v`irtual, `-` plain, ... | the segments, and what other LVs' segments make of it |
/// | 2 | permission: `w`, `r`, `-` | `status` READ/WRITE |
/// | 3 | allocation policy: `i`nherit, `n`ormal, `c`ontiguous, c`l`ing, `a`nywhere; capital when LOCKED | `allocation_policy` |
/// | 4 | fixed minor: `m` | `status` FIXED_MINOR |
/// | 5 | state: always `X` (unknown) | device-mapper |
/// | 6 | open: always `X` (unknown) | device-mapper |
/// | 7 | target: `m`irror, `r`aid, `t`hin, `C`ache, `s`napshot, `v`irtual, `u`nknown, `-` | the segments |
/// | 8 | zero new blocks: `z` | a thin pool's `zero_new_blocks` |
/// | 9 | health: `p`artial (on a missing PV); `X` for RAID (device-mapper) | the PVs present |
/// | 10 | skip activation: `k` | `flags` ACTIVATION_SKIP |
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct LvAttr(pub [u8; 10]);

impl LvAttr {
    /// The 10 characters.
    pub fn as_str(&self) -> &str {
        // Built only from ASCII letters and '-'.
        std::str::from_utf8(&self.0).unwrap_or("")
    }
}

impl fmt::Display for LvAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Debug for LvAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LvAttr({})", self.as_str())
    }
}

impl<D: Clone + Eq + Hash + Ord + Debug> Assembly<D> {
    /// Every LV of every known VG, as `lvs` (or, with `all`, `lvs -a`)
    /// lists them: sorted by VG name, then LV name.
    pub fn lvs(&self, all: bool) -> Vec<LvReport<D>> {
        let mut vgs: Vec<&VgMeta> = self.vgs.values().map(|st| st.meta.as_ref()).collect();
        vgs.sort_by(|a, b| (&a.name, a.id).cmp(&(&b.name, b.id)));
        let mut out = Vec::new();
        for meta in vgs {
            let device = |uuid: &Uuid| self.pvs.get(uuid).and_then(|d| d.first()).cloned();
            let missing: HashMap<Uuid, bool> = meta
                .pvs
                .iter()
                .map(|p| {
                    let gone =
                        !self.pvs.contains_key(&p.id) || p.flags.iter().any(|f| f == "MISSING");
                    (p.id, gone)
                })
                .collect();
            let states = lv_states(meta, |u| missing.get(u).copied().unwrap_or(true));
            let start = out.len();
            for (lv, st) in meta.lvs.iter().zip(states) {
                if st.listed(all) {
                    out.push(report(meta, lv, st, &device));
                }
            }
            out[start..].sort_by(|a, b| a.name.cmp(&b.name));
        }
        out
    }
}

/// The report of one LV.
fn report<D>(
    meta: &VgMeta,
    lv: &LvMeta,
    st: LvState,
    device: &impl Fn(&Uuid) -> Option<D>,
) -> LvReport<D> {
    let extent = meta.extent_bytes();
    let segments = lv
        .segments
        .iter()
        .map(|seg| SegReport {
            seg_type: LvMeta::seg_type_name(seg).to_owned(),
            stripes: seg.areas.len() as u64,
            stripe_size: seg.stripe_size.saturating_mul(SECTOR),
            start_extent: seg.start_extent,
            extent_count: seg.extent_count,
            devices: seg
                .areas
                .iter()
                .map(|a| match &a.on {
                    AreaOn::Pv(uuid) => SegDevice {
                        on: DeviceOn::Pv {
                            uuid: *uuid,
                            device: device(uuid),
                        },
                        start: a.start,
                    },
                    AreaOn::Lv(name) => SegDevice {
                        on: DeviceOn::Lv(name.clone()),
                        start: 0,
                    },
                })
                .collect(),
        })
        .collect();
    LvReport {
        vg_name: meta.name.clone(),
        vg_uuid: meta.id,
        name: lv.name.clone(),
        uuid: lv.id,
        visible: st.visible,
        size_bytes: lv.extents.saturating_mul(extent),
        extent_size: extent,
        attr: st.attr,
        segments,
    }
}

/// What `lvs` makes of one LV.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LvState {
    attr: LvAttr,
    visible: bool,
    /// A snapshot's internal LV: never listed.
    snapshot: bool,
}

impl LvState {
    fn listed(&self, all: bool) -> bool {
        !self.snapshot && (all || self.visible)
    }
}

/// LVM's status bits for what an LV is, as its import sets them: from
/// the LV's own segments, and from what other LVs' segments name it as.
mod role {
    pub(super) const MIRROR: u64 = 1 << 0;
    pub(super) const RAID: u64 = 1 << 1;
    pub(super) const THIN: u64 = 1 << 2;
    pub(super) const THIN_POOL: u64 = 1 << 3;
    pub(super) const CACHE: u64 = 1 << 4;
    pub(super) const CACHE_POOL: u64 = 1 << 5;
    pub(super) const WRITECACHE: u64 = 1 << 6;
    pub(super) const INTEGRITY: u64 = 1 << 7;
    pub(super) const VDO_POOL: u64 = 1 << 8;
    pub(super) const VIRTUAL: u64 = 1 << 9;
    pub(super) const SNAPSHOT: u64 = 1 << 10;
    pub(super) const UNKNOWN: u64 = 1 << 11;
    pub(super) const CONVERTING: u64 = 1 << 12;
    pub(super) const MIRROR_IMAGE: u64 = 1 << 13;
    pub(super) const MIRROR_LOG: u64 = 1 << 14;
    pub(super) const RAID_IMAGE: u64 = 1 << 15;
    pub(super) const RAID_META: u64 = 1 << 16;
    pub(super) const POOL_METADATA: u64 = 1 << 17;
    pub(super) const THIN_POOL_DATA: u64 = 1 << 18;
    pub(super) const CACHE_POOL_DATA: u64 = 1 << 19;
    /// The origin under a cache or a writecache.
    pub(super) const CACHE_ORIGIN: u64 = 1 << 20;
    pub(super) const CACHE_VOL: u64 = 1 << 21;
    pub(super) const INTEGRITY_META: u64 = 1 << 22;
    pub(super) const VDO_POOL_DATA: u64 = 1 << 23;
    /// A (thick) snapshot's origin.
    pub(super) const ORIGIN: u64 = 1 << 24;
    pub(super) const EXTERNAL_ORIGIN: u64 = 1 << 25;
    /// A (thick) snapshot's COW LV.
    pub(super) const COW: u64 = 1 << 26;
    /// An origin a snapshot is being merged into.
    pub(super) const MERGING: u64 = 1 << 27;
    pub(super) const MERGING_COW: u64 = 1 << 28;
    pub(super) const MERGING_THIN_SNAPSHOT: u64 = 1 << 29;
    pub(super) const PMSPARE: u64 = 1 << 30;
    pub(super) const PARTIAL: u64 = 1 << 31;
    /// `status` PVMOVE.
    pub(super) const PVMOVE: u64 = 1 << 32;
}

/// The segment types LVM 2.03 knows as RAID (lib/metadata/segtype.h).
const RAID_TYPES: &[&str] = &[
    "raid0",
    "raid0_meta",
    "raid1",
    "raid10",
    "raid10_near",
    "raid4",
    "raid5",
    "raid5_n",
    "raid5_la",
    "raid5_ls",
    "raid5_ra",
    "raid5_rs",
    "raid6",
    "raid6_nc",
    "raid6_nr",
    "raid6_zr",
    "raid6_la_6",
    "raid6_ls_6",
    "raid6_ra_6",
    "raid6_rs_6",
    "raid6_n_6",
];

/// What a segment of this type makes its own LV.
fn own_roles(base: &str) -> u64 {
    use role::*;
    match base {
        "striped" => 0,
        "mirror" => MIRROR,
        "thin" => THIN | VIRTUAL,
        "thin-pool" => THIN_POOL,
        "cache" => CACHE,
        "cache-pool" => CACHE_POOL,
        "writecache" => WRITECACHE,
        "integrity" => INTEGRITY,
        "vdo" | "error" | "zero" | "free" => VIRTUAL,
        "vdo-pool" => VDO_POOL,
        "snapshot" => SNAPSHOT | VIRTUAL,
        t if RAID_TYPES.contains(&t) => RAID,
        // LVM keeps a type it does not know as "unknown", and virtual.
        _ => UNKNOWN | VIRTUAL,
    }
}

/// What an LV area of a segment of this type is to it.
fn area_role(base: &str) -> u64 {
    use role::*;
    match base {
        "mirror" => MIRROR_IMAGE,
        "thin-pool" => THIN_POOL_DATA,
        "cache-pool" => CACHE_POOL_DATA,
        "cache" | "writecache" => CACHE_ORIGIN,
        "vdo-pool" => VDO_POOL_DATA,
        t if RAID_TYPES.contains(&t) => RAID_IMAGE,
        _ => 0,
    }
}

/// `lv_attr` and visibility of each LV of `meta` (in its order), given
/// which PVs are missing.
fn lv_states(meta: &VgMeta, missing: impl Fn(&Uuid) -> bool) -> Vec<LvState> {
    use role::*;
    let n = meta.lvs.len();
    let index: HashMap<&str, usize> = meta
        .lvs
        .iter()
        .enumerate()
        .map(|(i, lv)| (lv.name.as_str(), i))
        .collect();
    let mut roles = vec![0u64; n];
    // What each LV depends on, for partial LVs (LVM's
    // _lv_each_dependency: LV areas and the LVs a segment names, but not a
    // RAID's metadata LVs or a thin snapshot's origin).
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); n];
    // (snapshot origin, COW, merging), from the snapshot segments.
    let mut snapshots = Vec::new();
    for (i, lv) in meta.lvs.iter().enumerate() {
        if has(&lv.status, "PVMOVE") {
            roles[i] |= PVMOVE;
        }
        if has(&lv.status, "CACHE_VOL") || has(&lv.flags, "CACHE_VOL") {
            roles[i] |= CACHE_VOL;
        }
        if !lv.visible && lv.name.contains("_pmspare") {
            roles[i] |= PMSPARE;
        }
        for seg in &lv.segments {
            let base = LvMeta::seg_type_base(seg);
            roles[i] |= own_roles(base);
            let mut seg_origin = None;
            let mut seg_cow = None;
            let mut merging = false;
            for area in &seg.areas {
                match &area.on {
                    AreaOn::Pv(uuid) => {
                        if missing(uuid) {
                            roles[i] |= PARTIAL;
                        }
                    }
                    AreaOn::Lv(name) => {
                        if let Some(&j) = index.get(name.as_str()) {
                            roles[j] |= area_role(base);
                            deps[i].push(j);
                        }
                    }
                }
            }
            for link in &seg.links {
                let Some(&j) = index.get(link.lv.as_str()) else {
                    continue;
                };
                match link.role {
                    LinkRole::PoolMetadata => {
                        roles[j] |= POOL_METADATA;
                        deps[i].push(j);
                    }
                    LinkRole::MirrorLog => {
                        roles[j] |= MIRROR_LOG;
                        deps[i].push(j);
                    }
                    LinkRole::RaidMetadata => roles[j] |= RAID_META,
                    LinkRole::SnapshotOrigin => seg_origin = Some(j),
                    LinkRole::SnapshotCow => seg_cow = Some(j),
                    LinkRole::MergingCow => {
                        seg_cow = Some(j);
                        merging = true;
                    }
                    LinkRole::ThinPool | LinkRole::CachePool | LinkRole::Writecache => {
                        deps[i].push(j)
                    }
                    LinkRole::ThinOrigin => {}
                    LinkRole::ThinMerge => {
                        roles[i] |= MERGING_THIN_SNAPSHOT;
                        roles[j] |= MERGING;
                    }
                    LinkRole::ExternalOrigin => {
                        roles[j] |= EXTERNAL_ORIGIN;
                        deps[i].push(j);
                    }
                    LinkRole::IntegrityMetadata => {
                        roles[j] |= INTEGRITY_META;
                        deps[i].push(j);
                    }
                }
            }
            if let (Some(o), Some(c)) = (seg_origin, seg_cow) {
                snapshots.push((o, c, merging));
            }
        }
        // LVM's _is_converting: a mirror whose first leg is a temporary
        // layer of a conversion.
        let first_leg = lv.segments.first().and_then(|s| s.areas.first());
        if roles[i] & MIRROR != 0
            && matches!(first_leg, Some(a) if matches!(&a.on, AreaOn::Lv(l) if l.contains("_mimagetmp")))
        {
            roles[i] |= CONVERTING;
        }
    }
    for &(o, c, merging) in &snapshots {
        roles[o] |= ORIGIN;
        // A COW depends on its origin and the origin on its COWs.
        deps[c].push(o);
        deps[o].push(c);
        if merging {
            roles[o] |= MERGING;
            roles[c] |= MERGING_COW;
        }
    }
    for &(_, c, _) in &snapshots {
        // LVM's lv_is_cow: not a thin volume, not itself an origin.
        if roles[c] & (THIN | ORIGIN) == 0 {
            roles[c] |= COW;
        }
    }
    mark_partial(&mut roles, &deps);

    let visible_of = |i: usize| meta.lvs[i].visible;
    let mut cow_origin = vec![None; n];
    for &(o, c, _) in &snapshots {
        cow_origin[c].get_or_insert(o);
    }
    (0..n)
        .map(|i| {
            let r = roles[i];
            let lv = &meta.lvs[i];
            // LVM's lv_is_visible: a COW shows with its origin (always when
            // the origin is hidden, a "virtual" origin), unless merging.
            let visible = if r & SNAPSHOT != 0 || r & MERGING_THIN_SNAPSHOT != 0 {
                false
            } else if r & COW != 0 {
                let origin_visible = cow_origin[i].is_some_and(visible_of);
                !origin_visible || r & MERGING_COW == 0
            } else {
                lv.visible
            };
            LvState {
                attr: attr(meta, lv, &roles, i, &index),
                visible,
                snapshot: r & SNAPSHOT != 0,
            }
        })
        .collect()
}

/// Marks every LV that depends, directly or through others, on a partial
/// one: a walk of the reversed dependencies from the LVs on a missing PV,
/// iterative, so a hostile chain or cycle of LVs costs O(LVs + links).
fn mark_partial(roles: &mut [u64], deps: &[Vec<usize>]) {
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); roles.len()];
    for (i, ds) in deps.iter().enumerate() {
        for &d in ds {
            users[d].push(i);
        }
    }
    let mut queue: VecDeque<usize> = (0..roles.len())
        .filter(|&i| roles[i] & role::PARTIAL != 0)
        .collect();
    while let Some(d) = queue.pop_front() {
        for &u in &users[d] {
            if roles[u] & role::PARTIAL == 0 {
                roles[u] |= role::PARTIAL;
                queue.push_back(u);
            }
        }
    }
}

fn has(list: &[String], flag: &str) -> bool {
    list.iter().any(|f| f == flag)
}

/// LVM's lv_attr_dup_with_info_and_seg_status, without device-mapper.
fn attr(
    meta: &VgMeta,
    lv: &LvMeta,
    roles: &[u64],
    i: usize,
    index: &HashMap<&str, usize>,
) -> LvAttr {
    use role::*;
    let r = roles[i];
    let is = |bits: u64| r & bits != 0;
    let not_synced = has(&lv.status, "NOTSYNCED");
    let kind = if is(PVMOVE) {
        b'p'
    } else if is(CONVERTING) {
        b'c'
    } else if is(ORIGIN | EXTERNAL_ORIGIN) {
        if is(MERGING) { b'O' } else { b'o' }
    } else if is(POOL_METADATA | PMSPARE | RAID_META | INTEGRITY_META) {
        b'e'
    } else if is(CACHE | CACHE_POOL | CACHE_VOL | CACHE_POOL_DATA | WRITECACHE) {
        b'C'
    } else if is(INTEGRITY) {
        b'g'
    } else if is(RAID) {
        if not_synced { b'R' } else { b'r' }
    } else if is(MIRROR) {
        if not_synced { b'M' } else { b'm' }
    } else if is(THIN) {
        if is(MERGING) {
            b'O'
        } else if is(MERGING_THIN_SNAPSHOT) {
            b'S'
        } else {
            b'V'
        }
    } else if is(VDO_POOL) {
        b'd'
    } else if is(VDO_POOL_DATA) {
        b'D'
    } else if is(VIRTUAL) {
        b'v'
    } else if is(THIN_POOL) {
        b't'
    } else if is(THIN_POOL_DATA) {
        b'T'
    } else if is(MIRROR_IMAGE | RAID_IMAGE) {
        // 'i' only when device-mapper says the image is in sync.
        b'I'
    } else if is(MIRROR_LOG) {
        b'l'
    } else if is(COW) {
        if is(MERGING_COW) { b'S' } else { b's' }
    } else if is(CACHE_ORIGIN) {
        b'o'
    } else {
        b'-'
    };
    let write = has(&lv.status, "WRITE") || has(&lv.flags, "WRITE_LOCKED");
    let perm = if is(PVMOVE) {
        b'-'
    } else if write {
        b'w'
    } else if has(&lv.status, "READ") {
        b'r'
    } else {
        b'-'
    };
    let mut alloc = match lv.allocation_policy.as_deref() {
        Some("contiguous") => b'c',
        Some("cling" | "cling_by_tags") => b'l',
        Some("normal" | "next free") => b'n',
        Some("anywhere") => b'a',
        // inherit, none, or one LVM does not know (it warns, and inherits).
        _ => b'i',
    };
    if has(&lv.status, "LOCKED") {
        alloc = alloc.to_ascii_uppercase();
    }
    let minor = if has(&lv.status, "FIXED_MINOR") {
        b'm'
    } else {
        b'-'
    };
    let target = if is(THIN_POOL | THIN) {
        b't'
    } else if is(CACHE_POOL | CACHE_VOL | CACHE | CACHE_ORIGIN | WRITECACHE) {
        b'C'
    } else if is(RAID | RAID_IMAGE | RAID_META) {
        b'r'
    } else if is(MIRROR | MIRROR_LOG | MIRROR_IMAGE | PVMOVE) {
        b'm'
    } else if is(COW | ORIGIN) {
        b's'
    } else if is(UNKNOWN) {
        b'u'
    } else if is(VIRTUAL) {
        b'v'
    } else {
        b'-'
    };
    // A thin pool's first segment says whether new blocks are zeroed; a
    // thin volume goes by its pool's.
    fn first(lv: &LvMeta) -> Option<&crate::model::LvSegment> {
        lv.segments.first()
    }
    let pool_of = |lv: &LvMeta| {
        first(lv)?
            .links
            .iter()
            .find(|l| l.role == LinkRole::ThinPool)
            .and_then(|l| index.get(l.lv.as_str()))
            .map(|&j| &meta.lvs[j])
    };
    let zeroing = if is(THIN_POOL) {
        first(lv).is_some_and(|s| s.zero_new_blocks)
    } else if is(THIN) {
        pool_of(lv)
            .and_then(first)
            .is_some_and(|s| s.zero_new_blocks)
    } else {
        false
    };
    let zero = if zeroing { b'z' } else { b'-' };
    let health = if is(PARTIAL) {
        b'p'
    } else if is(RAID | RAID_IMAGE | RAID_META) {
        // RAID health needs device-mapper.
        b'X'
    } else {
        b'-'
    };
    let skip = if has(&lv.flags, "ACTIVATION_SKIP") {
        b'k'
    } else {
        b'-'
    };
    // State and open need device-mapper: unknown, as LVM prints them
    // without it.
    LvAttr([
        kind, perm, alloc, minor, b'X', b'X', target, zero, health, skip,
    ])
}

#[cfg(test)]
mod tests;
