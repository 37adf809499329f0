//! `mount-storm`: what watching the mount table costs the programs that
//! mount, and whether weir's table and log stay exact through a storm.
//!
//! N bind mounts of one directory, then N unmounts, made with mount(8) in a
//! loop and with raw mount(2) from one process, under each watcher: none,
//! weir with the fanotify backend, weir with the mountinfo backend, and
//! `findmnt --poll` (a whole-table re-parser, the anchor's reference).
//! Watchers are interleaved across rounds, rotating which goes first, and
//! medians are reported: ratios are only quoted between storms measured
//! side by side in the same run. Then the latency of single mounts, the
//! overflow of the fanotify queue with the real `weir mounts watch`, and
//! memory per mount. The "anchor" in the comments is the reference
//! measurement of mount storms these figures were first compared with.
//!
//! Everything happens in a private mount namespace: this binary re-executes
//! itself under `unshare -m --propagation private`, so no mount reaches the
//! host, and all vanish with the child whatever goes wrong.

pub(crate) mod cpu;
pub(crate) mod driver;
mod latency;
mod measure;
mod overflow;
mod summary;
mod targets;
pub(crate) mod watch_child;
mod watchers;

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use weir_mounts::BackendChoice;

use crate::loopdev::{self, find_tool};
use crate::report;
use driver::{Loop, Workspace};
use summary::Results;
use watchers::Mode;

/// Options of `mount-storm`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Args {
    /// Short run (under 2 minutes): 2000 mounts, one round of the mount(8)
    /// loop, 50 latency mounts.
    #[arg(long)]
    quick: bool,
    /// Mount counts [default: 2000,10000; 2000 with --quick].
    #[arg(long, value_delimiter = ',')]
    counts: Option<Vec<usize>>,
    /// Rounds of the mount(8) loop; medians are reported [default: 3, or 1
    /// with --quick].
    #[arg(long)]
    rounds: Option<usize>,
    /// Rounds of the raw loop, which takes milliseconds [default: 3].
    #[arg(long)]
    raw_rounds: Option<usize>,
    /// Single mounts timed for latency, per backend [default: 200, or 50
    /// with --quick].
    #[arg(long)]
    latency_mounts: Option<usize>,
    /// Watchers to run; `none` always runs, as every ratio needs it
    /// [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    modes: Option<Vec<Mode>>,
    /// Loops to run [default: both].
    #[arg(long, value_enum, value_delimiter = ',')]
    loops: Option<Vec<Loop>>,
    /// Mounts made while weir is stopped [default: 20000, or the fanotify
    /// queue limit + 2000 if larger]; 0 skips the overflow test.
    #[arg(long)]
    overflow_mounts: Option<usize>,
}

impl Args {
    fn counts(&self) -> Vec<usize> {
        self.counts.clone().unwrap_or_else(|| {
            if self.quick {
                vec![2000]
            } else {
                vec![2000, 10_000]
            }
        })
    }

    fn rounds(&self, lp: Loop) -> usize {
        match lp {
            Loop::Mount8 => self.rounds.unwrap_or(if self.quick { 1 } else { 3 }),
            Loop::Raw => self.raw_rounds.unwrap_or(3),
        }
    }

    fn runs(&self, lp: Loop, mode: Mode) -> bool {
        let asked = match &self.modes {
            Some(m) => m.contains(&mode),
            // The kernel's own cost matters where the mounter is fast; in
            // the mount(8) loop it drowns in fork and exec.
            None => mode != Mode::FanotifyUnread || lp == Loop::Raw,
        };
        self.loops.as_ref().is_none_or(|l| l.contains(&lp)) && (mode == Mode::None || asked)
    }

    fn latency_mounts(&self) -> usize {
        self.latency_mounts
            .unwrap_or(if self.quick { 50 } else { 200 })
    }
}

/// Options of the hidden `mount-storm-inner`, run in a private namespace.
pub(crate) type InnerArgs = loopdev::InPrivateNs<Args>;

/// Runs the benchmark: checks what it needs, then runs the real work in a
/// private mount namespace, whose output passes through.
pub(crate) fn run(a: Args) -> Result<()> {
    const BENCH: &str = "mount-storm";
    if !loopdev::is_root() {
        return report::skipped(BENCH, "needs root (mount, fanotify on the mount namespace)");
    }
    for tool in ["unshare", "mount", "umount", "findmnt"] {
        if find_tool(tool).is_none() {
            return report::skipped(BENCH, &format!("{tool} not found"));
        }
    }
    if let Err(e) = weir_mounts::snapshot(BackendChoice::Fanotify) {
        return report::skipped(
            BENCH,
            &format!("fanotify mount events or listmount unavailable: {e}"),
        );
    }
    let counts = a.counts();
    if counts.is_empty() || counts.contains(&0) {
        bail!("--counts needs positive counts");
    }
    if a.rounds(Loop::Mount8) == 0 || a.rounds(Loop::Raw) == 0 {
        bail!("--rounds and --raw-rounds must be positive");
    }
    // The options pass through unchanged: everything after the subcommand.
    loopdev::rerun_in_private_ns("mount-storm", "mount-storm-inner")
}

/// The hidden `mount-storm-inner`: the whole benchmark, in the namespace.
pub(crate) fn inner(ia: InnerArgs) -> Result<()> {
    let a = ia.enter()?;
    let tool = |t: &str| find_tool(t).with_context(|| format!("{t} not found"));
    let (mount, umount, findmnt) = (tool("mount")?, tool("umount")?, tool("findmnt")?);
    let counts = a.counts();
    let lat_m = a.latency_mounts();
    let queue = overflow::queue_limit()?;
    let over_n = a
        .overflow_mounts
        .unwrap_or_else(|| 20_000.max(queue as usize + 2000));

    println!(
        "mount-storm: N bind mounts of one directory on a tmpfs, then N unmounts, in a private mount namespace"
    );
    println!(
        "  loops: mount(8) (one `mount --bind` / `umount` process per mount) | raw (mount(2)/umount2(2) in this process)"
    );
    println!(
        "  watchers: none | fanotify, mountinfo (weir's tracker in this process, default options, logging to tmpfs) | findmnt --poll\n  \
         | fanotify-unread (raw loop only: a fanotify group marked and never read, the kernel's own cost)"
    );
    println!(
        "  counts {counts:?}; rounds: mount(8) {}, raw {}; watchers rotate within each round, medians reported",
        a.rounds(Loop::Mount8),
        a.rounds(Loop::Raw)
    );
    println!(
        "  wall: the loop alone; watcher CPU: from the loop's start until the watcher is idle again"
    );
    println!("  {}", report::host_note());

    let n_dirs = counts
        .iter()
        .copied()
        .chain([lat_m, over_n])
        .max()
        .unwrap_or(0);
    eprintln!("  making {n_dirs} target directories");
    let ws = Workspace::new(n_dirs, mount, umount)?;
    let mut failures: Vec<String> = Vec::new();
    let results = storms(&a, &ws, &findmnt, &mut failures);
    results.print(&counts);
    println!();
    let lat = latency::measure_all(&ws, lat_m, &mut failures);
    println!();
    let over = overflow::report(&ws, over_n, queue, &mut failures);

    let exact = results.exact() && failures.is_empty();
    println!();
    targets::print(&results, &counts);
    println!("  exact (every table and log check, every run): {exact}");
    drop(ws);

    let mut out = serde_json::Map::new();
    out.insert("bench".into(), json!("mount-storm"));
    out.insert("counts".into(), json!(counts));
    out.insert("rounds".into(), json!(a.rounds(Loop::Mount8)));
    out.insert("raw_rounds".into(), json!(a.rounds(Loop::Raw)));
    out.extend(targets::json(&results, &counts));
    out.extend(lat);
    out.extend(over);
    out.insert("exact".into(), json!(exact));
    out.insert("failures".into(), json!(failures));
    out.insert("detail".into(), results.detail(&counts));
    report::emit(&Value::Object(out));
    Ok(())
}

/// Runs every storm of the plan: rounds outermost, so that a drift in the
/// machine's load spreads over every cell, and within a round the watchers
/// in an order rotated by one each round. A failed storm is reported and
/// counted against exactness; the others still run.
fn storms(a: &Args, ws: &Workspace, findmnt: &Path, failures: &mut Vec<String>) -> Results {
    let mut plan = Vec::new();
    let max_rounds = a.rounds(Loop::Mount8).max(a.rounds(Loop::Raw));
    for r in 0..max_rounds {
        for n in a.counts() {
            for lp in Loop::ALL {
                if r >= a.rounds(lp) {
                    continue;
                }
                for j in 0..Mode::ALL.len() {
                    let mode = Mode::ALL[(j + r) % Mode::ALL.len()];
                    if a.runs(lp, mode) {
                        plan.push((r, n, lp, mode));
                    }
                }
            }
        }
    }
    let mut results = Results::default();
    println!();
    for (k, &(r, n, lp, mode)) in plan.iter().enumerate() {
        eprintln!(
            "  [{}/{}] round {r}, {n} mounts, {} loop, watcher {}",
            k + 1,
            plan.len(),
            lp.name(),
            mode.name()
        );
        let tag = format!("r{r}-{n}-{}-{}", lp.arg(), mode.name());
        match measure::measure(ws, lp, mode, n, findmnt, &tag) {
            Ok(m) => {
                println!("{}", m.line(r));
                results.add(m);
            }
            Err(e) => {
                let what = format!(
                    "round {r}, {n} mounts, {} loop, {}: {e:#}",
                    lp.name(),
                    mode.name()
                );
                println!("  FAILED: {what}");
                failures.push(what);
                ws.cleanup(n);
            }
        }
    }
    results
}
