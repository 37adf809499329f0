//! Group commit: the durable writers one fsync released are served together
//! by the next, and the committer's wait for them ends when the last of
//! them is back, not at its deadline.

use std::sync::Arc;
use std::time::Duration;

use weir_log::fault::FaultyFs;
use weir_log::{Log, Options, Record, RecordType};

const WRITERS: u64 = 4;
const ROUNDS: u64 = 40;

#[test]
fn the_last_writer_back_ends_the_group_commit_wait() {
    // Guards the wake in the group-commit wait: the writer whose durable
    // wait completes the count the committer waits for must wake it
    // (`Inner::gather_target`). Without that wake every wait that outlasts
    // the committer's short spin runs to its deadline: here 2 ms (half the
    // 8 ms fsync, capped), against writers back within about 0.3 ms.
    let fs = FaultyFs::new();
    fs.slow_syncs(Some(Duration::from_millis(8)));
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), Options::default().fs(Arc::new(fs.clone()))).unwrap();
    std::thread::scope(|s| {
        for t in 0..WRITERS {
            let log = &log;
            s.spawn(move || {
                let name = format!("writer {t}");
                for _ in 0..ROUNDS {
                    let rec = Record::new(RecordType::MARK).name(name.as_bytes());
                    log.append_durable(&rec).unwrap();
                    // Long enough that the committer's spin is over and it
                    // sleeps: only a wake ends the wait before its deadline.
                    std::thread::sleep(Duration::from_micros(300));
                }
            });
        }
    });
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
    // A writer delayed past the deadline by a busy machine ends a wait
    // there too, so a few are allowed: 0-2 of 40 here. With the wake
    // removed, 16-19 of 39 did.
    assert!(
        st.group_commit_deadlines * 4 <= st.group_commit_waits,
        "{} of {} group-commit waits ran to their deadline",
        st.group_commit_deadlines,
        st.group_commit_waits
    );
    log.close().unwrap();
}
