//! The `lvcreate` phase: what following LVM's metadata writes costs
//! `weir run`, against what udev's event activation spends on the same
//! writes, on one VG over N PVs.
//!
//! An LVM command that changes a VG writes its metadata to every PV of it
//! and closes each device node; udevd's `watch` turns each close into a
//! `change` uevent, and 69-dm-lvm.rules runs one `pvscan --cache` per
//! event: N processes per update. `weir run` watches the same closes with
//! inotify and probes only the devices written, the metadata text once.
//!
//! The daemon is started with a device filter that accepts the fleet's
//! devices and rejects every other, and with mounts untracked, so that its
//! work is the fleet's. Then M `lvcreate`s, each followed by its
//! `lvremove` (so that the VG never fills): 2M updates, each written to
//! all N PVs. Measured side by side:
//! - CPU per update: the device tracker thread's (`weir-devices`, the
//!   scheduler's ns) over the 2M updates, and the whole daemon's for
//!   context (10 ms ticks; it also answers the polls and syncs below);
//! - bytes its probes read per update (`/v1/status`), against the label
//!   and mda header of each PV plus the text once;
//! - latency: from each command's return until the daemon's listing shows
//!   it ([`listing`](super::listing)), polled over one connection and never
//!   through `/v1/sync`, which would wait for the very work being timed. A
//!   sync after each sighting, outside the timing, keeps one update's
//!   probes from running into the next command;
//! - the baseline, with the daemon stopped: a sample of updates (about 300
//!   pvscans in all, at least one update), each followed by one
//!   `pvscan --cache` per PV as the rule runs it ([`pvscan::measure`]).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};
use weir_client::Client;

use super::fleet::Fleet;
use super::listing::{self, Listing, Want};
use super::pvscan::{self, Pvscan};
use super::stop::Stop;
use crate::daemon::child::Daemon;
use crate::storm::cpu;

/// The device tracker's thread, by its `comm`.
const TRACKER_THREAD: &str = "weir-devices";
/// The longest an update may take to show.
const SEEN_LIMIT: Duration = Duration::from_secs(10);
/// A pause between polls: the client, the daemon's answering thread and
/// the tracker would otherwise share two CPUs three ways. It bounds the
/// resolution, far below the 10 ms target.
const POLL_PAUSE: Duration = Duration::from_micros(100);
/// About this many pvscans are sampled per fleet, at least one update.
const BASELINE_PVSCANS: usize = 300;
/// The longest filter pattern written (weir takes up to 4096 bytes).
const PATTERN_BYTES: usize = 3000;

/// What the phase measured on one fleet.
#[derive(Debug)]
pub(crate) struct Lvcreate {
    pub(crate) n: usize,
    /// `lvcreate`s, each followed by an `lvremove`.
    pub(crate) m: usize,
    /// The listing polled.
    pub(crate) seen_via: Listing,
    /// The device tracker thread's CPU over the 2M updates.
    pub(crate) tracker_cpu_s: f64,
    /// The whole daemon's, in 10 ms ticks.
    pub(crate) daemon_cpu_s: f64,
    /// Deltas of the daemon's device counters over the 2M updates.
    pub(crate) writes: u64,
    pub(crate) bytes: u64,
    pub(crate) text_bytes: u64,
    pub(crate) texts: u64,
    pub(crate) torn: u64,
    pub(crate) write_overflows: u64,
    /// The tracker's watch gauges at the end.
    pub(crate) watched: u64,
    pub(crate) unwatched: u64,
    /// The metadata text's size with one more LV (the larger of the two).
    pub(crate) text_size: u64,
    /// The devices' logical block: probes read whole blocks (O_DIRECT),
    /// so a text costs its size rounded up to it.
    pub(crate) block: u64,
    /// From each command's return to the daemon showing it, ms.
    pub(crate) create_ms: Vec<f64>,
    pub(crate) remove_ms: Vec<f64>,
    /// Updates the first poll after the command's return showed already.
    pub(crate) first_poll: usize,
    /// Updates whose N probes were all done when they were seen.
    pub(crate) whole_when_seen: usize,
    /// The `lvcreate` commands' own wall time, ms.
    pub(crate) lvcreate_cmd_ms: Vec<f64>,
    /// One baseline run per sampled update.
    pub(crate) baseline: Vec<Pvscan>,
}

impl Lvcreate {
    /// Metadata updates made under the daemon.
    pub(crate) fn updates(&self) -> usize {
        2 * self.m
    }
}

/// How many updates the baseline samples at `n` PVs.
pub(crate) fn baseline_updates(n: usize) -> usize {
    (BASELINE_PVSCANS / n.max(1)).max(1)
}

/// `weir run`'s filter: accept the fleet's devices, reject the rest. The
/// names are alternatives of a few patterns, each under the length limit.
fn filter_args(devs: &[String]) -> Vec<String> {
    let mut patterns = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    let mut len = 0;
    let close = |names: &mut Vec<&str>, patterns: &mut Vec<String>| {
        if !names.is_empty() {
            patterns.push(format!("a#^({})$#", names.join("|")));
            names.clear();
        }
    };
    for d in devs {
        if len + d.len() + 1 > PATTERN_BYTES {
            close(&mut names, &mut patterns);
            len = 0;
        }
        len += d.len() + 1;
        names.push(d);
    }
    close(&mut names, &mut patterns);
    patterns.push("r#.*#".into());
    patterns
        .into_iter()
        .flat_map(|p| ["--devices-filter".to_owned(), p])
        .collect()
}

/// The logical block size of device `dev` (`/dev/NAME`).
fn logical_block(dev: &str) -> Result<u64> {
    let name = dev.rsplit('/').next().unwrap_or(dev);
    let p = format!("/sys/class/block/{name}/queue/logical_block_size");
    let s = std::fs::read_to_string(&p).with_context(|| format!("read {p}"))?;
    s.trim()
        .parse()
        .with_context(|| format!("{p}: not a number: {s:?}"))
}

/// The device counters of `/v1/status`.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    writes: u64,
    bytes: u64,
    text_bytes: u64,
    texts: u64,
    torn: u64,
    write_overflows: u64,
    watched: u64,
    unwatched: u64,
}

fn counters(c: &mut Client) -> Result<Counters> {
    let v: Value = c.get_json("/v1/status").context("GET /v1/status")?;
    let d = v
        .get("devices")
        .filter(|d| d.is_object())
        .context("/v1/status: devices are not tracked")?;
    let f = |k: &str| {
        d.get(k).and_then(Value::as_u64).with_context(|| {
            format!("/v1/status: no devices.{k} (a daemon older than this bench?)")
        })
    };
    Ok(Counters {
        writes: f("writes")?,
        bytes: f("bytes_read")?,
        text_bytes: f("text_bytes_read")?,
        texts: f("texts_read")?,
        torn: f("torn")?,
        write_overflows: f("write_overflows")?,
        watched: f("watched")?,
        unwatched: f("unwatched")?,
    })
}

fn rows(c: &mut Client, target: &str) -> Result<Vec<Map<String, Value>>> {
    c.get_json(target).with_context(|| format!("GET {target}"))
}

fn sync(c: &mut Client) -> Result<()> {
    let _: Value = c.post("/v1/sync").context("POST /v1/sync")?;
    Ok(())
}

/// Polls `via` until it shows `w`; returns the time since `since` and
/// whether the first poll showed it.
fn wait_seen(
    c: &mut Client,
    via: Listing,
    w: &Want<'_>,
    since: Instant,
    stop: &Stop,
) -> Result<(f64, bool)> {
    let mut first = true;
    loop {
        let r = rows(c, via.target())?;
        if via.shows(&r, w) {
            return Ok((since.elapsed().as_secs_f64() * 1e3, first));
        }
        first = false;
        stop.check()?;
        if since.elapsed() > SEEN_LIMIT {
            bail!(
                "the daemon did not show {} {}/{} within {} s through {}",
                if w.present {
                    "the new LV"
                } else {
                    "the removal of"
                },
                w.vg,
                w.lv,
                SEEN_LIMIT.as_secs(),
                via.target()
            );
        }
        std::thread::sleep(POLL_PAUSE);
    }
}

/// Runs the phase on `fleet` with `m` lvcreate/lvremove pairs. The daemon
/// is stopped (or killed, on error) before it returns; the LVs made go
/// with the VG if it fails.
pub(crate) fn run(
    fleet: &Fleet,
    weir: &Path,
    m: usize,
    stop: &Stop,
    failures: &mut Vec<String>,
) -> Result<Lvcreate> {
    let n = fleet.members();
    let devs = fleet.dev_paths();
    if devs.len() != n {
        bail!("{} of {n} devices attached", devs.len());
    }
    let vg = fleet.vg_name();
    let block = logical_block(&devs[0])?;
    let env = fleet.env();
    let dir = env.subdir(&format!("lvcreate-{n}"))?;
    let state = dir.join("state");
    std::fs::create_dir_all(&state).with_context(|| format!("make {}", state.display()))?;
    let mut args = vec!["--mounts-enabled=false".to_owned()];
    args.extend(filter_args(&devs));
    eprintln!("    starting weir run over the {n} devices");
    let d = Daemon::start_with(
        weir,
        &state,
        &dir.join("weir.sock"),
        &dir.join("weir-run.err"),
        Duration::from_secs(120),
        &args,
    )?;
    let mut c = Client::connect(d.socket())
        .context("connect to weir run")?
        .context("weir run does not listen on its socket")?;
    sync(&mut c)?;
    let seen_via = listing::PREFERRED
        .into_iter()
        .find(|l| rows(&mut c, l.target()).is_ok())
        .context("the daemon serves neither /v1/lvm/lvs nor /v1/lvm/vgs")?;
    let vgs = rows(&mut c, Listing::Vgs.target())?;
    let (seqno0, lvs0) = listing::vg_state(&vgs, vg)
        .with_context(|| format!("the daemon does not list {vg} in /v1/lvm/vgs"))?;

    let pid = d.pid();
    let c0 = counters(&mut c)?;
    let t0 = cpu::named_threads_ns(pid, TRACKER_THREAD)?;
    let p0 = cpu::stat_times(Some(pid))?.own_ns;
    let mut create_ms = Vec::with_capacity(m);
    let mut remove_ms = Vec::with_capacity(m);
    let mut lvcreate_cmd_ms = Vec::with_capacity(m);
    let mut first_poll = 0;
    let mut whole_when_seen = 0;
    let mut updates = 0;
    let mut text_size = 0;
    let mut seqno = seqno0;
    eprintln!(
        "    {m} lvcreate + lvremove through the daemon, seen via {}",
        seen_via.target()
    );
    for k in 0..m {
        let lv = format!("wb{k}");
        for present in [true, false] {
            stop.check()?;
            let t = Instant::now();
            if present {
                env.run(["lvcreate", "-qq", "-an", "-Zn", "-l", "1", "-n", &lv, vg])?;
            } else {
                env.run(["lvremove", "-qq", "-y", &format!("{vg}/{lv}")])?;
            }
            let back = Instant::now();
            if present {
                lvcreate_cmd_ms.push(back.duration_since(t).as_secs_f64() * 1e3);
            }
            // LVM commits each change once: one seqno each.
            seqno += 1;
            let w = Want {
                vg,
                lv: &lv,
                present,
                lv_count: lvs0 + u64::from(present),
                seqno,
            };
            let (ms, first) = wait_seen(&mut c, seen_via, &w, back, stop)?;
            first_poll += usize::from(first);
            if present {
                create_ms.push(ms);
            } else {
                remove_ms.push(ms);
            }
            // Outside the timing: had the daemon probed every PV written
            // by then, or only enough of them to show the new seqno?
            updates += 1;
            let done = counters(&mut c)?.writes.saturating_sub(c0.writes);
            whole_when_seen += usize::from(done >= (n * updates) as u64);
            sync(&mut c)?;
            if k == 0 && present {
                // Read-only: no write for the daemon to see.
                text_size = fleet.text_bytes()?;
            }
        }
        if (k + 1) % 25 == 0 {
            eprintln!("    {} of {m}", k + 1);
        }
    }
    let t1 = cpu::named_threads_ns(pid, TRACKER_THREAD)?;
    let p1 = cpu::stat_times(Some(pid))?.own_ns;
    let c1 = counters(&mut c)?;
    drop(c);
    if let Err(e) = d.stop() {
        failures.push(format!("lvcreate N={n}: {e:#}"));
    }

    let samples = baseline_updates(n);
    eprintln!("    pvscan baseline: {samples} update(s) x {n} pvscans");
    let mut baseline = Vec::with_capacity(samples);
    for i in 0..samples {
        stop.check()?;
        let lv = format!("wbbase{i}");
        env.run(["lvcreate", "-qq", "-an", "-Zn", "-l", "1", "-n", &lv, vg])?;
        baseline.push(pvscan::measure(fleet, stop)?);
        env.run(["lvremove", "-qq", "-y", &format!("{vg}/{lv}")])?;
    }

    let dc = |f: fn(&Counters) -> u64| f(&c1).saturating_sub(f(&c0));
    Ok(Lvcreate {
        n,
        m,
        seen_via,
        tracker_cpu_s: cpu::secs(t1.saturating_sub(t0)),
        daemon_cpu_s: cpu::secs(p1.saturating_sub(p0)),
        writes: dc(|c| c.writes),
        bytes: dc(|c| c.bytes),
        text_bytes: dc(|c| c.text_bytes),
        texts: dc(|c| c.texts),
        torn: dc(|c| c.torn),
        write_overflows: dc(|c| c.write_overflows),
        watched: c1.watched,
        unwatched: c1.unwatched,
        text_size,
        block,
        create_ms,
        remove_ms,
        first_poll,
        whole_when_seen,
        lvcreate_cmd_ms,
        baseline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_accepts_exactly_the_fleet_in_patterns_under_the_limit() {
        let devs: Vec<String> = (0..1000).map(|i| format!("/dev/loop{i}")).collect();
        let args = filter_args(&devs);
        let patterns: Vec<&String> = args.iter().skip(1).step_by(2).collect();
        assert!(args.iter().step_by(2).all(|a| a == "--devices-filter"));
        assert_eq!(patterns.last().map(|p| p.as_str()), Some("r#.*#"));
        assert!(patterns.len() > 2 && patterns.iter().all(|p| p.len() <= PATTERN_BYTES + 8));
        let accepted: usize = patterns
            .iter()
            .filter_map(|p| p.strip_prefix("a#^(")?.strip_suffix(")$#"))
            .map(|alt| alt.split('|').count())
            .sum();
        assert_eq!(accepted, 1000);
        assert_eq!(filter_args(&devs[..2])[1], "a#^(/dev/loop0|/dev/loop1)$#");
        // weir reads them as meant: whole names, nothing else.
        let f = weir_devices::Filter::parse(&patterns).unwrap();
        assert!(f.accepts("/dev/loop0") && f.accepts("/dev/loop999"));
        assert!(!f.accepts("/dev/loop1000") && !f.accepts("/dev/sda"));
        let two = filter_args(&devs[1..3]);
        let f = weir_devices::Filter::parse(&two.iter().skip(1).step_by(2).collect::<Vec<_>>())
            .unwrap();
        assert!(f.accepts("/dev/loop1") && f.accepts("/dev/loop2"));
        assert!(!f.accepts("/dev/loop10") && !f.accepts("/dev/loop0"));
    }

    #[test]
    fn the_baseline_samples_about_300_pvscans() {
        assert_eq!(baseline_updates(100), 3);
        assert_eq!(baseline_updates(350), 1);
        assert_eq!(baseline_updates(1000), 1);
        assert_eq!(baseline_updates(2), 150);
    }
}
