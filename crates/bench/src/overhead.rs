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
//!
//! The steps live in submodules: [`load`] (the cases and the create/unlink
//! load), [`rounds`] (the rounds and their table), [`interleave`] (the
//! interleaved pass) and [`summary`] (its figures).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::json;
use weir_log::Options;

mod interleave;
mod load;
mod rounds;
mod summary;

use crate::fsinfo::FsInfo;
use crate::report::{self, median, round};
use crate::steal;
use rounds::Rounds;
use summary::InterleavedSummary;

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

/// What a run does, from [`Args`] and their defaults.
struct Plan {
    /// Seconds per measurement of the rounds.
    secs: f64,
    /// Seconds per N of the interleaved pass (0: none).
    inter_secs: f64,
    rounds: usize,
    opts: Options,
}

impl Plan {
    fn of(a: &Args) -> Result<Plan> {
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
        Ok(Plan {
            secs,
            inter_secs,
            rounds,
            opts,
        })
    }
}

/// Runs the benchmark.
pub(crate) fn run(a: Args) -> Result<()> {
    let plan = Plan::of(&a)?;
    let fs = FsInfo::of(&a.dir)?;
    let cpu0 = print_setup(&a, &plan, &fs);
    let base = tempfile::Builder::new()
        .prefix("weir-bench-overhead.")
        .tempdir_in(&a.dir)
        .with_context(|| format!("create a directory in {}", a.dir.display()))?;
    let rounds = Rounds::measure(
        base.path(),
        &plan.opts,
        &a.threads,
        plan.secs,
        plan.rounds,
        !a.no_warm,
    )?;
    let phases = interleaved(base.path(), &a, &plan)?;
    drop(base);

    let table = rounds.table(&a.threads, plan.rounds);
    let inter = summary::interleaved_summary(&phases);
    if !phases.is_empty() {
        inter.print(plan.inter_secs, a.phase_ms);
    }
    // The headline is the interleaved pass's: its ratios are taken within
    // one cycle of short phases, where the rounds' compare runs seconds
    // apart, and on this kind of VM the no-log case alone has moved by a
    // quarter between the rounds of one run.
    let (headline, from) = if phases.is_empty() {
        (table.min_ratio, "rounds")
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
    let steal_pct = steal::pct_since(cpu0);
    println!("  {}", report::steal_note(steal_pct));
    let result = Outcome {
        table,
        inter,
        headline,
        from,
        steal_pct,
    };
    report::emit(&result.json(&a, &plan, &fs, &rounds));
    Ok(())
}

/// Prints how the run measures, before it starts; returns the CPU times
/// then, for the share the hypervisor steals during the run.
fn print_setup(a: &Args, plan: &Plan, fs: &FsInfo) -> Option<steal::CpuTimes> {
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
        "  {} s per measurement, {} rounds interleaved, median per case; threads {:?}",
        plan.secs, plan.rounds, a.threads
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
    cpu0
}

/// The interleaved pass at each N, under `base`; none when its time is 0.
fn interleaved(base: &Path, a: &Args, plan: &Plan) -> Result<BTreeMap<usize, interleave::Phases>> {
    let mut phases = BTreeMap::new();
    if plan.inter_secs <= 0.0 {
        return Ok(phases);
    }
    let phase = std::time::Duration::from_millis(a.phase_ms.max(1));
    for &n in &a.threads {
        let root = base.join(format!("interleaved-{n}"));
        std::fs::create_dir(&root)?;
        let p = interleave::run(&root, &plan.opts, n, plan.inter_secs, phase)?;
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
    Ok(phases)
}

/// The figures that go into the JSON line besides the rounds' counters.
struct Outcome {
    table: rounds::Table,
    inter: InterleavedSummary,
    /// The lowest ratio of weir and of the mutex log, from `from`.
    headline: [f64; 2],
    from: &'static str,
    steal_pct: f64,
}

impl Outcome {
    /// The one JSON line the benchmark ends with.
    fn json(self, a: &Args, plan: &Plan, fs: &FsInfo, rounds: &Rounds) -> serde_json::Value {
        let Outcome {
            table,
            inter,
            headline,
            from,
            steal_pct,
        } = self;
        let [none_r, weir_r, mutex_r] = table.rates;
        let [none_c, weir_c, mutex_c] = table.cpu;
        let [ratio_weir, ratio_mutex] = table.ratio;
        let [paired_weir, paired_mutex] = table.paired_ratio;
        json!({
            "bench": "changelog-overhead",
            "seconds": plan.secs,
            "rounds": plan.rounds,
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
            "rounds_min_ratio_weir": round(table.min_ratio[0], 3),
            "rounds_min_ratio_mutex": round(table.min_ratio[1], 3),
            "min_paired_ratio_weir": round(table.min_paired[0], 3),
            "min_paired_ratio_mutex": round(table.min_paired[1], 3),
            "interleaved": inter.json(plan.inter_secs, a.phase_ms),
            "weir_records_per_commit": table.per_commit,
            "weir_ring_full_waits": rounds.full_waits,
            "weir_lifted": rounds.lifted,
            "weir_spilled": rounds.spilled,
            "weir_committer_cpu_ns_per_record": rounds.committer_json(),
            "host_steal_pct": report::num(steal_pct, 1),
        })
    }
}
