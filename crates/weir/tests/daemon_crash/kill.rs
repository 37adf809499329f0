//! One round's storm and kill: the storm runs in a thread while the main
//! thread watches the daemon's counters, holds the storm for a checkpoint
//! when the round asks, and SIGKILLs the daemon at the round's point.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use weir_log::{LogRecord, Reader};

use crate::daemon_child::{Daemon, client, status};
use crate::storm::{GATE, HOLD, Progress, storm};
use crate::{HOLD_ROUND, MOUNTS};

/// What the kill interrupted.
pub(crate) struct Kill {
    /// Changes the daemon had counted this round, by its last status.
    pub(crate) logged: u64,
    /// The log's last index then (appended, not necessarily written out).
    pub(crate) last_index: u64,
    /// The storm's operations done.
    pub(crate) ops: usize,
    /// Since the storm began.
    pub(crate) after: Duration,
    /// Wall-clock time of the kill, ns since the epoch.
    pub(crate) at_ns: u64,
    /// The mount checkpoint's log index, when one was written mid-storm.
    pub(crate) checkpoint: Option<u64>,
}

/// Waits for a checkpoint written after `since_ns` whose mount table
/// covers records after `index`; returns its log index.
fn wait_checkpoint(state: &Path, index: u64, since_ns: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let c =
            weir_daemon::checkpoint::read(&state.join("inventory")).expect("read the checkpoint");
        if let Some(m) = c.filter(|c| c.written_ns > since_ns).and_then(|c| c.mounts)
            && m.log_index > index
        {
            return m.log_index;
        }
        assert!(Instant::now() < deadline, "no checkpoint during the storm");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs round `round`'s storm under `base` while the daemon tracks it, and
/// SIGKILLs the daemon once it has counted `kill_after` changes this round
/// (or the storm reaches its gate). The storm has ended on return.
pub(crate) fn storm_and_kill(
    daemon: Daemon,
    state: &Path,
    socket: &Path,
    base: &Path,
    src: &Path,
    round: usize,
    kill_after: u64,
) -> Kill {
    let dirs: Vec<PathBuf> = (0..MOUNTS)
        .map(|i| base.join(format!("r{round}/d{i}")))
        .collect();
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut c = client(socket);
    let counts = |c: &mut weir_client::Client| {
        let st = status(c);
        (
            st["mounts"]["changes"].as_u64().unwrap(),
            st["log"]["last_index"].as_u64().unwrap(),
        )
    };
    let (base_changes, _) = counts(&mut c);

    let (_, base_index) = counts(&mut c);
    let progress = Arc::new(Progress::default());
    let hold = round == HOLD_ROUND;
    let began = Instant::now();
    let storm = {
        let (p, src) = (progress.clone(), src.to_owned());
        std::thread::spawn(move || storm(&dirs, &src, hold, &p))
    };
    let ops = || progress.ops.load(Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut checkpoint = None;
    let (logged, last_index) = loop {
        if hold && checkpoint.is_none() && ops() >= HOLD {
            // Held mid-storm until a checkpoint covers part of it, so that
            // the restart replays the log's tail after a mid-storm
            // checkpoint.
            checkpoint = Some(wait_checkpoint(state, base_index, now_ns()));
            progress.checkpointed.store(true, Ordering::SeqCst);
        }
        let (n, last) = counts(&mut c);
        let n = n - base_changes;
        if n >= kill_after || ops() >= GATE || storm.is_finished() {
            break (n, last);
        }
        assert!(
            Instant::now() < deadline,
            "the daemon logged only {n} changes"
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    drop(c);
    let ops_done = ops();
    let after = began.elapsed();
    let at_ns = now_ns();
    daemon.kill();
    progress.killed.store(true, Ordering::SeqCst);
    storm.join().expect("the storm");
    Kill {
        logged,
        last_index,
        ops: ops_done,
        after,
        at_ns,
        checkpoint,
    }
}

fn now_ns() -> u64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    u64::try_from(d.as_nanos()).unwrap()
}

/// The last record a killed daemon's log holds on disk (reading stops at a
/// torn tail, which the next start drops).
pub(crate) fn last_on_disk(state: &Path) -> LogRecord {
    Reader::open_dir(state.join("log"), 1)
        .map_while(Result::ok)
        .last()
        .expect("records on disk")
}
