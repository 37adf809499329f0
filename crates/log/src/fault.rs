//! Fault injection: a [`FileSystem`] that fails on command.
//!
//! [`FaultyFs`] wraps the real filesystem. Tests arm it to fail writes,
//! fsyncs or allocation with a chosen errno, to make writes short, to "crash"
//! after a number of operations (every later operation fails, as if the
//! process had died there), and to cut power: unsynced writes are undone or
//! torn block by block, and files whose directory entry was never synced
//! disappear.

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use crate::fs::{File, FileSystem, StdFs};

/// How a power cut treats writes that were not synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerCut {
    /// Every unsynced write is lost.
    LoseAll,
    /// Each unsynced 4 KiB block independently survives or is lost, chosen
    /// by a pseudo-random sequence from this seed.
    Tear(u64),
}

#[derive(Debug, Default)]
struct Arm {
    /// Operations to let through before failing.
    after: u64,
    /// How many to fail then (`None`: all).
    count: Option<u64>,
    errno: i32,
}

impl Arm {
    fn hit(&mut self) -> Option<io::Error> {
        if self.after > 0 {
            self.after -= 1;
            return None;
        }
        match &mut self.count {
            Some(0) => None,
            Some(n) => {
                *n -= 1;
                Some(io::Error::from_raw_os_error(self.errno))
            }
            None => Some(io::Error::from_raw_os_error(self.errno)),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    writes: Option<Arm>,
    /// Writes to files of one name only: `(name, arm)`.
    named_writes: Option<(std::ffi::OsString, Arm)>,
    /// Opens for reading of files of one name only: `(name, arm)`.
    named_opens: Option<(std::ffi::OsString, Arm)>,
    /// Opens for reading failed by `named_opens`.
    opens_failed: u64,
    syncs: Option<Arm>,
    dir_syncs: Option<Arm>,
    allocs: Option<Arm>,
    short: Option<usize>,
    /// How much longer every fsync takes: a slow disk.
    sync_delay: Option<Duration>,
    /// How much longer every open for reading takes: a slow or busy disk,
    /// which widens the windows where threads meet.
    open_delay: Option<Duration>,
    crash_after: Option<u64>,
    crashed: bool,
    unsynced: HashMap<PathBuf, Vec<(u64, u64)>>,
    new_files: Vec<PathBuf>,
    /// The paths of open files, which follow a rename as the kernel's
    /// open files do.
    handles: Vec<Weak<Mutex<PathBuf>>>,
    ops: u64,
}

impl State {
    fn op(&mut self) -> io::Result<()> {
        self.ops += 1;
        if self.crashed {
            return Err(io::Error::from_raw_os_error(libc_eio()));
        }
        if let Some(n) = &mut self.crash_after {
            if *n == 0 {
                self.crashed = true;
                return Err(io::Error::from_raw_os_error(libc_eio()));
            }
            *n -= 1;
        }
        Ok(())
    }
}

fn libc_eio() -> i32 {
    rustix::io::Errno::IO.raw_os_error()
}

/// A filesystem that injects faults. Clones share their state, so a test
/// keeps one to arm while the log uses another.
#[derive(Debug, Clone, Default)]
pub struct FaultyFs {
    state: Arc<Mutex<State>>,
}

impl FaultyFs {
    /// A filesystem with no fault armed.
    pub fn new() -> FaultyFs {
        FaultyFs::default()
    }

    fn st(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// After `after` more writes succeed, fail `count` writes (`None`: all) with `errno`.
    pub fn fail_writes(&self, errno: i32, after: u64, count: Option<u64>) {
        self.st().writes = Some(Arm {
            after,
            count,
            errno,
        });
    }

    /// Like [`FaultyFs::fail_writes`], for writes to files named `name`
    /// only (in any directory, under the name they have when written): a
    /// fault in one kind of file while the others go on.
    pub fn fail_writes_named(&self, name: &str, errno: i32, after: u64, count: Option<u64>) {
        self.st().named_writes = Some((
            name.into(),
            Arm {
                after,
                count,
                errno,
            },
        ));
    }

    /// After `after` more opens for reading of files named `name` succeed,
    /// fail `count` (`None`: all) with `errno`: a read error in one file,
    /// e.g. a transient one while a reader looks through the log.
    pub fn fail_opens_named(&self, name: &str, errno: i32, after: u64, count: Option<u64>) {
        self.st().named_opens = Some((
            name.into(),
            Arm {
                after,
                count,
                errno,
            },
        ));
    }

    /// How many opens for reading [`FaultyFs::fail_opens_named`] failed:
    /// lets a test check that the fault it armed was met.
    pub fn opens_failed(&self) -> u64 {
        self.st().opens_failed
    }

    /// After `after` more fsyncs succeed, fail `count` fsyncs with `errno`.
    pub fn fail_syncs(&self, errno: i32, after: u64, count: Option<u64>) {
        self.st().syncs = Some(Arm {
            after,
            count,
            errno,
        });
    }

    /// After `after` more fsyncs of a directory succeed, fail `count`
    /// with `errno`. Files' fsyncs are armed apart ([`FaultyFs::fail_syncs`]).
    pub fn fail_dir_syncs(&self, errno: i32, after: u64, count: Option<u64>) {
        self.st().dir_syncs = Some(Arm {
            after,
            count,
            errno,
        });
    }

    /// After `after` more allocations succeed, fail `count` with `errno`.
    pub fn fail_allocs(&self, errno: i32, after: u64, count: Option<u64>) {
        self.st().allocs = Some(Arm {
            after,
            count,
            errno,
        });
    }

    /// Every write writes at most `max` bytes (`None`: no limit).
    pub fn short_writes(&self, max: Option<usize>) {
        self.st().short = max;
    }

    /// Every fsync of a file takes `delay` longer (`None`: as long as the
    /// disk's): a slow disk. [`FaultyFs::heal`] leaves it.
    pub fn slow_syncs(&self, delay: Option<Duration>) {
        self.st().sync_delay = delay;
    }

    /// Every open of a file for reading takes `delay` longer (`None`: as
    /// long as the disk's). [`FaultyFs::heal`] leaves it.
    pub fn slow_opens(&self, delay: Option<Duration>) {
        self.st().open_delay = delay;
    }

    /// After `ops` more operations, every operation fails: the process died.
    pub fn crash_after(&self, ops: u64) {
        self.st().crash_after = Some(ops);
    }

    /// Whether the simulated crash point was reached.
    pub fn crashed(&self) -> bool {
        self.st().crashed
    }

    /// Operations seen so far.
    pub fn ops(&self) -> u64 {
        self.st().ops
    }

    /// Disarms every fault (a crash stays until [`FaultyFs::power_cut`]).
    pub fn heal(&self) {
        let mut s = self.st();
        s.writes = None;
        s.named_writes = None;
        s.named_opens = None;
        s.syncs = None;
        s.dir_syncs = None;
        s.allocs = None;
        s.short = None;
    }

    /// Cuts the power: applies `mode` to unsynced writes, removes files
    /// created since their directory was last synced, and clears all faults.
    pub fn power_cut(&self, mode: PowerCut) -> io::Result<()> {
        let mut s = self.st();
        let mut rng = match mode {
            PowerCut::LoseAll => 0,
            PowerCut::Tear(seed) => seed | 1,
        };
        for (path, ranges) in s.unsynced.drain() {
            let Ok(f) = std::fs::OpenOptions::new().write(true).open(&path) else {
                continue;
            };
            for (off, len) in ranges {
                let mut at = off;
                while at < off + len {
                    let block_end = ((at / 4096) + 1) * 4096;
                    let n = block_end.min(off + len) - at;
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let survives = rng != 0 && rng % 2 == 0;
                    if !survives {
                        f.write_at(&vec![0u8; n as usize], at)?;
                    }
                    at += n;
                }
            }
        }
        for p in s.new_files.drain(..) {
            let _ = std::fs::remove_file(p);
        }
        *s = State::default();
        Ok(())
    }
}

#[derive(Debug)]
struct FaultyFile {
    inner: Box<dyn File>,
    /// Where the file is now.
    path: Arc<Mutex<PathBuf>>,
    state: Arc<Mutex<State>>,
}

impl FaultyFile {
    fn st(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn path(&self) -> PathBuf {
        self.path.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl File for FaultyFile {
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<usize> {
        let n = {
            let mut s = self.st();
            s.op()?;
            if let Some(e) = s.writes.as_mut().and_then(Arm::hit) {
                return Err(e);
            }
            let path = self.path();
            if let Some((_, arm)) = s
                .named_writes
                .as_mut()
                .filter(|(name, _)| path.file_name() == Some(name.as_os_str()))
                && let Some(e) = arm.hit()
            {
                return Err(e);
            }
            s.short.map_or(buf.len(), |m| m.min(buf.len()).max(1))
        };
        let n = self.inner.write_at(&buf[..n], off)?;
        let path = self.path();
        self.st()
            .unsynced
            .entry(path)
            .or_default()
            .push((off, n as u64));
        Ok(n)
    }
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        self.inner.read_at(buf, off)
    }
    fn sync_data(&self) -> io::Result<()> {
        let delay = {
            let mut s = self.st();
            s.op()?;
            if let Some(e) = s.syncs.as_mut().and_then(Arm::hit) {
                return Err(e);
            }
            s.sync_delay
        };
        if let Some(d) = delay {
            std::thread::sleep(d);
        }
        self.inner.sync_data()?;
        let path = self.path();
        self.st().unsynced.remove(&path);
        Ok(())
    }
    fn sync_all(&self) -> io::Result<()> {
        self.sync_data()
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        {
            let mut s = self.st();
            s.op()?;
            if let Some(e) = s.allocs.as_mut().and_then(Arm::hit) {
                return Err(e);
            }
        }
        self.inner.allocate(len)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.st().op()?;
        self.inner.set_len(len)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn allocated(&self) -> io::Result<u64> {
        self.inner.allocated()
    }
}

impl FaultyFs {
    fn wrap(&self, f: io::Result<Box<dyn File>>, path: &Path) -> io::Result<Box<dyn File>> {
        let inner = f?;
        let path = Arc::new(Mutex::new(path.to_path_buf()));
        let mut s = self.st();
        s.handles.retain(|h| h.strong_count() > 0);
        s.handles.push(Arc::downgrade(&path));
        drop(s);
        Ok(Box::new(FaultyFile {
            inner,
            path,
            state: self.state.clone(),
        }))
    }
}

impl FileSystem for FaultyFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn File>> {
        self.st().op()?;
        let f = StdFs.create(path);
        if f.is_ok() {
            self.st().new_files.push(path.to_path_buf());
        }
        self.wrap(f, path)
    }
    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn File>> {
        self.wrap(StdFs.open_rw(path), path)
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn File>> {
        let delay = {
            let mut s = self.st();
            if let Some((_, arm)) = s
                .named_opens
                .as_mut()
                .filter(|(name, _)| path.file_name() == Some(name.as_os_str()))
                && let Some(e) = arm.hit()
            {
                s.opens_failed += 1;
                return Err(e);
            }
            s.open_delay
        };
        // Slept outside the state's lock, so that other threads go on.
        if let Some(d) = delay {
            std::thread::sleep(d);
        }
        self.wrap(StdFs.open_read(path), path)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.st().op()?;
        StdFs.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.st().op()?;
        StdFs.rename(from, to)?;
        let mut s = self.st();
        if let Some(r) = s.unsynced.remove(from) {
            s.unsynced.insert(to.to_path_buf(), r);
        }
        for p in s.new_files.iter_mut().filter(|p| *p == from) {
            *p = to.to_path_buf();
        }
        for h in s.handles.iter().filter_map(Weak::upgrade) {
            let mut p = h.lock().unwrap_or_else(|p| p.into_inner());
            if *p == from {
                *p = to.to_path_buf();
            }
        }
        Ok(())
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        {
            let mut s = self.st();
            s.op()?;
            if let Some(e) = s.dir_syncs.as_mut().and_then(Arm::hit) {
                return Err(e);
            }
        }
        StdFs.sync_dir(dir)?;
        self.st().new_files.retain(|p| p.parent() != Some(dir));
        Ok(())
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        StdFs.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        StdFs.list(dir)
    }
}
