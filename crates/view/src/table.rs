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

/// A size in bytes as lsblk prints it: `8M`, `1.5G`, `0B`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "K", "M", "G", "T", "P", "E"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 || (v - v.round()).abs() < 0.05 {
        format!("{}{}", v.round(), UNITS[unit])
    } else {
        format!("{v:.1}{}", UNITS[unit])
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
    fn sizes_read_like_lsblk() {
        assert_eq!(human_size(0), "0B");
        assert_eq!(human_size(1023), "1023B");
        assert_eq!(human_size(8 << 20), "8M");
        assert_eq!(human_size(3 << 29), "1.5G");
    }
}
