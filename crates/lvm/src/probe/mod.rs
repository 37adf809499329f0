//! [`probe`]: everything one device says about LVM, for as little I/O as
//! possible.
//!
//! 1. One read of the first 4.5 KiB ([`HEAD_SIZE`]): the label in sectors
//!    0–3 and the pv_header, and the first mda_header where LVM puts it
//!    (at 4 KiB). No label: not a PV.
//! 2. One 512-byte read per other metadata area: its mda_header.
//! 3. For each area in use (not ignored) holding a committed text, the
//!    text's [`TextKey`] is looked up in the shared [`TextCache`]; only a
//!    miss reads the text and parses it. An ignored area is never read past
//!    its header: with a limited `vgmetadatacopies` it keeps a stale text
//!    that must not win.
//! 4. The copy with the highest seqno among those that parsed is the PV's
//!    view of its VG; copies that differ or fail are listed as
//!    [`Disagreement`]s, not errors.
//!
//! So a PV costs 4.5 KiB, plus 512 bytes for a second mda (LVM writes at
//! most two), and each distinct text is read once across all PVs. Only a bad label or
//! pv_header fails the probe; a bad mda is reported in its [`MdaInfo`].

mod cache;

pub use cache::{CacheStats, Parsed, TextCache, TextKey};

use std::sync::Arc;

use crate::disk_error::DiskError;
use crate::label::{self, LABEL_SCAN_SIZE, LABEL_SIZE};
use crate::mda::{self, MDA_HEADER_SIZE, MdaHeader};
use crate::pv_header::{self, DiskLocn, PvHeader};
use crate::{PvMeta, ReadAt, Uuid, VgMeta};

/// What a device holds: a PV's label, headers and its view of its VG.
#[derive(Clone, Debug)]
pub struct Pv {
    /// The sector the label is in.
    pub label_sector: u64,
    /// The pv_header.
    pub header: PvHeader,
    /// One entry per metadata area of the pv_header, in its order.
    pub mdas: Vec<MdaInfo>,
    /// The chosen copy of the VG metadata: `None` if no area in use holds a
    /// text that parsed (no mdas, all ignored, an orphan PV, or all bad;
    /// [`Pv::mda_in_use`] and the areas' problems tell these apart).
    pub vg: Option<Arc<VgMeta>>,
    /// The key of the chosen text.
    pub text_key: Option<TextKey>,
    /// Which of [`Pv::mdas`] the chosen text came from.
    pub chosen_mda: Option<usize>,
    /// The areas in use whose copy is not the chosen one.
    pub disagreements: Vec<Disagreement>,
    /// Bytes read for the label and mda headers (texts not included; the
    /// cache counts those).
    pub header_bytes_read: u64,
}

/// One metadata area as found.
#[derive(Clone, Debug)]
pub struct MdaInfo {
    /// Where the pv_header says it is.
    pub area: DiskLocn,
    /// Its header, if it was valid.
    pub header: Option<MdaHeader>,
    /// The key of its committed text, if it is in use and holds one.
    pub text_key: Option<TextKey>,
    /// That text's parse, if it was read or found in the cache.
    pub vg: Option<Arc<VgMeta>>,
    /// Why the header or the text could not be used.
    pub problem: Option<Arc<crate::Error>>,
}

impl MdaInfo {
    /// The header says the area is ignored.
    pub fn ignored(&self) -> bool {
        self.header.as_ref().is_some_and(|h| h.ignored)
    }

    /// The header is valid and not ignored (LVM's "used" mda, whether or
    /// not it holds a text yet).
    pub fn in_use(&self) -> bool {
        self.header.as_ref().is_some_and(|h| !h.ignored)
    }

    /// The seqno of its text, if that parsed.
    pub fn seqno(&self) -> Option<u64> {
        self.vg.as_ref().map(|vg| vg.seqno)
    }
}

/// An area in use whose copy of the metadata is not the chosen one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Disagreement {
    /// It holds another text (another key, or another seqno).
    Differs {
        /// The index in [`Pv::mdas`].
        mda: usize,
        /// Its text's key.
        key: TextKey,
        /// Its text's seqno.
        seqno: u64,
    },
    /// Its header or text could not be used (see its
    /// [`problem`](MdaInfo::problem)).
    Unusable {
        /// The index in [`Pv::mdas`].
        mda: usize,
    },
    /// It is in use but holds no text.
    Empty {
        /// The index in [`Pv::mdas`].
        mda: usize,
    },
}

impl Pv {
    /// The PV uuid.
    pub fn uuid(&self) -> Uuid {
        self.header.uuid
    }

    /// LVM's `pv_mda_count`: the metadata areas in the pv_header.
    pub fn mda_count(&self) -> usize {
        self.mdas.len()
    }

    /// LVM's `pv_mda_used_count`: the areas with a valid header that is not
    /// ignored.
    pub fn mda_in_use(&self) -> usize {
        self.mdas.iter().filter(|m| m.in_use()).count()
    }

    /// This PV as the chosen VG metadata lists it.
    pub fn pv_meta(&self) -> Option<&PvMeta> {
        self.vg.as_deref()?.pv(&self.header.uuid)
    }
}

/// The first read of a device: the label sectors and, where LVM puts the
/// first metadata area (at 4 KiB), its header, so that a PV costs one read
/// and one request to the device, not two.
pub const HEAD_SIZE: usize = 4096 + MDA_HEADER_SIZE;

/// Probes one device. `Ok(None)`: it has no LVM label. `Err`: its label or
/// pv_header is bad, or the first read failed.
pub fn probe<R: ReadAt + ?Sized>(dev: &R, cache: &TextCache) -> crate::Result<Option<Pv>> {
    let size = dev.size();
    let sector = LABEL_SIZE as u64;
    let head_len = size.min(HEAD_SIZE as u64) / sector * sector;
    // At most HEAD_SIZE, so the cast is lossless.
    let mut head_buf = [0u8; HEAD_SIZE];
    let head = &mut head_buf[..head_len as usize];
    if head.len() < LABEL_SIZE {
        return Ok(None);
    }
    dev.read_exact_at(0, head)
        .map_err(|source| crate::Error::Io {
            what: "label",
            offset: 0,
            source,
        })?;
    let head = &*head;
    let Some(found) = label::find(&head[..head.len().min(LABEL_SCAN_SIZE)])? else {
        return Ok(None);
    };
    let header = pv_header::parse(found.bytes, found.label.pv_header_offset)?;

    let mut header_bytes_read = head_len;
    let mut mdas = Vec::with_capacity(header.metadata_areas.len());
    for &area in &header.metadata_areas {
        let (info, read) = probe_mda(dev, head, area, cache);
        header_bytes_read += read;
        mdas.push(info);
    }
    let chosen = choose(&mdas);
    let disagreements = chosen.map_or_else(Vec::new, |c| disagreements(&mdas, c));
    Ok(Some(Pv {
        label_sector: found.label.sector,
        vg: chosen.and_then(|c| mdas[c].vg.clone()),
        text_key: chosen.and_then(|c| mdas[c].text_key),
        chosen_mda: chosen,
        header,
        mdas,
        disagreements,
        header_bytes_read,
    }))
}

/// How many times [`probe_settled`] reads a device whose text changed
/// under it before it gives the last reading.
pub const SETTLE_TRIES: u32 = 3;

/// [`probe`], read again while an area in use names a text that does not
/// match its checksum: LVM wrote that area between the header read and the
/// text read (a torn update). At most `tries` readings; the last is
/// returned, torn or not, with its areas' problems saying so. Returns the
/// reading and how many readings were torn.
pub fn probe_settled<R: ReadAt + ?Sized>(
    dev: &R,
    cache: &TextCache,
    tries: u32,
) -> (crate::Result<Option<Pv>>, u32) {
    let mut torn = 0;
    loop {
        let r = probe(dev, cache);
        let is_torn = matches!(&r, Ok(Some(pv)) if pv.torn());
        if !is_torn || torn + 1 >= tries.max(1) {
            return (r, torn + u32::from(is_torn));
        }
        torn += 1;
    }
}

impl Pv {
    /// An area in use names a text whose bytes do not match its checksum,
    /// or could not be read: the device was being written as it was read.
    pub fn torn(&self) -> bool {
        self.mdas.iter().any(|m| {
            m.in_use()
                && m.problem.as_deref().is_some_and(|e| {
                    matches!(
                        e,
                        crate::Error::Io { .. }
                            | crate::Error::Disk(DiskError::TextChecksum { .. })
                    )
                })
        })
    }
}

/// Reads one area's header and, if in use, its text through the cache.
/// Returns the bytes of header read.
fn probe_mda<R: ReadAt + ?Sized>(
    dev: &R,
    head: &[u8],
    area: DiskLocn,
    cache: &TextCache,
) -> (MdaInfo, u64) {
    let mut info = MdaInfo {
        area,
        header: None,
        text_key: None,
        vg: None,
        problem: None,
    };
    let size = dev.size();
    let fits = area.size >= MDA_HEADER_SIZE as u64
        && area
            .offset
            .checked_add(area.size)
            .is_some_and(|end| end <= size);
    if !fits {
        info.problem = Some(Arc::new(
            DiskError::MdaOutsideDevice {
                offset: area.offset,
                size: area.size,
                device_size: size,
            }
            .into(),
        ));
        return (info, 0);
    }
    let mut bytes = [0u8; MDA_HEADER_SIZE];
    let in_head = usize::try_from(area.offset)
        .ok()
        .and_then(|start| head.get(start..start.checked_add(MDA_HEADER_SIZE)?));
    let read = match in_head {
        Some(b) => {
            bytes.copy_from_slice(b);
            0
        }
        None => {
            if let Err(source) = dev.read_exact_at(area.offset, &mut bytes) {
                info.problem = Some(Arc::new(crate::Error::Io {
                    what: "mda_header",
                    offset: area.offset,
                    source,
                }));
                return (info, 0);
            }
            MDA_HEADER_SIZE as u64
        }
    };
    let header = match mda::parse_header(&bytes, area.offset) {
        Ok(h) => h,
        Err(e) => {
            info.problem = Some(Arc::new(e.into()));
            return (info, read);
        }
    };
    let locn = header.committed().copied();
    info.header = Some(header);
    let (Some(header), Some(locn)) = (&info.header, locn) else {
        return (info, read);
    };
    if header.ignored || locn.size == 0 {
        return (info, read);
    }
    // Check the location before the cache: a known key must not vouch for
    // a header that points outside its area or device.
    if let Err(e) = mda::text_location(header, &locn, size) {
        info.problem = Some(Arc::new(e.into()));
        return (info, read);
    }
    let key = TextKey {
        checksum: locn.checksum,
        size: locn.size,
    };
    info.text_key = Some(key);
    match cache.get_or_read(key, || mda::read_text(dev, header, &locn)) {
        Ok(vg) => info.vg = Some(vg),
        Err(e) => info.problem = Some(e),
    }
    (info, read)
}

/// The area whose text parsed with the highest seqno; the first on a tie.
fn choose(mdas: &[MdaInfo]) -> Option<usize> {
    let mut best: Option<(usize, u64)> = None;
    for (i, seqno) in mdas
        .iter()
        .enumerate()
        .filter_map(|(i, m)| Some((i, m.seqno()?)))
    {
        if best.is_none_or(|(_, s)| seqno > s) {
            best = Some((i, seqno));
        }
    }
    best.map(|(i, _)| i)
}

/// How the areas other than `chosen` fall short of it.
fn disagreements(mdas: &[MdaInfo], chosen: usize) -> Vec<Disagreement> {
    let c = &mdas[chosen];
    let mut out = Vec::new();
    for (mda, m) in mdas.iter().enumerate() {
        if mda == chosen || m.ignored() {
            continue;
        }
        let d = match (m.text_key, m.seqno()) {
            (Some(key), Some(seqno)) if Some(key) != c.text_key || Some(seqno) != c.seqno() => {
                Disagreement::Differs { mda, key, seqno }
            }
            (Some(_), Some(_)) => continue,
            _ if m.problem.is_some() => Disagreement::Unusable { mda },
            _ => Disagreement::Empty { mda },
        };
        out.push(d);
    }
    out
}
