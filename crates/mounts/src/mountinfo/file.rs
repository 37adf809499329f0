//! The open mountinfo file, re-read from the start on every change.
//!
//! mountinfo is a seq_file: the kernel makes its text as it is read, so a
//! table is only as consistent as one pass from offset 0. Each read seeks
//! back to 0 and reads to the end in one go, into a buffer kept between
//! reads (it only grows) so that re-reading a large table costs no
//! allocation. The same fd is the one to poll for `POLLPRI`, which the
//! kernel raises when the namespace's mount table changes.

use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use super::parse;
use crate::model::Mount;
use crate::{Error, Result};

/// The first size of the read buffer; it doubles when a table is larger.
const INITIAL: usize = 64 * 1024;

/// An open /proc/self/mountinfo (or any file, for tests), read again from
/// the start each time. Also the fd to poll for `POLLPRI`.
#[derive(Debug)]
pub struct MountinfoFile {
    file: File,
    /// Always initialized up to its length; `len` bytes of it are the last
    /// read.
    buf: Vec<u8>,
    len: usize,
}

impl MountinfoFile {
    /// Opens /proc/self/mountinfo: the mount namespace and root of this
    /// process.
    pub fn open_self() -> Result<MountinfoFile> {
        MountinfoFile::open(Path::new("/proc/self/mountinfo"))
    }

    /// Opens `path`, which holds a mountinfo text.
    pub fn open(path: &Path) -> Result<MountinfoFile> {
        let file = File::open(path).map_err(|source| Error::Io {
            what: "opening mountinfo",
            source,
        })?;
        Ok(MountinfoFile {
            file,
            buf: Vec::new(),
            len: 0,
        })
    }

    /// Reads the whole file again from the start and parses it.
    pub fn read(&mut self) -> Result<Vec<Mount>> {
        self.read_bytes()?;
        Ok(parse(self.last_bytes())?)
    }

    /// Reads the whole file again from the start, without parsing it.
    pub fn read_bytes(&mut self) -> Result<&[u8]> {
        let io = |source| Error::Io {
            what: "reading mountinfo",
            source,
        };
        self.file.seek(SeekFrom::Start(0)).map_err(io)?;
        if self.buf.is_empty() {
            self.buf.resize(INITIAL, 0);
        }
        self.len = 0;
        loop {
            if self.len == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            match self.file.read(&mut self.buf[self.len..]) {
                Ok(0) => break,
                Ok(n) => self.len += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(io(e)),
            }
        }
        Ok(self.last_bytes())
    }

    /// The raw bytes of the last read (empty before the first).
    pub fn last_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl AsFd for MountinfoFile {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}
