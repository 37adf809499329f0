//! `daemon`: `weir run` as users meet it, for the targets in the README.
//!
//! In a private mount namespace, with a VG over N PVs on loop devices
//! (real `pvcreate`/`vgcreate`, as `lvm` makes them) and M bind mounts:
//! - query latency through the daemon, process start included: `weir vgs`
//!   against `lvm vgs`, and `weir mounts` against `findmnt`, side by side;
//! - 100 consumers following the log through the daemon during a
//!   2000-mount storm: none may miss or repeat a record; the daemon's CPU;
//! - restart: stop the daemon, make 50 mounts and attach 20 PVs, start it
//!   again: all 70 changes must be logged once each, flagged RECONCILED.

pub(crate) mod child;
mod followers;
mod query;
mod restart;

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::loopdev::{self, find_tool};
use crate::lvm::fleet;
use crate::lvm::stop::Stop;
use crate::report::{self, num};
use crate::storm::driver::{Loop, Workspace};
use crate::storm::watch_child::find_weir;
use child::Daemon;

const BENCH: &str = "daemon";

/// Options of `daemon`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Args {
    /// Short run (about a minute): 100 PVs, 1000 mounts, 20 consumers, a
    /// 500-mount storm, 5 timed runs.
    #[arg(long)]
    quick: bool,
    /// PVs in the VG [default: 1000; 100 with --quick].
    #[arg(long)]
    pvs: Option<usize>,
    /// Bind mounts present while querying [default: 10000; 1000 with --quick].
    #[arg(long)]
    mounts: Option<usize>,
    /// Consumers following the log [default: 100; 20 with --quick].
    #[arg(long)]
    consumers: Option<usize>,
    /// Mounts (then unmounts) in the storm they follow [default: 2000; 500 with --quick].
    #[arg(long)]
    storm: Option<usize>,
    /// Timed runs of each query; medians are reported [default: 11; 5 with --quick].
    #[arg(long)]
    runs: Option<usize>,
}

impl Args {
    fn pick(&self, v: Option<usize>, full: usize, quick: usize) -> usize {
        v.unwrap_or(if self.quick { quick } else { full })
    }
    fn pvs(&self) -> usize {
        self.pick(self.pvs, 1000, 100)
    }
    fn mounts(&self) -> usize {
        self.pick(self.mounts, 10_000, 1000)
    }
    fn consumers(&self) -> usize {
        self.pick(self.consumers, 100, 20)
    }
    fn storm(&self) -> usize {
        self.pick(self.storm, 2000, 500)
    }
    fn runs(&self) -> usize {
        self.pick(self.runs, 11, 5)
    }
}

/// Options of the hidden `daemon-inner`, run in a private namespace.
pub(crate) type InnerArgs = loopdev::InPrivateNs<Args>;

/// Runs the benchmark: checks what it needs, then runs the real work in a
/// private mount namespace, whose output passes through.
pub(crate) fn run(a: Args) -> Result<()> {
    if !loopdev::is_root() {
        return report::skipped(BENCH, "needs root (mounts, loop devices, LVM2)");
    }
    for tool in ["unshare", "lvm", "losetup", "findmnt"] {
        if find_tool(tool).is_none() {
            return report::skipped(BENCH, &format!("{tool} not found"));
        }
    }
    if let Err(why) = find_weir() {
        return report::skipped(BENCH, &why);
    }
    if a.pvs() < 2 || a.mounts() == 0 || a.storm() == 0 || a.runs() == 0 {
        bail!("--pvs must be at least 2, and --mounts, --storm and --runs positive");
    }
    loopdev::rerun_in_private_ns(BENCH, "daemon-inner")
}

/// The hidden `daemon-inner`: the whole benchmark, in the namespace.
pub(crate) fn inner(ia: InnerArgs) -> Result<()> {
    let a = ia.enter()?;
    let tool = |t: &str| find_tool(t).with_context(|| format!("{t} not found"));
    let (lvm, mount, umount, findmnt) = (
        tool("lvm")?,
        tool("mount")?,
        tool("umount")?,
        tool("findmnt")?,
    );
    let weir = find_weir().map_err(anyhow::Error::msg)?;
    let stop = Stop::install()?;
    let (pvs, mounts, consumers, storm) = (a.pvs(), a.mounts(), a.consumers(), a.storm());
    const RESTART_MOUNTS: usize = 50;
    const RESTART_PVS: usize = 20;

    println!(
        "daemon: weir run in a private mount namespace, queried and followed through its socket"
    );
    println!(
        "  a VG over {pvs} PVs (loop devices over sparse 8 MiB images), {mounts} bind mounts; {} timed runs of each query, alternating",
        a.runs()
    );
    println!(
        "  {consumers} consumers follow the log (`weir log tail -f --consumer`) during a {storm}-mount storm (raw mount(2), then umount2(2))"
    );
    println!(
        "  restart: stop, {RESTART_MOUNTS} mounts and {RESTART_PVS} PVs attached while down, start"
    );
    println!("  {}", report::host_note());

    let tag = std::process::id();
    eprintln!("  making the restart VG ({RESTART_PVS} PVs, then detached)");
    let mut late = fleet::create(&lvm, &format!("weirlate{tag}"), RESTART_PVS, &stop)?;
    late.detach_all()?;
    eprintln!("  making the VG over {pvs} PVs");
    let fleet = fleet::create(&lvm, &format!("weirbench{tag}"), pvs, &stop)?;
    let env = fleet.env();
    eprintln!("  making {mounts} bind mounts");
    let ws_query = Workspace::new(mounts, mount.clone(), umount.clone())?;
    ws_query.attach(Loop::Raw, mounts)?;
    let ws_storm = Workspace::new(storm, mount.clone(), umount.clone())?;
    let ws_late = Workspace::new(RESTART_MOUNTS, mount, umount)?;
    stop.check()?;

    let state = env.subdir("state")?;
    let socket = env.subdir("run")?.join("weir.sock");
    let start = restart::Start {
        weir: &weir,
        state: &state,
        socket: &socket,
        stderr: env.subdir("logs")?.join("weir-run.err"),
    };
    eprintln!("  starting weir run");
    let d = Daemon::start(
        &weir,
        &state,
        &socket,
        &start.stderr,
        Duration::from_secs(120),
    )?;

    eprintln!("  timing queries");
    let lvm_vgs = || env.cmd(["vgs"]);
    let findmnt_cmd = || std::process::Command::new(&findmnt);
    let q = query::measure(
        &d,
        &lvm_vgs,
        &findmnt_cmd,
        fleet.vg_name(),
        pvs,
        mounts,
        a.runs(),
    )?;
    stop.check()?;

    eprintln!("  {consumers} followers, {storm}-mount storm");
    let f = followers::run(&d, &state.join("log"), &ws_storm, consumers, storm)?;
    stop.check()?;

    eprintln!("  restart");
    let (d, r) = restart::run(d, &start, &ws_late, RESTART_MOUNTS, &mut late)?;
    let rss_kib = crate::storm::cpu::rss_kib(Some(d.pid())).unwrap_or(0);
    d.stop().context("the final stop")?;

    println!();
    println!("query latency (median, process start included):");
    println!(
        "  weir vgs    {:8.2} ms   lvm vgs  {:8.2} ms   ({pvs} PVs)",
        q.weir_vgs_ms, q.lvm_vgs_ms
    );
    println!(
        "  weir mounts {:8.2} ms   findmnt  {:8.2} ms   ({mounts} mounts)",
        q.weir_mounts_ms, q.findmnt_ms
    );
    println!(
        "  weir mounts through the daemon = weir --direct mounts: {}",
        q.mounts_match
    );
    println!("consumers:");
    println!(
        "  {} followers, {} records expected in all, exact: {}",
        f.consumers, f.expected, f.exact
    );
    for p in &f.problems {
        println!("    {p}");
    }
    println!(
        "  storm {:.2} s; daemon CPU {:.3} s from the storm's start until every follower caught up ({:.2} s after the storm)",
        f.storm_s, f.daemon_cpu_s, f.catch_up_s
    );
    println!("restart:");
    println!(
        "  {}/{} mounts and {}/{} PVs logged once as RECONCILED; {} duplicates; start took {:.2} s",
        r.mounts_reconciled, r.mounts, r.pvs_reconciled, r.pvs, r.duplicates, r.start_s
    );
    println!(
        "  daemon RSS after the restart: {:.1} MiB",
        rss_kib as f64 / 1024.0
    );
    println!("targets:");
    println!(
        "  weir vgs <= 20 ms at {pvs} PVs: {}",
        q.weir_vgs_ms <= 20.0
    );
    println!(
        "  weir mounts <= 20 ms at {mounts} mounts: {}",
        q.weir_mounts_ms <= 20.0
    );
    println!("  consumers exact: {}   reconciled: {}", f.exact, r.ok);

    drop(ws_late);
    drop(ws_storm);
    drop(ws_query);
    drop(fleet);
    drop(late);

    let sfx = |n: usize| n.to_string();
    let mut out = serde_json::Map::new();
    out.insert("bench".into(), json!(BENCH));
    out.insert("quick".into(), json!(a.quick));
    out.insert(format!("query_ms_vgs_{}", sfx(pvs)), num(q.weir_vgs_ms, 2));
    out.insert(
        format!("query_ms_mounts_{}", sfx(mounts)),
        num(q.weir_mounts_ms, 2),
    );
    out.insert(format!("lvm_vgs_ms_{}", sfx(pvs)), num(q.lvm_vgs_ms, 2));
    out.insert(format!("findmnt_ms_{}", sfx(mounts)), num(q.findmnt_ms, 2));
    out.insert("mounts_match_direct".into(), json!(q.mounts_match));
    out.insert("consumers".into(), json!(f.consumers));
    out.insert("consumers_exact".into(), json!(f.exact));
    out.insert("consumer_records".into(), json!(f.expected));
    out.insert("storm_mounts".into(), json!(f.storm_mounts));
    out.insert("daemon_cpu_s_storm".into(), num(f.daemon_cpu_s, 3));
    out.insert("catch_up_s".into(), num(f.catch_up_s, 3));
    out.insert("reconciled_ok".into(), json!(r.ok));
    out.insert("reconciled_mounts".into(), json!(r.mounts_reconciled));
    out.insert("reconciled_pvs".into(), json!(r.pvs_reconciled));
    out.insert("restart_start_s".into(), num(r.start_s, 3));
    out.insert("rss_mib".into(), num(rss_kib as f64 / 1024.0, 1));
    report::emit(&Value::Object(out));
    Ok(())
}
