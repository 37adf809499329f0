//! Latency: how long a single mount, made outside any storm, takes to reach
//! the log.
//!
//! With a tracker running and idle, one raw bind mount is made; the clock
//! runs from just before mount(2) until a reader of the log returns the
//! MOUNT_ATTACH record naming that mount point. A pause follows (so each
//! mount meets an idle tracker, and the mountinfo backend's budget refills),
//! then the unmount is timed the same way up to its MOUNT_DETACH.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rustix::mount::{UnmountFlags, mount_bind, unmount};
use serde_json::{Map, Value};
use weir_log::{Reader, RecordType};
use weir_mounts::Backend;

use super::driver::Workspace;
use super::watchers::Weir;
use crate::report::{num, quantile};

/// Between two mounts: "outside a storm" means longer apart than the
/// tracker's 50 ms least interval between whole readings, so no mount meets
/// the previous one's tail.
const PAUSE: Duration = Duration::from_millis(100);
/// A record later than this is a failure, not a latency.
const GIVE_UP: Duration = Duration::from_secs(10);

/// The latencies of one backend, in ms.
struct Latency {
    attach_ms: Vec<f64>,
    detach_ms: Vec<f64>,
}

/// Waits until `reader` returns a record of `kind` named `name`; other
/// records are skipped.
fn wait_for(reader: &mut Reader, kind: RecordType, name: &[u8], t0: Instant) -> Result<()> {
    loop {
        while let Some(r) = reader.next_record()? {
            if r.kind == kind && r.name == name {
                return Ok(());
            }
        }
        if t0.elapsed() > GIVE_UP {
            bail!(
                "no {} record for {} after {} s",
                kind.name().unwrap_or("?"),
                String::from_utf8_lossy(name),
                GIVE_UP.as_secs()
            );
        }
        // Woken by the commit that holds the record.
        reader.wait(Duration::from_millis(1));
    }
}

/// Measures `m` single mounts under a fresh tracker with `backend`.
fn run(ws: &Workspace, backend: Backend, m: usize) -> Result<Latency> {
    ws.check(m)?;
    let w = Weir::start(ws, backend, &format!("latency-{backend}"))?;
    let mut reader = w.log.reader(w.log.last_index() + 1);
    let mut lat = Latency {
        attach_ms: Vec::with_capacity(m),
        detach_ms: Vec::with_capacity(m),
    };
    for i in 0..m {
        let target = ws.target(i);
        let name = target.as_os_str().as_encoded_bytes();
        std::thread::sleep(PAUSE);
        let t0 = Instant::now();
        mount_bind(ws.src(), target).with_context(|| format!("mount onto {}", target.display()))?;
        let r = wait_for(&mut reader, RecordType::MOUNT_ATTACH, name, t0);
        lat.attach_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        std::thread::sleep(PAUSE);
        let t1 = Instant::now();
        // Unmount before giving up on a lost record, so nothing stays.
        unmount(target, UnmountFlags::empty())
            .with_context(|| format!("umount {}", target.display()))?;
        r?;
        wait_for(&mut reader, RecordType::MOUNT_DETACH, name, t1)?;
        lat.detach_ms.push(t1.elapsed().as_secs_f64() * 1e3);
    }
    w.stop()?;
    Ok(lat)
}

/// Measures both backends with `m` mounts each, prints the figures and
/// returns the JSON keys (`latency_p99_ms_fanotify`, ...). A failure is
/// printed and added to `failures`.
pub(crate) fn measure_all(
    ws: &Workspace,
    m: usize,
    failures: &mut Vec<String>,
) -> Map<String, Value> {
    let mut out = Map::new();
    if m == 0 {
        return out;
    }
    println!(
        "  latency: {m} single raw mounts per backend, {} ms apart, from mount(2) until a log reader has the record",
        PAUSE.as_millis()
    );
    for backend in [Backend::Fanotify, Backend::Mountinfo] {
        eprintln!("  latency, {backend}");
        match run(ws, backend, m) {
            Ok(l) => {
                let (a, d) = (&l.attach_ms, &l.detach_ms);
                println!(
                    "    {backend:<9}: ATTACH p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms | DETACH p50 {:.3} ms, p99 {:.3} ms (target: ATTACH p99 <= 10 ms)",
                    quantile(a, 0.5),
                    quantile(a, 0.99),
                    quantile(a, 1.0),
                    quantile(d, 0.5),
                    quantile(d, 0.99)
                );
                let mut put = |key: &str, v: f64| {
                    out.insert(format!("{key}_{backend}"), num(v, 3));
                };
                put("latency_p50_ms", quantile(a, 0.5));
                put("latency_p99_ms", quantile(a, 0.99));
                put("latency_max_ms", quantile(a, 1.0));
                put("latency_detach_p99_ms", quantile(d, 0.99));
            }
            Err(e) => {
                let what = format!("latency with {backend}: {e:#}");
                println!("    FAILED: {what}");
                failures.push(what);
                ws.cleanup(m);
            }
        }
    }
    out
}
