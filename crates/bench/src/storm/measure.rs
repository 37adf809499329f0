//! One measurement: a storm of N mounts then N unmounts, made one way,
//! under one watcher, each phase timed, billed and checked.
//!
//! Per phase: the wall time of the loop alone (what the mounting program
//! suffers); the watcher's CPU from the start of the loop until it has
//! caught up (a watcher's backlog is part of the storm's cost); for weir,
//! then, a `sync` and the exactness checks, which are billed to nothing.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Result, bail};
use weir_log::{Reader, RecordType};
use weir_mounts::Mount;
use weir_mounts::exact::{self, Tally};

use super::cpu;
use super::driver::{Loop, Workspace};
use super::watchers::{Mode, Watcher, Weir};

/// One phase (attach or detach) of a measurement.
#[derive(Clone, Debug, Default)]
pub(crate) struct Phase {
    /// The loop's wall time.
    pub(crate) wall_s: f64,
    /// The watcher's CPU: weir's threads, or findmnt's process.
    pub(crate) cpu_s: f64,
    /// The tracker thread alone, from its own counter.
    pub(crate) tracker_cpu_s: f64,
    /// The tracker's counters over the phase: fanotify events, the reads
    /// that returned them, whole readings, and the CPU those readings took.
    pub(crate) events: u64,
    pub(crate) event_reads: u64,
    pub(crate) readings: u64,
    pub(crate) reading_cpu_s: f64,
    /// How long the watcher took to catch up after the loop.
    pub(crate) settle_s: f64,
    /// The exactness checks (weir only); `None` when all held.
    pub(crate) problem: Option<String>,
    /// What the log check found, for the report.
    pub(crate) log_note: String,
}

/// A whole measurement.
#[derive(Clone, Debug)]
pub(crate) struct Measurement {
    pub(crate) lp: Loop,
    pub(crate) mode: Mode,
    pub(crate) n: usize,
    pub(crate) attach: Phase,
    pub(crate) detach: Phase,
    /// This process's RSS growth per mount over the attach phase, bytes
    /// (weir modes only: the driver itself allocates nothing that stays).
    pub(crate) rss_per_mount: Option<f64>,
}

impl Measurement {
    pub(crate) fn wall_s(&self) -> f64 {
        self.attach.wall_s + self.detach.wall_s
    }

    pub(crate) fn cpu_s(&self) -> f64 {
        self.attach.cpu_s + self.detach.cpu_s
    }

    pub(crate) fn tracker_cpu_s(&self) -> f64 {
        self.attach.tracker_cpu_s + self.detach.tracker_cpu_s
    }

    /// Whether weir ended exactly right in both phases (true for others).
    pub(crate) fn exact(&self) -> bool {
        self.attach.problem.is_none() && self.detach.problem.is_none()
    }

    /// The human line.
    pub(crate) fn line(&self, round: usize) -> String {
        let who = match self.mode {
            Mode::None | Mode::FanotifyUnread => "",
            Mode::Findmnt => "findmnt",
            Mode::Fanotify | Mode::Mountinfo => "weir",
        };
        let phase = |name: &str, p: &Phase| {
            let mut s = format!("{name} {:>7.3} s", p.wall_s);
            if self.mode.backend().is_some() {
                s += &format!(
                    " ({who} CPU {:.3} s: tracker {:.3} s, {} events in {} reads, {} readings taking {:.3} s; idle {:.1} s later)",
                    p.cpu_s,
                    p.tracker_cpu_s,
                    p.events,
                    p.event_reads,
                    p.readings,
                    p.reading_cpu_s,
                    p.settle_s
                );
            } else if !who.is_empty() {
                s += &format!(
                    " ({who} CPU {:.3} s, idle {:.1} s later)",
                    p.cpu_s, p.settle_s
                );
            }
            s
        };
        let exact = match (self.mode.backend(), self.exact()) {
            (None, _) => String::new(),
            (Some(_), true) => format!(
                " | exact: {}; {}",
                self.attach.log_note, self.detach.log_note
            ),
            (Some(_), false) => format!(
                " | NOT EXACT: {}",
                [&self.attach.problem, &self.detach.problem]
                    .into_iter()
                    .flatten()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        };
        format!(
            "  r{round} N={:<5} {:<8} {:<15} {} | {}{exact}",
            self.n,
            self.lp.name(),
            self.mode.name(),
            phase("attach", &self.attach),
            phase("detach", &self.detach),
        )
    }
}

/// What the exactness checks of a phase need from before it.
struct Before {
    ids: BTreeSet<u64>,
    len: usize,
}

fn before(w: &Weir) -> Result<Before> {
    Ok(Before {
        ids: exact::kernel_ids(w.tracker.backend())?,
        len: w.tracker.len(),
    })
}

/// After a phase: syncs the tracker, so that every change made so far is
/// in its table and every record is durable, then reads the kernel's table
/// once, for both the storm's ids and the comparison.
fn synced_table(w: &Weir) -> Result<Vec<Mount>> {
    w.tracker.sync()?;
    Ok(weir_mounts::source::read_sorted(w.tracker.backend())?)
}

/// Checks the table (against `fresh`, from [`synced_table`]) and the log
/// after a phase whose mounts are `ids`: every kind in `kinds` must hold
/// exactly once per mount (the detach phase checks ATTACH again, so a late
/// duplicate cannot slip through).
fn check(
    w: &Weir,
    fresh: &[Mount],
    reader: &mut Reader,
    tally: &mut Tally,
    kinds: &[RecordType],
    ids: &BTreeSet<u64>,
    p: &mut Phase,
) -> Result<()> {
    let mut problems = Vec::new();
    if let Some(d) = exact::table_diff(&w.tracker.mounts(), fresh) {
        problems.push(d.to_string());
    }
    // sync() made every record durable, hence visible.
    tally.read(reader)?;
    for (i, &kind) in kinds.iter().enumerate() {
        let c = tally.check(kind, ids);
        if !c.ok() {
            problems.push(c.to_string());
        }
        if i == 0 {
            p.log_note = c.to_string();
        }
    }
    p.problem = (!problems.is_empty()).then(|| problems.join("; "));
    Ok(())
}

/// Runs one phase's loop and bills it.
fn phase(
    ws: &Workspace,
    w: &Watcher,
    expected: usize,
    f: impl FnOnce(&Workspace) -> Result<()>,
) -> Result<Phase> {
    let stats = || w.weir().map(|w| w.tracker.stats()).unwrap_or_default();
    let s0 = stats();
    let cpu0 = w.cpu_ns()?;
    let wall_s = ws.timed(f)?;
    let settle_s = w.settle(expected)?;
    let cpu1 = w.cpu_ns()?;
    let s1 = stats();
    Ok(Phase {
        wall_s,
        cpu_s: cpu::secs(cpu1.saturating_sub(cpu0)),
        tracker_cpu_s: cpu::secs(s1.cpu_ns.saturating_sub(s0.cpu_ns)),
        events: s1.events - s0.events,
        event_reads: s1.event_reads - s0.event_reads,
        readings: s1.readings - s0.readings,
        reading_cpu_s: cpu::secs(s1.reading_cpu_ns.saturating_sub(s0.reading_cpu_ns)),
        settle_s,
        ..Phase::default()
    })
}

/// Measures a storm of `n` mounts made by `lp` under `mode`.
pub(crate) fn measure(
    ws: &Workspace,
    lp: Loop,
    mode: Mode,
    n: usize,
    findmnt: &Path,
    tag: &str,
) -> Result<Measurement> {
    let w = Watcher::start(mode, ws, findmnt, tag)?;
    let weir = w.weir();
    let b = weir.map(before).transpose()?;
    let base_len = b.as_ref().map_or(0, |b| b.len);
    let mut reader = weir.map(|w| w.log.reader(w.log.last_index() + 1));
    let mut tally = Tally::default();
    let rss0 = cpu::rss_kib(None)?;

    let mut attach = phase(ws, &w, base_len + n, |ws| ws.attach(lp, n))?;
    let rss1 = cpu::rss_kib(None)?;
    let mut storm = BTreeSet::new();
    if let (Some(wr), Some(b), Some(r)) = (weir, &b, reader.as_mut()) {
        let fresh = synced_table(wr)?;
        storm = exact::ids(&fresh).difference(&b.ids).copied().collect();
        if storm.len() != n {
            bail!(
                "{n} mounts made, but {} new ids in the kernel's table",
                storm.len()
            );
        }
        let kinds = [RecordType::MOUNT_ATTACH];
        check(wr, &fresh, r, &mut tally, &kinds, &storm, &mut attach)?;
    }

    let mut detach = phase(ws, &w, base_len, |ws| ws.detach(lp, n))?;
    if let (Some(wr), Some(r)) = (weir, reader.as_mut()) {
        let fresh = synced_table(wr)?;
        let kinds = [RecordType::MOUNT_DETACH, RecordType::MOUNT_ATTACH];
        check(wr, &fresh, r, &mut tally, &kinds, &storm, &mut detach)?;
    }
    drop(reader);
    w.stop()?;
    Ok(Measurement {
        lp,
        mode,
        n,
        attach,
        detach,
        rss_per_mount: mode
            .backend()
            .map(|_| (rss1 as f64 - rss0 as f64) * 1024.0 / n as f64),
    })
}
