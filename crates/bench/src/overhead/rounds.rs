//! The rounds of `changelog-overhead`: every case at every thread count,
//! one measurement of seconds each, in an order that rotates by round; and
//! their table, the median per case with the ratios to the no-log case.
//!
//! Each measurement runs in a fresh directory and must record every
//! operation exactly once. Before it, a file is written and deleted (see
//! `freemem`), unless `--no-warm` says not to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use serde_json::{Map, Value, json};
use weir_log::{Log, Options};

use super::load::{Case, Sink, worker};
use crate::freemem;
use crate::mutexlog::MutexLog;
use crate::report::{median, round};
use crate::timed::{self, Timed};

/// What weir's own counters say about one run.
struct WeirRun {
    /// Records per commit (write batch).
    per_commit: f64,
    /// Appends that found the ring full.
    ring_full_waits: u64,
    /// Records the committer lifted past a hole.
    lifted: u64,
    /// Records spilled past a hole's own slot.
    spilled: u64,
    /// The commit thread's CPU time per record, ns (if /proc has it).
    committer_ns: Option<f64>,
}

/// One measurement: `n` threads for `secs` seconds, in a fresh directory.
fn run_once(
    base: &Path,
    opts: &Options,
    case: Case,
    n: usize,
    secs: f64,
    k: usize,
) -> Result<(Timed, Option<WeirRun>, u64)> {
    let root = base.join(format!("run{k}-{}-{n}", case.name()));
    std::fs::create_dir(&root)?;
    let dirs: Vec<PathBuf> = (0..n).map(|t| root.join(format!("t{t}"))).collect();
    for d in &dirs {
        std::fs::create_dir(d)?;
    }
    let log = match case {
        Case::Weir => Some(Log::open(root.join("log"), opts.clone())?),
        _ => None,
    };
    let mlog = match case {
        Case::Mutex => Some(MutexLog::create(&root.join("mutex.log"))?),
        _ => None,
    };
    let sink = match (&log, &mlog) {
        (Some(l), _) => Sink::Weir(l),
        (_, Some(m)) => Sink::Mutex(m),
        _ => Sink::None,
    };
    let timed = timed::run_for(n, secs, |t, ticket| worker(&dirs[t], t, &sink, ticket))?;
    let ops = timed.count;
    // Every operation must have been recorded exactly once.
    let mut weir_run = None;
    let recorded = match (log, &mlog) {
        (Some(l), _) => {
            l.sync()?;
            let st = l.stats();
            l.close()?;
            weir_run = Some(WeirRun {
                per_commit: st.last_index as f64 / st.commits.max(1) as f64,
                ring_full_waits: st.ring_full_waits,
                lifted: st.lifted,
                spilled: st.spilled,
                committer_ns: st
                    .committer_cpu_ns
                    .map(|ns| ns as f64 / st.last_index.max(1) as f64),
            });
            Some(st.last_index)
        }
        (_, Some(m)) => Some(m.records()),
        _ => None,
    };
    if let Some(r) = recorded
        && r != ops
    {
        bail!(
            "{} case recorded {r} records for {ops} operations",
            case.name()
        );
    }
    let bytes = freemem::footprint(&root)?;
    std::fs::remove_dir_all(&root)?;
    Ok((timed, weir_run, bytes))
}

/// CPU ns per operation in a run.
pub(super) fn cpu_ns(t: &Timed) -> f64 {
    t.cpu_s * 1e9 / t.count.max(1) as f64
}

/// What the rounds measured.
#[derive(Default)]
pub(super) struct Rounds {
    /// (case, N) -> one measurement per round, in round order.
    runs: BTreeMap<(usize, usize), Vec<Timed>>,
    /// N -> weir's records per commit, per round.
    batches: BTreeMap<usize, Vec<f64>>,
    /// N -> weir's ring-full waits, lifted and spilled records, summed over
    /// rounds.
    pub(super) full_waits: BTreeMap<usize, u64>,
    pub(super) lifted: BTreeMap<usize, u64>,
    pub(super) spilled: BTreeMap<usize, u64>,
    /// N -> the commit thread's CPU ns per record, per round.
    pub(super) committer_ns: BTreeMap<usize, Vec<f64>>,
}

impl Rounds {
    /// Runs `rounds` rounds of every case at every N in `threads`, `secs`
    /// seconds each, under `base`; warms the free memory before each
    /// measurement if `warm`. Prints each measurement to stderr.
    pub(super) fn measure(
        base: &Path,
        opts: &Options,
        threads: &[usize],
        secs: f64,
        rounds: usize,
        warm: bool,
    ) -> Result<Rounds> {
        let mut r = Rounds::default();
        // What the warm file must cover: the most any measurement
        // allocated, with a margin, and at first a guess from the duration.
        let mut peak_bytes: u64 = (secs * 64.0 * (1 << 20) as f64) as u64;
        let mut k = 0;
        for round in 0..rounds {
            for &n in threads {
                for j in 0..Case::ALL.len() {
                    // Rotate the order each round so no case always runs
                    // first. Which case runs right after which barely
                    // changes (weir nearly always follows none, mutex
                    // follows weir), so the warm file, not the order,
                    // evens out the memory state.
                    let ci = (j + round) % Case::ALL.len();
                    let case = Case::ALL[ci];
                    if warm {
                        freemem::warm(base, peak_bytes + peak_bytes / 4)?;
                    }
                    let (t, weir_run, bytes) = run_once(base, opts, case, n, secs, k)?;
                    peak_bytes = peak_bytes.max(bytes);
                    k += 1;
                    let counters = weir_run.map_or_else(String::new, |w| r.count(n, &w));
                    eprintln!(
                        "  round {round} N={n:>2} {:>5}: {:>10.0} ops/s, {:>6.0} CPU ns/op{counters}",
                        case.name(),
                        t.rate(),
                        cpu_ns(&t)
                    );
                    r.runs.entry((ci, n)).or_default().push(t);
                }
            }
        }
        Ok(r)
    }

    /// Adds weir's counters of one run at `n` threads; returns them as the
    /// tail of its progress line.
    fn count(&mut self, n: usize, w: &WeirRun) -> String {
        self.batches.entry(n).or_default().push(w.per_commit);
        *self.full_waits.entry(n).or_default() += w.ring_full_waits;
        *self.lifted.entry(n).or_default() += w.lifted;
        *self.spilled.entry(n).or_default() += w.spilled;
        let committer = match w.committer_ns {
            Some(ns) => {
                self.committer_ns.entry(n).or_default().push(ns);
                format!(", committer {ns:.0} CPU ns/record")
            }
            None => String::new(),
        };
        format!(
            ", {} ring-full waits, {} lifted, {} spilled{committer}",
            w.ring_full_waits, w.lifted, w.spilled
        )
    }

    /// The median rate of case `ci` at `n` threads.
    fn rate(&self, ci: usize, n: usize) -> f64 {
        median(
            &self.runs[&(ci, n)]
                .iter()
                .map(Timed::rate)
                .collect::<Vec<_>>(),
        )
    }

    /// The median CPU ns per operation of case `ci` at `n` threads.
    fn cpu(&self, ci: usize, n: usize) -> f64 {
        median(&self.runs[&(ci, n)].iter().map(cpu_ns).collect::<Vec<_>>())
    }

    /// The same ratio as the medians', taken within each round (cases run
    /// back to back), then the median: less sensitive to load that drifts
    /// between rounds.
    fn paired(&self, ci: usize, n: usize) -> f64 {
        let v: Vec<f64> = self.runs[&(ci, n)]
            .iter()
            .zip(&self.runs[&(0, n)])
            .map(|(c, none)| c.rate() / none.rate())
            .collect();
        median(&v)
    }

    /// Prints the table of the rounds (`rounds` of them, at each of
    /// `threads`) and what follows it, and returns its figures.
    pub(super) fn table(&self, threads: &[usize], rounds: usize) -> Table {
        println!();
        println!(
            "  ops/s (median of {rounds}), ratio to none, paired ratio (median of per-round ratios), CPU ns per op"
        );
        println!(
            "  {:>3} {:>10} {:>10} {:>10} | {:>6} {:>6} | {:>6} {:>6} | {:>5} {:>5} {:>5}",
            "N", "none", "weir", "mutex", "weir", "mutex", "weir", "mutex", "none", "weir", "mutex"
        );
        let mut t = Table {
            rates: [Map::new(), Map::new(), Map::new()],
            cpu: [Map::new(), Map::new(), Map::new()],
            ratio: [Map::new(), Map::new()],
            paired_ratio: [Map::new(), Map::new()],
            min_ratio: [f64::INFINITY; 2],
            min_paired: [f64::INFINITY; 2],
            per_commit: Map::new(),
        };
        for &n in threads {
            let key = n.to_string();
            for ci in 0..3 {
                t.rates[ci].insert(key.clone(), json!(self.rate(ci, n).round() as u64));
                t.cpu[ci].insert(key.clone(), json!(self.cpu(ci, n).round() as u64));
            }
            t.per_commit
                .insert(key.clone(), json!(round(median(&self.batches[&n]), 1)));
            let r = [
                self.rate(1, n) / self.rate(0, n),
                self.rate(2, n) / self.rate(0, n),
            ];
            let p = [self.paired(1, n), self.paired(2, n)];
            for i in 0..2 {
                t.ratio[i].insert(key.clone(), json!(round(r[i], 3)));
                t.paired_ratio[i].insert(key.clone(), json!(round(p[i], 3)));
                t.min_ratio[i] = t.min_ratio[i].min(r[i]);
                t.min_paired[i] = t.min_paired[i].min(p[i]);
            }
            println!(
                "  {n:>3} {:>10.0} {:>10.0} {:>10.0} | {:>6.3} {:>6.3} | {:>6.3} {:>6.3} | {:>5.0} {:>5.0} {:>5.0}",
                self.rate(0, n),
                self.rate(1, n),
                self.rate(2, n),
                r[0],
                r[1],
                p[0],
                p[1],
                self.cpu(0, n),
                self.cpu(1, n),
                self.cpu(2, n)
            );
        }
        println!(
            "  min ratio in the rounds: weir {:.3}, mutex {:.3} (paired: {:.3}, {:.3})",
            t.min_ratio[0], t.min_ratio[1], t.min_paired[0], t.min_paired[1]
        );
        println!(
            "  (CPU ns/op counts every thread of the process, weir's committer included; time spent"
        );
        println!("   asleep waiting for the mutex is not CPU, so it understates the mutex's cost)");
        if !self.committer_ns.is_empty() {
            let per_n: Vec<String> = self
                .committer_ns
                .iter()
                .map(|(n, v)| format!("N={n} {:.0}", median(v)))
                .collect();
            println!(
                "  weir's commit thread, CPU ns per record (median): {}",
                per_n.join(", ")
            );
        }
        t
    }

    /// N -> the median of the commit thread's CPU ns per record, for the
    /// JSON line.
    pub(super) fn committer_json(&self) -> Map<String, Value> {
        self.committer_ns
            .iter()
            .map(|(n, v)| (n.to_string(), json!(round(median(v), 1))))
            .collect()
    }
}

/// The figures of the rounds' table, per N (the JSON maps' keys), in
/// [`Case::ALL`] order, or for weir and mutex where a ratio to none.
pub(super) struct Table {
    pub(super) rates: [Map<String, Value>; 3],
    pub(super) cpu: [Map<String, Value>; 3],
    pub(super) ratio: [Map<String, Value>; 2],
    pub(super) paired_ratio: [Map<String, Value>; 2],
    /// The lowest ratio and paired ratio over N.
    pub(super) min_ratio: [f64; 2],
    pub(super) min_paired: [f64; 2],
    /// Weir's records per commit.
    pub(super) per_commit: Map<String, Value>,
}
