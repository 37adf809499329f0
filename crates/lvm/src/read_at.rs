//! [`ReadAt`]: the only I/O weir-lvm does.
//!
//! The crate never opens a device itself; the caller (weir-devices) hands it
//! something that reads exact byte ranges, with whatever alignment and
//! caching the device needs (O_DIRECT there, a byte slice in tests and
//! fuzzing).

use std::io;

/// A device, or an image of one, read by byte offset.
pub trait ReadAt {
    /// Fills `buf` with the bytes at `offset`. A range that ends past
    /// [`size`](Self::size) is an error ([`io::ErrorKind::UnexpectedEof`]).
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;

    /// The size of the device in bytes.
    fn size(&self) -> u64;
}

impl ReadAt for [u8] {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| eof())?;
        let end = start.checked_add(buf.len()).ok_or_else(eof)?;
        let src = self.get(start..end).ok_or_else(eof)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn size(&self) -> u64 {
        self.len() as u64
    }
}

impl ReadAt for Vec<u8> {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.as_slice().read_exact_at(offset, buf)
    }

    fn size(&self) -> u64 {
        self.len() as u64
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        (**self).read_exact_at(offset, buf)
    }

    fn size(&self) -> u64 {
        (**self).size()
    }
}

fn eof() -> io::Error {
    io::Error::from(io::ErrorKind::UnexpectedEof)
}
