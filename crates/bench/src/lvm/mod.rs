//! `lvm`: weir against LVM2 on the same devices, in the same run, for the
//! targets in the README: cold `weir vgs` against `lvm vgs` at 350 and 1000
//! PVs, the bytes each reads per PV, parity of `weir vgs/pvs --json` with
//! LVM's reports, and event activation of 1000 PVs under `weir devices
//! watch` against one `lvm pvscan --cache` per device as udev runs it;
//! and `weir run` following `lvcreate`/`lvremove` on a VG of 100 and 1000
//! PVs against the pvscans udev runs for the same writes.
//!
//! Timeline: for each fleet size, ascending, a VG over N PVs on loop
//! devices (sparse 8 MiB images, real `pvcreate`/`vgcreate`), the `vgs`
//! timings, and teardown; the largest fleet also gets parity, activation
//! and the pvscan baseline, and the `lvcreate` fleets the `lvcreate` phase,
//! before their teardown. `--only` picks parts. It keeps the discipline of
//! the reference LVM measurement (the "anchor" in the comments): a private `LVM_SYSTEM_DIR`, only our devices touched, `/run/lvm` online
//! files of our PVs and VG removed, everything torn down on error and on
//! Ctrl-C.

mod activation;
pub(crate) mod fleet;
mod listing;
mod lvcreate;
mod parity;
mod pvscan;
pub(crate) mod stop;
mod summary;
mod vgs;
pub(crate) mod weir_cli;

use std::path::Path;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use crate::loopdev::{self, find_tool};
use crate::report;
use crate::storm::watch_child::find_weir;
use fleet::Fleet;
use stop::Stop;
use summary::Results;

const BENCH: &str = "lvm";

/// Options of `lvm`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Args {
    /// Short run (about a minute): fleets of 50 and 100 PVs, activation of
    /// 100, 3 timed runs, 20 lvcreates at 100.
    #[arg(long)]
    quick: bool,
    /// Fleet sizes for the `vgs` timings; the largest also gets parity,
    /// activation and the pvscan baseline [default: 350,1000; 50,100 with
    /// --quick].
    #[arg(long, value_delimiter = ',')]
    counts: Option<Vec<usize>>,
    /// Timed runs of each `vgs`; medians are reported [default: 5, or 3
    /// with --quick].
    #[arg(long)]
    runs: Option<usize>,
    /// Fleet sizes for the `lvcreate` phase [default: 100,1000; 100 with
    /// --quick].
    #[arg(long, value_delimiter = ',')]
    lvcreate_counts: Option<Vec<usize>>,
    /// `lvcreate`s (each followed by its `lvremove`) per fleet in the
    /// `lvcreate` phase [default: 100, or 20 with --quick].
    #[arg(long)]
    lvcreates: Option<usize>,
    /// Run only these parts, comma-separated [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Part>,
}

/// The parts of the benchmark.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// Cold `vgs` timings and bytes, on every `--counts` fleet.
    Vgs,
    /// `weir vgs/pvs` against LVM's reports, on the largest.
    Parity,
    /// Event activation and the pvscan baseline, on the largest.
    Activation,
    /// `weir run` following lvcreate/lvremove, on the `--lvcreate-counts`
    /// fleets.
    Lvcreate,
}

impl Part {
    fn name(self) -> &'static str {
        match self {
            Part::Vgs => "vgs",
            Part::Parity => "parity",
            Part::Activation => "activation",
            Part::Lvcreate => "lvcreate",
        }
    }
}

fn sorted(mut c: Vec<usize>) -> Vec<usize> {
    c.sort_unstable();
    c.dedup();
    c
}

impl Args {
    fn counts(&self) -> Vec<usize> {
        sorted(self.counts.clone().unwrap_or_else(|| {
            if self.quick {
                vec![50, 100]
            } else {
                vec![350, 1000]
            }
        }))
    }

    fn lvcreate_counts(&self) -> Vec<usize> {
        sorted(self.lvcreate_counts.clone().unwrap_or_else(|| {
            if self.quick {
                vec![100]
            } else {
                vec![100, 1000]
            }
        }))
    }

    fn lvcreates(&self) -> usize {
        self.lvcreates.unwrap_or(if self.quick { 20 } else { 100 })
    }

    fn runs(&self) -> usize {
        self.runs.unwrap_or(if self.quick { 3 } else { 5 })
    }

    fn part(&self, p: Part) -> bool {
        self.only.is_empty() || self.only.contains(&p)
    }

    fn parts(&self) -> Vec<&'static str> {
        [Part::Vgs, Part::Parity, Part::Activation, Part::Lvcreate]
            .into_iter()
            .filter(|p| self.part(*p))
            .map(Part::name)
            .collect()
    }

    /// The fleet that gets parity and activation, if either runs.
    fn largest(&self) -> Option<usize> {
        (self.part(Part::Parity) || self.part(Part::Activation))
            .then(|| self.counts().last().copied())
            .flatten()
    }

    /// Every fleet to set up, ascending.
    fn fleets(&self) -> Vec<usize> {
        let mut f = Vec::new();
        if self.part(Part::Vgs) {
            f.extend(self.counts());
        }
        f.extend(self.largest());
        if self.part(Part::Lvcreate) {
            f.extend(self.lvcreate_counts());
        }
        sorted(f)
    }
}

/// Runs the benchmark.
pub(crate) fn run(a: Args) -> Result<()> {
    if !loopdev::is_root() {
        return report::skipped(BENCH, "needs root (loop devices, LVM2)");
    }
    let Some(lvm) = find_tool("lvm") else {
        return report::skipped(BENCH, "lvm not found (install lvm2)");
    };
    if find_tool("losetup").is_none() {
        return report::skipped(BENCH, "losetup not found");
    }
    if !Path::new("/dev/loop-control").exists() {
        return report::skipped(BENCH, "no /dev/loop-control (loop module not loaded)");
    }
    let weir = match find_weir() {
        Ok(w) => w,
        Err(why) => return report::skipped(BENCH, &why),
    };
    let counts = a.counts();
    if counts.is_empty() || counts[0] < 2 {
        bail!("--counts needs fleet sizes of at least 2 PVs");
    }
    if a.lvcreate_counts().first().is_some_and(|&n| n < 2) {
        bail!("--lvcreate-counts needs fleet sizes of at least 2 PVs");
    }
    if a.runs() == 0 || a.lvcreates() == 0 {
        bail!("--runs and --lvcreates must be positive");
    }
    let stop = Stop::install()?;
    let vg = format!("weirbench{}", std::process::id());

    println!("lvm: weir against LVM2 on one VG over N PVs (loop devices over sparse 8 MiB images)");
    println!(
        "  fleets {counts:?}; {} timed runs of each vgs, alternating, after one warm-up each; VG {vg}",
        a.runs()
    );
    println!(
        "  the largest fleet also: parity, event activation under `weir devices watch`, the `lvm pvscan --cache` baseline"
    );
    println!(
        "  lvcreate phase on fleets {:?}: weir run over those PVs only, {} lvcreate + lvremove; pvscan baseline on {} update(s) per fleet",
        a.lvcreate_counts(),
        a.lvcreates(),
        a.lvcreate_counts()
            .iter()
            .map(|&n| lvcreate::baseline_updates(n).to_string())
            .collect::<Vec<_>>()
            .join("/")
    );
    println!("  parts: {}", a.parts().join(", "));
    println!("  {}", report::host_note());
    println!();

    let mut res = Results::default();
    let mut failures = Vec::new();
    let r = measure_all(&lvm, &vg, &weir, &a, &stop, &mut res, &mut failures);
    // As the anchor does: LVM regenerates them on demand, without our PVs.
    for f in ["/run/lvm/hints", "/run/lvm/newhints"] {
        let _ = std::fs::remove_file(f);
    }
    if let Err(e) = r {
        // A child killed by the same Ctrl-C fails first; say what happened.
        return Err(if stop.raised() {
            e.context("interrupted; everything torn down")
        } else {
            e
        });
    }

    println!();
    res.print();
    for f in &failures {
        println!("  FAILED: {f}");
    }
    let mut out = serde_json::Map::new();
    out.insert("bench".into(), json!(BENCH));
    out.insert("quick".into(), json!(a.quick));
    out.insert("counts".into(), json!(counts));
    out.insert("runs".into(), json!(a.runs()));
    out.insert("parts".into(), json!(a.parts()));
    out.insert("lvcreate_counts".into(), json!(a.lvcreate_counts()));
    out.insert("lvcreates".into(), json!(a.lvcreates()));
    out.extend(res.json());
    if !a.part(Part::Parity) {
        // Not run, which `false` (failed) would misstate.
        out.insert("parity".into(), Value::Null);
    }
    out.insert("failures".into(), json!(failures));
    report::emit(&Value::Object(out));
    if !failures.is_empty() {
        bail!("{} part(s) failed; see `failures`", failures.len());
    }
    Ok(())
}

/// Every fleet, ascending: setup, `vgs` timings, the extra parts on the
/// largest, the `lvcreate` phase, teardown (by drop, also on error).
fn measure_all(
    lvm: &Path,
    vg: &str,
    weir: &Path,
    a: &Args,
    stop: &Stop,
    res: &mut Results,
    failures: &mut Vec<String>,
) -> Result<()> {
    let counts = a.counts();
    let lvcreate_counts = a.lvcreate_counts();
    for n in a.fleets() {
        eprintln!("  N={n}: setting up");
        let mut fleet = fleet::create(lvm, vg, n, stop)?;
        if a.part(Part::Vgs) && counts.contains(&n) {
            eprintln!("  N={n}: timing vgs");
            let lvm_vgs = || fleet.env().cmd(["vgs"]);
            res.vgs.push(vgs::measure(
                &fleet,
                &lvm_vgs,
                weir,
                a.runs(),
                stop,
                failures,
            )?);
        }
        if a.largest() == Some(n) {
            largest_only(&mut fleet, weir, a, stop, res, failures)?;
        }
        if a.part(Part::Lvcreate) && lvcreate_counts.contains(&n) {
            eprintln!("  N={n}: lvcreate under weir run");
            match lvcreate::run(&fleet, weir, a.lvcreates(), stop, failures) {
                Ok(l) => res.lvcreate.push(l),
                Err(e) => {
                    stop.check()?;
                    failures.push(format!("lvcreate N={n}: {e:#}"));
                }
            }
        }
        eprintln!("  N={n}: tearing down");
        drop(fleet);
    }
    Ok(())
}

/// Parity, activation and the pvscan baseline on the largest fleet, those
/// of them `a` asks for. weir's failures are recorded and the rest goes
/// on; LVM's end the run.
fn largest_only(
    fleet: &mut Fleet,
    weir: &Path,
    a: &Args,
    stop: &Stop,
    res: &mut Results,
    failures: &mut Vec<String>,
) -> Result<()> {
    let n = fleet.members();
    if a.part(Part::Parity) {
        eprintln!("  N={n}: parity");
        match parity::check(fleet, weir) {
            Ok(p) => res.parity = Some(p),
            Err(e) => failures.push(format!("parity: {e:#}")),
        }
        stop.check()?;
    }
    if !a.part(Part::Activation) {
        return Ok(());
    }
    eprintln!("  N={n}: event activation");
    let state = fleet.env().subdir("watch-state")?;
    match activation::run(fleet, weir, &state, stop, failures) {
        Ok(a) => res.activation = Some(a),
        Err(e) => {
            stop.check()?;
            // The devices must all be back for the baseline.
            if fleet.attached() != n {
                return Err(
                    e.context("activation failed and the devices could not all be re-attached")
                );
            }
            failures.push(format!("activation: {e:#}"));
        }
    }
    eprintln!("  N={n}: pvscan baseline");
    res.pvscan = Some(pvscan::measure(fleet, stop)?);
    Ok(())
}
