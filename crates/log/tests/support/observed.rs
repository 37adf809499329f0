//! [`Observed`]: a [`FileSystem`] that passes every call through to another
//! and tells an [`Observer`] what was done, so that a test which watches
//! the log's I/O writes only what it watches, not the seam's pass-through.

use std::fmt::Debug;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use weir_log::fs::{File, FileSystem};

/// An operation on an open file that succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    /// `n` bytes written at `off`.
    Write {
        off: u64,
        n: usize,
    },
    SyncData,
    SyncAll,
    Allocate(u64),
    SetLen(u64),
}

/// An operation on the filesystem's names that succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameOp<'a> {
    Remove(&'a Path),
    Rename { from: &'a Path, to: &'a Path },
    SyncDir(&'a Path),
}

/// What a test watches. Every method does nothing unless implemented.
pub trait Observer: Send + Sync + Debug + 'static {
    /// `op` was done on `file`, opened at `path`.
    fn file_op(&self, _path: &Path, _file: &dyn File, _op: FileOp) {}
    /// A read of the file opened at `path` is about to start at `off`.
    fn before_read(&self, _path: &Path, _off: u64) {}
    /// `op` was done.
    fn name_op(&self, _op: NameOp<'_>) {}
}

/// `inner`, watched by `observer`.
#[derive(Debug)]
pub struct Observed<O> {
    inner: Arc<dyn FileSystem>,
    observer: Arc<O>,
}

impl<O: Observer> Observed<O> {
    pub fn new(inner: Arc<dyn FileSystem>, observer: Arc<O>) -> Observed<O> {
        Observed { inner, observer }
    }

    fn wrap(&self, path: &Path, file: io::Result<Box<dyn File>>) -> io::Result<Box<dyn File>> {
        Ok(Box::new(ObservedFile {
            inner: file?,
            path: path.to_path_buf(),
            observer: self.observer.clone(),
        }))
    }

    fn then<T>(&self, r: io::Result<T>, op: NameOp<'_>) -> io::Result<T> {
        let r = r?;
        self.observer.name_op(op);
        Ok(r)
    }
}

#[derive(Debug)]
struct ObservedFile<O> {
    inner: Box<dyn File>,
    path: PathBuf,
    observer: Arc<O>,
}

impl<O: Observer> ObservedFile<O> {
    fn then<T>(&self, r: io::Result<T>, op: FileOp) -> io::Result<T> {
        let r = r?;
        self.observer.file_op(&self.path, &*self.inner, op);
        Ok(r)
    }
}

impl<O: Observer> File for ObservedFile<O> {
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<usize> {
        let n = self.inner.write_at(buf, off)?;
        self.observer
            .file_op(&self.path, &*self.inner, FileOp::Write { off, n });
        Ok(n)
    }
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        self.observer.before_read(&self.path, off);
        self.inner.read_at(buf, off)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.then(self.inner.sync_data(), FileOp::SyncData)
    }
    fn sync_all(&self) -> io::Result<()> {
        self.then(self.inner.sync_all(), FileOp::SyncAll)
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        self.then(self.inner.allocate(len), FileOp::Allocate(len))
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.then(self.inner.set_len(len), FileOp::SetLen(len))
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn allocated(&self) -> io::Result<u64> {
        self.inner.allocated()
    }
}

impl<O: Observer> FileSystem for Observed<O> {
    fn create(&self, path: &Path) -> io::Result<Box<dyn File>> {
        self.wrap(path, self.inner.create(path))
    }
    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn File>> {
        self.wrap(path, self.inner.open_rw(path))
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn File>> {
        self.wrap(path, self.inner.open_read(path))
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.then(self.inner.remove(path), NameOp::Remove(path))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.then(self.inner.rename(from, to), NameOp::Rename { from, to })
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.then(self.inner.sync_dir(dir), NameOp::SyncDir(dir))
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner.list(dir)
    }
    fn overwrites_in_place(&self, dir: &Path) -> io::Result<bool> {
        self.inner.overwrites_in_place(dir)
    }
}
