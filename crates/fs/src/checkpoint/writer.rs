//! The checkpoint thread: writes what the tracker hands it into the copy,
//! a root's first checkpoint as a build in chunks and each later one as
//! one commit, and clears the log's consumer up to what is committed.

use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

use weir_fsindex::{Batch, Build, Dir, Entry, Index, RootNo, Timestamp};
use weir_log::{Appended, Log};

use super::{INDEX_CONSUMER, Msg, Opened, RootInfo, Status, to_copy};
use crate::id::ObjectId;
use crate::tree::DirImage;
use crate::{Error, Result};

/// Rows a build commits at a time: a transaction's pages stay in memory
/// until it commits, and 2048 rather than 8192 kept the first build of a
/// 1.1M-entry tree 3 MiB smaller, for about a tenth more of its time.
const BUILD_CHUNK: usize = 2048;

/// Entries of a checkpoint after which its freed images and rows are given
/// back to the kernel: a first copy of a tree is written in slices, but
/// its temporaries stay in the heap once freed (see `weir_sys::heap`).
const TRIM_ENTRIES: usize = 1 << 16;

pub(super) struct Writer {
    index: Arc<Index>,
    identity: Vec<u8>,
    log: Arc<Log>,
    roots: Vec<RootInfo>,
    /// What each root's copy covers, once it holds it whole.
    covered: Vec<Option<u64>>,
    /// Entries written by each root's checkpoint under way.
    written: Vec<usize>,
    status: Arc<Mutex<Status>>,
}

/// A root's checkpoint under way.
enum Open<'a> {
    Build(Build<'a>),
    Batch(Batch),
}

impl Writer {
    pub(super) fn new(
        opened: Opened,
        log: Arc<Log>,
        roots: Vec<RootInfo>,
        status: Arc<Mutex<Status>>,
    ) -> Writer {
        let covered = vec![None; roots.len()];
        let written = vec![0; roots.len()];
        Writer {
            index: opened.index,
            identity: opened.identity,
            log,
            roots,
            covered,
            written,
            status,
        }
    }

    pub(super) fn run(mut self, rx: Receiver<Msg>) {
        let index = self.index.clone();
        let mut open: Vec<Option<Open<'_>>> = (0..self.roots.len()).map(|_| None).collect();
        for m in rx {
            let r = match m {
                Msg::Started { root, copy } => {
                    self.roots[root].copy = copy.map(|(no, _)| no);
                    self.covered[root] = copy.map(|(_, c)| c);
                    open[root] = None;
                    self.written[root] = 0;
                    Ok(())
                }
                Msg::Part {
                    root,
                    removed,
                    images,
                } => self.part(&index, &mut open[root], root, &removed, &images),
                Msg::Done {
                    root,
                    covered,
                    keep,
                } => match open[root].take() {
                    Some(o) => self.done(o, root, covered, keep),
                    None => Ok(()),
                },
                Msg::Flush(reply) => {
                    let _ = reply.send(Ok(()));
                    continue;
                }
            };
            if let Err(e) = r {
                // The copy stays at its last commit (a build under way
                // stays marked building, never trusted), and the log
                // keeps what follows it for the consumer. A store that
                // failed once (a full disk, an I/O error) is not written
                // again by this process: a retry would hand over whole
                // trees again and again, and redb asks to be reopened
                // after an I/O error anyway. The next start replays more
                // of the log.
                tracing::error!(error = %e, "writing the trees' persistent copy failed; no more checkpoints until a restart");
                self.status_mut(|s| s.error = Some(e.to_string()));
                return;
            }
        }
    }

    fn part<'a>(
        &mut self,
        index: &'a Index,
        open: &mut Option<Open<'a>>,
        root: usize,
        removed: &[ObjectId],
        images: &[DirImage],
    ) -> Result<()> {
        if open.is_none() {
            let info = &self.roots[root];
            *open = Some(match info.copy {
                Some(_) => Open::Batch(index.batch()),
                None => Open::Build(
                    index
                        .replace_root(
                            info.path.as_os_str().as_encoded_bytes(),
                            info.id.as_bytes(),
                            &self.identity,
                            BUILD_CHUNK,
                        )
                        .map_err(Error::Index)?,
                ),
            });
        }
        self.written[root] += images.iter().map(|i| i.entries.len().max(1)).sum::<usize>();
        match open.as_mut() {
            Some(Open::Build(b)) => {
                // A build starts from nothing: what was removed was never
                // written.
                for i in images {
                    b.put_dir(i.id.as_bytes(), &dir_row(i))
                        .map_err(Error::Index)?;
                    for (name, e) in &i.entries {
                        b.put_entry(i.id.as_bytes(), name, &entry_row(e))
                            .map_err(Error::Index)?;
                    }
                }
            }
            Some(Open::Batch(b)) => {
                let no = self.roots[root].copy.unwrap_or(RootNo(0));
                for id in removed {
                    b.drop_dir(no, id.as_bytes()).map_err(Error::Index)?;
                }
                for i in images {
                    let rows: Vec<Entry> = i.entries.iter().map(|(_, e)| entry_row(e)).collect();
                    let entries = i.entries.iter().zip(&rows).map(|((n, _), r)| (&n[..], r));
                    b.replace_dir(no, i.id.as_bytes(), &dir_row(i), entries)
                        .map_err(Error::Index)?;
                }
            }
            None => {}
        }
        Ok(())
    }

    fn done(
        &mut self,
        open: Open<'_>,
        root: usize,
        covered: Appended,
        keep: Option<u64>,
    ) -> Result<()> {
        // Never ahead of the log: what the copy covers is durable first.
        self.log.wait_durable(covered)?;
        match open {
            Open::Build(b) => {
                let no = b.finish(covered.index()).map_err(Error::Index)?;
                self.roots[root].copy = Some(no);
            }
            Open::Batch(mut b) => {
                if let Some(no) = self.roots[root].copy {
                    b.set_covered(no, covered.index());
                }
                self.index.commit(b).map_err(Error::Index)?;
            }
        }
        self.covered[root] = Some(covered.index());
        if std::mem::take(&mut self.written[root]) >= TRIM_ENTRIES {
            weir_sys::heap::trim();
        }
        self.status_mut(|s| {
            s.commits += 1;
            s.error = None;
        });
        // Retention may now take what every root's copy covers, up to the
        // roots' latest MARKs. A clear of 0 would be of everything.
        if self.covered.iter().all(Option::is_some)
            && let Some(&upto) = self.covered.iter().flatten().min()
        {
            let upto = keep.map_or(upto, |k| upto.min(k.saturating_sub(1)));
            if upto > 0 {
                self.log.clear(INDEX_CONSUMER, upto)?;
            }
        }
        Ok(())
    }

    fn status_mut(&self, f: impl FnOnce(&mut Status)) {
        match self.status.lock() {
            Ok(mut s) => f(&mut s),
            Err(p) => f(&mut p.into_inner()),
        }
    }
}

/// A directory's row: where it is, and its times when they describe the
/// entries imaged (else a restart reads it again).
fn dir_row(i: &DirImage) -> Dir {
    let (parent, name) = match &i.location {
        Some((p, n)) => (Some(p.as_bytes().to_vec()), n.to_vec()),
        None => (None, Vec::new()),
    };
    let stamp = |(sec, nsec): (i64, u32)| Timestamp { sec, nsec };
    Dir {
        parent,
        name,
        mtime: i.times.map_or_else(Timestamp::default, |t| stamp(t.mtime)),
        ctime: i.times.map_or_else(Timestamp::default, |t| stamp(t.ctime)),
        times_valid: i.times.is_some(),
    }
}

fn entry_row(e: &crate::tree::Entry) -> Entry {
    Entry {
        id: e.id.as_bytes().to_vec(),
        kind: to_copy(e.kind),
        attrs: None,
    }
}
