//! Plain aligned columns for `weir devices`, `pvs` and `vgs`: a header row,
//! then one row per object, each column as wide as its widest cell, numbers
//! right-aligned as lsblk and LVM print them. Also the one cap on how many
//! columns a choice (`-o`, the API's `columns`) may name, for every table.

/// The most columns one choice may name (repeats count), for the mounts
/// table and the LVM reports alike, so a hostile `columns=` cannot make a
/// table of millions of cells.
pub const MAX_COLUMNS: usize = 64;

/// How a column is aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text, padded on the right.
    Left,
    /// Numbers, padded on the left.
    Right,
}

/// Renders `rows` under `headers`; every row has one cell per header.
pub fn render(headers: &[(&str, Align)], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|(h, _)| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header_cells: Vec<String> = headers.iter().map(|(h, _)| (*h).to_owned()).collect();
    for row in std::iter::once(&header_cells).chain(rows) {
        let mut line = String::new();
        for (i, ((cell, w), (_, align))) in row.iter().zip(&widths).zip(headers).enumerate() {
            if i > 0 {
                line.push(' ');
            }
            let pad = w.saturating_sub(cell.chars().count());
            match align {
                Align::Left => {
                    line.push_str(cell);
                    line.extend(std::iter::repeat_n(' ', pad));
                }
                Align::Right => {
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(cell);
                }
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A size in bytes as lsblk and findmnt print it: util-linux's
/// `size_to_human_string` with one-letter suffixes: the
/// largest binary unit the size reaches, and one decimal, rounded half
/// up from the first three digits, left out when it rounds to 0
/// (`1M`, `1.5G`, `1023B`).
pub fn human_size(bytes: u64) -> String {
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
    fn aligns_left_and_right() {
        let t = render(
            &[("NAME", Align::Left), ("SIZE", Align::Right)],
            &[
                vec!["loop0".into(), "8M".into()],
                vec!["sda".into(), "1.5G".into()],
            ],
        );
        assert_eq!(t, "NAME  SIZE\nloop0   8M\nsda   1.5G\n");
    }

    #[test]
    fn sizes_read_like_lsblk_and_findmnt() {
        assert_eq!(human_size(0), "0B");
        assert_eq!(human_size(1), "1B");
        assert_eq!(human_size(1023), "1023B");
        assert_eq!(human_size(1024), "1K");
        assert_eq!(human_size(4096), "4K");
        assert_eq!(human_size(1 << 20), "1M");
        assert_eq!(human_size(1536 << 10), "1.5M");
        // 1.95M: 950 thousandths round up to the next whole unit.
        assert_eq!(human_size(1997 << 10), "2M");
        // 1.04M keeps no decimal.
        assert_eq!(human_size((1 << 20) + 40 * 1024), "1M");
        assert_eq!(human_size(12_662_632_448), "11.8G");
        assert_eq!(human_size(270_553_174_016), "252G");
        assert_eq!(human_size(u64::MAX), "16E");
    }
}
