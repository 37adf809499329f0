//! The log's side of the checks: its consistency (`weir log verify`), and
//! a replay of its MOUNT_* records per mount id against the kernel's
//! table.

use std::collections::BTreeMap;
use std::path::Path;

use weir_log::{FLAG_RECONCILED, LogRecord, Reader, RecordType};

use crate::daemon_child::{bytes, ok, weir};

/// The MOUNT_* records flagged reconciled after index `after`.
pub(crate) fn reconciled_after(state: &Path, after: u64) -> usize {
    Reader::open_dir(state.join("log"), after + 1)
        .map(|r| r.expect("read the log"))
        .filter(|r| is_mount(r.kind) && r.flags & FLAG_RECONCILED != 0)
        .count()
}

fn is_mount(kind: RecordType) -> bool {
    [
        RecordType::MOUNT_ATTACH,
        RecordType::MOUNT_DETACH,
        RecordType::MOUNT_MOVE,
        RecordType::MOUNT_CHANGE,
    ]
    .contains(&kind)
}

/// `weir --direct log verify`: every CRC, the index continuity.
pub(crate) fn verify_log(socket: &Path, state: &Path) {
    let mut cmd = weir(socket, &["--direct", "--state-dir"]);
    cmd.arg(state).args(["log", "verify"]);
    let out = String::from_utf8(ok(cmd)).unwrap();
    assert!(out.contains(": ok") && !out.contains("BAD"), "{out}");
}

/// What a replay of the log found.
pub(crate) struct Replay {
    /// MOUNT_* records replayed.
    pub(crate) records: usize,
    /// Of which flagged reconciled.
    pub(crate) reconciled: usize,
    /// Mounts live at the end.
    pub(crate) live: usize,
}

/// Replays every MOUNT_* record of the log, per mount id, and compares the
/// mounts it leaves with the kernel's under `base`, read now.
pub(crate) fn check_replay(state: &Path, base: &Path, backend: &str) -> Replay {
    let records: Vec<LogRecord> = Reader::open_dir(state.join("log"), 1)
        .collect::<Result<_, _>>()
        .expect("read the whole log");
    for (k, r) in records.iter().enumerate() {
        assert_eq!(r.index, k as u64 + 1, "the log's indexes have a gap");
    }
    let mut live: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let (mut replayed, mut reconciled) = (0, 0);
    for r in &records {
        let kind = r.kind;
        if !is_mount(kind) {
            continue;
        }
        replayed += 1;
        if r.flags & FLAG_RECONCILED != 0 {
            reconciled += 1;
        }
        let id = u64::from_be_bytes(
            r.target
                .as_slice()
                .try_into()
                .unwrap_or_else(|_| panic!("index {}: a mount id of 8 bytes: {r:?}", r.index)),
        );
        let at = |what: &str| {
            format!(
                "index {} ({kind:?}, flags {:#x}): mount {id} {what}",
                r.index, r.flags
            )
        };
        if kind == RecordType::MOUNT_ATTACH {
            let before = live.insert(id, r.name.clone());
            assert!(
                before.is_none(),
                "{}",
                at("attached twice without a detach")
            );
        } else if kind == RecordType::MOUNT_DETACH {
            assert!(
                live.remove(&id).is_some(),
                "{}",
                at("detached but not attached")
            );
        } else {
            let name = live
                .get_mut(&id)
                .unwrap_or_else(|| panic!("{}", at("changed but not attached")));
            if kind == RecordType::MOUNT_MOVE {
                name.clone_from(&r.name);
            }
        }
    }
    let choice = backend.parse().expect("a backend name");
    let mut under = bytes(base).to_vec();
    under.push(b'/');
    let kernel: BTreeMap<u64, Vec<u8>> = weir_mounts::snapshot(choice)
        .expect("read the mount table")
        .mounts
        .into_iter()
        .filter(|m| m.mount_point.starts_with(&under))
        .map(|m| (m.id, m.mount_point.into_vec()))
        .collect();
    if live != kernel {
        // How many differ, and the first few.
        let show = |m: &BTreeMap<u64, Vec<u8>>, other: &BTreeMap<u64, Vec<u8>>| {
            let only: Vec<String> = m
                .iter()
                .filter(|(id, p)| other.get(id) != Some(p))
                .map(|(id, p)| format!("{id} {}", String::from_utf8_lossy(p)))
                .collect();
            format!("{}, first {:?}", only.len(), &only[..only.len().min(10)])
        };
        panic!(
            "the log's mounts are not the kernel's: only in the log {}; only in the kernel {}",
            show(&live, &kernel),
            show(&kernel, &live)
        );
    }
    Replay {
        records: replayed,
        reconciled,
        live: live.len(),
    }
}
