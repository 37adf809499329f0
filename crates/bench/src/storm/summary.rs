//! Turning the measurements into figures: medians over rounds per (loop,
//! count, watcher), ratios to the unwatched storm measured in the same run,
//! CPU per 2000 mounts and as a share of the storm's wall time; then the
//! table a reader sees and the JSON detail.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::driver::Loop;
use super::measure::Measurement;
use super::watchers::Mode;
use crate::report::{median, num, round};

/// Figures of one (loop, count, watcher).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cell {
    pub(crate) rounds: usize,
    pub(crate) attach_s: f64,
    pub(crate) detach_s: f64,
    pub(crate) wall_s: f64,
    /// Median wall time over the unwatched one's.
    pub(crate) ratio: f64,
    /// Median of the per-round ratios (each round's modes ran back to back).
    pub(crate) paired_ratio: f64,
    pub(crate) cpu_s: f64,
    pub(crate) tracker_cpu_s: f64,
    /// The tracker's whole-table readings over both phases, and their CPU.
    pub(crate) readings: f64,
    pub(crate) reading_cpu_s: f64,
    pub(crate) cpu_per_2000: f64,
    /// The tracker thread alone, per 2000 mounts.
    pub(crate) tracker_per_2000: f64,
    /// Watcher CPU over storm wall time, median of the rounds.
    pub(crate) cpu_share: f64,
    pub(crate) rss_per_mount: Option<f64>,
}

/// Every measurement, by (loop, count, mode), in round order.
#[derive(Default)]
pub(crate) struct Results {
    runs: BTreeMap<(Loop, usize, Mode), Vec<Measurement>>,
}

impl Results {
    pub(crate) fn add(&mut self, m: Measurement) {
        self.runs.entry((m.lp, m.n, m.mode)).or_default().push(m);
    }

    /// The figures of a cell, if it was measured.
    pub(crate) fn cell(&self, lp: Loop, n: usize, mode: Mode) -> Option<Cell> {
        let v = self.runs.get(&(lp, n, mode))?;
        let none = self.runs.get(&(lp, n, Mode::None));
        let med = |f: &dyn Fn(&Measurement) -> f64| median(&v.iter().map(f).collect::<Vec<_>>());
        let wall_s = med(&|m| m.wall_s());
        let none_wall = none.map_or(f64::NAN, |nv| {
            median(&nv.iter().map(Measurement::wall_s).collect::<Vec<_>>())
        });
        let paired = none.map_or(f64::NAN, |nv| {
            median(
                &v.iter()
                    .zip(nv)
                    .map(|(m, z)| m.wall_s() / z.wall_s())
                    .collect::<Vec<_>>(),
            )
        });
        let cpu_s = med(&|m| m.cpu_s());
        let tracker_cpu_s = med(&|m| m.tracker_cpu_s());
        let rss: Vec<f64> = v.iter().filter_map(|m| m.rss_per_mount).collect();
        Some(Cell {
            rounds: v.len(),
            attach_s: med(&|m| m.attach.wall_s),
            detach_s: med(&|m| m.detach.wall_s),
            wall_s,
            ratio: wall_s / none_wall,
            paired_ratio: paired,
            cpu_s,
            tracker_cpu_s,
            readings: med(&|m| (m.attach.readings + m.detach.readings) as f64),
            reading_cpu_s: med(&|m| m.attach.reading_cpu_s + m.detach.reading_cpu_s),
            cpu_per_2000: cpu_s * 2000.0 / n as f64,
            tracker_per_2000: tracker_cpu_s * 2000.0 / n as f64,
            cpu_share: med(&|m| m.cpu_s() / m.wall_s()),
            rss_per_mount: (!rss.is_empty()).then(|| median(&rss)),
        })
    }

    /// The worst (largest) value of `f` over the counts, for one loop and
    /// mode; NaN when nothing was measured.
    pub(crate) fn worst(
        &self,
        lp: Loop,
        mode: Mode,
        counts: &[usize],
        f: impl Fn(&Cell) -> f64,
    ) -> f64 {
        counts
            .iter()
            .filter_map(|&n| self.cell(lp, n, mode))
            .map(|c| f(&c))
            .fold(f64::NAN, f64::max)
    }

    /// Whether every weir measurement ended exactly right.
    pub(crate) fn exact(&self) -> bool {
        self.runs.values().flatten().all(Measurement::exact)
    }

    /// Prints the table of medians.
    pub(crate) fn print(&self, counts: &[usize]) {
        for lp in Loop::ALL {
            println!();
            println!(
                "  {} loop (medians): wall s attach + detach, ratio to none (paired), watcher CPU s, per 2000 mounts, share of wall",
                lp.name()
            );
            for &n in counts {
                for mode in Mode::ALL {
                    let Some(c) = self.cell(lp, n, mode) else {
                        continue;
                    };
                    let mut line = format!(
                        "    N={n:<5} {:<15} {:>7.3} + {:>7.3} = {:>7.3} s  x{:.3} ({:.3})",
                        mode.name(),
                        c.attach_s,
                        c.detach_s,
                        c.wall_s,
                        c.ratio,
                        c.paired_ratio
                    );
                    if !matches!(mode, Mode::None | Mode::FanotifyUnread) {
                        line += &format!(
                            "  CPU {:.3} s, {:.3} s/2000, {:.1}% of wall",
                            c.cpu_s,
                            c.cpu_per_2000,
                            c.cpu_share * 100.0
                        );
                    }
                    if mode.backend().is_some() {
                        line += &format!(
                            " (tracker thread {:.3} s; {:.0} readings, {:.3} s)",
                            c.tracker_cpu_s, c.readings, c.reading_cpu_s
                        );
                    }
                    println!("{line}  [{} rounds]", c.rounds);
                }
            }
        }
    }

    /// The detail for the JSON line: loop -> count -> mode -> figures.
    pub(crate) fn detail(&self, counts: &[usize]) -> Value {
        let mut out = Map::new();
        for lp in Loop::ALL {
            let key = lp.arg();
            let mut by_n = Map::new();
            for &n in counts {
                let mut by_mode = Map::new();
                for mode in Mode::ALL {
                    if let Some(c) = self.cell(lp, n, mode) {
                        by_mode.insert(mode.name().into(), cell_json(&c));
                    }
                }
                if !by_mode.is_empty() {
                    by_n.insert(n.to_string(), Value::Object(by_mode));
                }
            }
            out.insert(key.into(), Value::Object(by_n));
        }
        Value::Object(out)
    }
}

fn cell_json(c: &Cell) -> Value {
    json!({
        "rounds": c.rounds,
        "attach_s": round(c.attach_s, 4),
        "detach_s": round(c.detach_s, 4),
        "wall_ratio": num(c.ratio, 3),
        "paired_ratio": num(c.paired_ratio, 3),
        "cpu_s": round(c.cpu_s, 4),
        "tracker_cpu_s": round(c.tracker_cpu_s, 4),
        "tracker_readings": c.readings,
        "tracker_reading_cpu_s": round(c.reading_cpu_s, 4),
        "cpu_share": round(c.cpu_share, 4),
        "rss_bytes_per_mount": c.rss_per_mount.map(|r| r.round()),
    })
}
