//! Probing block devices for LVM: one device as a uevent asks, or every
//! device at once, in parallel, for a listing or a start.
//!
//! A device is read only when LVM itself would read it: it has a size, it
//! is not a disk with partitions (LVM's "partitioned" filter: the PVs are
//! on the partitions) and the [`Filter`] accepts it. The read is weir-lvm's
//! [`probe`](weir_lvm::probe::probe) over an `O_DIRECT` [`BlockReader`]: the
//! label and mda headers, and a metadata text only when the shared
//! [`TextCache`] has not seen it.
//!
//! The same probe identifies the filesystem ([`FsId`]): a PV is
//! `LVM2_member`; anything else gets [`fsid::probe`], one more read of the
//! device's first 8 KiB (the LVM probe's reads are not shared with it:
//! each of its tries must see the device as it is then).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use weir_lvm::assembly::PvSeen;
use weir_lvm::probe::{Pv, SETTLE_TRIES, TextCache, probe_settled};

use crate::Error;
use crate::devread::BlockReader;
use crate::filter::Filter;
use crate::fsid::{self, FsId};
use crate::sysfs::{BlockDevice, Kind};

/// The most threads a whole scan uses: the reads are small and the devices
/// independent, so a few threads hide the latency of each.
const MAX_THREADS: usize = 16;

/// Why a device was not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// Size 0: an unattached loop device, an empty drive.
    Empty,
    /// A disk with partitions: its PVs, if any, are on the partitions.
    Partitioned,
    /// The device filter rejects it.
    Filtered,
}

impl Skip {
    /// A word for listings.
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::Empty => "empty",
            Skip::Partitioned => "partitioned",
            Skip::Filtered => "filtered",
        }
    }
}

/// What probing a device found.
#[derive(Clone, Debug)]
pub enum Probe {
    /// Not read, and why.
    Skipped(Skip),
    /// Read: no LVM label.
    NotPv,
    /// Read: a PV.
    Pv(Arc<Pv>),
    /// It could not be opened or read, or its label is bad: listed with
    /// the reason, never fatal.
    Failed(Arc<Error>),
}

impl Probe {
    /// The PV, if it is one.
    pub fn pv(&self) -> Option<&Arc<Pv>> {
        match self {
            Probe::Pv(pv) => Some(pv),
            _ => None,
        }
    }
}

/// Why `dev` is not to be read, if it is not.
pub fn skip_reason(dev: &BlockDevice, filter: &Filter) -> Option<Skip> {
    if dev.size_bytes == 0 {
        return Some(Skip::Empty);
    }
    if matches!(&dev.kind, Kind::Disk { partitions } if !partitions.is_empty()) {
        return Some(Skip::Partitioned);
    }
    let path = dev.dev_path();
    let accepted = path.to_str().is_some_and(|p| filter.accepts(p));
    (!accepted).then_some(Skip::Filtered)
}

/// One device's probe and what it cost.
#[derive(Clone, Debug)]
pub struct Probed {
    /// What it found.
    pub probe: Probe,
    /// Bytes read from the device (texts the cache already held cost
    /// nothing).
    pub bytes: u64,
    /// Readings that found a text being written (read again, up to
    /// [`SETTLE_TRIES`] in all).
    pub torn: u32,
    /// The filesystem it holds, if it was read and holds a known one.
    pub fsid: Option<FsId>,
}

/// Probes one device, reading it again while LVM is seen writing it.
pub fn probe_device(dev: &BlockDevice, filter: &Filter, cache: &TextCache) -> Probed {
    let done = |probe| Probed {
        probe,
        bytes: 0,
        torn: 0,
        fsid: None,
    };
    if let Some(skip) = skip_reason(dev, filter) {
        return done(Probe::Skipped(skip));
    }
    let reader =
        match BlockReader::open_known(dev.dev_path(), dev.size_bytes, dev.logical_block_size) {
            Ok(r) => r,
            Err(e) => return done(Probe::Failed(Arc::new(e))),
        };
    // The LVM probe reads the device itself, never a copy: while LVM is
    // seen writing, each try must see the device anew (the mda header and
    // often the text are in the first 8 KiB), so its reads are not shared
    // with the filesystem probe's.
    let (found, torn) = probe_settled(&reader, cache, SETTLE_TRIES);
    let (probe, fsid) = match found {
        Ok(Some(pv)) => {
            let id = fsid::lvm_member(&pv.uuid());
            (Probe::Pv(Arc::new(pv)), Some(id))
        }
        Ok(None) => (Probe::NotPv, identify(&reader)),
        Err(e) => (Probe::Failed(Arc::new(Error::Lvm(e))), identify(&reader)),
    };
    Probed {
        probe,
        bytes: reader.bytes_read(),
        torn,
        fsid,
    }
}

/// The filesystem on a device that is no PV; a failed read leaves it
/// unknown (logged: the listing shows no type rather than failing).
fn identify(dev: &BlockReader) -> Option<FsId> {
    fsid::probe(dev).unwrap_or_else(|e| {
        tracing::debug!(path = %dev.path().display(), error = %e, "probing the filesystem");
        None
    })
}

/// A device's probe and the filesystem it holds.
pub type Found = (Probe, Option<FsId>);

/// Probes every device of `devs`, in parallel; the results (each with
/// its filesystem) are in the order of `devs`, with the total bytes read.
pub fn probe_all(devs: &[BlockDevice], filter: &Filter, cache: &TextCache) -> (Vec<Found>, u64) {
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get() * 4)
        .clamp(1, MAX_THREADS)
        .min(devs.len().max(1));
    let next = AtomicUsize::new(0);
    let mut parts: Vec<Vec<(usize, Found, u64)>> = Vec::new();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(dev) = devs.get(i) else { break };
                        let p = probe_device(dev, filter, cache);
                        out.push((i, (p.probe, p.fsid), p.bytes));
                    }
                    out
                })
            })
            .collect();
        parts = workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
    });
    let mut found: Vec<Option<Found>> = vec![None; devs.len()];
    let mut bytes = 0;
    for (i, p, n) in parts.into_iter().flatten() {
        found[i] = Some(p);
        bytes += n;
    }
    let probes = found
        .into_iter()
        // Every index below the length was taken by exactly one worker.
        .map(|p| p.expect("each device is probed once"))
        .collect();
    (probes, bytes)
}

/// What assembly needs of a probed PV.
pub fn seen(pv: &Pv) -> PvSeen {
    PvSeen {
        uuid: pv.uuid(),
        device_size: pv.header.device_size,
        pe_start: pv.header.pe_start().unwrap_or(0),
        mda_count: u32::try_from(pv.mda_count()).unwrap_or(u32::MAX),
        mda_in_use: u32::try_from(pv.mda_in_use()).unwrap_or(u32::MAX),
        vg: pv.vg.clone(),
    }
}
