//! `BlockReader` on a real loop device (root and losetup needed): known
//! bytes written into the backing file at odd offsets are read back through
//! unaligned ranges with `O_DIRECT`, in 512-byte blocks, and the counter
//! stays within the probe budget of 8 KiB.

use std::io::ErrorKind;
use std::os::unix::fs::FileExt;

use weir_devices::BlockReader;
use weir_lvm::ReadAt;
use weir_lvmfleet::LoopDev;

const SIZE: usize = 1 << 20;

/// (offset, bytes) written into the image.
const MARKS: &[(u64, &[u8])] = &[
    (1, b"weir"),
    (511, b"|boundary|"),
    (4095, b"xy"),
    (100_001, b"odd offset"),
    (SIZE as u64 - 5, b"tail!"),
];

fn read(r: &BlockReader, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    r.read_exact_at(offset, &mut buf).map(|()| buf)
}

#[test]
fn unaligned_direct_reads_on_a_loop_device() {
    if let Some(why) = weir_lvmfleet::loop_unavailable() {
        eprintln!("skipping: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("disk.img");
    let file = std::fs::File::create(&image).unwrap();
    file.set_len(SIZE as u64).unwrap();
    for (off, bytes) in MARKS {
        file.write_all_at(bytes, *off).unwrap();
    }
    file.sync_all().unwrap();
    let dev = LoopDev::attach(&image).expect("attach a loop device");

    let r = BlockReader::open(dev.path()).unwrap();
    assert_eq!(r.size(), SIZE as u64);
    assert_eq!(r.block_size(), 512);
    assert!(r.is_direct(), "loop devices take O_DIRECT");

    let mut expected_count = 0;
    for (off, bytes) in MARKS {
        assert_eq!(read(&r, *off, bytes.len()).unwrap(), *bytes, "at {off}");
        let first = off / 512;
        let last = (off + bytes.len() as u64 - 1) / 512;
        expected_count += (last - first + 1) * 512;
        assert_eq!(
            r.bytes_read(),
            expected_count,
            "whole 512-byte blocks at {off}"
        );
    }
    // A wider range around a mark: zeros, then the mark.
    let got = read(&r, 99_990, 30).unwrap();
    assert_eq!(&got[..11], &[0; 11]);
    assert_eq!(&got[11..21], b"odd offset");

    let e = read(&r, SIZE as u64 - 2, 3).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnexpectedEof);

    // What an LVM probe reads: the label sectors and the first mda header.
    let before = r.bytes_read();
    read(&r, 0, 2048).unwrap();
    read(&r, 4096, 512).unwrap();
    assert!(r.bytes_read() - before <= 8192);

    // O_DIRECT bypasses the device's page cache: a change to the backing
    // file shows at once.
    file.write_all_at(b"WEIR", 1).unwrap();
    file.sync_all().unwrap();
    assert_eq!(read(&r, 1, 4).unwrap(), b"WEIR");
}
