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

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use weir_log::{Log, Reader, RecordRef, RecordType};

use crate::change::Change;
use crate::id::ObjectId;
use crate::record::{self, decode};
use crate::replay::{MOVED, REMOVED, WATCHED};
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
    let first = log.first_index();
    let window = log.last_index().saturating_sub(since);
    query(log.reader(first), first, root, since, window)
}

/// As [`changes`], from `reader` (which starts at the log's first index,
/// `first`): a log read from its directory by another process.
pub fn changes_from(reader: Reader, first: u64, root: &Path, since: u64) -> Result<Changes, Error> {
    query(reader, first, root, since, 0)
}

/// The query, with room made for the names of `window` records: one
/// table grown a record at a time would be copied over and over.
fn query(
    reader: Reader,
    first: u64,
    root: &Path,
    since: u64,
    window: u64,
) -> Result<Changes, Error> {
    let mut reader = reader.with_mask(record::mask());
    let mut read = Read::new(root, since, window);
    if since.saturating_add(1) < first {
        read.fresh = Some(Fresh::Retention { first });
    }
    // Each record is looked at once, borrowed from the reader's buffer.
    reader.for_each_record(|r| read.record(r))?;
    let next = reader.position().saturating_sub(1);
    read.finish(next)
}

/// At most this many names are made room for ahead: a hint, not a limit.
const RESERVE_MAX: u64 = 1 << 20;

/// The log as read so far for a query.
struct Read<'a> {
    /// The root, as its MARKs name it.
    root: &'a Path,
    since: u64,
    /// The root's watch as its MARKs say: its id, and whether it goes on.
    ours: Option<(ObjectId, bool)>,
    /// `ours` as of `since`, once the window is reached.
    at_since: Option<Option<(ObjectId, bool)>>,
    /// Other roots' watches, and whether one was on during the window.
    others: HashMap<Vec<u8>, (ObjectId, bool)>,
    others_then: Vec<ObjectId>,
    fresh: Option<Fresh>,
    /// The window's changes, applied as they are read to a query per
    /// filesystem (the fsid of the change's directory): the root's id,
    /// and so its filesystem, is known only at the end (its MARKs may all
    /// come after some of them), and no record is kept meanwhile.
    by_fs: Map<Option<[u8; 8]>, Query>,
    /// Names the first query made is given room for.
    reserve: usize,
}

impl<'a> Read<'a> {
    fn new(root: &'a Path, since: u64, window: u64) -> Read<'a> {
        Read {
            root,
            since,
            ours: None,
            at_since: None,
            others: HashMap::new(),
            others_then: Vec::new(),
            fresh: None,
            by_fs: Map::default(),
            reserve: usize::try_from(window.min(RESERVE_MAX)).unwrap_or(0),
        }
    }

    /// The watches on at `since`, other roots' noted.
    fn reach_window(&mut self) {
        self.at_since = Some(self.ours.clone());
        self.others_then.extend(
            self.others
                .values()
                .filter(|(_, on)| *on)
                .map(|(o, _)| o.clone()),
        );
    }

    fn record(&mut self, r: &RecordRef<'_>) {
        let in_window = r.index > self.since;
        if in_window && self.at_since.is_none() {
            self.reach_window();
        }
        if r.kind != RecordType::MARK {
            if in_window && let Some(c) = decode::change(r) {
                // Nearly always one filesystem: the first query gets the room.
                let reserve = std::mem::take(&mut self.reserve);
                self.by_fs
                    .entry(fsid_of(dir_of(&c)))
                    .or_insert_with(|| Query::with_capacity(reserve))
                    .apply(r, c);
            }
            return;
        }
        if r.field("source") != Some(b"fs") {
            return;
        }
        let Some(id) = ObjectId::from_bytes(r.target) else {
            return;
        };
        let watching = !(r.name == REMOVED || r.name == MOVED);
        let root_of = r.field("root").unwrap_or_default();
        if root_of != self.root.as_os_str().as_encoded_bytes() {
            if in_window {
                self.others_then.push(id.clone());
            }
            self.others.insert(root_of.to_vec(), (id, watching));
            return;
        }
        if in_window {
            let why = match r.name {
                n if n == WATCHED => Some(Fresh::WatchStarted),
                n if n == REMOVED || n == MOVED => Some(Fresh::Ended),
                n if n == LOST => Some(Fresh::EventsLost),
                _ => None,
            };
            if let Some(w) = why {
                self.fresh.get_or_insert(w);
            }
        }
        self.ours = Some((id, watching));
    }

    /// The answer, the log read up to `next`.
    fn finish(mut self, next: u64) -> Result<Changes, Error> {
        let since = self.since;
        if self.at_since.is_none() {
            self.reach_window();
        }
        let at_since = self.at_since.flatten();
        let Some((id, _)) = self.ours else {
            return Err(Error::NotWatched {
                root: self.root.to_path_buf(),
            });
        };
        let mut fresh = self.fresh;
        if since > next {
            fresh.get_or_insert(Fresh::Future { last: next });
        }
        // A watch that had ended by `since` (and did not start again,
        // which is `WatchStarted`) knows nothing of what the path holds.
        if matches!(at_since, Some((_, false))) {
            fresh.get_or_insert(Fresh::NotWatched);
        }
        if self.others_then.iter().any(|o| same_fs(o, &id)) {
            fresh.get_or_insert(Fresh::SharedFilesystem);
        }
        let q = self.by_fs.remove(&fsid_of(&id)).unwrap_or_default();
        let mut out = q.finish();
        out.root = self.root.to_path_buf();
        out.since = since;
        out.next = next;
        out.fresh = fresh.is_some();
        out.why = fresh;
        Ok(out)
    }
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
    /// Its path at its last record, and that record's index, when that
    /// is not its first.
    last: Option<(Vec<u8>, u64)>,
}

/// The window read so far.
#[derive(Debug, Default)]
struct Query {
    links: Map<Key, Link>,
    steps: Steps,
    written: Set<ObjectId>,
}

impl Query {
    fn with_capacity(links: usize) -> Query {
        let mut q = Query::default();
        q.links.reserve(links);
        q
    }

    /// Link `key`, at `path` as of record `at`, holding `before` just
    /// before that record if this is its first.
    fn touch(&mut self, key: Key, before: Option<&ObjectId>, path: &[u8], at: u64) -> &mut Link {
        match self.links.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => {
                let l = e.into_mut();
                match &mut l.last {
                    Some((p, i)) => {
                        p.clear();
                        p.extend_from_slice(path);
                        *i = at;
                    }
                    None => l.last = Some((path.to_vec(), at)),
                }
                l
            }
            std::collections::hash_map::Entry::Vacant(e) => e.insert(Link {
                then: before.cloned(),
                now: before.cloned(),
                first: (path.to_vec(), at),
                last: None,
            }),
        }
    }

    fn apply(&mut self, r: &RecordRef<'_>, c: Change) {
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
                self.touch((parent, name), None, path, at).now = Some(entry.id);
            }
            Change::Remove {
                parent,
                name,
                entry,
                ..
            } => {
                self.touch((parent, name), Some(&entry.id), path, at).now = None;
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
                // Only a directory's move moves other paths: a file's
                // moves only its own link, whose records say where it is.
                let moves_others =
                    may_hold(entry.kind) || exchanged.as_ref().is_some_and(|x| may_hold(x.kind));
                let back = exchanged.map(|x| x.id);
                let there = back.clone().or(overwritten.map(|o| o.0.id));
                self.touch((sparent, sname), Some(&entry.id), spath, at).now = back.clone();
                self.touch((parent, name), there.as_ref(), path, at).now = Some(entry.id);
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
                self.touch((sparent, sname), Some(&entry.id), spath, at).now = None;
                if may_hold(entry.kind) {
                    self.steps.push(at, Step::Gone(spath.to_vec()));
                }
            }
            Change::Attr { parent, name, id } | Change::Modify { parent, name, id } => {
                // The root's own: no name, no path to list.
                if !name.is_empty() {
                    self.touch((parent, name), Some(&id), path, at);
                    self.written.insert(id);
                }
            }
        }
    }

    fn finish(self) -> Changes {
        let Query {
            links,
            steps,
            written,
        } = self;
        // The names objects lost and the names they gained: flat, not a
        // list per object, as most objects only gain one.
        let mut lost: Vec<(ObjectId, Vec<u8>)> = Vec::new();
        let mut gained: Vec<(ObjectId, Vec<u8>)> = Vec::with_capacity(links.len());
        let mut out = Changes::default();
        for link in links.into_values() {
            let Link {
                then,
                now,
                first: (mut first, first_at),
                last,
            } = link;
            let now_path = match (&now, last) {
                (None, _) => None,
                (Some(_), Some((p, at))) => steps.forward(p, at),
                // The first path is also what `then` is found under.
                (Some(_), None) if then.is_some() => steps.forward(first.clone(), first_at),
                (Some(_), None) => steps.forward(std::mem::take(&mut first), first_at),
            };
            let now = now_path.as_ref().and(now);
            match (then, now) {
                (Some(a), Some(b)) if a == b => {
                    if let Some(p) = now_path.filter(|_| written.contains(&a)) {
                        out.modified.push(p);
                    }
                }
                (then, now) => {
                    if let Some(a) = then {
                        lost.push((a, steps.backward(first, first_at)));
                    }
                    if let (Some(b), Some(p)) = (now, now_path) {
                        gained.push((b, p));
                    }
                }
            }
        }
        pair(lost, gained, &written, &mut out);
        out.removed = topmost(std::mem::take(&mut out.removed));
        out.created.sort_unstable();
        out.modified.sort_unstable();
        out.modified.dedup();
        out.renamed.sort_unstable();
        out
    }
}

/// Pairs each object's lost names with its gained ones, in path order:
/// renames; what is left over is removed or created. A renamed object
/// that was written is also modified under its new name. The lists come
/// out in no order: the caller sorts them.
pub(crate) fn pair(
    mut lost: Vec<(ObjectId, Vec<u8>)>,
    gained: Vec<(ObjectId, Vec<u8>)>,
    written: &Set<ObjectId>,
    out: &mut Changes,
) {
    // Only objects that lost a name can have been renamed; the names the
    // others gained are created, with no sorting by object.
    let losers: Set<&ObjectId> = lost.iter().map(|(id, _)| id).collect();
    let mut matched = Vec::new();
    for (id, p) in gained {
        if losers.contains(&id) {
            matched.push((id, p));
        } else {
            out.created.push(p);
        }
    }
    drop(losers);
    lost.sort_unstable();
    matched.sort_unstable();
    // Both sorted by object, then path; every object of `matched` is in
    // `lost`. Walk the objects of `lost`, and `matched` along with them.
    let (mut i, mut j) = (0, 0);
    while i < lost.len() {
        let ie = i + lost[i..]
            .iter()
            .take_while(|(x, _)| *x == lost[i].0)
            .count();
        let je = j + matched[j..]
            .iter()
            .take_while(|(x, _)| *x == lost[i].0)
            .count();
        let n = (ie - i).min(je - j);
        let renamed_written = written.contains(&lost[i].0);
        for k in 0..n {
            let to = std::mem::take(&mut matched[j + k].1);
            if renamed_written {
                out.modified.push(to.clone());
            }
            out.renamed.push(Renamed {
                from: std::mem::take(&mut lost[i + k].1),
                to,
            });
        }
        out.removed
            .extend(lost[i + n..ie].iter_mut().map(|(_, p)| std::mem::take(p)));
        out.created.extend(
            matched[j + n..je]
                .iter_mut()
                .map(|(_, p)| std::mem::take(p)),
        );
        (i, j) = (ie, je);
    }
}

/// `paths` sorted, without those below another of them.
pub(crate) fn topmost(mut paths: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    paths.sort_unstable();
    paths.dedup();
    let keep: Vec<bool> = {
        let all: Set<&[u8]> = paths.iter().map(Vec::as_slice).collect();
        paths
            .iter()
            .map(|p| {
                !p.iter()
                    .enumerate()
                    .any(|(i, &b)| b == b'/' && all.contains(&p[..i]))
            })
            .collect()
    };
    let mut keep = keep.into_iter();
    paths.retain(|_| keep.next().unwrap_or(true));
    paths
}

#[cfg(test)]
mod tests;
