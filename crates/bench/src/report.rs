//! How results are reported: the one JSON line every benchmark ends with,
//! the `skipped` line when it cannot run, and the small statistics (median,
//! quantile, rounding, JSON numbers) used to turn repeated measurements into
//! one figure.

use serde_json::{Value, json};

/// Prints the final JSON line. Must be the last thing a benchmark prints on stdout.
pub(crate) fn emit(v: &Value) {
    println!("{v}");
}

/// Reports a benchmark that cannot run here and why; the caller exits 0.
pub(crate) fn skipped(bench: &str, reason: &str) -> anyhow::Result<()> {
    println!("{bench}: skipped: {reason}");
    emit(&json!({ "bench": bench, "skipped": reason }));
    Ok(())
}

/// The median of `v` (the mean of the middle two for an even count).
pub(crate) fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// The `q` quantile (0..=1) of `v`, nearest rank.
pub(crate) fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len());
    s[rank - 1]
}

/// A 95% confidence interval for the median of the population `v` was
/// drawn from, free of any assumption about its distribution: the order
/// statistics `j` and `n + 1 - j` of the sorted sample, with `j` the
/// largest rank such that a Binomial(n, 1/2) count falls below it with
/// probability at most 2.5%. `None` below 6 samples, where even the
/// smallest and the largest do not reach 95%.
///
/// Noisy per-cycle ratios give a median that moves from run to run; the
/// interval says how far, so a median near a target can be read as met,
/// missed, or not resolved by the run.
pub(crate) fn median_ci(v: &[f64]) -> Option<(f64, f64)> {
    let n = v.len();
    if n < 6 {
        return None;
    }
    // ln P(B = i) = ln C(n, i) - n ln 2, summed in order: the CDF stays
    // exact where 0.5^n underflows.
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let mut ln_c = 0.0_f64;
    let mut cdf = 0.0_f64;
    // The count of ranks below the interval's lower end.
    let mut below = 0;
    for i in 0..n {
        if i > 0 {
            ln_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        cdf += (ln_c + ln_half_n).exp();
        if cdf > 0.025 {
            break;
        }
        below = i + 1;
    }
    if below == 0 {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    Some((s[below - 1], s[n - below]))
}

/// `x` rounded to `digits` decimals, for JSON that stays readable.
pub(crate) fn round(x: f64, digits: i32) -> f64 {
    let p = 10f64.powi(digits);
    (x * p).round() / p
}

/// `x` rounded to `digits` decimals as a JSON number (an integer for 0
/// digits), or null when it is not finite: NaN stands for "not measured".
pub(crate) fn num(x: f64, digits: i32) -> Value {
    if !x.is_finite() {
        Value::Null
    } else if digits == 0 {
        json!(x.round() as i64)
    } else {
        json!(round(x, digits))
    }
}

/// A line describing the machine and its load, printed before measuring so
/// that a noisy run can be recognised as such.
pub(crate) fn host_note() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into());
    format!("host: {cpus} CPUs, 1-min load average {load} before the run")
}

/// A line giving the share of CPU time the hypervisor took during the run
/// (see `steal`), printed after measuring.
pub(crate) fn steal_note(pct: f64) -> String {
    if pct.is_finite() {
        format!("host: {pct:.1}% of all CPU time was stolen by the hypervisor during the run")
    } else {
        "host: stolen CPU time unknown (no steal column in /proc/stat)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_interval_uses_the_binomial_ranks() {
        // n = 6: P(B = 0) = 1/64 <= 2.5%, P(B <= 1) = 7/64 > 2.5%, so
        // the interval is the smallest and the largest.
        let v = [6.0, 1.0, 5.0, 2.0, 4.0, 3.0];
        assert_eq!(median_ci(&v), Some((1.0, 6.0)));
        // Five samples cannot give 95%.
        assert_eq!(median_ci(&v[..5]), None);
        // n = 100: the textbook ranks are 40 and 61.
        let v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(median_ci(&v), Some((40.0, 61.0)));
    }

    #[test]
    fn the_median_interval_survives_samples_too_many_for_plain_powers() {
        // 0.5^2000 underflows an f64; the log-space sum must not.
        let v: Vec<f64> = (0..2000).map(f64::from).collect();
        let (lo, hi) = median_ci(&v).unwrap();
        assert!(lo < 1000.0 && hi > 999.0 && hi - lo < 100.0, "{lo}..{hi}");
    }
}
