//! `since` queries: what changed under a watched root between a log index
//! and now, coalesced per path, the question backup, sync and indexing
//! tools ask (watchman's `since`).
//!
//! The answer is read from the window of records after `since` alone: the
//! tree at `since` is never replayed, so a root that held entries when its
//! watch started, or whose early records retention removed, is answered
//! too. Each name a record touches is a *link*, keyed by its directory's id
//! and its name; the first record about a link says what it held at
//! `since`, the records after it what it holds now. Paths are carried to
//! "now" and back to "at `since`" through the window's directory moves
//! ([`steps`]). Per object, links it lost and links it gained pair up as
//! renames; the rest are removals and creations.
//!
//! What the lists mean (docs/records.md, "since queries"):
//! - `created`: names that hold an object now and did not at `since`
//!   (every one, the contents of a new directory included);
//! - `removed`: names that held an object at `since` and do not now, but
//!   for those below a directory itself removed (it stands for them: a
//!   directory moved out of the tree has no record per entry);
//! - `renamed`: an object's name that moved to another directory or name;
//!   what is below a renamed directory moves with it and is not listed;
//! - `modified`: names (now) of objects present at both ends that were
//!   written or had attributes set (MTIME, SATTR), renamed ones included,
//!   under the names the window's records touched;
//! - a name whose object was replaced by another is removed and created.
//!
//! The root's own attribute changes are not listed (it has no path).

mod steps;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use weir_log::{Log, LogRecord, Reader, RecordType};

use crate::change::Change;
use crate::id::ObjectId;
use crate::record::{self, decode};
use crate::replay::{MOVED, RECONCILED, REMOVED, WATCHED};
use crate::tree::{Map, Set};
use steps::{Step, Steps};

/// The MARK of lost events, after which a comparison follows.
pub const LOST: &[u8] = b"fs events lost: tree compared";

/// Why an answer is not complete: the caller must read the tree again.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fresh {
    /// Retention removed records after `since`: the log starts at `first`.
    Retention {
        /// The log's first index.
        first: u64,
    },
    /// `since` is past the log's end (another log's index).
    Future {
        /// The log's last index.
        last: u64,
    },
    /// The root's watch started after `since` (a `fs root watched` MARK in
    /// the window): what happened before it is unknown.
    WatchStarted,
    /// The root was not watched at `since` (its last watch had ended).
    NotWatched,
    /// The root's watch ended in the window (removed or moved away).
    Ended,
    /// The kernel lost events in the window: the comparison after it
    /// restores names, not content written meanwhile.
    EventsLost,
    /// Another root on the same filesystem was watched in the window: ids
    /// alone cannot tell its records from this root's.
    SharedFilesystem,
    /// The tracker is still reading the root's tree for the first time
    /// (or reconciling it at a start): its changes are logged once it is
    /// done, so the log is not yet complete. Only a tracker knows this
    /// (the daemon's answer says it; the log read directly cannot).
    Reading,
}

impl Fresh {
    /// In words, as `why` shows it.
    pub fn why(&self) -> String {
        match self {
            Fresh::Retention { first } => {
                format!("retention removed records after since: the log starts at {first}")
            }
            Fresh::Future { last } => format!("since is past the log's end ({last})"),
            Fresh::WatchStarted => "the root's watch started after since".into(),
            Fresh::NotWatched => "the root was not watched at since".into(),
            Fresh::Ended => "the root's watch ended (removed or moved)".into(),
            Fresh::EventsLost => {
                "events were lost: names were compared, content written then is unknown".into()
            }
            Fresh::SharedFilesystem => {
                "another watched root shares the filesystem: records cannot be told apart".into()
            }
            Fresh::Reading => {
                "the root's tree is still being read: its changes are logged once it is".into()
            }
        }
    }
}

/// A rename: the name at `since` and the name now.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Renamed {
    /// The path at `since`.
    pub from: Vec<u8>,
    /// The path now.
    pub to: Vec<u8>,
}

/// What changed under a root since an index. Paths are relative to the
/// root, raw bytes, sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Changes {
    /// The root.
    pub root: PathBuf,
    /// The index asked from.
    pub since: u64,
    /// The index to ask from next time: the last one read.
    pub next: u64,
    /// Whether the answer is incomplete and the tree must be read again.
    pub fresh: bool,
    /// Why, when `fresh`.
    pub why: Option<Fresh>,
    /// Names that hold an object now and did not at `since`.
    pub created: Vec<Vec<u8>>,
    /// Names that held an object at `since` and do not now.
    pub removed: Vec<Vec<u8>>,
    /// Names of objects written or with attributes set.
    pub modified: Vec<Vec<u8>>,
    /// Objects' names moved.
    pub renamed: Vec<Renamed>,
}

/// Why a query cannot be answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The log holds no MARK of this root's watch.
    #[error("{}: the log holds no watch of this root", root.display())]
    NotWatched {
        /// The root.
        root: PathBuf,
    },
    /// Reading the log failed.
    #[error("reading the changelog")]
    Log(#[from] weir_log::Error),
}

/// What changed under `root` in `log` after index `since`.
pub fn changes(log: &Log, root: &Path, since: u64) -> Result<Changes, Error> {
    changes_from(
        log.reader(log.first_index()),
        log.first_index(),
        root,
        since,
    )
}

/// As [`changes`], from `reader` (which starts at the log's first index,
/// `first`): a log read from its directory by another process.
pub fn changes_from(reader: Reader, first: u64, root: &Path, since: u64) -> Result<Changes, Error> {
    let want = root.as_os_str().as_encoded_bytes();
    let mut reader = reader.with_mask(record::mask());
    // The root's watch as its MARKs say: its id, and whether it goes on.
    let mut ours: Option<(ObjectId, bool)> = None;
    let mut at_since: Option<Option<(ObjectId, bool)>> = None;
    // Other roots' watches, and whether one was on during the window.
    let mut others: HashMap<Vec<u8>, (ObjectId, bool)> = HashMap::new();
    let mut others_then: Vec<ObjectId> = Vec::new();
    let mut fresh: Option<Fresh> = None;
    if since.saturating_add(1) < first {
        fresh = Some(Fresh::Retention { first });
    }
    // The window's changes, applied as they are read to a query per
    // filesystem (the fsid of the change's directory): the root's id, and
    // so its filesystem, is known only at the end (its MARKs may all come
    // after some of them), and no record is kept meanwhile.
    let mut by_fs: Map<Option<[u8; 8]>, Query> = Map::default();
    while let Some(r) = reader.next_record()? {
        let in_window = r.index > since;
        if in_window && at_since.is_none() {
            at_since = Some(ours.clone());
            others_then.extend(
                others
                    .values()
                    .filter(|(_, on)| *on)
                    .map(|(o, _)| o.clone()),
            );
        }
        if r.kind != RecordType::MARK {
            if in_window && let Some(c) = decode::change(&r) {
                by_fs.entry(fsid_of(dir_of(&c))).or_default().apply(&r, &c);
            }
            continue;
        }
        if r.field("source") != Some(b"fs") {
            continue;
        }
        let Some(id) = ObjectId::from_bytes(&r.target) else {
            continue;
        };
        let watching = !(r.name == REMOVED || r.name == MOVED);
        let root_of = r.field("root").unwrap_or_default();
        if root_of != want {
            if in_window {
                others_then.push(id.clone());
            }
            others.insert(root_of.to_vec(), (id, watching));
            continue;
        }
        if in_window {
            let why = match &r.name[..] {
                n if n == WATCHED => Some(Fresh::WatchStarted),
                n if n == REMOVED || n == MOVED => Some(Fresh::Ended),
                n if n == LOST => Some(Fresh::EventsLost),
                n if n == RECONCILED => None,
                _ => None,
            };
            if let Some(w) = why {
                fresh.get_or_insert(w);
            }
        }
        ours = Some((id, watching));
    }
    let next = reader.position().saturating_sub(1);
    let at_since = at_since.unwrap_or_else(|| {
        others_then.extend(
            others
                .values()
                .filter(|(_, on)| *on)
                .map(|(o, _)| o.clone()),
        );
        ours.clone()
    });
    let Some((id, _)) = ours else {
        return Err(Error::NotWatched {
            root: root.to_path_buf(),
        });
    };
    if since > next {
        fresh.get_or_insert(Fresh::Future { last: next });
    }
    // A watch that had ended by `since` (and did not start again, which
    // is `WatchStarted`) knows nothing of what the path holds.
    if matches!(at_since, Some((_, false))) {
        fresh.get_or_insert(Fresh::NotWatched);
    }
    if others_then.iter().any(|o| same_fs(o, &id)) {
        fresh.get_or_insert(Fresh::SharedFilesystem);
    }
    let q = by_fs.remove(&fsid_of(&id)).unwrap_or_default();
    let mut out = q.finish();
    out.root = root.to_path_buf();
    out.since = since;
    out.next = next;
    out.fresh = fresh.is_some();
    out.why = fresh;
    Ok(out)
}

/// Whether an entry of kind `k` may hold others, so that its move moves
/// their paths: a directory, or one whose kind is not known.
fn may_hold(k: crate::Kind) -> bool {
    k.is_dir() || k == crate::Kind::Unknown
}

/// An id's filesystem: its fsid, the first 8 bytes.
fn fsid_of(id: &ObjectId) -> Option<[u8; 8]> {
    id.as_bytes().get(..8)?.try_into().ok()
}

/// Whether two ids are of one filesystem (their fsid).
fn same_fs(a: &ObjectId, b: &ObjectId) -> bool {
    fsid_of(a) == fsid_of(b)
}

/// The directory of change `c` (the old one, for a move out): what says
/// which filesystem, and so which root, it belongs to.
fn dir_of(c: &Change) -> &ObjectId {
    match c {
        Change::Create { parent, .. }
        | Change::Remove { parent, .. }
        | Change::Rename { parent, .. }
        | Change::MoveIn { parent, .. }
        | Change::Attr { parent, .. }
        | Change::Modify { parent, .. } => parent,
        Change::MoveOut { sparent, .. } => sparent,
    }
}

type Key = (ObjectId, Vec<u8>);

/// A name the window touched.
#[derive(Debug)]
struct Link {
    /// What it held at `since`.
    then: Option<ObjectId>,
    /// What it holds now.
    now: Option<ObjectId>,
    /// Its path at its first record, and that record's index.
    first: (Vec<u8>, u64),
    /// Its path at its last record, and that record's index.
    last: (Vec<u8>, u64),
}

/// The window read so far.
#[derive(Debug, Default)]
struct Query {
    links: Map<Key, Link>,
    steps: Steps,
    written: Set<ObjectId>,
}

impl Query {
    /// Link `key`, at `path` as of record `at`, holding `before` just
    /// before that record if this is its first.
    fn touch(&mut self, key: Key, before: Option<&ObjectId>, path: &[u8], at: u64) -> &mut Link {
        match self.links.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => {
                let l = e.into_mut();
                l.last.0.clear();
                l.last.0.extend_from_slice(path);
                l.last.1 = at;
                l
            }
            std::collections::hash_map::Entry::Vacant(e) => e.insert(Link {
                then: before.cloned(),
                now: before.cloned(),
                first: (path.to_vec(), at),
                last: (path.to_vec(), at),
            }),
        }
    }

    fn apply(&mut self, r: &LogRecord, c: &Change) {
        let at = r.index;
        let path = r.field("path").unwrap_or_default();
        match c {
            Change::Create {
                parent,
                name,
                entry,
                ..
            }
            | Change::MoveIn {
                parent,
                name,
                entry,
                ..
            } => {
                self.touch((parent.clone(), name.clone()), None, path, at)
                    .now = Some(entry.id.clone());
            }
            Change::Remove {
                parent,
                name,
                entry,
                ..
            } => {
                self.touch((parent.clone(), name.clone()), Some(&entry.id), path, at)
                    .now = None;
            }
            Change::Rename {
                sparent,
                sname,
                parent,
                name,
                entry,
                overwritten,
                exchanged,
            } => {
                let spath = r.field("spath").unwrap_or_default();
                let back = exchanged.as_ref().map(|x| x.id.clone());
                self.touch((sparent.clone(), sname.clone()), Some(&entry.id), spath, at)
                    .now = back.clone();
                let there = back
                    .clone()
                    .or_else(|| overwritten.as_ref().map(|o| o.0.id.clone()));
                self.touch((parent.clone(), name.clone()), there.as_ref(), path, at)
                    .now = Some(entry.id.clone());
                // Only a directory's move moves other paths: a file's
                // moves only its own link, whose records say where it is.
                let moves_others =
                    may_hold(entry.kind) || exchanged.as_ref().is_some_and(|x| may_hold(x.kind));
                if moves_others {
                    let mut pairs = vec![(spath.to_vec(), path.to_vec())];
                    if back.is_some() {
                        pairs.push((path.to_vec(), spath.to_vec()));
                    }
                    self.steps.push(at, Step::Move(pairs));
                }
            }
            Change::MoveOut {
                sparent,
                sname,
                entry,
                ..
            } => {
                let spath = r.field("spath").unwrap_or_default();
                self.touch((sparent.clone(), sname.clone()), Some(&entry.id), spath, at)
                    .now = None;
                if may_hold(entry.kind) {
                    self.steps.push(at, Step::Gone(spath.to_vec()));
                }
            }
            Change::Attr { parent, name, id } | Change::Modify { parent, name, id } => {
                // The root's own: no name, no path to list.
                if !name.is_empty() {
                    self.touch((parent.clone(), name.clone()), Some(id), path, at);
                    self.written.insert(id.clone());
                }
            }
        }
    }

    fn finish(self) -> Changes {
        // Per object: the names it lost and the names it gained.
        let mut lost: BTreeMap<ObjectId, Vec<Vec<u8>>> = BTreeMap::new();
        let mut gained: BTreeMap<ObjectId, Vec<Vec<u8>>> = BTreeMap::new();
        let mut kept: Vec<(ObjectId, Vec<u8>)> = Vec::new();
        for link in self.links.into_values() {
            let now_path = link
                .now
                .as_ref()
                .and_then(|_| self.steps.forward(&link.last.0, link.last.1));
            let now = now_path.as_ref().and(link.now);
            match (link.then, now) {
                (Some(a), Some(b)) if a == b => {
                    kept.push((a, now_path.unwrap_or_default()));
                }
                (then, now) => {
                    if let Some(a) = then {
                        let p = self.steps.backward(&link.first.0, link.first.1);
                        lost.entry(a).or_default().push(p);
                    }
                    if let (Some(b), Some(p)) = (now, now_path) {
                        gained.entry(b).or_default().push(p);
                    }
                }
            }
        }
        let mut out = Changes::default();
        pair(lost, gained, &self.written, &mut out);
        for (id, p) in kept {
            if self.written.contains(&id) {
                out.modified.push(p);
            }
        }
        out.removed = topmost(std::mem::take(&mut out.removed));
        out.created.sort();
        out.modified.sort();
        out.modified.dedup();
        out.renamed.sort();
        out
    }
}

/// Pairs each object's lost names with its gained ones, in path order:
/// renames; what is left over is removed or created. A renamed object
/// that was written is also modified under its new name.
pub(crate) fn pair(
    mut lost: BTreeMap<ObjectId, Vec<Vec<u8>>>,
    mut gained: BTreeMap<ObjectId, Vec<Vec<u8>>>,
    written: &Set<ObjectId>,
    out: &mut Changes,
) {
    for (id, from) in lost.iter_mut() {
        from.sort();
        let mut to = gained.remove(id).unwrap_or_default();
        to.sort();
        let n = from.len().min(to.len());
        for (f, t) in from.drain(..n).zip(to.drain(..n)) {
            if written.contains(id) {
                out.modified.push(t.clone());
            }
            out.renamed.push(Renamed { from: f, to: t });
        }
        out.removed.append(from);
        out.created.append(&mut to);
    }
    for (_, mut to) in std::mem::take(&mut gained) {
        out.created.append(&mut to);
    }
}

/// `paths` sorted, without those below another of them.
pub(crate) fn topmost(mut paths: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    paths.sort();
    paths.dedup();
    let all: Set<Vec<u8>> = paths.iter().cloned().collect();
    paths.retain(|p| {
        !p.iter()
            .enumerate()
            .any(|(i, &b)| b == b'/' && all.contains(&p[..i]))
    });
    paths
}

#[cfg(test)]
mod tests;
