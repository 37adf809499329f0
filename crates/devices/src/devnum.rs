//! [`DevNum`]: a block device's number, the key weir files devices under.
//!
//! Names are reused (detach `loop3`, attach another file: `loop3` again)
//! and so are numbers, but a number is what a uevent and the pv_header's
//! device agree on at one moment, and it fits the log's 8-byte target.

use std::fmt;

use crate::sysfs::BlockDevice;

/// `major:minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

    /// `major << 32 | minor`, big-endian: a record's target.
    pub fn to_be_bytes(self) -> [u8; 8] {
        ((u64::from(self.major) << 32) | u64::from(self.minor)).to_be_bytes()
    }
}

impl fmt::Display for DevNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}
