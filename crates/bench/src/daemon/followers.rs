//! 100 consumers follow the log through the daemon during a mount storm,
//! and none may miss or repeat a record.
//!
//! Each consumer is registered through the daemon (half of them with the
//! mask `MOUNT_ATTACH,MOUNT_DETACH`, half with every type) and followed by
//! its own `weir log tail -f --json --consumer NAME` process, as a real
//! consumer would. After the storm, `weir sync` gives the index up to which
//! every change is in the log; once every follower has seen it, each one's
//! indexes are compared with what a lock-free reader of the log directory
//! finds for that consumer's range and mask.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use weir_log::{Reader, TypeMask};

use super::child::Daemon;
use crate::loopdev::run_tool;
use crate::storm::driver::{Loop, Workspace};

/// What the followers saw.
#[derive(Debug, Default)]
pub(crate) struct Followers {
    pub(crate) consumers: usize,
    /// Records each follower had to see, summed.
    pub(crate) expected: u64,
    pub(crate) exact: bool,
    /// The first problems found, for the report.
    pub(crate) problems: Vec<String>,
    /// The daemon's CPU from the storm's start until every follower had
    /// caught up, s.
    pub(crate) daemon_cpu_s: f64,
    /// The storm's wall time, s.
    pub(crate) storm_s: f64,
    /// From the storm's end until every follower had seen the last record, s.
    pub(crate) catch_up_s: f64,
    pub(crate) storm_mounts: usize,
}

struct Follower {
    name: String,
    mask: Option<TypeMask>,
    cleared: u64,
    child: Child,
    seen: Arc<AtomicU64>,
    /// The indexes it must see, once the storm is synced.
    want: Vec<u64>,
    reader: Option<JoinHandle<Result<Vec<u64>>>>,
}

/// Registers `n` consumers, follows each, storms `storm` mounts (raw
/// mount(2), then as many unmounts), and checks every follower.
pub(crate) fn run(
    d: &Daemon,
    log_dir: &Path,
    ws: &Workspace,
    n: usize,
    storm: usize,
) -> Result<Followers> {
    let masked = TypeMask::parse("MOUNT_ATTACH,MOUNT_DETACH")?;
    let tag = std::process::id();
    let mut followers = Vec::with_capacity(n);
    let r = (|| -> Result<Followers> {
        for i in 0..n {
            let name = format!("bench{tag}-{i}");
            let mask = (i % 2 == 1).then(|| masked.clone());
            let mut reg = d.cli(&["log", "consumer", "register", &name]);
            if mask.is_some() {
                reg.args(["--mask", "MOUNT_ATTACH,MOUNT_DETACH"]);
            }
            run_tool(&mut reg)?;
            followers.push(start_follower(d, name, mask)?);
        }
        let listed = run_tool(&mut d.cli(&["log", "consumer", "list", "--json"]))?;
        for line in String::from_utf8_lossy(&listed.stdout).lines() {
            let v: Value = serde_json::from_str(line).context("consumer list --json")?;
            if let Some(f) = followers
                .iter_mut()
                .find(|f| v["name"].as_str() == Some(f.name.as_str()))
            {
                f.cleared = v["cleared"].as_u64().context("no cleared index")?;
            }
        }
        // Let every follower connect before the storm starts.
        std::thread::sleep(Duration::from_millis(500));

        let cpu0 = d.cpu_ns()?;
        let t0 = Instant::now();
        ws.attach(Loop::Raw, storm)?;
        ws.detach(Loop::Raw, storm)?;
        let storm_s = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let out = run_tool(&mut d.cli(&["sync"]))?;
        let upto: u64 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .context("weir sync did not print an index")?;
        for f in &mut followers {
            f.want = wanted(log_dir, f.cleared, f.mask.as_ref(), upto)?;
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        for f in &followers {
            let last = f.want.last().copied().unwrap_or(0);
            while last > f.seen.load(Ordering::Acquire) {
                if Instant::now() > deadline {
                    bail!(
                        "{} saw records only up to {} of {upto}",
                        f.name,
                        f.seen.load(Ordering::Acquire)
                    );
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let catch_up_s = t1.elapsed().as_secs_f64();
        let daemon_cpu_s = (d.cpu_ns()? - cpu0) as f64 / 1e9;
        Ok(Followers {
            consumers: n,
            daemon_cpu_s,
            storm_s,
            catch_up_s,
            storm_mounts: storm,
            exact: true,
            expected: upto,
            problems: Vec::new(),
        })
    })();
    // Stop every follower, also after an error, then judge what each saw.
    let mut seen_all = Vec::with_capacity(followers.len());
    for mut f in followers.drain(..) {
        let _ = f.child.kill();
        let _ = f.child.wait();
        let seen = f.reader.take().map(JoinHandle::join);
        seen_all.push((f, seen));
    }
    let mut res = r?;
    let upto = res.expected;
    res.expected = 0;
    for (f, seen) in seen_all {
        let seen = seen
            .context("a follower had no reader")?
            .map_err(|_| anyhow::anyhow!("a follower thread panicked"))??;
        let want = &f.want;
        res.expected += want.len() as u64;
        let seen: Vec<u64> = seen.into_iter().filter(|&i| i <= upto).collect();
        if &seen != want {
            res.exact = false;
            if res.problems.len() < 5 {
                res.problems.push(describe(&f.name, &seen, want));
            }
        }
    }
    Ok(res)
}

fn start_follower(d: &Daemon, name: String, mask: Option<TypeMask>) -> Result<Follower> {
    let mut child = d
        .cli(&["log", "tail", "-f", "--json", "--consumer", &name])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("start weir log tail -f")?;
    let out = child.stdout.take().context("no stdout")?;
    let seen = Arc::new(AtomicU64::new(0));
    let s = seen.clone();
    let reader = std::thread::spawn(move || -> Result<Vec<u64>> {
        let mut got = Vec::new();
        for line in BufReader::new(out).lines() {
            let line = line?;
            let v: Value = serde_json::from_str(&line).context("a followed line is not JSON")?;
            let i = v["index"]
                .as_u64()
                .context("a followed record has no index")?;
            got.push(i);
            s.store(i, Ordering::Release);
        }
        Ok(got)
    });
    Ok(Follower {
        name,
        mask,
        cleared: 0,
        child,
        seen,
        want: Vec::new(),
        reader: Some(reader),
    })
}

/// The indexes a consumer cleared up to `cleared`, with `mask`, must see up
/// to `upto`, read lock-free from the log directory.
fn wanted(dir: &Path, cleared: u64, mask: Option<&TypeMask>, upto: u64) -> Result<Vec<u64>> {
    let mut r = Reader::open_dir(dir, cleared + 1);
    if let Some(m) = mask {
        r = r.with_mask(m.clone());
    }
    let mut v = Vec::new();
    while let Some(rec) = r.next_record()? {
        if rec.index > upto {
            break;
        }
        v.push(rec.index);
    }
    Ok(v)
}

fn describe(name: &str, seen: &[u64], want: &[u64]) -> String {
    let dup = seen.windows(2).filter(|w| w[0] >= w[1]).count();
    let missing = want
        .iter()
        .filter(|i| seen.binary_search(i).is_err())
        .count();
    format!(
        "{name}: saw {} records, wanted {}; {missing} missing, {dup} out of order or repeated",
        seen.len(),
        want.len()
    )
}
