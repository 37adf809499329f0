//! The interleaved pass of `changelog-overhead`, summed up per thread
//! count: the median of the per-cycle ratios with their quartiles and the
//! median's 95% interval, weir's CPU per operation over the no-log case's,
//! and how busy each case kept the CPUs; printed, and as JSON.

use std::collections::BTreeMap;

use serde_json::{Map, json};

use super::interleave;
use crate::report::{self, median, round};

/// The per-cycle ratios of one case at one thread count, summed up.
#[derive(Clone, Copy)]
pub(super) struct Spread {
    pub(super) median: f64,
    pub(super) q1: f64,
    pub(super) q3: f64,
    /// The median's 95% confidence interval (`report::median_ci`).
    pub(super) ci: Option<(f64, f64)>,
}

impl Spread {
    fn of(v: &[f64]) -> Self {
        Spread {
            median: median(v),
            q1: report::quantile(v, 0.25),
            q3: report::quantile(v, 0.75),
            ci: report::median_ci(v),
        }
    }
}

/// The interleaved pass, summed up per thread count.
pub(super) struct InterleavedSummary {
    /// N -> the per-cycle ratios of weir and of the mutex log.
    rows: BTreeMap<usize, [Spread; 2]>,
    /// N -> weir's CPU per operation over the no-log case's, per cycle,
    /// and the median share of the CPUs each case kept busy.
    cpu: BTreeMap<usize, (Spread, [f64; 3])>,
}

pub(super) fn interleaved_summary(
    phases: &BTreeMap<usize, interleave::Phases>,
) -> InterleavedSummary {
    let mut rows = BTreeMap::new();
    let mut cpu = BTreeMap::new();
    for (&n, p) in phases {
        rows.insert(n, [1, 2].map(|ci| Spread::of(&p.paired(ci))));
        cpu.insert(
            n,
            (
                Spread::of(&p.cpu_paired(1)),
                p.busy.each_ref().map(|b| median(b)),
            ),
        );
    }
    InterleavedSummary { rows, cpu }
}

impl InterleavedSummary {
    /// The lowest median over N, for weir and mutex.
    pub(super) fn min(&self) -> [f64; 2] {
        [0, 1].map(|i| {
            self.rows
                .values()
                .map(|row| row[i].median)
                .fold(f64::INFINITY, f64::min)
        })
    }

    /// The N whose weir median is the lowest, and that median's interval.
    pub(super) fn worst_weir(&self) -> Option<(usize, Spread)> {
        self.rows
            .iter()
            .min_by(|a, b| a.1[0].median.total_cmp(&b.1[0].median))
            .map(|(&n, row)| (n, row[0]))
    }

    /// Prints the interleaved pass's tables: the ratios to none, then the
    /// CPU per operation and the busy shares.
    pub(super) fn print(&self, secs: f64, phase_ms: u64) {
        println!();
        println!(
            "  interleaved: {phase_ms} ms phases in rotating order, {secs} s per N; median of the"
        );
        println!("  per-cycle ratios to none, with their quartiles and the median's 95% interval");
        println!(
            "  {:>3} {:>7} {:>15} {:>15} | {:>7} {:>15}",
            "N", "weir", "quartiles", "95% interval", "mutex", "quartiles"
        );
        let ci = |s: &Spread| match s.ci {
            Some((lo, hi)) => format!("{lo:.3}-{hi:.3}"),
            None => "-".into(),
        };
        for (n, [w, m]) in &self.rows {
            println!(
                "  {n:>3} {:>7.3} {:>7.3}-{:<7.3} {:>15} | {:>7.3} {:>7.3}-{:<7.3}",
                w.median,
                w.q1,
                w.q3,
                ci(w),
                m.median,
                m.q1,
                m.q3
            );
        }
        println!(
            "  min interleaved ratio: weir {:.3}, mutex {:.3}",
            self.min()[0],
            self.min()[1]
        );
        println!();
        println!("  the same phases: the process's CPU per operation, weir over none (median per");
        println!("  cycle, with its 95% interval), and the share of the CPUs each case kept busy");
        println!(
            "  {:>3} {:>9} {:>15} | {:>6} {:>6} {:>6}",
            "N", "weir CPU", "95% interval", "none", "weir", "mutex"
        );
        for (n, (c, busy)) in &self.cpu {
            println!(
                "  {n:>3} {:>9.3} {:>15} | {:>6.3} {:>6.3} {:>6.3}",
                c.median,
                ci(c),
                busy[0],
                busy[1],
                busy[2]
            );
        }
    }

    pub(super) fn json(&self, secs: f64, phase_ms: u64) -> serde_json::Value {
        if self.rows.is_empty() {
            return serde_json::Value::Null;
        }
        // Per N, for weir (0) or mutex (1): what `f` makes of its row.
        let per_n = |i: usize, f: fn(Spread) -> serde_json::Value| {
            self.rows
                .iter()
                .map(|(n, row)| (n.to_string(), f(row[i])))
                .collect::<Map<String, serde_json::Value>>()
        };
        let as_median = |s: Spread| json!(round(s.median, 3));
        let as_quartiles = |s: Spread| json!([round(s.q1, 3), round(s.q3, 3)]);
        let as_ci = |s: Spread| match s.ci {
            Some((lo, hi)) => json!([round(lo, 3), round(hi, 3)]),
            None => serde_json::Value::Null,
        };
        json!({
            "seconds_per_n": secs,
            "phase_ms": phase_ms,
            "paired_ratio_weir": per_n(0, as_median),
            "paired_ratio_mutex": per_n(1, as_median),
            "quartiles_weir": per_n(0, as_quartiles),
            "quartiles_mutex": per_n(1, as_quartiles),
            "median_ci95_weir": per_n(0, as_ci),
            "median_ci95_mutex": per_n(1, as_ci),
            "cpu_per_op_ratio_weir": self
                .cpu
                .iter()
                .map(|(n, (s, _))| (n.to_string(), json!(round(s.median, 3))))
                .collect::<Map<String, serde_json::Value>>(),
            "busy_share": self
                .cpu
                .iter()
                .map(|(n, (_, b))| {
                    let [none, weir, mutex] = b.map(|x| round(x, 3));
                    (n.to_string(), json!({"none": none, "weir": weir, "mutex": mutex}))
                })
                .collect::<Map<String, serde_json::Value>>(),
            "min_ratio_weir": round(self.min()[0], 3),
            "min_ratio_mutex": round(self.min()[1], 3),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interleaved_minimum_is_the_worst_median_over_n() {
        let mut phases = BTreeMap::new();
        phases.insert(
            1,
            interleave::Phases {
                rates: [vec![100.0; 3], vec![97.0, 96.0, 99.0], vec![70.0; 3]],
                cpu_per_op: [
                    vec![1000.0; 3],
                    vec![1030.0, 1040.0, 1050.0],
                    vec![1300.0; 3],
                ],
                busy: [vec![1.0; 3], vec![0.98; 3], vec![0.7; 3]],
            },
        );
        phases.insert(
            2,
            interleave::Phases {
                rates: [vec![200.0; 3], vec![188.0, 190.0, 192.0], vec![150.0; 3]],
                cpu_per_op: [vec![1000.0; 3], vec![1050.0; 3], vec![1300.0; 3]],
                busy: [vec![1.0; 3], vec![0.99; 3], vec![0.7; 3]],
            },
        );
        let s = interleaved_summary(&phases);
        assert_eq!(s.min(), [0.95, 0.7]);
        let j = s.json(3.0, 100);
        assert_eq!(j["min_ratio_weir"], json!(0.95));
        assert_eq!(j["paired_ratio_weir"]["1"], json!(0.97));
        // Three cycles are too few for a 95% interval.
        assert!(j["median_ci95_weir"]["2"].is_null());
        let (n, worst) = s.worst_weir().unwrap();
        assert_eq!((n, worst.median), (2, 0.95));
        assert_eq!(j["cpu_per_op_ratio_weir"]["1"], json!(1.04));
        assert_eq!(j["busy_share"]["2"]["weir"], json!(0.99));
        assert!(
            interleaved_summary(&BTreeMap::new())
                .json(3.0, 100)
                .is_null()
        );
    }

    #[test]
    fn the_interval_comes_with_enough_cycles() {
        let mut phases = BTreeMap::new();
        let weir: Vec<f64> = (0..20).map(|i| 90.0 + f64::from(i)).collect();
        phases.insert(
            4,
            interleave::Phases {
                rates: [vec![100.0; 20], weir, vec![70.0; 20]],
                cpu_per_op: [vec![1.0; 20], vec![1.0; 20], vec![1.0; 20]],
                busy: [vec![1.0; 20], vec![1.0; 20], vec![1.0; 20]],
            },
        );
        let j = interleaved_summary(&phases).json(3.0, 100);
        // n = 20: ranks 6 and 15 of 0.90..1.09.
        assert_eq!(j["median_ci95_weir"]["4"], json!([0.95, 1.04]));
        assert_eq!(j["median_ci95_mutex"]["4"], json!([0.7, 0.7]));
    }
}
