//! Turning the measurements into figures: medians and ratios of the `vgs`
//! timings, bytes per PV, the activation's CPU per event and its ratio to
//! the pvscan baseline, and the `lvcreate` phase's CPU, bytes and latency
//! per metadata update; the lines a reader sees and the JSON fields.

use serde_json::{Map, Value, json};

use super::activation::Activation;
use super::lvcreate::Lvcreate;
use super::parity::Parity;
use super::pvscan::Pvscan;
use super::vgs::VgsRun;
use crate::report::{median, num, quantile};

/// The per-PV read budget of the target: a label sector, the mda header,
/// rounded to O_DIRECT blocks; each distinct metadata text comes on top.
const BUDGET_PER_PV: u64 = 8192;

/// What a probe after a metadata write may read of each PV: the label
/// sector and the mda header (4 KiB + 512 B); the text comes once on top,
/// in whole logical blocks.
const UPDATE_BUDGET_PER_PV: u64 = 4608;

/// Everything one run measured.
#[derive(Default)]
pub(crate) struct Results {
    pub(crate) vgs: Vec<VgsRun>,
    pub(crate) parity: Option<Parity>,
    pub(crate) activation: Option<Activation>,
    pub(crate) pvscan: Option<Pvscan>,
    /// The `lvcreate` phase, one per fleet it ran on, ascending.
    pub(crate) lvcreate: Vec<Lvcreate>,
}

/// The `lvcreate` phase's figures, per metadata update.
struct PerUpdate {
    tracker_us: f64,
    daemon_us: f64,
    pvscan_us: f64,
    ratio: f64,
    bytes: f64,
    bound: u64,
    text_bytes: f64,
    probes: f64,
    texts: f64,
}

impl Lvcreate {
    fn per_update(&self) -> PerUpdate {
        let u = self.updates() as f64;
        let pvscan_s: f64 = self.baseline.iter().map(|p| p.cpu_s).sum();
        let pvscan_us = pvscan_s * 1e6 / self.baseline.len() as f64;
        let tracker_us = self.tracker_cpu_s * 1e6 / u;
        PerUpdate {
            tracker_us,
            daemon_us: self.daemon_cpu_s * 1e6 / u,
            pvscan_us,
            ratio: tracker_us / pvscan_us,
            bytes: self.bytes as f64 / u,
            bound: self.n as u64 * UPDATE_BUDGET_PER_PV
                + self.text_size.div_ceil(self.block.max(1)) * self.block.max(1),
            text_bytes: self.text_bytes as f64 / u,
            probes: self.writes as f64 / u,
            texts: self.texts as f64 / u,
        }
    }

    /// The pvscans the baseline ran, in all.
    fn pvscans(&self) -> usize {
        self.baseline.iter().map(|p| p.n).sum()
    }
}

/// p50, p99 and max of `v`, ms.
fn spread(v: &[f64]) -> (f64, f64, f64) {
    (
        quantile(v, 0.5),
        quantile(v, 0.99),
        v.iter().copied().fold(f64::NAN, f64::max),
    )
}

impl VgsRun {
    fn ratio(&self) -> f64 {
        median(&self.weir_s) / median(&self.lvm_s)
    }

    /// weir's bytes beyond the budget: N × 8 KiB plus the text once.
    fn excess(&self) -> Option<i64> {
        let total = self.weir_bytes? as i64;
        Some(total - (self.n as u64 * BUDGET_PER_PV) as i64 - self.text_bytes? as i64)
    }
}

fn per_pv(bytes: Option<u64>, n: usize) -> f64 {
    bytes.map_or(f64::NAN, |b| b as f64 / n as f64)
}

impl Activation {
    /// Milliseconds of watcher CPU per attach over the first and last windows.
    fn per_event_ms(&self) -> (f64, f64) {
        let w = self.window as f64;
        (self.cpu_first_s * 1e3 / w, self.cpu_last_s * 1e3 / w)
    }
}

impl Results {
    /// Prints the readable figures.
    pub(crate) fn print(&self) {
        println!("cold vgs (median of runs, wall s; CPU s in 10 ms ticks):");
        for r in &self.vgs {
            println!(
                "  N={:>5}: lvm vgs {:.3} s (cpu {:.2}), weir vgs --json {:.3} s (cpu {:.2}), ratio {:.3} (target <= 0.2)",
                r.n,
                median(&r.lvm_s),
                median(&r.lvm_cpu_s),
                median(&r.weir_s),
                median(&r.weir_cpu_s),
                r.ratio()
            );
            println!(
                "           bytes read from our devices: weir {:.0} B/PV, lvm {:.0} B/PV; text {} B; weir beyond N x 8 KiB + text: {}",
                per_pv(r.weir_bytes, r.n),
                per_pv(r.lvm_bytes, r.n),
                r.text_bytes.map_or("?".into(), |t| t.to_string()),
                r.excess().map_or("?".into(), |e| format!("{e} B"))
            );
        }
        if let Some(p) = &self.parity {
            println!(
                "parity (weir vgs/pvs --json vs lvm vgs/pvs, our VG and {} PVs): {}",
                p.pvs,
                p.ok()
            );
            for d in &p.diffs {
                println!("  differs: {d}");
            }
            if p.diff_count > p.diffs.len() {
                println!("  ... {} differences in all", p.diff_count);
            }
        }
        if let Some(a) = &self.activation {
            let (first, last) = a.per_event_ms();
            println!("event activation of {} PVs under weir devices watch:", a.n);
            println!(
                "  attach loop {:.2} s; VG_COMPLETE x{} (VG_INCOMPLETE x{}), {} after the last losetup returned; PV_FOUND for {} of {} PVs ({} lines)",
                a.attach_s,
                a.vg_complete_count,
                a.vg_incomplete_count,
                a.vg_complete_delay_s
                    .map_or("never".into(), |d| format!("{:.1} ms", d * 1e3)),
                a.pv_found,
                a.n,
                a.pv_found_lines
            );
            println!(
                "  watcher CPU {:.3} s from ready to the end; per attach {:.3} ms over the first {w}, {:.3} ms over the last {w}{}; peak RSS {:.1} MiB (target <= 50)",
                a.cpu_s,
                first,
                last,
                if a.cpu_precise {
                    ""
                } else {
                    " (10 ms ticks: a thread exited)"
                },
                a.rss_hwm_kib as f64 / 1024.0,
                w = a.window
            );
        }
        if let Some(p) = &self.pvscan {
            println!(
                "pvscan baseline: {} x `lvm pvscan --cache ... DEV`: wall {:.2} s, CPU {:.2} s ({:.2} ms per device); said complete x{}",
                p.n,
                p.wall_s,
                p.cpu_s,
                p.cpu_s * 1e3 / p.n as f64,
                p.complete_count
            );
        }
        if let (Some(a), Some(p)) = (&self.activation, &self.pvscan) {
            println!(
                "  weir / pvscan CPU: {:.4} (target <= 0.01)",
                a.cpu_s / p.cpu_s
            );
        }
        if !self.lvcreate.is_empty() {
            println!(
                "lvcreate under weir run (M lvcreate, each then lvremoved: 2M metadata updates, each written to all N PVs):"
            );
        }
        for l in &self.lvcreate {
            let p = l.per_update();
            let (c50, c99, cmax) = spread(&l.create_ms);
            let (r50, r99, _) = spread(&l.remove_ms);
            println!(
                "  N={:>5}, M={}: weir CPU {:.1} us per update (device tracker thread; whole daemon {:.0} us, 10 ms ticks, our polls and syncs included)",
                l.n, l.m, p.tracker_us, p.daemon_us
            );
            println!(
                "           pvscan baseline {:.0} us per update ({} update(s) x {} pvscans); weir / pvscan {:.5} (target <= 0.01)",
                p.pvscan_us,
                l.baseline.len(),
                l.n,
                p.ratio
            );
            println!(
                "           bytes read per update {:.0} (text {:.0} of it, before rounding to blocks), bound {} ({} B x {} PVs + the {} B text in {} B blocks): {}; {:.2} probes and {:.2} texts per update; torn {}, write overflows {}, watched {} of {} ({} unwatched)",
                p.bytes,
                p.text_bytes,
                p.bound,
                UPDATE_BUDGET_PER_PV,
                l.n,
                l.text_size,
                l.block,
                if p.bytes <= p.bound as f64 {
                    "within"
                } else {
                    "OVER"
                },
                p.probes,
                p.texts,
                l.torn,
                l.write_overflows,
                l.watched,
                l.n,
                l.unwatched
            );
            println!(
                "           return -> seen via {}: lvcreate p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (target p99 <= 10); lvremove p50 {:.2} ms, p99 {:.2} ms",
                l.seen_via.target(),
                c50,
                c99,
                cmax,
                r50,
                r99,
            );
            println!(
                "           seen at the first poll: {} of {} updates; all N PVs probed by then: {} of {}; lvcreate itself {:.0} ms (median)",
                l.first_poll,
                l.updates(),
                l.whole_when_seen,
                l.updates(),
                median(&l.lvcreate_cmd_ms)
            );
        }
    }

    /// The JSON fields (all but `bench` and `failures`).
    pub(crate) fn json(&self) -> Map<String, Value> {
        let mut o = Map::new();
        let mut put = |k: String, v: Value| {
            o.insert(k, v);
        };
        for r in &self.vgs {
            let n = r.n;
            put(format!("vgs_ratio_{n}"), num(r.ratio(), 4));
            put(format!("lvm_vgs_s_{n}"), num(median(&r.lvm_s), 4));
            put(format!("weir_vgs_s_{n}"), num(median(&r.weir_s), 4));
            put(format!("lvm_vgs_cpu_s_{n}"), num(median(&r.lvm_cpu_s), 2));
            put(format!("weir_vgs_cpu_s_{n}"), num(median(&r.weir_cpu_s), 2));
            put(format!("bytes_per_pv_{n}"), num(per_pv(r.weir_bytes, n), 0));
            put(
                format!("lvm_bytes_per_pv_{n}"),
                num(per_pv(r.lvm_bytes, n), 0),
            );
        }
        // The headline bytes: the largest fleet.
        if let Some(r) = self.vgs.iter().max_by_key(|r| r.n) {
            put("bytes_n".into(), json!(r.n));
            put("bytes_per_pv".into(), num(per_pv(r.weir_bytes, r.n), 0));
            put("bytes_total".into(), json!(r.weir_bytes));
            put("text_bytes".into(), json!(r.text_bytes));
            put("bytes_beyond_budget".into(), json!(r.excess()));
            put("lvm_bytes_per_pv".into(), num(per_pv(r.lvm_bytes, r.n), 0));
            put("lvm_bytes_total".into(), json!(r.lvm_bytes));
        }
        if let Some(p) = &self.parity {
            put("parity".into(), json!(p.ok()));
            put("parity_pvs".into(), json!(p.pvs));
            put("parity_diff_count".into(), json!(p.diff_count));
            put("parity_diffs".into(), json!(p.diffs));
        } else {
            put("parity".into(), json!(false));
        }
        if let Some(a) = &self.activation {
            let (first, last) = a.per_event_ms();
            put("activation_n".into(), json!(a.n));
            put(
                "activation_rss_mib".into(),
                num(a.rss_hwm_kib as f64 / 1024.0, 1),
            );
            put("cpu_per_event_100".into(), num(first, 4));
            put("cpu_per_event_1000".into(), num(last, 4));
            put(
                "cpu_per_event_note".into(),
                json!(format!(
                    "watcher CPU ms per attached PV: _100 over attaches 1-{w}, _1000 over attaches {}-{}",
                    a.n - a.window + 1,
                    a.n,
                    w = a.window
                )),
            );
            put("cpu_precise".into(), json!(a.cpu_precise));
            put("weir_cpu_s".into(), num(a.cpu_s, 4));
            put("attach_s".into(), num(a.attach_s, 3));
            put("vg_complete_count".into(), json!(a.vg_complete_count));
            put("vg_incomplete_count".into(), json!(a.vg_incomplete_count));
            put(
                "vg_complete_delay_ms".into(),
                num(a.vg_complete_delay_s.map_or(f64::NAN, |d| d * 1e3), 2),
            );
            put("pv_found_count".into(), json!(a.pv_found));
            put("watcher_lines".into(), json!(a.lines));
        } else {
            for k in [
                "activation_rss_mib",
                "cpu_per_event_100",
                "cpu_per_event_1000",
                "vg_complete_count",
            ] {
                put(k.into(), Value::Null);
            }
        }
        if let Some(p) = &self.pvscan {
            put("pvscan_n".into(), json!(p.n));
            put("pvscan_cpu_s".into(), num(p.cpu_s, 3));
            put("pvscan_wall_s".into(), num(p.wall_s, 3));
            put(
                "pvscan_cpu_per_event_ms".into(),
                num(p.cpu_s * 1e3 / p.n as f64, 3),
            );
            put("pvscan_complete_count".into(), json!(p.complete_count));
        }
        let ratio = match (&self.activation, &self.pvscan) {
            (Some(a), Some(p)) => a.cpu_s / p.cpu_s,
            _ => f64::NAN,
        };
        put("activation_cpu_ratio".into(), num(ratio, 5));
        for l in &self.lvcreate {
            let n = l.n;
            let p = l.per_update();
            let (_, c99, _) = spread(&l.create_ms);
            put(format!("lvcreate_cpu_ratio_{n}"), num(p.ratio, 6));
            put(
                format!("lvcreate_weir_cpu_us_per_update_{n}"),
                num(p.tracker_us, 1),
            );
            put(
                format!("lvcreate_pvscan_cpu_us_per_update_{n}"),
                num(p.pvscan_us, 0),
            );
            put(format!("lvcreate_bytes_per_update_{n}"), num(p.bytes, 0));
            put(format!("lvcreate_bytes_bound_{n}"), json!(p.bound));
            put(format!("lvcreate_latency_p99_ms_{n}"), num(c99, 3));
        }
        // The headline: the largest fleet.
        match self.lvcreate.iter().max_by_key(|l| l.n) {
            Some(l) => {
                let p = l.per_update();
                let (c50, c99, cmax) = spread(&l.create_ms);
                let (r50, r99, _) = spread(&l.remove_ms);
                put("lvcreate_n".into(), json!(l.n));
                put("lvcreate_m".into(), json!(l.m));
                put("lvcreate_updates".into(), json!(l.updates()));
                put("lvcreate_seen_via".into(), json!(l.seen_via.target()));
                put(
                    "lvcreate_weir_cpu_us_per_update".into(),
                    num(p.tracker_us, 1),
                );
                put(
                    "lvcreate_daemon_cpu_us_per_update".into(),
                    num(p.daemon_us, 0),
                );
                put(
                    "lvcreate_pvscan_cpu_us_per_update".into(),
                    num(p.pvscan_us, 0),
                );
                put(
                    "lvcreate_pvscan_sampled_updates".into(),
                    json!(l.baseline.len()),
                );
                put("lvcreate_pvscan_count".into(), json!(l.pvscans()));
                put("lvcreate_cpu_ratio".into(), num(p.ratio, 6));
                put("lvcreate_bytes_per_update".into(), num(p.bytes, 0));
                put("lvcreate_bytes_bound".into(), json!(p.bound));
                put("lvcreate_text_bytes".into(), json!(l.text_size));
                put(
                    "lvcreate_text_bytes_per_update".into(),
                    num(p.text_bytes, 0),
                );
                put("lvcreate_probes_per_update".into(), num(p.probes, 2));
                put("lvcreate_texts_per_update".into(), num(p.texts, 2));
                put("lvcreate_torn".into(), json!(l.torn));
                put("lvcreate_write_overflows".into(), json!(l.write_overflows));
                put("lvcreate_unwatched".into(), json!(l.unwatched));
                put("lvcreate_latency_p50_ms".into(), num(c50, 3));
                put("lvcreate_latency_p99_ms".into(), num(c99, 3));
                put("lvcreate_latency_max_ms".into(), num(cmax, 3));
                put("lvremove_latency_p50_ms".into(), num(r50, 3));
                put("lvremove_latency_p99_ms".into(), num(r99, 3));
                put("lvcreate_seen_first_poll".into(), json!(l.first_poll));
                put("lvcreate_whole_when_seen".into(), json!(l.whole_when_seen));
                put("lvcreate_lvm_ms".into(), num(median(&l.lvcreate_cmd_ms), 1));
            }
            None => {
                for k in [
                    "lvcreate_n",
                    "lvcreate_cpu_ratio",
                    "lvcreate_bytes_per_update",
                    "lvcreate_latency_p99_ms",
                ] {
                    put(k.into(), Value::Null);
                }
            }
        }
        o
    }
}
