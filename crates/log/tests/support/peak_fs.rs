//! [`PeakFs`]: a filesystem in memory that tracks the total length of the
//! segment files after every operation and keeps the peak, so that a size
//! bound is checked exactly rather than by sampling.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use weir_log::fs::{File, FileSystem};
use weir_log::mem::MemFs;
use weir_log::segment::parse_segment_name;

/// A filesystem that tracks the total length of segment files after every
/// operation and remembers the peak, so a size bound can be checked exactly
/// rather than by sampling.
#[derive(Debug)]
pub struct PeakFs {
    inner: MemFs,
    sizes: Arc<Mutex<(HashMap<PathBuf, u64>, u64)>>,
}

impl PeakFs {
    /// An empty filesystem in memory.
    pub fn new() -> PeakFs {
        PeakFs {
            inner: MemFs::new(),
            sizes: Arc::new(Mutex::new((HashMap::new(), 0))),
        }
    }

    /// The most bytes the segment files held together at any moment.
    pub fn peak(&self) -> u64 {
        self.sizes.lock().unwrap().1
    }
}

#[derive(Debug)]
struct PeakFile {
    inner: Box<dyn File>,
    path: PathBuf,
    sizes: Arc<Mutex<(HashMap<PathBuf, u64>, u64)>>,
}

impl PeakFile {
    fn note(&self) {
        if parse_segment_name(&self.path).is_none() {
            return;
        }
        let len = self.inner.len().unwrap_or(0);
        let mut s = self.sizes.lock().unwrap();
        s.0.insert(self.path.clone(), len);
        let total = s.0.values().sum();
        s.1 = s.1.max(total);
    }
}

impl File for PeakFile {
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<usize> {
        let n = self.inner.write_at(buf, off)?;
        self.note();
        Ok(n)
    }
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        self.inner.read_at(buf, off)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.inner.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.inner.sync_all()
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        self.inner.allocate(len)?;
        self.note();
        Ok(())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)?;
        self.note();
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn allocated(&self) -> io::Result<u64> {
        self.inner.allocated()
    }
}

impl FileSystem for PeakFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn File>> {
        let inner = self.inner.create(path)?;
        Ok(Box::new(PeakFile {
            inner,
            path: path.to_path_buf(),
            sizes: self.sizes.clone(),
        }))
    }
    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn File>> {
        self.inner.open_rw(path)
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn File>> {
        self.inner.open_read(path)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)?;
        self.sizes.lock().unwrap().0.remove(path);
        Ok(())
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.inner.list(dir)
    }
}
