//! Retention: which segments are deleted, when consumers are evicted, and
//! what the MARK records that announce it say.
//!
//! Retention runs on the committer thread every ~500 ms and after each
//! segment roll, so these tests poll for the expected state (up to 10 s)
//! instead of sleeping a fixed time. Where a test checks that something is
//! *not* deleted, it first waits for a state that proves retention has run.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::observed::Observed;
use support::segment_peak::SegmentPeak;
use support::segments::{SEG, assert_truncated, bases, disk_bytes, open, retention};
use support::{eventually, fill};
use weir_log::fs::StdFs;
use weir_log::mem::MemFs;
use weir_log::{
    Error, FullPolicy, Log, LogRecord, Options, Preallocation, Reader, Record, RecordType,
    Retention, TypeMask, read_consumers,
};

/// Bytes of every file in the log directory but the consumers' state:
/// segments and spares.
fn log_file_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().contains(".wlog"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

fn spare_exists(dir: &Path) -> bool {
    ["spare.wlog.tmp", "spare.wlog.ready"]
        .iter()
        .any(|f| dir.join(f).exists())
}

fn open_zero_filled(dir: &Path, r: Retention) -> Log {
    let opts = Options::default()
        .segment_size(SEG)
        .preallocation(Preallocation::ZeroFill)
        .retention(r);
    Log::open(dir, opts).unwrap()
}

/// The MARK records still in the log.
fn marks(log: &Log) -> Vec<LogRecord> {
    log.reader(log.first_index())
        .with_mask(TypeMask::parse("MARK").unwrap())
        .filter_map(Result::ok)
        .collect()
}

fn field(r: &LogRecord, key: &str) -> String {
    String::from_utf8(
        r.field(key)
            .unwrap_or_else(|| panic!("no field {key} in {r:?}"))
            .to_vec(),
    )
    .unwrap()
}

fn eviction_of<'a>(marks: &'a [LogRecord], name: &str) -> Option<&'a LogRecord> {
    marks
        .iter()
        .find(|r| r.target == name.as_bytes() && r.field("event") == Some(&b"consumer-evicted"[..]))
}

/// Reads what consumer `name` has not cleared, keeps the MARKs in `seen`,
/// and clears what it read.
fn drain(log: &Log, name: &str, seen: &mut Vec<LogRecord>) {
    let mut last = None;
    for r in log.consumer_reader(name).unwrap() {
        let r = r.unwrap();
        last = Some(r.index);
        if r.kind == RecordType::MARK {
            seen.push(r);
        }
    }
    if let Some(l) = last {
        log.clear(name, l).unwrap();
    }
}

fn names(log: &Log) -> Vec<String> {
    log.consumer_list().into_iter().map(|c| c.name).collect()
}

#[test]
fn gc_removes_only_segments_every_consumer_has_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), Retention::default());
    log.register("a", TypeMask::all()).unwrap();
    log.register("b", TypeMask::all()).unwrap();
    let last = fill(&log, 1000);
    let segs = bases(dir.path());
    assert!(segs.len() >= 6, "{segs:?}");
    // "a" clears everything, "b" stops inside the fourth segment.
    log.clear("a", 0).unwrap();
    log.clear("b", segs[3] + 5).unwrap();
    eventually("the three fully cleared segments are deleted", || {
        bases(dir.path()) == segs[3..]
    });
    // Two more retention passes delete nothing else.
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(bases(dir.path()), segs[3..]);
    assert_eq!(log.first_index(), segs[3]);
    assert_eq!(log.stats().first_index, segs[3]);

    assert_truncated(log.reader(1).next(), 1, segs[3]);
    assert_truncated(log.reader(segs[3] - 1).next(), segs[3] - 1, segs[3]);
    assert_truncated(
        Reader::open_dir(dir.path(), segs[2]).next(),
        segs[2],
        segs[3],
    );
    let rest: Vec<u64> = log.reader(segs[3]).map(|r| r.unwrap().index).collect();
    assert_eq!(rest, (segs[3]..=last).collect::<Vec<_>>());
    let rest: Vec<u64> = Reader::open_dir(dir.path(), segs[3])
        .map(|r| r.unwrap().index)
        .collect();
    assert_eq!(rest, (segs[3]..=last).collect::<Vec<_>>());
    let b: Vec<u64> = log
        .consumer_reader("b")
        .unwrap()
        .map(|r| r.unwrap().index)
        .collect();
    assert_eq!(b.first(), Some(&(segs[3] + 6)));

    // Once everyone has cleared everything, only the newest segment stays.
    log.clear("b", 0).unwrap();
    let newest = *segs.last().unwrap();
    eventually("all but the newest segment are deleted", || {
        bases(dir.path()) == [newest]
    });
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(
        bases(dir.path()),
        [newest],
        "the newest segment must never be deleted"
    );
    log.close().unwrap();
    let log = open(dir.path(), Retention::default());
    assert_eq!(log.last_index(), last);
    let a = log.append(&Record::new(RecordType::MKDIR)).unwrap();
    assert_eq!(a.index(), last + 1);
    log.wait_durable(a).unwrap();
    let tail: Vec<u64> = log.reader(newest).map(|r| r.unwrap().index).collect();
    assert_eq!(tail, (newest..=last + 1).collect::<Vec<_>>());
}

#[test]
fn without_consumers_size_retention_deletes_the_oldest_segments() {
    let dir = tempfile::tempdir().unwrap();
    let max = 4 * SEG;
    let log = open(dir.path(), retention(4, FullPolicy::EvictMostIdle));
    let last = fill(&log, 2000);
    eventually("the log shrinks to its size limit", || {
        disk_bytes(dir.path()) <= max
    });
    let first = log.first_index();
    assert!(first > 1);
    assert_eq!(bases(dir.path())[0], first);
    assert!(log.stats().bytes <= max, "{:?}", log.stats());
    assert_truncated(log.reader(1).next(), 1, first);
    let rest: Vec<u64> = log.reader(first).map(|r| r.unwrap().index).collect();
    assert_eq!(rest, (first..=last).collect::<Vec<_>>());
    log.close().unwrap();
    let v = weir_log::verify(&StdFs, dir.path(), |_, _| {}).unwrap();
    assert!(v.problem.is_none(), "{v:?}");
    assert_eq!((v.first_index, v.last_index), (first, last));
}

#[test]
fn without_consumers_age_retention_deletes_old_segments() {
    let dir = tempfile::tempdir().unwrap();
    // Long enough that no segment ages out while the fill runs, on a
    // machine that stalls it for a while.
    let r = Retention {
        max_age: Some(Duration::from_secs(1)),
        ..Retention::default()
    };
    let log = open(dir.path(), r);
    let last = fill(&log, 600);
    assert!(bases(dir.path()).len() >= 4);
    eventually("segments older than max_age are deleted", || {
        bases(dir.path()).len() == 1
    });
    let first = log.first_index();
    let rest = log.reader(first).map(|r| r.unwrap().index).last();
    assert_eq!(rest, Some(last));
}

#[test]
fn idle_records_eviction_writes_a_mark_and_persists() {
    let dir = tempfile::tempdir().unwrap();
    let r = Retention {
        max_idle_records: Some(100),
        max_idle_time: None,
        ..Retention::default()
    };
    let log = open(dir.path(), r.clone());
    let slow = log.register("slow", TypeMask::all()).unwrap();
    log.register("fast", TypeMask::all()).unwrap();
    let mut seen = Vec::new();
    for _ in 0..10 {
        // "fast" never falls more than 50 records behind.
        fill(&log, 50);
        drain(&log, "fast", &mut seen);
    }
    eventually("the slow consumer is evicted", || names(&log) == ["fast"]);
    // "fast" learns of the eviction from the log, as any consumer would.
    eventually("fast reads the eviction MARK", || {
        drain(&log, "fast", &mut seen);
        eviction_of(&seen, "slow").is_some()
    });
    let m = eviction_of(&seen, "slow").unwrap().clone();
    assert_eq!(m.kind, RecordType::MARK);
    assert_eq!(m.name, b"consumer-evicted slow");
    assert_eq!(field(&m, "reason"), "idle-records");
    assert_eq!(field(&m, "consumer_id"), slow.to_string());
    assert_eq!(field(&m, "cleared"), "0");
    let through: u64 = field(&m, "through").parse().unwrap();
    assert!(
        through > 100 && through < m.index,
        "through {through}, mark at {}",
        m.index
    );
    assert!(log.stats().evictions >= 1);
    assert_eq!(eviction_of(&seen, "fast"), None);
    log.close().unwrap();

    let state = std::fs::read_to_string(dir.path().join(weir_log::CONSUMERS_FILE)).unwrap();
    assert!(!state.contains("slow"), "{state}");
    let listed: Vec<_> = read_consumers(&StdFs, dir.path(), 0, 0)
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(listed, ["fast"]);
    let log = open(dir.path(), r);
    assert_eq!(names(&log), ["fast"]);
    assert!(matches!(
        log.consumer_reader("slow"),
        Err(Error::UnknownConsumer(_))
    ));
}

#[test]
fn idle_time_eviction_writes_a_mark() {
    let dir = tempfile::tempdir().unwrap();
    let r = Retention {
        max_idle_time: Some(Duration::from_millis(300)),
        ..Retention::default()
    };
    let log = open(dir.path(), r);
    let id = log.register("sleepy", TypeMask::all()).unwrap();
    fill(&log, 1);
    eventually("the idle consumer is evicted", || {
        log.consumer_list().is_empty()
    });
    let mut found = None;
    eventually("the eviction MARK is readable", || {
        found = eviction_of(&marks(&log), "sleepy").cloned();
        found.is_some()
    });
    let m = found.unwrap();
    assert_eq!(field(&m, "reason"), "idle-time");
    assert_eq!(field(&m, "consumer_id"), id.to_string());
    assert_eq!(field(&m, "through"), "1");
}

#[test]
fn a_consumer_is_idle_only_while_records_wait_for_it() {
    // Regression: the idle clock ran from the consumer's last clear even
    // while nothing waited for it, so a consumer that had read everything
    // on a quiet log was evicted by the first record after the quiet spell,
    // here the MARK record of another consumer's eviction.
    let dir = tempfile::tempdir().unwrap();
    let r = Retention {
        max_idle_time: Some(Duration::from_secs(3)),
        ..Retention::default()
    };
    let log = open(dir.path(), r);
    log.register("quiet", TypeMask::all()).unwrap();
    log.register("sleepy", TypeMask::all()).unwrap();
    fill(&log, 1);
    log.clear("quiet", 0).unwrap();
    // "sleepy" has a record waiting; "quiet" has nothing to read, and
    // has not cleared for as long.
    eventually("the consumer with a record waiting is evicted", || {
        log.consumer_list().iter().all(|c| c.name != "sleepy")
    });
    // Its MARK record waits for "quiet" now. Two retention passes later
    // "quiet" is still there: that record has not waited 3 s.
    std::thread::sleep(Duration::from_millis(1200));
    let names: Vec<String> = log.consumer_list().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["quiet"], "a caught-up consumer is not idle");
    eventually("the quiet consumer is evicted in its turn", || {
        log.consumer_list().is_empty()
    });
    log.close().unwrap();
}

#[test]
fn size_limit_evicts_the_most_idle_blocking_consumers_first() {
    let dir = tempfile::tempdir().unwrap();
    let max = 6 * SEG;
    let log = open(dir.path(), retention(6, FullPolicy::EvictMostIdle));
    let a = log.register("a", TypeMask::all()).unwrap();
    let b = log.register("b", TypeMask::all()).unwrap();
    log.register("keeper", TypeMask::all()).unwrap();
    // "a" was active after "b", so "b" is the most idle.
    log.clear("a", 0).unwrap();
    let mut peak = 0;
    let mut seen = Vec::new();
    for _ in 0..40 {
        fill(&log, 50);
        drain(&log, "keeper", &mut seen);
        peak = peak.max(disk_bytes(dir.path()));
    }
    eventually("the blocking consumers are evicted", || {
        names(&log) == ["keeper"]
    });
    eventually("the log fits its limit", || disk_bytes(dir.path()) <= max);
    let mut got = Vec::new();
    eventually("keeper reads both eviction MARKs", || {
        drain(&log, "keeper", &mut seen);
        got = ["b", "a"]
            .iter()
            .filter_map(|n| eviction_of(&seen, n).cloned())
            .collect();
        got.len() == 2
    });
    for (m, id) in got.iter().zip([b, a]) {
        assert_eq!(field(m, "reason"), "size-limit");
        assert_eq!(field(m, "consumer_id"), id.to_string());
        assert_eq!(field(m, "cleared"), "0");
    }
    assert!(
        got[0].index < got[1].index,
        "the most idle consumer (b) goes first"
    );
    assert!(
        peak <= max + SEG,
        "the log reached {peak} bytes with a limit of {max}"
    );
    let kinds: Vec<_> = seen.iter().map(|r| field(r, "event")).collect();
    assert_eq!(
        kinds, ["consumer-evicted"; 2],
        "keeper saw every MARK, and only these"
    );
}

#[test]
fn drop_oldest_keeps_consumers_and_marks_the_drop() {
    let dir = tempfile::tempdir().unwrap();
    let max = 4 * SEG;
    let log = open(dir.path(), retention(4, FullPolicy::DropOldest));
    log.register("lag", TypeMask::all()).unwrap();
    let last = fill(&log, 1500);
    eventually("the log shrinks to its size limit", || {
        disk_bytes(dir.path()) <= max
    });
    assert_eq!(names(&log), ["lag"], "DropOldest evicts nobody");
    let first = log.first_index();
    let mut drop_marks = Vec::new();
    eventually("a segment-dropped MARK is readable", || {
        drop_marks = marks(&log)
            .into_iter()
            .filter(|r| r.field("event") == Some(&b"segment-dropped"[..]))
            .collect();
        !drop_marks.is_empty()
    });
    for m in &drop_marks {
        assert_eq!(field(m, "reason"), "size-limit");
        let through: u64 = field(m, "through").parse().unwrap();
        assert!(through < log.first_index() && through < m.index, "{m:?}");
    }
    assert_eq!(log.consumer_list()[0].cleared, 0);
    match log.consumer_reader("lag").unwrap().next() {
        Some(Err(Error::Truncated {
            requested: 1,
            oldest,
        })) if oldest >= first => {}
        other => panic!("the lagging consumer should get Truncated, got {other:?}"),
    }
    assert!(log.reader(first).all(|r| r.is_ok()));
    assert!(log.last_index() > last);
}

#[test]
fn a_burst_of_appends_never_takes_the_log_far_past_its_size_limit() {
    // Regression: `commit.rs` rolled as many segments as one gathered batch
    // needed (up to 8 MiB, or a whole ring of records) and ran retention
    // only after the cycle: a burst grew a log with a 256 KiB limit to 152
    // segments (9.3 MB) before anything was deleted. Retention now runs
    // after every roll. The bound is the limit plus the active segment and
    // the one being created.
    let dir = tempfile::tempdir().unwrap();
    let segments = Arc::new(SegmentPeak::default());
    let opts = Options::default()
        .segment_size(SEG)
        .retention(retention(4, FullPolicy::EvictMostIdle))
        .fs(Arc::new(Observed::new(
            Arc::new(MemFs::new()),
            segments.clone(),
        )));
    let log = Log::open(dir.path(), opts).unwrap();
    let name = [b'b'; 500];
    for _ in 0..20_000 {
        let _ = log
            .append(&Record::new(RecordType::CREAT).name(&name))
            .unwrap();
    }
    log.close().unwrap();
    let peak = segments.peak();
    assert!(
        peak <= 6 * SEG,
        "segments reached {peak} bytes with a limit of {}",
        4 * SEG
    );
}

#[test]
fn the_size_limit_counts_the_spare_segment() {
    // Regression: the zero-filled spare was one segment beyond the limit,
    // so a log with a 256 KiB limit held up to 320 KiB of files.
    let dir = tempfile::tempdir().unwrap();
    let max = 4 * SEG;
    let log = open_zero_filled(dir.path(), retention(4, FullPolicy::EvictMostIdle));
    let mut peak = 0;
    for _ in 0..30 {
        fill(&log, 40);
        peak = peak.max(log_file_bytes(dir.path()));
    }
    // The last segment is over a quarter full, so a spare is made.
    eventually("a spare is ready", || {
        dir.path().join("spare.wlog.tmp").exists()
    });
    log.close().unwrap();
    assert!(
        dir.path().join("spare.wlog.ready").exists(),
        "the spare fits and is kept"
    );
    let after = log_file_bytes(dir.path());
    assert!(
        after <= max,
        "segments and spare hold {after} bytes after close, with a limit of {max}"
    );
    // Between passes (after every roll) the log may run a segment over.
    assert!(
        peak <= max + SEG,
        "the log's files reached {peak} bytes with a limit of {max}"
    );
}

#[test]
fn no_consumer_is_evicted_for_the_spare_segment() {
    // Where a lagging consumer's records fill the limit, the spare gives
    // way: none is made, and the consumer is evicted only when the
    // segments themselves go past the limit, as without zero fill.
    let dir = tempfile::tempdir().unwrap();
    let log = open_zero_filled(dir.path(), retention(4, FullPolicy::EvictMostIdle));
    log.register("slow", TypeMask::all()).unwrap();
    let (mut last, mut n) = (0, 0);
    while bases(dir.path()).len() < 4 {
        last = fill(&log, 10);
        n += 10;
        assert!(n < 10_000, "no fourth segment after {n} records");
    }
    // Over half of the fourth segment (about 70 records of 500 bytes):
    // a spare would have been started at a quarter.
    let fourth = *bases(dir.path()).last().unwrap();
    while last - fourth < 40 {
        last = fill(&log, 10);
    }
    std::thread::sleep(Duration::from_millis(700));
    let _ = fill(&log, 1);
    assert_eq!(bases(dir.path()).len(), 4, "still in the fourth segment");
    assert!(
        !spare_exists(dir.path()),
        "a spare was made past the limit of a lagging consumer"
    );
    assert_eq!(names(&log), ["slow"], "evicted for the spare's room");
    assert!(log_file_bytes(dir.path()) <= 4 * SEG);
    // A fifth segment is past the limit: now the policy applies.
    eventually("the consumer is evicted at the limit", || {
        let _ = fill(&log, 10);
        names(&log).is_empty()
    });
    log.close().unwrap();
}

#[test]
fn stats_beside_a_retention_pass_does_not_deadlock_the_committer() {
    // Regression: `stats` held the segment list's read lock while it took
    // the consumer lock, and retention holds the consumer lock while it
    // takes the segment list's write lock (to cache a segment's time for
    // `max_age`). Meeting, they froze the commit thread for good: every
    // durable wait hung, and so did close.
    let dir = tempfile::tempdir().unwrap();
    let fs = weir_log::fault::FaultyFs::new();
    let opts = || {
        Options::default()
            .segment_size(SEG)
            .fs(Arc::new(fs.clone()))
            .retention(Retention {
                max_age: Some(Duration::from_secs(3600)),
                ..retention(1024, FullPolicy::EvictMostIdle)
            })
    };
    let log = Log::open(dir.path(), opts()).unwrap();
    fill(&log, 1000);
    log.close().unwrap();
    // Reopened, the sealed segments' times are not cached: the first pass
    // reads a footer, slowly, with the consumer lock held.
    fs.slow_opens(Some(Duration::from_millis(50)));
    let log = Arc::new(Log::open(dir.path(), opts()).unwrap());
    let stats = {
        let log = log.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(2) {
                let _ = log.stats();
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let appender = {
        let log = log.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(2) {
                log.append_durable(&Record::new(RecordType::CREAT).name(b"x"))
                    .unwrap();
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = tx.send(());
        })
    };
    rx.recv_timeout(Duration::from_secs(30))
        .expect("durable appends hung: the committer is deadlocked");
    // Joined, not only heard from: its clone of the log must be gone
    // before the log is unwrapped below.
    appender.join().unwrap();
    stats.join().unwrap();
    fs.slow_opens(None);
    Arc::try_unwrap(log).unwrap().close().unwrap();
}

/// The announcements `dir`'s consumer state owes (see `announce` in the
/// crate): what an open would announce again.
fn owed_marks(dir: &Path) -> Vec<serde_json::Value> {
    let bytes = std::fs::read(dir.join(weir_log::CONSUMERS_FILE)).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    v.get("owed_marks")
        .map_or_else(Vec::new, |m| m.as_array().unwrap().clone())
}

#[test]
fn an_announcement_is_owed_in_the_state_until_its_mark_is_durable() {
    // The state that drops an evicted consumer, or goes with a dropped
    // segment, lists its MARK as owed, so that a power cut before the MARK
    // is durable cannot lose it (the next open announces it again); and
    // lets it go once it is, so that an open after that, or after a clean
    // close, does not announce it twice.
    for (policy, event) in [
        (FullPolicy::EvictMostIdle, "consumer-evicted"),
        (FullPolicy::DropOldest, "segment-dropped"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options::default()
            .segment_size(SEG)
            .preallocation(Preallocation::Reserve)
            .retention(retention(4, policy))
            .sync_interval(None);
        let log = Log::open(dir.path(), opts.clone()).unwrap();
        log.register("x", TypeMask::all()).unwrap();
        let announced = |log: &Log| {
            marks(log)
                .iter()
                .filter(|r| r.field("event") == Some(event.as_bytes()))
                .count()
        };
        // Past the limit while x lags.
        let mut written = 0;
        while announced(&log) == 0 {
            written += fill(&log, 100);
            assert!(written < 100_000, "{event} never announced");
        }
        // Whatever the pass that announced it owed then, every MARK is
        // durable at the next commit, and the owed list is emptied after.
        eventually("the owed list settled", || {
            owed_marks(dir.path()).is_empty()
        });
        let n = announced(&log);
        log.close().unwrap();
        assert!(
            owed_marks(dir.path()).is_empty(),
            "owed after a clean close"
        );
        let log = Log::open(dir.path(), opts).unwrap();
        std::thread::sleep(Duration::from_millis(1200));
        assert_eq!(announced(&log), n, "announced again after a clean close");
        log.close().unwrap();
    }
}

#[test]
fn an_eviction_mark_is_made_durable_at_once() {
    // Regression: the saved consumer state dropped an evicted consumer,
    // but its MARK went only into the ring, durable at the next fsync
    // anyone asked for: the sync interval's (never, without one). A power
    // cut in between kept the eviction and lost its announcement.
    use weir_log::fault::{FaultyFs, PowerCut};
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let ret = Retention {
        max_idle_records: Some(5),
        ..retention(16, FullPolicy::EvictMostIdle)
    };
    let opts = Options::default()
        .segment_size(SEG)
        .retention(ret)
        .sync_interval(None);
    let log = Log::open(dir.path(), opts.clone().fs(Arc::new(fs.clone()))).unwrap();
    log.register("x", TypeMask::all()).unwrap();
    for _ in 0..20 {
        let _ = log
            .append(&Record::new(RecordType::CREAT).name(b"a"))
            .unwrap();
    }
    log.sync().unwrap();
    eventually("x evicted and announced", || {
        names(&log).is_empty() && eviction_of(&marks(&log), "x").is_some()
    });
    let mark = eviction_of(&marks(&log), "x").unwrap().index;
    // Nothing else asks for an fsync from here on.
    eventually("the MARK durable", || log.stats().durable_index >= mark);
    fs.crash_after(0);
    drop(log);
    fs.power_cut(PowerCut::LoseAll).unwrap();
    let log = Log::open(dir.path(), opts).unwrap();
    assert!(names(&log).is_empty());
    assert!(
        eviction_of(&marks(&log), "x").is_some(),
        "the eviction survived the power cut, its announcement did not"
    );
    log.close().unwrap();
}
