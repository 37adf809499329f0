//! Stdout, with its broken pipe told apart from every other one.
//!
//! A reader of stdout that goes away (`weir log tail | head`) ends a
//! read-only command quietly. But a broken pipe can also come from the
//! daemon's socket, and that one must stay an error. So every command
//! writes stdout through [`Stdout`], which marks its EPIPE with
//! [`StdoutClosed`], and `main` looks for that mark alone.

use std::io::{self, Write};

/// The cause of a write error that stdout's reader going away caused.
#[derive(Debug)]
pub(crate) struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stdout was closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// A writer to stdout whose broken pipe is marked [`StdoutClosed`].
pub(crate) struct Stdout<W>(W);

/// Stdout, locked.
pub(crate) fn lock() -> Stdout<io::StdoutLock<'static>> {
    Stdout(io::stdout().lock())
}

impl<W: Write> Write for Stdout<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(mark)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(mark)
    }
}

fn mark(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        io::Error::new(io::ErrorKind::BrokenPipe, StdoutClosed)
    } else {
        e
    }
}

/// Whether `e` comes from writing to stdout after its reader went away.
/// An io error keeps its payload out of the source chain, so the mark is
/// looked for inside each io error.
pub(crate) fn is_closed(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .and_then(io::Error::get_ref)
            .is_some_and(|inner| inner.is::<StdoutClosed>())
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    use anyhow::Context;

    use super::*;

    /// A real EPIPE: a write to a socket whose peer is gone.
    fn epipe() -> io::Error {
        let (mut a, b) = UnixStream::pair().unwrap();
        drop(b);
        let err = a.write_all(b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
        err
    }

    /// Regression: `main` took any BrokenPipe in the chain for a closed
    /// stdout, so `weir log write` exited 0 when the daemon's socket broke
    /// mid-stream, with the input never appended.
    #[test]
    fn a_broken_socket_is_not_a_closed_stdout() {
        let socket: anyhow::Error = Err::<(), _>(epipe())
            .context("appending records through the daemon")
            .unwrap_err();
        assert!(!is_closed(&socket), "{socket:#}");
    }

    #[test]
    fn a_broken_stdout_is_marked() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(epipe())
            }
            fn flush(&mut self) -> io::Result<()> {
                Err(epipe())
            }
        }
        let mut out = Stdout(Broken);
        let err = anyhow::Error::new(writeln!(out, "1").unwrap_err()).context("printing");
        assert!(is_closed(&err), "{err:#}");
        let err = anyhow::Error::new(out.flush().unwrap_err());
        assert!(is_closed(&err), "{err:#}");
        // Other errors pass through unmarked.
        let mut other = Stdout(io::sink());
        assert!(other.write_all(b"fine").is_ok());
    }
}
