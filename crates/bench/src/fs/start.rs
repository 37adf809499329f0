//! The start part: what it takes to start watching a big tree, warm in the
//! cache, on ext4.
//!
//! The tree (see `bigtree`) is made and walked once, then:
//!
//! - weir, started a few times, each with a fresh state directory: the
//!   seconds from its spawn to its `weir: watching` line (ready: marked,
//!   so no change is missed from then on) and to its tree read (the walk
//!   that gives the entries their ids, after the ready line for a big
//!   tree), its VmRSS once read and after a few seconds idle, and its peak
//!   (VmHWM). Targets: ready within 50 ms whatever the tree's size, and an
//!   RSS within 64 MiB on the 1,000,000-file tree. weir holds the whole
//!   tree in memory, so its RSS grows with it.
//! - `inotifywait -r -m ROOT` (its every event, stdout to /dev/null): the
//!   seconds to its `Watches established.` line, and the kernel memory of
//!   its watches, one per directory, measured from the slab counters (see
//!   `kmem`); its marks are let go before the next watcher starts.
//! - watchman (the run's private server): the seconds until `watch-project
//!   ROOT` answers, and until a `clock` with a sync timeout answers after
//!   it (its crawl done and its cookie seen: the first answer a client can
//!   trust); the server's RSS gained, and its watches' kernel memory.
//!
//! - weir's restart after 1000 changes made while it was stopped, beside
//!   a warm `find` of the tree (see `restart`).
//!
//! One watcher runs at a time: each is stopped before the next starts.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::bigtree::{self, Made, Shape};
use super::child::Proc;
use super::journal::{Stopped, WeirRun};
use super::kmem::{self, Delta};
use super::restart::Restart;
use super::setup::{FsKind, Target, Workspace};
use super::watchers::{Case, Tools};
use crate::report::{median, num};
use crate::storm::cpu;

/// weir's targets: ready within this, whatever the tree.
const READY_TARGET_S: f64 = 0.050;
/// RSS within this on the issue's tree.
const RSS_TARGET_KIB: u64 = 64 * 1024;
/// The tree the RSS target is for.
const RSS_TARGET_FILES: u64 = 1_000_000;
/// How long any watcher may take to be ready on the tree.
const READY_LIMIT: Duration = Duration::from_secs(900);
const STOP_LIMIT: Duration = Duration::from_secs(60);

/// What the part runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opts {
    pub(crate) shape: Shape,
    /// weir starts.
    pub(crate) runs: usize,
    /// How long weir idles before its second RSS reading.
    pub(crate) idle: Duration,
}

/// One weir start.
#[derive(Debug, Clone)]
pub(crate) struct WeirStart {
    pub(crate) ready_s: f64,
    pub(crate) read_s: f64,
    pub(crate) entries: Option<u64>,
    pub(crate) rss_kib: u64,
    pub(crate) idle_rss_kib: u64,
    pub(crate) hwm_kib: u64,
    pub(crate) cpu_s: f64,
    pub(crate) stopped: Stopped,
}

/// inotifywait's start.
#[derive(Debug, Clone)]
pub(crate) struct InotifyStart {
    pub(crate) ready_s: f64,
    pub(crate) kmem: Delta,
}

/// watchman's start.
#[derive(Debug, Clone)]
pub(crate) struct WatchmanStart {
    pub(crate) watch_s: f64,
    pub(crate) clock_s: f64,
    pub(crate) rss_gain_kib: Option<i64>,
    pub(crate) kmem: Delta,
}

/// The part's figures on one filesystem.
#[derive(Debug, Clone)]
pub(crate) struct StartResult {
    pub(crate) fs: FsKind,
    pub(crate) opts: Opts,
    pub(crate) made: Made,
    pub(crate) weir: Vec<WeirStart>,
    /// Why weir has fewer runs than asked, if it has.
    pub(crate) weir_error: Option<String>,
    /// Per peer: its figures or why there are none.
    pub(crate) inotifywait: std::result::Result<InotifyStart, String>,
    pub(crate) watchman: std::result::Result<WatchmanStart, String>,
    /// weir's restart over the tree, after changes made while it was
    /// stopped (see `restart`).
    pub(crate) restart: std::result::Result<Restart, String>,
}

/// Runs the part on `target`; `missing` says which watchers cannot run.
pub(crate) fn run(
    target: &Target,
    tools: &Tools,
    ws: &Workspace,
    opts: Opts,
    missing: &BTreeMap<Case, String>,
    stop: &crate::lvm::stop::Stop,
) -> Result<StartResult> {
    let fs = target.kind;
    let root = target.part_dir("start")?;
    eprintln!(
        "  start: making {} files in {} directories on {}",
        opts.shape.files,
        opts.shape.dirs,
        fs.name()
    );
    let made = bigtree::make_warm(&root, opts.shape)?;
    eprintln!(
        "  start: made in {:.1} s, walked in {:.1} s",
        made.make_s, made.walk_s
    );
    let unavailable = |c: Case| missing.get(&c).map(|w| format!("unavailable: {w}"));
    let mut weir = Vec::new();
    let mut weir_error = unavailable(Case::Weir);
    if weir_error.is_none() {
        for i in 0..opts.runs {
            stop.check()?;
            match weir_start(tools, ws, &root, &format!("start-{}-{i}", fs.name()), opts) {
                Ok(w) => {
                    eprintln!(
                        "  start: weir run {i}: ready in {:.1} ms, RSS {} MiB",
                        w.ready_s * 1e3,
                        w.rss_kib / 1024
                    );
                    weir.push(w);
                }
                Err(e) => {
                    weir_error = Some(format!("failed: {e:#}"));
                    break;
                }
            }
        }
    }
    stop.check()?;
    let inotifywait = match (unavailable(Case::Inotifywait), &tools.inotifywait) {
        (Some(why), _) => Err(why),
        (None, None) => Err("not asked for (--watchers)".into()),
        (None, Some(tool)) => {
            inotify_start(tool, ws, &root, opts.shape).map_err(|e| format!("failed: {e:#}"))
        }
    };
    stop.check()?;
    let watchman = match (unavailable(Case::Watchman), &tools.watchman) {
        (Some(why), _) => Err(why),
        (None, None) => Err("not asked for (--watchers)".into()),
        (None, Some(server)) => {
            watchman_start(server, &root, opts.shape).map_err(|e| format!("failed: {e:#}"))
        }
    };
    stop.check()?;
    // Last: it changes the tree.
    let restart = match &weir_error {
        Some(e) => Err(format!("not run: {e}")),
        None => {
            super::restart::run(tools, ws, &root, fs.name()).map_err(|e| format!("failed: {e:#}"))
        }
    };
    Ok(StartResult {
        fs,
        opts,
        made,
        weir,
        weir_error,
        inotifywait,
        watchman,
        restart,
    })
}

fn weir_start(
    tools: &Tools,
    ws: &Workspace,
    root: &Path,
    tag: &str,
    opts: Opts,
) -> Result<WeirStart> {
    let w = WeirRun::start(tools, ws, root, tag, READY_LIMIT)?;
    let rss_kib = w.rss_kib()?;
    std::thread::sleep(opts.idle);
    if let Some(e) = w.exited() {
        anyhow::bail!("weir exited while idle: {e}");
    }
    let idle_rss_kib = w.rss_kib()?;
    let hwm_kib = w.hwm_kib()?;
    let cpu_s = cpu::secs(w.cpu_ns()?);
    let stopped = w.stop(STOP_LIMIT)?;
    let (ready_s, read_s, entries) = (w.ready_s, w.read_s, w.entries);
    w.remove_state()?;
    Ok(WeirStart {
        ready_s,
        read_s,
        entries,
        rss_kib,
        idle_rss_kib,
        hwm_kib,
        cpu_s,
        stopped,
    })
}

/// `inotifywait -r -m ROOT`: its time to be ready and its watches' kernel
/// memory; waits for the marks to be freed after it exits, so the next
/// reading starts level.
fn inotify_start(tool: &Path, ws: &Workspace, root: &Path, shape: Shape) -> Result<InotifyStart> {
    let watches = shape.dirs + 1;
    let before = kmem::Snapshot::now();
    let mut cmd = Command::new(tool);
    cmd.args(["-r", "-m"]).arg(root);
    let t0 = Instant::now();
    let p = Proc::spawn(
        cmd,
        "inotifywait",
        &ws.file("start-inotifywait.stderr"),
        false,
    )?;
    p.wait_line(
        |l| l.contains("Watches established."),
        t0,
        READY_LIMIT,
        Duration::from_micros(250),
    )?;
    let ready_s = t0.elapsed().as_secs_f64();
    let after = kmem::Snapshot::now();
    p.terminate(STOP_LIMIT)?;
    drop(p);
    settle_marks(&before, watches);
    Ok(InotifyStart {
        ready_s,
        kmem: Delta::between(&before, &after, watches),
    })
}

/// watchman's `watch-project`, then a synced `clock`; its server's RSS and
/// its watches' kernel memory; `watch-del` after.
fn watchman_start(
    server: &super::watchers::WatchmanServer,
    root: &Path,
    shape: Shape,
) -> Result<WatchmanStart> {
    let watches = shape.dirs + 1;
    let root_s = root
        .to_str()
        .context("the start tree's path is not UTF-8")?;
    let pid = server.proc().pid();
    let rss0 = cpu::rss_kib(Some(pid)).ok();
    let before = kmem::Snapshot::now();
    let t0 = Instant::now();
    let watched = server.client(&["watch-project", root_s], None);
    let watch_s = t0.elapsed().as_secs_f64();
    let clock = json!(["clock", root_s, {"sync_timeout": READY_LIMIT.as_millis() as u64}]);
    let clocked = watched.and_then(|_| server.client(&[], Some(&clock.to_string())));
    let clock_s = t0.elapsed().as_secs_f64();
    let after = kmem::Snapshot::now();
    let rss1 = cpu::rss_kib(Some(pid)).ok();
    let _ = server.client(&["watch-del", root_s], None);
    clocked?;
    settle_marks(&before, watches);
    Ok(WatchmanStart {
        watch_s,
        clock_s,
        rss_gain_kib: rss0.zip(rss1).map(|(a, b)| b as i64 - a as i64),
        kmem: Delta::between(&before, &after, watches),
    })
}

/// Waits (up to 10 s) until the inotify marks counted in `before` plus a
/// tenth of `watches` or fewer are left: the kernel frees a group's marks
/// in a worker after the group closes.
fn settle_marks(before: &kmem::Snapshot, watches: u64) {
    let Some(base) = before.marks() else {
        return;
    };
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        if kmem::Snapshot::now()
            .marks()
            .is_none_or(|m| m <= base + watches / 10)
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

impl StartResult {
    fn ready_median_s(&self) -> f64 {
        median(&self.weir.iter().map(|w| w.ready_s).collect::<Vec<_>>())
    }

    /// The highest RSS weir showed, right after its start or idle.
    fn rss_max_kib(&self) -> Option<u64> {
        self.weir
            .iter()
            .map(|w| w.rss_kib.max(w.idle_rss_kib))
            .max()
    }

    pub(crate) fn print(&self) {
        let o = &self.opts;
        println!();
        println!(
            "  start on {} ({} files in {} directories, warm cache): made in {:.1} s; a walk in this process (weir_fs::walk::read_tree) {:.2} s, {} entries",
            self.fs.name(),
            o.shape.files,
            o.shape.dirs,
            self.made.make_s,
            self.made.walk_s,
            self.made.entries
        );
        for (i, w) in self.weir.iter().enumerate() {
            println!(
                "    weir run {i}: ready in {:.1} ms, tree read in {:.2} s ({} entries), RSS {:.1} MiB right after, {:.1} MiB after {:.0} s idle, peak {:.1} MiB; CPU {:.2} s; stop {:.2} s{}",
                w.ready_s * 1e3,
                w.read_s,
                w.entries.map_or("?".into(), |e| e.to_string()),
                mib(w.rss_kib),
                mib(w.idle_rss_kib),
                o.idle.as_secs_f64(),
                mib(w.hwm_kib),
                w.cpu_s,
                w.stopped.stop_s,
                w.stopped
                    .problem
                    .as_ref()
                    .map_or(String::new(), |p| format!(" ({p})"))
            );
        }
        if let Some(e) = &self.weir_error {
            println!("    weir: {e}");
        }
        match &self.inotifywait {
            Ok(i) => println!(
                "    inotifywait -r -m: Watches established. after {:.1} ms; {}",
                i.ready_s * 1e3,
                i.kmem.text()
            ),
            Err(e) => println!("    inotifywait: {e}"),
        }
        match &self.watchman {
            Ok(w) => println!(
                "    watchman: watch-project answered after {:.1} ms, a synced clock after its crawl at {:.1} ms; server RSS {}; {}",
                w.watch_s * 1e3,
                w.clock_s * 1e3,
                w.rss_gain_kib
                    .map_or("?".into(), |k| format!("{:+.1} MiB", k as f64 / 1024.0)),
                w.kmem.text()
            ),
            Err(e) => println!("    watchman: {e}"),
        }
        match &self.restart {
            Ok(r) => println!("{}", r.text()),
            Err(e) => println!("    restart: {e}"),
        }
    }

    /// Prints the part's PASS/FAIL lines; the JSON of them.
    pub(crate) fn targets(&self) -> Value {
        let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
        let ready = self.ready_median_s();
        let ready_ok = ready.is_finite().then_some(ready <= READY_TARGET_S);
        match ready_ok {
            Some(ok) => println!(
                "    {}: weir ready <= 50 ms whatever the tree's size: median {:.1} ms over {} starts ({} files)",
                verdict(ok),
                ready * 1e3,
                self.weir.len(),
                self.opts.shape.files
            ),
            None => println!("    UNMEASURED: weir's start (no run)"),
        }
        let full = self.opts.shape.files >= RSS_TARGET_FILES;
        let rss = self.rss_max_kib();
        let rss_ok = rss.map(|r| r <= RSS_TARGET_KIB);
        match (rss, rss_ok) {
            (Some(r), Some(ok)) => println!(
                "    {}: weir RSS <= 64 MiB on the 1M tree: highest {:.1} MiB{}",
                verdict(ok),
                mib(r),
                if full {
                    String::new()
                } else {
                    format!(
                        " (on a {}-file tree, not the 1M one the target is for)",
                        self.opts.shape.files
                    )
                }
            ),
            _ => println!("    UNMEASURED: weir's RSS (no run)"),
        }
        json!({
            "weir_ready_ms_median": num(ready * 1e3, 2),
            "weir_ready_ok": ready_ok,
            "weir_rss_mib_max": rss.map(|r| crate::report::round(mib(r), 1)),
            "weir_rss_ok": rss_ok,
            "weir_rss_on_target_tree": full,
        })
    }

    pub(crate) fn json(&self, targets: Value) -> Value {
        let o = &self.opts;
        let weir: Vec<Value> = self
            .weir
            .iter()
            .map(|w| {
                json!({
                    "ready_ms": num(w.ready_s * 1e3, 2),
                    "read_s": num(w.read_s, 3),
                    "entries": w.entries,
                    "rss_mib": num(mib(w.rss_kib), 1),
                    "idle_rss_mib": num(mib(w.idle_rss_kib), 1),
                    "hwm_mib": num(mib(w.hwm_kib), 1),
                    "cpu_s": num(w.cpu_s, 3),
                    "stop_s": num(w.stopped.stop_s, 3),
                    "problem": w.stopped.problem,
                })
            })
            .collect();
        let inotifywait = match &self.inotifywait {
            Ok(i) => json!({"ready_ms": num(i.ready_s * 1e3, 1), "kernel": i.kmem.json()}),
            Err(e) => json!({"error": e}),
        };
        let watchman = match &self.watchman {
            Ok(w) => json!({
                "watch_project_ms": num(w.watch_s * 1e3, 1),
                "clock_after_crawl_ms": num(w.clock_s * 1e3, 1),
                "server_rss_gain_mib": w.rss_gain_kib.map(|k| crate::report::round(k as f64 / 1024.0, 1)),
                "kernel": w.kmem.json(),
            }),
            Err(e) => json!({"error": e}),
        };
        json!({
            "fs": self.fs.name(),
            "files": o.shape.files,
            "dirs": o.shape.dirs,
            "make_s": num(self.made.make_s, 2),
            "walk_s": num(self.made.walk_s, 3),
            "entries": self.made.entries,
            "idle_s": num(o.idle.as_secs_f64(), 1),
            "weir": weir,
            "weir_error": self.weir_error,
            "inotifywait": inotifywait,
            "watchman": watchman,
            "restart": match &self.restart {
                Ok(r) => r.json(),
                Err(e) => json!({"error": e}),
            },
            "targets": targets,
        })
    }
}
