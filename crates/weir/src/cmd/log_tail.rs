//! `weir log tail`: print records, optionally following the log.
//!
//! With a daemon, it streams `GET /v1/log/records`, which the daemon renders
//! line by line in the same form. Without one, it reads the directory
//! without the writer's lock ([`Reader::open_dir`]), so it works while
//! `weir log write` appends. `--consumer` starts after that consumer's
//! cleared index with its mask; `--mask` narrows further. A closed stdout
//! ends the command quietly (see `main`); SIGINT or SIGTERM stop `-f` after
//! the current record.
//!
//! journalctl's choices (`-n`, `-e`, `--since`, `--until`, matches) and
//! `--path` are one [`Selection`] on both paths: through the daemon, the
//! records come as JSON, are read back and go through it as the directly
//! read ones do, so the two print the same bytes. The daemon is handed the
//! time window and the subtree too, so that it sends only what passes them.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use weir_client::{Client, Next, PathQuery};
use weir_log::fs::StdFs;
use weir_log::{Reader, TypeMask};

use crate::cli::TailArgs;
use crate::daemon::Route;
use crate::signals;
use crate::state_dir::StateDir;
use weir_view::log_select::{Filter, Selection};
use weir_view::log_time::parse_time;
use weir_view::record::record_from_json;

/// How many records `-e` shows when `-n` does not say: journalctl's.
const PAGER_END_LINES: usize = 1000;

/// How long `-f` waits between looks at the directory.
const POLL: Duration = Duration::from_millis(50);

/// How long an index past the end is looked for at least before `--from`
/// is refused: many times the default flush interval (10 ms).
const FROM_GRACE: Duration = Duration::from_millis(300);

pub(super) fn tail(route: &Route, state: &StateDir, args: TailArgs) -> Result<()> {
    let selection = selection(&args)?;
    if let Some(mut client) = route.log_client()? {
        return match selection {
            None => via_daemon(&mut client, &args),
            Some(sel) => via_daemon_selected(&mut client, &args, sel),
        };
    }
    let mut sel = selection.unwrap_or_else(|| Selection::new(Filter::new(), args.json, None));
    let dir = state.existing_log_dir()?;
    let (from, mask) = start(&dir, &args)?;
    if let Some(from) = args.from {
        check_not_past_end(&dir, from, from_grace(state))?;
    }
    let stop = if args.follow {
        Some(signals::stop_flag()?)
    } else {
        None
    };
    let window = sel.filter().time_window();
    let mut reader = open(&dir, from, mask.as_ref(), window);
    let mut out = std::io::BufWriter::new(crate::stdout::lock());
    let mut buf = Vec::new();
    // Without --from, start at the oldest record whatever its index; a
    // segment collected while we start just moves that start forward.
    let mut chase_oldest = from.is_none();
    loop {
        let mut restarted = false;
        while let Some(rec) = reader.next() {
            let rec = match rec {
                Ok(r) => r,
                Err(weir_log::Error::Truncated { oldest, .. }) if chase_oldest => {
                    reader = open(&dir, Some(oldest), mask.as_ref(), window);
                    restarted = true;
                    break;
                }
                Err(e) => return Err(e).context("reading the log"),
            };
            sel.push(&rec, &mut buf);
            out.write_all(&buf)?;
            buf.clear();
            if stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
                break;
            }
        }
        chase_oldest = false;
        if restarted {
            continue;
        }
        // The end of the log as it was: `-n` prints its last N now.
        sel.caught_up(&mut buf);
        out.write_all(&buf)?;
        buf.clear();
        out.flush()?;
        match &stop {
            Some(stop) if !stop.load(Ordering::SeqCst) => reader.wait(POLL),
            _ => return Ok(()),
        }
    }
}

/// journalctl's choices as a [`Selection`]; `None` when there are none,
/// so that the daemon's stream is copied as it comes.
fn selection(args: &TailArgs) -> Result<Option<Selection>> {
    let now = jiff::Zoned::now();
    let time = |opt: &str, s: &Option<String>| {
        s.as_deref()
            .map(|s| parse_time(s, &now).with_context(|| format!("{opt} {s:?}")))
            .transpose()
    };
    let since = time("--since", &args.since)?;
    let until = time("--until", &args.until)?;
    // journalctl refuses an empty window rather than print nothing.
    if let (Some(s), Some(u)) = (since, until)
        && s > u
    {
        bail!("--since must be before --until");
    }
    let mut filter = Filter::new();
    for m in args.matches.iter().chain(&args.mount).chain(&args.device) {
        filter = filter.with_match(m.clone());
    }
    if let Some(t) = since {
        filter = filter.since(t);
    }
    if let Some(t) = until {
        filter = filter.until(t);
    }
    if let Some(p) = &args.path {
        filter = filter.path(p.clone());
    }
    let last = args.lines.or(args.pager_end.then_some(PAGER_END_LINES));
    if filter.is_all() && last.is_none() {
        return Ok(None);
    }
    Ok(Some(Selection::new(filter, args.json, last)))
}

/// The daemon's records as JSON, read back and put through `sel`. With
/// `-n` and `-f`, the backlog is one read (to its end) and the follow a
/// second, from just after the last record the first one saw.
fn via_daemon_selected(client: &mut Client, args: &TailArgs, mut sel: Selection) -> Result<()> {
    // The daemon steps over records outside the times itself, from their
    // frame headers, and drops those of other trees by the same test as
    // `sel`'s: they never cross the socket.
    let window = sel.filter().time_window();
    let path = sel.filter().path_prefix().cloned();
    let target = |from: Option<u64>, follow: bool| {
        let q = PathQuery::new("/v1/log/records")
            .param("format", "json")
            .param_opt("from", from)
            .param_opt("since_ns", window.map(|w| w.0))
            .param_opt("until_ns", window.map(|w| w.1))
            .param_opt("consumer", args.consumer.as_ref())
            .param_opt("mask", args.mask.as_ref());
        let q = match &path {
            Some(p) => q.param_bytes("path", p.as_bytes()),
            None => q,
        };
        if follow { q.param("follow", "true") } else { q }
    };
    let mut out = std::io::BufWriter::new(crate::stdout::lock());
    let mut buf = Vec::new();
    let mut from = args.from;
    if !args.follow || args.lines.is_some() || args.pager_end {
        let mut lines = client
            .get_lines(target(from, false).as_str())
            .context("reading the log through the daemon")?;
        loop {
            match lines
                .next(POLL)
                .context("reading the log through the daemon")?
            {
                Next::Line(line) => {
                    let rec = daemon_record(line)?;
                    from = Some(rec.index.saturating_add(1));
                    sel.push(&rec, &mut buf);
                    out.write_all(&buf)?;
                    buf.clear();
                }
                Next::Idle => {}
                Next::End => break,
            }
        }
    }
    // The end of the backlog: `-n` prints its last N now.
    sel.caught_up(&mut buf);
    out.write_all(&buf)?;
    out.flush()?;
    if !args.follow {
        return Ok(());
    }
    follow_daemon(
        client,
        target(from, true).as_str(),
        &mut out,
        |line, buf| {
            sel.push(&daemon_record(line)?, buf);
            Ok(())
        },
    )
}

/// One line of the daemon's JSON stream as a record.
fn daemon_record(line: &[u8]) -> Result<weir_log::LogRecord> {
    let text =
        std::str::from_utf8(line).context("the daemon sent a record line that is not UTF-8")?;
    record_from_json(text).context("the daemon sent a line that is not a record")
}

/// The records from the daemon: copied as they come, or, with `-f`, line
/// by line so that a signal stops the command between records.
fn via_daemon(client: &mut Client, args: &TailArgs) -> Result<()> {
    let target = PathQuery::new("/v1/log/records")
        .param("format", if args.json { "json" } else { "text" })
        .param_opt("from", args.from)
        .param_opt("consumer", args.consumer.as_ref())
        .param_opt("mask", args.mask.as_ref());
    if !args.follow {
        client
            .get_text(target.as_str(), &mut crate::stdout::lock())
            .context("reading the log through the daemon")?;
        return Ok(());
    }
    let target = target.param("follow", "true");
    let mut out = std::io::BufWriter::new(crate::stdout::lock());
    follow_daemon(client, target.as_str(), &mut out, |line, buf| {
        buf.extend_from_slice(line);
        buf.push(b'\n');
        Ok(())
    })
}

/// Follows the daemon's stream at `target` until SIGINT or SIGTERM,
/// printing what `render` makes of each line. Checking the signal between
/// lines, rather than copying the stream whole, is what lets it stop
/// between records.
fn follow_daemon(
    client: &mut Client,
    target: &str,
    out: &mut impl Write,
    mut render: impl FnMut(&[u8], &mut Vec<u8>) -> Result<()>,
) -> Result<()> {
    let stop = signals::stop_flag()?;
    let mut lines = client
        .get_lines(target)
        .context("following the log through the daemon")?;
    let mut buf = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        match lines
            .next(POLL)
            .context("following the log through the daemon")?
        {
            Next::Line(line) => {
                render(line, &mut buf)?;
                out.write_all(&buf)?;
                buf.clear();
            }
            Next::Idle => {}
            Next::End => {
                out.flush()?;
                bail!("the daemon ended the stream (it is stopping)");
            }
        }
        // Flush once everything that arrived is printed, as the direct
        // path does once it has caught up.
        if !lines.pending() {
            out.flush()?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Where to start and which types to show.
fn start(dir: &Path, args: &TailArgs) -> Result<(Option<u64>, Option<TypeMask>)> {
    let Some(name) = &args.consumer else {
        return Ok((args.from, args.mask.clone()));
    };
    let list = weir_log::read_consumers(&StdFs, dir, 0, crate::cmd::now_ns())
        .context("reading the consumer list")?;
    let c = list
        .into_iter()
        .find(|c| &c.name == name)
        .ok_or_else(|| anyhow!("no such consumer: {name}"))?;
    let mask = match &args.mask {
        Some(m) => c.mask.intersection(m),
        None => c.mask,
    };
    Ok((Some(args.from.unwrap_or(c.cleared + 1)), Some(mask)))
}

/// `--from` may name the next index to come, but no later one, as the
/// daemon answers: a later one is most likely a mistake, and reading would
/// print nothing (or, with `-f`, wait) without saying why.
///
/// Another process may have handed out indexes it has not written yet
/// (`weir log write` prints each at once; the file has it within the
/// flush interval), so a refusal is checked again for `grace`.
fn check_not_past_end(dir: &Path, from: u64, grace: Duration) -> Result<()> {
    let deadline = Instant::now() + grace;
    loop {
        let next = weir_log::inspect(&StdFs, dir)
            .context("reading the log")?
            .last_index
            .saturating_add(1);
        if from.max(1) <= next {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("--from {from} is past the end of the log (the next index is {next})");
        }
        std::thread::sleep(POLL);
    }
}

/// How long `--from` past the end is looked for: two flush intervals of a
/// direct writer (`weir log write`, which takes `[log] flush_ms` from the
/// configuration) beyond [`FROM_GRACE`]. A configuration the daemon would
/// refuse is no reason to refuse a read; the default interval is assumed.
fn from_grace(state: &StateDir) -> Duration {
    let flush = state.log_options().unwrap_or_default().flush_interval;
    FROM_GRACE + flush.saturating_mul(2)
}

/// A reader from `from` that skips, from the frame header alone, the
/// records outside `mask` and the time `window`.
fn open(
    dir: &Path,
    from: Option<u64>,
    mask: Option<&TypeMask>,
    window: Option<(u64, u64)>,
) -> Reader {
    let mut r = Reader::open_dir(dir, from.unwrap_or(1));
    if let Some(m) = mask.filter(|m| !m.is_all()) {
        r = r.with_mask(m.clone());
    }
    if let Some((since, until)) = window {
        r = r.with_time_window(since, until);
    }
    r
}
