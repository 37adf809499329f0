//! Real PV images damaged on purpose, one field at a time: each damage is a
//! specific typed error (of the probe, or of the one mda it hits), never a
//! panic and never a large allocation.

mod support;

use std::cell::Cell;
use std::io;

use support::fixture;
use support::patch::{
    LABEL_AT, MDA1_AT, PV_HEADER_AT, fix_label_crc, fix_mda_crc, get_u32, get_u64, put_u32,
    put_u64, raw_locn,
};
use weir_lvm::disk_error::{DiskError, LocnList};
use weir_lvm::mda::{self, MDA_HEADER_SIZE, TEXT_SIZE_MAX};
use weir_lvm::probe::{Pv, TextCache, probe};
use weir_lvm::{Error, ReadAt, crc};

/// The first metadata area's disk_locn in the pv_header (one data area
/// and its terminator come first).
const MDA1_LOCN: usize = PV_HEADER_AT + 40 + 32;

fn pv1() -> Vec<u8> {
    fixture::image("many", "pv1")
}

fn probe_ok(img: &[u8]) -> Pv {
    probe(img, &TextCache::new()).unwrap().unwrap()
}

/// The first mda's problem, as a DiskError.
fn mda1_problem(img: &[u8]) -> DiskError {
    let pv = probe_ok(img);
    assert!(pv.vg.is_none());
    match pv.mdas[0].problem.as_deref() {
        Some(Error::Disk(e)) => e.clone(),
        other => panic!("expected a disk error, got {other:?}"),
    }
}

/// Counts the bytes asked of a device and the largest single read.
struct Counting<'a> {
    dev: &'a [u8],
    size: u64,
    total: Cell<u64>,
    largest: Cell<u64>,
}

impl ReadAt for Counting<'_> {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.total.set(self.total.get() + buf.len() as u64);
        self.largest.set(self.largest.get().max(buf.len() as u64));
        if offset.saturating_add(buf.len() as u64) > self.dev.len() as u64 {
            // Beyond the real bytes of a device claiming to be larger.
            buf.fill(0);
            return Ok(());
        }
        self.dev.read_exact_at(offset, buf)
    }

    fn size(&self) -> u64 {
        self.size
    }
}

#[test]
fn a_bad_label_crc_fails_the_probe_with_both_values() {
    let mut img = pv1();
    img[PV_HEADER_AT + 5] ^= 0x01;
    let computed = crc::calc(&img[LABEL_AT + 20..LABEL_AT + 512]);
    let stored = get_u32(&img, LABEL_AT + 16);
    match probe(&img, &TextCache::new()) {
        Err(Error::Disk(e)) => assert_eq!(
            e,
            DiskError::LabelCrc {
                sector: 1,
                stored,
                computed
            }
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_label_claiming_another_sector_fails_the_probe() {
    let mut img = pv1();
    put_u64(&mut img, LABEL_AT + 8, 3);
    fix_label_crc(&mut img, LABEL_AT);
    assert!(matches!(
        probe(&img, &TextCache::new()),
        Err(Error::Disk(DiskError::LabelSector {
            sector: 1,
            claimed: 3
        }))
    ));
}

#[test]
fn an_unterminated_area_list_fails_the_probe() {
    let mut img = pv1();
    for at in (MDA1_LOCN..LABEL_AT + 512 - 15).step_by(16) {
        img[at] |= 1;
    }
    fix_label_crc(&mut img, LABEL_AT);
    assert!(matches!(
        probe(&img, &TextCache::new()),
        Err(Error::Disk(DiskError::LocnOverflow {
            list: LocnList::Metadata
        }))
    ));
}

#[test]
fn a_non_lvm_device_is_none_and_a_tiny_one_too() {
    let cache = TextCache::new();
    assert!(probe(&vec![0u8; 1 << 20], &cache).unwrap().is_none());
    assert!(probe(&[0u8; 100][..], &cache).unwrap().is_none());
    assert!(probe(&[][..], &cache).unwrap().is_none());
    // A PV cut right after its label: a label, but every mda is outside.
    let img = pv1();
    let pv = probe(&img[..1024], &cache).unwrap().unwrap();
    assert!(matches!(
        pv.mdas[0].problem.as_deref(),
        Some(Error::Disk(DiskError::MdaOutsideDevice {
            device_size: 1024,
            ..
        }))
    ));
}

#[test]
fn an_mda_area_outside_the_device_is_that_mdas_problem() {
    for offset in [(8 << 20) - 100, u64::MAX - 10] {
        let mut img = pv1();
        put_u64(&mut img, MDA1_LOCN, offset);
        fix_label_crc(&mut img, LABEL_AT);
        let e = mda1_problem(&img);
        assert!(
            matches!(e, DiskError::MdaOutsideDevice { offset: o, .. } if o == offset),
            "{e:?}"
        );
    }
}

#[test]
fn each_bad_mda_header_field_has_its_error() {
    let mut img = pv1();
    img[MDA1_AT + 100] ^= 0xff;
    assert!(matches!(
        mda1_problem(&img),
        DiskError::MdaCrc { offset: 4096, .. }
    ));

    let mut img = pv1();
    img[MDA1_AT + 5] = b'X';
    fix_mda_crc(&mut img, MDA1_AT);
    assert!(matches!(
        mda1_problem(&img),
        DiskError::MdaMagic { offset: 4096, .. }
    ));

    let mut img = pv1();
    put_u32(&mut img, MDA1_AT + 20, 2);
    fix_mda_crc(&mut img, MDA1_AT);
    assert_eq!(
        mda1_problem(&img),
        DiskError::MdaVersion {
            offset: 4096,
            version: 2
        }
    );

    let mut img = pv1();
    put_u64(&mut img, MDA1_AT + 24, 8192);
    fix_mda_crc(&mut img, MDA1_AT);
    assert_eq!(
        mda1_problem(&img),
        DiskError::MdaStart {
            offset: 4096,
            start: 8192
        }
    );

    let mut img = pv1();
    put_u64(&mut img, MDA1_AT + 32, 511);
    fix_mda_crc(&mut img, MDA1_AT);
    assert_eq!(
        mda1_problem(&img),
        DiskError::MdaSize {
            offset: 4096,
            size: 511
        }
    );

    let mut img = pv1();
    for slot in 0..19 {
        img[raw_locn(MDA1_AT, slot, 0)] |= 1;
    }
    fix_mda_crc(&mut img, MDA1_AT);
    assert_eq!(
        mda1_problem(&img),
        DiskError::RawLocnOverflow { offset: 4096 }
    );
}

#[test]
fn a_text_placed_outside_its_area_is_refused_before_reading() {
    let area = get_u64(&pv1(), MDA1_AT + 32);
    for (offset, size) in [(100, 1000), (area, 10), (area + 1, 10), (512, area)] {
        let mut img = pv1();
        put_u64(&mut img, raw_locn(MDA1_AT, 0, 0), offset);
        put_u64(&mut img, raw_locn(MDA1_AT, 0, 8), size);
        fix_mda_crc(&mut img, MDA1_AT);
        assert_eq!(
            mda1_problem(&img),
            DiskError::TextOutOfArea {
                mda_offset: 4096,
                text_offset: offset,
                text_size: size,
                area_size: area
            }
        );
    }
}

#[test]
fn a_raw_locn_claiming_1_gib_is_a_clean_error_without_reading_it() {
    // In the real 1 MiB area: outside the area.
    let mut img = pv1();
    put_u64(&mut img, raw_locn(MDA1_AT, 0, 8), 1 << 30);
    fix_mda_crc(&mut img, MDA1_AT);
    assert!(matches!(
        mda1_problem(&img),
        DiskError::TextOutOfArea {
            text_size: 0x4000_0000,
            ..
        }
    ));

    // In an area (and a device) large enough for it: too large.
    let mut img = pv1();
    let area = 4u64 << 30;
    put_u64(&mut img, MDA1_LOCN + 8, area);
    fix_label_crc(&mut img, LABEL_AT);
    put_u64(&mut img, MDA1_AT + 32, area);
    put_u64(&mut img, raw_locn(MDA1_AT, 0, 8), 1 << 30);
    fix_mda_crc(&mut img, MDA1_AT);
    let dev = Counting {
        dev: &img,
        size: 8 << 30,
        total: Cell::new(0),
        largest: Cell::new(0),
    };
    let pv = probe(&dev, &TextCache::new()).unwrap().unwrap();
    match pv.mdas[0].problem.as_deref() {
        Some(Error::Disk(DiskError::TextTooLarge { size, limit })) => {
            assert_eq!((*size, *limit), (1 << 30, TEXT_SIZE_MAX));
        }
        other => panic!("{other:?}"),
    }
    // Only the head was read: the label and, at 4 KiB, the mda_header.
    assert_eq!(dev.total.get(), weir_lvm::probe::HEAD_SIZE as u64);
    assert_eq!(dev.largest.get(), weir_lvm::probe::HEAD_SIZE as u64);
}

#[test]
fn a_text_past_the_end_of_the_device_is_a_clean_error() {
    let img = fixture::image("mdacopies", "pv2");
    // The second mda is at the end of the device; cut the device inside its
    // text and read that text directly.
    let mda2 = get_u64(&img, MDA1_LOCN + 16);
    let mut bytes = [0u8; MDA_HEADER_SIZE];
    img.read_exact_at(mda2, &mut bytes).unwrap();
    let header = mda::parse_header(&bytes, mda2).unwrap();
    let locn = *header.committed().unwrap();
    let cut = (mda2 + locn.offset + 10) as usize;
    match mda::read_text(&img[..cut], &header, &locn) {
        Err(Error::Disk(DiskError::TextOutsideDevice {
            offset,
            size,
            device_size,
        })) => assert_eq!(
            (offset, size, device_size),
            (mda2 + locn.offset, locn.size, cut as u64)
        ),
        other => panic!("{other:?}"),
    }
    // Through probe, the cut area itself is the problem.
    let pv = probe(&img[..cut], &TextCache::new()).unwrap().unwrap();
    assert!(pv.vg.is_some(), "the first mda is intact");
    assert!(matches!(
        pv.mdas[1].problem.as_deref(),
        Some(Error::Disk(DiskError::MdaOutsideDevice { .. }))
    ));
}

#[test]
fn a_text_that_fails_its_checksum_names_both_values() {
    let mut img = pv1();
    let offset = get_u64(&img, raw_locn(MDA1_AT, 0, 0));
    let size = get_u64(&img, raw_locn(MDA1_AT, 0, 8)) as usize;
    let stored = get_u32(&img, raw_locn(MDA1_AT, 0, 16));
    let at = MDA1_AT + offset as usize;
    img[at + size / 2] ^= 0x04;
    let computed = crc::calc(&img[at..at + size]);
    assert_eq!(
        mda1_problem(&img),
        DiskError::TextChecksum {
            offset: 4096 + offset,
            stored,
            computed
        }
    );
}
