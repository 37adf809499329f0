//! The floor: the least a fanotify watcher can do. One file-id group
//! (`FidGroup`) with a filesystem mark for the events weir records, read
//! in large batches and thrown away, only counted. What it costs the load
//! is the kernel's own cost of making and queueing the events plus one
//! `read` per batch: no watcher that sees every change can cost less.
//!
//! It runs as the hidden `fs-floor` subcommand of this binary, in a process
//! of its own, so that its CPU is read like any other watcher's and its
//! thread competes for the CPUs as theirs do. It says `weir-bench fs-floor:
//! ready` on stderr once marked; the benchmark closes its stdin to stop it,
//! and it prints its counts as one JSON line on stdout.
//!
//! After a read that did not fill the buffer (the queue is empty) it sleeps
//! 1 ms, so the next read takes a batch instead of one event; with nothing
//! queued it waits in poll(2) for the group or its stdin.

use std::io::Read as _;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use rustix::event::{PollFd, PollFlags, poll};
use serde::{Deserialize, Serialize};
use weir_sys::fanotify::fid::{
    FAN_ATTRIB, FAN_CLOSE_WRITE, FAN_CREATE, FAN_DELETE, FAN_MODIFY, FAN_ONDIR, FAN_Q_OVERFLOW,
    FAN_RENAME, FidGroup,
};

/// The events the floor (and, by contract, weir) asks for.
pub(crate) const MASK: u64 =
    FAN_CREATE | FAN_DELETE | FAN_RENAME | FAN_ATTRIB | FAN_MODIFY | FAN_CLOSE_WRITE | FAN_ONDIR;

/// What it says on stderr once its mark is placed.
pub(crate) const READY: &str = "weir-bench fs-floor: ready";

/// The read buffer: about 3 ms of the fastest load's events.
const BUF_BYTES: usize = 256 << 10;

/// Options of the hidden `fs-floor`.
#[derive(clap::Args, Debug)]
pub(crate) struct FloorArgs {
    /// A path on the filesystem to mark.
    #[arg(long)]
    root: PathBuf,
}

/// What the floor read, printed as its last line.
#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Counts {
    pub(crate) events: u64,
    pub(crate) reads: u64,
    pub(crate) bytes: u64,
    pub(crate) overflows: u64,
}

/// Counts the events in one read's bytes by their `event_len` headers, and
/// the overflow events among them.
fn count(buf: &[u8], c: &mut Counts) {
    let mut at = 0;
    while let Some(meta) = buf.get(at..at + 24) {
        let len = u32::from_le_bytes([meta[0], meta[1], meta[2], meta[3]]) as usize;
        let mut m = [0u8; 8];
        m.copy_from_slice(&meta[8..16]);
        if u64::from_le_bytes(m) & FAN_Q_OVERFLOW != 0 {
            c.overflows += 1;
        }
        c.events += 1;
        if len < 24 {
            break;
        }
        at += len;
    }
}

/// The hidden `fs-floor`: marks, reads until stdin closes, prints counts.
pub(crate) fn run(a: FloorArgs) -> Result<()> {
    let mut g = FidGroup::open().context("fanotify_init with file ids")?;
    g.mark_filesystem(&a.root, MASK)
        .with_context(|| format!("mark the filesystem of {}", a.root.display()))?;
    eprintln!("{READY}");
    let mut buf = vec![0u8; BUF_BYTES];
    let mut c = Counts::default();
    let stdin = std::io::stdin();
    loop {
        let n = g.read(&mut buf)?;
        if n > 0 {
            c.reads += 1;
            c.bytes += n as u64;
            count(&buf[..n], &mut c);
            if n < BUF_BYTES / 2 {
                std::thread::sleep(Duration::from_millis(1));
            }
            continue;
        }
        let fan = g.as_fd();
        let input = stdin.as_fd();
        let mut fds = [
            PollFd::new(&fan, PollFlags::IN),
            PollFd::new(&input, PollFlags::IN),
        ];
        match poll(&mut fds, None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e).context("poll"),
        }
        if !fds[1].revents().is_empty() {
            // Stdin readable or hung up: closed means stop.
            let mut one = [0u8; 64];
            if stdin.lock().read(&mut one).unwrap_or(0) == 0 {
                break;
            }
        }
    }
    // What came after the last read (the benchmark waits for quiet first).
    loop {
        let n = g.read(&mut buf)?;
        if n == 0 {
            break;
        }
        c.reads += 1;
        c.bytes += n as u64;
        count(&buf[..n], &mut c);
    }
    println!("{}", serde_json::to_string(&c)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_counted_by_their_lengths() {
        let mut buf = vec![0u8; 24 + 40 + 24];
        buf[0..4].copy_from_slice(&24u32.to_le_bytes());
        buf[24..28].copy_from_slice(&40u32.to_le_bytes());
        buf[64..68].copy_from_slice(&24u32.to_le_bytes());
        buf[72..80].copy_from_slice(&FAN_Q_OVERFLOW.to_le_bytes());
        let mut c = Counts::default();
        count(&buf, &mut c);
        assert_eq!((c.events, c.overflows), (3, 1));
        // A zero length stops the walk instead of spinning.
        let mut c = Counts::default();
        count(&[0u8; 48], &mut c);
        assert_eq!(c.events, 1);
    }
}
