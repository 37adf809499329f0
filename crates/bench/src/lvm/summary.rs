//! Turning the measurements into figures: medians and ratios of the `vgs`
//! timings, bytes per PV, the activation's CPU per event and its ratio to
//! the pvscan baseline; the lines a reader sees and the JSON fields.

use serde_json::{Map, Value, json};

use super::activation::Activation;
use super::parity::Parity;
use super::pvscan::Pvscan;
use super::vgs::VgsRun;
use crate::report::{median, num};

/// The per-PV read budget of issue 4: a label sector, the mda header,
/// rounded to O_DIRECT blocks; each distinct metadata text comes on top.
const BUDGET_PER_PV: u64 = 8192;

/// Everything one run measured.
#[derive(Default)]
pub(crate) struct Results {
    pub(crate) vgs: Vec<VgsRun>,
    pub(crate) parity: Option<Parity>,
    pub(crate) activation: Option<Activation>,
    pub(crate) pvscan: Option<Pvscan>,
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
        o
    }
}
