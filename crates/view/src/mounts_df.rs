//! The cells of `weir mounts`' df columns (SIZE, AVAIL, USED, USE%), made
//! from a statvfs reading ([`Usage`]) exactly as findmnt makes them: `0`
//! for nothing, util-linux's human sizes (`1.9G`, `4K`) or, with
//! `--bytes`, plain bytes; `-` for the USE% of a filesystem without
//! blocks; an empty cell when there is no reading.

use weir_mounts::usage::Usage;

/// Which figure a df column shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// `Usage::size`.
    Size,
    /// `Usage::avail`.
    Avail,
    /// `Usage::used`.
    Used,
    /// Used blocks over all blocks, in whole percent.
    UsePercent,
}

/// The cell of `figure` for a reading (`None`: statvfs failed).
pub fn cell(figure: Figure, usage: Option<&Usage>, bytes: bool) -> String {
    let Some(u) = usage else {
        return String::new();
    };
    let n = match figure {
        Figure::Size => u.size(),
        Figure::Avail => u.avail(),
        Figure::Used => u.used(),
        Figure::UsePercent => {
            if u.blocks == 0 {
                return "-".to_owned();
            }
            // findmnt's `(double)(f_blocks - f_bfree) / f_blocks * 100`,
            // printed with `%.0f`: the same operations, the same rounding.
            let used = u.blocks.wrapping_sub(u.bfree) as f64;
            return format!("{:.0}%", used / u.blocks as f64 * 100.0);
        }
    };
    if n == 0 {
        "0".to_owned()
    } else if bytes {
        n.to_string()
    } else {
        human(n)
    }
}

/// util-linux's `size_to_human_string` with one-letter suffixes: the
/// largest binary unit the size reaches, and one decimal, rounded half
/// up from the first three digits, left out when it rounds to 0
/// (`1M`, `1.5G`, `1023B`).
pub fn human(bytes: u64) -> String {
    const LETTERS: &[u8] = b"BKMGTPE";
    let mut exp = 0u32;
    while exp < 60 && bytes >= 1u64 << (exp + 10) {
        exp += 10;
    }
    let letter = char::from(LETTERS[(exp / 10) as usize]);
    if exp == 0 {
        return format!("{bytes}{letter}");
    }
    let mut whole = bytes >> exp;
    let rest = bytes & ((1u64 << exp) - 1);
    let mut frac = 0;
    if rest != 0 {
        let thousandths = if rest >= u64::MAX / 1000 {
            ((rest / 1024) * 1000) / (1u64 << (exp - 10))
        } else {
            (rest * 1000) / (1u64 << exp)
        };
        frac = (thousandths + 50) / 100;
        if frac == 10 {
            whole += 1;
            frac = 0;
        }
    }
    if frac == 0 {
        format!("{whole}{letter}")
    } else {
        format!("{whole}.{frac}{letter}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_read_like_util_linux() {
        assert_eq!(human(1), "1B");
        assert_eq!(human(1023), "1023B");
        assert_eq!(human(1024), "1K");
        assert_eq!(human(4096), "4K");
        assert_eq!(human(1 << 20), "1M");
        assert_eq!(human(1536 << 10), "1.5M");
        // 1.95M: 950 thousandths round up to the next whole unit.
        assert_eq!(human(1997 << 10), "2M");
        // 1.04M keeps no decimal.
        assert_eq!(human((1 << 20) + 40 * 1024), "1M");
        assert_eq!(human(12_662_632_448), "11.8G");
        assert_eq!(human(270_553_174_016), "252G");
        assert_eq!(human(u64::MAX), "16E");
    }

    #[test]
    fn cells_as_findmnt_prints_them() {
        let u = Usage {
            frsize: 4096,
            blocks: 256,
            bfree: 192,
            bavail: 192,
        };
        let c = |f, b| cell(f, Some(&u), b);
        assert_eq!(c(Figure::Size, false), "1M");
        assert_eq!(c(Figure::Size, true), "1048576");
        assert_eq!(c(Figure::Avail, false), "768K");
        assert_eq!(c(Figure::Used, true), "262144");
        assert_eq!(c(Figure::UsePercent, false), "25%");
        let empty = Usage::default();
        assert_eq!(cell(Figure::Size, Some(&empty), false), "0");
        assert_eq!(cell(Figure::UsePercent, Some(&empty), true), "-");
        assert_eq!(cell(Figure::Used, None, false), "");
        assert_eq!(cell(Figure::UsePercent, None, false), "");
    }
}
