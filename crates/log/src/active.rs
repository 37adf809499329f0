//! The active segment: where the committer places and writes records.
//!
//! Records are placed into a buffer that maps onto the file right after the
//! bytes already written, so the file is only ever extended. A durable commit
//! pads the buffer with zeros to the next 4 KiB boundary before it writes and
//! syncs, so the next commit starts in a fresh block.

use std::io;
use std::path::{Path, PathBuf};

use crate::codec;
use crate::fs::{File, FileSystem, write_all_at};
use crate::segment::{
    FORMAT_VERSION, Footer, HEADER_LEN, SegmentHeader, align_up, next_stride, segment_path,
};
use crate::spare::spare_path;

/// A failed I/O step of a commit: writes can be retried, syncs cannot.
#[derive(Debug)]
pub(crate) enum IoFail {
    /// A write, allocation or truncation failed; nothing is lost.
    Write(io::Error),
    /// An fsync failed; the kernel may have dropped the dirty pages.
    Sync(io::Error),
}

/// The segment being appended to.
#[derive(Debug)]
pub(crate) struct ActiveSegment {
    pub(crate) base: u64,
    pub(crate) path: PathBuf,
    file: Box<dyn File>,
    max_data_end: u64,
    /// Bytes below this offset have been handed to the OS.
    written: u64,
    /// Bytes placed at `written..` and not yet written.
    buf: Vec<u8>,
    /// End of the last record placed.
    data_end: u64,
    next_index: u64,
    first_time_ns: u64,
    last_time_ns: u64,
    entries: Vec<(u64, u64)>,
    next_stride: u64,
    /// The footer being written, once sealing has begun.
    sealing: Option<u64>,
}

impl ActiveSegment {
    /// Creates, preallocates and syncs a new segment whose first index is
    /// `base`: from `spare` (a zero-filled file at [`spare_path`], renamed
    /// into place) when there is one, else a new file reserved with
    /// `fallocate`. A failed fsync is an [`IoFail::Sync`], which poisons
    /// the log like any other.
    pub(crate) fn create(
        fs: &dyn FileSystem,
        dir: &Path,
        base: u64,
        capacity: u64,
        max_data_end: u64,
        now_ns: u64,
        spare: Option<Box<dyn File>>,
    ) -> Result<ActiveSegment, IoFail> {
        let path = segment_path(dir, base);
        let from_spare = spare.is_some();
        let file = match spare {
            Some(file) => {
                fs.rename(&spare_path(dir), &path).map_err(IoFail::Write)?;
                file
            }
            None => fs.create(&path).map_err(IoFail::Write)?,
        };
        let init = (|| {
            if !from_spare {
                file.allocate(capacity).map_err(IoFail::Write)?;
            }
            write_header(&*file, base, capacity, now_ns).map_err(IoFail::Write)?;
            if from_spare {
                // Its size and blocks are synced already; the header
                // overwrites zeros, and the rename is the directory's.
                file.sync_data().map_err(IoFail::Sync)?;
            } else {
                file.sync_all().map_err(IoFail::Sync)?;
            }
            fs.sync_dir(dir).map_err(IoFail::Sync)
        })();
        if let Err(e) = init {
            drop(file);
            // A segment that never got its header holds no record.
            let _ = fs.remove(&path);
            let _ = fs.sync_dir(dir);
            return Err(e);
        }
        Ok(ActiveSegment::empty(path, file, base, max_data_end))
    }

    /// Makes the segment file at `path`, whose first index is `base` and
    /// which holds no valid record (its header never reached the disk, or
    /// its first record was torn), an empty segment again, in place:
    /// truncated, preallocated afresh and given a new header. Recovery
    /// does this rather than remove the file, because the newest segment's
    /// name is what carries the next index once retention has removed the
    /// older ones. No byte of a record is rewritten: none was valid, and
    /// the truncation frees the torn bytes rather than overwriting them.
    /// A crash midway leaves the file under the same name to be reset
    /// again.
    pub(crate) fn reset(
        path: PathBuf,
        file: Box<dyn File>,
        base: u64,
        capacity: u64,
        max_data_end: u64,
        now_ns: u64,
    ) -> io::Result<ActiveSegment> {
        file.set_len(0)?;
        file.allocate(capacity)?;
        write_header(&*file, base, capacity, now_ns)?;
        file.sync_all()?;
        Ok(ActiveSegment::empty(path, file, base, max_data_end))
    }

    /// A segment whose header is written and synced, with no record yet.
    fn empty(path: PathBuf, file: Box<dyn File>, base: u64, max_data_end: u64) -> ActiveSegment {
        ActiveSegment::resume(
            path,
            file,
            base,
            max_data_end,
            HEADER_LEN,
            Vec::new(),
            (0, 0),
        )
    }

    /// Continues a recovered segment whose valid data ends at `end`. An
    /// unaligned `end` is only good for sealing.
    pub(crate) fn resume(
        path: PathBuf,
        file: Box<dyn File>,
        next_index: u64,
        max_data_end: u64,
        end: u64,
        entries: Vec<(u64, u64)>,
        times: (u64, u64),
    ) -> ActiveSegment {
        let base = parse_base(&path).unwrap_or(next_index);
        ActiveSegment {
            base,
            path,
            file,
            max_data_end,
            written: end,
            buf: Vec::with_capacity(1 << 20),
            data_end: end,
            next_index,
            first_time_ns: times.0,
            last_time_ns: times.1,
            // The stretch after the last entry's, as `push` would have it
            // (not 64 KiB after the entry, which could skip a stretch).
            next_stride: entries.last().map_or(HEADER_LEN, |&(_, o)| next_stride(o)),
            entries,
            sealing: None,
        }
    }

    fn place_pos(&self) -> u64 {
        self.written + self.buf.len() as u64
    }

    /// Whether a frame of `len` bytes fits before the footer reserve.
    pub(crate) fn fits(&self, len: usize) -> bool {
        self.sealing.is_none() && self.place_pos() + len as u64 <= self.max_data_end
    }

    /// Places a frame and seals it (writers leave the CRC to this copy; see
    /// `codec::encode_unsealed_to`). The caller checked
    /// [`ActiveSegment::fits`].
    pub(crate) fn push(&mut self, frame: &[u8], index: u64, time_ns: u64) {
        debug_assert_eq!(index, self.next_index);
        let at = self.place_pos();
        if at >= self.next_stride || self.entries.is_empty() {
            self.entries.push((index, at));
            self.next_stride = next_stride(at);
        }
        if self.first_time_ns == 0 {
            self.first_time_ns = time_ns;
        }
        self.last_time_ns = time_ns;
        let start = self.buf.len();
        self.buf.extend_from_slice(frame);
        codec::seal(&mut self.buf[start..]);
        self.data_end = at + frame.len() as u64;
        self.next_index = index + 1;
    }

    /// Where a reader looking for `index` starts: the offset and index of
    /// the last sparse-index entry at or before it (the segment's start
    /// if none), as a sealed segment's footer says.
    pub(crate) fn seek(&self, index: u64) -> (u64, u64) {
        let k = self.entries.partition_point(|&(i, _)| i <= index);
        match k.checked_sub(1) {
            Some(k) => (self.entries[k].1, self.entries[k].0),
            None => (HEADER_LEN, self.base),
        }
    }

    /// Bytes handed to the OS so far (the file offset written up to).
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// Whether placed bytes wait to be written.
    pub(crate) fn has_unwritten(&self) -> bool {
        !self.buf.is_empty()
    }

    /// Pads the placed bytes with zeros to the next block boundary.
    pub(crate) fn pad(&mut self) {
        let to = align_up(self.place_pos());
        let n = (to - self.place_pos()) as usize;
        self.buf.resize(self.buf.len() + n, 0);
    }

    /// Writes placed bytes. On error, the bytes not written stay placed and
    /// the next call continues after the ones that were.
    pub(crate) fn write(&mut self) -> io::Result<()> {
        let mut done = 0;
        let r = loop {
            if done == self.buf.len() {
                break Ok(());
            }
            match self.file.write_at(&self.buf[done..], self.written) {
                Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    done += n;
                    self.written += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.buf.drain(..done);
        r
    }

    /// `fdatasync`.
    pub(crate) fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// The index the next placed record must have.
    pub(crate) fn next_index(&self) -> u64 {
        self.next_index
    }

    /// Seals the segment: padding, fdatasync of the records, footer, trim of
    /// the unused preallocation, fsync of file and directory. Safe to call
    /// again after a write error. Returns the sealed file's length.
    pub(crate) fn seal(&mut self, fs: &dyn FileSystem, dir: &Path) -> Result<u64, IoFail> {
        if self.sealing.is_none() {
            self.pad();
            // The records must be on disk before the footer that vouches
            // for them: recovery trusts a valid footer, and a power cut
            // could otherwise keep the footer's block and lose one before it.
            self.write().map_err(IoFail::Write)?;
            self.file.sync_data().map_err(IoFail::Sync)?;
            let at = self.place_pos();
            let footer = Footer {
                first_index: self.base,
                last_index: self.next_index - 1,
                data_end: self.data_end.max(HEADER_LEN),
                first_time_ns: self.first_time_ns,
                last_time_ns: self.last_time_ns,
                entries: std::mem::take(&mut self.entries),
            };
            let bytes = footer.encode(at);
            self.buf.extend_from_slice(&bytes);
            self.sealing = Some(at + bytes.len() as u64);
        }
        self.write().map_err(IoFail::Write)?;
        let end = self.sealing.expect("set above");
        self.file.set_len(end).map_err(IoFail::Write)?;
        self.file.sync_all().map_err(IoFail::Sync)?;
        fs.sync_dir(dir).map_err(IoFail::Sync)?;
        Ok(end)
    }

    /// Time of the last record placed.
    pub(crate) fn last_time_ns(&self) -> u64 {
        self.last_time_ns
    }
}

/// Writes the header of a new segment (not synced).
fn write_header(file: &dyn File, base: u64, capacity: u64, now_ns: u64) -> io::Result<()> {
    let header = SegmentHeader {
        version: FORMAT_VERSION,
        base_index: base,
        capacity,
        created_ns: now_ns,
    };
    write_all_at(file, &header.encode(), 0)
}

fn parse_base(path: &Path) -> Option<u64> {
    crate::segment::parse_segment_name(path)
}
