//! Shared by the integration tests: the images made by fixtures/make.sh
//! and the LVM reports saved with them.
// Each test crate uses a different part of this module.
#![allow(dead_code)]

pub(crate) mod fixture;
pub(crate) mod lvm_report;
pub(crate) mod patch;
