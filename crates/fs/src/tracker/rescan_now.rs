//! A rescan asked for while the tracker runs (`weir fs rescan PATH`, the
//! daemon's `POST /v1/fs/rescan`): for when a caller doubts the journal,
//! say after trouble outside weir, without a restart.
//!
//! The events queued so far are applied first, so the tree is as logged up
//! to the request. Then, as at a restart from the copy, every directory's
//! times are looked at and only those that moved or are not known (those
//! the tree changed since they were taken) are read; each difference with
//! the tree is logged once, flagged `COMPARE`, then the MARK `fs tree
//! rescanned` counts them. A change made while it reads is either seen by
//! it (its event, read after, finds it applied) or not (its event logs
//! it). The repair after lost events is this rescan too, without the
//! MARK (`compare_rescanned`).

use super::progress::Phase;
use crate::Result;
use crate::change::How;
use crate::checkpoint::CopyTimes;
use crate::rescan::{Rescan, RescanStats, look_counted};

use super::root::Root;
use super::sink::Sink;

/// The MARK that ends an on-demand rescan.
pub const RESCANNED: &[u8] = b"fs tree rescanned";

/// What an on-demand rescan found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rescanned {
    /// Entries in the tree after it, the root not counted.
    pub entries: u64,
    /// Differences logged (records flagged `COMPARE`).
    pub changes: u64,
    /// Directories whose times were looked at.
    pub dirs_checked: u64,
    /// Directories read.
    pub dirs_read: u64,
    /// The index of its MARK; none without a log, or if the append failed.
    pub index: Option<u64>,
}

impl Root {
    /// Rescans the tree and logs what differs (see the module's header).
    /// A directory's times are the tree's, or else those `copy` holds: the
    /// tree hands them over with each image it checkpoints, and any change
    /// since moved them on disk, so a match still means unchanged.
    pub(crate) fn rescan_now(
        &mut self,
        sink: &mut Sink,
        copy: Option<&CopyTimes>,
    ) -> Result<Rescanned> {
        let (changes, stats) = self.compare_rescanned(sink, copy)?;
        let done = Rescanned {
            entries: self.tree.len() as u64,
            changes,
            dirs_checked: stats.checked,
            dirs_read: stats.read,
            index: None,
        };
        let counts = [done.entries, changes, stats.checked, stats.read].map(|x| x.to_string());
        let path = self.path.as_os_str().as_encoded_bytes();
        let mut fields: Vec<(&str, &[u8])> = vec![("root", path)];
        let keys = ["entries", "changes", "dirs_checked", "dirs_read"];
        fields.extend(keys.iter().zip(&counts).map(|(k, c)| (*k, c.as_bytes())));
        let id = self.id.as_bytes();
        let before = sink.latest_mark(id);
        sink.mark(RESCANNED, id, &fields);
        let index = sink.latest_mark(id).filter(|&i| Some(i) != before);
        Ok(Rescanned { index, ..done })
    }

    /// A rescan of the tree over `known` (see [`look_counted`]), its
    /// directories counted in the root's progress as it goes.
    pub(crate) fn counted_rescan(
        &self,
        known: &crate::Tree,
        times: &(dyn Fn(&crate::ObjectId) -> Option<crate::DirTimes> + Sync),
        content: Option<(i64, u32)>,
    ) -> Result<Rescan> {
        let p = &self.progress;
        p.begin(Phase::Rescanning, Some(known.dir_count() as u64));
        let r = look_counted(
            self.probe.mount(),
            known,
            &self.id,
            self.fsid,
            times,
            content,
            &|n| p.set(n),
        );
        r.map(|l| l.apply_to(known)).map_err(|e| {
            p.end();
            self.read_error(e)
        })
    }

    /// The rescan and its comparison with the tree, each difference logged
    /// flagged `COMPARE`: what an on-demand rescan and the repair after
    /// lost events do. Returns the differences and what it counted.
    pub(crate) fn compare_rescanned(
        &mut self,
        sink: &mut Sink,
        copy: Option<&CopyTimes>,
    ) -> Result<(u64, RescanStats)> {
        let tree = &self.tree;
        let times = |d: &crate::ObjectId| tree.dir_times(d).or_else(|| copy.and_then(|c| c.get(d)));
        let Rescan {
            live,
            stats,
            read,
            scope,
            ..
        } = self.counted_rescan(tree, &times, None)?;
        self.progress
            .begin(Phase::Comparing, Some(scope.len() as u64));
        let changes = self.compare_in(&live, &scope, How::Compare, sink);
        self.progress.end();
        drop(live);
        // The times it saw are not kept: the events of changes made while
        // it read come after it (as at a restart).
        for d in read {
            self.tree.touch_dir(&d);
        }
        Ok((changes, stats))
    }
}
