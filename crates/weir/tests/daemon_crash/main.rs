//! A crash: SIGKILL the daemon during a storm and restart it; the
//! log is consistent, and the final inventory matches the system.
//!
//! In a private mount namespace, for each mount backend (fanotify, then
//! mountinfo under its CPU budget), three rounds on one state directory: a
//! storm of 600 bind mounts and 200 unmounts (raw mount(2)/umount2(2))
//! under a tmpfs runs in a thread while the daemon tracks it; the daemon is
//! SIGKILLed once it has counted a round-specific number of changes (early,
//! middle, late; the storm waits near its end for the kill, so the kill
//! always lands inside it), the storm finishes unwatched, and the daemon
//! restarts on the same state directory and socket, then `weir sync`. In
//! the middle round the storm holds until a checkpoint is written, so the
//! restart replays the log's tail after a mid-storm checkpoint; in the last
//! round four starts are killed 2-20 ms after their spawn (in start-up or
//! reconciliation) before the one that is kept. After each round:
//!
//! - `weir --direct log verify` finds no problem (every CRC, the indexes);
//! - replaying every MOUNT_* record in the log (those logged during the
//!   storm and the reconciled ones alike) attaches no id twice and detaches
//!   none that is not attached, and leaves exactly the mounts the kernel has
//!   under the tmpfs, by id and mount point: nothing missed, nothing
//!   duplicated; and some records after the kill are flagged reconciled;
//! - `weir mounts --json` and `weir devices --json` through the daemon print
//!   the same bytes as `--direct`.
//!
//! Needs root and unshare; skipped (with a message) otherwise.

#[path = "../support/child_lines.rs"]
mod child_lines;
#[path = "../support/daemon_child.rs"]
#[allow(dead_code)]
mod daemon_child;
mod kill;
mod listings;
mod replay;
mod storm;

use std::path::Path;
use std::time::{Duration, Instant};

use daemon_child::{Daemon, Scratch, client, in_private_namespace, status, sync};
use kill::{last_on_disk, storm_and_kill};
use listings::same_bytes;
use replay::{check_replay, reconciled_after, verify_log};

/// Bind mounts per round.
const MOUNTS: usize = 600;
/// Of which every third is unmounted again: 200 per round.
const UNMOUNT_EVERY: usize = 3;
/// Per round: the changes the daemon has counted (since the round began)
/// when it is killed: early, in the middle, late.
const KILL_AFTER: [u64; 3] = [150, 400, 650];
/// The round whose storm holds at [`storm::HOLD`] operations until a
/// checkpoint is written (every second, with `--daemon-checkpoint-secs 1`).
const HOLD_ROUND: usize = 1;
/// The round whose restart is killed a few times while starting first,
/// these many ms after the spawn.
const START_KILL_ROUND: usize = 2;
const START_KILLS_MS: [u64; 4] = [2, 5, 10, 20];

#[test]
fn sigkill_during_a_storm_loses_and_repeats_nothing() {
    if !in_private_namespace("sigkill_during_a_storm_loses_and_repeats_nothing") {
        return;
    }
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let scratch = Scratch::mount(&dir.join("storm"));
    let src = scratch.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for backend in ["fanotify", "mountinfo"] {
        let base = scratch.path().join(backend);
        std::fs::create_dir(&base).unwrap();
        crash_rounds(&dir.join(backend), &base, &src, backend);
    }
    eprintln!("done in {:?}", started.elapsed());
}

/// The rounds on one backend, with their own state directory `dir` and
/// storms under `base` (which exists before the first start, so the daemon
/// reads it and logs no ATTACH for it).
fn crash_rounds(dir: &Path, base: &Path, src: &Path, backend: &str) {
    let state = dir.join("state");
    let socket = dir.join("weir.sock");
    let flags = ["--mounts-backend", backend, "--daemon-checkpoint-secs", "1"];
    let mut daemon = Daemon::start(&state, &socket, &flags);
    let st = status(&mut client(&socket));
    assert_eq!(st["mounts"]["backend"].as_str(), Some(backend), "{st}");
    for (round, &kill_after) in KILL_AFTER.iter().enumerate() {
        let t = Instant::now();
        let kill = storm_and_kill(daemon, &state, &socket, base, src, round, kill_after);
        let disk = last_on_disk(&state);
        if round == START_KILL_ROUND {
            for ms in START_KILLS_MS {
                Daemon::kill_while_starting(&state, &socket, &flags, Duration::from_millis(ms));
            }
        }
        daemon = Daemon::start(&state, &socket, &flags);
        let index = sync(&socket);
        let st = status(&mut client(&socket));
        assert!(st["mounts"]["running"] == true, "{}", st["mounts"]);
        let reconciled = reconciled_after(&state, disk.index);
        verify_log(&socket, &state);
        let replay = check_replay(&state, base, backend);
        same_bytes(&socket, backend);
        eprintln!(
            "{backend} round {round}: SIGKILL {:?} into the storm, at op {} of {}, {} changes \
             counted this round, log index {}; on disk up to {} (written {:.1} ms before the \
             kill); checkpoint mid-storm at {:?}; the restarts reconciled {reconciled}; sync \
             index {index}; the log replays to {} MOUNT_* records ({} reconciled), {} mounts \
             live under the tmpfs; round {:?}",
            kill.after,
            kill.ops,
            MOUNTS + MOUNTS / UNMOUNT_EVERY,
            kill.logged,
            kill.last_index,
            disk.index,
            kill.at_ns.saturating_sub(disk.time_ns) as f64 / 1e6,
            kill.checkpoint,
            replay.records,
            replay.reconciled,
            replay.live,
            t.elapsed()
        );
        // The storm went on after the kill: the restarts found changes.
        assert!(
            reconciled > 0,
            "{backend} round {round}: nothing reconciled"
        );
    }
    daemon.stop();
    // After a clean stop: still consistent, and nothing more to say.
    verify_log(&socket, &state);
    check_replay(&state, base, backend);
}
