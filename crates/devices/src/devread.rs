//! [`BlockReader`]: weir-lvm's [`ReadAt`] over a block device node, with
//! `O_DIRECT`.
//!
//! Probing reads a few KiB per PV. Through the page cache those reads would
//! fill it with every PV's first pages and could return stale bytes another
//! host wrote to a shared disk; `O_DIRECT` reads the media and caches
//! nothing. It demands that offset, length and buffer address be multiples
//! of the logical block size, so each read covers the requested bytes with
//! whole aligned blocks into an aligned bounce buffer and copies out what
//! was asked. A device (or file system) that refuses `O_DIRECT` with
//! `EINVAL` is read through the cache instead.
//!
//! The reader counts the bytes it took from the device, so the benchmarks
//! can check the "a few KiB per PV" promise.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustix::fs::{FileType, Mode, OFlags, SeekFrom};
use rustix::io::Errno;
use weir_lvm::ReadAt;

use crate::{Error, Result};

/// The alignment used when the device does not say (a regular file): a
/// multiple of every logical block size in use.
const DEFAULT_ALIGN: usize = 4096;
/// The largest logical block size believed; anything else falls back to
/// [`DEFAULT_ALIGN`].
const MAX_ALIGN: usize = 64 * 1024;
/// The bounce buffer's size limit: a large read goes in chunks of this.
const MAX_CHUNK: usize = 1 << 20;

/// A block device (or image file) opened read-only for [`ReadAt`].
#[derive(Debug)]
pub struct BlockReader {
    fd: OwnedFd,
    path: PathBuf,
    size: u64,
    align: usize,
    direct: AtomicBool,
    bytes_read: AtomicU64,
    reads: AtomicU64,
}

impl BlockReader {
    /// Opens `path` read-only with `O_DIRECT` (or buffered, if the open
    /// refuses it with `EINVAL`), and learns its size (a seek to the end)
    /// and logical block size (`BLKSSZGET`; 4096 for a regular file).
    pub fn open(path: impl AsRef<Path>) -> Result<BlockReader> {
        let path = path.as_ref();
        let fd = Self::open_fd(path)?;
        let open_err = |e: Errno| Error::Open {
            path: path.to_owned(),
            source: e.into(),
        };
        let st = rustix::fs::fstat(&fd.0).map_err(open_err)?;
        let size = rustix::fs::seek(&fd.0, SeekFrom::End(0)).map_err(open_err)?;
        let align = if FileType::from_raw_mode(st.st_mode) == FileType::BlockDevice {
            let bs = rustix::fs::ioctl_blksszget(&fd.0).map_err(open_err)?;
            Some(bs)
        } else {
            None
        };
        Ok(Self::with(path, fd, size, align))
    }

    /// Opens block device `path` whose size and logical block size sysfs
    /// has just given, saving the three calls that [`open`](Self::open)
    /// makes to learn them (a uevent's probe is a handful of calls, so
    /// they count). If the device shrank since, reads past its new end
    /// fail as they would past any end.
    pub fn open_known(
        path: impl AsRef<Path>,
        size: u64,
        logical_block_size: Option<u32>,
    ) -> Result<BlockReader> {
        let path = path.as_ref();
        let fd = Self::open_fd(path)?;
        Ok(Self::with(path, fd, size, logical_block_size))
    }

    /// Opens with `O_DIRECT`, or buffered if the open refuses it.
    fn open_fd(path: &Path) -> Result<(OwnedFd, bool)> {
        let open_err = |e: Errno| Error::Open {
            path: path.to_owned(),
            source: e.into(),
        };
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY;
        match rustix::fs::open(path, flags | OFlags::DIRECT, Mode::empty()) {
            Ok(fd) => Ok((fd, true)),
            Err(Errno::INVAL) => Ok((
                rustix::fs::open(path, flags, Mode::empty()).map_err(open_err)?,
                false,
            )),
            Err(e) => Err(open_err(e)),
        }
    }

    fn with(
        path: &Path,
        (fd, direct): (OwnedFd, bool),
        size: u64,
        block_size: Option<u32>,
    ) -> BlockReader {
        let align = block_size
            .and_then(|b| usize::try_from(b).ok())
            .filter(|b| b.is_power_of_two() && (512..=MAX_ALIGN).contains(b))
            .unwrap_or(DEFAULT_ALIGN);
        BlockReader {
            fd,
            path: path.to_owned(),
            size,
            align,
            direct: AtomicBool::new(direct),
            bytes_read: AtomicU64::new(0),
            reads: AtomicU64::new(0),
        }
    }

    /// The path it was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The alignment of every read: the logical block size.
    pub fn block_size(&self) -> usize {
        self.align
    }

    /// Whether reads bypass the page cache (`O_DIRECT`).
    pub fn is_direct(&self) -> bool {
        self.direct.load(Ordering::Relaxed)
    }

    /// The bytes read from the device so far: whole aligned blocks, so at
    /// least what callers asked for.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    /// The `pread` calls made so far.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Reads `buf.len()` bytes at aligned `offset`, or fewer at the end of
    /// the device; falls back to buffered reads on `EINVAL` under
    /// `O_DIRECT`.
    fn pread_full(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            let at = offset + done as u64;
            match rustix::io::pread(&self.fd, &mut buf[done..], at) {
                Ok(0) => break,
                Ok(n) => {
                    done += n;
                    self.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
                    self.reads.fetch_add(1, Ordering::Relaxed);
                }
                Err(Errno::INTR) => {}
                Err(Errno::INVAL) if self.is_direct() => self.drop_direct()?,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(done)
    }

    /// Clears `O_DIRECT` on the open file, for a device that takes the
    /// open but refuses the reads.
    fn drop_direct(&self) -> io::Result<()> {
        let flags = rustix::fs::fcntl_getfl(&self.fd)?;
        rustix::fs::fcntl_setfl(&self.fd, flags - OFlags::DIRECT)?;
        self.direct.store(false, Ordering::Relaxed);
        tracing::debug!(path = %self.path.display(), "O_DIRECT refused; reading buffered");
        Ok(())
    }
}

impl ReadAt for BlockReader {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let eof = || io::Error::from(io::ErrorKind::UnexpectedEof);
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&end| end <= self.size)
            .ok_or_else(eof)?;
        if buf.is_empty() {
            return Ok(());
        }
        let align = self.align as u64;
        let covering = end.div_ceil(align) * align - offset / align * align;
        let mut bounce = AlignedBuf::new(covering.min(MAX_CHUNK as u64) as usize, self.align);
        let mut pos = offset;
        while pos < end {
            let start = pos / align * align;
            let chunk_end = (end.div_ceil(align) * align).min(start + MAX_CHUNK as u64);
            let chunk = bounce.slice((chunk_end - start) as usize);
            let got = self.pread_full(chunk, start)? as u64;
            let skip = pos - start;
            let useful_end = got.min(end - start);
            if useful_end <= skip {
                return Err(eof());
            }
            let from = (pos - offset) as usize;
            let n = (useful_end - skip) as usize;
            buf[from..from + n].copy_from_slice(&chunk[skip as usize..skip as usize + n]);
            pos += n as u64;
        }
        Ok(())
    }

    fn size(&self) -> u64 {
        self.size
    }
}

/// A byte buffer whose start is aligned for `O_DIRECT`, built in safe code:
/// over-allocate by the alignment and start at the first aligned address.
struct AlignedBuf {
    vec: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    fn new(len: usize, align: usize) -> AlignedBuf {
        let vec = vec![0u8; len + align];
        // `align_offset` may in theory give up (usize::MAX); an unaligned
        // buffer then only costs the EINVAL fallback to buffered reads.
        let start = Some(vec.as_ptr().align_offset(align))
            .filter(|&s| s <= align)
            .unwrap_or(0);
        AlignedBuf { vec, start, len }
    }

    /// The first `n` aligned bytes (`n` at most the length asked for).
    fn slice(&mut self, n: usize) -> &mut [u8] {
        &mut self.vec[self.start..self.start + n.min(self.len)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buffers_start_aligned() {
        for align in [512, 4096, 65536] {
            let mut b = AlignedBuf::new(3 * align, align);
            let s = b.slice(2 * align);
            assert_eq!(s.len(), 2 * align);
            assert_eq!(s.as_ptr() as usize % align, 0);
        }
    }
}
