//! `weir log write`: append each line of stdin as a record and print its
//! index.
//!
//! Lines are raw bytes split on `\n` (the `\n` is dropped; a last line
//! without one still counts). Input is taken in batches of whatever is
//! available, so a fast producer gets group commit and an interactive one
//! gets an answer per line. With `--sync` a batch's indexes are printed only
//! after its last record is durable, which makes every record before it
//! durable too: printing never runs ahead of durability.
//!
//! A batch goes to the daemon as `POST /v1/log/records` when one answers
//! (`durable` with `--sync`), or straight into the log as its writer.
//!
//! A closed stdout is an error here, not the quiet end it is for readers:
//! the command stops appending, so the rest of its input is lost.

use std::io::{BufRead, BufReader, Read, Write};

mod via_daemon;

use anyhow::{Context, Result, anyhow};
use weir_log::{Appended, Log, Record, RecordType, codec};

use crate::cli::WriteArgs;
use crate::daemon::Route;
use crate::state_dir::StateDir;

/// The most input taken in one batch: enough lines to share one commit,
/// few enough that the first indexes are printed without delay.
const READ_BUF: usize = 16 * 1024;

pub(super) fn write(route: &Route, state: &StateDir, args: &WriteArgs) -> Result<()> {
    let stdin = std::io::stdin();
    let mut out = crate::stdout::lock();
    if let Some(mut client) = route.log_client()? {
        let mut sink = via_daemon::ViaDaemon::new(&mut client, args.kind, args.sync);
        let res = copy_lines(&mut sink, stdin.lock(), &mut out);
        return stopped_early(res, &sink);
    }
    let log = state.open_writer()?;
    let mut sink = Direct::new(&log, args.kind, args.sync);
    let res = stopped_early(copy_lines(&mut sink, stdin.lock(), &mut out), &sink);
    // Close durably even after an error, so that what was appended stays.
    let closed = log.close().context("closing the log");
    res.and(closed)
}

/// Turns a closed stdout into an error that says how far the input got.
/// It must not keep the [`crate::stdout::StdoutClosed`] mark, which `main`
/// takes for a quiet success.
fn stopped_early(res: Result<()>, sink: &impl Sink) -> Result<()> {
    match res {
        Err(e) if crate::stdout::is_closed(&e) => Err(anyhow!(
            "stdout was closed, so the input was not read to its end: \
             {} lines were appended",
            sink.appended()
        )),
        res => res,
    }
}

/// Where batches of lines go.
trait Sink {
    /// Appends one record per line and prints their indexes. If an append
    /// fails, the indexes of the records appended before it are still
    /// printed (once durable, with `--sync`), then the error is returned.
    fn batch(&mut self, lines: &[&[u8]], out: &mut dyn Write) -> Result<()>;

    /// How many records have been appended so far, printed or not.
    fn appended(&self) -> u64;
}

/// Appends the lines of `input` and prints their indexes to `out`.
fn copy_lines(sink: &mut impl Sink, input: impl Read, out: &mut dyn Write) -> Result<()> {
    let mut input = BufReader::with_capacity(READ_BUF, input);
    // Bytes read so far that do not yet end in a newline.
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let chunk = input.fill_buf().context("reading stdin")?;
        if chunk.is_empty() {
            if !carry.is_empty() {
                sink.batch(&[&carry[..]], out)?;
            }
            return Ok(());
        }
        let n = chunk.len();
        // Search only the new bytes, so a long line costs linear time.
        let newline = chunk.iter().rposition(|&b| b == b'\n');
        let start = carry.len();
        carry.extend_from_slice(chunk);
        input.consume(n);
        let Some(end) = newline.map(|p| start + p) else {
            if carry.len() > codec::MAX_FRAME {
                // No record can hold this line: let the sink say why rather
                // than buffer it without bound.
                sink.batch(&[&carry[..]], out)?;
            }
            continue;
        };
        let lines: Vec<&[u8]> = carry[..end].split(|&b| b == b'\n').collect();
        sink.batch(&lines, out)?;
        carry.drain(..=end);
    }
}

/// The log itself, as its writer.
struct Direct<'a> {
    log: &'a Log,
    kind: RecordType,
    sync: bool,
    /// The indexes of the batch, one per line.
    printed: String,
    appended: u64,
}

impl Sink for Direct<'_> {
    fn batch(&mut self, lines: &[&[u8]], out: &mut dyn Write) -> Result<()> {
        let mut last = None;
        let appended = self.append_lines(lines, &mut last);
        if let (true, Some(a)) = (self.sync, last) {
            self.log
                .wait_durable(a)
                .context("waiting for records to become durable")?;
        }
        out.write_all(self.printed.as_bytes())?;
        out.flush()?;
        self.printed.clear();
        appended
    }

    fn appended(&self) -> u64 {
        self.appended
    }
}

impl<'a> Direct<'a> {
    fn new(log: &'a Log, kind: RecordType, sync: bool) -> Direct<'a> {
        Direct {
            log,
            kind,
            sync,
            printed: String::new(),
            appended: 0,
        }
    }

    /// Appends one record per line, noting each index and the last
    /// record's ticket in `last`.
    fn append_lines(&mut self, lines: &[&[u8]], last: &mut Option<Appended>) -> Result<()> {
        for line in lines {
            let a = self
                .log
                .append(&Record::new(self.kind).name(line))
                .context("appending a record")?;
            self.printed.push_str(&a.index().to_string());
            self.printed.push('\n');
            self.appended += 1;
            *last = Some(a);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn direct(log: &Log, kind: RecordType) -> Direct<'_> {
        Direct::new(log, kind, true)
    }

    /// A reader that hands out its data in fixed pieces, as a pipe might.
    struct Pieces(Vec<Vec<u8>>);

    impl Read for Pieces {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Ok(0);
            }
            let p = self.0.remove(0);
            assert!(p.len() <= buf.len());
            buf[..p.len()].copy_from_slice(&p);
            Ok(p.len())
        }
    }

    #[test]
    fn lines_split_across_reads() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(dir.path(), weir_log::Options::default()).unwrap();
        let mut sink = direct(&log, RecordType::CREAT);
        let input = Pieces(vec![
            b"al".to_vec(),
            b"pha\n\nbe".to_vec(),
            b"ta\ngam\xffma".to_vec(),
        ]);
        let mut out = Vec::new();
        copy_lines(&mut sink, input, &mut out).unwrap();
        assert_eq!(out, b"1\n2\n3\n4\n");
        let names: Vec<Vec<u8>> = log.reader(1).map(|r| r.unwrap().name).collect();
        let want: [&[u8]; 4] = [b"alpha", b"", b"beta", b"gam\xffma"];
        assert_eq!(names, want);
        log.close().unwrap();
    }

    #[test]
    fn a_failed_append_still_prints_what_came_before() {
        let dir = tempfile::tempdir().unwrap();
        let opts = weir_log::Options::default().segment_size(64 * 1024);
        let log = Log::open(dir.path(), opts).unwrap();
        let mut sink = direct(&log, RecordType::MARK);
        let mut input = b"ok\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 100 * 1024));
        input.extend_from_slice(b"\nnever\n");
        let mut out = Vec::new();
        let err = copy_lines(&mut sink, &input[..], &mut out).unwrap_err();
        let too_long = err.chain().any(|e| {
            matches!(
                e.downcast_ref::<weir_log::Error>(),
                Some(weir_log::Error::FieldTooLong { field: "name", .. })
            )
        });
        assert!(too_long, "{err:#}");
        assert_eq!(out, b"1\n");
        let names: Vec<Vec<u8>> = log.reader(1).map(|r| r.unwrap().name).collect();
        assert_eq!(names, [b"ok".to_vec()]);
        log.close().unwrap();
    }
}
