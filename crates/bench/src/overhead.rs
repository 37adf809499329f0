//! `changelog-overhead`: what recording every metadata operation costs the
//! code that performs it.
//!
//! An mdtest-like load: N threads, each in its own directory on tmpfs,
//! create an empty file (`openat(O_CREAT|O_EXCL|O_WRONLY)`, close) and unlink
//! it, over and over. Each create and each unlink is one operation. It runs
//! three ways with the same N and duration: with no changelog, with weir-log
//! recording one record per operation, and with a global-mutex log that
//! encodes the same frame and `pwrite`s it under one lock, as Lustre's llog
//! appends. The cases are interleaved over several rounds (rotating which
//! goes first) and the median per case is reported, to fight noise on a
//! small shared machine. Before each measurement a file is written and
//! deleted on the same filesystem, so that every case finds the same warm
//! free memory for the pages it allocates (see `freemem`).
//!
//! Rounds of seconds still see the host drift between them, so an
//! interleaved pass follows (see `interleave`): the cases take turns in
//! 100 ms phases inside one process, and the median of the per-cycle ratios,
//! with its 95% confidence interval, is the headline `min_ratio_weir`. The
//! rounds' figures are reported beside it. The same phases also give the
//! process's CPU per operation, weir's over the no-log case's: the log's
//! cost in CPU, which the noise in throughput hides, and the share of the
//! CPUs each case kept busy, which shows any time they stood idle.
//!
//! Each weir round also reports its commit thread's CPU time per record
//! (`Stats::committer_cpu_ns`): the part of weir's cost that runs beside
//! the appenders, which host drift barely moves.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, Mode, OFlags};
use serde_json::{Map, json};
use weir_log::{Log, Options, Record, RecordType};

mod interleave;

use crate::freemem;
use crate::fsinfo::FsInfo;
use crate::mutexlog::MutexLog;
use crate::report::{self, median, round};
use crate::steal;
use crate::timed::{self, Ticket, Timed};

/// Options of `changelog-overhead`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Short run (under 60 s): 0.8 s per measurement, 3 rounds.
    #[arg(long)]
    quick: bool,
    /// Thread counts to measure.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    threads: Vec<usize>,
    /// Seconds per measurement [default: 3, or 0.8 with --quick].
    #[arg(long)]
    seconds: Option<f64>,
    /// Rounds; the median of each case is reported [default: 5, or 3 with --quick].
    #[arg(long)]
    rounds: Option<usize>,
    /// Where the thread directories and the logs go (should be tmpfs).
    #[arg(long, default_value = "/dev/shm")]
    dir: PathBuf,
    /// Slots in weir's append ring [default: weir-log's default].
    #[arg(long)]
    ring_slots: Option<usize>,
    /// Seconds per thread count of the interleaved pass, in which the cases
    /// take turns in short phases (0: skip it, and take the headline from
    /// the rounds) [default: 120, or 3 with --quick].
    #[arg(long)]
    interleave_seconds: Option<f64>,
    /// Length of one phase of the interleaved pass, in ms.
    #[arg(long, default_value_t = 100)]
    phase_ms: u64,
    /// Do not write and delete a file before each measurement (see
    /// `freemem`): each case then starts with whatever memory the one
    /// before it left.
    #[arg(long)]
    no_warm: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Case {
    None,
    Weir,
    Mutex,
}

impl Case {
    const ALL: [Case; 3] = [Case::None, Case::Weir, Case::Mutex];

    fn name(self) -> &'static str {
        match self {
            Case::None => "none",
            Case::Weir => "weir",
            Case::Mutex => "mutex",
        }
    }
}

/// Where each operation is recorded.
enum Sink<'a> {
    None,
    Weir(&'a Log),
    Mutex(&'a MutexLog),
}

impl Sink<'_> {
    #[inline]
    fn record(&self, r: &Record<'_>) -> Result<()> {
        match self {
            Sink::None => {}
            Sink::Weir(log) => {
                let _ = log.append(r)?;
            }
            Sink::Mutex(m) => m.append(r, false)?,
        }
        Ok(())
    }
}

/// One thread's load: its directory, and the name of its next file.
struct Load {
    dirfd: rustix::fd::OwnedFd,
    parent: [u8; 8],
    t: usize,
    i: u64,
    buf: [u8; 64],
}

impl Load {
    /// The load of thread `t` in `dir`.
    fn open(dir: &Path, t: usize) -> Result<Load> {
        let ino = std::fs::metadata(dir)?.ino();
        let dirfd = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Load {
            dirfd,
            parent: ino.to_le_bytes(),
            t,
            i: 0,
            buf: [0; 64],
        })
    }

    /// Creates a file and unlinks it, recording each in `sink`: two
    /// operations.
    #[inline]
    fn step(&mut self, sink: &Sink<'_>) -> Result<()> {
        self.i += 1;
        let len = {
            let mut w: &mut [u8] = &mut self.buf;
            write!(w, "file.mdtest.{}.{}\0", self.t, self.i)?;
            64 - w.len()
        };
        let cname = CStr::from_bytes_with_nul(&self.buf[..len])?;
        let name = &self.buf[..len - 1];
        let fd = rustix::fs::openat(
            &self.dirfd,
            cname,
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )?;
        drop(fd);
        sink.record(
            &Record::new(RecordType::CREAT)
                .parent(&self.parent)
                .name(name),
        )?;
        rustix::fs::unlinkat(&self.dirfd, cname, AtFlags::empty())?;
        sink.record(
            &Record::new(RecordType::UNLNK)
                .parent(&self.parent)
                .name(name),
        )?;
        Ok(())
    }
}

/// One thread of the load: create and unlink in `dir` until the run stops.
/// Returns the number of operations.
fn worker(dir: &Path, t: usize, sink: &Sink<'_>, ticket: &Ticket<'_>) -> Result<u64> {
    let mut load = Load::open(dir, t)?;
    let mut ops = 0u64;
    ticket.ready();
    while !ticket.stopped() {
        load.step(sink)?;
        ops += 2;
    }
    Ok(ops)
}

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
fn cpu_ns(t: &Timed) -> f64 {
    t.cpu_s * 1e9 / t.count.max(1) as f64
}

/// Runs the benchmark.
pub(crate) fn run(a: Args) -> Result<()> {
    let secs = a.seconds.unwrap_or(if a.quick { 0.8 } else { 3.0 });
    let inter_secs = a
        .interleave_seconds
        // The headline is the lowest of five medians, one per N, so each
        // must be tight. At 40 s per N their 95% intervals were about
        // ±0.01 wide, and in the five full runs of 2026-11-27 and 28 the
        // lowest fell 0.006-0.016 below the middle one of the five.
        .unwrap_or(if a.quick { 3.0 } else { 120.0 })
        .max(0.0);
    let rounds = a.rounds.unwrap_or(if a.quick { 3 } else { 5 }).max(1);
    if a.threads.is_empty() || a.threads.contains(&0) {
        bail!("--threads needs positive counts");
    }
    let mut opts = Options::default();
    if let Some(n) = a.ring_slots {
        opts = opts.ring_slots(n);
    }
    let fs = FsInfo::of(&a.dir)?;
    println!(
        "changelog-overhead: mdtest-like create+unlink of empty files, one directory per thread"
    );
    println!(
        "  directories and logs under {} ({}{})",
        a.dir.display(),
        fs.name(),
        if fs.is_tmpfs() {
            ""
        } else {
            "; NOT tmpfs, so the figures include a real filesystem"
        }
    );
    println!(
        "  cases: none | weir (Log::append per op, default Options) | mutex (encode+pwrite under one lock)"
    );
    println!(
        "  {secs} s per measurement, {rounds} rounds interleaved, median per case; threads {:?}",
        a.threads
    );
    println!("  {}", report::host_note());
    let cpu0 = steal::CpuTimes::now();
    if a.no_warm {
        println!("  memory: as the previous measurement left it (--no-warm)");
    } else {
        println!(
            "  memory: before each measurement a file 1.25x the largest run's footprint is written"
        );
        println!(
            "  and deleted, so every case starts with the same warm free pages (--no-warm: skip)"
        );
    }
    let base = tempfile::Builder::new()
        .prefix("weir-bench-overhead.")
        .tempdir_in(&a.dir)
        .with_context(|| format!("create a directory in {}", a.dir.display()))?;

    // (case, N) -> one measurement per round, in round order.
    let mut runs: BTreeMap<(usize, usize), Vec<Timed>> = BTreeMap::new();
    // N -> weir's records per commit, per round.
    let mut batches: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    // N -> weir's ring-full waits, lifted and spilled records, summed over
    // rounds.
    let mut full_waits: BTreeMap<usize, u64> = BTreeMap::new();
    let mut lifted: BTreeMap<usize, u64> = BTreeMap::new();
    let mut spilled: BTreeMap<usize, u64> = BTreeMap::new();
    // N -> the commit thread's CPU ns per record, per round.
    let mut committer_ns: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    // What the warm file must cover: the most any measurement allocated,
    // with a margin, and at first a guess from the duration.
    let mut peak_bytes: u64 = (secs * 64.0 * (1 << 20) as f64) as u64;
    let mut k = 0;
    for round in 0..rounds {
        for &n in &a.threads {
            for j in 0..Case::ALL.len() {
                // Rotate the order each round so no case always runs first.
                // Which case runs right after which barely changes (weir
                // nearly always follows none, mutex follows weir), so the
                // warm file, not the order, evens out the memory state.
                let ci = (j + round) % Case::ALL.len();
                let case = Case::ALL[ci];
                if !a.no_warm {
                    freemem::warm(base.path(), peak_bytes + peak_bytes / 4)?;
                }
                let (r, weir_run, bytes) = run_once(base.path(), &opts, case, n, secs, k)?;
                peak_bytes = peak_bytes.max(bytes);
                k += 1;
                let mut counters = String::new();
                if let Some(w) = weir_run {
                    batches.entry(n).or_default().push(w.per_commit);
                    *full_waits.entry(n).or_default() += w.ring_full_waits;
                    *lifted.entry(n).or_default() += w.lifted;
                    *spilled.entry(n).or_default() += w.spilled;
                    let committer = match w.committer_ns {
                        Some(ns) => {
                            committer_ns.entry(n).or_default().push(ns);
                            format!(", committer {ns:.0} CPU ns/record")
                        }
                        None => String::new(),
                    };
                    counters = format!(
                        ", {} ring-full waits, {} lifted, {} spilled{committer}",
                        w.ring_full_waits, w.lifted, w.spilled
                    );
                }
                eprintln!(
                    "  round {round} N={n:>2} {:>5}: {:>10.0} ops/s, {:>6.0} CPU ns/op{counters}",
                    case.name(),
                    r.rate(),
                    cpu_ns(&r)
                );
                runs.entry((ci, n)).or_default().push(r);
            }
        }
    }
    // N -> the interleaved pass's phases.
    let mut phases: BTreeMap<usize, interleave::Phases> = BTreeMap::new();
    if inter_secs > 0.0 {
        let phase = std::time::Duration::from_millis(a.phase_ms.max(1));
        for &n in &a.threads {
            let root = base.path().join(format!("interleaved-{n}"));
            std::fs::create_dir(&root)?;
            let p = interleave::run(&root, &opts, n, inter_secs, phase)?;
            std::fs::remove_dir_all(&root)?;
            eprintln!(
                "  interleaved N={n:>2}: {} cycles of {} ms per case, paired ratio weir {:.3}, mutex {:.3}",
                p.rates[0].len(),
                a.phase_ms,
                median(&p.paired(1)),
                median(&p.paired(2))
            );
            phases.insert(n, p);
        }
    }
    drop(base);

    let rate =
        |ci: usize, n: usize| median(&runs[&(ci, n)].iter().map(Timed::rate).collect::<Vec<_>>());
    let cpu = |ci: usize, n: usize| median(&runs[&(ci, n)].iter().map(cpu_ns).collect::<Vec<_>>());
    // The same ratio taken within each round (cases run back to back), then
    // the median: less sensitive to load that drifts between rounds.
    let paired = |ci: usize, n: usize| {
        let v: Vec<f64> = runs[&(ci, n)]
            .iter()
            .zip(&runs[&(0, n)])
            .map(|(c, none)| c.rate() / none.rate())
            .collect();
        median(&v)
    };
    println!();
    println!(
        "  ops/s (median of {rounds}), ratio to none, paired ratio (median of per-round ratios), CPU ns per op"
    );
    println!(
        "  {:>3} {:>10} {:>10} {:>10} | {:>6} {:>6} | {:>6} {:>6} | {:>5} {:>5} {:>5}",
        "N", "none", "weir", "mutex", "weir", "mutex", "weir", "mutex", "none", "weir", "mutex"
    );
    let mut json_rates = [Map::new(), Map::new(), Map::new()];
    let mut json_cpu = [Map::new(), Map::new(), Map::new()];
    let mut ratio = [Map::new(), Map::new()];
    let mut paired_ratio = [Map::new(), Map::new()];
    let mut min_ratio = [f64::INFINITY; 2];
    let mut min_paired = [f64::INFINITY; 2];
    let mut per_commit = Map::new();
    for &n in &a.threads {
        let key = n.to_string();
        for ci in 0..3 {
            json_rates[ci].insert(key.clone(), json!(rate(ci, n).round() as u64));
            json_cpu[ci].insert(key.clone(), json!(cpu(ci, n).round() as u64));
        }
        per_commit.insert(key.clone(), json!(round(median(&batches[&n]), 1)));
        let r = [rate(1, n) / rate(0, n), rate(2, n) / rate(0, n)];
        let p = [paired(1, n), paired(2, n)];
        for i in 0..2 {
            ratio[i].insert(key.clone(), json!(round(r[i], 3)));
            paired_ratio[i].insert(key.clone(), json!(round(p[i], 3)));
            min_ratio[i] = min_ratio[i].min(r[i]);
            min_paired[i] = min_paired[i].min(p[i]);
        }
        println!(
            "  {n:>3} {:>10.0} {:>10.0} {:>10.0} | {:>6.3} {:>6.3} | {:>6.3} {:>6.3} | {:>5.0} {:>5.0} {:>5.0}",
            rate(0, n),
            rate(1, n),
            rate(2, n),
            r[0],
            r[1],
            p[0],
            p[1],
            cpu(0, n),
            cpu(1, n),
            cpu(2, n)
        );
    }
    println!(
        "  min ratio in the rounds: weir {:.3}, mutex {:.3} (paired: {:.3}, {:.3})",
        min_ratio[0], min_ratio[1], min_paired[0], min_paired[1]
    );
    println!(
        "  (CPU ns/op counts every thread of the process, weir's committer included; time spent"
    );
    println!("   asleep waiting for the mutex is not CPU, so it understates the mutex's cost)");
    if !committer_ns.is_empty() {
        let per_n: Vec<String> = committer_ns
            .iter()
            .map(|(n, v)| format!("N={n} {:.0}", median(v)))
            .collect();
        println!(
            "  weir's commit thread, CPU ns per record (median): {}",
            per_n.join(", ")
        );
    }
    let inter = interleaved_summary(&phases);
    if !phases.is_empty() {
        println!();
        println!(
            "  interleaved: {} ms phases in rotating order, {inter_secs} s per N; median of the",
            a.phase_ms
        );
        println!("  per-cycle ratios to none, with their quartiles and the median's 95% interval");
        println!(
            "  {:>3} {:>7} {:>15} {:>15} | {:>7} {:>15}",
            "N", "weir", "quartiles", "95% interval", "mutex", "quartiles"
        );
        let ci = |s: &Spread| match s.ci {
            Some((lo, hi)) => format!("{lo:.3}-{hi:.3}"),
            None => "-".into(),
        };
        for (n, [w, m]) in &inter.rows {
            println!(
                "  {n:>3} {:>7.3} {:>7.3}-{:<7.3} {:>15} | {:>7.3} {:>7.3}-{:<7.3}",
                w.median,
                w.q1,
                w.q3,
                ci(w),
                m.median,
                m.q1,
                m.q3
            );
        }
        println!(
            "  min interleaved ratio: weir {:.3}, mutex {:.3}",
            inter.min()[0],
            inter.min()[1]
        );
        println!();
        println!("  the same phases: the process's CPU per operation, weir over none (median per");
        println!("  cycle, with its 95% interval), and the share of the CPUs each case kept busy");
        println!(
            "  {:>3} {:>9} {:>15} | {:>6} {:>6} {:>6}",
            "N", "weir CPU", "95% interval", "none", "weir", "mutex"
        );
        for (n, (c, busy)) in &inter.cpu {
            println!(
                "  {n:>3} {:>9.3} {:>15} | {:>6.3} {:>6.3} {:>6.3}",
                c.median,
                ci(c),
                busy[0],
                busy[1],
                busy[2]
            );
        }
    }
    // The headline is the interleaved pass's: its ratios are taken within
    // one cycle of short phases, where the rounds' compare runs seconds
    // apart, and on this kind of VM the no-log case alone has moved by a
    // quarter between the rounds of one run.
    let (headline, from) = if phases.is_empty() {
        (min_ratio, "rounds")
    } else {
        (inter.min(), "interleaved")
    };
    println!(
        "  min_ratio_weir {:.3}, min_ratio_mutex {:.3} (from the {from}); target for weir: >= 0.95",
        headline[0], headline[1]
    );
    if let Some((n, Some((lo, hi)))) = inter.worst_weir().map(|(n, s)| (n, s.ci)) {
        println!("  weir's worst N is {n}; the 95% interval of its median is {lo:.3}-{hi:.3}");
    }
    let [none_r, weir_r, mutex_r] = json_rates;
    let [none_c, weir_c, mutex_c] = json_cpu;
    let [ratio_weir, ratio_mutex] = ratio;
    let [paired_weir, paired_mutex] = paired_ratio;
    let steal_pct = steal::pct_since(cpu0);
    println!("  {}", report::steal_note(steal_pct));
    report::emit(&json!({
        "bench": "changelog-overhead",
        "seconds": secs,
        "rounds": rounds,
        "dir": a.dir,
        "fs": fs.name(),
        "warm": !a.no_warm,
        "ops_per_s": {"none": none_r, "weir": weir_r, "mutex": mutex_r},
        "cpu_ns_per_op": {"none": none_c, "weir": weir_c, "mutex": mutex_c},
        "ratio_weir": ratio_weir,
        "ratio_mutex": ratio_mutex,
        "paired_ratio_weir": paired_weir,
        "paired_ratio_mutex": paired_mutex,
        "min_ratio_weir": round(headline[0], 3),
        "min_ratio_mutex": round(headline[1], 3),
        "min_ratio_from": from,
        "rounds_min_ratio_weir": round(min_ratio[0], 3),
        "rounds_min_ratio_mutex": round(min_ratio[1], 3),
        "min_paired_ratio_weir": round(min_paired[0], 3),
        "min_paired_ratio_mutex": round(min_paired[1], 3),
        "interleaved": inter.json(inter_secs, a.phase_ms),
        "weir_records_per_commit": per_commit,
        "weir_ring_full_waits": full_waits,
        "weir_lifted": lifted,
        "weir_spilled": spilled,
        "weir_committer_cpu_ns_per_record": committer_ns
            .iter()
            .map(|(n, v)| (n.to_string(), json!(round(median(v), 1))))
            .collect::<Map<_, _>>(),
        "host_steal_pct": report::num(steal_pct, 1),
    }));
    Ok(())
}

/// The per-cycle ratios of one case at one thread count, summed up.
#[derive(Clone, Copy)]
struct Spread {
    median: f64,
    q1: f64,
    q3: f64,
    /// The median's 95% confidence interval (`report::median_ci`).
    ci: Option<(f64, f64)>,
}

impl Spread {
    fn of(v: &[f64]) -> Self {
        Spread {
            median: median(v),
            q1: report::quantile(v, 0.25),
            q3: report::quantile(v, 0.75),
            ci: report::median_ci(v),
        }
    }
}

/// The interleaved pass, summed up per thread count.
struct InterleavedSummary {
    /// N -> the per-cycle ratios of weir and of the mutex log.
    rows: BTreeMap<usize, [Spread; 2]>,
    /// N -> weir's CPU per operation over the no-log case's, per cycle,
    /// and the median share of the CPUs each case kept busy.
    cpu: BTreeMap<usize, (Spread, [f64; 3])>,
}

fn interleaved_summary(phases: &BTreeMap<usize, interleave::Phases>) -> InterleavedSummary {
    let mut rows = BTreeMap::new();
    let mut cpu = BTreeMap::new();
    for (&n, p) in phases {
        rows.insert(n, [1, 2].map(|ci| Spread::of(&p.paired(ci))));
        cpu.insert(
            n,
            (
                Spread::of(&p.cpu_paired(1)),
                p.busy.each_ref().map(|b| median(b)),
            ),
        );
    }
    InterleavedSummary { rows, cpu }
}

impl InterleavedSummary {
    /// The lowest median over N, for weir and mutex.
    fn min(&self) -> [f64; 2] {
        [0, 1].map(|i| {
            self.rows
                .values()
                .map(|row| row[i].median)
                .fold(f64::INFINITY, f64::min)
        })
    }

    /// The N whose weir median is the lowest, and that median's interval.
    fn worst_weir(&self) -> Option<(usize, Spread)> {
        self.rows
            .iter()
            .min_by(|a, b| a.1[0].median.total_cmp(&b.1[0].median))
            .map(|(&n, row)| (n, row[0]))
    }

    fn json(&self, secs: f64, phase_ms: u64) -> serde_json::Value {
        if self.rows.is_empty() {
            return serde_json::Value::Null;
        }
        // Per N, for weir (0) or mutex (1): what `f` makes of its row.
        let per_n = |i: usize, f: fn(Spread) -> serde_json::Value| {
            self.rows
                .iter()
                .map(|(n, row)| (n.to_string(), f(row[i])))
                .collect::<Map<String, serde_json::Value>>()
        };
        let as_median = |s: Spread| json!(round(s.median, 3));
        let as_quartiles = |s: Spread| json!([round(s.q1, 3), round(s.q3, 3)]);
        let as_ci = |s: Spread| match s.ci {
            Some((lo, hi)) => json!([round(lo, 3), round(hi, 3)]),
            None => serde_json::Value::Null,
        };
        json!({
            "seconds_per_n": secs,
            "phase_ms": phase_ms,
            "paired_ratio_weir": per_n(0, as_median),
            "paired_ratio_mutex": per_n(1, as_median),
            "quartiles_weir": per_n(0, as_quartiles),
            "quartiles_mutex": per_n(1, as_quartiles),
            "median_ci95_weir": per_n(0, as_ci),
            "median_ci95_mutex": per_n(1, as_ci),
            "cpu_per_op_ratio_weir": self
                .cpu
                .iter()
                .map(|(n, (s, _))| (n.to_string(), json!(round(s.median, 3))))
                .collect::<Map<String, serde_json::Value>>(),
            "busy_share": self
                .cpu
                .iter()
                .map(|(n, (_, b))| {
                    let [none, weir, mutex] = b.map(|x| round(x, 3));
                    (n.to_string(), json!({"none": none, "weir": weir, "mutex": mutex}))
                })
                .collect::<Map<String, serde_json::Value>>(),
            "min_ratio_weir": round(self.min()[0], 3),
            "min_ratio_mutex": round(self.min()[1], 3),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interleaved_minimum_is_the_worst_median_over_n() {
        let mut phases = BTreeMap::new();
        phases.insert(
            1,
            interleave::Phases {
                rates: [vec![100.0; 3], vec![97.0, 96.0, 99.0], vec![70.0; 3]],
                cpu_per_op: [
                    vec![1000.0; 3],
                    vec![1030.0, 1040.0, 1050.0],
                    vec![1300.0; 3],
                ],
                busy: [vec![1.0; 3], vec![0.98; 3], vec![0.7; 3]],
            },
        );
        phases.insert(
            2,
            interleave::Phases {
                rates: [vec![200.0; 3], vec![188.0, 190.0, 192.0], vec![150.0; 3]],
                cpu_per_op: [vec![1000.0; 3], vec![1050.0; 3], vec![1300.0; 3]],
                busy: [vec![1.0; 3], vec![0.99; 3], vec![0.7; 3]],
            },
        );
        let s = interleaved_summary(&phases);
        assert_eq!(s.min(), [0.95, 0.7]);
        let j = s.json(3.0, 100);
        assert_eq!(j["min_ratio_weir"], json!(0.95));
        assert_eq!(j["paired_ratio_weir"]["1"], json!(0.97));
        // Three cycles are too few for a 95% interval.
        assert!(j["median_ci95_weir"]["2"].is_null());
        let (n, worst) = s.worst_weir().unwrap();
        assert_eq!((n, worst.median), (2, 0.95));
        assert_eq!(j["cpu_per_op_ratio_weir"]["1"], json!(1.04));
        assert_eq!(j["busy_share"]["2"]["weir"], json!(0.99));
        assert!(
            interleaved_summary(&BTreeMap::new())
                .json(3.0, 100)
                .is_null()
        );
    }

    #[test]
    fn the_interval_comes_with_enough_cycles() {
        let mut phases = BTreeMap::new();
        let weir: Vec<f64> = (0..20).map(|i| 90.0 + f64::from(i)).collect();
        phases.insert(
            4,
            interleave::Phases {
                rates: [vec![100.0; 20], weir, vec![70.0; 20]],
                cpu_per_op: [vec![1.0; 20], vec![1.0; 20], vec![1.0; 20]],
                busy: [vec![1.0; 20], vec![1.0; 20], vec![1.0; 20]],
            },
        );
        let j = interleaved_summary(&phases).json(3.0, 100);
        // n = 20: ranks 6 and 15 of 0.90..1.09.
        assert_eq!(j["median_ci95_weir"]["4"], json!([0.95, 1.04]));
        assert_eq!(j["median_ci95_mutex"]["4"], json!([0.7, 0.7]));
    }
}
