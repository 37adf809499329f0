//! Cold `vgs`: `lvm vgs` against `weir vgs --json` on the same fleet, timed
//! alternately (the first of each pair rotating), with the bytes each reads
//! from our devices.
//!
//! Both read the devices with O_DIRECT, so no cache needs dropping; one
//! warm-up of each comes first (LVM writes its hints file then, as it
//! would on a real system). Both list every VG on the machine, ours among
//! them. CPU is the children's user+sys time from `/proc/self/stat`, in
//! 10 ms ticks: coarse for one run, fine for the median's order of
//! magnitude.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

use anyhow::Result;

use super::fleet::Fleet;
use super::stop::Stop;
use super::weir_cli;
use crate::loopdev::run_tool;
use crate::storm::cpu;

/// The timings of one fleet size.
#[derive(Debug, Default)]
pub(crate) struct VgsRun {
    /// PVs in the fleet.
    pub(crate) n: usize,
    pub(crate) lvm_s: Vec<f64>,
    pub(crate) weir_s: Vec<f64>,
    pub(crate) lvm_cpu_s: Vec<f64>,
    pub(crate) weir_cpu_s: Vec<f64>,
    /// Bytes read from our devices by one run of each.
    pub(crate) lvm_bytes: Option<u64>,
    pub(crate) weir_bytes: Option<u64>,
    /// The metadata text's size (every PV holds the same one).
    pub(crate) text_bytes: Option<u64>,
}

/// One command's wall and CPU time.
struct Timed {
    wall_s: f64,
    cpu_s: f64,
    out: Output,
}

fn timed(mut cmd: Command) -> Result<Timed> {
    let c0 = cpu::stat_times(None)?.children_ns;
    let t = Instant::now();
    let out = run_tool(&mut cmd)?;
    let wall_s = t.elapsed().as_secs_f64();
    let c1 = cpu::stat_times(None)?.children_ns;
    Ok(Timed {
        wall_s,
        cpu_s: cpu::secs(c1.saturating_sub(c0)),
        out,
    })
}

/// Measures `fleet` with `runs` timed runs of each. LVM's failures are
/// errors; weir's are added to `failures` and leave weir's figures out.
pub(crate) fn measure(
    fleet: &Fleet,
    lvm: &dyn Fn() -> Command,
    weir: &Path,
    runs: usize,
    stop: &Stop,
    failures: &mut Vec<String>,
) -> Result<VgsRun> {
    let n = fleet.members();
    let weir_cmd = || weir_cli::cmd(weir, &["vgs", "--json"]);
    let mut r = VgsRun {
        n,
        text_bytes: fleet.text_bytes().ok(),
        ..VgsRun::default()
    };
    let mut weir_ok = true;
    let weir_failed = |e: anyhow::Error, failures: &mut Vec<String>| {
        failures.push(format!("{n} PVs: weir vgs --json: {e:#}"));
        false
    };

    // Warm-up, and weir's output checked once.
    timed(lvm())?;
    match timed(weir_cmd()) {
        Ok(t) => {
            if let Err(e) = weir_cli::check_vg(&t.out.stdout, fleet.vg_name(), n) {
                // The timing still means something if weir answered.
                failures.push(format!("{n} PVs: {e:#}"));
            }
        }
        Err(e) => weir_ok = weir_failed(e, failures),
    }
    stop.check()?;

    // Bytes read by one run of each.
    let b0 = fleet.bytes_read()?;
    timed(lvm())?;
    let b1 = fleet.bytes_read()?;
    r.lvm_bytes = Some(b1.saturating_sub(b0));
    if weir_ok {
        match timed(weir_cmd()) {
            Ok(_) => r.weir_bytes = Some(fleet.bytes_read()?.saturating_sub(b1)),
            Err(e) => weir_ok = weir_failed(e, failures),
        }
    }

    for k in 0..runs {
        stop.check()?;
        for weir_turn in [k % 2 == 1, k % 2 == 0] {
            if !weir_turn {
                let t = timed(lvm())?;
                r.lvm_s.push(t.wall_s);
                r.lvm_cpu_s.push(t.cpu_s);
            } else if weir_ok {
                match timed(weir_cmd()) {
                    Ok(t) => {
                        r.weir_s.push(t.wall_s);
                        r.weir_cpu_s.push(t.cpu_s);
                    }
                    Err(e) => weir_ok = weir_failed(e, failures),
                }
            }
        }
    }
    Ok(r)
}
