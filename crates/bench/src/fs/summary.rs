//! From rounds to figures: per cell (filesystem, load, N) and watcher, the
//! ratio of its rate to the unwatched rate of the same round (median, min
//! and max over the rounds it watched whole), its CPU per counted event,
//! and what each reports besides (the floor's events read, weir's records,
//! watchman's recrawls, fsnotifywait's exits); then the tables, the
//! targets and the JSON.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::load::LoadKind;
use super::rounds::Round;
use super::setup::FsKind;
use super::watchers::Case;
use crate::report::{median, num, round};

/// A cell's key.
pub(crate) type Key = (FsKind, LoadKind, usize);

/// Every round of every cell: per cell, the rounds in order, each with the
/// cases it ran.
#[derive(Default)]
pub(crate) struct Results {
    pub(crate) cells: BTreeMap<Key, Vec<Vec<Round>>>,
}

/// One watcher's figures in one cell.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stat {
    /// Ratios of the rounds it watched whole.
    pub(crate) ratios: Vec<f64>,
    /// Rounds it ran.
    pub(crate) rounds: usize,
    /// Where in the load it quit, per round it quit in (percent).
    pub(crate) exits: Vec<f64>,
    pub(crate) exit_words: Option<String>,
    /// All its rounds' CPU over all their counted events, in µs; NaN if
    /// not measured.
    pub(crate) cpu_us_per_event: f64,
    /// Whether every CPU figure was the threads' exact runtime.
    pub(crate) cpu_exact: bool,
    /// The floor: events read per operation, overflows.
    pub(crate) read_per_op: f64,
    pub(crate) overflows: u64,
    /// weir: records in its log per counted event.
    pub(crate) records_per_event: f64,
    /// weir: MARKs besides the one per root it logs at its start (it logs
    /// one when the kernel reports lost events).
    pub(crate) extra_marks: u64,
    /// watchman: recrawl lines in its log.
    pub(crate) recrawls: u64,
    /// The median time it took to go idle after the load.
    pub(crate) settle_s: f64,
    /// What went wrong in how it stopped.
    pub(crate) problems: Vec<String>,
}

impl Stat {
    pub(crate) fn median(&self) -> f64 {
        median(&self.ratios)
    }

    fn min(&self) -> f64 {
        self.ratios.iter().copied().fold(f64::NAN, f64::min)
    }

    fn max(&self) -> f64 {
        self.ratios.iter().copied().fold(f64::NAN, f64::max)
    }

    /// The ratio as the table shows it.
    fn cell_text(&self) -> String {
        if self.rounds == 0 {
            return "-".into();
        }
        if self.ratios.is_empty() {
            return format!("quit {}/{}", self.exits.len(), self.rounds);
        }
        let mut s = format!("{:.3} ({:.2}-{:.2})", self.median(), self.min(), self.max());
        if !self.exits.is_empty() {
            s += &format!(" q{}", self.exits.len());
        }
        s
    }
}

impl Results {
    pub(crate) fn add(&mut self, key: Key, round: Vec<Round>) {
        self.cells.entry(key).or_default().push(round);
    }

    /// The median unwatched rate of a cell.
    pub(crate) fn none_rate(&self, key: &Key) -> f64 {
        let Some(rounds) = self.cells.get(key) else {
            return f64::NAN;
        };
        let v: Vec<f64> = rounds
            .iter()
            .filter_map(|r| r.iter().find(|x| x.case == Case::None))
            .map(Round::rate)
            .collect();
        median(&v)
    }

    /// `case`'s figures in a cell.
    pub(crate) fn stat(&self, key: &Key, case: Case) -> Stat {
        let mut s = Stat {
            cpu_us_per_event: f64::NAN,
            read_per_op: f64::NAN,
            records_per_event: f64::NAN,
            cpu_exact: true,
            ..Stat::default()
        };
        let Some(rounds) = self.cells.get(key) else {
            return s;
        };
        let per_op = key.1.events_per_op();
        let (mut cpu_ns, mut cpu_events) = (0u64, 0u64);
        let (mut read, mut read_ops) = (0u64, 0u64);
        let (mut records, mut rec_events) = (0u64, 0u64);
        let mut settles = Vec::new();
        for r in rounds {
            let (Some(none), Some(w)) = (
                r.iter().find(|x| x.case == Case::None),
                r.iter().find(|x| x.case == case),
            ) else {
                continue;
            };
            s.rounds += 1;
            if w.watched_all() {
                s.ratios.push(w.rate() / none.rate());
            }
            if let Some(p) = w.exited_pct {
                s.exits.push(p);
                if s.exit_words.is_none() {
                    s.exit_words = w.exit_words.clone();
                }
            }
            if let Some(ns) = w.cpu_ns {
                cpu_ns += ns;
                cpu_events += w.ops * per_op;
                s.cpu_exact &= w.cpu_exact;
            }
            if let Some(c) = w.finish.floor {
                read += c.events;
                read_ops += w.ops;
                s.overflows += c.overflows;
            }
            if let (Some(n), true) = (w.finish.weir_records, w.watched_all()) {
                records += n;
                rec_events += w.ops * per_op;
            }
            s.recrawls += w.finish.recrawls.unwrap_or(0);
            s.extra_marks += w.finish.weir_marks.unwrap_or(0).saturating_sub(1);
            if let Some(p) = &w.finish.problem {
                s.problems.push(p.clone());
            }
            settles.push(w.settle_s);
        }
        if cpu_events > 0 {
            s.cpu_us_per_event = cpu_ns as f64 / 1e3 / cpu_events as f64;
        }
        if read_ops > 0 {
            s.read_per_op = read as f64 / read_ops as f64;
        }
        if rec_events > 0 {
            s.records_per_event = records as f64 / rec_events as f64;
        }
        s.settle_s = median(&settles);
        s
    }

    /// The keys measured, in order.
    fn keys(&self) -> impl Iterator<Item = &Key> {
        self.cells.keys()
    }

    /// Prints the tables: per filesystem and load, a row per N.
    pub(crate) fn print(&self, watchers: &[Case]) {
        let mut last: Option<(FsKind, LoadKind)> = None;
        for key in self.keys() {
            let (fs, load, n) = *key;
            if last != Some((fs, load)) {
                last = Some((fs, load));
                println!();
                println!(
                    "  {} / {} ({}; counted as {} event{} per op)",
                    fs.name(),
                    load.name(),
                    load.describe(),
                    load.events_per_op(),
                    if load.events_per_op() == 1 { "" } else { "s" }
                );
                let mut head = format!("  {:>3} {:>10} |", "N", "none op/s");
                for w in watchers {
                    head += &format!(" {:>21}", w.name());
                }
                println!("{head}");
            }
            let mut line = format!("  {n:>3} {:>10.0} |", self.none_rate(key));
            let mut cpu = format!("  {:>3} {:>10} |", "", "µs/event");
            for &w in watchers {
                let s = self.stat(key, w);
                line += &format!(" {:>21}", s.cell_text());
                let c = if s.cpu_us_per_event.is_finite() {
                    format!(
                        "{:.2}{}",
                        s.cpu_us_per_event,
                        if s.cpu_exact { "" } else { "~" }
                    )
                } else {
                    "-".into()
                };
                cpu += &format!(" {c:>21}");
            }
            println!("{line}");
            println!("{cpu}");
        }
        println!();
        println!(
            "  ratio: ops/s watched / unwatched in the same round, median (min-max) over the rounds the"
        );
        println!(
            "  watcher watched whole; qK: it quit in K rounds (left out if it quit before the load ended,"
        );
        println!(
            "  kept if it quit while catching up after it, see below); µs/event: the watcher's"
        );
        println!(
            "  CPU (utime+stime, every thread) from the load's start until it was idle again, over the"
        );
        println!(
            "  counted events (~: some rounds read in 10 ms ticks). fanotify merges an event into one"
        );
        println!(
            "  still queued for the same directory and name: the rename load repeats two renames, so a"
        );
        println!("  fanotify reader that is behind reads far fewer events than the load made");
        self.print_notes(watchers);
    }

    /// What the watchers reported besides their rates.
    fn print_notes(&self, watchers: &[Case]) {
        for key in self.keys() {
            let (fs, load, n) = *key;
            let mut notes = Vec::new();
            for &w in watchers {
                let s = self.stat(key, w);
                if s.rounds == 0 {
                    continue;
                }
                if s.read_per_op.is_finite() {
                    notes.push(format!(
                        "floor read {:.2} events/op{}",
                        s.read_per_op,
                        if s.overflows > 0 {
                            format!(", {} overflows", s.overflows)
                        } else {
                            String::new()
                        }
                    ));
                }
                if s.records_per_event.is_finite() {
                    notes.push(format!(
                        "weir logged {:.3} records per counted event",
                        s.records_per_event
                    ));
                }
                if s.extra_marks > 0 {
                    notes.push(format!(
                        "weir logged {} MARKs besides its start's (lost events)",
                        s.extra_marks
                    ));
                }
                if s.recrawls > 0 {
                    notes.push(format!("watchman logged {} recrawls", s.recrawls));
                }
                if !s.exits.is_empty() {
                    let med = median(&s.exits);
                    notes.push(format!(
                        "{} quit in {}/{} rounds, after {:.0}% of the round (median){} [{}]",
                        w.name(),
                        s.exits.len(),
                        s.rounds,
                        med,
                        if med > 100.0 {
                            " while catching up"
                        } else {
                            ""
                        },
                        s.exit_words.clone().unwrap_or_default()
                    ));
                }
                for p in s.problems.iter().take(1) {
                    notes.push(format!("{}: {p}", w.name()));
                }
            }
            if !notes.is_empty() {
                println!(
                    "    {}/{}/N={n}: {}",
                    fs.name(),
                    load.name(),
                    notes.join("; ")
                );
            }
        }
    }

    /// The cells as JSON: fs -> load -> N -> figures.
    pub(crate) fn json(&self, watchers: &[Case]) -> Value {
        let mut out = Map::new();
        for key in self.keys() {
            let (fs, load, n) = *key;
            let mut cell = Map::new();
            cell.insert("none_ops_per_s".into(), num(self.none_rate(key), 0));
            for &w in watchers {
                let s = self.stat(key, w);
                if s.rounds == 0 {
                    continue;
                }
                let mut m = Map::new();
                m.insert("ratio_median".into(), num(s.median(), 3));
                m.insert("ratio_min".into(), num(s.min(), 3));
                m.insert("ratio_max".into(), num(s.max(), 3));
                m.insert("rounds".into(), json!(s.rounds));
                m.insert("rounds_watched_whole".into(), json!(s.ratios.len()));
                m.insert("cpu_us_per_event".into(), num(s.cpu_us_per_event, 3));
                m.insert("settle_s".into(), num(s.settle_s, 3));
                if !s.exits.is_empty() {
                    m.insert(
                        "quit_at_pct".into(),
                        json!(s.exits.iter().map(|p| round(*p, 1)).collect::<Vec<_>>()),
                    );
                    m.insert("quit_words".into(), json!(s.exit_words));
                }
                if s.read_per_op.is_finite() {
                    m.insert("events_read_per_op".into(), num(s.read_per_op, 3));
                    m.insert("overflows".into(), json!(s.overflows));
                }
                if s.records_per_event.is_finite() {
                    m.insert("records_per_event".into(), num(s.records_per_event, 3));
                    m.insert("extra_marks".into(), json!(s.extra_marks));
                }
                if w == Case::Watchman {
                    m.insert("recrawls".into(), json!(s.recrawls));
                }
                if !s.problems.is_empty() {
                    m.insert("problems".into(), json!(s.problems));
                }
                cell.insert(w.name().into(), Value::Object(m));
            }
            let fs_m = out
                .entry(fs.name())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(fs_m) = fs_m {
                let load_m = fs_m
                    .entry(load.name())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(load_m) = load_m {
                    load_m.insert(n.to_string(), Value::Object(cell));
                }
            }
        }
        Value::Object(out)
    }

    /// Checks the targets, prints a PASS or FAIL line for each (or says why
    /// it is not measured), and returns them for the JSON.
    pub(crate) fn targets(&self, weir_ran: bool, why_not: &str) -> Value {
        println!();
        println!("  targets:");
        if !weir_ran {
            println!("    UNMEASURED: weir did not run ({why_not})");
            return json!({"measured": false, "why": why_not});
        }
        // ext4: >= 0.85 at every N (and load).
        let mut ext4_min = f64::INFINITY;
        let mut ext4_worst = String::new();
        // Ahead of every peer, within 0.05 of the floor, CPU per event.
        let mut behind: Vec<String> = Vec::new();
        let mut gap_max = f64::NEG_INFINITY;
        let mut gap_worst = String::new();
        let mut cpu_max = f64::NEG_INFINITY;
        let mut cpu_worst = String::new();
        let mut unmeasured: Vec<String> = Vec::new();
        let mut compared = 0usize;
        let mut problems: Vec<String> = Vec::new();
        for key in self.keys() {
            let (fs, load, n) = *key;
            let at = format!("{}/{}/N={n}", fs.name(), load.name());
            let w = self.stat(key, Case::Weir);
            if w.rounds > 0 && (w.problems.len() + w.exits.len() > 0) {
                problems.push(format!(
                    "{at}: {}",
                    w.problems
                        .first()
                        .cloned()
                        .or_else(|| w.exit_words.clone().map(|e| format!("quit: {e}")))
                        .unwrap_or_default()
                ));
            }
            let wm = w.median();
            if !wm.is_finite() {
                unmeasured.push(at);
                continue;
            }
            if fs == FsKind::Ext4 && wm < ext4_min {
                ext4_min = wm;
                ext4_worst = at.clone();
            }
            for peer in Case::PEERS {
                let p = self.stat(key, peer);
                let pm = p.median();
                if pm.is_finite() {
                    compared += 1;
                }
                if pm.is_finite() && wm <= pm {
                    behind.push(format!("{at}: weir {wm:.3} <= {} {pm:.3}", peer.name()));
                }
            }
            let f = self.stat(key, Case::Floor).median();
            if f.is_finite() && f - wm > gap_max {
                gap_max = f - wm;
                gap_worst = at.clone();
            }
            if w.cpu_us_per_event.is_finite() && w.cpu_us_per_event > cpu_max {
                cpu_max = w.cpu_us_per_event;
                cpu_worst = at.clone();
            }
        }
        let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
        let ext4_ok = ext4_min.is_finite().then_some(ext4_min >= 0.85);
        match ext4_ok {
            Some(ok) => println!(
                "    {}: on ext4 weir >= 0.85 at every N: lowest {ext4_min:.3} ({ext4_worst})",
                verdict(ok)
            ),
            None => println!("    UNMEASURED: weir on ext4 (not run)"),
        }
        let ahead_ok = (compared > 0).then_some(behind.is_empty());
        match ahead_ok {
            Some(ok) => println!(
                "    {}: weir ahead of every peer at every N on both filesystems{}",
                verdict(ok),
                if ok {
                    format!(" ({compared} comparisons)")
                } else {
                    format!(": {}", behind.join("; "))
                }
            ),
            None => println!("    UNMEASURED: no peer ran beside weir"),
        }
        let gap_ok = gap_max.is_finite().then_some(gap_max <= 0.05);
        match gap_ok {
            Some(ok) => println!(
                "    {}: weir within 0.05 of the floor: widest gap {gap_max:.3} ({gap_worst})",
                verdict(ok)
            ),
            None => println!("    UNMEASURED: the floor did not run beside weir"),
        }
        let cpu_ok = cpu_max.is_finite().then_some(cpu_max <= 1.5);
        match cpu_ok {
            Some(ok) => println!(
                "    {}: weir CPU per event <= 1.5 µs: highest {cpu_max:.3} µs ({cpu_worst})",
                verdict(ok)
            ),
            None => println!("    UNMEASURED: weir's CPU"),
        }
        let clean = problems.is_empty();
        println!(
            "    {}: weir stayed up through every round, exited 0 on SIGTERM and left its log{}",
            verdict(clean),
            if clean {
                String::new()
            } else {
                format!(": {}", problems.join("; "))
            }
        );
        if !unmeasured.is_empty() {
            println!("    (weir has no ratio in: {})", unmeasured.join(", "));
        }
        json!({
            "measured": true,
            "weir_ext4_min_ratio": num(ext4_min, 3),
            "weir_ext4_ok": ext4_ok,
            "weir_ahead_of_peers": ahead_ok,
            "weir_behind": behind,
            "weir_floor_gap_max": num(gap_max, 3),
            "weir_within_floor": gap_ok,
            "weir_cpu_us_per_event_max": num(cpu_max, 3),
            "weir_cpu_ok": cpu_ok,
            "weir_unmeasured_cells": unmeasured,
            "weir_clean": clean,
            "weir_problems": problems,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::watchers::Finish;

    fn r(case: Case, ops: u64, cpu_ns: Option<u64>, exited_pct: Option<f64>) -> Round {
        Round {
            case,
            ops,
            secs: 1.0,
            cpu_ns,
            cpu_exact: true,
            exited_pct,
            exit_words: None,
            settle_s: 0.0,
            finish: Finish::default(),
        }
    }

    #[test]
    fn ratios_are_taken_within_a_round_and_quits_are_left_out() {
        let key = (FsKind::Ext4, LoadKind::CreateUnlink, 1);
        let mut res = Results::default();
        res.add(
            key,
            vec![
                r(Case::None, 100, None, None),
                r(Case::Weir, 90, Some(1800), None),
                r(Case::Inotifywait, 80, Some(9000), None),
            ],
        );
        res.add(
            key,
            vec![
                r(Case::Weir, 190, Some(3800), None),
                r(Case::None, 200, None, None),
            ],
        );
        res.add(
            key,
            vec![
                r(Case::None, 100, None, None),
                r(Case::Weir, 99, None, Some(40.0)),
                r(Case::Fsnotifywait, 99, None, Some(40.0)),
            ],
        );
        let s = res.stat(&key, Case::Weir);
        assert_eq!(s.rounds, 3);
        assert_eq!(s.ratios, vec![0.9, 0.95]);
        assert!((s.median() - 0.925).abs() < 1e-9);
        // (1800 + 3800) ns over (90 + 190) ops x 2 events.
        assert!((s.cpu_us_per_event - 0.01).abs() < 1e-9);
        assert_eq!(s.exits, vec![40.0]);
        let f = res.stat(&key, Case::Fsnotifywait);
        assert!(f.ratios.is_empty() && f.cell_text().starts_with("quit 1/1"));
        let t = res.targets(true, "");
        assert_eq!(t["weir_ext4_ok"], json!(true));
        assert_eq!(t["weir_ahead_of_peers"], json!(true));
        // weir quit in the third round.
        assert_eq!(t["weir_clean"], json!(false));
    }
}
