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

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, Mode, OFlags};
use serde_json::{Map, json};
use weir_log::{Log, Options, Record, RecordType};

use crate::freemem;
use crate::fsinfo::FsInfo;
use crate::mutexlog::MutexLog;
use crate::report::{self, median, round};
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

/// One thread of the load: create and unlink in `dir` until the run stops.
/// Returns the number of operations.
fn worker(dir: &Path, t: usize, sink: &Sink<'_>, ticket: &Ticket<'_>) -> Result<u64> {
    let ino = std::fs::metadata(dir)?.ino();
    let parent = ino.to_le_bytes();
    let dirfd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut buf = [0u8; 64];
    let mut ops = 0u64;
    let mut i = 0u64;
    ticket.ready();
    while !ticket.stopped() {
        i += 1;
        let len = {
            let mut w: &mut [u8] = &mut buf;
            write!(w, "file.mdtest.{t}.{i}\0")?;
            64 - w.len()
        };
        let cname = CStr::from_bytes_with_nul(&buf[..len])?;
        let name = &buf[..len - 1];
        let fd = rustix::fs::openat(
            &dirfd,
            cname,
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )?;
        drop(fd);
        sink.record(&Record::new(RecordType::CREAT).parent(&parent).name(name))?;
        rustix::fs::unlinkat(&dirfd, cname, AtFlags::empty())?;
        sink.record(&Record::new(RecordType::UNLNK).parent(&parent).name(name))?;
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
                    counters = format!(
                        ", {} ring-full waits, {} lifted, {} spilled",
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
        "  min ratio: weir {:.3}, mutex {:.3} (paired: {:.3}, {:.3}); target for weir: >= 0.95",
        min_ratio[0], min_ratio[1], min_paired[0], min_paired[1]
    );
    println!(
        "  (CPU ns/op counts every thread of the process, weir's committer included; time spent"
    );
    println!("   asleep waiting for the mutex is not CPU, so it understates the mutex's cost)");
    let [none_r, weir_r, mutex_r] = json_rates;
    let [none_c, weir_c, mutex_c] = json_cpu;
    let [ratio_weir, ratio_mutex] = ratio;
    let [paired_weir, paired_mutex] = paired_ratio;
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
        "min_ratio_weir": round(min_ratio[0], 3),
        "min_ratio_mutex": round(min_ratio[1], 3),
        "min_paired_ratio_weir": round(min_paired[0], 3),
        "min_paired_ratio_mutex": round(min_paired[1], 3),
        "weir_records_per_commit": per_commit,
        "weir_ring_full_waits": full_waits,
        "weir_lifted": lifted,
        "weir_spilled": spilled,
    }));
    Ok(())
}
