//! Group commit: the durable writers one fsync released are served together
//! by the next, and the committer's wait for them ends when the last of
//! them is back, not at its deadline.

use std::sync::Arc;
use std::time::Duration;

use weir_log::fault::FaultyFs;
use weir_log::{Log, Options, Record, RecordType};

const WRITERS: u64 = 4;
const ROUNDS: u64 = 20;

/// [`WRITERS`] threads each append [`ROUNDS`] records durably, pausing
/// `pause` after each.
fn write_durably(log: &Log, pause: Duration) {
    std::thread::scope(|s| {
        for t in 0..WRITERS {
            s.spawn(move || {
                let name = format!("writer {t}");
                for _ in 0..ROUNDS {
                    let rec = Record::new(RecordType::MARK).name(name.as_bytes());
                    log.append_durable(&rec).unwrap();
                    if !pause.is_zero() {
                        std::thread::sleep(pause);
                    }
                }
            });
        }
    });
}

#[test]
fn the_last_writer_back_ends_the_group_commit_wait() {
    // Guards the wake in the group-commit wait: the writer whose durable
    // wait completes the count the committer waits for must wake it
    // (`Signals::gather_target`). Without that wake every wait that outlasts
    // the committer's short spin runs to its deadline unless something
    // else wakes the committer.
    //
    // The deadline is half the fsync's cost: 50 ms here, with 100 ms
    // fsyncs and the bound raised from its 2 ms default. The writers are
    // back within about 0.3 ms, so only a machine that stalls a thread for
    // 50 ms makes a wait with the wake run to its deadline. (With the
    // default bound, a CI host under load stalled writers past 2 ms in 29
    // of 45 waits.)
    let fs = FaultyFs::new();
    fs.slow_syncs(Some(Duration::from_millis(100)));
    let dir = tempfile::tempdir().unwrap();
    let options = Options::default()
        .fs(Arc::new(fs.clone()))
        .group_commit_wait(Duration::from_secs(1));
    let log = Log::open(dir.path(), options).unwrap();
    // Long enough that the committer's spin is over and it sleeps: only a
    // wake ends the wait before its deadline.
    write_durably(&log, Duration::from_micros(300));
    let st = log.stats();
    assert_eq!(st.durable_index, WRITERS * ROUNDS, "{st:?}");
    // Most fsyncs serve every writer, so there are about ROUNDS of them,
    // each after a wait for the writers to come back.
    assert!(
        st.group_commit_waits >= ROUNDS / 2,
        "only {} group-commit waits in {} fsyncs",
        st.group_commit_waits,
        st.syncs
    );
    assert!(
        st.group_commit_deadlines * 4 <= st.group_commit_waits,
        "{} of {} group-commit waits ran to their deadline",
        st.group_commit_deadlines,
        st.group_commit_waits
    );
    log.close().unwrap();
}

#[test]
fn a_zero_group_commit_wait_never_waits() {
    let fs = FaultyFs::new();
    fs.slow_syncs(Some(Duration::from_millis(5)));
    let dir = tempfile::tempdir().unwrap();
    let options = Options::default()
        .fs(Arc::new(fs.clone()))
        .group_commit_wait(Duration::ZERO);
    let log = Log::open(dir.path(), options).unwrap();
    write_durably(&log, Duration::ZERO);
    let st = log.stats();
    assert_eq!(st.durable_index, WRITERS * ROUNDS, "{st:?}");
    assert_eq!(st.group_commit_waits, 0, "{st:?}");
    log.close().unwrap();
}
