//! `recovery`: how long opening a large log takes after a crash, and after a
//! clean close.
//!
//! A child process (this binary, hidden `recovery-fill` subcommand) appends
//! large records as fast as it can; once the segment files reach the target
//! size the parent SIGKILLs it, leaving an unsealed tail with whatever the
//! committer had or had not written. Before each timed open the log's pages
//! are written back and dropped from the page cache (`fdatasync` +
//! `posix_fadvise(DONTNEED)` per segment file), so the open reads from the
//! device as it would after a reboot; directory metadata stays cached.

use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rustix::fs::Advice;
use serde_json::json;
use weir_log::{Log, Options, Record, RecordType, Retention};

use crate::fsinfo::FsInfo;
use crate::report::{self, round};

const GIB: u64 = 1 << 30;
/// Name bytes per record: large records fill the log quickly.
const NAME_BYTES: usize = 4096;
const FILL_THREADS: usize = 2;

/// Options of `recovery`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Short run: a 1 GiB log unless --gib is given.
    #[arg(long)]
    quick: bool,
    /// Log size in GiB [default: 10, or 1 with --quick].
    #[arg(long)]
    gib: Option<f64>,
    /// A directory on a disk filesystem (not tmpfs).
    #[arg(long, default_value = "/var/tmp")]
    dir: PathBuf,
}

/// Options of the hidden `recovery-fill`.
#[derive(clap::Args, Debug)]
pub(crate) struct FillArgs {
    #[arg(long)]
    log: PathBuf,
    /// Stop on its own past this many bytes, in case the parent is gone.
    #[arg(long)]
    max_bytes: u64,
}

/// Options for every open of the benchmark log: default, except that the
/// size limit must not delete segments of a log this large.
fn options() -> Options {
    Options::default().retention(Retention {
        max_bytes: 1 << 40,
        ..Retention::default()
    })
}

/// Segment files of `dir` and their total length.
fn segments(dir: &Path) -> Result<(Vec<PathBuf>, u64)> {
    let mut v = Vec::new();
    let mut total = 0;
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "wlog") {
            // A segment may vanish or change under a running writer.
            if let Ok(m) = std::fs::metadata(&p) {
                total += m.len();
                v.push(p);
            }
        }
    }
    v.sort();
    Ok((v, total))
}

/// Writes back and drops the log's pages from the page cache.
fn drop_cache(dir: &Path) -> Result<()> {
    for p in segments(dir)?.0 {
        let f = std::fs::File::open(&p)?;
        f.sync_data()?;
        rustix::fs::fadvise(&f, 0, None::<NonZeroU64>, Advice::DontNeed)?;
    }
    Ok(())
}

/// The hidden writer: appends until killed (or past `max_bytes`, or orphaned).
pub(crate) fn fill(a: FillArgs) -> Result<()> {
    let parent = rustix::process::getppid();
    let log = Log::open(&a.log, options())?;
    let name = vec![b'r'; NAME_BYTES];
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..FILL_THREADS)
            .map(|t| {
                let (log, name, a) = (&log, &name, &a);
                s.spawn(move || -> Result<()> {
                    let p = (t as u64).to_le_bytes();
                    let r = Record::new(RecordType::MARK).parent(&p).name(name);
                    for i in 0u64.. {
                        let _ = log.append(&r)?;
                        if i % 4096 == 0
                            && (rustix::process::getppid() != parent
                                || segments(&a.log)?.1 > a.max_bytes)
                        {
                            return Ok(());
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for h in hs {
            h.join().map_err(|_| anyhow::anyhow!("writer panicked"))??;
        }
        Ok(())
    })
}

/// Kills the writer if the benchmark stops early.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the benchmark.
pub(crate) fn run(a: Args) -> Result<()> {
    let want = a.gib.unwrap_or(if a.quick { 1.0 } else { 10.0 });
    if want <= 0.0 {
        bail!("--gib must be positive");
    }
    let fs = FsInfo::of(&a.dir)?;
    if fs.is_tmpfs() {
        bail!(
            "{} is tmpfs; recovery needs a disk filesystem",
            a.dir.display()
        );
    }
    let mut target = (want * GIB as f64) as u64;
    // Leave 2 GiB and 10% of what is free.
    let room = (fs.avail_bytes.saturating_sub(2 * GIB) as f64 * 0.9) as u64;
    let mut note = String::new();
    if room < target {
        if room < 64 << 20 {
            return report::skipped(
                "recovery",
                &format!(
                    "only {} MiB free in {}",
                    fs.avail_bytes >> 20,
                    a.dir.display()
                ),
            );
        }
        note = format!(
            "scaled down from {want} GiB to {:.2} GiB: only {:.1} GiB free in {}",
            room as f64 / GIB as f64,
            fs.avail_bytes as f64 / GIB as f64,
            a.dir.display()
        );
        target = room;
    }
    println!(
        "recovery: log of {:.2} GiB in {} ({}), records of {NAME_BYTES}-byte names appended by {FILL_THREADS} threads of a child that is SIGKILLed at the target size",
        target as f64 / GIB as f64,
        a.dir.display(),
        fs.name()
    );
    if !note.is_empty() {
        println!("  NOTE: {note}");
    }
    println!(
        "  before each timed open: fdatasync + fadvise(DONTNEED) on every segment (cold page cache)"
    );
    let tmp = tempfile::Builder::new()
        .prefix("weir-bench-recovery.")
        .tempdir_in(&a.dir)?;
    let dir = tmp.path().join("log");

    let t = Instant::now();
    let exe = std::env::current_exe()?;
    let mut child = KillOnDrop(
        Command::new(exe)
            .arg("recovery-fill")
            .arg("--log")
            .arg(&dir)
            .arg("--max-bytes")
            .arg((target + target / 2).to_string())
            .stdin(Stdio::null())
            .spawn()
            .context("start the writer")?,
    );
    loop {
        if let Some(st) = child.0.try_wait()? {
            bail!("the writer exited early ({st})");
        }
        if dir.exists() && segments(&dir)?.1 >= target {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.0.kill()?;
    child.0.wait()?;
    let fill_s = t.elapsed().as_secs_f64();
    let (_, bytes_at_kill) = segments(&dir)?;
    println!(
        "  writer killed after {fill_s:.1} s at {:.2} GiB of segment files ({:.0} MiB/s)",
        bytes_at_kill as f64 / GIB as f64,
        bytes_at_kill as f64 / fill_s / (1 << 20) as f64
    );

    let t = Instant::now();
    drop_cache(&dir)?;
    eprintln!(
        "  writeback + cache drop took {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let log = Log::open(&dir, options())?;
    let crash_s = t.elapsed().as_secs_f64();
    let rep = log.recovery().clone();
    let records = rep.next_index - 1;
    let t = Instant::now();
    log.close()?;
    let close_s = t.elapsed().as_secs_f64();
    let (segs, log_bytes) = segments(&dir)?;
    println!(
        "  open after the crash: {:.1} ms; {} segments, {records} records, scanned {} B of the tail, sealed tail: {}",
        crash_s * 1e3,
        rep.segments,
        rep.scanned_bytes,
        rep.sealed_tail
    );
    match &rep.torn {
        Some(t) => println!(
            "  torn tail in {}: valid to {}, dropped {} B and {} records ({:?})",
            t.path.display(),
            t.valid_end,
            t.dropped_bytes,
            t.dropped_records,
            t.cause
        ),
        None => println!("  no torn tail (the kill left whole records only)"),
    }

    drop_cache(&dir)?;
    let t = Instant::now();
    let log = Log::open(&dir, options())?;
    let clean_s = t.elapsed().as_secs_f64();
    let clean_scanned = log.recovery().scanned_bytes;
    log.close()?;
    println!(
        "  clean reopen: {:.1} ms, scanned {clean_scanned} B; close after recovery took {:.1} ms",
        clean_s * 1e3,
        close_s * 1e3
    );
    println!("  target: open after a crash < 1 s for 10 GiB");
    drop(tmp);
    report::emit(&json!({
        "bench": "recovery",
        "log_bytes": log_bytes,
        "segments": segs.len(),
        "records": records,
        "open_after_crash_s": round(crash_s, 4),
        "clean_open_s": round(clean_s, 4),
        "tail_scanned_bytes": rep.scanned_bytes,
        "clean_scanned_bytes": clean_scanned,
        "torn": rep.torn.as_ref().map(|t| json!({
            "valid_end": t.valid_end,
            "dropped_bytes": t.dropped_bytes,
            "dropped_records": t.dropped_records,
            "cause": t.cause.map(|c| c.to_string()),
        })),
        "sealed_tail": rep.sealed_tail,
        "fs": fs.name(),
        "note": if note.is_empty() { None } else { Some(note) },
    }));
    Ok(())
}
