//! LVM's rule for VG, LV and PV-key names (lib/misc/lvm-string.c,
//! `validate_name`), so that a hostile text cannot hand weir a name with
//! control characters or path separators to print or build paths from.

/// The longest name LVM accepts (`NAME_LEN` is 128 with the NUL).
pub const NAME_MAX: usize = 127;

/// Whether `name` is a valid LVM name: 1 to 127 bytes of
/// `[A-Za-z0-9+_.-]`, not starting with `-`, not `.` or `..`.
pub fn is_valid_name(name: &[u8]) -> bool {
    !name.is_empty()
        && name.len() <= NAME_MAX
        && name[0] != b'-'
        && name != b"."
        && name != b".."
        && name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'_' | b'.' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_lvm_names() {
        for n in ["vg0", "my_vg.1+x-y", "lvol0_pmspare", "a", &"x".repeat(127)] {
            assert!(is_valid_name(n.as_bytes()), "{n}");
        }
    }

    #[test]
    fn rejects_hostile_names() {
        for n in [
            "",
            "-vg",
            ".",
            "..",
            "vg/0",
            "vg 0",
            "vg\n",
            "vg\x1b[31m",
            "vg\u{e9}",
            &"x".repeat(128),
        ] {
            assert!(!is_valid_name(n.as_bytes()), "{n:?}");
        }
    }
}
