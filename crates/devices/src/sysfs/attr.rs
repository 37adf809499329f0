//! Reading one sysfs attribute file: one `openat` and one `read` into a
//! reused page-sized buffer, relative to the device's directory fd; and
//! the parsers for what the files hold.
//!
//! sysfs attributes are at most a page, so a file longer than that is not
//! sysfs (a fake or corrupt tree) and is refused rather than read on.

use std::io;
use std::os::fd::BorrowedFd;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// The longest attribute accepted: one page.
pub(super) const MAX_ATTR: usize = 4096;
/// The longest value kept in an error message.
const MAX_SHOWN: usize = 64;

/// Why an attribute could not be read or parsed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttrError {
    /// The attribute is required and absent.
    #[error("missing")]
    Missing,
    /// Opening or reading it failed.
    #[error("read failed")]
    Io(#[source] io::Error),
    /// Longer than a page.
    #[error("longer than {MAX_ATTR} bytes")]
    TooLong,
    /// Not UTF-8 where text is expected.
    #[error("not UTF-8")]
    NotUtf8,
    /// Not a decimal number, or out of range.
    #[error("not a number in range: {text:?}")]
    NotNumber {
        /// The text found (cut to 64 bytes).
        text: String,
    },
    /// Not `0` or `1`.
    #[error("not a 0/1 flag: {text:?}")]
    NotFlag {
        /// The text found (cut to 64 bytes).
        text: String,
    },
    /// `dev` is not `MAJOR:MINOR`.
    #[error("not MAJOR:MINOR: {text:?}")]
    NotDevNum {
        /// The text found (cut to 64 bytes).
        text: String,
    },
    /// The value is out of what it may be (a size that overflows bytes, a
    /// DEVNAME that leaves /dev, a link that names no parent).
    #[error("invalid value: {what}")]
    Invalid {
        /// Which check failed.
        what: &'static str,
    },
}

impl From<Errno> for AttrError {
    fn from(e: Errno) -> AttrError {
        AttrError::Io(io::Error::from(e))
    }
}

/// Reads attributes under one directory fd, reusing one buffer.
pub(super) struct AttrReader<'fd> {
    dir: BorrowedFd<'fd>,
    buf: Vec<u8>,
}

impl<'fd> AttrReader<'fd> {
    pub(super) fn new(dir: BorrowedFd<'fd>) -> AttrReader<'fd> {
        AttrReader {
            dir,
            buf: vec![0; MAX_ATTR + 1],
        }
    }

    /// The raw contents of `rel` without its trailing newline; `None` if
    /// the file does not exist.
    pub(super) fn raw(&mut self, rel: &str) -> Result<Option<&[u8]>, AttrError> {
        let fd = match rustix::fs::openat(
            self.dir,
            rel,
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let mut len = 0;
        // sysfs answers in one read, and a short read of a regular file (a
        // tree in a tempdir) is its end: read again only when the buffer
        // filled, up to one byte past the limit. One read per attribute
        // instead of two matters: a uevent reads several.
        while len < self.buf.len() {
            match rustix::io::read(&fd, &mut self.buf[len..]) {
                Ok(0) => break,
                Ok(n) => {
                    len += n;
                    if len < self.buf.len() {
                        break;
                    }
                }
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        if len > MAX_ATTR {
            return Err(AttrError::TooLong);
        }
        let v = &self.buf[..len];
        Ok(Some(v.strip_suffix(b"\n").unwrap_or(v)))
    }

    /// `rel` as text with surrounding whitespace trimmed (SCSI pads model
    /// names with spaces); `None` if absent or empty. Bytes that are not
    /// UTF-8 become U+FFFD: these are labels a device reports about itself
    /// (a USB stick's serial), shown to people, and a bad one must not make
    /// the device unreadable.
    pub(super) fn text(&mut self, rel: &str) -> Result<Option<String>, AttrError> {
        let Some(raw) = self.raw(rel)? else {
            return Ok(None);
        };
        let s = String::from_utf8_lossy(raw);
        let s = s.trim();
        Ok((!s.is_empty()).then(|| s.to_owned()))
    }

    /// `rel` as a decimal number; `None` if absent.
    pub(super) fn number<T: std::str::FromStr>(
        &mut self,
        rel: &str,
    ) -> Result<Option<T>, AttrError> {
        self.raw(rel)?.map(parse_number).transpose()
    }

    /// `rel` as a `0`/`1` flag; `None` if absent.
    pub(super) fn flag(&mut self, rel: &str) -> Result<Option<bool>, AttrError> {
        self.raw(rel)?
            .map(|v| match v {
                b"0" => Ok(false),
                b"1" => Ok(true),
                _ => Err(AttrError::NotFlag { text: shown(v) }),
            })
            .transpose()
    }
}

/// A plain decimal number: ASCII digits only, in `T`'s range.
pub(super) fn parse_number<T: std::str::FromStr>(v: &[u8]) -> Result<T, AttrError> {
    let bad = || AttrError::NotNumber { text: shown(v) };
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    std::str::from_utf8(v)
        .map_err(|_| bad())?
        .parse()
        .map_err(|_| bad())
}

/// `MAJOR:MINOR`, as in `dev`.
pub(super) fn parse_devnum(v: &[u8]) -> Result<(u32, u32), AttrError> {
    let bad = || AttrError::NotDevNum { text: shown(v) };
    let colon = v.iter().position(|&b| b == b':').ok_or_else(bad)?;
    let major = parse_number(&v[..colon]).map_err(|_| bad())?;
    let minor = parse_number(&v[colon + 1..]).map_err(|_| bad())?;
    Ok((major, minor))
}

/// Up to [`MAX_SHOWN`] bytes of a bad value, for an error message.
pub(super) fn shown(v: &[u8]) -> String {
    String::from_utf8_lossy(&v[..v.len().min(MAX_SHOWN)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_plain_decimal() {
        assert_eq!(parse_number::<u64>(b"2048").unwrap(), 2048);
        for bad in [&b""[..], b"-1", b"+1", b" 1", b"0x10", b"12a"] {
            assert!(
                matches!(parse_number::<u64>(bad), Err(AttrError::NotNumber { .. })),
                "{bad:?}"
            );
        }
        assert!(parse_number::<u32>(b"4294967296").is_err());
        assert_eq!(
            parse_number::<u64>(b"18446744073709551615").unwrap(),
            u64::MAX
        );
    }

    #[test]
    fn devnums() {
        assert_eq!(parse_devnum(b"259:0").unwrap(), (259, 0));
        for bad in [&b"8"[..], b":0", b"8:", b"8:0:1", b"a:b", b"8 :0"] {
            assert!(
                matches!(parse_devnum(bad), Err(AttrError::NotDevNum { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn shown_values_are_cut() {
        assert_eq!(shown(&[b'x'; 1000]).len(), MAX_SHOWN);
    }
}
