//! Segments made from zero-filled spares (`Preallocation`): the spare is
//! the file the next roll renames into place, every record survives the
//! rolls, a clean close keeps a finished spare for the next open (and only
//! one of the right size, where zero fill is on, is taken back), and a
//! spare that could not be prepared costs no record.

mod support;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{Payload, check_log, segment_files};
use weir_log::fault::FaultyFs;
use weir_log::fs::{FileSystem, StdFs};
use weir_log::mem::MemFs;
use weir_log::{Log, Options, Preallocation};

const SEG: u64 = 64 * 1024;
const SPARE: &str = "spare.wlog.tmp";
const READY: &str = "spare.wlog.ready";

fn opts(p: Preallocation) -> Options {
    Options::default().segment_size(SEG).preallocation(p)
}

/// Appends durably from `next` until the log has more segments than
/// `segments`; returns the next index.
fn until_roll(log: &Log, dir: &Path, salt: u64, mut next: u64) -> u64 {
    let before = segment_files(dir).len();
    while segment_files(dir).len() == before {
        let d = Payload::new(salt, next)
            .with(|r| log.append_durable(r))
            .unwrap();
        assert_eq!(d.index(), next);
        next += 1;
    }
    next
}

/// Appends durably from `next` until the spare is complete (at full size,
/// its blocks allocated), then gives its thread time to fsync and end: a
/// roll takes only a finished spare. Returns the next index.
fn until_spare(log: &Log, dir: &Path, salt: u64, mut next: u64) -> u64 {
    let spare = dir.join(SPARE);
    let until = Instant::now() + Duration::from_secs(10);
    while !std::fs::metadata(&spare).is_ok_and(|m| m.len() == SEG && m.blocks() * 512 >= SEG) {
        assert!(Instant::now() < until, "no spare after record {next}");
        let d = Payload::new(salt, next)
            .with(|r| log.append_durable(r))
            .unwrap();
        assert_eq!(d.index(), next);
        next += 1;
    }
    std::thread::sleep(Duration::from_secs(1));
    next
}

fn newest_segment(dir: &Path) -> PathBuf {
    segment_files(dir).pop().expect("a segment")
}

#[test]
fn a_roll_renames_the_zero_filled_spare_into_place() {
    let dir = tempfile::tempdir().unwrap();
    let spare = dir.path().join(SPARE);
    let log = Log::open(dir.path(), opts(Preallocation::ZeroFill)).unwrap();
    let mut next = 1;
    for round in 0..3 {
        next = until_spare(&log, dir.path(), 7, next);
        let bytes = std::fs::read(&spare).unwrap();
        assert!(
            bytes.iter().all(|&b| b == 0),
            "round {round}: a spare holds zeros"
        );
        let ino = std::fs::metadata(&spare).unwrap().ino();
        next = until_roll(&log, dir.path(), 7, next);
        let seg = newest_segment(dir.path());
        assert_eq!(
            std::fs::metadata(&seg).unwrap().ino(),
            ino,
            "round {round}: {} is not the spare",
            seg.display()
        );
    }
    log.close().unwrap();
    assert!(!spare.exists(), "a closed log holds no spare being made");
    check_log(dir.path(), 7, next - 1);
}

/// What a clean close kept: a file of zeros of one segment's size. Returns
/// its inode.
fn kept_spare(dir: &Path) -> u64 {
    let ready = dir.join(READY);
    let m = std::fs::metadata(&ready).expect("a clean close keeps the spare");
    assert_eq!(m.len(), SEG);
    assert!(std::fs::read(&ready).unwrap().iter().all(|&b| b == 0));
    assert!(!dir.join(SPARE).exists());
    m.ino()
}

#[test]
fn a_clean_close_keeps_the_spare_for_the_next_open() {
    // Before, close waited for the spare's zeros and then removed them, and
    // a reopened log's first segment was only reserved: a restarted daemon
    // paid 64 slow fsyncs and a short segment before its next spare.
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), opts(Preallocation::ZeroFill)).unwrap();
    let mut next = until_spare(&log, dir.path(), 5, 1);
    log.close().unwrap();
    let ino = kept_spare(dir.path());
    // Reopened, the log takes it back, and its next segment is that file.
    let log = Log::open(dir.path(), opts(Preallocation::ZeroFill)).unwrap();
    assert!(!dir.path().join(READY).exists(), "taken back at open");
    let before = segment_files(dir.path()).len();
    Payload::new(5, next)
        .with(|r| log.append_durable(r))
        .unwrap();
    next += 1;
    let files = segment_files(dir.path());
    assert_eq!(files.len(), before + 1, "the close sealed the last segment");
    assert_eq!(
        std::fs::metadata(newest_segment(dir.path())).unwrap().ino(),
        ino,
        "the first segment after the reopen is the kept spare"
    );
    log.close().unwrap();
    assert_eq!(check_log(dir.path(), 5, next - 1), next - 1);
}

#[test]
fn a_kept_spare_that_does_not_fit_is_removed_at_open() {
    // A spare kept for 64 KiB segments is no use to a log reopened with
    // 128 KiB ones, and none is used where zero fill is off.
    for (reopen, why) in [
        (
            opts(Preallocation::ZeroFill).segment_size(2 * SEG),
            "another segment size",
        ),
        (opts(Preallocation::Reserve), "zero fill off"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(dir.path(), opts(Preallocation::ZeroFill)).unwrap();
        let next = until_spare(&log, dir.path(), 6, 1);
        log.close().unwrap();
        let ino = kept_spare(dir.path());
        // A second name keeps the inode alive once the log removes the
        // file, so that a new segment cannot reuse its number.
        let hold = tempfile::tempdir_in(dir.path().parent().unwrap()).unwrap();
        std::fs::hard_link(dir.path().join(READY), hold.path().join("held")).unwrap();
        let log = Log::open(dir.path(), reopen).unwrap();
        assert!(!dir.path().join(READY).exists(), "{why}: not removed");
        assert!(!dir.path().join(SPARE).exists(), "{why}: taken back");
        Payload::new(6, next)
            .with(|r| log.append_durable(r))
            .unwrap();
        assert_ne!(
            std::fs::metadata(newest_segment(dir.path())).unwrap().ino(),
            ino,
            "{why}: the kept spare was used"
        );
        log.close().unwrap();
        assert_eq!(check_log(dir.path(), 6, next), next, "{why}");
    }
}

#[test]
fn every_record_survives_many_rolls_from_spares() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), opts(Preallocation::ZeroFill)).unwrap();
    let n = 6000u64;
    for i in 1..=n {
        let a = Payload::new(11, i).with(|r| log.append(r)).unwrap();
        assert_eq!(a.index(), i);
        if i % 50 == 0 {
            log.wait_durable(a).unwrap();
        }
    }
    log.close().unwrap();
    assert!(
        segment_files(dir.path()).len() > 4,
        "the test must roll segments"
    );
    assert_eq!(check_log(dir.path(), 11, n), n);
    // And reopened, appending goes on where it stopped.
    let log = Log::open(dir.path(), opts(Preallocation::ZeroFill)).unwrap();
    let d = Payload::new(11, n + 1)
        .with(|r| log.append_durable(r))
        .unwrap();
    assert_eq!(d.index(), n + 1);
    log.close().unwrap();
    assert_eq!(check_log(dir.path(), 11, n + 1), n + 1);
}

#[test]
fn opening_removes_a_spare_left_by_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), opts(Preallocation::Reserve)).unwrap();
    Payload::new(3, 1).with(|r| log.append_durable(r)).unwrap();
    log.close().unwrap();
    let spare = dir.path().join(SPARE);
    std::fs::write(&spare, b"left by a crash").unwrap();
    let log = Log::open(dir.path(), opts(Preallocation::Reserve)).unwrap();
    assert!(!spare.exists(), "the stale spare is gone");
    assert_eq!(log.recovery().next_index, 2);
    log.close().unwrap();
    check_log(dir.path(), 3, 1);
}

#[test]
fn no_spare_without_zero_fill() {
    // `Reserve` on a real filesystem, and `Auto` where writes are not in
    // place (the in-memory filesystem says so).
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), opts(Preallocation::Reserve)).unwrap();
    let next = until_roll(&log, dir.path(), 5, 1);
    std::thread::sleep(Duration::from_millis(100));
    assert!(!dir.path().join(SPARE).exists());
    log.close().unwrap();
    check_log(dir.path(), 5, next - 1);

    // The lock file is the real directory's.
    let dir = tempfile::tempdir().unwrap();
    let mem = Arc::new(MemFs::new());
    let log = Log::open(dir.path(), opts(Preallocation::Auto).fs(mem.clone())).unwrap();
    for i in 1..=2000u64 {
        let a = Payload::new(5, i).with(|r| log.append(r)).unwrap();
        assert_eq!(a.index(), i);
    }
    log.sync().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let names = mem.list(dir.path()).unwrap();
    assert!(
        names.iter().all(|p| !p.ends_with(SPARE)),
        "a spare on an in-memory filesystem: {names:?}"
    );
    assert!(names.len() > 2, "the test must roll segments: {names:?}");
    log.close().unwrap();
}

#[test]
fn tmpfs_is_not_a_filesystem_that_overwrites_in_place() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("skipping: no /dev/shm");
        return;
    }
    assert!(!StdFs.overwrites_in_place(shm).unwrap());
    assert!(!MemFs::new().overwrites_in_place(Path::new("/")).unwrap());
}

/// A log opened for a few records writes no spare: it starts one only
/// once its segment is a quarter full.
#[test]
fn a_few_records_make_no_spare() {
    let dir = tempfile::tempdir().unwrap();
    // Segments of the default size, 8 MiB: ten durable commits are 40 KiB.
    let opts = Options::default().preallocation(Preallocation::ZeroFill);
    let log = Log::open(dir.path(), opts).unwrap();
    for i in 1..=10 {
        Payload::new(2, i).with(|r| log.append_durable(r)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(!dir.path().join(SPARE).exists());
    log.close().unwrap();
    check_log(dir.path(), 2, 10);
}

/// A spare that cannot be prepared (the disk is full when it reserves its
/// space) costs no record: the roll preallocates without zeros, and the
/// next spare is made for the roll after.
#[test]
fn a_spare_that_fails_costs_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let log = Log::open(
        dir.path(),
        opts(Preallocation::ZeroFill).fs(Arc::new(fs.clone())),
    )
    .unwrap();
    // The first segment is reserved by now; the next reservation is the
    // spare's, when the segment is a quarter full.
    Payload::new(9, 1).with(|r| log.append_durable(r)).unwrap();
    fs.fail_allocs(rustix::io::Errno::NOSPC.raw_os_error(), 0, Some(1));
    let mut next = until_roll(&log, dir.path(), 9, 2);
    let spare = dir.path().join(SPARE);
    next = until_spare(&log, dir.path(), 9, next);
    next = until_roll(&log, dir.path(), 9, next);
    log.close().unwrap();
    assert!(!spare.exists());
    check_log(dir.path(), 9, next - 1);
}

/// A log's first segment was only reserved, not zero-filled, and every
/// fsync into it costs more. Once durable commits are frequent there, the
/// log makes a spare at once and rolls to it long before the segment is
/// a quarter full.
#[test]
fn frequent_fsyncs_leave_a_segment_that_was_not_zero_filled_early() {
    let dir = tempfile::tempdir().unwrap();
    let spare = dir.path().join(SPARE);
    let seg = 8 << 20;
    let opts = Options::default()
        .segment_size(seg)
        .preallocation(Preallocation::ZeroFill);
    let log = Log::open(dir.path(), opts).unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    let (mut next, mut spare_ino) = (1, None);
    while segment_files(dir.path()).len() < 2 {
        assert!(Instant::now() < until, "no early roll after record {next}");
        let d = Payload::new(4, next)
            .with(|r| log.append_durable(r))
            .unwrap();
        assert_eq!(d.index(), next);
        next += 1;
        if let Ok(m) = std::fs::metadata(&spare) {
            spare_ino = Some(m.ino());
        }
    }
    let files = segment_files(dir.path());
    let first = std::fs::metadata(&files[0]).unwrap();
    // One durable commit per record, each padded to 4 KiB. Without the
    // early rule the roll comes only once the segment is full; the early
    // one comes about a quarter in, after a spare is written, and half
    // leaves a slow machine's spare thread room.
    assert!(
        first.len() < seg / 2,
        "the first segment was left at {} bytes, not early",
        first.len()
    );
    assert!(
        first.len() >= 64 * 4096,
        "the first segment was left after {} bytes, before 64 fsyncs",
        first.len()
    );
    assert_eq!(
        std::fs::metadata(&files[1]).unwrap().ino(),
        spare_ino.expect("the spare was seen"),
        "the second segment is the spare"
    );
    // Appending goes on in the new segment, and a reopen finds it all.
    for _ in 0..10 {
        Payload::new(4, next)
            .with(|r| log.append_durable(r))
            .unwrap();
        next += 1;
    }
    assert_eq!(segment_files(dir.path()).len(), 2, "one early roll only");
    log.close().unwrap();
    assert_eq!(check_log(dir.path(), 4, next - 1), next - 1);
}

/// A writer that syncs records as they trickle in (`weir log write --sync`
/// fed a line at a time) makes its fsyncs slowly: no early roll, so no
/// segment of zeros written for it and no short segment left behind.
#[test]
fn durable_appends_that_trickle_in_keep_their_segment() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default()
        .segment_size(8 << 20)
        .preallocation(Preallocation::ZeroFill);
    let log = Log::open(dir.path(), opts).unwrap();
    // 80 fsyncs at most 50 a second: more than the 64 that would roll
    // early, never 64 within a second.
    for next in 1..=80 {
        let started = Instant::now();
        Payload::new(5, next)
            .with(|r| log.append_durable(r))
            .unwrap();
        assert!(
            !dir.path().join(SPARE).exists(),
            "a spare was started after {next} slow fsyncs"
        );
        std::thread::sleep(Duration::from_millis(20).saturating_sub(started.elapsed()));
    }
    assert_eq!(log.stats().syncs, 80, "one fsync per record");
    assert_eq!(segment_files(dir.path()).len(), 1);
    log.close().unwrap();
    assert_eq!(check_log(dir.path(), 5, 80), 80);
}

#[test]
fn stats_and_inspect_report_the_spare_beside_the_segments() {
    // The spare counts towards the size limit but is not a segment:
    // `Stats::bytes` left it out, so an administrator saw a directory a
    // segment larger than anything reported.
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), opts(Preallocation::ZeroFill)).unwrap();
    assert_eq!(log.stats().spare_bytes, 0, "a new log has no spare");
    let next = until_spare(&log, dir.path(), 8, 1);
    let s = log.stats();
    assert_eq!(s.spare_bytes, SEG, "the spare being kept ready");
    let segments: u64 = segment_files(dir.path())
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert_eq!(s.bytes, segments, "bytes counts the segments alone");
    log.close().unwrap();
    let kept = weir_log::inspect(&StdFs, dir.path()).unwrap();
    assert_eq!(kept.spare_bytes, SEG, "the spare the clean close kept");
    assert_eq!(kept.last_index, next - 1);
    // Reopened without zero fill, the kept spare is removed.
    let log = Log::open(dir.path(), opts(Preallocation::Reserve)).unwrap();
    assert_eq!(log.stats().spare_bytes, 0);
    log.close().unwrap();
    assert_eq!(
        weir_log::inspect(&StdFs, dir.path()).unwrap().spare_bytes,
        0
    );
}
