//! The Prometheus text format (0.0.4), written by hand since it is small:
//! families with their HELP and TYPE lines, samples with escaped labels,
//! and histograms as cumulative `_bucket{le}` lines, `_sum` and `_count`.

use std::fmt::Write as _;

use weir_log::Histogram;

/// The exposition being written.
#[derive(Default)]
pub(super) struct Out(pub(super) String);

impl Out {
    /// A family's HELP and TYPE lines; its samples follow.
    pub(super) fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    pub(super) fn sample(
        &mut self,
        name: &str,
        labels: &[(&str, &str)],
        value: impl std::fmt::Display,
    ) {
        self.0.push_str(name);
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                let _ = write!(self.0, "{k}=\"{}\"", escape_label(v));
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {value}");
    }

    /// A family of one unlabelled sample.
    pub(super) fn one(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        value: impl std::fmt::Display,
    ) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }

    /// A histogram of latencies, in seconds.
    pub(super) fn histogram(&mut self, name: &str, help: &str, h: &Histogram) {
        self.family(name, "histogram", help);
        let bucket = format!("{name}_bucket");
        // Counted from the buckets, so `+Inf` and `_count` always agree.
        for (bound, n) in h.cumulative() {
            let le = bound.map_or_else(|| "+Inf".to_owned(), |ns| seconds(ns).to_string());
            self.sample(&bucket, &[("le", &le)], n);
        }
        self.sample(&format!("{name}_sum"), &[], h.sum_seconds());
        self.sample(&format!("{name}_count"), &[], h.count());
    }
}

/// A label value with `\`, `"` and newlines escaped, as the format asks.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

pub(super) fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_and_escapes() {
        let mut o = Out::default();
        o.family("x_total", "counter", "X.");
        o.sample("x_total", &[("a", "q\"\\\n"), ("b", "2")], 7);
        assert_eq!(
            o.0,
            "# HELP x_total X.\n# TYPE x_total counter\nx_total{a=\"q\\\"\\\\\\n\",b=\"2\"} 7\n"
        );
    }

    #[test]
    fn a_histogram_is_cumulative_in_seconds() {
        let mut h = Histogram::default();
        h.buckets[0] = 2; // ≤ 1 µs
        h.buckets[6] = 1; // ≤ 1 ms
        h.buckets[16] = 1; // > 30 s
        h.sum_ns = 31_001_500_000;
        let mut o = Out::default();
        o.histogram("lat_seconds", "L.", &h);
        let lines: Vec<&str> = o.0.lines().collect();
        assert_eq!(lines[1], "# TYPE lat_seconds histogram");
        assert_eq!(lines[2], "lat_seconds_bucket{le=\"0.000001\"} 2");
        assert_eq!(lines[3], "lat_seconds_bucket{le=\"0.000003\"} 2");
        assert_eq!(lines[8], "lat_seconds_bucket{le=\"0.001\"} 3");
        assert_eq!(lines[17], "lat_seconds_bucket{le=\"30\"} 3");
        assert_eq!(lines[18], "lat_seconds_bucket{le=\"+Inf\"} 4");
        assert_eq!(lines[19], "lat_seconds_sum 31.0015");
        assert_eq!(lines[20], "lat_seconds_count 4");
        assert_eq!(lines.len(), 21);
    }
}
