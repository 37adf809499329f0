//! The barrier: 1000 rounds of (mount, `weir sync`, query) over the
//! API, and the mount is always there.
//!
//! In a private mount namespace: `weir run` with the fanotify backend for
//! 500 rounds, then restarted with `--mounts-backend mountinfo` (polling
//! under its CPU budget) for 500 more. Each round mounts a tmpfs or a bind
//! mount on a fresh directory, runs the `weir sync` binary against the
//! daemon, then asks `GET /v1/mounts?format=json` through the weir-client
//! library and requires the new mount point in the answer. Every 100 rounds
//! it unmounts 90 of those 100 mounts, syncs, and requires them gone and
//! the other 10 still there.
//!
//! Needs root and unshare; skipped (with a message) otherwise.

#[path = "support/child_lines.rs"]
mod child_lines;
#[path = "support/daemon_child.rs"]
#[allow(dead_code)]
mod daemon_child;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use daemon_child::{Daemon, Scratch, bytes, client, in_private_namespace, status, sync};

/// Rounds per backend.
const ROUNDS: usize = 500;
/// Rounds between two unmount batches.
const BATCH: usize = 100;
/// Of each batch, every `KEEP`-th mount stays.
const KEEP: usize = 10;

#[test]
fn a_mount_made_before_weir_sync_is_always_in_the_answer() {
    if !in_private_namespace("a_mount_made_before_weir_sync_is_always_in_the_answer") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let state = dir.join("state");
    let socket = dir.join("weir.sock");
    let scratch = Scratch::mount(&dir.join("mnt"));
    let src = scratch.path().join("src");
    std::fs::create_dir(&src).unwrap();

    for backend in ["fanotify", "mountinfo"] {
        let t = Instant::now();
        let daemon = Daemon::start(
            &state,
            &socket,
            &["--devices-enabled", "false", "--mounts-backend", backend],
        );
        let mut api = client(&socket);
        let st = status(&mut api);
        assert_eq!(st["mounts"]["backend"].as_str(), Some(backend), "{st}");
        let first = st["log"]["last_index"].as_u64().unwrap() + 1;
        let base = scratch.path().join(backend);
        let mut synced = Vec::new();
        let mut kept = Vec::new();
        let mut batch = Vec::new();
        for round in 0..ROUNDS {
            let p = base.join(format!("m{round}"));
            std::fs::create_dir_all(&p).unwrap();
            mount(&p, &src, round);
            let index = sync(&socket);
            let there = mount_points(&mut api);
            assert!(
                there.contains(bytes(&p)),
                "{backend} round {round}: {p:?} is not in /v1/mounts after weir sync \
                 (index {index})"
            );
            synced.push((bytes(&p).to_vec(), index));
            batch.push(p);
            if batch.len() == BATCH {
                unmount_batch(&socket, &mut api, &mut batch, &mut kept, backend, round);
            }
        }
        let st = status(&mut api);
        drop(api);
        daemon.stop();
        logged_before_the_barrier(&state, first, &synced, backend);
        eprintln!(
            "{backend}: {ROUNDS} rounds in {:?}; {} kept mounted; mount tracker: {}",
            t.elapsed(),
            kept.len(),
            st["mounts"]
        );
    }
}

/// Each mount's MOUNT_ATTACH, from index `first` on, is at or below the
/// index the `weir sync` after it returned: the barrier's index covers it.
fn logged_before_the_barrier(state: &Path, first: u64, synced: &[(Vec<u8>, u64)], backend: &str) {
    let mut attached = std::collections::BTreeMap::new();
    for r in weir_log::Reader::open_dir(state.join("log"), first) {
        let r = r.expect("read the log");
        if r.kind == weir_log::RecordType::MOUNT_ATTACH {
            attached.entry(r.name).or_insert(r.index);
        }
    }
    for (name, index) in synced {
        let path = String::from_utf8_lossy(name);
        let at = attached
            .get(name)
            .unwrap_or_else(|| panic!("{backend}: no MOUNT_ATTACH for {path}"));
        assert!(
            at <= index,
            "{backend}: {path} attached at index {at}, after the barrier's {index}"
        );
    }
}

/// A tmpfs on even rounds, a bind mount of `src` on odd ones.
fn mount(p: &Path, src: &Path, round: usize) {
    let r = if round.is_multiple_of(2) {
        rustix::mount::mount(
            "weirbarrier",
            p,
            "tmpfs",
            rustix::mount::MountFlags::empty(),
            None,
        )
    } else {
        rustix::mount::mount_bind(src, p)
    };
    r.unwrap_or_else(|e| panic!("mount on {p:?}: {e}"));
}

/// Unmounts all of `batch` but every `KEEP`-th mount (moved to `kept`),
/// syncs, and checks the daemon's answer: the unmounted gone, every kept
/// one there.
fn unmount_batch(
    socket: &Path,
    api: &mut weir_client::Client,
    batch: &mut Vec<PathBuf>,
    kept: &mut Vec<PathBuf>,
    backend: &str,
    round: usize,
) {
    let mut gone = Vec::new();
    for (i, p) in batch.drain(..).enumerate() {
        if i.is_multiple_of(KEEP) {
            kept.push(p);
        } else {
            rustix::mount::unmount(&p, rustix::mount::UnmountFlags::empty())
                .unwrap_or_else(|e| panic!("umount {p:?}: {e}"));
            gone.push(p);
        }
    }
    let index = sync(socket);
    let there = mount_points(api);
    for p in &gone {
        assert!(
            !there.contains(bytes(p)),
            "{backend} round {round}: {p:?} still in /v1/mounts after umount and weir sync \
             (index {index})"
        );
    }
    for p in kept.iter() {
        assert!(
            there.contains(bytes(p)),
            "{backend} round {round}: kept {p:?} missing from /v1/mounts (index {index})"
        );
    }
}

/// The mount points `GET /v1/mounts?format=json` lists.
fn mount_points(api: &mut weir_client::Client) -> BTreeSet<Vec<u8>> {
    let mut body = Vec::new();
    api.get_text("/v1/mounts?format=json", &mut body)
        .expect("GET /v1/mounts");
    let list: Vec<serde_json::Value> = serde_json::from_slice(&body).expect("a JSON array");
    list.iter()
        .map(|m| match &m["mount_point"] {
            serde_json::Value::String(s) => s.as_bytes().to_vec(),
            serde_json::Value::Array(a) => a
                .iter()
                .map(|b| {
                    b.as_u64()
                        .and_then(|b| u8::try_from(b).ok())
                        .expect("a byte")
                })
                .collect(),
            other => panic!("a mount point: {other}"),
        })
        .collect()
}
