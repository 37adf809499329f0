//! The durable-wait counters in `Stats`: how many durable waits there
//! were, and how many of them slept on the futex rather than polled.
//!
//! A waiter polls (yielding the CPU) only where the last fsync took at most
//! 1 ms. So slow fsyncs make every wait after the first sleep, whatever the
//! machine's load, and instant ones let a lone writer see its record while
//! it polls, at least now and then on a loaded machine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_log::fault::FaultyFs;
use weir_log::mem::MemFs;
use weir_log::{Log, Options, Record, RecordType};

fn mark(i: u64) -> Vec<u8> {
    format!("record {i}").into_bytes()
}

#[test]
fn waiters_sleep_when_fsyncs_are_slow() {
    let fs = FaultyFs::new();
    fs.slow_syncs(Some(Duration::from_millis(5)));
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), Options::default().fs(Arc::new(fs.clone()))).unwrap();
    const N: u64 = 5;
    for i in 0..N {
        log.append_durable(&Record::new(RecordType::MARK).name(&mark(i)))
            .unwrap();
    }
    let st = log.stats();
    // Every record was not yet durable when its writer began to wait.
    assert_eq!(st.durable_waits, N, "{st:?}");
    // The first wait may poll, as no fsync has been timed yet; a poll that
    // lost the CPU for the whole fsync may then find the record durable.
    // Every later one knows fsyncs take 5 ms and sleeps at once.
    assert!(st.durable_sleeps >= N - 1, "{st:?}");
    assert!(st.durable_sleeps <= st.durable_waits, "{st:?}");
    log.close().unwrap();
}

#[test]
fn a_lone_writer_on_instant_fsyncs_polls() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), Options::default().fs(Arc::new(MemFs::new()))).unwrap();
    // A wait ends in its poll when the committer writes and syncs the
    // record within 1 ms. Other tests may hold both CPUs for a while, so
    // the writer keeps trying: one polled wait is enough.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut i = 0;
    let st = loop {
        log.append_durable(&Record::new(RecordType::MARK).name(&mark(i)))
            .unwrap();
        i += 1;
        let st = log.stats();
        if st.durable_sleeps < st.durable_waits || Instant::now() > deadline {
            break st;
        }
    };
    assert!(st.durable_waits > 0, "{st:?}");
    assert!(
        st.durable_sleeps < st.durable_waits,
        "all {} durable waits slept in {i} appends: {st:?}",
        st.durable_waits
    );
    log.close().unwrap();
}

/// A request for durability returns at once, counts no durable wait,
/// and still gets the record fsynced soon, with no periodic sync to
/// wait for.
#[test]
fn a_request_for_durability_is_served_without_a_waiter() {
    let fs = FaultyFs::new();
    fs.slow_syncs(Some(Duration::from_millis(5)));
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default().fs(Arc::new(fs.clone()));
    o.sync_interval = None;
    let log = Log::open(dir.path(), o).unwrap();
    let a = log
        .append(&Record::new(RecordType::MARK).name(&mark(1)))
        .unwrap();
    assert!(matches!(
        log.request_durable(a.index() + 1),
        Err(weir_log::Error::NotAppended { .. })
    ));
    log.request_durable(a.index()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while log.durable_index() < a.index() {
        assert!(Instant::now() < deadline, "never made durable");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(log.stats().durable_waits, 0);
    // Asking again for what is durable is a no-op.
    log.request_durable(a.index()).unwrap();
    log.close().unwrap();
}
