//! The cells of `weir mounts`' df columns (SIZE, AVAIL, USED, USE%), made
//! from a statvfs reading ([`Usage`]) exactly as findmnt makes them: `0`
//! for nothing, util-linux's human sizes (`1.9G`, `4K`) or, with
//! `--bytes`, plain bytes; `-` for the USE% of a filesystem without
//! blocks; an empty cell when there is no reading.

use weir_mounts::usage::Usage;

use crate::table::human_size;

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
        human_size(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
