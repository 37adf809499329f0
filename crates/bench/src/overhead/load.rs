//! The load of `changelog-overhead`: the three cases (no changelog, weir,
//! the global-mutex log), where each records an operation, and one
//! thread's mdtest-like create and unlink in its own directory. The rounds
//! and the interleaved pass both run this same load.

use std::ffi::CStr;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::Result;
use rustix::fs::{AtFlags, Mode, OFlags};
use weir_log::{Log, Record, RecordType};

use crate::mutexlog::MutexLog;
use crate::timed::Ticket;

/// Which changelog, if any, records the operations.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Case {
    None,
    Weir,
    Mutex,
}

impl Case {
    pub(super) const ALL: [Case; 3] = [Case::None, Case::Weir, Case::Mutex];

    pub(super) fn name(self) -> &'static str {
        match self {
            Case::None => "none",
            Case::Weir => "weir",
            Case::Mutex => "mutex",
        }
    }
}

/// Where each operation is recorded.
pub(super) enum Sink<'a> {
    None,
    Weir(&'a Log),
    Mutex(&'a MutexLog),
}

impl Sink<'_> {
    #[inline]
    fn record(&self, r: &Record<'_>) -> Result<()> {
        match self {
            Sink::None => {}
            Sink::Weir(log) => {
                let _ = log.append(r)?;
            }
            Sink::Mutex(m) => m.append(r, false)?,
        }
        Ok(())
    }
}

/// One thread's load: its directory, and the name of its next file.
pub(super) struct Load {
    dirfd: rustix::fd::OwnedFd,
    parent: [u8; 8],
    t: usize,
    i: u64,
    buf: [u8; 64],
}

impl Load {
    /// The load of thread `t` in `dir`.
    pub(super) fn open(dir: &Path, t: usize) -> Result<Load> {
        let ino = std::fs::metadata(dir)?.ino();
        let dirfd = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Load {
            dirfd,
            parent: ino.to_le_bytes(),
            t,
            i: 0,
            buf: [0; 64],
        })
    }

    /// Creates a file and unlinks it, recording each in `sink`: two
    /// operations.
    #[inline]
    pub(super) fn step(&mut self, sink: &Sink<'_>) -> Result<()> {
        self.i += 1;
        let len = {
            let mut w: &mut [u8] = &mut self.buf;
            write!(w, "file.mdtest.{}.{}\0", self.t, self.i)?;
            64 - w.len()
        };
        let cname = CStr::from_bytes_with_nul(&self.buf[..len])?;
        let name = &self.buf[..len - 1];
        let fd = rustix::fs::openat(
            &self.dirfd,
            cname,
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )?;
        drop(fd);
        sink.record(
            &Record::new(RecordType::CREAT)
                .parent(&self.parent)
                .name(name),
        )?;
        rustix::fs::unlinkat(&self.dirfd, cname, AtFlags::empty())?;
        sink.record(
            &Record::new(RecordType::UNLNK)
                .parent(&self.parent)
                .name(name),
        )?;
        Ok(())
    }
}

/// One thread of the load: create and unlink in `dir` until the run stops.
/// Returns the number of operations.
pub(super) fn worker(dir: &Path, t: usize, sink: &Sink<'_>, ticket: &Ticket<'_>) -> Result<u64> {
    let mut load = Load::open(dir, t)?;
    let mut ops = 0u64;
    ticket.ready();
    while !ticket.stopped() {
        load.step(sink)?;
        ops += 2;
    }
    Ok(ops)
}
