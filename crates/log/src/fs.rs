//! The filesystem seam.
//!
//! Every byte the log reads or writes goes through [`FileSystem`] and
//! [`File`], so tests can put [`crate::fault::FaultyFs`] in between and inject
//! write errors, fsync errors, ENOSPC, short writes and power cuts.

use std::fmt::Debug;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// An open file.
#[allow(clippy::len_without_is_empty)] // `len` is an I/O query, not a collection size.
pub trait File: Send + Sync + Debug {
    /// Writes at `off`, returning how many bytes were written (possibly fewer).
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<usize>;
    /// Reads at `off`, returning how many bytes were read (0 at end of file).
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize>;
    /// `fdatasync`.
    fn sync_data(&self) -> io::Result<()>;
    /// `fsync`.
    fn sync_all(&self) -> io::Result<()>;
    /// Reserves `len` bytes from offset 0 (`fallocate`), without changing data.
    fn allocate(&self, len: u64) -> io::Result<()>;
    /// Truncates or extends the file.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// The file's length.
    fn len(&self) -> io::Result<u64>;
    /// Bytes allocated on disk (`st_blocks * 512`).
    fn allocated(&self) -> io::Result<u64>;
}

/// A directory of files.
pub trait FileSystem: Send + Sync + Debug {
    /// Creates a new file for reading and writing; fails if it exists.
    fn create(&self, path: &Path) -> io::Result<Box<dyn File>>;
    /// Opens an existing file for reading and writing.
    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn File>>;
    /// Opens an existing file for reading.
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn File>>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Renames a file, replacing the target.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes directory entries durable (`fsync` on the directory).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Creates a directory and its parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// The names of the entries of a directory.
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    /// Whether the filesystem holding `dir` overwrites a file's blocks in
    /// place (ext4, xfs), rather than copying on write (btrfs) or keeping
    /// no blocks (tmpfs). Only there does writing zeros through a segment
    /// ahead of time make its later fsyncs cheaper (see
    /// [`Preallocation`](crate::Preallocation)) without fragmenting it.
    /// Without an answer, no.
    fn overwrites_in_place(&self, _dir: &Path) -> io::Result<bool> {
        Ok(false)
    }
}

/// `EXT4_SUPER_MAGIC` (linux/magic.h): ext2, ext3 and ext4.
const EXT4_SUPER_MAGIC: u64 = 0xEF53;
/// `XFS_SUPER_MAGIC` (linux/magic.h).
const XFS_SUPER_MAGIC: u64 = 0x5846_5342;

/// The real filesystem.
#[derive(Debug, Default, Clone, Copy)]
pub struct StdFs;

#[derive(Debug)]
struct StdFile(std::fs::File);

impl File for StdFile {
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<usize> {
        self.0.write_at(buf, off)
    }
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        self.0.read_at(buf, off)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.0.sync_all()
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        match rustix::fs::fallocate(&self.0, rustix::fs::FallocateFlags::empty(), 0, len) {
            Ok(()) => Ok(()),
            // Filesystems without fallocate still get a file of the full size.
            Err(rustix::io::Errno::OPNOTSUPP) => self.0.set_len(len),
            Err(e) => Err(e.into()),
        }
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn allocated(&self) -> io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        Ok(self.0.metadata()?.blocks() * 512)
    }
}

impl FileSystem for StdFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn File>> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        Ok(Box::new(StdFile(f)))
    }
    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn File>> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        Ok(Box::new(StdFile(f)))
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn File>> {
        Ok(Box::new(StdFile(std::fs::File::open(path)?)))
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::File::open(dir)?.sync_all()
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        std::fs::read_dir(dir)?
            .map(|e| e.map(|e| e.path()))
            .collect()
    }
    fn overwrites_in_place(&self, dir: &Path) -> io::Result<bool> {
        // `f_type` is signed on some targets; the magic numbers are not.
        #[allow(clippy::unnecessary_cast)]
        let magic = rustix::fs::statfs(dir)?.f_type as u64;
        Ok(matches!(magic, EXT4_SUPER_MAGIC | XFS_SUPER_MAGIC))
    }
}

/// Writes all of `buf` at `off`, retrying short writes.
pub(crate) fn write_all_at(f: &dyn File, mut buf: &[u8], mut off: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match f.write_at(buf, off) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                off += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
pub(crate) fn read_full_at(f: &dyn File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match f.read_at(&mut buf[got..], off + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Removes `path`; a file that is not there is no error.
pub(crate) fn remove_if_present(fs: &dyn FileSystem, path: &Path) -> io::Result<()> {
    match fs.remove(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

/// Where [`replace_file`] failed, which decides what the caller may
/// believe is on disk.
#[derive(Debug)]
pub(crate) enum ReplaceError {
    /// The old file (if any) is still in place: writing or fsyncing the
    /// new one, or the rename, failed. `fsync` says whether it was an
    /// fsync, which poisons a log however harmless its file.
    NotReplaced { source: io::Error, fsync: bool },
    /// The new file took the old one's name, but the directory's fsync
    /// failed: readers see the new contents now, and which of the two a
    /// power cut leaves is unknown.
    Unsynced(io::Error),
}

impl ReplaceError {
    /// The underlying error.
    pub(crate) fn into_source(self) -> io::Error {
        match self {
            ReplaceError::NotReplaced { source, .. } | ReplaceError::Unsynced(source) => source,
        }
    }
}

/// Replaces `path` with `bytes` atomically: write a temporary file, fsync it,
/// rename it over `path`, fsync the directory.
pub(crate) fn replace_file(
    fs: &dyn FileSystem,
    path: &Path,
    bytes: &[u8],
) -> Result<(), ReplaceError> {
    let not_replaced = |source| ReplaceError::NotReplaced {
        source,
        fsync: false,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = path.with_extension("tmp");
    remove_if_present(fs, &tmp).map_err(not_replaced)?;
    let f = fs.create(&tmp).map_err(not_replaced)?;
    write_all_at(&*f, bytes, 0).map_err(not_replaced)?;
    f.sync_all().map_err(|source| ReplaceError::NotReplaced {
        source,
        fsync: true,
    })?;
    drop(f);
    fs.rename(&tmp, path).map_err(not_replaced)?;
    fs.sync_dir(dir).map_err(ReplaceError::Unsynced)
}

/// Reads a whole small file, or `None` if it does not exist. A file longer
/// than `max_len` is not read: `Some(Err(len))`.
pub(crate) fn read_file(
    fs: &dyn FileSystem,
    path: &Path,
    max_len: u64,
) -> io::Result<Option<Result<Vec<u8>, u64>>> {
    let f = match fs.open_read(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = f.len()?;
    if len > max_len {
        return Ok(Some(Err(len)));
    }
    let mut buf = vec![0; usize::try_from(len).map_err(|_| io::ErrorKind::InvalidData)?];
    let n = read_full_at(&*f, &mut buf, 0)?;
    buf.truncate(n);
    Ok(Some(Ok(buf)))
}
