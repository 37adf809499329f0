//! `BlockReader` over a regular file (no privilege needed): unaligned reads
//! return exactly the file's bytes, the counter counts whole aligned
//! blocks, and reads past the end are `UnexpectedEof`.

use std::io::ErrorKind;

use proptest::prelude::*;
use weir_devices::{BlockReader, Error};
use weir_lvm::ReadAt;

/// Bytes that differ at every offset, so a misplaced copy shows.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// A temp file holding `pattern(len)`.
fn image(len: usize) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("img");
    let data = pattern(len);
    std::fs::write(&path, &data).unwrap();
    (dir, path, data)
}

fn read(r: &BlockReader, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    r.read_exact_at(offset, &mut buf).map(|()| buf)
}

#[test]
fn unaligned_reads_and_the_counter() {
    // Not a multiple of the block: the last block is short.
    let (_d, path, data) = image(3 * 4096 + 1000);
    let r = BlockReader::open(&path).unwrap();
    assert_eq!(r.size(), data.len() as u64);
    assert_eq!(r.block_size(), 4096);
    assert_eq!(r.path(), path);
    assert_eq!(r.bytes_read(), 0);

    assert_eq!(read(&r, 1, 10).unwrap(), data[1..11]);
    assert_eq!(r.bytes_read(), 4096, "one block for 10 bytes");
    // Across a block boundary: two blocks.
    assert_eq!(read(&r, 4090, 12).unwrap(), data[4090..4102]);
    assert_eq!(r.bytes_read(), 3 * 4096);
    // The short tail, to the last byte.
    let end = data.len() as u64;
    assert_eq!(read(&r, end - 3, 3).unwrap(), data[data.len() - 3..]);
    assert_eq!(r.bytes_read(), 3 * 4096 + 1000);
    // Everything at once.
    assert_eq!(read(&r, 0, data.len()).unwrap(), data);
    // Empty reads, even at the end, read nothing.
    let before = r.bytes_read();
    assert_eq!(read(&r, end, 0).unwrap(), b"");
    assert_eq!(r.bytes_read(), before);
    assert!(r.reads() > 0);
}

#[test]
fn past_the_end_is_unexpected_eof() {
    let (_d, path, data) = image(8192);
    let r = BlockReader::open(&path).unwrap();
    let end = data.len() as u64;
    for (offset, len) in [
        (end, 1),
        (end - 1, 2),
        (end + 4096, 1),
        (u64::MAX, 1),
        (u64::MAX - 1, 4),
    ] {
        let e = read(&r, offset, len).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnexpectedEof, "{offset}+{len}");
    }
    assert_eq!(
        r.bytes_read(),
        0,
        "nothing is read for a range past the end"
    );
}

#[test]
fn a_file_that_shrinks_gives_unexpected_eof() {
    let (_d, path, _) = image(8192);
    let r = BlockReader::open(&path).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(100)
        .unwrap();
    let e = read(&r, 4096, 10).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnexpectedEof);
}

#[test]
fn missing_node_is_an_open_error() {
    let e = BlockReader::open("/nonexistent/weir-devread").unwrap_err();
    assert!(
        matches!(&e, Error::Open { path, source } if path.ends_with("weir-devread") && source.kind() == ErrorKind::NotFound),
        "{e:?}"
    );
}

proptest! {
    #[test]
    fn any_range_reads_the_right_bytes(offset in 0u64..20_000, len in 0usize..9000) {
        let (_d, path, data) = image(12_345);
        let r = BlockReader::open(&path).unwrap();
        let got = read(&r, offset, len);
        let end = offset as usize + len;
        if end <= data.len() {
            prop_assert_eq!(got.unwrap(), &data[offset as usize..end]);
            let aligned = |x: u64| x / 4096 * 4096;
            let span = (end as u64).div_ceil(4096) * 4096 - aligned(offset);
            prop_assert!(r.bytes_read() <= span);
            prop_assert!(r.bytes_read() >= len as u64);
        } else {
            prop_assert_eq!(got.unwrap_err().kind(), ErrorKind::UnexpectedEof);
        }
    }
}
