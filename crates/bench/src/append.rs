//! `append`: records per second through weir-log's append path.
//!
//! Default mode: T threads (1, 2, 4) call `Log::append` with records whose
//! encoded frame is 100 bytes, as fast as they can, for a fixed time. The log
//! sits on tmpfs by default so that the figure is the append path and the
//! committer, not a disk. The ring is bounded (65536 slots by default), so a
//! committer that falls behind throttles the writers within milliseconds;
//! the rate is therefore sustained throughput, and the time to drain the
//! ring afterwards is reported too.
//!
//! Durable mode: W writers (1, 4, 16, 64) each loop `append_durable` on a
//! real disk filesystem, against the same W threads appending through one
//! global mutex with `pwrite` + `fdatasync` per record. Group commit is
//! what makes the difference; the speedup at 64 writers is the target.
//! Then one durable writer with its log on tmpfs, where an fsync costs
//! next to nothing, gives the commit path's own time per record. At 64
//! writers an interleaved pass follows (see `interleave`): weir and the
//! baseline take turns in short phases, and the per-cycle speedups are
//! reported beside the rounds' figure.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};
use weir_log::{Log, Options, Record, RecordType, codec};

use crate::fsinfo::FsInfo;
use crate::mutexlog::MutexLog;
use crate::report::{self, median, quantile, round};
use crate::steal;
use crate::timed::{self, Ticket};

mod interleave;

/// Target encoded size of each record.
const RECORD_BYTES: usize = 100;
const DEFAULT_THREADS: [usize; 3] = [1, 2, 4];
const DURABLE_WRITERS: [usize; 4] = [1, 4, 16, 64];

/// Options of `append`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Short run (under 60 s).
    #[arg(long)]
    quick: bool,
    /// Directory for the default-mode log (tmpfs measures the append path, not a disk).
    #[arg(long, default_value = "/dev/shm")]
    dir: PathBuf,
    /// Directory for the durable mode, on a real disk filesystem (not tmpfs).
    #[arg(long, default_value = "/var/tmp")]
    durable_dir: PathBuf,
    /// Seconds per default-mode measurement [default: 3, or 1 with --quick].
    #[arg(long)]
    seconds: Option<f64>,
    /// Seconds per durable-mode measurement [default: 4, or 1.5 with --quick].
    #[arg(long)]
    durable_seconds: Option<f64>,
    /// Rounds, median reported [default: 3, or 1 with --quick].
    #[arg(long)]
    rounds: Option<usize>,
    /// Which modes to run.
    #[arg(long, value_enum, default_value_t = Mode::Both)]
    mode: Mode,
    /// Slots in weir's append ring [default: weir-log's default].
    #[arg(long)]
    ring_slots: Option<usize>,
    /// Seconds of the durable interleaved pass at 64 writers, in which weir
    /// and the baseline take turns in short phases (0: skip it) [default:
    /// 20, or 3 with --quick].
    #[arg(long)]
    interleave_seconds: Option<f64>,
    /// Length of one phase of the interleaved pass, in ms.
    #[arg(long, default_value_t = 250)]
    phase_ms: u64,
}

impl Args {
    /// The log's options: the defaults, with `--ring-slots` applied.
    fn log_options(&self) -> Options {
        let o = Options::default();
        match self.ring_slots {
            Some(n) => o.ring_slots(n),
            None => o,
        }
    }
}

/// The modes of `append`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Default,
    Durable,
    Both,
}

/// A parent id for thread `t` and a name that makes the frame `RECORD_BYTES` long.
fn record_parts(t: usize) -> Result<([u8; 8], Vec<u8>)> {
    let parent = (t as u64).to_le_bytes();
    let bare = codec::encoded_len(&Record::new(RecordType::CREAT).parent(&parent))?;
    let name = vec![b'n'; RECORD_BYTES - bare];
    let full = codec::encoded_len(&Record::new(RecordType::CREAT).parent(&parent).name(&name))?;
    if full != RECORD_BYTES {
        bail!("record is {full} bytes, wanted {RECORD_BYTES}");
    }
    Ok((parent, name))
}

/// One writer of a timed run: thread `t` appends its record of
/// `RECORD_BYTES` with `append`, `batch` at a time between looks at the
/// clock, until the run stops; returns how many it appended.
#[inline]
fn writer(
    t: usize,
    ticket: &Ticket<'_>,
    batch: u64,
    append: impl Fn(&Record<'_>) -> Result<()>,
) -> Result<u64> {
    let (parent, name) = record_parts(t)?;
    let rec = Record::new(RecordType::CREAT).parent(&parent).name(&name);
    let mut count = 0u64;
    ticket.ready();
    while !ticket.stopped() {
        for _ in 0..batch {
            append(&rec)?;
        }
        count += batch;
    }
    Ok(count)
}

struct DefaultRun {
    per_s: f64,
    cpu_ns: f64,
    drain_s: f64,
    records: u64,
}

/// Default mode, `n` threads, one measurement in a fresh log.
fn default_once(base: &Path, opts: &Options, n: usize, secs: f64, k: usize) -> Result<DefaultRun> {
    let dir = base.join(format!("default{k}-{n}t"));
    let log = Log::open(&dir, opts.clone())?;
    let r = timed::run_for(n, secs, |t, ticket| {
        writer(t, ticket, 64, |rec| {
            log.append(rec).map(drop).map_err(Into::into)
        })
    })?;
    let (records, elapsed) = (r.count, r.elapsed_s);
    let t = Instant::now();
    log.sync()?;
    let drain_s = t.elapsed().as_secs_f64();
    let last = log.stats().last_index;
    log.close()?;
    if last != records {
        bail!("log holds {last} records, {records} were appended");
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(DefaultRun {
        per_s: records as f64 / elapsed,
        cpu_ns: r.cpu_s * 1e9 / records.max(1) as f64,
        drain_s,
        records,
    })
}

/// What one durable run of weir measured.
struct DurableRun {
    per_s: f64,
    /// Records per fsync.
    per_sync: f64,
    /// The share of durable waits that slept on the futex rather than saw
    /// their record while polling (`Stats::durable_sleeps`).
    slept: f64,
    /// Times polling was shut because waiters lost the CPU to other tasks.
    poll_shuts: u64,
}

/// Durable mode, `w` writers, weir: every append waits for its fsync.
fn durable_weir(base: &Path, opts: &Options, w: usize, secs: f64, k: usize) -> Result<DurableRun> {
    let dir = base.join(format!("durable{k}-{w}w"));
    let log = Log::open(&dir, opts.clone())?;
    let r = timed::run_for(w, secs, |t, ticket| {
        writer(t, ticket, 1, |rec| {
            log.append_durable(rec).map(drop).map_err(Into::into)
        })
    })?;
    let (records, elapsed) = (r.count, r.elapsed_s);
    let st = log.stats();
    log.close()?;
    std::fs::remove_dir_all(&dir)?;
    Ok(DurableRun {
        per_s: records as f64 / elapsed,
        per_sync: records as f64 / st.syncs.max(1) as f64,
        slept: st.durable_sleeps as f64 / st.durable_waits.max(1) as f64,
        poll_shuts: st.durable_poll_shuts,
    })
}

/// Durable mode, `w` writers, baseline: global mutex, pwrite + fdatasync per record.
fn durable_mutex(base: &Path, w: usize, secs: f64, k: usize) -> Result<f64> {
    let path = base.join(format!("mutex{k}-{w}w.log"));
    let mlog = MutexLog::create(&path)?;
    let r = timed::run_for(w, secs, |t, ticket| {
        writer(t, ticket, 1, |rec| mlog.append(rec, true))
    })?;
    let (records, elapsed) = (r.count, r.elapsed_s);
    if mlog.records() != records {
        bail!(
            "mutex log holds {} records, {records} were appended",
            mlog.records()
        );
    }
    drop(mlog);
    std::fs::remove_file(&path)?;
    Ok(records as f64 / elapsed)
}

fn tempdir(parent: &Path, what: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("weir-bench-append-{what}."))
        .tempdir_in(parent)
        .with_context(|| format!("create a directory in {}", parent.display()))
}

/// Default mode: returns the JSON part and the 2-thread rate.
fn default_mode(a: &Args, secs: f64, rounds: usize) -> Result<(Value, f64)> {
    let fs = FsInfo::of(&a.dir)?;
    println!(
        "  default mode: Log::append in a tight loop, a ring of {} slots, log in {} ({}); {secs} s x {rounds} rounds, median",
        a.log_options().ring_slots,
        a.dir.display(),
        fs.name()
    );
    let base = tempdir(&a.dir, "default")?;
    let mut rates_json = Map::new();
    let mut cpu_json = Map::new();
    let mut default_2t = f64::NAN;
    for &n in &DEFAULT_THREADS {
        let mut rates = Vec::new();
        let mut drains = Vec::new();
        let mut cpu = Vec::new();
        let mut recs = 0;
        for k in 0..rounds {
            let r = default_once(base.path(), &a.log_options(), n, secs, k)?;
            eprintln!(
                "  default {n}t round {k}: {:.0}/s, {:.0} CPU ns/record",
                r.per_s, r.cpu_ns
            );
            rates.push(r.per_s);
            cpu.push(r.cpu_ns);
            drains.push(r.drain_s);
            recs = r.records;
        }
        let m = median(&rates);
        println!(
            "  {n} thread(s): {:>11.0} records/s ({:.1} M/s), {:.0} CPU ns/record (all threads); last run {recs} records, ring drained {:.1} ms after the stop",
            m,
            m / 1e6,
            median(&cpu),
            median(&drains) * 1e3
        );
        rates_json.insert(n.to_string(), json!(m.round() as u64));
        cpu_json.insert(n.to_string(), json!(median(&cpu).round() as u64));
        if n == 2 {
            default_2t = m;
        }
    }
    let part = json!({
        "dir": a.dir,
        "fs": fs.name(),
        "seconds": secs,
        "per_s": rates_json,
        "cpu_ns_per_record": cpu_json,
    });
    Ok((part, default_2t))
}

/// A lone durable writer with its log in the default-mode directory (tmpfs
/// unless told otherwise), where fdatasync costs next to nothing: the time
/// per record is the commit path's own, chiefly the hand-offs between the
/// writer and the committer.
fn commit_path(a: &Args, secs: f64, rounds: usize) -> Result<Value> {
    let fs = FsInfo::of(&a.dir)?;
    let base = tempdir(&a.dir, "commit-path")?;
    let mut rates = Vec::new();
    for k in 0..rounds {
        let r = durable_weir(base.path(), &a.log_options(), 1, secs, k)?.per_s;
        eprintln!("  lone durable writer round {k}: {r:.0}/s");
        rates.push(r);
    }
    let r = median(&rates);
    println!(
        "  a lone durable writer, log in {} ({}): {r:.0}/s, {:.1} us per record (the commit path without a device)",
        a.dir.display(),
        fs.name(),
        1e6 / r
    );
    Ok(json!({
        "dir": a.dir,
        "fs": fs.name(),
        "per_s": round(r, 1),
        "us_per_record": round(1e6 / r, 1),
    }))
}

/// Durable mode: returns the JSON part and the speedup at 64 writers.
fn durable_mode(a: &Args, secs: f64, rounds: usize) -> Result<(Value, f64)> {
    let fs = FsInfo::of(&a.durable_dir)?;
    if fs.is_tmpfs() {
        bail!(
            "--durable-dir {} is tmpfs, where fdatasync does nothing; give a disk filesystem",
            a.durable_dir.display()
        );
    }
    println!(
        "  durable mode: W threads each looping append_durable, log in {} ({}), a ring of {} slots;",
        a.durable_dir.display(),
        fs.name(),
        a.log_options().ring_slots
    );
    println!(
        "  baseline: the same W threads, one global mutex around encode + pwrite + fdatasync (file grows by append)"
    );
    println!("  {secs} s per measurement x {rounds} rounds (weir and baseline alternate), median");
    let base = tempdir(&a.durable_dir, "durable")?;
    let mut weir_rates = Map::new();
    let mut mutex_rates = Map::new();
    let mut speedups = Map::new();
    let mut batch = Map::new();
    let mut slept_json = Map::new();
    let mut shuts_json = Map::new();
    let mut speedup_64 = f64::NAN;
    let mut weir_64 = f64::NAN;
    let mut best_mutex = 0f64;
    for &w in &DURABLE_WRITERS {
        let (mut wr, mut mr, mut per_sync) = (Vec::new(), Vec::new(), Vec::new());
        let (mut slept, mut shuts) = (Vec::new(), 0);
        for k in 0..rounds {
            let d = durable_weir(base.path(), &a.log_options(), w, secs, k)?;
            let m = durable_mutex(base.path(), w, secs, k)?;
            eprintln!(
                "  durable {w}w round {k}: weir {:.0}/s ({:.1} records/fsync, {:.1}% of waits slept, polling shut {} times), mutex {m:.0}/s",
                d.per_s,
                d.per_sync,
                d.slept * 100.0,
                d.poll_shuts
            );
            wr.push(d.per_s);
            mr.push(m);
            per_sync.push(d.per_sync);
            slept.push(d.slept);
            shuts += d.poll_shuts;
        }
        let (r, m) = (median(&wr), median(&mr));
        let s = r / m;
        println!(
            "  {w:>2} writers: weir {r:>9.0}/s ({:.1} records per fsync, {:.1}% of waits slept), mutex {m:>8.0}/s, speedup {s:.1}x",
            median(&per_sync),
            median(&slept) * 100.0
        );
        slept_json.insert(w.to_string(), json!(round(median(&slept), 3)));
        shuts_json.insert(w.to_string(), json!(shuts));
        weir_rates.insert(w.to_string(), json!(round(r, 1)));
        mutex_rates.insert(w.to_string(), json!(round(m, 1)));
        speedups.insert(w.to_string(), json!(round(s, 2)));
        batch.insert(w.to_string(), json!(round(median(&per_sync), 1)));
        best_mutex = best_mutex.max(m);
        if w == 64 {
            speedup_64 = s;
            weir_64 = r;
        }
    }
    // The baseline loses throughput as writers are added (lock hand-offs
    // between threads); against its best rate at any W the gain is smaller.
    let vs_best = weir_64 / best_mutex;
    println!(
        "  weir at 64 writers vs the baseline's best rate at any W ({best_mutex:.0}/s): {vs_best:.1}x"
    );
    let interleaved = match a
        .interleave_seconds
        .unwrap_or(if a.quick { 3.0 } else { 20.0 })
    {
        s if s > 0.0 => durable_interleaved(a, base.path(), s)?,
        _ => Value::Null,
    };
    let lone = commit_path(a, secs, rounds)?;
    let part = json!({
        "dir": a.durable_dir,
        "fs": fs.name(),
        "seconds": secs,
        "per_s": {"weir": weir_rates, "mutex_fdatasync": mutex_rates},
        "records_per_fsync": batch,
        "weir_slept_share": slept_json,
        "weir_poll_shuts": shuts_json,
        "speedup": speedups,
        "speedup_64w_vs_best_mutex": round(vs_best, 2),
        "interleaved_64w": interleaved,
        "commit_path_1w": lone,
    });
    Ok((part, speedup_64))
}

/// The interleaved pass at 64 writers: the median of the per-cycle
/// speedups, with their quartiles and the cases' median rates.
fn durable_interleaved(a: &Args, base: &Path, secs: f64) -> Result<Value> {
    let w = 64;
    let dir = base.join("interleaved");
    std::fs::create_dir(&dir)?;
    let phase = Duration::from_millis(a.phase_ms.max(1));
    let p = interleave::run(&dir, &a.log_options(), w, secs, phase)?;
    std::fs::remove_dir_all(&dir)?;
    let s = p.speedups();
    let (mid, q1, q3) = (median(&s), quantile(&s, 0.25), quantile(&s, 0.75));
    println!(
        "  interleaved, {w} writers: {} cycles of {} ms per case; per-cycle speedup {mid:.1}x (quartiles {q1:.1}-{q3:.1}); weir {:.0}/s, mutex {:.0}/s (medians)",
        s.len(),
        phase.as_millis(),
        median(&p.weir),
        median(&p.mutex)
    );
    Ok(json!({
        "writers": w,
        "seconds": secs,
        "phase_ms": phase.as_millis() as u64,
        "cycles": s.len(),
        "speedup": round(mid, 2),
        "quartiles": [round(q1, 2), round(q3, 2)],
        "per_s": {"weir": round(median(&p.weir), 1), "mutex_fdatasync": round(median(&p.mutex), 1)},
    }))
}

/// Runs the benchmark.
pub(crate) fn run(a: Args) -> Result<()> {
    let secs = a.seconds.unwrap_or(if a.quick { 1.0 } else { 3.0 });
    let dsecs = a.durable_seconds.unwrap_or(if a.quick { 1.5 } else { 4.0 });
    let rounds = a.rounds.unwrap_or(if a.quick { 1 } else { 3 }).max(1);
    println!("append: records of {RECORD_BYTES} encoded bytes (CREAT, 8-byte parent, name)");
    println!("  {}", report::host_note());
    let cpu0 = steal::CpuTimes::now();
    let (default, default_2t) = match a.mode {
        Mode::Durable => (Value::Null, f64::NAN),
        _ => default_mode(&a, secs, rounds)?,
    };
    let (durable, speedup_64) = match a.mode {
        Mode::Default => (Value::Null, f64::NAN),
        _ => durable_mode(&a, dsecs, rounds)?,
    };
    println!(
        "  default_2t_per_s {:.0} (target >= 5,000,000); durable_64w_speedup {:.1} (target >= 20)",
        default_2t, speedup_64
    );
    let steal_pct = steal::pct_since(cpu0);
    println!("  {}", report::steal_note(steal_pct));
    report::emit(&json!({
        "bench": "append",
        "record_bytes": RECORD_BYTES,
        "rounds": rounds,
        "default": default,
        "durable": durable,
        "default_2t_per_s": report::num(default_2t, 0),
        "durable_64w_speedup": report::num(speedup_64, 2),
        "host_steal_pct": report::num(steal_pct, 1),
    }));
    Ok(())
}
