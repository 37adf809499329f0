//! An in-memory [`FileSystem`]: [`MemFs`].
//!
//! It exists for fuzzing and fast tests. A fuzz target can put arbitrary
//! bytes into "segment files" and run the directory reader or `verify` over
//! them without touching a disk, and property tests can open thousands of
//! logs cheaply. It follows POSIX semantics where the log relies on them:
//! `create` fails on an existing file, `rename` replaces its target, a removed
//! file stays readable through handles that are still open, and a read past
//! the end returns 0. Syncs do nothing, because nothing here survives the
//! process anyway; use [`crate::fault::FaultyFs`] to simulate power cuts.
//!
//! Note that [`crate::Log::open`] still takes its writer lock in the real
//! directory, so a log on a `MemFs` needs a real (empty) directory at the
//! same path, for example a temporary one.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use crate::fs::{File, FileSystem};

type Data = Arc<RwLock<Vec<u8>>>;

#[derive(Debug, Default)]
struct State {
    files: BTreeMap<PathBuf, Data>,
    dirs: BTreeSet<PathBuf>,
}

/// A filesystem held in memory. Clones share the same files.
#[derive(Debug, Default, Clone)]
pub struct MemFs {
    state: Arc<Mutex<State>>,
    bytes_read: Arc<AtomicU64>,
}

#[derive(Debug)]
struct MemFile {
    data: Data,
    writable: bool,
    bytes_read: Arc<AtomicU64>,
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, path.display().to_string())
}

fn parent_of(path: &Path) -> PathBuf {
    path.parent().unwrap_or(Path::new("")).to_path_buf()
}

impl MemFs {
    /// An empty filesystem.
    pub fn new() -> MemFs {
        MemFs::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Creates or replaces the file at `path` with `bytes`, creating its
    /// parent directories.
    pub fn write_file(&self, path: impl AsRef<Path>, bytes: &[u8]) {
        let path = path.as_ref();
        let mut s = self.lock();
        add_dirs(&mut s, &parent_of(path));
        s.files
            .insert(path.to_path_buf(), Arc::new(RwLock::new(bytes.to_vec())));
    }

    /// The contents of the file at `path`, if there is one.
    pub fn read_file(&self, path: impl AsRef<Path>) -> Option<Vec<u8>> {
        let s = self.lock();
        let data = s.files.get(path.as_ref())?;
        let bytes = data.read().unwrap_or_else(|p| p.into_inner()).clone();
        Some(bytes)
    }

    /// Bytes returned by `read_at` so far, over all files: lets a test
    /// check that a reader does not read the same data over and over.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }

    fn open_existing(&self, path: &Path, writable: bool) -> io::Result<Box<dyn File>> {
        let data = self
            .lock()
            .files
            .get(path)
            .cloned()
            .ok_or_else(|| not_found(path))?;
        Ok(self.file(data, writable))
    }

    fn file(&self, data: Data, writable: bool) -> Box<dyn File> {
        Box::new(MemFile {
            data,
            writable,
            bytes_read: self.bytes_read.clone(),
        })
    }

    /// The paths of all files, sorted.
    pub fn files(&self) -> Vec<PathBuf> {
        self.lock().files.keys().cloned().collect()
    }
}

fn add_dirs(s: &mut State, dir: &Path) {
    for a in dir.ancestors() {
        if !a.as_os_str().is_empty() {
            s.dirs.insert(a.to_path_buf());
        }
    }
}

impl MemFile {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<u8>> {
        self.data.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> io::Result<std::sync::RwLockWriteGuard<'_, Vec<u8>>> {
        if !self.writable {
            return Err(io::Error::from_raw_os_error(
                rustix::io::Errno::BADF.raw_os_error(),
            ));
        }
        Ok(self.data.write().unwrap_or_else(|p| p.into_inner()))
    }
}

fn to_usize(v: u64) -> io::Result<usize> {
    usize::try_from(v)
        .map_err(|_| io::Error::from_raw_os_error(rustix::io::Errno::FBIG.raw_os_error()))
}

impl File for MemFile {
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<usize> {
        let mut d = self.write()?;
        let off = to_usize(off)?;
        let end = off
            .checked_add(buf.len())
            .ok_or_else(|| io::Error::from_raw_os_error(rustix::io::Errno::FBIG.raw_os_error()))?;
        if d.len() < end {
            d.resize(end, 0);
        }
        d[off..end].copy_from_slice(buf);
        Ok(buf.len())
    }

    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        let d = self.read();
        let Ok(off) = usize::try_from(off) else {
            return Ok(0);
        };
        if off >= d.len() {
            return Ok(0);
        }
        let n = buf.len().min(d.len() - off);
        buf[..n].copy_from_slice(&d[off..off + n]);
        self.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    fn sync_all(&self) -> io::Result<()> {
        Ok(())
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        let mut d = self.write()?;
        let len = to_usize(len)?;
        if d.len() < len {
            d.resize(len, 0);
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let len = to_usize(len)?;
        self.write()?.resize(len, 0);
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.read().len() as u64)
    }

    fn allocated(&self) -> io::Result<u64> {
        Ok((self.read().len() as u64).div_ceil(4096) * 4096)
    }
}

impl FileSystem for MemFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn File>> {
        let mut s = self.lock();
        if !s.dirs.contains(&parent_of(path)) {
            return Err(not_found(path));
        }
        if s.files.contains_key(path) || s.dirs.contains(path) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        let data = Data::default();
        s.files.insert(path.to_path_buf(), data.clone());
        drop(s);
        Ok(self.file(data, true))
    }

    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn File>> {
        self.open_existing(path, true)
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn File>> {
        self.open_existing(path, false)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.lock()
            .files
            .remove(path)
            .map(drop)
            .ok_or_else(|| not_found(path))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.lock();
        if !s.dirs.contains(&parent_of(to)) {
            return Err(not_found(to));
        }
        let data = s.files.remove(from).ok_or_else(|| not_found(from))?;
        s.files.insert(to.to_path_buf(), data);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.lock().dirs.contains(dir) {
            Ok(())
        } else {
            Err(not_found(dir))
        }
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.lock();
        if s.files.contains_key(dir) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        add_dirs(&mut s, dir);
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let s = self.lock();
        if !s.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let files = s.files.keys().filter(|p| p.parent() == Some(dir));
        let dirs = s.dirs.iter().filter(|p| p.parent() == Some(dir));
        Ok(files.chain(dirs).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posix_like_basics() {
        let fs = MemFs::new();
        let dir = Path::new("/d");
        fs.create_dir_all(dir).unwrap();
        let a = dir.join("a");
        let f = fs.create(&a).unwrap();
        assert_eq!(
            fs.create(&a).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert_eq!(f.write_at(b"xy", 3).unwrap(), 2);
        let mut b = [9u8; 8];
        assert_eq!(f.read_at(&mut b, 0).unwrap(), 5);
        assert_eq!(&b[..5], b"\0\0\0xy");
        assert_eq!(f.read_at(&mut b, 5).unwrap(), 0);
        let r = fs.open_read(&a).unwrap();
        assert!(
            r.write_at(b"z", 0).is_err(),
            "read-only handles refuse writes"
        );
        fs.rename(&a, &dir.join("b")).unwrap();
        assert_eq!(fs.list(dir).unwrap(), vec![dir.join("b")]);
        fs.remove(&dir.join("b")).unwrap();
        assert_eq!(
            r.len().unwrap(),
            5,
            "a removed file stays readable while open"
        );
        assert!(fs.open_read(&a).is_err());
        assert!(fs.create(Path::new("/nodir/x")).is_err());
    }
}
