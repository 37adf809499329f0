//! A since query through the daemon: `weir run --fs-watch ROOT` on the
//! start part's tree (a state directory of its own, so its first reading
//! is a walk), 10,000 changes once it watches (creates, unlinks, renames
//! across directories, new directories with a file), `weir sync`, then
//! `weir --socket S fs changes ROOT --since INDEX --json`, timed from the
//! spawn to its exit: process start, the socket round trip, the daemon's
//! read of its log and the JSON. The median of a few queries. Target:
//! 20 ms. The same query asked over the socket from this process gives
//! the daemon's part alone; the two alternate, once the daemon is at rest.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use weir_client::{Client, PathQuery};

use super::restart::{self, change, directories};
use super::setup::Workspace;
use super::watchers::Tools;
use crate::daemon::child::Daemon;

/// Changes made while the daemon watches.
pub(crate) const CHANGES: usize = 10_000;
/// The target, ms.
const TARGET_MS: f64 = 20.0;
/// Queries timed.
const QUERIES: usize = 5;
/// The window over which the daemon's CPU shows it at rest, and how long
/// it is waited for.
const SETTLE_STEP: Duration = Duration::from_millis(250);
const SETTLE_LIMIT: Duration = Duration::from_secs(30);
/// How long the daemon may take to read the tree.
const READ_LIMIT: Duration = Duration::from_secs(900);

/// What the query through the daemon measured.
#[derive(Debug, Clone)]
pub(crate) struct DaemonSince {
    /// Changes made (those that took).
    pub(crate) made: usize,
    /// Paths the answer listed.
    pub(crate) listed: u64,
    /// Whether it said `fresh` (it must not: the daemon watched all along).
    pub(crate) fresh: bool,
    /// Each query's ms, sorted.
    pub(crate) ms: Vec<f64>,
    /// Each query's ms asked over the socket by this process: the
    /// daemon's part alone, without a process to start; sorted.
    pub(crate) served_ms: Vec<f64>,
}

impl DaemonSince {
    fn median_ms(&self) -> f64 {
        median(&self.ms)
    }

    fn ok(&self) -> bool {
        !self.fresh && self.median_ms() <= TARGET_MS
    }

    pub(crate) fn text(&self) -> String {
        format!(
            "    since through the daemon after {} changes: {} paths listed{}, median {:.1} ms over {} queries (min {:.1}, max {:.1}), process start included; the daemon's part (asked over the socket) median {:.1} ms\n    {}: weir fs changes --since through the daemon <= {TARGET_MS} ms",
            self.made,
            self.listed,
            if self.fresh { " (fresh!)" } else { "" },
            self.median_ms(),
            self.ms.len(),
            self.ms.first().copied().unwrap_or(f64::NAN),
            self.ms.last().copied().unwrap_or(f64::NAN),
            median(&self.served_ms),
            if self.ok() { "PASS" } else { "FAIL" },
        )
    }

    pub(crate) fn json(&self) -> Value {
        json!({
            "changes": self.made,
            "listed": self.listed,
            "fresh": self.fresh,
            "ms": self.ms,
            "median_ms": self.median_ms(),
            "served_ms": self.served_ms,
            "served_median_ms": median(&self.served_ms),
            "target_ms": TARGET_MS,
            "ok": self.ok(),
        })
    }
}

/// The middle of `ms`, which is sorted.
fn median(ms: &[f64]) -> f64 {
    ms.get(ms.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Runs it over `root`.
pub(crate) fn run(tools: &Tools, ws: &Workspace, root: &Path) -> Result<DaemonSince> {
    let weir = tools.weir.as_ref().context("weir is not available")?;
    let state = ws.fresh_dir("since-daemon.state")?;
    let socket = ws.file("since.sock");
    let root_arg = root.to_str().context("the root's path is not UTF-8")?;
    let d = Daemon::start_with(
        weir,
        &state,
        &socket,
        &ws.file("since-daemon.stderr"),
        Duration::from_secs(60),
        &["--fs-watch".into(), root_arg.into()],
    )?;
    let t = Instant::now();
    while fs_state(&d)? != "watching" {
        if t.elapsed() > READ_LIMIT {
            bail!(
                "the daemon did not read {} within {READ_LIMIT:?}",
                root.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let from = last_index(&d)?;
    let dirs = directories(root)?;
    let made = change(root, &dirs, CHANGES, "s")?;
    let st = d.cli(&["sync"]).stdout(Stdio::null()).status()?;
    anyhow::ensure!(st.success(), "weir sync exited with {st}");
    settle(&d)?;
    // The process-started query and the daemon's part alone alternate, so
    // that neither is measured while the other's leftovers run.
    let mut client = Client::connect(d.socket())?.context("the daemon does not answer")?;
    let (mut ms, mut served_ms) = (Vec::with_capacity(QUERIES), Vec::with_capacity(QUERIES));
    let (mut listed, mut fresh) = (0, false);
    for _ in 0..QUERIES {
        let t = Instant::now();
        let out = d
            .cli(&[
                "fs",
                "changes",
                root_arg,
                "--since",
                &from.to_string(),
                "--json",
            ])
            .stderr(Stdio::inherit())
            .output()
            .context("run weir fs changes")?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(
            out.status.success(),
            "weir fs changes exited with {}",
            out.status
        );
        let v: Value = serde_json::from_slice(&out.stdout).context("weir fs changes' JSON")?;
        listed = restart::listed(&v);
        fresh = v["fresh"].as_bool().unwrap_or(true);
        served_ms.push(served(&mut client, root, from)?);
    }
    ms.sort_by(f64::total_cmp);
    served_ms.sort_by(f64::total_cmp);
    d.stop()?;
    let _ = std::fs::remove_dir_all(&state);
    Ok(DaemonSince {
        made,
        listed,
        fresh,
        ms,
        served_ms,
    })
}

/// The same query's ms, asked over the socket by this process.
fn served(c: &mut Client, root: &Path, from: u64) -> Result<f64> {
    let target = PathQuery::new("/v1/fs/changes")
        .param_bytes("root", root.as_os_str().as_encoded_bytes())
        .param("since", from)
        .param("format", "json");
    let mut out = Vec::new();
    let t = Instant::now();
    c.get_text(target.as_str(), &mut out)?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// Waits until the daemon is at rest: the changes logged, it still writes
/// them to its trees' copy for a while, and a query asked meanwhile
/// shares its two CPUs with that.
fn settle(d: &Daemon) -> Result<()> {
    let t = Instant::now();
    let mut last = d.cpu_ns()?;
    loop {
        std::thread::sleep(SETTLE_STEP);
        let now = d.cpu_ns()?;
        // Under 2% of a CPU over the step, or given up on.
        if now - last < SETTLE_STEP.as_nanos() as u64 / 50 || t.elapsed() > SETTLE_LIMIT {
            return Ok(());
        }
        last = now;
    }
}

/// The daemon's one watched root's state (`reading`, `watching`).
fn fs_state(d: &Daemon) -> Result<String> {
    let v = status(d)?;
    Ok(v["fs"]["roots"][0]["state"]
        .as_str()
        .unwrap_or("?")
        .to_owned())
}

/// The daemon's log's last index.
fn last_index(d: &Daemon) -> Result<u64> {
    status(d)?["log"]["last_index"]
        .as_u64()
        .context("weir status --json has no log.last_index")
}

fn status(d: &Daemon) -> Result<Value> {
    let out = d
        .cli(&["status", "--json"])
        .stderr(Stdio::null())
        .output()
        .context("run weir status")?;
    anyhow::ensure!(
        out.status.success(),
        "weir status exited with {}",
        out.status
    );
    serde_json::from_slice(&out.stdout).context("weir status' JSON")
}
