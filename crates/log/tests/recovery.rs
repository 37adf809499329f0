//! Recovery of a tail segment that holds no valid record: its name is the
//! only record of the next index once retention has removed the older
//! segments, so it is reset in place, never removed; and a tail whose
//! header does not decode is reset only when that cannot destroy records.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use support::observed::{NameOp, Observed, Observer};
use support::{Payload, segment_files};
use weir_log::fs::StdFs;
use weir_log::segment::{FORMAT_VERSION, SegmentHeader, segment_path};
use weir_log::{Error, Log, Options, Reader, TypeMask};

const SEG: u64 = 64 * 1024;

fn opts() -> Options {
    Options::default().segment_size(SEG)
}

fn append_durable(log: &Log, salt: u64, from: u64, n: u64) {
    for k in from..from + n {
        let d = Payload::new(salt, k)
            .with(|r| log.append_durable(r))
            .unwrap();
        assert_eq!(d.index(), k);
    }
}

/// The header block of a segment whose first index is `base`.
fn header_block(base: u64) -> Vec<u8> {
    let mut b = SegmentHeader {
        version: FORMAT_VERSION,
        base_index: base,
        capacity: SEG,
        created_ns: 1,
    }
    .encode();
    b.resize(4096, 0);
    b
}

/// A segment file as a crash leaves it: `head` (a header block, or not),
/// then `first` where the first record goes, then zeros to `SEG`.
fn crashed_segment(dir: &Path, base: u64, head: &[u8], first: &[u8]) {
    let mut b = head.to_vec();
    b.resize(4096, 0);
    b.extend_from_slice(first);
    b.resize(SEG as usize, 0);
    std::fs::write(segment_path(dir, base), b).unwrap();
}

/// Records 1-5 in a closed (sealed) segment, then a header-only segment
/// `tail` as a crash at its creation leaves it.
fn sealed_records_then_empty_tail(dir: &Path, salt: u64, tail: u64) {
    let log = Log::open(dir, opts()).unwrap();
    append_durable(&log, salt, 1, 5);
    log.close().unwrap();
    crashed_segment(dir, tail, &header_block(tail), &[]);
}

/// Records 1-10 durable and cleared by consumer `c`, the log closed (so
/// its one segment is sealed); then `crash` leaves segment 11 as a crash
/// at its creation would. The next open must resume at 11, and so must
/// every open after it, once retention has removed segment 1.
fn next_index_survives(crash: impl Fn(&Path), what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), opts()).unwrap();
    log.register("c", TypeMask::all()).unwrap();
    append_durable(&log, 1, 1, 10);
    log.clear("c", 10).unwrap();
    log.close().unwrap();
    crash(dir.path());

    let log = Log::open(dir.path(), opts()).unwrap();
    assert_eq!(log.recovery().next_index, 11, "{what}");
    log.close().unwrap();
    // Retention has removed the cleared segment 1 by now.
    let files = segment_files(dir.path());
    assert_eq!(files, [segment_path(dir.path(), 11)], "{what}");

    for round in 0..2 {
        let log = Log::open(dir.path(), opts()).unwrap();
        assert_eq!(
            log.recovery().next_index,
            11,
            "{what}, open {round}: the next index was forgotten"
        );
        let c = &log.consumer_list()[0];
        assert_eq!(c.cleared, 10, "{what}: the consumer's cursor moved back");
        log.close().unwrap();
    }
    let log = Log::open(dir.path(), opts()).unwrap();
    append_durable(&log, 1, 11, 3);
    log.close().unwrap();
    let mut reader = Reader::open_dir(dir.path(), 11);
    let mut got = Vec::new();
    while let Some(r) = reader.next_record().unwrap() {
        got.push(r.index);
    }
    assert_eq!(got, [11, 12, 13], "{what}");
}

#[test]
fn an_empty_tail_keeps_the_next_index_when_the_older_segments_are_gone() {
    // Regression: a clean close removed an active segment without
    // records, and recovery removed a tail with no valid record. With the
    // older segments already collected, the directory was left empty and
    // the next open started again at index 1, handing out indexes that
    // consumers had cleared, and pulling their cursors back to 0.
    next_index_survives(
        |d| crashed_segment(d, 11, &header_block(11), &[]),
        "header only",
    );
    next_index_survives(
        |d| crashed_segment(d, 11, &header_block(11), &[0xa5; 300]),
        "first record torn",
    );
    next_index_survives(|d| crashed_segment(d, 11, &[], &[]), "header never written");
}

#[test]
fn a_reset_tail_is_preallocated_afresh() {
    let dir = tempfile::tempdir().unwrap();
    crashed_segment(dir.path(), 7, &header_block(7), &[0xa5; 300]);
    let path = segment_path(dir.path(), 7);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(5000)
        .unwrap();
    let log = Log::open(dir.path(), opts().segment_size(2 * SEG)).unwrap();
    let rec = log.recovery().clone();
    assert_eq!(rec.reset.as_deref(), Some(path.as_path()));
    assert_eq!(rec.next_index, 7);
    assert!(rec.torn.is_some(), "the garbage is reported: {rec:?}");
    let b = std::fs::read(&path).unwrap();
    assert_eq!(b.len() as u64, 2 * SEG, "preallocated to the segment size");
    let h = SegmentHeader::decode(&b).unwrap();
    assert_eq!((h.base_index, h.capacity), (7, 2 * SEG));
    assert!(b[4096..].iter().all(|&x| x == 0), "the torn bytes are gone");
    append_durable(&log, 2, 7, 2);
    log.close().unwrap();
}

#[test]
fn a_damaged_header_over_records_is_refused_not_reset() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), opts()).unwrap();
    append_durable(&log, 3, 1, 5);
    drop(log);
    let path = segment_files(dir.path()).pop().unwrap();
    let mut b = std::fs::read(&path).unwrap();
    b[20] ^= 0xff; // inside the CRC'd header fields
    std::fs::write(&path, &b).unwrap();
    match Log::open(dir.path(), opts()) {
        Err(Error::Corrupt { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert_eq!(std::fs::read(&path).unwrap(), b, "the segment is untouched");
}

#[test]
fn a_tail_of_another_format_version_is_refused_not_reset() {
    let dir = tempfile::tempdir().unwrap();
    let mut head = header_block(1);
    head[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    head[12..16].copy_from_slice(&64u32.to_le_bytes()); // another layout
    crashed_segment(dir.path(), 1, &head, &[]);
    let before = std::fs::read(segment_path(dir.path(), 1)).unwrap();
    match Log::open(dir.path(), opts()) {
        Err(Error::UnsupportedVersion { found, .. }) => assert_eq!(found, FORMAT_VERSION + 1),
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
    assert_eq!(
        std::fs::read(segment_path(dir.path(), 1)).unwrap(),
        before,
        "the segment is untouched"
    );
}

#[test]
fn a_directory_reader_follows_an_empty_tail_across_reopens() {
    // Regression: a reader in another process held the empty tail open; a
    // clean close removed that file and the next open made a new one of
    // the same name, so the reader waited on the removed file for ever.
    let dir = tempfile::tempdir().unwrap();
    sealed_records_then_empty_tail(dir.path(), 4, 6);
    let mut reader = Reader::open_dir(dir.path(), 1);
    for k in 1..=5 {
        assert_eq!(reader.next_record().unwrap().unwrap().index, k);
    }
    assert!(reader.next_record().unwrap().is_none());
    Log::open(dir.path(), opts()).unwrap().close().unwrap();
    let log = Log::open(dir.path(), opts()).unwrap();
    append_durable(&log, 4, 6, 3);
    let mut got = Vec::new();
    for _ in 0..200 {
        match reader.next_record().unwrap() {
            Some(r) => got.push(r.index),
            None if got.len() == 3 => break,
            None => reader.wait(Duration::from_millis(10)),
        }
    }
    assert_eq!(got, [6, 7, 8]);
    log.close().unwrap();
}

#[test]
fn names_outside_the_index_range_are_not_segments() {
    // Regression: a header-only file named 00000000000000000000.wlog made
    // `Log::open` panic on `next - 1` (and wrap in a release build), and a
    // name near 2^64 overflowed `last + 1` the same way.
    for base in [0, u64::MAX, 1 << 63] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{base:020}.wlog"));
        let mut b = header_block(base);
        b.resize(SEG as usize, 0);
        std::fs::write(&path, &b).unwrap();
        let log = Log::open(dir.path(), opts()).unwrap();
        assert_eq!(log.recovery().next_index, 1, "{}", path.display());
        append_durable(&log, 5, 1, 2);
        log.close().unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b,
            "not a segment, so left alone"
        );
        let s = weir_log::inspect(&weir_log::fs::StdFs, dir.path()).unwrap();
        assert_eq!((s.first_index, s.last_index), (1, 2));
    }
}

#[test]
fn a_gap_between_the_tail_and_the_segment_before_is_reported() {
    // Regression: recovery trusted the names, and a reader that reached
    // the end of records 1-5 with segment 20 next waited for index 6 for
    // ever, spinning in `next_record`/`wait`.
    let dir = tempfile::tempdir().unwrap();
    sealed_records_then_empty_tail(dir.path(), 6, 20);
    let log = Log::open(dir.path(), opts()).unwrap();
    assert_eq!(log.recovery().gap_before_tail, Some((6, 20)));
    assert_eq!(log.recovery().next_index, 20);
    append_durable(&log, 6, 20, 3);
    for (what, mut reader) in [
        ("live", log.reader(1)),
        ("directory", Reader::open_dir(dir.path(), 1)),
    ] {
        for k in 1..=5 {
            assert_eq!(reader.next_record().unwrap().unwrap().index, k, "{what}");
        }
        match reader.next_record() {
            Err(Error::Corrupt {
                kind: weir_log::codec::DecodeError::Gap { expected, found },
                ..
            }) => assert_eq!((expected, found), (6, 20), "{what}"),
            other => panic!("{what}: expected the gap, got {other:?}"),
        }
    }
    log.close().unwrap();
}

#[test]
fn a_resumed_tail_keeps_the_sparse_index_of_an_uninterrupted_one() {
    // Regression: a resumed tail put its next sparse-index entry 64 KiB
    // after its last one instead of at the next 64 KiB stretch, so its
    // footer could miss a stretch that an uninterrupted writer indexed.
    // Recovery appends to a tail only when its records end on a block
    // boundary, so the records here are sized to end on one.
    let opts = || Options::default().segment_size(1 << 20).sync_interval(None);
    let name = |k: u64, n: usize| vec![b'a' + (k % 26) as u8; n];
    let append = |log: &Log, from: u64, to: u64, end_on_block: bool| {
        let mut end = 4096u64;
        for k in from..=to {
            let mut n = 100 + (k as usize * 37) % 300;
            if end_on_block && k == to {
                let rec = weir_log::Record::new(weir_log::RecordType::CREAT);
                let bare = weir_log::codec::encoded_len(&rec).unwrap() as u64;
                let room = 4096 - end % 4096;
                n = (room + if room < bare + 8 { 4096 } else { 0 } - bare) as usize;
            }
            let r = weir_log::Record::new(weir_log::RecordType::CREAT);
            let nm = name(k, n);
            let rec = r.name(&nm);
            end += weir_log::codec::encoded_len(&rec).unwrap() as u64;
            assert_eq!(log.append(&rec).unwrap().index(), k);
        }
        log.sync().unwrap();
        end
    };
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let log = Log::open(a.path(), opts()).unwrap();
    let end = append(&log, 1, 300, true);
    assert_eq!(end % 4096, 0, "the records end on a block boundary");
    // The directory as a crash would leave it: a clean tail to append to.
    support::copy_dir(a.path(), b.path());
    append(&log, 301, 700, false);
    log.close().unwrap();
    let resumed = Log::open(b.path(), opts()).unwrap();
    let rec = resumed.recovery().clone();
    assert_eq!((rec.next_index, rec.sealed_tail), (301, false), "{rec:?}");
    append(&resumed, 301, 700, false);
    resumed.close().unwrap();
    let fa = support::footer(&segment_files(a.path())[0]).unwrap();
    let fb = support::footer(&segment_files(b.path())[0]).unwrap();
    assert_eq!((fa.last_index, fb.last_index), (700, 700));
    assert_eq!(fa.entries, fb.entries);
}

#[test]
fn a_resumed_tail_is_synced_before_its_records_count_as_durable() {
    // Regression: recovery resumed a clean tail ending on a block boundary
    // without an fsync and counted its records durable, though a killed
    // writer may have left them only in the page cache: `sync` then
    // confirmed them without an fsync, and a power cut took them.
    use std::sync::Arc;
    use weir_log::fault::{FaultyFs, PowerCut};
    use weir_log::{Preallocation, Record, RecordType};
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let opts = || {
        opts()
            .sync_interval(None)
            .preallocation(Preallocation::Reserve)
            .fs(Arc::new(fs.clone()))
    };
    let log = Log::open(dir.path(), opts()).unwrap();
    // 64 frames of 64 bytes: the records end on a block boundary.
    for _ in 0..64 {
        let _ = log
            .append(&Record::new(RecordType::CREAT).name(&[b'n'; 28]))
            .unwrap();
    }
    while log.last_index() < 64 {
        std::thread::sleep(Duration::from_millis(5));
    }
    // Killed: written to the OS, never synced.
    fs.fail_writes(support::EIO, 0, None);
    fs.fail_syncs(support::EIO, 0, None);
    drop(log);
    fs.heal();
    let log = Log::open(dir.path(), opts()).unwrap();
    let rec = log.recovery().clone();
    assert_eq!((rec.next_index, rec.sealed_tail), (65, false), "{rec:?}");
    let claimed = log.sync().unwrap().unwrap().index();
    assert_eq!(claimed, 64);
    // This process dies too, and then the power goes.
    fs.crash_after(0);
    drop(log);
    fs.power_cut(PowerCut::LoseAll).unwrap();
    let mut reader = Reader::open_dir(dir.path(), 1);
    let mut got = 0;
    while let Some(r) = reader.next_record().unwrap() {
        got = r.index;
    }
    assert_eq!(got, claimed, "records confirmed durable were lost");
}

#[test]
fn hostile_length_words_after_a_tail_do_not_multiply_the_reads_of_an_open() {
    // Regression: recovery probed every block after a tail's last record
    // for a frame, reading as many bytes as the block's length word
    // claimed. A word claiming the largest frame (1 MiB) at every block
    // made an open read a 4 MiB tail about 256 times over.
    const BIG: u64 = 4 << 20;
    let dir = tempfile::tempdir().unwrap();
    let fs = weir_log::mem::MemFs::new();
    let mut b = SegmentHeader {
        version: FORMAT_VERSION,
        base_index: 1,
        capacity: BIG,
        created_ns: 1,
    }
    .encode();
    b.resize(BIG as usize, 0xab);
    for block in (4096..BIG as usize).step_by(4096) {
        let claim = weir_log::codec::MAX_FRAME as u32;
        b[block..block + 4].copy_from_slice(&claim.to_le_bytes());
    }
    fs.write_file(segment_path(dir.path(), 1), &b);
    let opts = Options::default()
        .segment_size(BIG)
        .fs(std::sync::Arc::new(fs.clone()));
    let log = Log::open(dir.path(), opts).unwrap();
    let read = fs.bytes_read();
    assert!(
        read < 8 * BIG,
        "an open read {read} bytes of a {BIG}-byte tail"
    );
    let torn = log.recovery().torn.clone().expect("the tail is torn");
    assert_eq!(torn.valid_end, 4096);
    assert_eq!(log.recovery().next_index, 1);
    log.close().unwrap();
}

/// Counts the directory fsyncs the log asks for.
#[derive(Debug, Default)]
struct DirSyncs(AtomicU64);

impl Observer for DirSyncs {
    fn name_op(&self, op: NameOp<'_>) {
        if let NameOp::SyncDir(_) = op {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[test]
fn open_syncs_the_directory_before_commits_go_into_the_tail() {
    // Regression: a writer killed after a roll created segment 6 (header
    // fsynced) but before it fsynced the directory left a name that only
    // the page cache held. Recovery resumed that tail without a directory
    // fsync, and the durable commits that followed went into a file a
    // power cut could take away with every record in it.
    let dir = tempfile::tempdir().unwrap();
    sealed_records_then_empty_tail(dir.path(), 9, 6);
    let syncs = Arc::new(DirSyncs::default());
    let fs = Arc::new(Observed::new(Arc::new(StdFs), syncs.clone()));
    let log = Log::open(dir.path(), opts().fs(fs)).unwrap();
    assert_eq!(log.recovery().next_index, 6);
    assert!(
        syncs.0.load(Ordering::SeqCst) >= 1,
        "the open synced no directory before it took commits"
    );
    append_durable(&log, 9, 6, 2);
    log.close().unwrap();
}

#[test]
fn a_next_index_past_any_real_log_is_refused() {
    // Regression: a crafted tail at the format's highest index opened with
    // a next index of 2^63, whose segment name no open parses: records
    // appended there were acknowledged and then never found again.
    let dir = tempfile::tempdir().unwrap();
    let top = weir_log::segment::MAX_INDEX;
    crashed_segment(dir.path(), top, &header_block(top), &[]);
    // Reset in place, this tail would make MAX_INDEX the next index, and
    // the first roll after it would pass the format's range.
    match Log::open(dir.path(), opts()) {
        Err(Error::Corrupt { .. }) => {}
        other => panic!(
            "opened a log whose next index is {top}: {:?}",
            other.map(|l| l.recovery().clone())
        ),
    }
}
