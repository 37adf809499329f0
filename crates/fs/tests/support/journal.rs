//! Reading a tracker's journal back in tests: the log's replay compared
//! with the live tree (the exactness check every tracker test ends with),
//! the ids records should hold for live paths, and this source's records
//! from an index on.
//!
//! Unlike [`super::tree`], this uses weir-fs (its replay and its
//! `ObjectId`): it is what is being checked against the oracle, not the
//! oracle. The live side is still the support's own walk, and the live ids
//! come from `name_to_handle_at` and `statfs` directly.

use std::collections::HashMap;
use std::ffi::CString;
use std::path::Path;
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};
use weir_fs::{Kind, ObjectId};
use weir_log::{Log, LogRecord, Options};
use weir_sys::fanotify::fid::name_to_handle_at;

use super::tree::{Kind as LiveKind, show, snapshot};

fn kind(k: LiveKind) -> Kind {
    match k {
        LiveKind::File => Kind::File,
        LiveKind::Dir => Kind::Dir,
        LiveKind::Symlink => Kind::Symlink,
        LiveKind::Fifo => Kind::Fifo,
        LiveKind::Socket => Kind::Socket,
        LiveKind::Char => Kind::Char,
        LiveKind::Block => Kind::Block,
    }
}

/// Compares the log's view of `root` with the live tree: every name, its
/// type, its file handle and, for a non-directory, its link count. Returns
/// the differences, one line each (empty when they agree).
pub(crate) fn compare(log: &Log, root: &Path) -> Vec<String> {
    let view = weir_fs::replay::view(log, root, None)
        .expect("reading the log")
        .expect("the log describes the root from an empty start");
    let replayed = view.tree.listing();
    let live = snapshot(root);
    let mut problems = Vec::new();
    let mut links: HashMap<&ObjectId, u64> = HashMap::new();
    for e in replayed.values() {
        *links.entry(&e.id).or_default() += 1;
    }
    for (path, node) in &live {
        let Some(e) = replayed.get(path) else {
            problems.push(format!(
                "missing from the replay: {} ({:?})",
                show(path),
                node.kind
            ));
            continue;
        };
        if e.kind != kind(node.kind) {
            problems.push(format!(
                "{}: replay says {:?}, live is {:?}",
                show(path),
                e.kind,
                node.kind
            ));
        }
        let mut full = root.as_os_str().as_encoded_bytes().to_vec();
        full.push(b'/');
        full.extend_from_slice(path);
        let c = CString::new(full).expect("no NUL in a path");
        match name_to_handle_at(rustix::fs::CWD, &c, 0) {
            Ok((h, _)) => {
                if e.id.handle() != h {
                    problems.push(format!(
                        "{}: replay id {:?}, live handle {:?}",
                        show(path),
                        e.id,
                        h
                    ));
                }
            }
            Err(err) => problems.push(format!("{}: name_to_handle_at: {err}", show(path))),
        }
        if node.kind != LiveKind::Dir && links.get(&e.id).copied() != Some(node.nlink) {
            problems.push(format!(
                "{}: replay has {:?} links, live nlink {}",
                show(path),
                links.get(&e.id),
                node.nlink
            ));
        }
    }
    for path in replayed.keys() {
        if !live.contains_key(path) {
            problems.push(format!("in the replay only: {}", show(path)));
        }
    }
    problems
}

/// Panics with the differences unless the log's view of `root` is the
/// live tree ([`compare`]); `what` says which test and filesystem.
pub(crate) fn assert_replay_is_live(log: &Log, root: &Path, what: &str) {
    let problems = compare(log, root);
    assert!(
        problems.is_empty(),
        "{what}: the replay differs from the live tree ({} problems):\n{}",
        problems.len(),
        problems
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The change records (CREAT ... MTIME) after the last `fs root watched`
/// MARK of `root`, and how many of them the replay applied (for a log of
/// that root alone). A replay
/// steps over a record that does not apply (a rename from where the tree
/// has nothing), so equal counts say more than an equal tree: every record
/// followed from the ones before it.
pub(crate) fn replay_counts(log: &Log, root: &Path) -> (u64, u64) {
    let view = weir_fs::replay::view(log, root, None)
        .expect("reading the log")
        .expect("the log describes the root from an empty start");
    let after = records_from(log, view.since + 1);
    let changes = after
        .iter()
        .filter(|r| weir_fs::record::TYPES.contains(&r.kind))
        .count() as u64;
    (changes, view.replayed)
}

/// Opens (or creates) the log in `dir` with the default options.
pub(crate) fn open_log(dir: &Path) -> Arc<Log> {
    Arc::new(Log::open(dir, Options::default()).expect("open the log"))
}

/// The fsid fanotify reports for the filesystem `path` is on, as
/// `statfs(2)` gives it: `[val[0], val[1]]`. (Not for a btrfs subvolume,
/// whose events carry the top level's.)
pub(crate) fn fsid(path: &Path) -> [u32; 2] {
    let fd = rustix::fs::open(
        path,
        OFlags::PATH | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )
    .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let st = rustix::fs::fstatvfs(&fd).unwrap_or_else(|e| panic!("statfs {}: {e}", path.display()));
    // f_fsid holds val[0] in its low half.
    [st.f_fsid as u32, (st.f_fsid >> 32) as u32]
}

/// The id records should hold for the live object at `path` (not
/// following a final symlink): `fsid` and its file handle.
pub(crate) fn live_id(fsid: [u32; 2], path: &Path) -> ObjectId {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL in a path");
    let (h, _) = name_to_handle_at(rustix::fs::CWD, &c, 0)
        .unwrap_or_else(|e| panic!("name_to_handle_at {}: {e}", path.display()));
    ObjectId::from_handle(fsid, &h)
}

/// Every record of `log` from index `from` on that weir-fs writes (its
/// change types and MARKs), in log order.
pub(crate) fn records_from(log: &Log, from: u64) -> Vec<LogRecord> {
    log.reader(from)
        .with_mask(weir_fs::record::mask())
        .collect::<Result<Vec<_>, _>>()
        .expect("reading the log")
}

/// A record for messages: type, flags, name, and its fields, with every
/// byte string escaped.
pub(crate) fn describe(r: &LogRecord) -> String {
    let mut s = format!(
        "#{} {} flags={:#x} name={}",
        r.index,
        r.kind,
        r.flags,
        show(&r.name)
    );
    for (k, v) in &r.fields {
        s.push_str(&format!(" {k}={}", show(v)));
    }
    s
}

/// [`describe`] of each record, one a line.
pub(crate) fn describe_all(rs: &[LogRecord]) -> String {
    rs.iter().map(describe).collect::<Vec<_>>().join("\n")
}
