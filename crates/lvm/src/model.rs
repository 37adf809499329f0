//! What weir knows about a VG from its metadata: [`VgMeta`], its PVs
//! ([`PvMeta`]) and LVs ([`LvMeta`], with their [`LvSegment`]s), and LVM's
//! 32-character [`Uuid`].
//!
//! Sizes are kept in the units the metadata uses (512-byte sectors, and
//! extents); the `*_bytes` helpers convert, saturating, since a hostile text
//! may hold any number.

use std::fmt;

/// Bytes per sector in LVM metadata.
pub const SECTOR: u64 = 512;

/// An LVM uuid: 32 characters from `[0-9A-Za-z]`, shown in LVM's dashed
/// 6-4-4-4-4-4-6 form.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uuid(pub [u8; 32]);

impl Uuid {
    /// Parses the undashed form (as in the pv_header) or the dashed form
    /// (as in metadata text). `None` unless it is exactly 32 characters of
    /// `[0-9A-Za-z]` once dashes are removed.
    pub fn parse(s: &[u8]) -> Option<Uuid> {
        let mut out = [0u8; 32];
        let mut n = 0;
        for &b in s {
            if b == b'-' {
                continue;
            }
            if !b.is_ascii_alphanumeric() || n == 32 {
                return None;
            }
            out[n] = b;
            n += 1;
        }
        (n == 32).then_some(Uuid(out))
    }

    /// The 32 characters without dashes.
    pub fn as_str(&self) -> &str {
        // Constructed only from ASCII alphanumerics.
        std::str::from_utf8(&self.0).unwrap_or("")
    }
}

impl fmt::Display for Uuid {
    /// LVM's dashed form, e.g. `HVjR5j-d0tK-j9jq-2vIT-B3XQ-WGSd-VQqFEU`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.as_str();
        let cuts = [0, 6, 10, 14, 18, 22, 26, 32];
        for w in cuts.windows(2) {
            if w[0] > 0 {
                f.write_str("-")?;
            }
            f.write_str(&s[w[0]..w[1]])?;
        }
        Ok(())
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({self})")
    }
}

/// One VG's metadata, as its authoritative text states it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VgMeta {
    /// The VG name (the text's top-level section name).
    pub name: String,
    /// `id`.
    pub id: Uuid,
    /// `seqno`: bumped by every metadata write; the highest wins.
    pub seqno: u64,
    /// `status`, e.g. `["RESIZEABLE", "READ", "WRITE"]`.
    pub status: Vec<String>,
    /// `extent_size`, in sectors.
    pub extent_size: u64,
    /// `metadata_copies` (0: unmanaged, every mda in use).
    pub metadata_copies: u64,
    /// `physical_volumes`, in text order.
    pub pvs: Vec<PvMeta>,
    /// `logical_volumes`, in text order.
    pub lvs: Vec<LvMeta>,
}

/// One PV as its VG's metadata lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PvMeta {
    /// The section name the LVs' segments refer to (`pv0`, `pv1`, ...).
    pub key: String,
    /// `id`.
    pub id: Uuid,
    /// `device`: where the PV was last seen; a hint, often stale.
    pub device_hint: String,
    /// `status`, e.g. `["ALLOCATABLE"]`.
    pub status: Vec<String>,
    /// `flags`, e.g. `["MISSING"]` once LVM has marked it missing.
    pub flags: Vec<String>,
    /// `dev_size`, in sectors.
    pub dev_size: u64,
    /// `pe_start`, in sectors.
    pub pe_start: u64,
    /// `pe_count`, in extents.
    pub pe_count: u64,
    /// Extents allocated to LVs on this PV, from the segments' `stripes`.
    pub pe_alloc: u64,
}

/// One LV as its VG's metadata lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LvMeta {
    /// The section name.
    pub name: String,
    /// `id`.
    pub id: Uuid,
    /// `status`.
    pub status: Vec<String>,
    /// `flags`: LVM's compatible flags (`ACTIVATION_SKIP`,
    /// `WRITE_LOCKED`, `CACHE_VOL`, ...), empty when the text has none.
    pub flags: Vec<String>,
    /// `VISIBLE` is in `status`: LVM's `lv_count` counts only these.
    pub visible: bool,
    /// The sum of its segments' `extent_count`.
    pub extents: u64,
    /// `allocation_policy`, when the text states one (LVM's default is
    /// `inherit`).
    pub allocation_policy: Option<String>,
    /// Its segments, in text order.
    pub segments: Vec<LvSegment>,
}

/// One segment of an LV: a run of its logical extents and where they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LvSegment {
    /// `start_extent`: the LV's first extent this segment maps.
    pub start_extent: u64,
    /// `extent_count`.
    pub extent_count: u64,
    /// `type`, as the text writes it: `striped` (linear when it has one
    /// stripe), `mirror`, `raid1`, `thin`, `thin-pool`, `snapshot`, ...
    pub seg_type: String,
    /// `stripe_count` of a striped segment; 0 for other types.
    pub stripe_count: u64,
    /// `stripe_size`, in sectors; 0 when the text has none (linear).
    pub stripe_size: u64,
    /// The areas it maps onto, in text order: `stripes` or `mirrors` as
    /// (volume, first extent) pairs; the image LVs of `raids` (or
    /// `raid0_lvs`); the one LV a pool, cache, writecache, integrity or VDO
    /// segment maps onto (a pool's data LV, a cache's origin). LV areas
    /// other than `stripes` and `mirrors` start at extent 0.
    pub areas: Vec<SegArea>,
    /// The other LVs it names, and as what: a pool's metadata, a mirror's
    /// log, a RAID's metadata LVs, a snapshot's origin and COW, a thin
    /// volume's pool, ...
    pub links: Vec<SegLink>,
    /// A thin pool's `zero_new_blocks` is set.
    pub zero_new_blocks: bool,
}

/// An LV a segment names other than as an area.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegLink {
    /// What the LV is to the segment.
    pub role: LinkRole,
    /// The LV's name.
    pub lv: String,
}

/// What a [`SegLink`]'s LV is to its segment, by the text's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LinkRole {
    /// A thin or cache pool's `metadata`.
    PoolMetadata,
    /// A mirror's `mirror_log`.
    MirrorLog,
    /// A RAID's metadata LV (the `_rmeta_` names of `raids`).
    RaidMetadata,
    /// A snapshot's `origin`.
    SnapshotOrigin,
    /// A snapshot's `cow_store`.
    SnapshotCow,
    /// A merging snapshot's `merging_store`.
    MergingCow,
    /// A thin volume's `thin_pool`.
    ThinPool,
    /// A thin snapshot's `origin`.
    ThinOrigin,
    /// A thin snapshot's `merge`: the origin it is being merged into.
    ThinMerge,
    /// A thin volume's `external_origin`.
    ExternalOrigin,
    /// A cache's `cache_pool`.
    CachePool,
    /// A writecache's `writecache` (its fast LV).
    Writecache,
    /// An integrity segment's `meta_dev`.
    IntegrityMetadata,
}

/// One area of a segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegArea {
    /// The volume it is on.
    pub on: AreaOn,
    /// Its first extent on that volume.
    pub start: u64,
}

/// What a segment area is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AreaOn {
    /// A PV of the VG, by uuid.
    Pv(Uuid),
    /// Another LV of the VG, by name (a mirror or RAID image, a pool).
    Lv(String),
}

impl LvMeta {
    /// LVM's `segtype` of a segment: `linear` for a striped segment with
    /// one stripe, else the text's type without the status flags LVM may
    /// append to it (`raid5+RESHAPE`: `raid5`).
    pub fn seg_type_name(seg: &LvSegment) -> &str {
        let base = LvMeta::seg_type_base(seg);
        if base == "striped" && seg.stripe_count == 1 {
            "linear"
        } else {
            base
        }
    }

    /// A segment's type as written, without its `+FLAG` suffixes.
    pub fn seg_type_base(seg: &LvSegment) -> &str {
        seg.seg_type.split('+').next().unwrap_or("")
    }
}

impl VgMeta {
    /// The extent size in bytes.
    pub fn extent_bytes(&self) -> u64 {
        self.extent_size.saturating_mul(SECTOR)
    }

    /// Every PV's extents.
    pub fn extent_count(&self) -> u64 {
        self.pvs.iter().fold(0, |a, p| a.saturating_add(p.pe_count))
    }

    /// The extents not allocated to any LV.
    pub fn free_count(&self) -> u64 {
        self.pvs.iter().fold(0, |a, p| {
            a.saturating_add(p.pe_count.saturating_sub(p.pe_alloc))
        })
    }

    /// The VG size in bytes: every PV's extents.
    pub fn size_bytes(&self) -> u64 {
        self.extent_count().saturating_mul(self.extent_bytes())
    }

    /// The free space in bytes: extents not allocated to any LV.
    pub fn free_bytes(&self) -> u64 {
        self.free_count().saturating_mul(self.extent_bytes())
    }

    /// LVM's `lv_count`: the visible LVs.
    pub fn lv_count(&self) -> usize {
        self.lvs.iter().filter(|l| l.visible).count()
    }

    /// The PV with this uuid.
    pub fn pv(&self, id: &Uuid) -> Option<&PvMeta> {
        self.pvs.iter().find(|p| &p.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_round_trips_dashed_and_plain() {
        let plain = b"HVjR5jd0tKj9jq2vITB3XQWGSdVQqFEU";
        let u = Uuid::parse(plain).unwrap();
        assert_eq!(u.to_string(), "HVjR5j-d0tK-j9jq-2vIT-B3XQ-WGSd-VQqFEU");
        assert_eq!(Uuid::parse(u.to_string().as_bytes()), Some(u));
    }

    #[test]
    fn uuid_rejects_bad_length_and_bytes() {
        assert_eq!(Uuid::parse(b"short"), None);
        assert_eq!(Uuid::parse(&[b'a'; 33]), None);
        let mut bad = *b"HVjR5jd0tKj9jq2vITB3XQWGSdVQqFEU";
        bad[3] = b'\xff';
        assert_eq!(Uuid::parse(&bad), None);
    }
}
