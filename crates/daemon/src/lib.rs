//! The daemon (placeholder; see the daemon contract).
#![forbid(unsafe_code)]
