//! The mdtest-like load: N threads, each in its own directory `tK`, doing
//! one kind of operation over and over for a fixed time. One operation is
//! one whole cycle:
//!
//! - `create-unlink`: `openat(O_CREAT|O_EXCL|O_WRONLY)`, close, unlink;
//! - `create-write`: the same with a 4 KiB `write` before the close;
//! - `rename`: `tK/a/f` renamed to `tK/b/f`, or back.
//!
//! The filesystem events an operation makes are counted by a fixed rule
//! (see [`LoadKind::events_per_op`]): 2 per create+unlink (create, delete),
//! 4 per create+write+close+unlink (create, modify, close-write, delete)
//! and 1 per rename. The kernel makes more than that (a close after
//! `O_WRONLY` is a close-write, an unlink changes the link count, an
//! attribute event), and fanotify merges some; the floor reader reports
//! how many it actually read.

use std::ffi::CStr;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, Mode, OFlags};

use crate::timed::{self, Ticket, Timed};

/// The bytes each `create-write` operation writes.
const WRITE_BYTES: usize = 4096;

/// Which operation the threads repeat.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, clap::ValueEnum)]
pub(crate) enum LoadKind {
    /// open(O_CREAT|O_EXCL|O_WRONLY), close, unlink.
    CreateUnlink,
    /// open(O_CREAT|O_EXCL|O_WRONLY), write 4 KiB, close, unlink.
    CreateWrite,
    /// rename tK/a/f to tK/b/f and back.
    Rename,
}

impl LoadKind {
    pub(crate) const ALL: [LoadKind; 3] = [
        LoadKind::CreateUnlink,
        LoadKind::CreateWrite,
        LoadKind::Rename,
    ];

    /// The name on the command line and in the JSON.
    pub(crate) fn name(self) -> &'static str {
        match self {
            LoadKind::CreateUnlink => "create-unlink",
            LoadKind::CreateWrite => "create-write",
            LoadKind::Rename => "rename",
        }
    }

    /// What one operation is, for the report.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            LoadKind::CreateUnlink => "create+close+unlink",
            LoadKind::CreateWrite => "create+write(4 KiB)+close+unlink",
            LoadKind::Rename => "rename a/f <-> b/f",
        }
    }

    /// The filesystem events one operation counts for: create and delete;
    /// create, modify, close-write and delete; one rename.
    pub(crate) fn events_per_op(self) -> u64 {
        match self {
            LoadKind::CreateUnlink => 2,
            LoadKind::CreateWrite => 4,
            LoadKind::Rename => 1,
        }
    }
}

/// One thread's state.
struct Worker {
    kind: LoadKind,
    dirfd: OwnedFd,
    t: usize,
    i: u64,
    name: [u8; 48],
    /// For `rename`: whether the file is at `a/f` now.
    at_a: bool,
}

const RENAME_A: &CStr = c"a/f";
const RENAME_B: &CStr = c"b/f";
static PAYLOAD: [u8; WRITE_BYTES] = [0x5a; WRITE_BYTES];

impl Worker {
    fn open(kind: LoadKind, dir: &Path, t: usize) -> Result<Worker> {
        let dirfd = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .with_context(|| format!("open {}", dir.display()))?;
        let mut w = Worker {
            kind,
            dirfd,
            t,
            i: 0,
            name: [0; 48],
            at_a: true,
        };
        if kind == LoadKind::Rename {
            // The file stays between phases, wherever the last one left it.
            let exists = |p: &CStr| {
                rustix::fs::accessat(&w.dirfd, p, rustix::fs::Access::EXISTS, AtFlags::empty())
                    .is_ok()
            };
            if exists(RENAME_A) {
                w.at_a = true;
            } else if exists(RENAME_B) {
                w.at_a = false;
            } else {
                drop(rustix::fs::openat(
                    &w.dirfd,
                    RENAME_A,
                    OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o644),
                )?);
                w.at_a = true;
            }
        }
        Ok(w)
    }

    /// One operation.
    #[inline]
    fn step(&mut self) -> Result<()> {
        match self.kind {
            LoadKind::Rename => {
                let (from, to) = if self.at_a {
                    (RENAME_A, RENAME_B)
                } else {
                    (RENAME_B, RENAME_A)
                };
                rustix::fs::renameat(&self.dirfd, from, &self.dirfd, to)?;
                self.at_a = !self.at_a;
            }
            LoadKind::CreateUnlink | LoadKind::CreateWrite => {
                self.i += 1;
                let len = {
                    let mut w: &mut [u8] = &mut self.name;
                    write!(w, "f.{}.{}\0", self.t, self.i)?;
                    48 - w.len()
                };
                let cname = CStr::from_bytes_with_nul(&self.name[..len])?;
                let fd = rustix::fs::openat(
                    &self.dirfd,
                    cname,
                    OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o644),
                )?;
                if self.kind == LoadKind::CreateWrite {
                    let n = rustix::io::write(&fd, &PAYLOAD)?;
                    anyhow::ensure!(n == WRITE_BYTES, "short write: {n} bytes");
                }
                drop(fd);
                rustix::fs::unlinkat(&self.dirfd, cname, AtFlags::empty())?;
            }
        }
        Ok(())
    }
}

/// Runs `kind` with one thread per directory of `dirs` for `secs` seconds;
/// the count is operations.
pub(crate) fn run(kind: LoadKind, dirs: &[std::path::PathBuf], secs: f64) -> Result<Timed> {
    timed::run_for(dirs.len(), secs, |t, ticket: &Ticket<'_>| {
        let mut w = Worker::open(kind, &dirs[t], t)?;
        let mut ops = 0u64;
        ticket.ready();
        while !ticket.stopped() {
            w.step()?;
            ops += 1;
        }
        Ok(ops)
    })
}
