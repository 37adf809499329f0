//! [`DevNum`]: a block device's number, the key weir files devices under.
//!
//! Names are reused (detach `loop3`, attach another file: `loop3` again)
//! and so are numbers, but a number is what a uevent and the pv_header's
//! device agree on at one moment, and it fits the log's 8-byte target.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::sysfs::BlockDevice;

/// `major:minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DevNum {
    /// The major number.
    pub major: u32,
    /// The minor number.
    pub minor: u32,
}

impl DevNum {
    /// The number of `dev`.
    pub fn of(dev: &BlockDevice) -> DevNum {
        DevNum {
            major: dev.major,
            minor: dev.minor,
        }
    }

    /// The `dev_t` glibc's makedev(3) makes of it, the order lsblk lists
    /// devices in: the minor's low byte, then the major's low 12 bits, then
    /// the minor's upper bits, so `7:1918` comes after `259:0`.
    pub fn dev_t(self) -> u64 {
        rustix::fs::makedev(self.major, self.minor)
    }

    /// `major << 32 | minor`, big-endian: a record's target.
    pub fn to_be_bytes(self) -> [u8; 8] {
        ((u64::from(self.major) << 32) | u64::from(self.minor)).to_be_bytes()
    }

    /// The number a record's target or parent names: exactly 8 bytes,
    /// big-endian, as [`DevNum::to_be_bytes`] writes them.
    pub fn from_be_slice(b: &[u8]) -> Option<DevNum> {
        let n = u64::from_be_bytes(b.try_into().ok()?);
        Some(DevNum {
            major: (n >> 32) as u32,
            minor: n as u32,
        })
    }

    /// Parses `major:minor` in decimal, as records' `dev` fields hold it.
    pub fn parse(s: &[u8]) -> Option<DevNum> {
        let s = std::str::from_utf8(s).ok()?;
        let (major, minor) = s.split_once(':')?;
        let number = |t: &str| {
            // `u32::from_str` takes a leading `+`; a record never has one.
            (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                .then(|| t.parse().ok())
                .flatten()
        };
        Some(DevNum {
            major: number(major)?,
            minor: number(minor)?,
        })
    }
}

impl fmt::Display for DevNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::DevNum;

    #[test]
    fn record_forms_round_trip() {
        let dn = DevNum {
            major: 259,
            minor: 1 << 20,
        };
        assert_eq!(DevNum::from_be_slice(&dn.to_be_bytes()), Some(dn));
        assert_eq!(DevNum::parse(dn.to_string().as_bytes()), Some(dn));
    }

    #[test]
    fn dev_t_orders_as_lsblk() {
        let dn = |major, minor| DevNum { major, minor };
        let mut v = [
            dn(7, 1918),
            dn(259, 0),
            dn(7, 7),
            dn(254, 0),
            dn(7, 255),
            dn(7, 256),
        ];
        v.sort_by_key(|d| d.dev_t());
        assert_eq!(
            v,
            [
                dn(7, 7),
                dn(7, 255),
                dn(254, 0),
                dn(259, 0),
                dn(7, 256),
                dn(7, 1918)
            ]
        );
    }

    #[test]
    fn malformed_record_forms_are_refused() {
        assert_eq!(DevNum::from_be_slice(&[0; 7]), None);
        assert_eq!(DevNum::from_be_slice(&[0; 9]), None);
        for bad in [
            &b""[..],
            b"7",
            b"7:",
            b":1",
            b"+7:1",
            b"7:-1",
            b"7:1:2",
            b"4294967296:0",
            b"7:\xff",
        ] {
            assert_eq!(DevNum::parse(bad), None, "{bad:?}");
        }
    }
}
