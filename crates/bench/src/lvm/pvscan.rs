//! The LVM baseline of event activation: one `lvm pvscan --cache ...` per
//! device, in sequence, exactly as the udev rule runs it when a device
//! appears (udev would run them in parallel workers; the CPU is the same).
//! Their CPU is summed from this process's waited-for children.

use std::time::Instant;

use anyhow::{Result, bail};

use super::fleet::Fleet;
use super::stop::Stop;
use crate::loopdev::run_tool;
use crate::storm::cpu;

/// The arguments of 69-dm-lvm.rules' `pvscan` (before the device).
const PVSCAN: &[&str] = &[
    "pvscan",
    "--cache",
    "--listvg",
    "--checkcomplete",
    "--vgonline",
    "--autoactivation",
    "event",
    "--udevoutput",
];

/// What the N pvscans cost.
#[derive(Debug)]
pub(crate) struct Pvscan {
    pub(crate) n: usize,
    pub(crate) wall_s: f64,
    pub(crate) cpu_s: f64,
    /// How many said `LVM_VG_NAME_COMPLETE='VG'` (the last one should).
    pub(crate) complete_count: usize,
}

/// Runs one pvscan per device of `fleet`, from clean online files, and
/// cleans them after.
pub(crate) fn measure(fleet: &Fleet, stop: &Stop) -> Result<Pvscan> {
    let devs = fleet.dev_paths();
    if devs.len() != fleet.members() {
        bail!("{} of {} devices attached", devs.len(), fleet.members());
    }
    let complete = format!("LVM_VG_NAME_COMPLETE='{}'", fleet.vg_name());
    fleet.clear_online();
    let c0 = cpu::stat_times(None)?.children_ns;
    let mut wall_s = 0.0;
    let mut complete_count = 0;
    for (i, d) in devs.iter().enumerate() {
        stop.check()?;
        let mut c = fleet.env().cmd(PVSCAN);
        c.arg(d);
        let t = Instant::now();
        let out = run_tool(&mut c)?;
        wall_s += t.elapsed().as_secs_f64();
        if String::from_utf8_lossy(&out.stdout).contains(&complete) {
            complete_count += 1;
        }
        if (i + 1) % 250 == 0 {
            eprintln!("    pvscan {} of {}", i + 1, devs.len());
        }
    }
    let c1 = cpu::stat_times(None)?.children_ns;
    fleet.clear_online();
    Ok(Pvscan {
        n: devs.len(),
        wall_s,
        cpu_s: cpu::secs(c1.saturating_sub(c0)),
        complete_count,
    })
}
