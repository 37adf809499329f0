//! How much CPU time the hypervisor took from this VM during a run: the
//! `steal` column of `/proc/stat`.
//!
//! On a shared host a rate can move by 2× from one minute to the next, and
//! the guest sees only one trace of that: time its vCPUs were ready to run
//! but the host ran something else. A benchmark reports the share of CPU
//! time stolen during its run beside its figures, so that a figure from a
//! run with much stolen time can be told apart from a calm one.

/// Cumulative CPU time of all CPUs, in clock ticks, from `/proc/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CpuTimes {
    /// user + nice + system + idle + iowait + irq + softirq + steal.
    total: u64,
    steal: u64,
}

impl CpuTimes {
    /// The times now, or `None` where `/proc/stat` is missing or has no
    /// steal column (kernels before 2.6.11).
    pub(crate) fn now() -> Option<CpuTimes> {
        parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// The share of all CPU time since `earlier` that was stolen, in
    /// percent; `None` if no time passed or the counters went backwards.
    pub(crate) fn steal_pct_since(&self, earlier: &CpuTimes) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total)?;
        let steal = self.steal.checked_sub(earlier.steal)?;
        (total > 0 && steal <= total).then(|| steal as f64 * 100.0 / total as f64)
    }
}

/// Steal share since `start` for a report: percent with one decimal, or
/// NaN (null in the JSON) when it cannot be read.
pub(crate) fn pct_since(start: Option<CpuTimes>) -> f64 {
    start
        .zip(CpuTimes::now())
        .and_then(|(a, b)| b.steal_pct_since(&a))
        .unwrap_or(f64::NAN)
}

/// Reads the summary line, `cpu  user nice system idle iowait irq softirq
/// steal guest guest_nice` (proc(5)). Guest time is already counted in
/// user and nice, so it is left out of the total.
fn parse(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().next()?;
    let mut fields = line.split_ascii_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let ticks: Vec<u64> = fields
        .take(8)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    if ticks.len() < 8 {
        return None;
    }
    let total = ticks.iter().try_fold(0u64, |sum, &t| sum.checked_add(t))?;
    Some(CpuTimes {
        total,
        steal: ticks[7],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_summary_line_gives_its_total_and_steal() {
        let stat = "cpu  100 5 50 800 10 2 3 30 7 0\ncpu0 50 2 25 400 5 1 1 15 3 0\n";
        let t = parse(stat).unwrap();
        assert_eq!(
            t,
            CpuTimes {
                total: 1000,
                steal: 30
            }
        );
        let later = CpuTimes {
            total: 1200,
            steal: 80,
        };
        assert_eq!(later.steal_pct_since(&t), Some(25.0));
        assert_eq!(t.steal_pct_since(&later), None, "backwards");
        assert_eq!(t.steal_pct_since(&t), None, "no time passed");
    }

    #[test]
    fn other_text_gives_nothing() {
        for bad in [
            "",
            "cpu0 1 2 3 4 5 6 7 8\n",
            "cpu  1 2 3 4 5 6 7\n",
            "cpu  1 2 3 x 5 6 7 8\n",
            "cpu  18446744073709551615 1 0 0 0 0 0 0\n",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn this_host_reports_its_times() {
        let Some(a) = CpuTimes::now() else {
            eprintln!("skipped: no /proc/stat with a steal column here");
            return;
        };
        let b = CpuTimes::now().unwrap();
        assert!(b.total >= a.total && b.steal >= a.steal, "{a:?} then {b:?}");
    }

    proptest! {
        #[test]
        fn any_text_parses_or_is_refused_without_panic(s in "\\PC*") {
            let _ = parse(&s);
        }

        #[test]
        fn well_formed_lines_parse_exactly(
            ticks in proptest::collection::vec(0u64..1 << 48, 8..=10),
        ) {
            let line: Vec<String> = ticks.iter().map(u64::to_string).collect();
            let stat = format!("cpu  {}\ncpu0 0 0 0 0 0 0 0 0\n", line.join(" "));
            let t = parse(&stat).unwrap();
            prop_assert_eq!(t.total, ticks[..8].iter().sum::<u64>());
            prop_assert_eq!(t.steal, ticks[7]);
        }
    }
}
