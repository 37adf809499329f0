//! A watched root: its tree as logged, its live probe, and what the event
//! handlers keep between events (files written but not yet closed, entries
//! touched in this drain of the queue, the sync cookies in flight).
//!
//! Every change goes through [`Root::emit`]: it resolves the paths from
//! the tree, applies the change, and hands the record to the sink, so the
//! tree is always exactly what the records so far describe.

use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::Instant;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::mark::{MarkKind, Marked};
use super::sink::Sink;
use super::touches::Touches;
use crate::change::{Change, How};
use crate::id::ObjectId;
use crate::probe::Probe;
use crate::record::Paths;
use crate::tree::{Map, Tree};

/// The prefix of the tracker's sync cookies. A name in a root directory
/// that starts with it is never recorded, whoever made it: two weirs
/// watching one root (a daemon and `weir fs watch`) see each other's.
pub const COOKIE_PREFIX: &[u8] = b".weir-cookie-";

/// Whether `name`, in a root directory, is a sync cookie.
pub fn is_cookie(name: &[u8]) -> bool {
    name.starts_with(COOKIE_PREFIX)
}

/// A file written and not yet closed: its MTIME waits for the close, or
/// for the interval to pass.
#[derive(Debug)]
pub(crate) struct Dirty {
    pub(crate) parent: ObjectId,
    pub(crate) name: Vec<u8>,
    pub(crate) since: Instant,
}

/// Counters of one root.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    /// Events that concerned this root.
    pub(crate) events: u64,
    /// Records written for it.
    pub(crate) records: u64,
    /// Events for objects outside it (other parts of the filesystem).
    pub(crate) outside: u64,
    /// Records whose event was ambiguous and the live entry decided.
    pub(crate) verified: u64,
    /// Comparisons with a walk (lost events, starts).
    pub(crate) compares: u64,
    /// Changes that did not apply to the tree (a bug if ever non-zero).
    pub(crate) inconsistent: u64,
}

/// One watched root.
pub(crate) struct Root {
    pub(crate) path: PathBuf,
    pub(crate) id: ObjectId,
    pub(crate) fsid: [u32; 2],
    pub(crate) fstype: String,
    pub(crate) mark: MarkKind,
    pub(crate) tree: Tree,
    pub(crate) probe: Probe,
    pub(crate) dirty: Map<ObjectId, Dirty>,
    /// Entries touched by an event since the queue was last found empty,
    /// and those to look at again.
    pub(crate) touches: Touches,
    /// Cookies made and not yet seen deleted, with their sync round.
    pub(crate) cookies: Map<Box<[u8]>, u64>,
    cookie_seq: u64,
    paths: Paths,
    /// The id and fsid as `weir fs` shows them, made once.
    pub(crate) id_hex: String,
    pub(crate) fsid_text: String,
    pub(crate) counters: Counters,
    /// The first reading, while it goes on.
    pub(crate) first: Option<super::start::FirstRead>,
    /// How the watch ended (`Removed` or `Moved`), once it has: no event
    /// is handled and no cookie made after.
    pub(crate) ended: Option<super::RootState>,
    /// How far its long work has gone, read live by the tracker's owner.
    pub(crate) progress: std::sync::Arc<super::progress::ProgressCell>,
    /// When its first reading started from the persistent copy: the
    /// copy's root and the index it covered.
    pub(crate) copy: Option<(weir_fsindex::RootNo, u64)>,
}

impl Root {
    /// A root marked (`m`) whose directory's id is `id`, with an empty
    /// tree until its first walk.
    pub(crate) fn new(m: Marked, id: ObjectId) -> Root {
        let Marked {
            path,
            fd,
            fstype,
            mark,
            fsid,
        } = m;
        Root {
            tree: Tree::new(id.clone()),
            probe: Probe::new(fd, fsid),
            id_hex: id.hex(),
            fsid_text: format!("{:08x}:{:08x}", fsid[0], fsid[1]),
            path,
            id,
            fsid,
            fstype,
            mark,
            dirty: Map::default(),
            touches: Touches::default(),
            cookies: Map::default(),
            cookie_seq: 0,
            paths: Paths::default(),
            counters: Counters::default(),
            first: None,
            ended: None,
            copy: None,
            progress: std::sync::Arc::default(),
        }
    }

    /// Applies `c` to the tree and logs it.
    pub(crate) fn emit(&mut self, c: Change, how: How, sink: &mut Sink) {
        let mut p = std::mem::take(&mut self.paths);
        p.path.clear();
        p.spath.clear();
        let t = &self.tree;
        match &c {
            Change::Remove { parent, name, .. }
            | Change::Attr { parent, name, .. }
            | Change::Modify { parent, name, .. } => {
                t.entry_path(parent, name, &mut p.path);
            }
            Change::Rename { sparent, sname, .. } | Change::MoveOut { sparent, sname, .. } => {
                t.entry_path(sparent, sname, &mut p.spath);
            }
            Change::Create { .. } | Change::MoveIn { .. } => {}
        }
        if let Err(e) = c.apply(&mut self.tree) {
            tracing::warn!(error = %e, change = ?c, root = %self.path.display(), "a change does not apply to the tree; not logged");
            self.counters.inconsistent += 1;
            self.paths = p;
            return;
        }
        match &c {
            Change::Create { parent, name, .. }
            | Change::MoveIn { parent, name, .. }
            | Change::Rename { parent, name, .. } => {
                self.tree.entry_path(parent, name, &mut p.path);
            }
            Change::Remove { entry, .. } | Change::MoveOut { entry, .. } => {
                if entry.kind.is_dir() {
                    self.probe.forget(&entry.id);
                } else if !self.tree.contains(&entry.id) {
                    self.dirty.remove(&entry.id);
                }
            }
            _ => {}
        }
        if let Change::Rename {
            overwritten: Some((o, _)),
            ..
        } = &c
            && !self.tree.contains(&o.id)
        {
            self.dirty.remove(&o.id);
        }
        self.counters.records += 1;
        if how == How::Verified {
            self.counters.verified += 1;
        }
        sink.change(&self.path, &c, how, &p);
        self.paths = p;
    }

    /// Notes an event's touch of entry `name` in `dir` by `id`.
    pub(crate) fn touch(&mut self, dir: &ObjectId, name: &[u8], id: &ObjectId) {
        self.touches.touch(dir, name, id);
    }

    /// Removes the cookies a weir killed between making and removing one
    /// left in the root (their process is gone), before the first walk.
    pub(crate) fn remove_stale_cookies(&self) {
        let Ok(mut dir) = rustix::fs::Dir::read_from(self.probe.mount()) else {
            return;
        };
        let mut stale = Vec::new();
        while let Some(Ok(de)) = dir.next() {
            let name = de.file_name().to_bytes();
            let Some(rest) = name.strip_prefix(COOKIE_PREFIX) else {
                continue;
            };
            let pid = std::str::from_utf8(rest)
                .ok()
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<i32>().ok())
                .and_then(rustix::process::Pid::from_raw);
            let alive = pid.is_some_and(|p| {
                rustix::process::test_kill_process(p).is_ok()
                    || p.as_raw_nonzero().get() == std::process::id() as i32
            });
            if !alive {
                stale.push(de.file_name().to_owned());
            }
        }
        for name in stale {
            let _ = rustix::fs::unlinkat(self.probe.mount(), name.as_c_str(), AtFlags::empty());
        }
    }

    /// Makes and removes a cookie in the root for sync round `round`;
    /// `false` when the filesystem takes no new file (read-only, full,
    /// not writable by us) or the root's watch has ended: then there is
    /// nothing to wait for but a drain.
    pub(crate) fn cookie(&mut self, round: u64) -> Result<bool, weir_sys::Error> {
        if self.ended.is_some() {
            // No longer watched: nothing of it to wait for.
            return Ok(false);
        }
        self.cookie_seq += 1;
        let name = format!(
            "{}{}-{}",
            std::str::from_utf8(COOKIE_PREFIX).unwrap_or(".weir-cookie-"),
            std::process::id(),
            self.cookie_seq
        );
        let fd = self.probe.mount();
        match rustix::fs::openat(
            fd,
            name.as_str(),
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(f) => drop(f),
            // ENOENT: the root was removed and its event is not read yet
            // (it ends the watch). The events before the call are queued
            // already, so the drain is enough.
            Err(
                Errno::ROFS
                | Errno::ACCESS
                | Errno::PERM
                | Errno::NOSPC
                | Errno::DQUOT
                | Errno::NOENT,
            ) => {
                return Ok(false);
            }
            Err(errno) => {
                return Err(weir_sys::Error::Syscall {
                    call: "openat",
                    errno,
                });
            }
        }
        self.cookies.insert(Box::from(name.as_bytes()), round);
        if let Err(errno) =
            rustix::fs::unlinkat(self.probe.mount().as_fd(), name.as_str(), AtFlags::empty())
        {
            tracing::warn!(%errno, cookie = name, "removing a sync cookie failed");
        }
        Ok(true)
    }
}
