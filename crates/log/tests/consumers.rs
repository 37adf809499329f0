//! Consumers: registration, masks, clearing, listing and persistence.
//!
//! A consumer is a named cursor with a type mask. These tests pin down the
//! rules callers depend on: a consumer starts after the last committed
//! record, sees only its types, clears forward only and never past the end,
//! and keeps its id, mask and cleared index across a reopen. Ids are never
//! reused, so a stale id can never name a different consumer.

use std::path::Path;

use weir_log::fs::StdFs;
use weir_log::{Error, Log, Options, Reader, Record, RecordType, TypeMask, read_consumers};

fn open(dir: &Path) -> Log {
    Log::open(dir, Options::default().segment_size(64 * 1024)).unwrap()
}

/// Appends one record of each type in `kinds`, named by its position, and
/// syncs.
fn append(log: &Log, kinds: &[RecordType]) -> Vec<u64> {
    let v: Vec<u64> = kinds
        .iter()
        .map(|&k| {
            let name = format!("{k}");
            log.append(&Record::new(k).name(name.as_bytes()))
                .unwrap()
                .index()
        })
        .collect();
    log.sync().unwrap();
    v
}

fn indexes(
    r: impl Iterator<Item = weir_log::Result<weir_log::LogRecord>>,
) -> Vec<(u64, RecordType)> {
    r.map(|x| x.map(|x| (x.index, x.kind)).unwrap()).collect()
}

const MIX: [RecordType; 6] = [
    RecordType::CREAT,
    RecordType::MKDIR,
    RecordType::UNLNK,
    RecordType::DEVICE_ADD,
    RecordType(4000),
    RecordType::MARK,
];

#[test]
fn masks_filter_consumer_and_plain_readers() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    append(&log, &MIX);
    let mask = TypeMask::parse("CREAT,UNLNK,3000-5000").unwrap();
    log.register("ns", mask.clone()).unwrap();
    log.register("all", TypeMask::all()).unwrap();
    log.register("no-marks", TypeMask::parse("-MARK").unwrap())
        .unwrap();
    // Records before registration are not the consumer's.
    let idx = append(&log, &MIX);
    let want_ns: Vec<_> = idx
        .iter()
        .zip(MIX)
        .filter(|(_, k)| mask.contains(*k))
        .map(|(&i, k)| (i, k))
        .collect();
    assert_eq!(want_ns.len(), 3);
    assert_eq!(indexes(log.consumer_reader("ns").unwrap()), want_ns);
    assert_eq!(
        indexes(log.consumer_reader("all").unwrap()).len(),
        MIX.len()
    );
    let no_marks = indexes(log.consumer_reader("no-marks").unwrap());
    assert_eq!(no_marks.len(), MIX.len() - 1);
    assert!(no_marks.iter().all(|(_, k)| *k != RecordType::MARK));
    // The same mask on a plain reader and on a reader of another process.
    let from = idx[0];
    assert_eq!(indexes(log.reader(from).with_mask(mask.clone())), want_ns);
    assert_eq!(
        indexes(Reader::open_dir(dir.path(), from).with_mask(mask)),
        want_ns
    );
    // An empty mask reads nothing but still reaches the end.
    let mut none = log.reader(1).with_mask(TypeMask::none());
    assert!(none.next().is_none());
    assert_eq!(none.position(), log.last_index() + 1);
}

#[test]
fn consumer_starts_after_the_last_committed_record_and_moves_with_clear() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    append(&log, &[RecordType::CREAT; 10]);
    let id = log.register("c", TypeMask::all()).unwrap();
    let info = &log.consumer_list()[0];
    assert_eq!(
        (info.id, info.name.as_str(), info.cleared, info.lag),
        (id, "c", 10, 0)
    );
    assert!(log.consumer_reader("c").unwrap().next().is_none());
    append(&log, &[RecordType::MKDIR; 25]);
    let info = &log.consumer_list()[0];
    assert_eq!((info.cleared, info.lag), (10, 25));
    let seen = indexes(log.consumer_reader("c").unwrap());
    assert_eq!(seen.first().map(|x| x.0), Some(11));
    assert_eq!(seen.len(), 25);
    // The consumer as the clear left it comes back from the call itself,
    // so a deregistration just after cannot turn a done clear into an
    // unknown consumer (the daemon answered 404 for it).
    let after = log.clear("c", 20).unwrap();
    assert_eq!((after.id, after.cleared, after.lag), (id, 20, 15));
    assert_eq!(log.consumer_list()[0].lag, 15);
    assert_eq!(
        log.consumer_reader("c")
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .index,
        21
    );
}

#[test]
fn clear_rules() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    log.register("c", TypeMask::all()).unwrap();
    // Nothing to clear yet: clearing "everything" is fine.
    log.clear("c", 0).unwrap();
    append(&log, &[RecordType::CREAT; 30]);
    let cleared = || log.consumer_list()[0].cleared;
    log.clear("c", 12).unwrap();
    assert_eq!(cleared(), 12);
    // Backwards is a no-op, not an error.
    log.clear("c", 5).unwrap();
    assert_eq!(cleared(), 12);
    // Beyond the end is an error and changes nothing.
    match log.clear("c", 31) {
        Err(Error::ClearBeyondEnd {
            requested: 31,
            last: 30,
        }) => {}
        other => panic!("clear beyond the end: {other:?}"),
    }
    assert_eq!(cleared(), 12);
    // 0 clears everything committed.
    assert_eq!(log.clear("c", 0).unwrap().cleared, 30);
    assert_eq!(cleared(), 30);
    assert_eq!(log.consumer_list()[0].lag, 0);
    assert!(matches!(
        log.clear("nobody", 1),
        Err(Error::UnknownConsumer(_))
    ));
    assert!(matches!(
        log.clear("nobody", 0),
        Err(Error::UnknownConsumer(_))
    ));
    assert!(matches!(
        log.consumer_reader("nobody"),
        Err(Error::UnknownConsumer(_))
    ));
    assert!(matches!(
        log.deregister("nobody"),
        Err(Error::UnknownConsumer(_))
    ));
    // Clearing persisted: a reopen keeps it.
    log.close().unwrap();
    let log = open(dir.path());
    assert_eq!(log.consumer_list()[0].cleared, 30);
}

#[test]
fn names_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    let long = "x".repeat(65);
    for bad in [
        "",
        "a b",
        "a/b",
        "../up",
        "é",
        "tab\t",
        "nul\0",
        long.as_str(),
    ] {
        match log.register(bad, TypeMask::all()) {
            Err(Error::BadConsumerName(n)) => assert_eq!(n, bad),
            other => panic!("name {bad:?} accepted: {other:?}"),
        }
    }
    for good in ["a", "A.b-c_9", &"y".repeat(64)] {
        log.register(good, TypeMask::all()).unwrap();
    }
    assert_eq!(log.consumer_list().len(), 3);
    assert!(matches!(
        log.register("a", TypeMask::none()),
        Err(Error::ConsumerExists(_))
    ));
}

#[test]
fn state_persists_and_ids_are_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    append(&log, &MIX);
    let m1 = TypeMask::parse("CREAT,UNLNK").unwrap();
    let m2 = TypeMask::parse("64-127,4000").unwrap();
    let a = log.register("a", m1.clone()).unwrap();
    let b = log.register("b", m2.clone()).unwrap();
    let c = log.register("c", TypeMask::none()).unwrap();
    assert!(a < b && b < c);
    append(&log, &MIX);
    log.clear("a", 8).unwrap();
    log.deregister("c").unwrap();
    let d = log.register("c", TypeMask::all()).unwrap();
    assert!(d > c, "id {c} of a deregistered consumer reused as {d}");
    let before: Vec<_> = log
        .consumer_list()
        .into_iter()
        .map(|x| (x.id, x.name, x.mask, x.cleared, x.registered_ns))
        .collect::<Vec<_>>();
    log.close().unwrap();
    // By the close, retention has passed "b" over the records its mask
    // excludes, up to the first it takes: 10, a DEVICE_ADD (type 64).
    let mut before = before;
    before[1].3 = 9;

    // Another process sees the same state without opening the log.
    let outside: Vec<_> = read_consumers(&StdFs, dir.path(), 12, 0)
        .unwrap()
        .into_iter()
        .map(|x| (x.id, x.name, x.mask, x.cleared, x.registered_ns))
        .collect();
    assert_eq!(outside, before);

    let log = open(dir.path());
    let after: Vec<_> = log
        .consumer_list()
        .into_iter()
        .map(|x| (x.id, x.name, x.mask, x.cleared, x.registered_ns))
        .collect();
    assert_eq!(after, before);
    assert_eq!(after[0].2, m1);
    assert_eq!(after[1].2, m2);
    assert_eq!(after[0].3, 8);
    assert!(matches!(
        log.register("b", TypeMask::all()),
        Err(Error::ConsumerExists(_))
    ));
    // The mask survived: "a" still sees only its types.
    let seen = indexes(log.consumer_reader("a").unwrap());
    assert_eq!(seen, vec![(9, RecordType::UNLNK)]);

    // Deregistering everything and reopening still never reuses an id.
    for x in ["a", "b", "c"] {
        log.deregister(x).unwrap();
    }
    assert!(log.consumer_list().is_empty());
    log.close().unwrap();
    let log = open(dir.path());
    assert!(log.consumer_list().is_empty());
    let e = log.register("e", TypeMask::all()).unwrap();
    assert!(e > d, "id reused after reopen: {e} <= {d}");
    assert_eq!(
        log.consumer_list()[0].cleared,
        12,
        "starts after the last record"
    );
}

#[test]
fn deregistered_consumer_is_gone_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    log.register("keep", TypeMask::all()).unwrap();
    log.register("drop", TypeMask::all()).unwrap();
    log.deregister("drop").unwrap();
    assert!(matches!(
        log.consumer_reader("drop"),
        Err(Error::UnknownConsumer(_))
    ));
    drop(log);
    let log = open(dir.path());
    let names: Vec<_> = log.consumer_list().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["keep"]);
}

#[test]
fn power_cut_never_makes_a_consumer_skip_new_records() {
    // Regression: `clear` accepts any committed index, including records not
    // yet durable, and consumers.json is synced at once. A power cut that
    // dropped those records left the cursor past the recovered end; their
    // indexes went to new records and the consumer silently skipped them.
    // `Log::open` now pulls cursors back to the recovered end.
    use std::sync::Arc;
    use weir_log::fault::{FaultyFs, PowerCut};
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let opts = || {
        Options::default()
            .segment_size(64 * 1024)
            .sync_interval(None)
            .fs(Arc::new(fs.clone()))
    };
    let log = Log::open(dir.path(), opts()).unwrap();
    log.register("c", TypeMask::all()).unwrap();
    append(&log, &[RecordType::CREAT; 10]);
    for _ in 0..5 {
        let _ = log.append(&Record::new(RecordType::UNLNK)).unwrap();
    }
    // Committed (readable through the writer), not durable.
    let start = std::time::Instant::now();
    while log.last_index() < 15 {
        assert!(start.elapsed().as_secs() < 10, "records never committed");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(log.consumer_reader("c").unwrap().count(), 15);
    log.clear("c", 0).unwrap();
    fs.crash_after(0);
    drop(log);
    fs.power_cut(PowerCut::LoseAll).unwrap();

    let log = Log::open(dir.path(), opts()).unwrap();
    assert_eq!(log.last_index(), 10, "the unsynced records are gone");
    let new = append(&log, &[RecordType::MKDIR; 5]);
    assert_eq!(new, [11, 12, 13, 14, 15]);
    let seen = indexes(log.consumer_reader("c").unwrap());
    assert_eq!(
        seen.len(),
        5,
        "the consumer must see the new records 11..=15: {seen:?}"
    );
}

#[test]
fn a_consumer_can_clear_the_index_append_just_returned() {
    // Regression: `clear` compared against the committed index, so
    // clearing what `append` had just returned failed with ClearBeyondEnd
    // until the committer's next batch (1 in 30 through the daemon).
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(
        dir.path(),
        Options::default()
            .segment_size(64 * 1024)
            .flush_interval(std::time::Duration::from_millis(200)),
    )
    .unwrap();
    log.register("c", TypeMask::all()).unwrap();
    let mut last = 0;
    for k in 0..100u32 {
        last = log
            .append(&Record::new(RecordType::CREAT).name(&k.to_le_bytes()))
            .unwrap()
            .index();
    }
    log.clear("c", last).unwrap();
    assert_eq!(log.consumer_list()[0].cleared, last);
    // An index not handed out yet is still beyond the end.
    assert!(matches!(
        log.clear("c", last + 1),
        Err(Error::ClearBeyondEnd { .. })
    ));
    log.close().unwrap();
}

#[test]
fn a_reader_that_outlives_its_log_does_not_keep_the_directory_locked() {
    // Regression: the writer lock lived in the state live readers share,
    // so reopening after `close` failed with Locked (by this very process)
    // while any reader of the old handle was alive.
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    append(&log, &MIX);
    let mut reader = log.reader(1);
    log.close().unwrap();
    let again = open(dir.path());
    assert_eq!(reader.next_record().unwrap().unwrap().index, 1);
    again.close().unwrap();
}

#[test]
fn registering_stops_before_the_state_file_outgrows_what_an_open_reads() {
    // Regression: consumers with masks of many ranges (every other type is
    // 32,768 of them, about 1.7 MB of the file each) were all registered
    // and saved, and at ten of them the file passed the 16 MiB an open
    // reads: the log could not be opened again without editing it.
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    let every_other: Vec<(u16, u16)> = (0..=u16::MAX).step_by(2).map(|t| (t, t)).collect();
    let mask = TypeMask::from_ranges(&every_other);
    let mut registered = Vec::new();
    let refused = loop {
        let name = format!("c{}", registered.len());
        match log.register(&name, mask.clone()) {
            Ok(_) => registered.push(name),
            Err(e) => break e,
        }
        assert!(registered.len() < 64, "no limit reached");
    };
    assert!(
        matches!(refused, Error::ConsumerStateFull { .. }),
        "{refused}"
    );
    assert!(registered.len() >= 2, "{registered:?}");
    // The refusal is about room: a consumer with a small mask still fits.
    log.register("small", TypeMask::all()).unwrap();
    registered.push("small".to_owned());
    log.close().unwrap();
    let log = open(dir.path());
    let names: Vec<String> = log.consumer_list().into_iter().map(|c| c.name).collect();
    assert_eq!(names, registered);
    log.close().unwrap();
}
