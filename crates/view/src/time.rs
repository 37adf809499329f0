//! Record times as RFC 3339 UTC text with nanoseconds, e.g.
//! `2025-03-01T12:34:56.000000123Z`. Written out here (Howard Hinnant's
//! days-to-civil algorithm) because it is the only date arithmetic weir needs.

/// Formats `ns` since the Unix epoch.
pub fn rfc3339_ns(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:09}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01 so leap days fall at the end of a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339_ns(0), "1970-01-01T00:00:00.000000000Z");
        // `date -u -d @951782400` → 2000-02-29 (a leap day in a century year).
        assert_eq!(
            rfc3339_ns(951_782_400 * 1_000_000_000 + 5),
            "2000-02-29T00:00:00.000000005Z"
        );
        assert_eq!(
            rfc3339_ns(1_709_251_199_999_999_999),
            "2024-02-29T23:59:59.999999999Z"
        );
        assert_eq!(rfc3339_ns(u64::MAX), "2554-07-21T23:34:33.709551615Z");
    }

    fn days_in_month(y: u64, m: u64) -> u64 {
        let leap = y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400));
        match m {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        }
    }

    #[test]
    fn days_are_contiguous() {
        // Each day count maps to the day after the previous one's date.
        let mut prev = civil_from_days(0);
        for day in 1..200_000 {
            let cur = civil_from_days(day);
            let next_in_month = (prev.0, prev.1, prev.2 + 1);
            let next_month = if prev.1 == 12 {
                (prev.0 + 1, 1, 1)
            } else {
                (prev.0, prev.1 + 1, 1)
            };
            let expected = if prev.2 == days_in_month(prev.0, prev.1) {
                next_month
            } else {
                next_in_month
            };
            assert_eq!(cur, expected, "day {day}");
            prev = cur;
        }
    }
}
