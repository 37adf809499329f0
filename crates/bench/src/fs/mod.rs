//! `fs`: what a filesystem watcher costs a metadata-heavy load, side by
//! side with its peers.
//!
//! The load is mdtest-like (see `load`): N threads, each in its own
//! directory, repeating create+unlink, create+write(4 KiB)+unlink, or a
//! rename, for a fixed time per round. It runs on ext4 over a loop device
//! whose image lives on a tmpfs, and on a tmpfs, both mounted inside a
//! private mount namespace: this binary re-executes itself under `unshare
//! -m --propagation private` (the hidden `fs-inner`), so no mount reaches
//! the host; the loop device it attached is detached by its path.
//!
//! Each watcher (see `watchers`) is measured as ops/s watched over ops/s
//! unwatched *in the same round*: a round runs every case once, in an order
//! rotated each round, because this kind of shared VM drifts by more than
//! the differences measured. The watchers are the floor (a minimal
//! fanotify reader: the kernel's cost plus one read per batch), weir (`weir
//! fs watch`), fsnotifywait -S, inotifywait -r and watchman. One that is
//! not installed (or, for weir, whose binary has no `fs watch` yet) is
//! reported unavailable with the reason, and the rest still run.
//!
//! That is the `overhead` part. Three more (see [`parts`]; `--parts`
//! picks) measure weir alone where the issue sets it targets: `start` (a
//! big warm tree on ext4: time to ready and RSS, beside inotifywait's
//! time and kernel memory and watchman's crawl), `storm` (a million
//! creates, then the log replayed against the live tree) and `latency`
//! (create to readable record, at rest). `--quick` scales them down.
//!
//! The steps live in submodules: [`setup`] (the filesystems), [`load`],
//! [`child`] (watcher processes: reaping, readiness, CPU), [`floor`] (the
//! hidden floor reader), [`watchers`], [`rounds`] and [`summary`]; for the
//! other parts [`parts`], [`journal`] (weir runs, its log, replay against
//! a walk), [`bigtree`], [`kmem`], [`start`], [`storm`] and [`latency`].

mod bigtree;
mod child;
pub(crate) mod floor;
mod journal;
mod kmem;
mod latency;
mod load;
mod parts;
mod restart;
mod rounds;
mod setup;
mod since_daemon;
mod start;
mod storm;
mod summary;
pub(crate) mod watchers;

use std::collections::BTreeMap;
use std::process::Command;

use anyhow::{Result, bail};
use serde_json::{Map, Value, json};

use crate::loopdev::{self, find_tool};
use crate::lvm::stop::Stop;
use crate::report;
use crate::steal;
use load::LoadKind;
use parts::Part;
use rounds::{Cell, Round};
use setup::{FsKind, Workspace};
use summary::Results;
use watchers::{Case, Tools, WatchmanServer};

const BENCH: &str = "fs";

/// Options of `fs`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Args {
    /// Short run (a minute or two): N = 1 and 2, 0.15 s rounds, 3 rounds;
    /// a start tree of 20,000 files in 2,000 directories, 50,000 creates
    /// in the storm.
    #[arg(long)]
    quick: bool,
    /// Parts to run: overhead (the rounds of weir and its peers under the
    /// loads), start (weir's start on a big tree, beside inotifywait and
    /// watchman), storm (creates, then the log's replay against the live
    /// tree), latency (create to readable record) [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    parts: Option<Vec<Part>>,
    /// Files in the start part's tree [default: 1,000,000, or 20,000 with
    /// --quick].
    #[arg(long)]
    start_files: Option<u64>,
    /// Directories in the start part's tree [default: 100,000, or 2,000
    /// with --quick].
    #[arg(long)]
    start_dirs: Option<u64>,
    /// weir starts measured in the start part [default: 3, or 2 with
    /// --quick].
    #[arg(long)]
    start_runs: Option<usize>,
    /// Creates in the storm part [default: 1,000,000, or 50,000 with
    /// --quick].
    #[arg(long)]
    storm_files: Option<u64>,
    /// Creates in the latency part, 50 ms apart [default: 200].
    #[arg(long)]
    latency_creates: Option<usize>,
    /// Thread counts [default: 1,2,4,8; 1,2 with --quick].
    #[arg(long, value_delimiter = ',')]
    threads: Option<Vec<usize>>,
    /// Seconds of load per round [default: 0.5, or 0.15 with --quick].
    #[arg(long)]
    seconds: Option<f64>,
    /// Rounds per cell; each runs every watcher once [default: 5, or 3
    /// with --quick].
    #[arg(long)]
    rounds: Option<usize>,
    /// Filesystems [default: both].
    #[arg(long = "fs", value_enum, value_delimiter = ',')]
    filesystems: Option<Vec<FsKind>>,
    /// Loads [default: all three].
    #[arg(long, value_enum, value_delimiter = ',')]
    loads: Option<Vec<LoadKind>>,
    /// Watchers; `none` always runs, as every ratio needs it [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    watchers: Option<Vec<Case>>,
    /// Let fsnotifywait and inotifywait report every event they know
    /// (their default), not only the set weir and the floor ask for.
    #[arg(long)]
    peer_all_events: bool,
    /// Do not apt-get install a missing inotify-tools or watchman.
    #[arg(long)]
    no_install: bool,
    /// The `weir` binary to run [default: the one built next to this one].
    #[arg(long)]
    weir: Option<std::path::PathBuf>,
    /// An argument to add after `weir ... fs watch --quiet` (repeat for
    /// more), e.g. `--weir-arg=--mtime-interval-ms=100`.
    #[arg(long = "weir-arg", allow_hyphen_values = true)]
    weir_args: Vec<String>,
}

impl Args {
    fn threads(&self) -> Vec<usize> {
        self.threads.clone().unwrap_or_else(|| {
            if self.quick {
                vec![1, 2]
            } else {
                vec![1, 2, 4, 8]
            }
        })
    }

    fn seconds(&self) -> f64 {
        self.seconds.unwrap_or(if self.quick { 0.15 } else { 0.5 })
    }

    fn rounds(&self) -> usize {
        self.rounds.unwrap_or(if self.quick { 3 } else { 5 })
    }

    fn filesystems(&self) -> Vec<FsKind> {
        self.filesystems.clone().unwrap_or(FsKind::ALL.to_vec())
    }

    fn loads(&self) -> Vec<LoadKind> {
        self.loads.clone().unwrap_or(LoadKind::ALL.to_vec())
    }

    fn parts(&self) -> Vec<Part> {
        let mut p = self.parts.clone().unwrap_or(Part::ALL.to_vec());
        p.sort();
        p.dedup();
        p
    }

    fn sizes(&self) -> parts::Sizes {
        let mut s = parts::default_sizes(self.quick);
        if let Some(n) = self.start_files {
            s.start.shape.files = n;
        }
        if let Some(n) = self.start_dirs {
            s.start.shape.dirs = n;
        }
        if let Some(n) = self.start_runs {
            s.start.runs = n;
        }
        if let Some(n) = self.storm_files {
            s.storm_files = n;
        }
        if let Some(n) = self.latency_creates {
            s.latency_creates = n;
        }
        s
    }

    /// The watchers asked for, in the report's order (none aside).
    fn watchers(&self) -> Vec<Case> {
        Case::ALL
            .into_iter()
            .filter(|&c| c != Case::None)
            .filter(|c| self.watchers.as_ref().is_none_or(|w| w.contains(c)))
            .collect()
    }
}

/// Options of the hidden `fs-inner`, run in a private namespace.
pub(crate) type InnerArgs = loopdev::InPrivateNs<Args>;

/// Runs the benchmark: checks what it needs, installs missing peers if it
/// may, then runs the real work in a private mount namespace, whose output
/// passes through.
pub(crate) fn run(a: Args) -> Result<()> {
    if !loopdev::is_root() {
        return report::skipped(
            BENCH,
            "needs root (mounts, loop devices, fanotify filesystem marks)",
        );
    }
    for tool in ["unshare", "losetup", "mkfs.ext4"] {
        if find_tool(tool).is_none() {
            return report::skipped(BENCH, &format!("{tool} not found"));
        }
    }
    let threads = a.threads();
    if threads.is_empty() || threads.contains(&0) {
        bail!("--threads needs positive counts");
    }
    if a.rounds() == 0 || a.seconds() <= 0.0 {
        bail!("--rounds and --seconds must be positive");
    }
    let sizes = a.sizes();
    let shape = sizes.start.shape;
    if shape.files == 0 || shape.dirs == 0 || sizes.start.runs == 0 {
        bail!("--start-files, --start-dirs and --start-runs must be positive");
    }
    if sizes.storm_files < storm::THREADS as u64 || sizes.latency_creates == 0 {
        bail!("--storm-files must be at least 4 and --latency-creates positive");
    }
    if !a.no_install {
        install_peers(&a.watchers());
    }
    // The options pass through unchanged: everything after the subcommand.
    loopdev::rerun_in_private_ns(BENCH, "fs-inner")
}

/// Installs inotify-tools and watchman with apt-get when a watcher asked
/// for needs them and they are missing; says what it did. A failure only
/// leaves that peer unavailable.
fn install_peers(watchers: &[Case]) {
    let want = |c| watchers.contains(&c);
    let mut packages = Vec::new();
    if (want(Case::Fsnotifywait) && find_tool("fsnotifywait").is_none())
        || (want(Case::Inotifywait) && find_tool("inotifywait").is_none())
    {
        packages.push("inotify-tools");
    }
    if want(Case::Watchman) && find_tool("watchman").is_none() {
        match apt_candidate("watchman") {
            Some(v) => {
                println!("  watchman: not installed; apt-cache policy shows candidate {v}");
                packages.push("watchman");
            }
            None => println!("  watchman: not installed, and apt-cache policy shows no candidate"),
        }
    }
    if packages.is_empty() || find_tool("apt-get").is_none() {
        return;
    }
    for pkg in packages {
        println!("  installing {pkg} with apt-get (--no-install: skip)");
        let install = || {
            Command::new("apt-get")
                .args(["install", "-y", "-qq", pkg])
                .env("DEBIAN_FRONTEND", "noninteractive")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        let ok = install() || {
            // The package lists may be missing or stale.
            let _ = Command::new("apt-get")
                .args(["update", "-qq"])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .status();
            install()
        };
        if !ok {
            println!("  apt-get install {pkg} failed; its watchers will be reported unavailable");
        }
    }
}

/// The candidate version `apt-cache policy PKG` shows, if any.
fn apt_candidate(pkg: &str) -> Option<String> {
    let out = Command::new("apt-cache")
        .args(["policy", pkg])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Candidate:").map(str::trim))
        .filter(|v| !v.is_empty() && *v != "(none)")
        .map(str::to_owned)
}

/// Which watchers can run, and why the others cannot.
struct Availability {
    tools: Tools,
    /// Watcher -> why it is unavailable (for the whole run).
    missing: BTreeMap<Case, String>,
}

fn availability(a: &Args, ws: &Workspace) -> Result<Availability> {
    let asked = a.watchers();
    let mut missing = BTreeMap::new();
    let mut take = |c: Case, r: std::result::Result<std::path::PathBuf, String>| match r {
        Ok(p) if asked.contains(&c) => Some(p),
        Ok(_) => None,
        Err(why) => {
            if asked.contains(&c) {
                missing.insert(c, why);
            }
            None
        }
    };
    let weir = take(Case::Weir, watchers::find_weir_fs(a.weir.as_deref()));
    let fsnotifywait = take(
        Case::Fsnotifywait,
        watchers::find_peer("fsnotifywait", "inotify-tools >= 3.22"),
    );
    let inotifywait = take(
        Case::Inotifywait,
        watchers::find_peer("inotifywait", "inotify-tools"),
    );
    let watchman_tool = take(Case::Watchman, watchers::find_peer("watchman", "watchman"));
    let watchman = match watchman_tool {
        Some(t) => match WatchmanServer::start(&t, &ws.fresh_dir("watchman")?) {
            Ok(s) => Some(s),
            Err(e) => {
                missing.insert(Case::Watchman, format!("the server did not start: {e:#}"));
                None
            }
        },
        None => None,
    };
    if asked.contains(&Case::Floor)
        && let Err(e) = weir_sys::fanotify::fid::FidGroup::open()
    {
        missing.insert(Case::Floor, format!("fanotify with file ids: {e}"));
    }
    Ok(Availability {
        tools: Tools {
            weir,
            fsnotifywait,
            inotifywait,
            watchman,
            me: std::env::current_exe()?,
            all_events: a.peer_all_events,
            weir_args: a.weir_args.clone(),
        },
        missing,
    })
}

/// The hidden `fs-inner`: the whole benchmark, in the namespace.
pub(crate) fn inner(ia: InnerArgs) -> Result<()> {
    let outer_ns = ia.outer_ns().to_owned();
    let a = ia.enter()?;
    let stop = Stop::install()?;
    let threads = a.threads();
    let (secs, rounds) = (a.seconds(), a.rounds());
    let (filesystems, loads, asked) = (a.filesystems(), a.loads(), a.watchers());
    let (parts, sizes) = (a.parts(), a.sizes());
    let overhead = parts.contains(&Part::Overhead);

    println!(
        "fs: filesystem watchers; parts: {}",
        parts
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  filesystems: ext4 on a loop device (image on a tmpfs) | tmpfs; in a private mount namespace"
    );
    if overhead {
        println!(
            "  overhead: what a filesystem watcher costs an mdtest-like load, watched / unwatched in the same round"
        );
        for l in &loads {
            println!(
                "  load {}: {} per op, counted as {} filesystem event(s) per op",
                l.name(),
                l.describe(),
                l.events_per_op()
            );
        }
        println!(
            "  threads {threads:?}, each in its own directory; {secs} s of load per round, {rounds} rounds per cell;"
        );
        println!(
            "  each round runs every watcher once (and none), in an order rotated each round; a watcher is"
        );
        println!(
            "  started fresh and ready before its round's load, and stopped after it went idle"
        );
    }
    if parts.contains(&Part::Latency) {
        println!(
            "  latency: {} single creates {} ms apart, at rest; create's return until its CREAT is readable in the log",
            sizes.latency_creates,
            latency::INTERVAL.as_millis()
        );
    }
    if parts.contains(&Part::Start) {
        let s = sizes.start;
        println!(
            "  start (ext4): {} files in {} directories, warm; weir started {} times (RSS again after {} s idle), inotifywait -r -m, watchman watch-project + clock",
            s.shape.files,
            s.shape.dirs,
            s.runs,
            s.idle.as_secs()
        );
    }
    if parts.contains(&Part::Storm) {
        println!(
            "  storm: {} creates by {} threads into a watched empty root, SIGTERM, then the log replayed against a walk",
            sizes.storm_files,
            storm::THREADS
        );
    }
    let max_threads = threads.iter().copied().max().unwrap_or(1);
    eprintln!("  making the filesystems");
    let ws = Workspace::new(
        &filesystems,
        max_threads,
        sizes.extra_inodes(&parts),
        &outer_ns,
    )?;
    let avail = availability(&a, &ws)?;
    // The other parts run weir, and in `start` inotifywait and watchman.
    let used = |c: Case| overhead || matches!(c, Case::Weir | Case::Inotifywait | Case::Watchman);
    for &c in asked.iter().filter(|&&c| used(c)) {
        match avail.missing.get(&c) {
            Some(why) => println!("  {:<12} unavailable: {why}", c.name()),
            None if c == Case::Weir && !a.weir_args.is_empty() => println!(
                "  {:<12} weir --state-dir DIR fs watch {} ROOT >/dev/null",
                c.name(),
                a.weir_args.join(" ")
            ),
            None if overhead || c == Case::Weir => {
                println!("  {:<12} {}", c.name(), c.describe(a.peer_all_events));
            }
            // The peers then run only in the start part, as it says.
            None => println!("  {:<12} available", c.name()),
        }
    }
    println!("  {}", report::host_note());
    let cpu0 = steal::CpuTimes::now();
    let t_run = std::time::Instant::now();

    let run = (|| -> Result<(Map<String, Value>, Map<String, Value>)> {
        let over = if overhead {
            run_overhead(&a, &ws, &avail, &stop)?
        } else {
            let why = "not asked for (--parts)";
            Map::from_iter([
                ("cells".to_owned(), json!({})),
                ("targets".to_owned(), json!({"measured": false, "why": why})),
            ])
        };
        let others = parts::run(&parts, &sizes, &ws, &avail.tools, &avail.missing, &stop)?;
        Ok((over, others))
    })();
    if let Some(w) = avail.tools.watchman {
        w.shutdown();
    }
    drop(ws);
    let (over, others) = run?;
    let steal_pct = steal::pct_since(cpu0);
    println!();
    println!("  {}", report::steal_note(steal_pct));
    println!("  measured in {:.0} s", t_run.elapsed().as_secs_f64());

    let events: Map<String, Value> = loads
        .iter()
        .map(|l| (l.name().to_owned(), json!(l.events_per_op())))
        .collect();
    let mut out = Map::from_iter([
        ("bench".to_owned(), json!(BENCH)),
        ("quick".to_owned(), json!(a.quick)),
        (
            "parts".to_owned(),
            json!(parts.iter().map(|p| p.name()).collect::<Vec<_>>()),
        ),
        ("seconds".to_owned(), json!(secs)),
        ("rounds".to_owned(), json!(rounds)),
        ("threads".to_owned(), json!(threads)),
        (
            "filesystems".to_owned(),
            json!(filesystems.iter().map(|f| f.name()).collect::<Vec<_>>()),
        ),
        (
            "loads".to_owned(),
            json!(loads.iter().map(|l| l.name()).collect::<Vec<_>>()),
        ),
        ("events_per_op".to_owned(), Value::Object(events)),
        (
            "peer_events".to_owned(),
            json!(if a.peer_all_events {
                "all"
            } else {
                "weir's set"
            }),
        ),
        ("weir_args".to_owned(), json!(a.weir_args)),
    ]);
    out.extend(over);
    out.extend(others);
    out.insert("host_steal_pct".into(), report::num(steal_pct, 1));
    report::emit(&Value::Object(out));
    Ok(())
}

/// The overhead part: every cell's rounds, then its tables and targets;
/// its JSON fields (`watchers`, `cells`, `targets`, `failures`).
fn run_overhead(
    a: &Args,
    ws: &Workspace,
    avail: &Availability,
    stop: &Stop,
) -> Result<Map<String, Value>> {
    let threads = a.threads();
    let (secs, rounds) = (a.seconds(), a.rounds());
    let (filesystems, loads, asked) = (a.filesystems(), a.loads(), a.watchers());
    // Watchers that failed on a filesystem are left out there from then on.
    let mut dropped: BTreeMap<(FsKind, Case), String> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    let mut results = Results::default();
    for target in &ws.targets {
        for &kind in &loads {
            for &n in &threads {
                let cell = Cell {
                    tools: &avail.tools,
                    ws,
                    target,
                    kind,
                    dirs: (0..n).map(|t| target.thread_dir(t)).collect(),
                    secs,
                };
                // One unwatched run first, unrecorded: in the first runs
                // of this benchmark, a cell's first round was often the
                // slowest by far (up to 3x), whatever its watcher.
                stop.check()?;
                load::run(kind, &cell.dirs, secs)?;
                for r in 0..rounds {
                    let done = one_round(
                        &cell,
                        n,
                        r,
                        &asked,
                        avail,
                        &mut dropped,
                        &mut failures,
                        stop,
                    )?;
                    progress(target.kind, kind, n, r, &done);
                    results.add((target.kind, kind, n), done);
                }
            }
        }
    }

    let watchers: Vec<Case> = asked
        .iter()
        .copied()
        .filter(|c| !avail.missing.contains_key(c))
        .collect();
    results.print(&watchers);
    let weir_ran = watchers.contains(&Case::Weir)
        && !filesystems
            .iter()
            .all(|f| dropped.contains_key(&(*f, Case::Weir)));
    let why_not = avail
        .missing
        .get(&Case::Weir)
        .cloned()
        .or_else(|| (!asked.contains(&Case::Weir)).then(|| "not asked for (--watchers)".to_owned()))
        .or_else(|| {
            filesystems
                .iter()
                .find_map(|f| dropped.get(&(*f, Case::Weir)).cloned())
        })
        .unwrap_or_default();
    let targets = results.targets(weir_ran, &why_not);

    let mut status = Map::new();
    for &c in &asked {
        let s = match avail.missing.get(&c) {
            Some(why) => format!("unavailable: {why}"),
            None => {
                let failed: Vec<String> = filesystems
                    .iter()
                    .filter_map(|f| dropped.get(&(*f, c)).map(|w| format!("{}: {w}", f.name())))
                    .collect();
                if failed.is_empty() {
                    "ran".to_owned()
                } else {
                    format!("failed on {}", failed.join("; "))
                }
            }
        };
        status.insert(c.name().into(), json!(s));
    }
    Ok(Map::from_iter([
        ("watchers".to_owned(), Value::Object(status)),
        ("cells".to_owned(), results.json(&watchers)),
        ("targets".to_owned(), targets),
        ("failures".to_owned(), json!(failures)),
    ]))
}

/// Round `r` of `cell` (`n` threads): every case not unavailable or
/// dropped, in an order rotated by `r`. A watcher that fails is reported,
/// added to `failures` and dropped on that filesystem; the unwatched case
/// failing fails the run.
#[allow(clippy::too_many_arguments)]
fn one_round(
    cell: &Cell<'_>,
    n: usize,
    r: usize,
    asked: &[Case],
    avail: &Availability,
    dropped: &mut BTreeMap<(FsKind, Case), String>,
    failures: &mut Vec<String>,
    stop: &Stop,
) -> Result<Vec<Round>> {
    let fs = cell.target.kind;
    let mut cases: Vec<Case> = std::iter::once(Case::None)
        .chain(asked.iter().copied())
        .filter(|c| !avail.missing.contains_key(c))
        .filter(|&c| !dropped.contains_key(&(fs, c)))
        .collect();
    let k = r % cases.len();
    cases.rotate_left(k);
    let mut done: Vec<Round> = Vec::new();
    for case in cases {
        stop.check()?;
        let tag = format!("{}-{}-{n}-{r}-{}", fs.name(), cell.kind.name(), case.name());
        match rounds::one(cell, case, &tag) {
            Ok(x) => {
                if case == Case::None {
                    rounds::check_none(&x)?;
                }
                done.push(x);
            }
            Err(e) if case != Case::None => {
                let why = format!("{e:#}");
                println!(
                    "  {} on {} FAILED ({}, N={n}, round {r}): {why}; left out on {} from here",
                    case.name(),
                    fs.name(),
                    cell.kind.name(),
                    fs.name()
                );
                failures.push(format!("{} on {}: {why}", case.name(), fs.name()));
                dropped.insert((fs, case), why);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// The progress line of one round, on stderr.
fn progress(fs: FsKind, kind: LoadKind, n: usize, r: usize, done: &[Round]) {
    let none = done.iter().find(|x| x.case == Case::None).map(Round::rate);
    let mut s = format!("  {} {} N={n} round {r}:", fs.name(), kind.name());
    for x in done {
        if x.case == Case::None {
            s += &format!(" none {:.0}/s", x.rate());
            continue;
        }
        let ratio = none.map_or(f64::NAN, |z| x.rate() / z);
        s += &format!(" | {} {ratio:.3}", x.case.name());
        if let Some(p) = x.exited_pct {
            s += &format!(" (quit at {p:.0}%)");
        }
    }
    eprintln!("{s}");
}
