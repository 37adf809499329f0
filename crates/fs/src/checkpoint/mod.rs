//! The persistent copy of each watched tree (in weir-fsindex), so that a
//! restart starts from the tree as last logged, whatever the tree held
//! when it was first watched.
//!
//! The copy plus the log's records after the index it covers is the tree
//! as logged. The tree keeps which directories changed since they were
//! last taken ([`Tree::take_touched`](crate::Tree::take_touched)); a
//! checkpoint hands their images to a thread of its own, a slice at a
//! time between reads of events so that the tracker never waits on the
//! disk, and once none is left, the index of the last record logged: at
//! that moment every image sent is the directory as logged up to that
//! index (one touched again after it was sent is sent again). The thread
//! commits the images and that index together, once the log is durable
//! there, so the copy is never ahead of the log; then it clears the log's
//! consumer [`INDEX_CONSUMER`] up to it, so that retention keeps every record a
//! restart replays, but never past a watched root's latest MARK, which a
//! since query finds the root by (the tracker marks a root again once its
//! latest MARK is far behind, so this holds back little). The consumer's id and registration time are the log's
//! identity in the copy: a copy made over another log is not trusted.
//!
//! A root the copy does not hold (or holds for another log) is written
//! whole by its first checkpoint, in chunks, marked building until done;
//! a crash before that leaves a copy the next start does not trust.

mod load;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use weir_log::{Appended, Log};

use crate::id::ObjectId;
use crate::kind::Kind;
use crate::tree::{DirImage, Tree};
use crate::{Error, Result};

pub(crate) use load::{CopyTimes, Load, Loaded, load};

/// Where a state directory keeps the trees' persistent copy.
pub const INDEX_FILE: &str = "fs/index.redb";

/// The log consumer that holds back retention for the trees' persistent
/// copy: it clears what the copy covers, up to the roots' latest MARKs.
pub const INDEX_CONSUMER: &str = "weir-fs-index";

/// How often a checkpoint is taken while directories change.
const INTERVAL: Duration = Duration::from_secs(5);

/// Entries per slice handed to the thread.
const SLICE: usize = 4096;

/// Slices the thread may hold unwritten: the memory a checkpoint takes.
const QUEUE: usize = 2;

/// What the tracker sends the thread.
pub(crate) enum Msg {
    /// Root `root`'s first reading ended, from the copy's root `copy`
    /// (with the index it covered) or not: checkpoints of it before this
    /// are none.
    Started {
        root: usize,
        copy: Option<(weir_fsindex::RootNo, u64)>,
    },
    /// Directories of root `root` removed, and images of others, part of
    /// the checkpoint the next `Done` for that root ends.
    Part {
        root: usize,
        removed: Vec<ObjectId>,
        images: Vec<DirImage>,
    },
    /// Root `root`'s checkpoint is whole: every change up to `covered` is
    /// in the images sent. Retention must keep the log from `keep` on (the
    /// watched roots' latest MARKs, which since queries find roots by).
    Done {
        root: usize,
        covered: Appended,
        keep: Option<u64>,
    },
    /// Answered once everything before it is committed.
    Flush(mpsc::Sender<Result<()>>),
}

/// What the thread tells of itself.
#[derive(Clone, Debug, Default)]
pub(crate) struct Status {
    /// Checkpoints committed.
    pub(crate) commits: u64,
    /// The last failure, if the last commit failed.
    pub(crate) error: Option<String>,
}

/// The tracker's side: when a checkpoint is due, and what is still to
/// send.
pub(crate) struct Checkpoints {
    tx: Option<SyncSender<Msg>>,
    thread: Option<JoinHandle<()>>,
    /// A message the thread had no room for yet.
    held: Option<Msg>,
    /// When the next checkpoint starts; `None` while one is under way.
    next: Option<Instant>,
    /// The roots a checkpoint under way still has to finish.
    pending: Vec<usize>,
    status: Arc<Mutex<Status>>,
}

/// A root as the thread keeps it: its path and id, and whether the copy
/// holds it (then checkpoints are incremental).
#[derive(Clone, Debug)]
pub(crate) struct RootInfo {
    pub(crate) path: PathBuf,
    pub(crate) id: ObjectId,
    pub(crate) copy: Option<weir_fsindex::RootNo>,
}

impl RootInfo {
    /// Root `path`, whose directory is `id`, not yet read.
    pub(crate) fn new(path: PathBuf, id: ObjectId) -> RootInfo {
        RootInfo {
            path,
            id,
            copy: None,
        }
    }
}

/// The copy's file and the log's identity in it, opened once for the
/// loads at start and the thread.
#[derive(Clone)]
pub(crate) struct Opened {
    pub(crate) index: Arc<weir_fsindex::Index>,
    pub(crate) identity: Vec<u8>,
}

/// Opens the copy at `path`, and registers the log's consumer if the log
/// has none; `None` when there is a copy this process cannot use (a newer
/// format, or another process holding it): the tracker then runs without
/// one, as it says.
///
/// The copy is what the log and a walk can always make again, so a
/// damaged file is no reason not to watch: it is set aside (as
/// `<path>.damaged`, for a look) and a new one made.
pub(crate) fn open(path: &Path, log: &Log) -> Result<Option<Opened>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| Error::IndexFile {
            path: dir.to_path_buf(),
            what: "making its directory",
            source,
        })?;
    }
    use weir_fsindex::Error as E;
    let index = match weir_fsindex::Index::open(path) {
        Ok(i) => i,
        Err(e @ (E::UnknownVersion { .. } | E::Locked { .. })) => {
            tracing::warn!(error = %e, "the trees' persistent copy cannot be used: watching without one (a restart then compares with the log alone)");
            return Ok(None);
        }
        Err(e @ (E::NotAnIndex { .. } | E::Foreign { .. } | E::Corrupt { .. })) => {
            let mut aside = path.as_os_str().to_os_string();
            aside.push(".damaged");
            tracing::warn!(error = %e, aside = %Path::new(&aside).display(), "the trees' persistent copy is damaged: set aside, and a new one made");
            std::fs::rename(path, &aside).map_err(|source| Error::IndexFile {
                path: path.to_path_buf(),
                what: "setting a damaged file aside",
                source,
            })?;
            weir_fsindex::Index::open(path).map_err(Error::Index)?
        }
        Err(e) => {
            // A full disk, a read-only state directory: the copy only
            // saves work, so its absence is no reason not to watch.
            tracing::warn!(error = %e, "the trees' persistent copy cannot be opened: watching without one (a restart then compares with the log alone)");
            return Ok(None);
        }
    };
    let consumer = match log
        .consumer_list()
        .into_iter()
        .find(|c| c.name == INDEX_CONSUMER)
    {
        Some(c) => c,
        None => {
            log.register(INDEX_CONSUMER, crate::record::mask())?;
            log.consumer_list()
                .into_iter()
                .find(|c| c.name == INDEX_CONSUMER)
                .ok_or(Error::Stopped)?
        }
    };
    let identity = format!("{}:{}", consumer.id, consumer.registered_ns).into_bytes();
    Ok(Some(Opened {
        index: Arc::new(index),
        identity,
    }))
}

impl Checkpoints {
    /// Starts the thread over `opened`, for `roots`.
    pub(crate) fn start(
        opened: Opened,
        log: Arc<Log>,
        roots: Vec<RootInfo>,
    ) -> Result<Checkpoints> {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let status = Arc::new(Mutex::new(Status::default()));
        let w = writer::Writer::new(opened, log, roots, status.clone());
        let thread = std::thread::Builder::new()
            .name("weir-fs-index".into())
            .spawn(move || w.run(rx))
            .map_err(Error::Thread)?;
        Ok(Checkpoints {
            tx: Some(tx),
            thread: Some(thread),
            held: None,
            next: Some(Instant::now()),
            pending: Vec::new(),
            status,
        })
    }

    /// Checkpoints committed so far.
    pub(crate) fn commits(&self) -> u64 {
        match self.status.lock() {
            Ok(s) => s.commits,
            Err(p) => p.into_inner().commits,
        }
    }

    /// Root `root`'s first reading ended, from the copy's root and index
    /// `copy` or not.
    pub(crate) fn started(&mut self, root: usize, copy: Option<(weir_fsindex::RootNo, u64)>) {
        if let Some(tx) = &self.tx
            && tx.send(Msg::Started { root, copy }).is_err()
        {
            self.tx = None;
        }
    }

    /// When the loop must turn over for the checkpoints, `touched` saying
    /// whether a tree has directories to hand over: soon while one is under
    /// way (the thread is taking a slice), at the next one's time when
    /// there is something for it, never otherwise. So a burst of changes
    /// reaches the copy within the interval even if nothing follows it.
    pub(crate) fn wake_at(&self, touched: bool) -> Option<Instant> {
        if self.held.is_some() || !self.pending.is_empty() {
            return Some(Instant::now() + Duration::from_millis(10));
        }
        touched.then(|| self.next.unwrap_or_else(Instant::now))
    }

    /// Whether a checkpoint is due or under way: the loop turns over every
    /// millisecond in a storm, and most turns have nothing to hand over.
    pub(crate) fn is_due(&self) -> bool {
        self.held.is_some()
            || !self.pending.is_empty()
            || self.next.is_none_or(|t| Instant::now() >= t)
    }

    /// Sends what a checkpoint due or under way has next, without waiting:
    /// `trees` are the roots' trees (`None` while one is first read),
    /// `last` the last record logged, and `keep` the first index the log
    /// must keep whatever the copy covers.
    pub(crate) fn step(
        &mut self,
        trees: &mut [Option<&mut Tree>],
        last: Option<Appended>,
        keep: Option<u64>,
    ) {
        if !self.flush_held() {
            return;
        }
        if self.next.is_some_and(|t| Instant::now() >= t) {
            self.next = None;
            self.pending = (0..trees.len()).filter(|&i| trees[i].is_some()).collect();
        }
        while let Some(&root) = self.pending.first() {
            let Some(tree) = trees.get_mut(root).and_then(Option::as_deref_mut) else {
                self.pending.remove(0);
                continue;
            };
            if let Some(m) = part(root, tree) {
                if !self.send(m) {
                    return;
                }
                continue;
            }
            // Nothing touched is left: the images sent are the tree now.
            self.pending.remove(0);
            if let Some(covered) = last
                && !self.send(Msg::Done {
                    root,
                    covered,
                    keep,
                })
            {
                return;
            }
        }
        if self.next.is_none() {
            self.next = Some(Instant::now() + INTERVAL);
        }
    }

    /// At a stop: sends every root's touched directories and its index,
    /// waits until the thread has committed them, and ends it.
    pub(crate) fn finish(
        mut self,
        trees: &mut [Option<&mut Tree>],
        last: Option<Appended>,
        keep: Option<u64>,
    ) -> Result<()> {
        let tx = self.tx.take().ok_or(Error::Stopped)?;
        if let Some(m) = self.held.take() {
            tx.send(m).map_err(|_| Error::Stopped)?;
        }
        for (root, tree) in trees.iter_mut().enumerate() {
            let Some(tree) = tree.as_deref_mut() else {
                continue;
            };
            while let Some(m) = part(root, tree) {
                tx.send(m).map_err(|_| Error::Stopped)?;
            }
            if let Some(covered) = last {
                tx.send(Msg::Done {
                    root,
                    covered,
                    keep,
                })
                .map_err(|_| Error::Stopped)?;
            }
        }
        let (rtx, rrx) = mpsc::channel();
        tx.send(Msg::Flush(rtx)).map_err(|_| Error::Stopped)?;
        // No answer: the thread ended on a failure, which it logged.
        let r = rrx.recv().unwrap_or(Err(Error::Stopped));
        drop(tx);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        r
    }

    /// Sends the held message if there is room; whether none is held.
    fn flush_held(&mut self) -> bool {
        match self.held.take() {
            Some(m) => self.send(m),
            None => true,
        }
    }

    /// Sends `m`, or holds it when the thread has no room; whether sent.
    fn send(&mut self, m: Msg) -> bool {
        let Some(tx) = &self.tx else { return false };
        match tx.try_send(m) {
            Ok(()) => true,
            Err(TrySendError::Full(m)) => {
                self.held = Some(m);
                false
            }
            Err(TrySendError::Disconnected(_)) => {
                // The thread ended (its error is in the status): no more
                // checkpoints.
                self.tx = None;
                false
            }
        }
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The next slice of root `root`'s touched directories, with the removed
/// ones; `None` when nothing is left to take.
fn part(root: usize, tree: &mut Tree) -> Option<Msg> {
    let removed = tree.take_removed();
    let mut images = Vec::new();
    tree.take_touched(SLICE, &mut images);
    (!removed.is_empty() || !images.is_empty()).then_some(Msg::Part {
        root,
        removed,
        images,
    })
}

/// weir-fs's kind as the copy codes it.
pub(crate) fn to_copy(k: Kind) -> weir_fsindex::Kind {
    use weir_fsindex::Kind as C;
    match k {
        Kind::File => C::File,
        Kind::Dir => C::Dir,
        Kind::Symlink => C::Symlink,
        Kind::Fifo => C::Fifo,
        Kind::Socket => C::Socket,
        Kind::Char => C::Char,
        Kind::Block => C::Block,
        _ => C::Unknown,
    }
}

/// The copy's kind as weir-fs's.
pub(crate) fn from_copy(k: weir_fsindex::Kind) -> Kind {
    use weir_fsindex::Kind as C;
    match k {
        C::File => Kind::File,
        C::Dir => Kind::Dir,
        C::Symlink => Kind::Symlink,
        C::Fifo => Kind::Fifo,
        C::Socket => Kind::Socket,
        C::Char => Kind::Char,
        C::Block => Kind::Block,
        _ => Kind::Unknown,
    }
}
