//! `weir log tail --since/--until`: journalctl's time syntax (systemd.time,
//! "PARSING TIMESTAMPS") turned into an instant.
//!
//! Taken: `now`, `today`, `yesterday`, `tomorrow`; `@EPOCH[.FRACTION]`;
//! `[WEEKDAY] [YY]YY-MM-DD[ HH:MM[:SS[.FRACTION]]]` (or `T` between date
//! and time), `HH:MM[:SS[.FRACTION]]` (today); relative `+SPAN`, `-SPAN`,
//! `SPAN ago` and `SPAN left`, where a span is numbers with units (`1h
//! 30min`, `-2d`; a bare number is seconds). Absolute times are in the
//! time zone of `now` (the caller's local zone) unless followed by ` UTC`
//! or `Z`. The zone's rules come from jiff (the system TZ database): none
//! are written here. The input is outside bytes, hence the strict errors.

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

/// Why a time was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimeError {
    /// Nothing but blanks.
    #[error("an empty time")]
    Empty,
    /// A span with a unit systemd.time does not name.
    #[error("unknown time unit {unit:?} (expected us, ms, s, min, h, d, w, M, y, ...)")]
    UnknownUnit {
        /// The unit as given.
        unit: String,
    },
    /// A span without a number where one is due.
    #[error("bad time span {input:?} (expected e.g. 1h30min, -2d, 90s)")]
    BadSpan {
        /// The span as given.
        input: String,
    },
    /// Neither a keyword, an epoch, a span nor a date and time.
    #[error(
        "bad time {input:?} (expected YYYY-MM-DD [HH:MM[:SS]], HH:MM[:SS], today, \
         yesterday, now, @EPOCH or a relative time like -1h)"
    )]
    BadTime {
        /// The time as given.
        input: String,
    },
    /// A weekday that is not the date's.
    #[error("{input:?}: the date is not on that weekday")]
    WrongWeekday {
        /// The time as given.
        input: String,
    },
    /// A time outside the range jiff can represent.
    #[error("time {input:?} is out of range")]
    OutOfRange {
        /// The time as given.
        input: String,
    },
}

/// Nanoseconds per unit, longest names first within each unit so that a
/// prefix never wins (`min` before `m`, `ms` before `m`). Months and years
/// are systemd's: 30.44 and 365.25 days.
const UNITS: &[(&str, i128)] = &[
    ("nsec", 1),
    ("ns", 1),
    ("usec", 1_000),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("msec", 1_000_000),
    ("ms", 1_000_000),
    ("seconds", SEC),
    ("second", SEC),
    ("sec", SEC),
    ("s", SEC),
    ("minutes", 60 * SEC),
    ("minute", 60 * SEC),
    ("min", 60 * SEC),
    ("months", 2_629_800 * SEC),
    ("month", 2_629_800 * SEC),
    ("M", 2_629_800 * SEC),
    ("m", 60 * SEC),
    ("hours", 3_600 * SEC),
    ("hour", 3_600 * SEC),
    ("hr", 3_600 * SEC),
    ("h", 3_600 * SEC),
    ("days", 86_400 * SEC),
    ("day", 86_400 * SEC),
    ("d", 86_400 * SEC),
    ("weeks", 604_800 * SEC),
    ("week", 604_800 * SEC),
    ("w", 604_800 * SEC),
    ("years", 31_557_600 * SEC),
    ("year", 31_557_600 * SEC),
    ("y", 31_557_600 * SEC),
];

const SEC: i128 = 1_000_000_000;

/// Far beyond any record, and far inside i128: bounds a span's sum.
const MAX_SPAN_NS: i128 = 1_000_000 * 31_557_600 * SEC;

/// The instant `input` names, as ns since the Unix epoch (negative before
/// it), relative to `now` and in `now`'s time zone unless it says `UTC`.
pub fn parse_time(input: &str, now: &Zoned) -> Result<i128, TimeError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(TimeError::Empty);
    }
    let now_ns = now.timestamp().as_nanosecond();
    if let Some(rest) = s.strip_prefix('+') {
        return Ok(now_ns + span_ns(rest)?);
    }
    if let Some(rest) = s.strip_prefix('-') {
        return Ok(now_ns - span_ns(rest)?);
    }
    if let Some(rest) = s.strip_suffix(" ago") {
        return Ok(now_ns - span_ns(rest)?);
    }
    if let Some(rest) = s.strip_suffix(" left") {
        return Ok(now_ns + span_ns(rest)?);
    }
    if let Some(rest) = s.strip_prefix('@') {
        return epoch_ns(rest).ok_or_else(|| bad(input));
    }
    let (s, tz) = match s.strip_suffix(" UTC").or_else(|| {
        s.strip_suffix('Z')
            .filter(|r| r.ends_with(|c: char| c.is_ascii_digit()))
    }) {
        Some(rest) => (rest.trim_end(), TimeZone::UTC),
        None => (s, now.time_zone().clone()),
    };
    let today = now.with_time_zone(tz.clone()).date();
    let day = |offset: i8| -> Result<i128, TimeError> {
        let d = today
            .checked_add(jiff::Span::new().days(offset))
            .map_err(|_| range(input))?;
        local_ns(&tz, d.to_datetime(Time::midnight()), input)
    };
    match s {
        "now" => return Ok(now_ns),
        "today" => return day(0),
        "yesterday" => return day(-1),
        "tomorrow" => return day(1),
        _ => {}
    }
    let (weekday, s) = match s.split_once(' ') {
        Some((w, rest)) if w.chars().all(|c| c.is_ascii_alphabetic()) => (
            Some(weekday(w).ok_or_else(|| bad(input))?),
            rest.trim_start(),
        ),
        _ => (None, s),
    };
    let (date, time) = match s.split_once([' ', 'T']) {
        Some((d, t)) => (Some(d), Some(t.trim_start())),
        None if s.contains(':') => (None, Some(s)),
        None => (Some(s), None),
    };
    let date = match date {
        Some(d) => parse_date(d).ok_or_else(|| bad(input))?,
        None => today,
    };
    if weekday.is_some_and(|w| w != date.weekday()) {
        return Err(TimeError::WrongWeekday {
            input: input.to_owned(),
        });
    }
    let time = match time {
        Some(t) => parse_clock(t).ok_or_else(|| bad(input))?,
        None => Time::midnight(),
    };
    local_ns(&tz, date.to_datetime(time), input)
}

/// A civil time in `tz`; in a gap or a fold, as jiff's "compatible"
/// choice (the later offset in a gap, the earlier in a fold), as systemd
/// and most tools do.
fn local_ns(tz: &TimeZone, dt: DateTime, input: &str) -> Result<i128, TimeError> {
    tz.to_ambiguous_zoned(dt)
        .compatible()
        .map(|z| z.timestamp().as_nanosecond())
        .map_err(|_| range(input))
}

fn bad(input: &str) -> TimeError {
    TimeError::BadTime {
        input: input.to_owned(),
    }
}

fn range(input: &str) -> TimeError {
    TimeError::OutOfRange {
        input: input.to_owned(),
    }
}

/// `Mon`, `Monday`, any case.
fn weekday(w: &str) -> Option<jiff::civil::Weekday> {
    use jiff::civil::Weekday::*;
    let w = w.to_ascii_lowercase();
    [
        ("mon", "monday", Monday),
        ("tue", "tuesday", Tuesday),
        ("wed", "wednesday", Wednesday),
        ("thu", "thursday", Thursday),
        ("fri", "friday", Friday),
        ("sat", "saturday", Saturday),
        ("sun", "sunday", Sunday),
    ]
    .into_iter()
    .find(|(short, long, _)| w == *short || w == *long)
    .map(|(_, _, d)| d)
}

/// `YYYY-MM-DD`, or `YY-MM-DD` (69-99: 19YY, else 20YY, as systemd).
fn parse_date(s: &str) -> Option<Date> {
    let mut it = s.split('-');
    let (y, m, d) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() || ![2, 4].contains(&y.len()) || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let mut year: i16 = digits(y)?;
    if y.len() == 2 {
        year += if year >= 69 { 1900 } else { 2000 };
    }
    Date::new(year, digits(m)?, digits(d)?).ok()
}

/// `HH:MM[:SS[.FRACTION]]`.
fn parse_clock(s: &str) -> Option<Time> {
    let (hms, frac) = match s.split_once('.') {
        Some((a, f)) => (a, Some(f)),
        None => (s, None),
    };
    let mut it = hms.split(':');
    let (h, m, sec) = (it.next()?, it.next()?, it.next());
    if it.next().is_some() || h.len() != 2 || m.len() != 2 || sec.is_some_and(|s| s.len() != 2) {
        return None;
    }
    if frac.is_some() && sec.is_none() {
        return None;
    }
    let ns = match frac {
        Some(f) => fraction_ns(f)?,
        None => 0,
    };
    Time::new(
        digits(h)?,
        digits(m)?,
        sec.map_or(Some(0), digits)?,
        i32::try_from(ns).ok()?,
    )
    .ok()
}

/// ASCII digits only (no sign, no blank), as a number.
fn digits<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The digits after a decimal point as ns (at most 9 digits).
fn fraction_ns(f: &str) -> Option<i128> {
    if f.len() > 9 {
        return None;
    }
    let n: i128 = digits(f)?;
    Some(n * 10i128.pow(u32::try_from(9 - f.len()).ok()?))
}

/// `@SECONDS[.FRACTION]`.
fn epoch_ns(s: &str) -> Option<i128> {
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, fraction_ns(f)?),
        None => (s, 0),
    };
    if int.len() > 12 {
        return None;
    }
    let secs: i128 = digits(int)?;
    let ns = secs * SEC + frac;
    // Within what jiff (and so the rest of weir's dates) can show.
    Timestamp::from_nanosecond(ns).ok().map(|_| ns)
}

/// A span such as `1h 30min`, `2d`, `1.5h`, `90` (seconds): a sum of
/// numbers, each with an optional unit, blanks allowed between them.
pub fn span_ns(input: &str) -> Result<i128, TimeError> {
    let bad_span = || TimeError::BadSpan {
        input: input.to_owned(),
    };
    let mut s = input.trim();
    if s.is_empty() {
        return Err(bad_span());
    }
    let mut total: i128 = 0;
    while !s.is_empty() {
        let num_len = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (num, rest) = s.split_at(num_len);
        let rest = rest.trim_start();
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
            .unwrap_or(rest.len());
        let (unit, rest) = rest.split_at(unit_len);
        let per = if unit.is_empty() {
            SEC
        } else {
            UNITS
                .iter()
                .find(|(name, _)| *name == unit)
                .map(|&(_, ns)| ns)
                .ok_or_else(|| TimeError::UnknownUnit {
                    unit: unit.to_owned(),
                })?
        };
        let (int, frac) = match num.split_once('.') {
            Some((i, f)) => (i, f),
            None => (num, ""),
        };
        if int.is_empty() || int.len() > 15 || frac.len() > 9 {
            return Err(bad_span());
        }
        let int: i128 = digits(int).ok_or_else(bad_span)?;
        let frac_ns = if frac.is_empty() {
            0
        } else {
            fraction_ns(frac).ok_or_else(bad_span)?
        };
        total += int * per + frac_ns * per / SEC;
        if total > MAX_SPAN_NS {
            return Err(bad_span());
        }
        s = rest.trim_start();
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// 2024-03-10 12:00:00 in New York (EDT since 07:00 UTC that day).
    /// The zone is New York's POSIX rule, so that the tests need no TZ
    /// database on the machine.
    fn ny_noon() -> Zoned {
        let tz = TimeZone::posix("EST5EDT,M3.2.0,M11.1.0").unwrap();
        "2024-03-10T16:00:00Z"
            .parse::<Timestamp>()
            .unwrap()
            .to_zoned(tz)
    }

    fn ts(s: &str) -> i128 {
        s.parse::<Timestamp>().unwrap().as_nanosecond()
    }

    #[test]
    fn keywords_and_dates_are_local_unless_utc() {
        let now = ny_noon();
        assert_eq!(parse_time("now", &now), Ok(ts("2024-03-10T16:00:00Z")));
        // Midnight before the DST change is still EST (-05:00).
        assert_eq!(parse_time("today", &now), Ok(ts("2024-03-10T05:00:00Z")));
        assert_eq!(
            parse_time("yesterday", &now),
            Ok(ts("2024-03-09T05:00:00Z"))
        );
        assert_eq!(parse_time("tomorrow", &now), Ok(ts("2024-03-11T04:00:00Z")));
        assert_eq!(
            parse_time("2024-03-01 10:20", &now),
            Ok(ts("2024-03-01T15:20:00Z"))
        );
        assert_eq!(
            parse_time("2024-03-01 10:20:30 UTC", &now),
            Ok(ts("2024-03-01T10:20:30Z"))
        );
        assert_eq!(
            parse_time("2024-03-01T10:20:30.5Z", &now),
            Ok(ts("2024-03-01T10:20:30.5Z"))
        );
        assert_eq!(
            parse_time("2024-03-01", &now),
            Ok(ts("2024-03-01T05:00:00Z"))
        );
        assert_eq!(parse_time("24-03-01", &now), Ok(ts("2024-03-01T05:00:00Z")));
        assert_eq!(parse_time("13:00", &now), Ok(ts("2024-03-10T17:00:00Z")));
        assert_eq!(
            parse_time("Fri 2024-03-01 00:00 UTC", &now),
            Ok(ts("2024-03-01T00:00:00Z"))
        );
        assert!(matches!(
            parse_time("Sat 2024-03-01", &now),
            Err(TimeError::WrongWeekday { .. })
        ));
        // 02:30 does not exist that day: the later offset, as systemd.
        assert_eq!(
            parse_time("2024-03-10 02:30", &now),
            Ok(ts("2024-03-10T07:30:00Z"))
        );
    }

    #[test]
    fn epochs_and_relative_times() {
        let now = ny_noon();
        let n = ts("2024-03-10T16:00:00Z");
        assert_eq!(parse_time("@0", &now), Ok(0));
        assert_eq!(parse_time("@1.25", &now), Ok(1_250_000_000));
        assert_eq!(parse_time("-1h", &now), Ok(n - 3_600 * SEC));
        assert_eq!(parse_time("+5m", &now), Ok(n + 300 * SEC));
        assert_eq!(parse_time("-30min", &now), Ok(n - 1_800 * SEC));
        assert_eq!(parse_time("-1h 30min", &now), Ok(n - 5_400 * SEC));
        assert_eq!(parse_time("2 days ago", &now), Ok(n - 2 * 86_400 * SEC));
        assert_eq!(parse_time("10s left", &now), Ok(n + 10 * SEC));
        assert_eq!(parse_time("-1M", &now), Ok(n - 2_629_800 * SEC));
        assert_eq!(parse_time("-1y", &now), Ok(n - 31_557_600 * SEC));
        assert_eq!(parse_time("-90", &now), Ok(n - 90 * SEC));
        assert_eq!(parse_time("-1.5h", &now), Ok(n - 5_400 * SEC));
        assert_eq!(parse_time("-3ms", &now), Ok(n - 3_000_000));
        assert_eq!(parse_time("-3us", &now), Ok(n - 3_000));
    }

    #[test]
    fn bad_input_is_refused_by_kind() {
        let now = ny_noon();
        assert_eq!(parse_time("  ", &now), Err(TimeError::Empty));
        assert!(matches!(
            parse_time("-1parsec", &now),
            Err(TimeError::UnknownUnit { .. })
        ));
        for s in [
            "-",
            "-h",
            "@",
            "@x",
            "@-1",
            "2024-13-01",
            "2024-02-30",
            "25:00",
            "1:2",
            "someday",
            "2024-03-01 10",
            "10:00:00.1234567890",
            "Blursday 2024-03-01",
            "-1..5h",
        ] {
            assert!(parse_time(s, &now).is_err(), "{s}");
        }
    }

    proptest! {
        /// Any text is judged without a panic.
        #[test]
        fn any_text_is_judged(s in "\\PC{0,40}") {
            let _ = parse_time(&s, &ny_noon());
        }

        /// A date written out comes back as that civil time in the zone.
        #[test]
        fn written_dates_come_back(
            y in 1970i16..2100, m in 1i8..=12, d in 1i8..=28,
            h in 0i8..24, min in 0i8..60, sec in 0i8..60,
        ) {
            let s = format!("{y:04}-{m:02}-{d:02} {h:02}:{min:02}:{sec:02} UTC");
            let want = Date::new(y, m, d).unwrap().to_datetime(Time::new(h, min, sec, 0).unwrap())
                .to_zoned(TimeZone::UTC).unwrap().timestamp().as_nanosecond();
            prop_assert_eq!(parse_time(&s, &ny_noon()), Ok(want));
        }

        /// A span in one unit is that many of the unit, before or after now.
        #[test]
        fn spans_scale(n in 0u32..100_000, unit in proptest::sample::select(UNITS)) {
            let now = ny_noon();
            let base = now.timestamp().as_nanosecond();
            let want = i128::from(n) * unit.1;
            prop_assert_eq!(parse_time(&format!("-{n}{}", unit.0), &now), Ok(base - want));
            prop_assert_eq!(parse_time(&format!("+{n} {}", unit.0), &now), Ok(base + want));
        }
    }
}
