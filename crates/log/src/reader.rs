//! Readers: iterate committed records from an index on, optionally through
//! a type mask.
//!
//! A live reader (from [`crate::Log::reader`]) stops at the last committed
//! index, so it never sees a hole. A directory reader ([`Reader::open_dir`])
//! works from another process without any lock: segment bytes are never
//! rewritten, so it reads the frames that are valid and in sequence, and
//! treats anything else at the tail as not yet written.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::codec::{DecodeError, FrameRef};
use crate::error::{Error, Result};
use crate::fs::{File, FileSystem, StdFs};
use crate::kind::TypeMask;
use crate::log::Inner;
use crate::record::{LogRecord, RecordRef};
use crate::recovery::list_segments;
use crate::scan::{Scanner, Step};
use crate::segment::{Footer, HEADER_LEN, SegmentHeader};

enum Source {
    Live(Arc<Inner>),
    Dir {
        fs: Arc<dyn FileSystem>,
        dir: PathBuf,
    },
}

struct OpenSegment {
    path: PathBuf,
    file: Box<dyn File>,
    footer: Option<Footer>,
    pos: u64,
    next_index: u64,
}

/// An iterator over records from a starting index.
///
/// `next()` returns `None` once it has caught up; call it again later (or
/// use [`Reader::wait`]) to follow the log.
pub struct Reader {
    src: Source,
    next: u64,
    mask: Option<TypeMask>,
    /// Only records whose time is in this window (ns, bounds included).
    times: Option<(u64, u64)>,
    seg: Option<OpenSegment>,
    /// Records decoded ahead by one scan, served before scanning again.
    queue: VecDeque<LogRecord>,
    /// The iterator returned an error and is done (`next_record` still
    /// reports the error again).
    failed: bool,
    /// Bytes of frames looked at, kept or not, and where a scan stops
    /// (see [`Reader::limit_scan`]).
    scanned: u64,
    scan_limit: u64,
    /// Where to start in the unsealed segment of this base, which has no
    /// footer to seek with: `(base, offset, index)` (see
    /// [`Reader::start_unsealed_at`]).
    unsealed_start: Option<(u64, u64, u64)>,
}

/// One scan decodes at most this many records (or bytes) ahead. Scanning
/// record by record would re-read a whole chunk of the segment per record.
const BATCH_RECORDS: usize = 1024;
const BATCH_BYTES: usize = 1 << 20;

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

impl Reader {
    pub(crate) fn live(inner: Arc<Inner>, from: u64, mask: Option<TypeMask>) -> Reader {
        Reader {
            src: Source::Live(inner),
            next: from.max(1),
            mask,
            times: None,
            seg: None,
            queue: VecDeque::new(),
            failed: false,
            scanned: 0,
            scan_limit: u64::MAX,
            unsealed_start: None,
        }
    }

    /// Reads the log in `dir` from another process, without a lock.
    pub fn open_dir(dir: impl AsRef<Path>, from: u64) -> Reader {
        Reader::open_dir_with(Arc::new(StdFs), dir, from)
    }

    /// Like [`Reader::open_dir`], through a given filesystem.
    pub fn open_dir_with(fs: Arc<dyn FileSystem>, dir: impl AsRef<Path>, from: u64) -> Reader {
        Reader {
            src: Source::Dir {
                fs,
                dir: dir.as_ref().to_path_buf(),
            },
            next: from.max(1),
            mask: None,
            times: None,
            seg: None,
            queue: VecDeque::new(),
            failed: false,
            scanned: 0,
            scan_limit: u64::MAX,
            unsealed_start: None,
        }
    }

    /// Applies a type mask: other records are skipped.
    pub fn with_mask(mut self, mask: TypeMask) -> Reader {
        self.mask = Some(mask);
        self
    }

    /// Keeps only records whose time is in `since..=until` (ns since the
    /// epoch): the others are stepped over from their frame header, their
    /// names and fields never decoded. A filter, not a seek: the wall clock
    /// may step back, so the whole range is still looked at.
    pub fn with_time_window(mut self, since: u64, until: u64) -> Reader {
        self.times = Some((since, until));
        self
    }

    /// From now on, stops looking once frames of `bytes` in all have been
    /// stepped over, kept, skipped by the mask or before the start: a mask
    /// that takes nothing would otherwise scan to the end of the log in
    /// one call. `next_record` then returns `Ok(None)` before the end;
    /// [`Reader::position`] says how far it got, and the next call goes on
    /// from there. Each call starts a new budget; until then, once spent,
    /// every `next_record` returns after the next frame it steps over.
    pub fn limit_scan(&mut self, bytes: u64) {
        self.scanned = 0;
        self.scan_limit = bytes;
    }

    /// Starts in the unsealed segment `base` at `offset`, where the frame
    /// of `index` begins, rather than at its first frame: the writer's
    /// sparse index for that segment, which has no footer yet. Ignored
    /// unless `index` is at or before the start.
    pub(crate) fn start_unsealed_at(mut self, base: u64, offset: u64, index: u64) -> Reader {
        if index <= self.next && index >= base {
            self.unsealed_start = Some((base, offset, index));
        }
        self
    }

    /// Bytes of frames looked at so far, kept or not.
    pub(crate) fn scanned_bytes(&self) -> u64 {
        self.scanned
    }

    /// The index the reader will return next (before the mask).
    pub fn position(&self) -> u64 {
        self.queue.front().map_or(self.next, |r| r.index)
    }

    fn fs(&self) -> Arc<dyn FileSystem> {
        match &self.src {
            Source::Live(i) => i.opts.fs.clone(),
            Source::Dir { fs, .. } => fs.clone(),
        }
    }

    fn limit(&self) -> u64 {
        match &self.src {
            Source::Live(i) => i.signals.committed(),
            Source::Dir { .. } => u64::MAX,
        }
    }

    /// The segments as `(base, path)`, oldest first.
    fn segments(&self) -> Result<Vec<(u64, PathBuf)>> {
        match &self.src {
            Source::Live(i) => Ok(i.catalog.paths()),
            Source::Dir { fs, dir } => {
                list_segments(&**fs, dir).map_err(|e| Error::io("list", dir, e))
            }
        }
    }

    /// Opens the segment that holds `self.next`. `Ok(false)`: none yet.
    fn open_segment(&mut self) -> Result<bool> {
        let segs = self.segments()?;
        let Some(k) = segs.iter().rposition(|(b, _)| *b <= self.next) else {
            return match segs.first() {
                Some((oldest, _)) => Err(Error::Truncated {
                    requested: self.next,
                    oldest: *oldest,
                }),
                None => Ok(false),
            };
        };
        let (base, path) = segs[k].clone();
        let fs = self.fs();
        let file = match fs.open_read(&path) {
            Ok(f) => f,
            // Garbage-collected since the listing.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let oldest = self.segments()?.first().map_or(self.next, |s| s.0);
                return Err(Error::Truncated {
                    requested: self.next,
                    oldest,
                });
            }
            Err(e) => return Err(Error::io("open", &path, e)),
        };
        let corrupt = |offset, kind| Error::Corrupt {
            path: path.clone(),
            offset,
            kind,
        };
        match SegmentHeader::read(&*file).map_err(|e| Error::io("read", &path, e))? {
            Ok(h) => {
                h.ensure_supported(&path)?;
                if h.base_index != base {
                    return Err(corrupt(0, DecodeError::BadSegment("header index")));
                }
            }
            // A segment being created right now in another process.
            Err(_) if matches!(self.src, Source::Dir { .. }) && k + 1 == segs.len() => {
                return Ok(false);
            }
            Err(e) => return Err(corrupt(0, e)),
        }
        let len = file.len().map_err(|e| Error::io("stat", &path, e))?;
        let footer = match Footer::read(&*file, len).map_err(|e| Error::io("read", &path, e))? {
            Some(Ok(f)) => Some(f),
            Some(Err(e)) if k + 1 < segs.len() => return Err(corrupt(len, e)),
            // Segments are sealed before their successor is created, so an
            // older segment without a footer is damaged, not being written.
            None if k + 1 < segs.len() => {
                return Err(corrupt(len, DecodeError::BadSegment("not sealed")));
            }
            _ => None,
        };
        let (pos, next_index) = match &footer {
            // Past a sealed segment whose successor starts further on: the
            // indexes between are missing (a damaged or tampered log).
            // Waiting for them would spin for ever.
            Some(f) if self.next > f.last_index && k + 1 < segs.len() => {
                let (found, next_path) = segs[k + 1].clone();
                return Err(Error::Corrupt {
                    path: next_path,
                    offset: 0,
                    kind: DecodeError::Gap {
                        expected: self.next,
                        found,
                    },
                });
            }
            // Past the newest sealed segment: its successor is not there yet.
            Some(f) if self.next > f.last_index => return Ok(false),
            Some(f) => {
                let at = f.seek(self.next);
                let idx = f
                    .entries
                    .iter()
                    .rev()
                    .find(|&&(_, o)| o == at)
                    .map_or(base, |&(i, _)| i);
                (at, idx)
            }
            None => match self.unsealed_start.take() {
                Some((b, offset, index)) if b == base => (offset, index),
                _ => (HEADER_LEN, base),
            },
        };
        self.seg = Some(OpenSegment {
            path,
            file,
            footer,
            pos,
            next_index,
        });
        Ok(true)
    }

    /// The next record, `Ok(None)` when caught up.
    pub fn next_record(&mut self) -> Result<Option<LogRecord>> {
        if let Some(r) = self.queue.pop_front() {
            return Ok(Some(r));
        }
        let mut queue = std::mem::take(&mut self.queue);
        let mut bytes = 0;
        let scanned = self.scan(&mut |f| {
            queue.push_back(f.to_record());
            bytes += f.len;
            queue.len() >= BATCH_RECORDS || bytes >= BATCH_BYTES
        });
        self.queue = queue;
        match scanned {
            // Records decoded before an error come first; the scan state
            // stops at the bad spot, so the next call meets the error again.
            Err(e) if self.queue.is_empty() => Err(e),
            _ => Ok(self.queue.pop_front()),
        }
    }

    /// Hands `f` every record up to the point where the reader has caught
    /// up (or its scan limit), each borrowed from the reader's buffer: no
    /// allocation per record, for a reader that looks at each once. The
    /// position moves past them, as if each had come from
    /// [`Reader::next_record`]. On an error, the records before the bad
    /// spot have been handed over.
    pub fn for_each_record(&mut self, mut f: impl FnMut(&RecordRef<'_>)) -> Result<()> {
        while let Some(r) = self.queue.pop_front() {
            f(&r.view());
        }
        loop {
            let at = self.next;
            self.scan(&mut |frame| {
                f(&frame.record());
                false
            })?;
            if self.next == at || self.scanned >= self.scan_limit {
                return Ok(());
            }
        }
    }

    /// Hands the frames past the mask and the time window to `keep`, which
    /// says when to stop (a batch is full); stops too at the committed
    /// index, at the end of the data, or at the scan limit.
    fn scan(&mut self, keep: &mut dyn FnMut(&FrameRef<'_>) -> bool) -> Result<()> {
        let mut reopened = false;
        loop {
            let committed = self.limit();
            let live = matches!(self.src, Source::Live(_));
            if self.next > committed {
                return Ok(());
            }
            if self.seg.is_none() && !self.open_segment()? {
                return Ok(());
            }
            let Some(seg) = self.seg.as_mut() else {
                continue;
            };
            let limit = seg.footer.as_ref().map_or(u64::MAX, |f| f.data_end);
            let flen = seg
                .file
                .len()
                .map_err(|e| Error::io("stat", &seg.path, e))?;
            let mut sc = Scanner::new(&*seg.file, seg.pos, seg.next_index, limit.min(flen));
            loop {
                match sc.step().map_err(|e| Error::io("read", &seg.path, e))? {
                    Step::Frame { offset, len } => {
                        seg.pos = sc.pos();
                        seg.next_index = sc.next_index();
                        let f = sc
                            .frame(offset, len)
                            .map_err(|e| Error::io("read", &seg.path, e))?;
                        let idx = f.index;
                        self.scanned += len as u64;
                        if idx < self.next {
                            if self.scanned >= self.scan_limit {
                                return Ok(());
                            }
                            continue;
                        }
                        let wanted = self.mask.as_ref().is_none_or(|m| m.contains(f.kind))
                            && self.times.is_none_or(|(a, b)| (a..=b).contains(&f.time_ns));
                        self.next = idx + 1;
                        if wanted && keep(&f) {
                            return Ok(());
                        }
                        if self.next > committed || self.scanned >= self.scan_limit {
                            return Ok(());
                        }
                    }
                    Step::End { offset, cause } => {
                        let corrupt = |kind| Error::Corrupt {
                            path: seg.path.clone(),
                            offset,
                            kind,
                        };
                        match seg.footer.as_ref().map(|f| f.last_index) {
                            Some(last) if self.next <= last => {
                                return Err(corrupt(cause.unwrap_or(DecodeError::Gap {
                                    expected: self.next,
                                    found: 0,
                                })));
                            }
                            // Done with this sealed segment.
                            Some(_) => self.seg = None,
                            None if !reopened => {
                                // The active segment may have been sealed
                                // (and succeeded) since we opened it.
                                reopened = true;
                                let len = flen.max(
                                    seg.file
                                        .len()
                                        .map_err(|e| Error::io("stat", &seg.path, e))?,
                                );
                                if let Some(Ok(f)) = Footer::read(&*seg.file, len)
                                    .map_err(|e| Error::io("read", &seg.path, e))?
                                {
                                    seg.footer = Some(f);
                                }
                            }
                            None => {
                                if live && self.next <= committed {
                                    return Err(corrupt(cause.unwrap_or(DecodeError::Zero)));
                                }
                                // Caught up; keep the position for later.
                                return Ok(());
                            }
                        }
                        break;
                    }
                }
            }
        }
    }

    /// Waits up to `timeout` for records past the current position.
    pub fn wait(&self, timeout: Duration) {
        if !self.queue.is_empty() {
            return;
        }
        match &self.src {
            Source::Live(inner) => {
                inner
                    .signals
                    .wait_committed(self.next, timeout, || inner.health.is_closing());
            }
            Source::Dir { .. } => std::thread::sleep(timeout.min(Duration::from_millis(50))),
        }
    }
}

impl Iterator for Reader {
    type Item = Result<LogRecord>;

    /// Ends after the first error, so that `collect` on a damaged log
    /// returns the error instead of repeating it forever.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = self.next_record().transpose();
        self.failed = matches!(r, Some(Err(_)));
        r
    }
}
