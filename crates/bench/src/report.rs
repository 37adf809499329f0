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
