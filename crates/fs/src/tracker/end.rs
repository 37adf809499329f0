//! The end of a root's watch: its directory removed, or moved away.
//!
//! A watch is of a path: once the directory there is gone (removed, or
//! renamed elsewhere), the tree the records describe is no longer what
//! that path holds, so the root gets a MARK and nothing more is logged for
//! it; the other roots go on. A removal is the `FAN_DELETE` in the root's
//! parent whose target is the root (its entries' removals came before it,
//! in queue order); its `FAN_DELETE_SELF` comes only once the last fd of
//! it closes, and the tracker holds one. A move is a `FAN_RENAME` whose
//! target is the root. Not seen: a move of one of the root's ancestors
//! (no event is about the root, and the records' paths, relative to the
//! root, stay right), and an empty root replaced by a directory renamed
//! over it (the event is about the other directory).

use std::os::fd::AsRawFd;
use std::path::PathBuf;

use weir_sys::fanotify::fid::{FAN_DELETE, FAN_DELETE_SELF, FAN_ONDIR, FAN_RENAME, FidEvent};

use super::RootState;
use super::root::Root;
use super::sink::Sink;
use crate::id::ObjectId;

impl Root {
    /// Whether `ev` ends this root's watch; if so, logs its MARK, forgets
    /// what waited (files written, entries in doubt) and returns the sync
    /// rounds whose cookies in the root will now never be read.
    pub(crate) fn ends_with(&mut self, ev: &FidEvent<'_>, sink: &mut Sink) -> Option<Vec<u64>> {
        // Cheap tests first: this runs for every event of the filesystem,
        // and the root is a directory.
        if ev.mask & FAN_ONDIR == 0 || ev.mask & (FAN_DELETE | FAN_DELETE_SELF | FAN_RENAME) == 0 {
            return None;
        }
        let about_root = ev.target.is_some_and(|t| ObjectId::from_fid(&t) == self.id);
        if !about_root {
            return None;
        }
        let state = if ev.mask & (FAN_DELETE | FAN_DELETE_SELF) != 0 {
            RootState::Removed
        } else if ev.mask & FAN_RENAME != 0 {
            RootState::Moved {
                to: self.current_path(),
            }
        } else {
            return None;
        };
        let path = self.path.as_os_str().as_encoded_bytes().to_vec();
        let id = self.id.as_bytes().to_vec();
        match &state {
            RootState::Moved { to } => {
                let to = to
                    .as_ref()
                    .map(|t| t.as_os_str().as_encoded_bytes().to_vec())
                    .unwrap_or_default();
                sink.mark(crate::replay::MOVED, &id, &[("root", &path), ("to", &to)]);
            }
            _ => sink.mark(crate::replay::REMOVED, &id, &[("root", &path)]),
        }
        tracing::warn!(root = %self.path.display(), state = state.name(), "the watched root went; its watch ends");
        self.dirty.clear();
        self.touches.clear();
        self.ended = Some(state);
        Some(self.cookies.drain().map(|(_, round)| round).collect())
    }

    /// The root directory's path now, as the kernel resolves its fd;
    /// `None` when it cannot say.
    fn current_path(&self) -> Option<PathBuf> {
        let link = format!("/proc/self/fd/{}", self.probe.mount().as_raw_fd());
        let p = rustix::fs::readlink(link.as_str(), Vec::new()).ok()?;
        let p = PathBuf::from(std::ffi::OsString::from(
            std::ffi::CString::into_string(p).ok()?,
        ));
        // A path the kernel cannot give from our root (a detached mount's
        // fd, an unlinked directory) is not one to show.
        (p.is_absolute() && !p.as_os_str().as_encoded_bytes().ends_with(b" (deleted)")).then_some(p)
    }
}
