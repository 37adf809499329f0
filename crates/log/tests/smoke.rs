//! End-to-end basics: append, read back, reopen, roll segments.

use weir_log::{Log, Options, Record, RecordType};

#[test]
fn append_read_reopen_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || Options::default().segment_size(64 * 1024);
    let log = Log::open(dir.path(), opts()).unwrap();
    let mut last = 0;
    for i in 0..5000u32 {
        let name = format!("file-{i}");
        last = log
            .append(&Record::new(RecordType::CREAT).name(name.as_bytes()))
            .unwrap()
            .index();
    }
    assert_eq!(last, 5000);
    let d = log.sync().unwrap().unwrap();
    assert_eq!(d.index(), 5000);
    let recs: Vec<_> = log.reader(1).map(|r| r.unwrap()).collect();
    assert_eq!(recs.len(), 5000);
    for (k, r) in recs.iter().enumerate() {
        assert_eq!(r.index, k as u64 + 1);
        assert_eq!(r.name, format!("file-{k}").as_bytes());
    }
    assert!(log.stats().segments > 2, "{:?}", log.stats());
    log.close().unwrap();
    let log = Log::open(dir.path(), opts()).unwrap();
    assert_eq!(log.recovery().next_index, 5001, "{:?}", log.recovery());
    assert!(log.recovery().torn.is_none());
    let a = log
        .append(&Record::new(RecordType::MKDIR).name(b"d"))
        .unwrap();
    assert_eq!(a.index(), 5001);
    log.wait_durable(a).unwrap();
    let r: Vec<_> = log.reader(4990).map(|r| r.unwrap().index).collect();
    assert_eq!(r, (4990..=5001).collect::<Vec<_>>());
    drop(log);
    let r: Vec<_> = weir_log::Reader::open_dir(dir.path(), 1)
        .map(|r| r.unwrap().index)
        .collect();
    assert_eq!(r.len(), 5001);
    let v = weir_log::verify(&weir_log::fs::StdFs, dir.path(), |_, _| {}).unwrap();
    assert!(v.problem.is_none(), "{v:?}");
    assert_eq!(v.last_index, 5001);
}

#[test]
fn stats_count_the_commit_threads_cpu_time() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), Options::default()).unwrap();
    // After a sync the commit thread has certainly started.
    let _ = log.append(&Record::new(RecordType::MARK)).unwrap();
    log.sync().unwrap();
    let Some(before) = log.stats().committer_cpu_ns else {
        eprintln!("skipped: no /proc/self/task/TID/schedstat here");
        return;
    };
    for i in 0..200_000u32 {
        let _ = log
            .append(&Record::new(RecordType::CREAT).name(&i.to_le_bytes()))
            .unwrap();
    }
    log.sync().unwrap();
    let after = log.stats().committer_cpu_ns.unwrap();
    // Sealing and writing 200,000 records takes the committer well over
    // a millisecond of CPU (about 18 ms in a release build on the test VM,
    // 80 ms in a debug one).
    assert!(after >= before + 1_000_000, "{before} -> {after} ns");
    log.close().unwrap();
}

#[test]
fn waiting_on_an_index_another_log_handed_out_is_an_error() {
    // Regression: `Appended` is not tied to its log, and a wait on an index
    // this log had not handed out blocked until close (or until another
    // record took that index), with the committer spinning meanwhile.
    let a_dir = tempfile::tempdir().unwrap();
    let b_dir = tempfile::tempdir().unwrap();
    let a = Log::open(a_dir.path(), Options::default()).unwrap();
    let b = Log::open(b_dir.path(), Options::default()).unwrap();
    let mut last = None;
    for k in 0..100u32 {
        last = Some(
            a.append(&Record::new(RecordType::CREAT).name(&k.to_le_bytes()))
                .unwrap(),
        );
    }
    let foreign = last.unwrap();
    let b = std::sync::Arc::new(b);
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = b.clone();
    let waiting = std::thread::spawn(move || {
        let _ = tx.send(waiter.wait_durable(foreign).map(|d| d.index()));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(10)) {
        Ok(Err(weir_log::Error::NotAppended { index, next })) => {
            assert_eq!((index, next), (100, 1))
        }
        other => panic!("expected NotAppended at once, got {other:?}"),
    }
    waiting.join().unwrap();
    let b = std::sync::Arc::try_unwrap(b).unwrap();
    // Its own records still wait as before.
    let own = b
        .append(&Record::new(RecordType::CREAT).name(b"own"))
        .unwrap();
    assert_eq!(b.wait_durable(own).unwrap().index(), 1);
    a.close().unwrap();
    b.close().unwrap();
}
