//! Query latency through the daemon, process start included: `weir vgs`
//! against `lvm vgs`, and `weir mounts` against `findmnt`, timed
//! alternately in the same run (the first of each pair rotating), after one
//! warm-up each. Each answer is also checked: the VG is listed complete
//! with all its PVs, and the daemon's `weir mounts` is byte for byte what
//! `weir --direct mounts` prints from a fresh reading of the kernel.

use std::process::Command;
use std::time::Instant;

use anyhow::{Result, bail};

use super::child::Daemon;
use crate::loopdev::run_tool;
use crate::lvm::weir_cli;
use crate::report::median;

/// Median wall times, ms, of each command.
#[derive(Debug, Default)]
pub(crate) struct Latency {
    pub(crate) weir_vgs_ms: f64,
    pub(crate) lvm_vgs_ms: f64,
    pub(crate) weir_mounts_ms: f64,
    pub(crate) findmnt_ms: f64,
    /// The daemon's `weir mounts` equals the direct one.
    pub(crate) mounts_match: bool,
}

fn timed_ms(mut c: Command) -> Result<f64> {
    let t = Instant::now();
    run_tool(&mut c)?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// Times `a` and `b` alternately, `runs` times each; medians in ms.
fn pair(runs: usize, a: &dyn Fn() -> Command, b: &dyn Fn() -> Command) -> Result<(f64, f64)> {
    timed_ms(a())?;
    timed_ms(b())?;
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for k in 0..runs {
        if k % 2 == 0 {
            ta.push(timed_ms(a())?);
            tb.push(timed_ms(b())?);
        } else {
            tb.push(timed_ms(b())?);
            ta.push(timed_ms(a())?);
        }
    }
    Ok((median(&ta), median(&tb)))
}

/// Measures both pairs. `vg` must be listed complete with `pvs` PVs, and
/// at least `mounts` mounts must be listed.
pub(crate) fn measure(
    d: &Daemon,
    lvm_vgs: &dyn Fn() -> Command,
    findmnt: &dyn Fn() -> Command,
    vg: &str,
    pvs: usize,
    mounts: usize,
    runs: usize,
) -> Result<Latency> {
    let out = run_tool(&mut d.cli(&["vgs", "--json"]))?;
    weir_cli::check_vg(&out.stdout, vg, pvs)?;
    let listed = weir_cli::parse_array(
        &["mounts", "--json"],
        &run_tool(&mut d.cli(&["mounts", "--json"]))?.stdout,
    )?
    .len();
    if listed < mounts {
        bail!(
            "weir mounts --json through the daemon lists {listed} mounts, fewer than the {mounts} made"
        );
    }
    let via = run_tool(&mut d.cli(&["mounts"]))?.stdout;
    let direct = run_tool(&mut d.cli(&["--direct", "mounts"]))?.stdout;
    let mounts_match = via == direct;
    if !mounts_match {
        eprintln!(
            "    weir mounts through the daemon ({} bytes) differs from --direct ({} bytes)",
            via.len(),
            direct.len()
        );
    }

    let (weir_vgs_ms, lvm_vgs_ms) = pair(runs, &|| d.cli(&["vgs"]), lvm_vgs)?;
    let (weir_mounts_ms, findmnt_ms) = pair(runs, &|| d.cli(&["mounts"]), findmnt)?;
    Ok(Latency {
        weir_vgs_ms,
        lvm_vgs_ms,
        weir_mounts_ms,
        findmnt_ms,
        mounts_match,
    })
}
