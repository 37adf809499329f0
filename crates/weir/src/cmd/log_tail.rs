//! `weir log tail`: print records, optionally following the log.
//!
//! With a daemon, it streams `GET /v1/log/records`, which the daemon renders
//! line by line in the same form. Without one, it reads the directory
//! without the writer's lock ([`Reader::open_dir`]), so it works while
//! `weir log write` appends. `--consumer` starts after that consumer's
//! cleared index with its mask; `--mask` narrows further. A closed stdout
//! ends the command quietly (see `main`); SIGINT or SIGTERM stop `-f` after
//! the current record.

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
use weir_view::record as json;
use weir_view::record as text;

/// How long `-f` waits between looks at the directory.
const POLL: Duration = Duration::from_millis(50);

/// How long an index past the end is looked for at least before `--from`
/// is refused: many times the default flush interval (10 ms).
const FROM_GRACE: Duration = Duration::from_millis(300);

pub(super) fn tail(route: &Route, state: &StateDir, args: TailArgs) -> Result<()> {
    if let Some(mut client) = route.log_client()? {
        return via_daemon(&mut client, &args);
    }
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
    let mut reader = open(&dir, from, mask.as_ref());
    let mut out = std::io::BufWriter::new(crate::stdout::lock());
    // Without --from, start at the oldest record whatever its index; a
    // segment collected while we start just moves that start forward.
    let mut chase_oldest = from.is_none();
    loop {
        let mut restarted = false;
        while let Some(rec) = reader.next() {
            let rec = match rec {
                Ok(r) => r,
                Err(weir_log::Error::Truncated { oldest, .. }) if chase_oldest => {
                    reader = open(&dir, Some(oldest), mask.as_ref());
                    restarted = true;
                    break;
                }
                Err(e) => return Err(e).context("reading the log"),
            };
            let line = if args.json {
                json::record_json(&rec)
            } else {
                text::record_line(&rec)
            };
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
            if stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
                break;
            }
        }
        chase_oldest = false;
        out.flush()?;
        if restarted {
            continue;
        }
        match &stop {
            Some(stop) if !stop.load(Ordering::SeqCst) => reader.wait(POLL),
            _ => return Ok(()),
        }
    }
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
    let stop = signals::stop_flag()?;
    let mut lines = client
        .get_lines(target.as_str())
        .context("following the log through the daemon")?;
    let mut out = std::io::BufWriter::new(crate::stdout::lock());
    while !stop.load(Ordering::SeqCst) {
        match lines
            .next(POLL)
            .context("following the log through the daemon")?
        {
            Next::Line(line) => {
                out.write_all(line)?;
                out.write_all(b"\n")?;
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

fn open(dir: &Path, from: Option<u64>, mask: Option<&TypeMask>) -> Reader {
    let r = Reader::open_dir(dir, from.unwrap_or(1));
    match mask {
        Some(m) if !m.is_all() => r.with_mask(m.clone()),
        _ => r,
    }
}
