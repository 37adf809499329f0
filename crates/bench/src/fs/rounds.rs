//! The rounds of one cell (a filesystem, a load, a thread count): in each
//! round every case runs once, in an order rotated by one each round, so a
//! watched round's rate is divided by the unwatched rate of the same round,
//! seconds apart. A watched round: the watcher starts and is ready; its CPU
//! is read; the load runs; the watcher is left to catch up (until it goes
//! idle); its CPU is read again; it is stopped.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::child;
use super::load::{self, LoadKind};
use super::setup::{Target, Workspace};
use super::watchers::{Case, Finish, Session, Tools};

/// One case's run in one round.
#[derive(Debug, Clone)]
pub(crate) struct Round {
    pub(crate) case: Case,
    /// Operations, and the load's seconds.
    pub(crate) ops: u64,
    pub(crate) secs: f64,
    /// The watcher's CPU from just before the load until it was idle again;
    /// `None` unwatched, or when the watcher quit in the round.
    pub(crate) cpu_ns: Option<u64>,
    /// Whether that CPU is the threads' exact runtime (else 10 ms ticks).
    pub(crate) cpu_exact: bool,
    /// When the watcher quit, as a share of the load's time (above 100:
    /// while catching up after it), and its last words.
    pub(crate) exited_pct: Option<f64>,
    pub(crate) exit_words: Option<String>,
    /// How long the watcher took to go idle after the load.
    pub(crate) settle_s: f64,
    pub(crate) finish: Finish,
}

impl Round {
    fn new(case: Case, ops: u64, secs: f64) -> Round {
        Round {
            case,
            ops,
            secs,
            cpu_ns: None,
            cpu_exact: false,
            exited_pct: None,
            exit_words: None,
            settle_s: 0.0,
            finish: Finish::default(),
        }
    }

    pub(crate) fn rate(&self) -> f64 {
        self.ops as f64 / self.secs
    }

    /// Whether the watcher watched the whole load (it did not quit before
    /// the load ended).
    pub(crate) fn watched_all(&self) -> bool {
        self.exited_pct.is_none_or(|p| p >= 100.0)
    }
}

/// Where and what one cell runs.
pub(crate) struct Cell<'a> {
    pub(crate) tools: &'a Tools,
    pub(crate) ws: &'a Workspace,
    pub(crate) target: &'a Target,
    pub(crate) kind: LoadKind,
    /// One directory per thread.
    pub(crate) dirs: Vec<PathBuf>,
    /// Seconds of load per round.
    pub(crate) secs: f64,
}

/// Runs `case` once in `cell`: the load for its time, under the case's
/// watcher; `tag` names the watcher's files.
pub(crate) fn one(cell: &Cell<'_>, case: Case, tag: &str) -> Result<Round> {
    let (tools, ws, target) = (cell.tools, cell.ws, cell.target);
    let Some(s) = Session::start(case, tools, ws, target, tag)? else {
        let timed = load::run(cell.kind, &cell.dirs, cell.secs)?;
        return Ok(Round::new(case, timed.count, timed.elapsed_s));
    };
    // The watcher is stopped however the round ends: a watchman watch left
    // in place would watch the next unwatched round.
    let watched = watched(cell, case, &s);
    let finish = s.finish();
    let mut round = watched?;
    round.finish = finish?;
    Ok(round)
}

/// The load and the watcher's CPU around it, `s` already ready.
fn watched(cell: &Cell<'_>, case: Case, s: &Session<'_>) -> Result<Round> {
    let cpu0 = s.proc().cpu()?;
    let timed = load::run(cell.kind, &cell.dirs, cell.secs)?;
    let end = Instant::now();
    let mut round = Round::new(case, timed.count, timed.elapsed_s);
    let start = end
        .checked_sub(Duration::from_secs_f64(timed.elapsed_s))
        .unwrap_or(end);
    if s.proc().exited().is_none() {
        round.settle_s = child::settle(s.proc())?;
        if s.proc().exited().is_none()
            && let Ok(c1) = s.proc().cpu()
        {
            let (ns, exact) = c1.since(&cpu0);
            round.cpu_ns = Some(ns);
            round.cpu_exact = exact;
        }
    }
    if let Some((at, st)) = s.proc().exited() {
        let into = at.saturating_duration_since(start).as_secs_f64();
        round.exited_pct = Some(100.0 * into / timed.elapsed_s.max(1e-9));
        round.exit_words = Some(format!("{st}: {}", s.last_words()));
        round.cpu_ns = None;
    }
    Ok(round)
}

/// Fails when the load did nothing: a rate of 0 would make every ratio
/// meaningless.
pub(crate) fn check_none(r: &Round) -> Result<()> {
    if r.ops == 0 {
        bail!("the unwatched load did no operation in {:.2} s", r.secs);
    }
    Ok(())
}
