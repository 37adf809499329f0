//! The sizes of `weir pvs`, `weir vgs` and `weir lvs` as LVM's reports
//! print them, and LVM's `--units` and `--nosuffix` that choose how.
//!
//! LVM 2.03 formats every report size with libdevmapper's
//! `dm_size_to_string`, under its defaults (`global/units = "r"`,
//! `si_unit_consistency = 1`). Administrators read and parse those exact
//! strings (`60.00m`, `<1.82t`, `0 `), so the rules are kept, quirks
//! included:
//!
//! - `h`, `r`: the largest power of 1024 that fits, two decimals and a
//!   lower-case letter; `H`, `R` the same in powers of 1000 with a capital.
//!   `r` and `R` (the default) put `<` before a value rounded up. The
//!   letter is always printed, `--nosuffix` or not.
//! - `b`/`B` bytes and `s`/`S` sectors, whole; `k m g t p e` powers of
//!   1024 and `K M G T P E` powers of 1000, with two decimals.
//! - A whole number before the letter (`4m`) makes a unit of its own,
//!   printed with the letter `U`.
//! - Zero is `0` and the unit's letter, but in the human units, whose
//!   letter for it is a space: `0 `.

use crate::error::{Error, Result};

/// How sizes are printed: LVM's `--units` and `--nosuffix`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Units {
    unit: Unit,
    suffix: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Unit {
    /// `h`, `H`, `r`, `R`: the largest unit that fits.
    Human { thousands: bool, mark_rounded: bool },
    /// One of LVM's letters: bytes in a unit, the letter printed, and
    /// whether the value is printed whole.
    Fixed { bytes: u64, letter: u8, whole: bool },
    /// A number and a letter: printed as `U`.
    Custom { bytes: u64 },
}

/// LVM's default, `--units r`.
impl Default for Units {
    fn default() -> Self {
        Units {
            unit: Unit::Human {
                thousands: false,
                mark_rounded: true,
            },
            suffix: true,
        }
    }
}

/// The letters of the powers, largest first, as LVM lists them.
const POWERS_1024: [u8; 6] = *b"eptgmk";
const POWERS_1000: [u8; 6] = *b"EPTGMK";

impl Units {
    /// Parses `--units`: one of `hHrRbBsSkKmMgGtTpPeE`, optionally after a
    /// positive whole number (`4m`).
    pub fn parse(spec: &str) -> Result<Units> {
        let bad = || Error::BadUnits {
            given: spec.to_owned(),
        };
        let (number, letter) = match spec.as_bytes() {
            [rest @ .., last] if last.is_ascii_alphabetic() => (rest, *last),
            _ => return Err(bad()),
        };
        let unit = match letter {
            b'h' | b'H' | b'r' | b'R' => Unit::Human {
                thousands: letter.is_ascii_uppercase(),
                mark_rounded: letter.eq_ignore_ascii_case(&b'r'),
            },
            _ => {
                let (bytes, whole) = letter_bytes(letter).ok_or_else(bad)?;
                Unit::Fixed {
                    bytes,
                    letter: match letter {
                        b'b' | b's' => letter.to_ascii_uppercase(),
                        _ => letter,
                    },
                    whole,
                }
            }
        };
        if number.is_empty() {
            return Ok(Units { unit, suffix: true });
        }
        // A count of a human unit means nothing to LVM either.
        let Unit::Fixed { bytes, .. } = unit else {
            return Err(bad());
        };
        // A count: digits, not zero. LVM also takes a fraction (`1.5g`);
        // weir keeps to whole counts, which say the same in smaller units.
        if !number.iter().all(u8::is_ascii_digit) || number.iter().all(|&d| d == b'0') {
            return Err(bad());
        }
        // A unit larger than any size prints 0.00 for every one: saturate.
        let count = std::str::from_utf8(number)
            .ok()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(u64::MAX);
        let bytes = count.saturating_mul(bytes);
        Ok(Units {
            unit: Unit::Custom { bytes },
            suffix: true,
        })
    }

    /// The same units without the letter after each value
    /// (`--nosuffix`); the human units keep theirs, as in LVM.
    pub fn without_suffix(self) -> Units {
        Units {
            suffix: false,
            ..self
        }
    }

    /// `bytes` as LVM prints it in these units.
    pub fn size(&self, bytes: u64) -> String {
        let (divisor, letter, whole) = match self.unit {
            Unit::Fixed {
                bytes: b,
                letter,
                whole,
            } => (b, letter, whole),
            Unit::Custom { bytes: b } => (b, b'U', false),
            Unit::Human {
                thousands,
                mark_rounded,
            } => {
                if bytes == 0 {
                    return if self.suffix { "0 " } else { "0" }.to_owned();
                }
                let (base, letters) = if thousands {
                    (1000u64, POWERS_1000)
                } else {
                    (1024, POWERS_1024)
                };
                let mut divisor = base.pow(6);
                let mut s = 0;
                while s < letters.len() && bytes < divisor {
                    divisor /= base;
                    s += 1;
                }
                let Some(&letter) = letters.get(s) else {
                    // Under one of the smallest power: bytes.
                    let b = if thousands { b'B' } else { b'b' };
                    return format!("{bytes}{}", char::from(b));
                };
                let hundredths = 100.0 * bytes as f64 / divisor as f64;
                let rounded_up = mark_rounded && hundredths.floor() != hundredths.round_ties_even();
                return format!(
                    "{}{:.2}{}",
                    if rounded_up { "<" } else { "" },
                    bytes as f64 / divisor as f64,
                    char::from(letter)
                );
            }
        };
        let letter = if self.suffix {
            char::from(letter).to_string()
        } else {
            String::new()
        };
        if bytes == 0 {
            return format!("0{letter}");
        }
        // Whole units exactly, past the 2^53 bytes a double holds (where
        // LVM's own printing drifts).
        if whole && bytes.is_multiple_of(divisor) {
            return format!("{}{letter}", bytes / divisor);
        }
        let value = bytes as f64 / divisor as f64;
        if whole {
            format!("{value:.0}{letter}")
        } else {
            format!("{value:.2}{letter}")
        }
    }
}

/// The bytes in one of LVM's unit letters, and whether values in it are
/// printed whole (bytes and sectors).
fn letter_bytes(letter: u8) -> Option<(u64, bool)> {
    Some(match letter {
        b'b' | b'B' => (1, true),
        b's' | b'S' => (512, true),
        _ => {
            let (base, at) = match POWERS_1024.iter().position(|&l| l == letter) {
                Some(at) => (1024u64, at),
                None => (1000, POWERS_1000.iter().position(|&l| l == letter)?),
            };
            (base.pow(6 - at as u32), false)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn u(spec: &str) -> Units {
        Units::parse(spec).unwrap()
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn the_default_is_lvms_r() {
        let r = Units::default();
        assert_eq!(r, u("r"));
        assert_eq!(r.size(60 * MIB), "60.00m");
        assert_eq!(r.size(4 * MIB), "4.00m");
        // 2043 MiB is just under 2 GiB: LVM's own example.
        assert_eq!(r.size(2043 * MIB), "<2.00g");
        assert_eq!(r.size(2 << 40), "2.00t");
        assert_eq!(r.size(0), "0 ");
        assert_eq!(r.size(512), "512b");
        assert_eq!(u("h").size(2043 * MIB), "2.00g");
        assert_eq!(u("R").size(60 * MIB), "62.91M");
        assert_eq!(u("H").size(60_000_000), "60.00M");
    }

    #[test]
    fn fixed_units_print_their_letter_unless_told_not_to() {
        assert_eq!(u("m").size(60 * MIB), "60.00m");
        assert_eq!(u("g").size(60 * MIB), "0.06g");
        assert_eq!(u("k").size(60 * MIB), "61440.00k");
        assert_eq!(u("b").size(60 * MIB), "62914560B");
        assert_eq!(u("B").size(60 * MIB), "62914560B");
        assert_eq!(u("s").size(60 * MIB), "122880S");
        assert_eq!(u("M").size(60 * MIB), "62.91M");
        assert_eq!(u("m").size(0), "0m");
        assert_eq!(u("b").without_suffix().size(60 * MIB), "62914560");
        assert_eq!(u("m").without_suffix().size(0), "0");
        // The human units keep their letter.
        assert_eq!(u("r").without_suffix().size(60 * MIB), "60.00m");
        assert_eq!(u("r").without_suffix().size(0), "0");
    }

    #[test]
    fn a_number_makes_a_unit_of_its_own() {
        assert_eq!(u("4m").size(60 * MIB), "15.00U");
        assert_eq!(u("0004m").size(60 * MIB), "15.00U");
        assert_eq!(u("99999999999999999999e").size(60 * MIB), "0.00U");
        assert_eq!(u("4m").without_suffix().size(60 * MIB), "15.00");
    }

    #[test]
    fn bad_units_are_refused_by_name() {
        for bad in [
            "", "x", "u", "U", "4", "mm", "4r", "0m", "00k", "-1m", "1.5m", "1.m", ".5m", "4 m",
            "é",
        ] {
            match Units::parse(bad) {
                Err(Error::BadUnits { given }) => assert_eq!(given, bad),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    proptest! {
        #[test]
        fn parsing_never_panics(s in "\\PC{0,12}") {
            let _ = Units::parse(&s);
        }

        #[test]
        fn bytes_and_sectors_are_exact(n in any::<u32>()) {
            let bytes = u64::from(n) * 512;
            prop_assert_eq!(u("b").size(bytes), format!("{bytes}B"));
            prop_assert_eq!(u("s").size(bytes), format!("{n}S"));
        }

        #[test]
        fn human_sizes_read_back_within_rounding(bytes in 1u64..(1 << 62)) {
            let text = u("r").size(bytes);
            let body = text.trim_start_matches('<');
            let (value, letter) = body.split_at(body.len() - 1);
            let scale = match letter {
                "b" => 1,
                l => 1024u64.pow(6 - POWERS_1024.iter().position(|&p| p == l.as_bytes()[0]).unwrap() as u32),
            };
            let back = value.parse::<f64>().unwrap() * scale as f64;
            // Within half a hundredth of the unit, and `<` only when the
            // printed value is above the size.
            prop_assert!((back - bytes as f64).abs() <= scale as f64 * 0.005 + 1.0, "{text}");
            if text.starts_with('<') {
                prop_assert!(back > bytes as f64, "{text}");
            }
        }
    }
}
